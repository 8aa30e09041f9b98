/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dir.c - directory snapshots for readdir and readdirplus (see dir.h for why snapshots).
 */
#include <errno.h>
#include <string.h>

#include "fedfuse/control.h"
#include "fedfuse/dir.h"
#include "fedfuse/gateway.h"

struct ff_dirent {
	char *name;
	struct stat st; /* at least st_ino and the type bits */
	ff_node *node;	/* from a plus listing, until the kernel is given it; without one, a
			 * readdirplus resolves the name like a lookup */
	bool bare;	/* a namespace or control entry: listed without attributes, so that a
			 * listing never waits for a location (the kernel looks it up on use) */
	struct ff_inode *inode; /* a by-name entry's inode, with one lookup held for the
				 * kernel until it is given the entry */
};

struct ff_dir {
	GMutex lock; /* one reader at a time per open directory */
	struct ff_inode *inode;
	struct ff_target t;
	ff_dh *dh;
	GArray *entries; /* struct ff_dirent */
	bool loaded;
	bool plus_loaded;   /* entries carry full attributes and nodes */
	GHashTable *hidden; /* names the namespace covers, or NULL */
	struct ff_state *s;
};

static void entry_clear(struct ff_dir *dir, struct ff_dirent *d)
{
	if (d->node)
		ff_gw_forget(dir->t.mnt, d->node);
	if (d->inode)
		ff_itab_forget(dir->s->itab, d->inode->ino, 1);
	g_free(d->name);
}

static void entries_clear(struct ff_dir *dir)
{
	for (guint i = 0; i < dir->entries->len; i++)
		entry_clear(dir, &g_array_index(dir->entries, struct ff_dirent, i));
	g_array_set_size(dir->entries, 0);
	dir->loaded = false;
}

static void add(struct ff_dir *dir, const char *name, const struct stat *st, ff_node *node,
		bool bare)
{
	struct ff_dirent d = { g_strdup(name), *st, node, bare, NULL };

	g_array_append_val(dir->entries, d);
}

static int fill(void *buf, const char *name, const struct stat *st, off_t next, ff_node *node,
		bool by_name)
{
	struct ff_dir *dir = buf;
	struct ff_inode *inode = NULL;
	struct stat copy = *st;

	if (dir->hidden && g_hash_table_contains(dir->hidden, name)) {
		if (node)
			ff_gw_forget(dir->t.mnt, node);
		return FF_FILL_TAKEN;
	}
	if (by_name) {
		if (S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode))
			return FF_FILL_WANT_NODE;
		inode = ff_itab_find_ref(dir->s->itab, dir->t.mnt, dir->t.mnt->index, st->st_dev,
					 st->st_ino);
		if (!inode)
			return FF_FILL_WANT_NODE;
		copy.st_ino = inode->ino;
	} else if (!node) { /* d_ino as stat will report it */
		copy.st_ino = ff_itab_predict(dir->s->itab, dir->t.mnt, dir->t.mnt->index,
					      st->st_dev, st->st_ino);
	}
	add(dir, name, &copy, node, false);
	g_array_index(dir->entries, struct ff_dirent, dir->entries->len - 1).inode = inode;
	return FF_FILL_TAKEN;
}

static int load(const struct ff_ctx *c, struct ff_dir *dir, bool plus)
{
	struct stat st = { 0 };
	const struct ff_ns_node *node = ff_resolve_ns_node(c, dir->inode);
	bool removed;
	int rc = 0;

	entries_clear(dir);
	st.st_mode = S_IFDIR;
	st.st_ino = dir->inode->ino;
	add(dir, ".", &st, NULL, true);
	st.st_ino = FF_INO_ROOT;
	add(dir, "..", &st, NULL, true);

	if (dir->inode->ino == FF_INO_CONTROL) {
		for (const char *const *n = ff_control_names(); *n; n++)
			add(dir, *n, &(struct stat){ .st_mode = S_IFREG, .st_ino = FF_INO_CONTROL },
			    NULL, true);
		goto out;
	}
	if (node && node->child_list->len) {
		dir->hidden = dir->hidden ? dir->hidden : g_hash_table_new(g_str_hash, g_str_equal);
		g_hash_table_remove_all(dir->hidden);
		for (guint i = 0; i < node->child_list->len; i++) {
			const struct ff_ns_node *child = node->child_list->pdata[i];

			g_hash_table_add(dir->hidden, child->name);
		}
	}
	g_mutex_lock(&dir->inode->lock);
	removed = dir->inode->gone && dir->inode->gone->removed;
	g_mutex_unlock(&dir->inode->lock);
	if (dir->t.mnt && !removed)
		rc = ff_gw_readdir(dir->t.mnt, c->cred, dir->t.bnode, dir->dh, 0, plus, fill, dir);
	if (dir->hidden)
		g_hash_table_remove_all(dir->hidden); /* its keys belong to the namespace */
	for (guint i = 0; node && i < node->child_list->len; i++) {
		const struct ff_ns_node *child = node->child_list->pdata[i];

		if (child->referral && ff_resolve_referral_hidden(c->s, child->referral))
			continue;
		add(dir, child->name, &(struct stat){ .st_mode = S_IFDIR, .st_ino = FF_INO_ROOT },
		    NULL, true);
	}
out:
	dir->loaded = rc == 0;
	dir->plus_loaded = plus;
	return rc;
}

