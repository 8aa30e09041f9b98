/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_node.c - the nodes of the SMB backend: lookup, attributes (getattr, setattr: sizes, the DOS
 * read-only attribute, times) and the namespace operations (mkdir, mknod, unlink, rmdir, rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backends/smb/smb.h"

/* ---- nodes ---------------------------------------------------------------------------------- */

struct smb_stat_arg {
	const char *url;
	struct stat *st;
};

static int smb_stat_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_stat_arg *a = arg;
	int rc = smb_stat_raw(conn->ctx, a->url, a->st);

	if (rc == 0)
		smb_fix_stat(loc, a->st);
	return rc;
}

static int smb_stat_url(struct smb_loc *loc, const struct ff_cred *cred, const char *url,
			struct stat *st)
{
	struct smb_stat_arg a = { .url = url, .st = st };

	return smb_run(loc, cred, false, smb_stat_fn, &a);
}

int smb_root(void *loc_, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	int rc = smb_stat_url(loc, cred, loc->url, st);

	if (rc == 0) {
		*node = (ff_node *)ff_pathtree_root(loc->tree);
		smb_node_seen(loc, smb_pn(*node), st);
	}
	return rc;
}

int smb_lookup(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	char *url;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc == -EINVAL ? -ENOENT : rc; /* such a name cannot exist on SMB */
	url = smb_url(loc, smb_pn(parent), name);
	if (!url)
		return -ENOENT;
	rc = smb_stat_url(loc, cred, url, st);
	g_free(url);
	if (rc == 0) {
		/* the server may have found the name in another case */
		rc = smb_name_exact_in(loc, cred, smb_pn(parent), name);
		if (rc == 0)
			return -ENOENT;
		if (rc < 0)
			return rc;
		*node = (ff_node *)ff_pathtree_child(loc->tree, smb_pn(parent), name);
		smb_node_seen(loc, smb_pn(*node), st);
		smb_wb_node_size(loc, smb_pn(*node), st); /* never shrink a file being written */
		rc = 0;
	}
	return rc;
}

/* A node's priv holds its identity, the file id, which an open handle of it checks when it is
 * opened again on a new connection (smb_file.c) and change notification reports (smb_watch.c);
 * 0: not known. Where a pointer holds an ino_t, priv is the id itself, no allocation (the tree
 * frees none: SMB_NODE_PRIV_FREE). Under loc->wlock. */
void smb_node_seen(struct smb_loc *loc, struct ff_pathnode *node, const struct stat *st)
{
	if (st->st_ino == 0)
		return;
	g_mutex_lock(&loc->wlock);
#if SMB_INO_IN_PRIV
	node->priv = GSIZE_TO_POINTER((gsize)st->st_ino);
#else
	if (!node->priv)
		node->priv = g_new(ino_t, 1);
	*(ino_t *)node->priv = st->st_ino;
#endif
	g_mutex_unlock(&loc->wlock);
}

ino_t smb_node_ino(struct smb_loc *loc, struct ff_pathnode *node)
{
	ino_t ino;

	g_mutex_lock(&loc->wlock);
#if SMB_INO_IN_PRIV
	ino = (ino_t)GPOINTER_TO_SIZE(node->priv);
#else
	ino = node->priv ? *(ino_t *)node->priv : 0;
#endif
	g_mutex_unlock(&loc->wlock);
	return ino;
}

void smb_forget(void *loc_, ff_node *node)
{
	struct smb_loc *loc = loc_;

	ff_pathtree_unref(loc->tree, smb_pn(node));
}

void smb_relink(void *loc_, ff_node *keep, ff_node *fresh)
{
	struct smb_loc *loc = loc_;

	ff_pathtree_relink(loc->tree, smb_pn(keep), smb_pn(fresh));
}

/* Attributes through the handle; a write-only SMB handle has no FILE_READ_ATTRIBUTES, so those
 * go by path on the same context, as they do for a handle smb_flush() closed. Called with the
 * handle's context checked out. */
