/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hidden.c - open files whose last name goes away on a path-named backend (hidden.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "fedfuse/file.h"
#include "fedfuse/gateway.h"
#include "fedfuse/hidden.h"
#include "fedfuse/log.h"

/* How long an unlink waits for the RELEASE of files already closed (ms). */
#define RELEASE_WAIT_MS 200

/* Is `victim` open (and not hidden yet)? When every file open on it was closed by its program
 * (FLUSH came, RELEASE is on its way: see ff_file_used()), wait a little for the RELEASEs. */
static bool still_open(struct ff_state *s, struct ff_inode *victim)
{
	for (int ms = 0;; ms++) {
		bool open;

		g_mutex_lock(&victim->lock);
		open = ff_inode_opencount(victim) > 0 &&
		       !(victim->gone && victim->gone->hidden_name);
		g_mutex_unlock(&victim->lock);
		if (!open || ms == RELEASE_WAIT_MS || !ff_files_closing(s, victim))
			return open;
		g_usleep(1000);
	}
}

/*
 * Before `name` in directory `dir` goes away (unlink, or rename over it): on a backend that
 * names objects by path, a file still open through this mount would become unreachable, so it
 * is renamed to a hidden name instead and removed at its last close (what NFS clients do).
 * Returns 1 when the name is gone that way, 0 when nothing was needed, or -errno.
 */
int ff_hide_if_open(struct ff_request *op, struct ff_inode *dir, struct ff_target *dt,
		    const char *name)
{
	static gint counter;
	struct ff_mount *m = dt->mnt;
	struct ff_inode *victim;
	g_autofree char *hidden = NULL;
	ff_node *node;
	struct stat st;
	bool open;
	int rc;

	if (!(m->be->caps & FF_CAP_PATH_NODES) || g_atomic_int_get(&m->open_files) == 0)
		return 0;
	if (ff_gw_lookup(m, &op->h.cred, dt->bnode, name, &node, &st) < 0)
		return 0; /* the operation itself will say what is wrong */
	/* A reference, so that the kernel forgetting it meanwhile cannot free it under us. */
	victim = ff_itab_find_ref(op->s->itab, m, m->index, st.st_dev, st.st_ino);
	open = false;
	if (victim && !S_ISDIR(st.st_mode) && st.st_nlink == 1) /* its last name */
		open = still_open(op->s, victim);
	/* The open inode may know the object by another, removed, name: make it follow this
	 * one, which the rename below moves to the hidden name. */
	if (open && victim->bnode != node)
		ff_gw_relink(m, victim->bnode, node);
	ff_gw_forget(m, node);
	rc = 0;
	if (!open)
		goto out_put;
	hidden = g_strdup_printf(".fedfuse_hidden%016" PRIx64 "%08x", victim->ino,
				 (unsigned)g_atomic_int_add(&counter, 1));
	rc = ff_gw_rename(m, &op->h.cred, dt->bnode, name, dt->bnode, hidden, 0);
	if (rc < 0)
		goto out_put;
	ff_itab_ref(op->s->itab, dir); /* keeps the directory until the hidden name is removed */
	g_mutex_lock(&victim->lock);
	ff_inode_gone(victim)->hidden_parent = dir;
	victim->gone->hidden_name = g_steal_pointer(&hidden);
	g_mutex_unlock(&victim->lock);
	ff_remove_hidden(op->s, victim); /* closed meanwhile: its release found no hidden name */
	rc = 1;
out_put:
	if (victim)
		ff_itab_forget(op->s->itab, victim->ino, 1);
	return rc;
}

struct pending {
	struct ff_inode *dir;
	bool found;
};

static void find_pending(struct ff_inode *inode, void *data)
{
	struct pending *p = data;

	g_mutex_lock(&inode->lock);
	if (inode->gone && inode->gone->hidden_parent == p->dir)
		p->found = true;
	g_mutex_unlock(&inode->lock);
}

bool ff_hidden_pending(struct ff_state *s, struct ff_inode *dir)
{
	struct pending p = { dir, false };

	ff_itab_foreach(s->itab, find_pending, &p);
	return p.found;
}

/* The last close of a file that was unlinked while open on a path-named backend. */
void ff_remove_hidden(struct ff_state *s, struct ff_inode *inode)
{
	struct ff_inode *dir;
	struct ff_cred_hold h;
	struct ff_target t;
	struct ff_ctx c;
	char *name;
	int rc;

	g_mutex_lock(&inode->lock);
	dir = ff_inode_opencount(inode) == 0 && inode->gone && inode->gone->hidden_name
		      ? inode->gone->hidden_parent
		      : NULL;
	name = dir ? g_steal_pointer(&inode->gone->hidden_name) : NULL;
	g_mutex_unlock(&inode->lock);
	if (!dir)
		return;
	ff_cred_self(&h);
	ff_ctx_begin(&c, s, &h.cred);
	rc = ff_target_get(&c, dir, &t);
	ff_ctx_end(&c);
	if (rc == 0) {
		rc = ff_gw_unlink(t.mnt, &h.cred, t.bnode, name);
		ff_target_put(s, &t);
	}
	if (rc < 0)
		ff_log_once(LOG_WARNING, name, 60, "cannot remove %s (unlinked while open): %s",
			    name, g_strerror(-rc));
	ff_cred_put(&h);
	/* Only now that the name is gone: an rmdir of `dir` waits until then
	 * (ff_hidden_pending). */
	g_mutex_lock(&inode->lock);
	inode->gone->hidden_parent = NULL;
	g_mutex_unlock(&inode->lock);
	ff_itab_forget(s->itab, dir->ino, 1);
	g_free(name);
}
