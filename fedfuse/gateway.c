/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gateway.c - every call from the core into a backend (gateway.h): one function per operation,
 * each the same three steps: is the location usable, call, account. The defaults for the
 * operations a backend leaves out live here too, beside the errno they promise.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "fedfuse/gateway.h"

/* A node operation on a location that is down fails at once with the error that put it down. */
static int usable(struct ff_mount *m)
{
	return ff_mount_usable(m);
}

/* Open files stay on their location; while it is down they fail with EIO. */
static int handle_usable(struct ff_mount *m)
{
	return ff_mount_usable(m) < 0 ? -EIO : 0;
}

/* A name longer than NAME_MAX is refused here, as a local file system refuses it, before it
 * reaches a server (which may truncate it, or answer something else). */
static int name_ok(const char *name)
{
	return strnlen(name, NAME_MAX + 1) > NAME_MAX ? -ENAMETOOLONG : 0;
}

static int account(struct ff_mount *m, enum ff_op op, int rc, gint64 start)
{
	return ff_mount_account(m, op, rc, start);
}

/* ---- defaults for what a backend leaves out ---------------------------------------------- */

static int default_setattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
			   const struct stat *attr, unsigned int to_set, struct stat *st)
{
	return -EPERM;
}

static ssize_t default_readlink(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
				size_t size)
{
	return -EINVAL;
}

static int default_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			 mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	return -EPERM;
}

static int default_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			 mode_t mode, ff_node **node, struct stat *st)
{
	return -EPERM;
}

static int default_symlink(void *loc, const struct ff_cred *cred, const char *target,
			   ff_node *parent, const char *name, ff_node **node, struct stat *st)
{
	return -EPERM;
}

static int default_link(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
			const char *newname, struct stat *st)
{
	return -EPERM;
}

static int default_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return -EPERM;
}

static int default_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return -EPERM;
}

static int default_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			  ff_node *newparent, const char *newname, unsigned int flags)
{
	return -EPERM;
}

static int default_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			  mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh)
{
	return -ENOSYS;
}

static ssize_t default_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf,
			     size_t size, off_t off)
{
	return -EROFS;
}

static int default_flush(void *loc, ff_fh *fh)
{
	return -ENOSYS;
}

static int default_fsync(void *loc, ff_fh *fh, int datasync)
{
	return -ENOSYS;
}

static int default_fallocate(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
			     off_t len)
{
	return -EOPNOTSUPP;
}

static off_t default_lseek(void *loc, ff_fh *fh, off_t off, int whence)
{
	return -ENOSYS;
}

static ssize_t default_copy_file_range(void *loc, const struct ff_cred *cred, ff_fh *fh_in,
				       off_t off_in, ff_fh *fh_out, off_t off_out, size_t len,
				       int flags)
{
	return -EXDEV;
}

static int default_lock_fd(void *loc, ff_node *node)
{
	return -EOPNOTSUPP;
}

static int default_server_lock(void *loc, ff_fh *fh, uint64_t owner, unsigned int how,
			       struct flock *fl)
{
	return -EOPNOTSUPP;
}

static int default_fsyncdir(void *loc, ff_dh *dh, int datasync)
{
	return -ENOSYS;
}

static int default_statfs(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	return -ENOSYS;
}

static int default_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			    const void *value, size_t size, int flags)
{
	return -EOPNOTSUPP;
}

static ssize_t default_getxattr(void *loc, const struct ff_cred *cred, ff_node *node,
				const char *name, void *buf, size_t size)
{
	return -EOPNOTSUPP;
}

static ssize_t default_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
				 size_t size)
{
	return -EOPNOTSUPP;
}

static int default_removexattr(void *loc, const struct ff_cred *cred, ff_node *node,
			       const char *name)
{
	return -EOPNOTSUPP;
}

static void default_relink(void *loc, ff_node *keep, ff_node *fresh)
{
}

static int default_handle_fd(void *loc, ff_fh *fh)
{
	return -1;
}