int smb_fh_stat(struct smb_loc *loc, struct smb_file *fh, struct stat *st)
{
	SMBCCTX *ctx = fh->conn->ctx;
	char *url;
	int rc;

	if (!fh->no_fstat && fh->file) {
		memset(st, 0, sizeof(*st));
		if (smbc_getFunctionFstat(ctx)(ctx, fh->file, st) == 0) {
			smb_fix_stat(loc, st);
			return 0;
		}
		rc = smb_err(errno);
		if (smb_err_is_disconnect(rc) || rc == -ETIMEDOUT)
			return rc;
		fh->no_fstat = true;
	}
	url = smb_url(loc, fh->node, NULL);
	if (!url)
		return -ESTALE;
	rc = smb_stat_raw(ctx, url, st);
	if (rc == 0)
		smb_fix_stat(loc, st);
	g_free(url);
	return rc;
}

int smb_getattr(void *loc_, const struct ff_cred *cred, ff_node *node, ff_fh *fh_, struct stat *st)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	char *url;
	int rc;

	smb_wb_node_wait(loc, smb_pn(node)); /* the size the kernel was told */
	if (fh) {
		rc = smb_fh_begin(loc, fh, false);
		if (rc)
			return rc;
		rc = smb_fh_stat(loc, fh, st);
		return smb_fh_end(loc, fh, rc);
	}
	url = smb_url(loc, smb_pn(node), NULL);
	if (!url)
		return -ESTALE;
	rc = smb_stat_url(loc, cred, url, st);
	g_free(url);
	return rc;
}

static int smb_truncate_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *f;
	int rc = 0;

	f = smb_open_raw(ctx, a->url, O_WRONLY, 0, false, &rc);
	if (!f)
		return rc;
	if (smbc_getFunctionFtruncate(ctx)(ctx, f, a->size) < 0)
		rc = smb_err(errno);
	if (smbc_getFunctionClose(ctx)(ctx, f) < 0 && rc == 0)
		rc = smb_err(errno);
	return rc;
}

int smb_chmod_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionChmod(conn->ctx)(conn->ctx, a->url, a->mode) < 0)
		return smb_err(errno);
	return 0;
}

int smb_utimes_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionUtimes(conn->ctx)(conn->ctx, a->url, a->tv) < 0)
		return smb_err(errno);
	return 0;
}

static int smb_fh_truncate(struct smb_loc *loc, struct smb_file *fh, off_t size)
{
	int rc = smb_fh_begin(loc, fh, true);

	if (rc)
		return rc;
	if (smbc_getFunctionFtruncate(fh->conn->ctx)(fh->conn->ctx, fh->file, size) < 0)
		rc = smb_err(errno);
	return smb_fh_end(loc, fh, rc);
}

static void smb_pick_time(struct timeval *tv, unsigned int to_set, unsigned int bit,
			  unsigned int now_bit, const struct timespec *given,
			  const struct timespec *cur)
{
	const struct timespec *ts = (to_set & bit) ? given : cur;

	if (to_set & now_bit) {
		gint64 now = g_get_real_time();

		tv->tv_sec = (time_t)(now / G_USEC_PER_SEC);
		tv->tv_usec = (suseconds_t)(now % G_USEC_PER_SEC);
		return;
	}
	tv->tv_sec = ts->tv_sec;
	tv->tv_usec = (suseconds_t)(ts->tv_nsec / 1000);
}

/*
 * Size through ftruncate (on the caller's handle when it can write, else on a handle of our
 * own); times through utimes. Modes, like mount.cifs without unix extensions: only "may anybody
 * write" is kept, as the DOS read-only attribute of files (chmod a-w sets it, chmod u+w clears
 * it); other bits and directories' modes are accepted and not stored. Owners cannot be stored:
 * chown is accepted and ignored, as cifs does.
 */
