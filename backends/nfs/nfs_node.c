/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_node.c - the nodes of the NFS backend: root, lookup, forget, relink, attributes (getattr,
 * setattr, readlink) and the namespace changes (mknod, mkdir, symlink, link, unlink, rmdir, rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

/* ---- nodes ----------------------------------------------------------------------------------- */

/* Attributes of a node whose name was removed through this mount (no path reaches it): a
 * directory removed while open (or some process's cwd) still answers fstat(), with st_nlink 0,
 * as on a local filesystem. Anything else is stale. (Files removed while open are renamed to a
 * hidden name by the core instead.) */
static int node_gone(struct nfs_loc *loc, ff_node *node, struct stat *st)
{
	int rc = -ESTALE;

	g_mutex_lock(&loc->node_lock);
	if (nfs_pnode(node)->priv) {
		*st = *(struct stat *)nfs_pnode(node)->priv;
		st->st_nlink = 0;
		rc = 0;
	}
	g_mutex_unlock(&loc->node_lock);
	return rc;
}

int nfs_root(void *l, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	struct ff_pathnode *root = ff_pathtree_root(loc->tree);
	char *path = nfs_pnode_path(loc, root, NULL);
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin(&op, loc, cred);
	if (rc)
		goto out;
	rc = nfs_op_end(&op, nfs_do_lstat(loc, op.nfs, path, st));
out:
	g_free(path);
	if (rc) {
		ff_pathtree_unref(loc->tree, root);
	} else {
		*node = nfs_node_new(root);
		nfs_node_seen(loc, *node, st);
	}
	return rc;
}

int nfs_lookup(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	rc = nfs_op_end(&op, nfs_do_lstat(loc, op.nfs, path, st));
	if (rc == 0) {
		*node = nfs_child_node(loc, parent, name);
		nfs_node_seen(loc, *node, st);
		nfs_wb_node_size(loc, nfs_pnode(*node), st); /* never shrink a file being written */
	}
	g_free(path);
	return rc;
}

void nfs_forget(void *l, ff_node *node)
{
	struct nfs_loc *loc = l;

	ff_pathtree_unref(loc->tree, nfs_pnode(node));
}

void nfs_relink(void *l, ff_node *keep, ff_node *fresh)
{
	struct nfs_loc *loc = l;

	ff_pathtree_relink(loc->tree, nfs_pnode(keep), nfs_pnode(fresh));
}

/* ---- attributes ------------------------------------------------------------------------------ */

int nfs_getattr(void *l, const struct ff_cred *cred, ff_node *node, ff_fh *fh, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	if (fh && loc->version == 3)
		return nfs_handle_getattr(loc, (struct nfs_handle *)fh, st);
	path = nfs_node_path(loc, node, NULL);
	if (!path && fh) {
		/* An open NFSv4 file whose name is gone: libnfs' GETATTR has no fsid, so take the
		 * location root's (one export, one filesystem, in all but odd setups). */
		rc = nfs_handle_getattr(loc, (struct nfs_handle *)fh, st);
		if (rc == 0)
			st->st_dev = loc->root_dev;
		return rc;
	}
	if (!path)
		return node_gone(loc, node, st);
	rc = nfs_wb_node_wait(loc, nfs_pnode(node), NULL, nfs_deadline(loc)); /* the size written */
	if (rc == 0)
		rc = nfs_op_begin(&op, loc, cred);
	if (rc == 0)
		rc = nfs_op_end(&op, nfs_do_lstat(loc, op.nfs, path, st));
	if (rc == 0)
		nfs_node_seen(loc, node, st);
	g_free(path);
	return rc;
}

static int setattr_v3(struct nfs_op *op, const char *path, const struct stat *attr,
		      unsigned int to_set)
{
	struct nfs_context *nfs = op->nfs;
	int rc = 0;

	if (to_set & FF_SET_MODE)
		rc = nfs_sync_lchmod(nfs, path, (int)(attr->st_mode & 07777));
	if (rc == 0 && (to_set & (FF_SET_UID | FF_SET_GID)))
		rc = nfs_sync_lchown(nfs, path, (to_set & FF_SET_UID) ? (int)attr->st_uid : -1,
				     (to_set & FF_SET_GID) ? (int)attr->st_gid : -1);
	if (rc == 0 && (to_set & FF_SET_SIZE))
		rc = nfs_sync_truncate(nfs, path, (uint64_t)attr->st_size);
	if (rc == 0 &&
	    (to_set & (FF_SET_ATIME | FF_SET_MTIME | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW))) {
		bool a = to_set & (FF_SET_ATIME | FF_SET_ATIME_NOW),
		     m = to_set & (FF_SET_MTIME | FF_SET_MTIME_NOW);
		struct timeval tv[2];
		struct stat cur;

		if ((to_set & FF_SET_ATIME_NOW) && (to_set & FF_SET_MTIME_NOW)) {
			rc = nfs_sync_lutimes(nfs, path, NULL); /* the server's clock */
		} else {
			/* libnfs sets both times, in microseconds: keep the one not asked for. */
			if (!a || !m) {
				rc = nfs_do_lstat(op->loc, nfs, path, &cur);
				if (rc)
					return rc;
			}
			for (int i = 0; i < 2; i++) {
				bool want = i == 0 ? a : m;
				bool now = to_set & (i == 0 ? FF_SET_ATIME_NOW : FF_SET_MTIME_NOW);
				const struct timespec *ts = i == 0 ? &attr->st_atim
								   : &attr->st_mtim;

				if (!want)
					ts = i == 0 ? &cur.st_atim : &cur.st_mtim;
				if (want && now) {
					gettimeofday(&tv[i], NULL);
				} else {
					struct timespec v = *ts;

					nfs3_time_clamp(&v);
					tv[i].tv_sec = v.tv_sec;
					tv[i].tv_usec = v.tv_nsec / 1000;
				}
			}
			rc = nfs_sync_lutimes(nfs, path, tv);
		}
	}
	return rc;
}

int nfs_setattr_path(struct nfs_op *op, const char *path, const struct stat *attr,
		     unsigned int to_set, struct stat *st)
{
	struct nfs_loc *loc = op->loc;
	bool have_st = false;
	int rc;

	if (loc->version == 4) {
		char *full = nfs_v4_path(loc, path);

		rc = nfs4_setattr(loc, op->nfs, full, attr, to_set, st);
		g_free(full);
	} else {
		rc = nfs3_setattr(op->loc, op->nfs, path, attr, to_set, st, &have_st);
		if (rc == -EACCES) /* e.g. the mount's root is not readable: libnfs' way */
			rc = setattr_v3(op, path, attr, to_set);
		if (rc == 0 && !have_st)
			rc = nfs_do_lstat(loc, op->nfs, path, st);
	}
	if (to_set & FF_SET_SIZE) /* what was read of the file may be gone */
		nfs_ra_changed(loc);
	return rc;
}

int nfs_setattr(void *l, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		const struct stat *attr, unsigned int to_set, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	/* after the WRITEs in flight: a truncation must not be overtaken by them */
	rc = nfs_wb_node_wait(loc, nfs_pnode(node), NULL, nfs_deadline(loc));
	if (rc)
		return rc;
	rc = nfs_op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	rc = nfs_op_end(&op, nfs_setattr_path(&op, path, attr, to_set, st));
	if (rc == 0)
		nfs_node_seen(loc, node, st);
	g_free(path);
	return rc;
}

ssize_t nfs_readlink_node(void *l, const struct ff_cred *cred, ff_node *node, char *buf,
			  size_t size)
{
	struct nfs_loc *loc = l;
	char *path, *target = NULL;
	struct nfs_op op;
	ssize_t rc;

	rc = nfs_op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		char *full = nfs_v4_path(loc, path);

		rc = nfs4_readlink(loc, op.nfs, full, buf, size);
		g_free(full);
		nfs_op_end(&op, rc < 0 ? (int)rc : 0);
		goto out_free;
	}
	rc = nfs_sync_readlink(op.nfs, path, &target);
	nfs_op_end(&op, (int)rc);
	if (rc == 0) {
		size_t len = strlen(target);

		if (len > size) {
			rc = -ENAMETOOLONG;
		} else {
			memcpy(buf, target, len);
			rc = (ssize_t)len;
		}
	}
	g_free(target);
out_free:
	g_free(path);
	return rc;
}

