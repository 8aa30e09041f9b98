/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_dir.c - open directories of the NFS backend: opendir, readdir, releasedir. Directory
 * handles hold a snapshot of the listing, read in one go by READDIRPLUS (v3) or READDIR with
 * attributes (v4), and need no context.
 */
#include <errno.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

struct nfs_dent {
	char *name;
	struct stat st;
	bool full; /* st is complete (else the core looks the name up itself) */
};

struct nfs_dir {
	GMutex lock;
	GPtrArray *ents; /* struct nfs_dent *, server order */
	bool read_from;	 /* a readdir() has used this listing */
};

/* ---- directories ----------------------------------------------------------------------------- */

static void dent_free(gpointer p)
{
	struct nfs_dent *d = p;

	g_free(d->name);
	g_free(d);
}

static int add_dent(void *arg, const char *name, const struct stat *st, bool full)
{
	struct nfs_dent *d = g_new(struct nfs_dent, 1);

	d->name = g_strdup(name);
	d->st = *st;
	d->full = full;
	g_ptr_array_add(arg, d);
	return 0;
}

static void stat_from_dirent(const struct nfsdirent *e, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)e->inode;
	st->st_dev = (dev_t)e->dev;
	st->st_mode = e->mode;
	st->st_nlink = e->nlink;
	st->st_uid = e->uid;
	st->st_gid = e->gid;
	st->st_rdev = (dev_t)e->rdev;
	st->st_size = (off_t)e->size;
	st->st_blksize = NFS_XFER_MAX;
	st->st_blocks = (blkcnt_t)e->blocks;
	st->st_atim.tv_sec = e->atime.tv_sec;
	st->st_atim.tv_nsec = e->atime_nsec;
	st->st_mtim.tv_sec = e->mtime.tv_sec;
	st->st_mtim.tv_nsec = e->mtime_nsec;
	st->st_ctim.tv_sec = e->ctime.tv_sec;
	st->st_ctim.tv_nsec = e->ctime_nsec;
}

/* Read the whole listing with attributes: READDIRPLUS batches (v3), READDIR batches (v4). */
static int list_dir(struct nfs_loc *loc, const struct ff_cred *cred, ff_node *node, GPtrArray **out)
{
	GPtrArray *ents = g_ptr_array_new_with_free_func(dent_free);
	char *path = nfs_node_path(loc, node, NULL), *full;
	struct nfsdir *dir;
	struct nfs_op op;
	int rc = 0;

	if (!path) /* removed through this mount (while open): it lists nothing */
		goto out_free;
	rc = nfs_op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	if (loc->version == 4) {
		full = nfs_v4_path(loc, path);
		rc = nfs4_readdir(loc, op.nfs, full, add_dent, ents);
		g_free(full);
		goto out_end;
	}
	rc = nfs_sync_opendir(op.nfs, path, &dir);
	if (rc < 0)
		goto out_end;
	for (struct nfsdirent *e; (e = nfs_readdir(op.nfs, dir)) != NULL;) {
		struct stat st;

		if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
			continue;
		stat_from_dirent(e, &st);
		add_dent(ents, e->name, &st, true);
	}
	nfs_closedir(op.nfs, dir);
	/* libnfs 4.0 prepends each entry it receives: restore the server's order */
	for (guint i = 0, j = ents->len; i + 1 < j; i++, j--) {
		gpointer t = ents->pdata[i];

		ents->pdata[i] = ents->pdata[j - 1];
		ents->pdata[j - 1] = t;
	}
out_end:
	nfs_op_end(&op, rc);
out_free:
	g_free(path);
	if (rc) {
		g_ptr_array_free(ents, TRUE);
		return rc;
	}
	*out = ents;
	return 0;
}

int nfs_opendir_node(void *l, const struct ff_cred *cred, ff_node *node, ff_dh **dhp)
{
	struct nfs_dir *d;
	GPtrArray *ents;
	int rc;

	rc = list_dir(l, cred, node, &ents);
	if (rc)
		return rc;
	d = g_new0(struct nfs_dir, 1);
	g_mutex_init(&d->lock);
	d->ents = ents;
	*dhp = (ff_dh *)d;
	return 0;
}

int nfs_readdir_node(void *l, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		     bool plus, ff_fill_fn fill, void *buf)
{
	struct nfs_loc *loc = l;
	struct nfs_dir *d = (struct nfs_dir *)dh;
	int rc = 0;

	g_mutex_lock(&d->lock);
	if (off == 0 && d->read_from) { /* rewinddir(): a fresh listing */
		GPtrArray *ents;

		rc = list_dir(loc, cred, node, &ents);
		if (rc)
			goto out_unlock;
		g_ptr_array_free(d->ents, TRUE);
		d->ents = ents;
	}
	d->read_from = true;
	for (guint i = off < 0 ? 0 : (guint)off; i < d->ents->len; i++) {
		struct nfs_dent *e = d->ents->pdata[i];
		ff_node *child = NULL;
		int r;

		if (plus && e->full) {
			child = nfs_child_node(loc, node, e->name);
			nfs_node_seen(loc, child, &e->st);
			nfs_wb_node_size(loc, nfs_pnode(child), &e->st);
		}
		r = fill(buf, e->name, &e->st, (off_t)i + 1, child, false);
		if (r == FF_FILL_FULL)
			break;
		if (r < 0) {
			rc = r;
			break;
		}
	}
out_unlock:
	g_mutex_unlock(&d->lock);
	return rc;
}

int nfs_releasedir_node(void *l, ff_dh *dh)
{
	struct nfs_dir *d = (struct nfs_dir *)dh;

	g_ptr_array_free(d->ents, TRUE);
	g_mutex_clear(&d->lock);
	g_free(d);
	return 0;
}