static bool default_watched(void *loc)
{
	return false;
}

static int default_check(const struct ff_location_spec *spec, char **msg)
{
	return 0;
}

static int default_server_port(const struct ff_location_spec *spec, char **msg)
{
	return 0;
}

static uint64_t default_write_behind_bytes(void *loc)
{
	return 0;
}

static ssize_t default_read_held(void *loc, ff_fh *fh, size_t size, off_t off, const void **data,
				 void **ref)
{
	return -EAGAIN;
}

static void default_read_done(void *loc, ff_fh *fh, void *ref)
{
}

/* How much of struct ff_backend_ops a module built for ABI minor `minor` has: ops are only
 * ever added at the end, and the rest must not be read. */
static size_t ops_size(unsigned int minor)
{
	if (minor < 1)
		return offsetof(struct ff_backend_ops, attach);
	if (minor < 3)
		return offsetof(struct ff_backend_ops, server_port);
	if (minor < 5)
		return offsetof(struct ff_backend_ops, server_lock);
	if (minor < 7)
		return offsetof(struct ff_backend_ops, write_behind_bytes);
	if (minor < 8)
		return offsetof(struct ff_backend_ops, read_held);
	return sizeof(struct ff_backend_ops);
}

const struct ff_backend_ops *ff_gw_complete_ops(const struct ff_backend_ops *ops,
						unsigned int minor, const char **missing)
{
	struct ff_backend_ops *o;

	/* What the core cannot do without: a location to mount, nodes to find, files to read. */
	*missing = !ops->mount	      ? "mount"
		   : !ops->unmount    ? "unmount"
		   : !ops->root	      ? "root"
		   : !ops->lookup     ? "lookup"
		   : !ops->forget     ? "forget"
		   : !ops->getattr    ? "getattr"
		   : !ops->open	      ? "open"
		   : !ops->read	      ? "read"
		   : !ops->release    ? "release"
		   : !ops->opendir    ? "opendir"
		   : !ops->readdir    ? "readdir"
		   : !ops->releasedir ? "releasedir"
				      : NULL;
	if (*missing)
		return NULL;
	o = g_new0(struct ff_backend_ops, 1);
	memcpy(o, ops, ops_size(minor));
	if (!o->check)
		o->check = default_check;
	if (!o->relink)
		o->relink = default_relink;
	if (!o->handle_fd)
		o->handle_fd = default_handle_fd;
	if (!o->watched)
		o->watched = default_watched;
	if (!o->setattr)
		o->setattr = default_setattr;
	if (!o->readlink)
		o->readlink = default_readlink;
	if (!o->mknod)
		o->mknod = default_mknod;
	if (!o->mkdir)
		o->mkdir = default_mkdir;
	if (!o->symlink)
		o->symlink = default_symlink;
	if (!o->link)
		o->link = default_link;
	if (!o->unlink)
		o->unlink = default_unlink;
	if (!o->rmdir)
		o->rmdir = default_rmdir;
	if (!o->rename)
		o->rename = default_rename;
	if (!o->create)
		o->create = default_create;
	if (!o->write)
		o->write = default_write;
	if (!o->flush)
		o->flush = default_flush;
	if (!o->fsync)
		o->fsync = default_fsync;
	if (!o->fallocate)
		o->fallocate = default_fallocate;
	if (!o->lseek)
		o->lseek = default_lseek;
	if (!o->copy_file_range)
		o->copy_file_range = default_copy_file_range;
	if (!o->lock_fd)
		o->lock_fd = default_lock_fd;
	if (!o->fsyncdir)
		o->fsyncdir = default_fsyncdir;
	if (!o->statfs)
		o->statfs = default_statfs;
	if (!o->setxattr)
		o->setxattr = default_setxattr;
	if (!o->getxattr)
		o->getxattr = default_getxattr;
	if (!o->listxattr)
		o->listxattr = default_listxattr;
	if (!o->removexattr)
		o->removexattr = default_removexattr;
	if (!o->server_port)
		o->server_port = default_server_port;
	if (!o->server_lock)
		o->server_lock = default_server_lock;
	if (!o->write_behind_bytes)
		o->write_behind_bytes = default_write_behind_bytes;
	if (!o->read_held || !o->read_done) {
		o->read_held = default_read_held;
		o->read_done = default_read_done;
	}
	return o;
}