/* ---- namespace changes ----------------------------------------------------------------------- */

/* Did the last call fail because its arguments did not fit? libnfs 4.0 encodes every call but
 * WRITE into a 4096-byte buffer, so a symlink target of more than about 3.9 KB (less the path)
 * cannot be sent: NFSv3 says "Failed to send SYMLINK call", NFSv4 "Failed to encode". */
static bool call_too_big(struct nfs_context *nfs)
{
	const char *msg = nfs_get_error(nfs);

	return msg && (strstr(msg, "Failed to encode") || strstr(msg, "Failed to send SYMLINK"));
}

/* After a create-style call: the new object's attributes and node. */
static int created(struct nfs_op *op, ff_node *parent, const char *name, const char *path,
		   ff_node **node, struct stat *st)
{
	int rc = nfs_do_lstat(op->loc, op->nfs, path, st);

	if (rc == 0 && node) {
		*node = nfs_child_node(op->loc, parent, name);
		nfs_node_seen(op->loc, *node, st);
	}
	return rc;
}

/* NFSv4: CREATE of `name` (not a regular file) in `parent` at `path`, and its node. */
static int create_v4(struct nfs_op *op, ff_node *parent, const char *name, const char *path,
		     mode_t mode, dev_t rdev, const char *target, ff_node **node, struct stat *st)
{
	char *full = nfs_v4_path(op->loc, path);
	int rc = nfs4_create(op->loc, op->nfs, full, mode, rdev, target, st);

	g_free(full);
	if (rc == 0)
		*node = nfs_child_node(op->loc, parent, name);
	return rc;
}