int ff_dir_open(const struct ff_ctx *c, struct ff_inode *inode, struct ff_dir **dirp)
{
	struct ff_dir *dir = g_new0(struct ff_dir, 1);
	int rc;

	dir->s = c->s;
	dir->inode = inode;
	dir->entries = g_array_new(FALSE, FALSE, sizeof(struct ff_dirent));
	g_mutex_init(&dir->lock);
	if (!ff_control_is_control(inode->ino)) {
		rc = ff_target_get(c, inode, &dir->t);
		if (rc < 0)
			goto out_free;
	}
	if (dir->t.mnt) {
		rc = ff_gw_opendir(dir->t.mnt, c->cred, dir->t.bnode, &dir->dh);
		if (rc < 0)
			goto out_put;
	}
	*dirp = dir;
	return 0;
out_put:
	ff_target_put(c->s, &dir->t);
out_free:
	g_array_free(dir->entries, TRUE);
	g_mutex_clear(&dir->lock);
	g_free(dir);
	return rc;
}

bool ff_dir_cacheable(const struct ff_dir *dir)
{
	/* Not over the network: a listing changes by what the daemon does on its own there too
	 * (the hidden names of unlinked open files go at their last close), which the kernel
	 * is not told of. */
	return dir->t.mnt && dir->t.mnt->watched && (dir->t.mnt->be->caps & FF_CAP_LOCAL);
}

/* One readdirplus entry; returns the bytes used, 0 when it did not fit (nothing counted). */
static size_t add_plus(const struct ff_ctx *c, fuse_req_t req, struct ff_dir *dir,
		       struct ff_dirent *d, char *buf, size_t rem, off_t next)
{
	struct fuse_entry_param e = { 0 };
	size_t n;

	if (fuse_add_direntry_plus(req, NULL, 0, d->name, NULL, 0) > rem)
		return 0;
	if (d->node) { /* the object, or the root of the location it is a junction to */
		bool junction = false;
		int rc = ff_resolve_found(c, dir->t.mnt, d->node, &d->st, false, &e, &junction);

		d->node = NULL;
		if (rc == 0)
			goto out_add;
		/* An unreachable junction: list the name; a later lookup reports why. */
		memset(&e, 0, sizeof(e));
		e.attr = d->st;
		if (junction)
			e.attr.st_mode = S_IFDIR | FF_JUNCTION_DEFAULT_MODE;
		goto out_add;
	}
	if (d->bare) {
		e.attr = d->st; /* e.ino 0: the kernel takes no reference */
	} else if (d->inode) {	/* an inode the table has: no lookup */
		ff_resolve_entry_held(dir->t.mnt, d->inode, &d->st, &e);
		d->inode = NULL; /* its lookup is the kernel's now */
	} else if (ff_resolve_lookup(c, dir->inode, d->name, &e) < 0) {
		/* Vanished or unreachable: list the name; a later lookup reports why. */
		memset(&e, 0, sizeof(e));
		e.attr = d->st;
	}
out_add:
	n = fuse_add_direntry_plus(req, buf, rem, d->name, &e, next);
	if (n > rem) { /* cannot happen: the size depends on the name only */
		if (e.ino)
			ff_itab_forget(c->s->itab, e.ino, 1);
		return 0;
	}
	return n;
}

void ff_dir_read(const struct ff_ctx *c, fuse_req_t req, struct ff_dir *dir, size_t size, off_t off,
		 bool plus)
{
	g_autofree char *buf = g_malloc(size);
	size_t used = 0;
	int rc = 0;

	g_mutex_lock(&dir->lock);
	if (off == 0 || !dir->loaded)
		rc = load(c, dir, plus);
	if (rc < 0) {
		g_mutex_unlock(&dir->lock);
		fuse_reply_err(req, -rc);
		return;
	}
	for (guint i = off; i < dir->entries->len; i++) {
		struct ff_dirent *d = &g_array_index(dir->entries, struct ff_dirent, i);
		size_t n;

		if (plus) {
			n = add_plus(c, req, dir, d, buf + used, size - used, i + 1);
			if (n == 0)
				break;
		} else {
			n = fuse_add_direntry(req, buf + used, size - used, d->name, &d->st, i + 1);
			if (n > size - used)
				break;
		}
		used += n;
	}
	g_mutex_unlock(&dir->lock);
	fuse_reply_buf(req, buf, used);
}

int ff_dir_fsync(struct ff_state *s, struct ff_dir *dir, int datasync)
{
	return dir->t.mnt ? ff_gw_fsyncdir(dir->t.mnt, dir->dh, datasync) : 0;
}

void ff_dir_release(struct ff_state *s, struct ff_dir *dir)
{
	entries_clear(dir);
	if (dir->t.mnt)
		ff_gw_releasedir(dir->t.mnt, dir->dh);
	ff_target_put(s, &dir->t);
	if (dir->hidden)
		g_hash_table_destroy(dir->hidden);
	g_array_free(dir->entries, TRUE);
	g_mutex_clear(&dir->lock);
	g_free(dir);
}