/* ---- the module and locations --------------------------------------------------------------- */

void ff_gw_attach(const struct ff_backend_ops *ops, const struct ff_host *host)
{
	if (ops->attach)
		ops->attach(host);
}

int ff_gw_check(const struct ff_backend *be, const struct ff_location_spec *spec, char **msg)
{
	return be->ops->check(spec, msg);
}

int ff_gw_server_port(const struct ff_backend *be, const struct ff_location_spec *spec, char **msg)
{
	return be->ops->server_port(spec, msg);
}

int ff_gw_mount(struct ff_mount *m, const struct ff_notify *notify, void **ctx, char **msg)
{
	return m->be->ops->mount(&m->loc.spec, notify, ctx, msg);
}

void ff_gw_unmount(struct ff_mount *m)
{
	m->be->ops->unmount(m->ctx);
}

bool ff_gw_watched(struct ff_mount *m, void *ctx)
{
	return m->be->ops->watched(ctx);
}

/* ---- without accounting -------------------------------------------------------------------- */

void ff_gw_forget(struct ff_mount *m, ff_node *node)
{
	m->be->ops->forget(m->ctx, node);
}

void ff_gw_relink(struct ff_mount *m, ff_node *keep, ff_node *fresh)
{
	m->be->ops->relink(m->ctx, keep, fresh);
}

int ff_gw_handle_fd(struct ff_mount *m, ff_fh *fh)
{
	return m->be->ops->handle_fd(m->ctx, fh);
}

int ff_gw_release(struct ff_mount *m, ff_fh *fh)
{
	return m->be->ops->release(m->ctx, fh);
}

int ff_gw_releasedir(struct ff_mount *m, ff_dh *dh)
{
	return m->be->ops->releasedir(m->ctx, dh);
}

/* ---- accounted ------------------------------------------------------------------------------- */

int ff_gw_root(struct ff_mount *m, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	gint64 start = g_get_monotonic_time();

	return account(m, FF_OP_LOOKUP, m->be->ops->root(m->ctx, cred, node, st), start);
}

int ff_gw_lookup(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 ff_node **node, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->lookup(m->ctx, cred, parent, name, node, st);
	return account(m, FF_OP_LOOKUP, rc, start);
}

int ff_gw_getattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		  struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->getattr(m->ctx, cred, node, fh, st);
	return account(m, FF_OP_GETATTR, rc, start);
}

int ff_gw_setattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		  const struct stat *attr, unsigned int to_set, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->setattr(m->ctx, cred, node, fh, attr, to_set, st);
	return account(m, FF_OP_SETATTR, rc, start);
}

ssize_t ff_gw_readlink(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, char *buf,
		       size_t size)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = usable(m);

	if (n == 0)
		n = m->be->ops->readlink(m->ctx, cred, node, buf, size);
	account(m, FF_OP_READLINK, n < 0 ? (int)n : 0, start);
	return n;
}

int ff_gw_mknod(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->mknod(m->ctx, cred, parent, name, mode, rdev, node, st);
	return account(m, FF_OP_CREATE, rc, start);
}

int ff_gw_mkdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		mode_t mode, ff_node **node, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->mkdir(m->ctx, cred, parent, name, mode, node, st);
	return account(m, FF_OP_CREATE, rc, start);
}

int ff_gw_symlink(struct ff_mount *m, const struct ff_cred *cred, const char *target,
		  ff_node *parent, const char *name, ff_node **node, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->symlink(m->ctx, cred, target, parent, name, node, st);
	return account(m, FF_OP_CREATE, rc, start);
}