int smb_setattr(void *loc_, const struct ff_cred *cred, ff_node *node, ff_fh *fh_,
		const struct stat *attr, unsigned int to_set, struct stat *st)
{
	const int times = FF_SET_ATIME | FF_SET_MTIME | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW;
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	struct smb_path_arg a = { 0 };
	struct stat cur;
	char *url;
	int rc = 0;

	smb_wb_node_wait(loc, smb_pn(node)); /* a truncation must not be overtaken by them */
	url = smb_url(loc, smb_pn(node), NULL);
	if (!url)
		return -ESTALE;
	a.url = url;
	smb_watch_expect(loc, smb_pn(node), NULL, false);
	if (to_set & FF_SET_SIZE) {
		if (attr->st_size < 0) {
			rc = -EINVAL;
			goto out;
		}
		smb_data_changed(loc, smb_pn(node));
		if (fh && (fh->flags & O_ACCMODE) != O_RDONLY) {
			rc = smb_fh_truncate(loc, fh, attr->st_size);
		} else {
			a.size = attr->st_size;
			rc = smb_run(loc, cred, false, smb_truncate_fn, &a);
		}
		if (rc == -EINVAL)
			rc = -EFBIG; /* the server's EFBIG comes back so (the size is >= 0) */
		if (rc)
			goto out;
		smb_times_written(loc, smb_pn(node)); /* it moved mtime, as a write does */
	}
	if (to_set & (FF_SET_MODE | times)) {
		rc = smb_getattr(loc, cred, node, fh_, &cur);
		if (rc)
			goto out;
	}
	if ((to_set & FF_SET_MODE) && S_ISREG(cur.st_mode)) {
		bool want_ro = !(attr->st_mode & 0222);
		/* Unknown when file_mode has no write bit itself: then always tell the server. */
		bool is_ro = (loc->file_mode & 0222) ? !(cur.st_mode & 0222) : !want_ro;

		if (want_ro != is_ro) {
			/* libsmbclient maps S_IXUSR to ARCHIVE ("needs backup", as any write
			 * leaves it) and clears SYSTEM/HIDDEN. */
			a.mode = (want_ro ? 0444 : 0644) | S_IXUSR;
			rc = smb_run(loc, cred, false, smb_chmod_fn, &a);
			if (rc)
				goto out;
		}
	}
	if (to_set & times) {
		smb_pick_time(&a.tv[0], to_set, FF_SET_ATIME, FF_SET_ATIME_NOW, &attr->st_atim,
			      &cur.st_atim);
		smb_pick_time(&a.tv[1], to_set, FF_SET_MTIME, FF_SET_MTIME_NOW, &attr->st_mtim,
			      &cur.st_mtim);
		rc = smb_run(loc, cred, false, smb_utimes_fn, &a);
		if (rc)
			goto out;
		smb_times_set(loc, smb_pn(node), a.tv);
	}
	rc = smb_getattr(loc, cred, node, fh_, st);
out:
	smb_watch_expect(loc, smb_pn(node), NULL, true);
	g_free(url);
	return rc;
}

/* ---- namespace operations ------------------------------------------------------------------- */

static int smb_mkdir_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	int rc;

	if (smbc_getFunctionMkdir(conn->ctx)(conn->ctx, a->url, a->mode) < 0)
		return smb_err(errno);
	rc = smb_stat_raw(conn->ctx, a->url, a->st);
	if (rc == 0)
		smb_fix_stat(loc, a->st);
	return rc;
}

int smb_mkdir(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
	      mode_t mode, ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	struct smb_path_arg a = { .mode = mode, .st = st };
	char *url;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc;
	url = smb_url(loc, smb_pn(parent), name);
	if (!url)
		return -ENOENT;
	a.url = url;
	smb_watch_expect(loc, smb_pn(parent), name, false);
	rc = smb_run(loc, cred, false, smb_mkdir_fn, &a);
	smb_watch_expect(loc, smb_pn(parent), name, true);
	if (rc == 0) {
		smb_names_update(loc, smb_pn(parent), name, true);
		*node = (ff_node *)ff_pathtree_child(loc->tree, smb_pn(parent), name);
	}
	g_free(url);
	return rc;
}

/* Regular files only (FUSE uses mknod for them when create is not used); SMB has no fifos,
 * sockets or devices without unix extensions: EPERM, as vfat answers. */
