/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * state.c - the daemon's state (struct ff_state) apart from the FUSE session: made and torn down
 * here, the namespace in force and its reload. Shared by the daemon and the unit tests.
 */
#include <string.h>
#include <unistd.h>

#include "fedfuse/cred.h"
#include "fedfuse/fedfuse.h"
#include "fedfuse/gateway.h"
#include "fedfuse/log.h"
#include "fedfuse/memory.h"
#include "fedfuse/plugins.h"

static void release_inode(struct ff_inode *inode, void *data)
{
	ff_memory_freed(1);
	if (!inode->mnt)
		return;
	if (inode->bnode)
		ff_gw_forget(inode->mnt, inode->bnode);
	ff_mount_unref(inode->mnt); /* taken when the inode was made (resolve.c) */
}

void ff_state_init(struct ff_state *s)
{
	clock_gettime(CLOCK_REALTIME, &s->ns_time);
	g_mutex_init(&s->ns_lock);
	s->uid = geteuid();
	s->gid = getegid();
	s->itab = ff_itab_new(release_inode, s);
	ff_inode_set_ns(ff_itab_intern_virtual(s->itab, FF_INO_ROOT, "/"), s->ns,
			ff_namespace_find(s->ns, "/"));
	s->jcache = ff_jcache_new();
	s->absent = ff_absent_new();
	s->nsdb = ff_nsdb_new();
	g_mutex_init(&s->handles_lock);
	s->handles = g_hash_table_new(g_direct_hash, g_direct_equal);
}

void ff_state_clear(struct ff_state *s)
{
	g_hash_table_destroy(s->handles);
	g_mutex_clear(&s->handles_lock);
	ff_locks_free(s->locks);
	ff_itab_free(s->itab); /* before the mounts its inodes hold */
	ff_mounts_free(s->mounts);
	ff_jcache_free(s->jcache);
	ff_absent_free(s->absent);
	ff_nsdb_free(s->nsdb);
	ff_namespace_unref(s->ns);
	g_mutex_clear(&s->ns_lock);
}

/* ---- the namespace in force ---------------------------------------------------------------- */

struct ff_namespace *ff_state_ns(struct ff_state *s)
{
	struct ff_namespace *ns;

	g_mutex_lock(&s->ns_lock);
	ns = ff_namespace_ref(s->ns);
	g_mutex_unlock(&s->ns_lock);
	return ns;
}

struct inval {
	uint64_t ino;
	char *ns_path;
};

static void collect_ns_inode(struct ff_inode *inode, void *data)
{
	GArray *list = data;
	struct inval iv;

	g_mutex_lock(&inode->lock);
	iv.ino = inode->ino;
	iv.ns_path = inode->ns_ref ? g_strdup(inode->ns_ref->node->path) : NULL;
	g_mutex_unlock(&inode->lock);
	if (iv.ns_path)
		g_array_append_val(list, iv);
}

static void inval_children(struct ff_state *s, uint64_t ino, const struct ff_ns_node *node)
{
	for (guint i = 0; node && i < node->child_list->len; i++) {
		const struct ff_ns_node *c = node->child_list->pdata[i];

		fuse_lowlevel_notify_inval_entry(s->se, ino, c->name, strlen(c->name));
	}
}

/* Make the kernel forget what it learned from the old namespace: every name that a namespace
 * directory had or has now is looked up again. */
static void invalidate_namespace(struct ff_state *s, struct ff_namespace *old,
				 struct ff_namespace *new)
{
	GArray *list = g_array_new(FALSE, FALSE, sizeof(struct inval));

	ff_itab_foreach(s->itab, collect_ns_inode, list);
	for (guint i = 0; i < list->len; i++) {
		struct inval *iv = &g_array_index(list, struct inval, i);

		inval_children(s, iv->ino, ff_namespace_find(old, iv->ns_path));
		inval_children(s, iv->ino, ff_namespace_find(new, iv->ns_path));
		fuse_lowlevel_notify_inval_inode(s->se, iv->ino, 0, 0);
		g_free(iv->ns_path);
	}
	g_array_free(list, TRUE);
}

bool ff_state_reload(struct ff_state *s)
{
	g_autoptr(GError) err = NULL;
	struct ff_namespace *ns, *old;

	ns = ff_namespace_load(s->opts.namespace_file, ff_plugin_check_location, NULL, &err);
	if (!ns) {
		ff_err("%s; keeping the namespace in force", err->message);
		return false;
	}
	g_mutex_lock(&s->ns_lock);
	old = s->ns;
	s->ns = ns;
	clock_gettime(CLOCK_REALTIME, &s->ns_time);
	g_mutex_unlock(&s->ns_lock);
	ff_cred_flush();
	ff_jcache_clear(s->jcache);
	ff_absent_changed(s->absent);
	if (s->se)
		invalidate_namespace(s, old, ns);
	ff_namespace_unref(old);
	ff_info("namespace reloaded from %s", s->opts.namespace_file);
	return true;
}
