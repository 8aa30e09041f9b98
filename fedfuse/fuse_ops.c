/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse_ops.c - the FUSE low-level operations table and the handlers of inodes, names and
 * directories: each finds its inode, asks resolve.c what backend object it stands for, checks
 * what the namespace forbids (writes to virtual directories and read-only referrals, renames
 * across locations), calls the backend through the gateway and replies. Open files are in
 * file.c, extended attributes in xattr.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fedfuse/control.h"
#include "fedfuse/devio.h"
#include "fedfuse/dir.h"
#include "fedfuse/file.h"
#include "fedfuse/gateway.h"
#include "fedfuse/hidden.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/log.h"
#include "fedfuse/notify.h"
#include "fedfuse/xattr.h"

/* How long rmdir waits for the releases of files set aside in the directory (hidden.h). */
#define HIDDEN_WAIT_USEC (2 * G_USEC_PER_SEC)

/* ---- inodes ------------------------------------------------------------------------------- */

static void ff_init(void *data, struct fuse_conn_info *conn)
{
	struct ff_state *s = data;

	conn->max_write = FF_MAX_IO;
	conn->max_readahead = FF_MAX_IO;
	/* Replies on an io_uring ring are copied into its buffers: nothing to splice into. */
	if ((conn->capable & FUSE_CAP_SPLICE_WRITE) && !ff_devio_uring_coming())
		conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Lookups and readdirs in one directory come at once, as in any other two: without this the
	 * kernel takes them one at a time per directory (git's parallel lstat(), a server that is
	 * slow to answer one name holding up every other name of its directory). */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* Record locks and flock() come to us (lock.h): through the mount they exclude the
	 * programs that lock a local location's files directly, too. */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* The kernel clears setuid/setgid bits. */
	conn->want &= ~(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_WRITEBACK_CACHE);
	/* When the kernel checks permissions, it checks POSIX ACLs too (read as xattrs, cached
	 * until an invalidation). A new object's umask is then applied by us: not where it
	 * inherits a default ACL (see ff_create_mode()). */
	if (s->default_permissions && !s->noxattr && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	else
		conn->want &= ~(FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK);
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ff_state *s = ff_req_state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, parent);
	struct fuse_entry_param e;
	struct ff_cred_hold h;
	struct ff_ctx c;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ff_intr_begin(req);
	ff_cred_get(req, &h);
	ff_ctx_begin(&c, s, &h.cred);
	rc = ff_resolve_lookup(&c, inode, name, &e);
	ff_ctx_end(&c);
	ff_cred_put(&h);
	ff_intr_end();
	if (rc == -ENOENT) { /* kept absent for e.entry_timeout (ff_resolve_lookup()) */
		double keep = e.entry_timeout;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = keep;
		fuse_reply_entry(req, &e);
	} else if (rc < 0) {
		ff_reply_err(req, rc);
	} else {
		fuse_reply_entry(req, &e);
	}
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ff_itab_forget(ff_req_state(req)->itab, ino, nlookup);
	fuse_reply_none(req);
}

static void ff_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct ff_state *s = ff_req_state(req);

	for (size_t i = 0; i < count; i++)
		ff_itab_forget(s->itab, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_state *s = ff_req_state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, ino);
	struct ff_file *f = fi ? ff_file_of(fi) : NULL;
	struct ff_cred_hold h;
	struct ff_ctx c;
	struct stat st;
	double timeout;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (f && f->mnt && ff_file_usable(f) < 0) { /* an open file on a location that died */
		fuse_reply_err(req, EIO);
		return;
	}
	ff_intr_begin(req);
	ff_cred_get(req, &h);
	ff_ctx_begin(&c, s, &h.cred);
	rc = ff_resolve_getattr(&c, inode, f && f->mnt ? f->fh : NULL, &st, &timeout);
	ff_ctx_end(&c);
	ff_cred_put(&h);
	ff_intr_end();
	if (rc < 0)
		ff_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, timeout);
}

/*
 * FUSE_CAP_HANDLE_KILLPRIV is off, so the kernel clears setuid and setgid itself when a caller
 * without CAP_FSETID writes, truncates or chowns a file: it sends a setattr of the mode in the
 * caller's name, and the caller need not own the file (the kernel skips its permission check
 * for that setattr). Done as the caller it would fail EPERM, and the write with it. A mode
 * change by a caller who does not own the file and that only drops S_ISUID/S_ISGID is that
 * request (the kernel refuses any other chmod by a non-owner when it checks permissions, so
 * this is done only with default_permissions): it is done with the daemon's own credentials.
 */
