/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_dir.c - open directories of the SMB backend: opendir copies the whole listing, readdir
 * serves it by index, releasedir frees it; no connection is held in between.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/smb/smb.h"

struct smb_dirent {
	char *name;
	struct stat st;
};

/*
 * An open directory. libsmbclient fetches a whole listing at opendir anyway (one QUERY_DIRECTORY
 * round trip per batch, with attributes and file ids), so the listing is copied here and the
 * context goes back to the pool at once: an open directory pins no connection, and offsets
 * are plain indices (entry i resumes at i + 1), valid for the life of the handle.
 */
struct smb_dir {
	GMutex lock;
	struct ff_pathnode *node; /* reference: a rewind lists the directory again by path */
	GArray *ents;		  /* struct smb_dirent */
	bool served;		  /* entries were handed out: offset 0 means rewinddir() */
};

/* ---- directories ---------------------------------------------------------------------------- */

static void smb_dirent_clear(gpointer p)
{
	struct smb_dirent *e = p;

	g_free(e->name);
}

struct smb_list_arg {
	const char *url;
	GArray *ents;
};

static int smb_list_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_list_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *dir;
	int rc = 0;

	g_array_set_size(a->ents, 0);
	dir = smbc_getFunctionOpendir(ctx)(ctx, a->url);
	if (!dir)
		return smb_err(errno);
	for (;;) {
		const struct libsmb_file_info *fi;
		struct smb_dirent e;

		memset(&e, 0, sizeof(e));
		errno = 0;
		fi = smbc_getFunctionReaddirPlus2(ctx)(ctx, dir, &e.st);
		if (!fi) {
			if (errno)
				rc = smb_err(errno);
			break;
		}
		if (strcmp(fi->name, ".") == 0 || strcmp(fi->name, "..") == 0)
			continue;
		smb_fix_stat(loc, &e.st);
		e.name = g_strdup(fi->name);
		g_array_append_val(a->ents, e);
	}
	smbc_getFunctionClosedir(ctx)(ctx, dir);
	return rc;
}

static int smb_list(struct smb_loc *loc, const struct ff_cred *cred, struct smb_dir *dh)
{
	struct smb_list_arg a = { .ents = dh->ents };
	int rc;

	a.url = smb_url(loc, dh->node, NULL);
	if (!a.url)
		return -ESTALE;
	rc = smb_run(loc, cred, false, smb_list_fn, &a);
	if (rc) {
		g_array_set_size(dh->ents, 0);
	} else {
		/* what lookups check names against (smb_case.c) */
		GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

		for (guint i = 0; i < dh->ents->len; i++)
			g_hash_table_add(
				set, g_strdup(g_array_index(dh->ents, struct smb_dirent, i).name));
		smb_names_note(loc, a.url, set);
	}
	dh->served = false;
	g_free((char *)a.url);
	return rc;
}

int smb_opendir(void *loc_, const struct ff_cred *cred, ff_node *node, ff_dh **dhp)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = g_new0(struct smb_dir, 1);
	int rc;

	g_mutex_init(&dh->lock);
	dh->ents = g_array_new(FALSE, FALSE, sizeof(struct smb_dirent));
	g_array_set_clear_func(dh->ents, smb_dirent_clear);
	ff_pathtree_ref(loc->tree, smb_pn(node));
	dh->node = smb_pn(node);
	rc = smb_list(loc, cred, dh);
	if (rc) {
		ff_pathtree_unref(loc->tree, dh->node);
		g_array_free(dh->ents, TRUE);
		g_mutex_clear(&dh->lock);
		g_free(dh);
		return rc;
	}
	*dhp = (ff_dh *)dh;
	return 0;
}

int smb_readdir(void *loc_, const struct ff_cred *cred, ff_node *node, ff_dh *dh_, off_t off,
		bool plus, ff_fill_fn fill, void *buf)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = (struct smb_dir *)dh_;
	int rc = 0;

	if (off < 0)
		return -EINVAL;
	g_mutex_lock(&dh->lock);
	if (off == 0 && dh->served) { /* rewinddir(): show the directory as it is now */
		rc = smb_list(loc, cred, dh);
		if (rc)
			goto out_unlock;
	}
	for (guint i = (guint)MIN((guint64)off, (guint64)dh->ents->len); i < dh->ents->len; i++) {
		struct smb_dirent *e = &g_array_index(dh->ents, struct smb_dirent, i);
		ff_node *child = NULL;
		int r;

		if (plus) {
			child = (ff_node *)ff_pathtree_child(loc->tree, smb_pn(node), e->name);
			smb_node_seen(loc, smb_pn(child), &e->st);
			smb_wb_node_size(loc, smb_pn(child), &e->st);
		}
		dh->served = true;
		r = fill(buf, e->name, &e->st, (off_t)i + 1, child, false);
		if (r == FF_FILL_FULL)
			break;
		if (r < 0) {
			rc = r;
			break;
		}
	}
out_unlock:
	g_mutex_unlock(&dh->lock);
	return rc;
}

int smb_releasedir(void *loc_, ff_dh *dh_)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = (struct smb_dir *)dh_;

	ff_pathtree_unref(loc->tree, dh->node);
	g_array_free(dh->ents, TRUE);
	g_mutex_clear(&dh->lock);
	g_free(dh);
	return 0;
}