int ff_gw_link(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
	       const char *newname, struct stat *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(newname);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->link(m->ctx, cred, node, newparent, newname, st);
	return account(m, FF_OP_CREATE, rc, start);
}

int ff_gw_unlink(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->unlink(m->ctx, cred, parent, name);
	return account(m, FF_OP_REMOVE, rc, start);
}

int ff_gw_rmdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->rmdir(m->ctx, cred, parent, name);
	return account(m, FF_OP_REMOVE, rc, start);
}

int ff_gw_rename(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 ff_node *newparent, const char *newname, unsigned int flags)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name) ?: name_ok(newname);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->rename(m->ctx, cred, parent, name, newparent, newname, flags);
	return account(m, FF_OP_RENAME, rc, start);
}

int ff_gw_open(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->open(m->ctx, cred, node, flags, fh);
	return account(m, FF_OP_OPEN, rc, start);
}

int ff_gw_create(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh)
{
	gint64 start = g_get_monotonic_time();
	int rc = name_ok(name);

	if (rc)
		return rc;
	rc = usable(m);
	if (rc == 0)
		rc = m->be->ops->create(m->ctx, cred, parent, name, mode, flags, node, st, fh);
	return account(m, FF_OP_CREATE, rc, start);
}

ssize_t ff_gw_read(struct ff_mount *m, ff_fh *fh, void *buf, size_t size, off_t off)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = handle_usable(m);

	if (n == 0)
		n = m->be->ops->read(m->ctx, fh, buf, size, off);
	account(m, FF_OP_READ, n < 0 ? (int)n : 0, start);
	ff_mount_account_bytes(m, FF_OP_READ, n);
	return n;
}

ssize_t ff_gw_read_held(struct ff_mount *m, ff_fh *fh, size_t size, off_t off, const void **data,
			void **ref)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = handle_usable(m);

	if (n == 0)
		n = m->be->ops->read_held(m->ctx, fh, size, off, data, ref);
	if (n == -EAGAIN)
		return n; /* read() follows, and is counted */
	account(m, FF_OP_READ, n < 0 ? (int)n : 0, start);
	ff_mount_account_bytes(m, FF_OP_READ, n);
	return n;
}

void ff_gw_read_done(struct ff_mount *m, ff_fh *fh, void *ref)
{
	m->be->ops->read_done(m->ctx, fh, ref);
}

ssize_t ff_gw_write(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh, const void *buf,
		    size_t size, off_t off)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = handle_usable(m);

	if (n == 0)
		n = m->be->ops->write(m->ctx, cred, fh, buf, size, off);
	account(m, FF_OP_WRITE, n < 0 ? (int)n : 0, start);
	ff_mount_account_bytes(m, FF_OP_WRITE, n);
	return n;
}

int ff_gw_flush(struct ff_mount *m, ff_fh *fh)
{
	gint64 start = g_get_monotonic_time();
	int rc = handle_usable(m);

	if (rc == 0)
		rc = m->be->ops->flush(m->ctx, fh);
	return account(m, FF_OP_SYNC, rc, start);
}

int ff_gw_fsync(struct ff_mount *m, ff_fh *fh, int datasync)
{
	gint64 start = g_get_monotonic_time();
	int rc = handle_usable(m);

	if (rc == 0)
		rc = m->be->ops->fsync(m->ctx, fh, datasync);
	return account(m, FF_OP_SYNC, rc, start);
}

int ff_gw_fallocate(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
		    off_t len)
{
	gint64 start = g_get_monotonic_time();
	int rc = handle_usable(m);

	if (rc == 0)
		rc = m->be->ops->fallocate(m->ctx, cred, fh, mode, off, len);
	return account(m, FF_OP_OTHER, rc, start);
}

off_t ff_gw_lseek(struct ff_mount *m, ff_fh *fh, off_t off, int whence)
{
	gint64 start = g_get_monotonic_time();
	off_t n = handle_usable(m);

	if (n == 0)
		n = m->be->ops->lseek(m->ctx, fh, off, whence);
	account(m, FF_OP_OTHER, n < 0 ? (int)n : 0, start);
	return n;
}