static bool is_kill_setid(const struct ff_cred *cred, const struct stat *cur,
			  const struct stat *attr)
{
	mode_t before = cur->st_mode & 07777, after = attr->st_mode & 07777;
	mode_t dropped = before & ~after;

	return cred->uid != 0 && cred->uid != cur->st_uid && S_ISREG(cur->st_mode) &&
	       (after & ~before) == 0 && dropped != 0 &&
	       (dropped & ~(mode_t)(S_ISUID | S_ISGID)) == 0;
}

/* FUSE's setattr bits in the contract's terms (backend.h). */
static unsigned int set_bits(int fuse_to_set)
{
	static const struct {
		int fuse;
		unsigned int ff;
	} map[] = {
		{ FUSE_SET_ATTR_MODE, FF_SET_MODE },
		{ FUSE_SET_ATTR_UID, FF_SET_UID },
		{ FUSE_SET_ATTR_GID, FF_SET_GID },
		{ FUSE_SET_ATTR_SIZE, FF_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, FF_SET_ATIME },
		{ FUSE_SET_ATTR_MTIME, FF_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, FF_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, FF_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, FF_SET_CTIME },
	};
	unsigned int out = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
		if (fuse_to_set & map[i].fuse)
			out |= map[i].ff;
	return out;
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int fuse_to_set,
		       struct fuse_file_info *fi)
{
	struct ff_file *f = fi ? ff_file_of(fi) : NULL;
	unsigned int to_set = set_bits(fuse_to_set);
	bool done = false;
	ff_fh *fh;
	struct ff_request op;
	struct stat st, cur;
	int rc;

	rc = ff_req_begin(req, ino, true, &op);
	fh = f && f->mnt ? f->fh : NULL;
	if (rc == 0 && (to_set & FF_SET_MODE) && op.h.cred.uid != 0 && op.s->default_permissions &&
	    ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &cur) == 0 &&
	    is_kill_setid(&op.h.cred, &cur, attr)) {
		struct ff_cred_hold self;

		ff_cred_self(&self);
		rc = ff_gw_setattr(op.t.mnt, &self.cred, op.t.bnode, fh, attr, FF_SET_MODE, &st);
		ff_cred_put(&self);
		to_set &= ~FF_SET_MODE;
		done = !(to_set & ~FF_SET_CTIME); /* nothing left: `st` is the answer */
	}
	if (rc == 0 && !done) { /* all of it, or what is left after the kill above */
		rc = ff_gw_setattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, attr, to_set, &st);
		if (rc == 0 && (to_set & FF_SET_SIZE))
			rc = ff_req_drop_setid(&op, fh, &st);
	}
	if (rc < 0) {
		ff_reply_err(req, rc);
	} else {
		st.st_ino = ino;
		ff_resolve_fix_attr(op.inode, &st);
		fuse_reply_attr(req, &st, ff_mount_cache_timeout(op.t.mnt));
	}
	ff_req_end(&op);
}

static void ff_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	struct ff_request op;
	ssize_t n = 0;
	int rc;

	rc = ff_req_begin(req, ino, false, &op);
	if (rc == 0 && !op.t.mnt)
		rc = -EINVAL;
	if (rc == 0) {
		n = ff_gw_readlink(op.t.mnt, &op.h.cred, op.t.bnode, buf, sizeof(buf) - 1);
		rc = n < 0 ? (int)n : 0;
	}
	if (rc < 0) {
		ff_reply_err(req, rc);
	} else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
	ff_req_end(&op);
}

/* ---- names -------------------------------------------------------------------------------- */

/* A name a nested referral or virtual directory stands on cannot be removed or replaced. */
static int check_ns_name(struct ff_request *op, struct ff_inode *dir, const char *name)
{
	return ff_resolve_is_ns_child(&op->c, dir, name) ? -EBUSY : 0;
}

static void reply_new_entry(fuse_req_t req, struct ff_request *op, int rc, ff_node *node,
			    const struct stat *st)
{
	struct fuse_entry_param e;

	ff_absent_changed(op->s->absent); /* a name made, or one found there (EEXIST) */
	if (rc < 0) {
		ff_reply_err(req, rc);
		return;
	}
	ff_resolve_entry(op->s, op->t.mnt, node, st, &e);
	fuse_reply_entry(req, &e);
}