int smb_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      dev_t rdev, ff_node **node, struct stat *st)
{
	ff_fh *fh;
	int rc;

	if (!S_ISREG(mode))
		return -EPERM;
	rc = smb_create(loc, cred, parent, name, mode, O_WRONLY | O_CREAT | O_EXCL, node, st, &fh);
	if (rc == 0)
		smb_release(loc, fh);
	return rc;
}

/* No symlinks and no hard links on SMB without unix extensions: left out, so EPERM, as vfat
 * answers (fedfuse/gateway.h). */

/*
 * libsmbclient's unlink opens with DELETE_ON_CLOSE but without FILE_NON_DIRECTORY_FILE: given a
 * directory, it removes it when empty and reports success without removing it otherwise. So
 * look first (EISDIR, as Linux answers). And POSIX lets anybody who may write the directory
 * remove a file, while SMB refuses to delete a file with the DOS read-only attribute: like
 * cifs, clear the attribute and try once more (and put it back when that fails too).
 */
static int smb_unlink_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	struct stat st;
	int rc, rc2;

	rc = smb_stat_raw(ctx, a->url, &st);
	if (rc)
		return rc;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url) == 0)
		return 0;
	rc = smb_err(errno);
	if ((rc != -EACCES && rc != -EINVAL && rc != -EPERM) || !smb_raw_readonly(&st))
		return rc;
	if (smbc_getFunctionChmod(ctx)(ctx, a->url, 0644 | S_IXUSR) < 0)
		return rc;
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url) == 0)
		return 0;
	rc2 = smb_err(errno);
	smbc_getFunctionChmod(ctx)(ctx, a->url, 0444 | S_IXUSR);
	return smb_err_is_disconnect(rc2) ? rc2 : rc;
}

/* Contexts of the caller's that were retired are freed now: true when there were any. */
static bool reaped(struct smb_loc *loc, const struct ff_cred *cred)
{
	struct smb_pool *pool;

	return smb_pool_of(loc, cred, &pool) == 0 && smb_pool_wait_reaped(pool);
}

/* Remove `name` from `parent` with `fn` (unlink or rmdir). A sharing violation (EBUSY) may
 * come from a file still open on a retired connection, or from one of ours being released: once
 * those are closed, try again. */
static int remove_name(struct smb_loc *loc, const struct ff_cred *cred, ff_node *parent,
		       const char *name, int (*fn)(struct smb_loc *, struct smb_conn *, void *))
{
	struct smb_path_arg a = { 0 };
	int rc;

	a.url = smb_url(loc, smb_pn(parent), name);
	if (!a.url)
		return -ENOENT;
	smb_watch_expect(loc, smb_pn(parent), name, false);
	rc = smb_run(loc, cred, false, fn, &a);
	if (rc == -EBUSY && reaped(loc, cred))
		rc = smb_run(loc, cred, false, fn, &a);
	if (rc == -EBUSY) {
		/* or from one of our handles being released meanwhile: a release closes inside
		 * the gate, so it has once the gate is ours */
		g_rw_lock_writer_lock(&loc->gate);
		rc = smb_run(loc, cred, false, fn, &a);
		g_rw_lock_writer_unlock(&loc->gate);
	}
	smb_watch_expect(loc, smb_pn(parent), name, true);
	if (rc == 0) {
		smb_names_update(loc, smb_pn(parent), name, false);
		ff_pathtree_unlink(loc->tree, smb_pn(parent), name);
	}
	g_free((char *)a.url);
	return rc;
}

int smb_unlink(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(loc_, cred, parent, name, smb_unlink_fn);
}

static int smb_rmdir_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionRmdir(conn->ctx)(conn->ctx, a->url) < 0)
		return smb_err(errno);
	return 0;
}

int smb_rmdir(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(loc_, cred, parent, name, smb_rmdir_fn);
}

/*
 * libsmbclient renames without replacing and, when the target exists, deletes it and renames
 * again (not atomic: there is a moment without the target). When that fails it reports EEXIST
 * whatever the reason; work out the POSIX answer from the two objects: a directory replaces only
 * an empty directory, a file only a file.
 */