int nfs_mknod_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
		   mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path, *full;
	struct nfsfh *fh;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) &&
	    !S_ISBLK(mode)) {
		rc = -EINVAL;
		goto out_end;
	} else if (loc->version == 4 && !S_ISREG(mode)) {
		rc = create_v4(&op, parent, name, path, mode, rdev, NULL, node, st);
		goto out_end;
	} else if (loc->version == 4) {
		struct nfs4_file *f;

		full = nfs_v4_path(loc, path);
		rc = nfs4_file_open(op.conn, full, O_WRONLY, true, mode, &f, st);
		if (rc == 0)
			rc = nfs4_file_close(op.conn, f);
		g_free(full);
		if (rc == 0)
			*node = nfs_child_node(loc, parent, name);
		goto out_end;
	} else if (S_ISREG(mode)) {
		rc = nfs_sync_create(op.nfs, path, O_CREAT | O_EXCL | O_WRONLY, mode & 07777, &fh);
		if (rc == 0)
			nfs_close(op.nfs, fh);
	} else {
		rc = nfs_sync_mknod(op.nfs, path, (int)mode, (int)rdev);
		if (rc == 0 && (mode & 07000)) {
			/* libnfs 4.0 sends the permission bits only: set the others after */
			struct stat attr = { .st_mode = mode & 07777 };
			bool have_st;

			rc = nfs3_setattr(loc, op.nfs, path, &attr, FF_SET_MODE, st, &have_st);
			if (rc)
				goto out_end;
		}
	}
	if (rc == 0)
		rc = created(&op, parent, name, path, node, st);
out_end:
	nfs_op_end(&op, rc);
	g_free(path);
	return rc;
}

int nfs_mkdir_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
		   mode_t mode, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		rc = create_v4(&op, parent, name, path, S_IFDIR | (mode & 07777), 0, NULL, node,
			       st);
	} else {
		rc = nfs3_mkdir(loc, op.nfs, path, mode, st);
		if (rc == 0) {
			*node = nfs_child_node(loc, parent, name);
			nfs_node_seen(loc, *node, st);
		}
	}
	nfs_op_end(&op, rc);
	g_free(path);
	return rc;
}