static void ff_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	ff_node *node = NULL;
	struct stat st;
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_mknod(op.t.mnt, &op.h.cred, op.t.bnode, name, ff_create_mode(&op, mode),
				 rdev, &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	ff_req_end(&op);
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	ff_node *node = NULL;
	struct stat st;
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_mkdir(op.t.mnt, &op.h.cred, op.t.bnode, name, ff_create_mode(&op, mode),
				 &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	ff_req_end(&op);
}

static void ff_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	ff_node *node = NULL;
	struct stat st;
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_symlink(op.t.mnt, &op.h.cred, target, op.t.bnode, name, &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	ff_req_end(&op);
}

static void ff_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct ff_inode *inode = ff_itab_get(ff_req_state(req)->itab, ino);
	struct fuse_entry_param e = { 0 };
	struct stat st;
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, newparent, true, &op);
	if (rc == 0 && (!inode || !inode->mnt || inode->ns_ref))
		rc = inode ? -EPERM : -ESTALE;
	if (rc == 0 && inode->mnt != op.t.mnt)
		rc = -EXDEV;
	if (rc == 0)
		rc = ff_gw_link(op.t.mnt, &op.h.cred, inode->bnode, op.t.bnode, newname, &st);
	ff_absent_changed(ff_req_state(req)->absent);
	if (rc < 0) {
		ff_reply_err(req, rc);
	} else {
		ff_itab_ref(op.s->itab, inode);
		ff_resolve_entry_held(op.t.mnt, inode, &st, &e);
		fuse_reply_entry(req, &e);
	}
	ff_req_end(&op);
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		rc = ff_hide_if_open(&op, op.inode, &op.t, name);
	if (rc == 0)
		rc = ff_gw_unlink(op.t.mnt, &op.h.cred, op.t.bnode, name);
	ff_absent_changed(op.s->absent); /* an open file's hidden name made, perhaps */
	ff_reply_err(req, rc < 0 ? rc : 0);
	ff_req_end(&op);
}

/* Before rmdir on a path-named backend: the inode the kernel holds for that directory, if any,
 * with its attributes; a reference to it, for the caller to forget. */
static struct ff_inode *dir_to_remove(struct ff_request *op, const char *name, struct stat *st)
{
	struct ff_mount *m = op->t.mnt;
	ff_node *node;

	if (!(m->be->caps & FF_CAP_PATH_NODES) ||
	    ff_gw_lookup(m, &op->h.cred, op->t.bnode, name, &node, st) < 0)
		return NULL;
	ff_gw_forget(m, node);
	if (!S_ISDIR(st->st_mode))
		return NULL;
	return ff_itab_find_ref(op->s->itab, m, m->index, st->st_dev, st->st_ino);
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ff_inode *victim = NULL;
	struct stat vst;
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		victim = dir_to_remove(&op, name, &vst);
	if (rc == 0)
		rc = ff_gw_rmdir(op.t.mnt, &op.h.cred, op.t.bnode, name);
	if (rc == -ENOTEMPTY && victim && ff_hidden_pending(op.s, victim)) {
		/* `rm d/f; rmdir d` right after f's last close: f waits under a hidden name for the
		 * release FUSE sends after close() returned. Let it arrive, then try again. */
		gint64 deadline = g_get_monotonic_time() + HIDDEN_WAIT_USEC;

		while (ff_hidden_pending(op.s, victim) && g_get_monotonic_time() < deadline)
			g_usleep(2000);
		rc = ff_gw_rmdir(op.t.mnt, &op.h.cred, op.t.bnode, name);
	}
	if (rc == 0 && victim) {
		g_mutex_lock(&victim->lock);
		struct ff_inode_gone *gone = ff_inode_gone(victim);

		gone->removed = true;
		gone->removed_st = vst;
		gone->removed_st.st_nlink = 0;
		gone->removed_st.st_ino = victim->ino;
		g_mutex_unlock(&victim->lock);
	}
	if (victim)
		ff_itab_forget(op.s->itab, victim->ino, 1);
	ff_absent_changed(op.s->absent); /* its inode number may come back for another */
	ff_reply_err(req, rc);
	ff_req_end(&op);
}