ssize_t ff_gw_copy_file_range(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh_in,
			      off_t off_in, ff_fh *fh_out, off_t off_out, size_t len, int flags)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = handle_usable(m);

	if (n == 0)
		n = m->be->ops->copy_file_range(m->ctx, cred, fh_in, off_in, fh_out, off_out, len,
						flags);
	account(m, FF_OP_OTHER, n < 0 ? (int)n : 0, start);
	return n;
}

bool ff_gw_has_lock_fd(const struct ff_backend *be)
{
	return be->ops->lock_fd != default_lock_fd;
}

int ff_gw_lock_fd(struct ff_mount *m, ff_node *node)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->lock_fd(m->ctx, node);
	return account(m, FF_OP_OTHER, rc, start);
}

uint64_t ff_gw_write_behind_bytes(struct ff_mount *m, void *ctx)
{
	return m->be->ops->write_behind_bytes(ctx);
}

bool ff_gw_server_locks(struct ff_mount *m, void *ctx)
{
	return m->be->ops->server_lock(ctx, NULL, 0, FF_LOCK_PROBE, NULL) == 0;
}

int ff_gw_server_lock(struct ff_mount *m, ff_fh *fh, uint64_t owner, unsigned int how,
		      struct flock *fl)
{
	gint64 start = g_get_monotonic_time();
	int rc = handle_usable(m);

	if (rc == 0)
		rc = m->be->ops->server_lock(m->ctx, fh, owner, how, fl);
	/* a lock another holds is an answer, not a failure of the location */
	account(m, FF_OP_OTHER, rc == -EAGAIN ? 0 : rc, start);
	return rc;
}

int ff_gw_opendir(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_dh **dh)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->opendir(m->ctx, cred, node, dh);
	return account(m, FF_OP_READDIR, rc, start);
}

int ff_gw_readdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_dh *dh,
		  off_t off, bool plus, ff_fill_fn fill, void *buf)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->readdir(m->ctx, cred, node, dh, off, plus, fill, buf);
	return account(m, FF_OP_READDIR, rc, start);
}

int ff_gw_fsyncdir(struct ff_mount *m, ff_dh *dh, int datasync)
{
	gint64 start = g_get_monotonic_time();
	int rc = handle_usable(m);

	if (rc == 0)
		rc = m->be->ops->fsyncdir(m->ctx, dh, datasync);
	return account(m, FF_OP_SYNC, rc, start);
}

int ff_gw_statfs(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->statfs(m->ctx, cred, node, st);
	return account(m, FF_OP_STATFS, rc, start);
}

int ff_gw_setxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, const char *name,
		   const void *value, size_t size, int flags)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->setxattr(m->ctx, cred, node, name, value, size, flags);
	return account(m, FF_OP_XATTR, rc, start);
}

ssize_t ff_gw_getxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node,
		       const char *name, void *buf, size_t size)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = usable(m);

	if (n == 0)
		n = m->be->ops->getxattr(m->ctx, cred, node, name, buf, size);
	account(m, FF_OP_XATTR, n < 0 ? (int)n : 0, start);
	return n;
}

ssize_t ff_gw_listxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, char *buf,
			size_t size)
{
	gint64 start = g_get_monotonic_time();
	ssize_t n = usable(m);

	if (n == 0)
		n = m->be->ops->listxattr(m->ctx, cred, node, buf, size);
	account(m, FF_OP_XATTR, n < 0 ? (int)n : 0, start);
	return n;
}

int ff_gw_removexattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node,
		      const char *name)
{
	gint64 start = g_get_monotonic_time();
	int rc = usable(m);

	if (rc == 0)
		rc = m->be->ops->removexattr(m->ctx, cred, node, name);
	return account(m, FF_OP_XATTR, rc, start);
}