int smb_rename_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	struct stat src, dst;
	bool dir_removed = false;
	int rc;

	rc = smb_stat_raw(ctx, a->url, &src);
	if (rc)
		return rc;
	rc = smb_stat_raw(ctx, a->url2, &dst);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == 0 && !(src.st_ino == dst.st_ino && src.st_ino != 0) && a->dir2_url) {
		/* Another object: if the server found the target name in another case, that
		 * file is not the target and must not be replaced. */
		int exact = smb_name_exact(loc, ctx, a->dir2_url, a->name2);

		if (exact <= 0)
			return exact < 0 ? exact : -EEXIST;
	}
	if (rc == 0 && src.st_ino == dst.st_ino && src.st_ino != 0) {
		/* The same object: a change of case only (or no change at all). */
		if (strcmp(a->url, a->url2) == 0)
			return 0;
	} else if (rc == 0 && (a->flags & RENAME_NOREPLACE)) {
		return -EEXIST;
	} else if (rc == 0 && S_ISDIR(dst.st_mode) && !S_ISDIR(src.st_mode)) {
		return -EISDIR;
	} else if (rc == 0 && !S_ISDIR(dst.st_mode) && S_ISDIR(src.st_mode)) {
		return -ENOTDIR;
	} else if (rc == 0 && S_ISDIR(dst.st_mode)) {
		/* SMB deletes only files on rename: take the (empty) directory away first. */
		if (smbc_getFunctionRmdir(ctx)(ctx, a->url2) < 0)
			return smb_err(errno);
		dir_removed = true;
	}
	if (smbc_getFunctionRename(ctx)(ctx, a->url, ctx, a->url2) == 0)
		return 0;
	rc = smb_err(errno);
	if (dir_removed) { /* put the empty directory back, as far as we can */
		smbc_getFunctionMkdir(ctx)(ctx, a->url2, 0755);
		return rc;
	}
	if (rc != -EEXIST || (a->flags & RENAME_NOREPLACE))
		return rc;
	/* libsmbclient could not delete the target file: find out why. */
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url2) < 0)
		return smb_err(errno);
	if (smbc_getFunctionRename(ctx)(ctx, a->url, ctx, a->url2) < 0)
		return smb_err(errno);
	return 0;
}

int smb_rename(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node *newparent, const char *newname, unsigned int flags)
{
	struct smb_loc *loc = loc_;
	struct smb_path_arg a = { .flags = flags };
	int rc;

	if (flags & ~(unsigned int)RENAME_NOREPLACE)
		return -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
	rc = smb_check_name(newname);
	if (rc)
		return rc;
	a.url = smb_url(loc, smb_pn(parent), name);
	a.url2 = smb_url(loc, smb_pn(newparent), newname);
	a.dir2_url = smb_url(loc, smb_pn(newparent), NULL);
	a.name2 = newname;
	if (!a.url || !a.url2 || !a.dir2_url) {
		rc = -ENOENT;
		goto out;
	}
	smb_watch_expect(loc, smb_pn(parent), name, false);
	smb_watch_expect(loc, smb_pn(newparent), newname, false);
	rc = smb_run(loc, cred, false, smb_rename_fn, &a);
	if (rc == -EBUSY && reaped(loc, cred))
		rc = smb_run(loc, cred, false, smb_rename_fn, &a);
	if (rc == 0) {
		smb_names_update(loc, smb_pn(parent), name, false);
		smb_names_update(loc, smb_pn(newparent), newname, true);
	}
	if (rc == 0)
		ff_pathtree_rename(loc->tree, smb_pn(parent), name, smb_pn(newparent), newname,
				   false);
	else if (rc == -EBUSY || rc == -EACCES)
		rc = smb_rename_open(loc, cred, &a, rc, smb_pn(parent), name, smb_pn(newparent),
				     newname);
	smb_watch_expect(loc, smb_pn(parent), name, true);
	smb_watch_expect(loc, smb_pn(newparent), newname, true);
out:
	g_free((char *)a.url);
	g_free((char *)a.url2);
	g_free((char *)a.dir2_url);
	return rc;
}