static void ff_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct ff_request op, nop;
	int rc, nrc;

	rc = ff_req_begin(req, parent, true, &op);
	nrc = ff_req_begin(req, newparent, true, &nop);
	if (rc == 0)
		rc = nrc;
	if (rc == 0 && op.t.mnt != nop.t.mnt)
		rc = -EXDEV;
	if (rc == 0 && flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		rc = -EINVAL;
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		rc = check_ns_name(&op, nop.inode, newname);
	if (rc == 0 && !(flags & (RENAME_NOREPLACE | RENAME_EXCHANGE))) {
		rc = ff_hide_if_open(&op, nop.inode, &nop.t, newname);
		rc = rc > 0 ? 0 : rc;
	}
	if (rc == 0)
		rc = ff_gw_rename(op.t.mnt, &op.h.cred, op.t.bnode, name, nop.t.bnode, newname,
				  flags);
	ff_absent_changed(ff_req_state(req)->absent);
	ff_reply_err(req, rc);
	ff_req_end(&nop);
	ff_req_end(&op);
}

/* ---- directories -------------------------------------------------------------------------- */

static void ff_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_state *s = ff_req_state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, ino);
	struct ff_cred_hold h;
	struct ff_dir *dir;
	struct ff_ctx c;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ff_intr_begin(req);
	ff_cred_get(req, &h);
	ff_ctx_begin(&c, s, &h.cred);
	rc = ff_dir_open(&c, inode, &dir);
	ff_ctx_end(&c);
	ff_cred_put(&h);
	ff_intr_end();
	if (rc < 0) {
		ff_reply_err(req, rc);
		return;
	}
	fi->fh = (uintptr_t)dir;
	if (ff_dir_cacheable(dir))
		fi->cache_readdir = fi->keep_cache = 1;
	ff_handle_track(s, dir, true);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		ff_handle_untrack(s, dir);
		ff_dir_release(s, dir);
	}
}

static void do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	struct ff_cred_hold h;
	struct ff_ctx c;

	ff_intr_begin(req);
	ff_cred_get(req, &h);
	ff_ctx_begin(&c, ff_req_state(req), &h.cred);
	ff_dir_read(&c, req, (struct ff_dir *)(uintptr_t)fi->fh, size, off, plus);
	ff_ctx_end(&c);
	ff_cred_put(&h);
	ff_intr_end();
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, false);
}

static void ff_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, true);
}

static void ff_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	ff_handle_untrack(ff_req_state(req), (void *)(uintptr_t)fi->fh);
	ff_dir_release(ff_req_state(req), (struct ff_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void ff_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	ff_reply_err(req,
		     ff_dir_fsync(ff_req_state(req), (struct ff_dir *)(uintptr_t)fi->fh, datasync));
}

static void ff_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
	struct ff_request op;
	int rc;

	rc = ff_req_begin(req, ino, false, &op);
	if (rc == 0 && op.t.mnt) /* else a virtual directory's: nothing to store */
		rc = ff_gw_statfs(op.t.mnt, &op.h.cred, op.t.bnode, &st);
	if (rc < 0)
		ff_reply_err(req, rc);
	else
		fuse_reply_statfs(req, &st);
	ff_req_end(&op);
}

const struct fuse_lowlevel_ops ff_ops = {
	.init = ff_init,
	.lookup = ff_lookup,
	.forget = ff_forget,
	.forget_multi = ff_forget_multi,
	.getattr = ff_getattr,
	.setattr = ff_setattr,
	.readlink = ff_readlink,
	.mknod = ff_mknod,
	.mkdir = ff_mkdir,
	.symlink = ff_symlink,
	.link = ff_link,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.rename = ff_rename,
	.open = ff_open,
	.create = ff_create,
	.read = ff_read,
	.write_buf = ff_write_buf,
	.flush = ff_flush,
	.fsync = ff_fsync,
	.release = ff_release,
	.getlk = ff_getlk,
	.setlk = ff_setlk,
	.flock = ff_flock,
	.fallocate = ff_fallocate,
	.lseek = ff_lseek,
	.copy_file_range = ff_copy_file_range,
	.opendir = ff_opendir,
	.readdir = ff_readdir,
	.readdirplus = ff_readdirplus,
	.releasedir = ff_releasedir,
	.fsyncdir = ff_fsyncdir,
	.statfs = ff_statfs,
	.setxattr = ff_setxattr,
	.getxattr = ff_getxattr,
	.listxattr = ff_listxattr,
	.removexattr = ff_removexattr,
};