int nfs_symlink_node(void *l, const struct ff_cred *cred, const char *target, ff_node *parent,
		     const char *name, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		rc = create_v4(&op, parent, name, path, S_IFLNK | 0777, 0, target, node, st);
	} else {
		rc = nfs_sync_symlink(op.nfs, target, path);
		if (rc < 0 && call_too_big(op.nfs))
			rc = -ENAMETOOLONG;
		else if (rc == 0)
			rc = created(&op, parent, name, path, node, st);
	}
	nfs_op_end(&op, rc);
	g_free(path);
	return rc;
}

int nfs_link_node(void *l, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
		  const char *newname, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *oldpath = nfs_node_path(loc, node, NULL),
	     *newpath = nfs_node_path(loc, newparent, newname);
	struct nfs_op op;
	int rc = -ESTALE;

	if (!oldpath || !newpath)
		goto out_free;
	rc = nfs_op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	rc = nfs_do_lstat(loc, op.nfs, oldpath, st);
	if (rc == 0 && (S_ISLNK(st->st_mode) || loc->version == 4)) {
		/* libnfs resolves oldpath following a final symlink: link the symlink itself
		 * with a LINK of our own, as link(2) does (always on NFSv4, whose long paths
		 * only our COMPOUNDs walk). */
		char *dir = nfs_node_path(loc, newparent, NULL);

		if (!dir) {
			rc = -ESTALE;
		} else if (loc->version == 4) {
			char *from = nfs_v4_path(loc, oldpath), *to = nfs_v4_path(loc, dir);

			rc = nfs4_link(loc, op.nfs, from, to, newname);
			g_free(from);
			g_free(to);
		} else {
			rc = nfs3_link(loc, op.nfs, oldpath, dir, newname);
		}
		g_free(dir);
		if (rc == 0)
			rc = nfs_do_lstat(loc, op.nfs, newpath, st);
	} else if (rc == 0) {
		rc = nfs_sync_link(op.nfs, oldpath, newpath);
		if (rc == 0)
			rc = nfs_do_lstat(loc, op.nfs, newpath, st);
	}
	nfs_op_end(&op, rc);
out_free:
	g_free(oldpath);
	g_free(newpath);
	return rc;
}

static int remove_entry(struct nfs_loc *loc, const struct ff_cred *cred, ff_node *parent,
			const char *name, bool dir)
{
	char *path;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		char *full = nfs_v4_path(loc, path);

		rc = nfs_op_end(&op, nfs4_remove(loc, op.nfs, full, dir));
		g_free(full);
	} else {
		rc = nfs_op_end(&op, nfs3_remove(loc, op.nfs, path, dir));
	}
	if (rc == 0)
		ff_pathtree_unlink(loc->tree, nfs_pnode(parent), name);
	g_free(path);
	return rc;
}

int nfs_unlink_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_entry(l, cred, parent, name, false);
}

int nfs_rmdir_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_entry(l, cred, parent, name, true);
}

int nfs_rename_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
		    ff_node *newparent, const char *newname, unsigned int flags)
{
	struct nfs_loc *loc = l;
	char *oldpath, *newpath;
	struct nfs_op op;
	int rc = -ESTALE;

	if (flags)
		return -EINVAL; /* NFS has neither RENAME_NOREPLACE nor RENAME_EXCHANGE */
	oldpath = nfs_node_path(loc, parent, name);
	newpath = nfs_node_path(loc, newparent, newname);
	if (!oldpath || !newpath)
		goto out_free;
	rc = nfs_op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	if (loc->version == 4) {
		char *olddir = nfs_node_path(loc, parent, NULL),
		     *newdir = nfs_node_path(loc, newparent, NULL);
		char *from = olddir ? nfs_v4_path(loc, olddir) : NULL;
		char *to = newdir ? nfs_v4_path(loc, newdir) : NULL;

		rc = from && to ? nfs4_rename(loc, op.nfs, from, name, to, newname) : -ESTALE;
		g_free(olddir);
		g_free(newdir);
		g_free(from);
		g_free(to);
	} else {
		rc = nfs3_rename(loc, op.nfs, oldpath, newpath);
	}
	rc = nfs_op_end(&op, rc);
	if (rc == 0)
		ff_pathtree_rename(loc->tree, nfs_pnode(parent), name, nfs_pnode(newparent),
				   newname, false);
out_free:
	g_free(oldpath);
	g_free(newpath);
	return rc;
}
