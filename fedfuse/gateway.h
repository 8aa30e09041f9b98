/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gateway.h - the one door from the core to the backends (DESIGN §5). Every backend operation is
 * called through the function of the same name here and nowhere else: it refuses a call to a
 * location that is down (at once, without I/O: the down error for node operations, EIO for
 * operations on a file opened before the location died), times the call and counts it in the
 * location's statistics, errors included, and returns 0 (or a count) or -errno.
 *
 * A backend leaves out what it cannot do; the plugin loader (plugins.c) fills each missing
 * operation with a default that gives the errno written beside it below, so the core never
 * tests for a NULL operation. Calls that cannot block (forget, relink, handle_fd, watched) and
 * those that end a life (release, releasedir, unmount) are passed through without accounting.
 *
 * A name longer than NAME_MAX is refused with ENAMETOOLONG before any backend sees it.
 *
 * No core lock may be held across a call made through here.
 */
#ifndef FEDFUSE_GATEWAY_H
#define FEDFUSE_GATEWAY_H

#include "backends/backend.h"
#include "fedfuse/mount.h"

/* A copy of the operations of a module built for ABI minor `minor` (what that minor lacks is
 * never read), with those it leaves NULL filled with the defaults; NULL when it lacks one the
 * core cannot do without (its name in *missing). */
const struct ff_backend_ops *ff_gw_complete_ops(const struct ff_backend_ops *ops,
						unsigned int minor, const char **missing);

/* Give a module just loaded the core's services (its optional attach op). */
void ff_gw_attach(const struct ff_backend_ops *ops, const struct ff_host *host);

/* ---- locations (not accounted: mount.c records their outcome) ---------------------------- */
int ff_gw_check(const struct ff_backend *be, const struct ff_location_spec *spec, char **msg);
/* The TCP port of the location's server; 0 when it has none (the default). */
int ff_gw_server_port(const struct ff_backend *be, const struct ff_location_spec *spec, char **msg);
int ff_gw_mount(struct ff_mount *m, const struct ff_notify *notify, void **ctx, char **msg);
void ff_gw_unmount(struct ff_mount *m);
bool ff_gw_watched(struct ff_mount *m, void *ctx); /* of a new context; default: false */

/* ---- nodes -------------------------------------------------------------------------------- */
/* The root is asked while a location is down too: it is how one finds it back. */
int ff_gw_root(struct ff_mount *m, const struct ff_cred *cred, ff_node **node, struct stat *st);
int ff_gw_lookup(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 ff_node **node, struct stat *st);
void ff_gw_forget(struct ff_mount *m, ff_node *node);
void ff_gw_relink(struct ff_mount *m, ff_node *keep, ff_node *fresh); /* default: nothing */
int ff_gw_getattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		  struct stat *st);
int ff_gw_setattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		  const struct stat *attr, unsigned int to_set, struct stat *st); /* EPERM */
ssize_t ff_gw_readlink(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, char *buf,
		       size_t size); /* EINVAL */
int ff_gw_mknod(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		mode_t mode, dev_t rdev, ff_node **node, struct stat *st); /* EPERM */
int ff_gw_mkdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		mode_t mode, ff_node **node, struct stat *st); /* EPERM */
int ff_gw_symlink(struct ff_mount *m, const struct ff_cred *cred, const char *target,
		  ff_node *parent, const char *name, ff_node **node, struct stat *st); /* EPERM */
int ff_gw_link(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
	       const char *newname, struct stat *st); /* EPERM */
int ff_gw_unlink(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent,
		 const char *name); /* EPERM */
int ff_gw_rmdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent,
		const char *name); /* EPERM */
int ff_gw_rename(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 ff_node *newparent, const char *newname, unsigned int flags); /* EPERM */

/* ---- files -------------------------------------------------------------------------------- */
int ff_gw_open(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, int flags,
	       ff_fh **fh);
/* ENOSYS: the kernel then makes the file with mknod and opens it. */
int ff_gw_create(struct ff_mount *m, const struct ff_cred *cred, ff_node *parent, const char *name,
		 mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh);
ssize_t ff_gw_read(struct ff_mount *m, ff_fh *fh, void *buf, size_t size, off_t off);
/* A read from data the backend holds (read-ahead): -EAGAIN when it holds none, then
 * ff_gw_read(); otherwise ff_gw_read_done() once *data was sent. */
ssize_t ff_gw_read_held(struct ff_mount *m, ff_fh *fh, size_t size, off_t off, const void **data,
			void **ref);
void ff_gw_read_done(struct ff_mount *m, ff_fh *fh, void *ref);
ssize_t ff_gw_write(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh, const void *buf,
		    size_t size, off_t off);	    /* EROFS */
int ff_gw_handle_fd(struct ff_mount *m, ff_fh *fh); /* default: -1 */
/* ENOSYS for these three: nothing is kept back to flush (the kernel stops asking). */
int ff_gw_flush(struct ff_mount *m, ff_fh *fh);
int ff_gw_fsync(struct ff_mount *m, ff_fh *fh, int datasync);
int ff_gw_fsyncdir(struct ff_mount *m, ff_dh *dh, int datasync);
int ff_gw_release(struct ff_mount *m, ff_fh *fh);
int ff_gw_fallocate(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
		    off_t len); /* EOPNOTSUPP */
/* ENOSYS: the kernel answers SEEK_DATA/SEEK_HOLE itself. */
off_t ff_gw_lseek(struct ff_mount *m, ff_fh *fh, off_t off, int whence);
/* EXDEV: the kernel copies with read and write. */
ssize_t ff_gw_copy_file_range(struct ff_mount *m, const struct ff_cred *cred, ff_fh *fh_in,
			      off_t off_in, ff_fh *fh_out, off_t off_out, size_t len, int flags);
int ff_gw_lock_fd(struct ff_mount *m, ff_node *node); /* EOPNOTSUPP */
/* Whether the backend keeps locks on its own files (lock_fd): else they hold among the
 * processes using this mount only (lock.c's private file per inode). */
bool ff_gw_has_lock_fd(const struct ff_backend *be);
/* Whether the location of a new context `ctx` keeps locks on its server (server_lock). */
bool ff_gw_server_locks(struct ff_mount *m, void *ctx);
/* Bytes written to the location that its backend still holds (write-behind). */
uint64_t ff_gw_write_behind_bytes(struct ff_mount *m, void *ctx);
int ff_gw_server_lock(struct ff_mount *m, ff_fh *fh, uint64_t owner, unsigned int how,
		      struct flock *fl); /* EOPNOTSUPP */

/* ---- directories -------------------------------------------------------------------------- */
int ff_gw_opendir(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_dh **dh);
int ff_gw_readdir(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, ff_dh *dh,
		  off_t off, bool plus, ff_fill_fn fill, void *buf);
int ff_gw_releasedir(struct ff_mount *m, ff_dh *dh);
int ff_gw_statfs(struct ff_mount *m, const struct ff_cred *cred, ff_node *node,
		 struct statvfs *st); /* ENOSYS */

/* ---- extended attributes: EOPNOTSUPP --------------------------------------------------------- */
int ff_gw_setxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, const char *name,
		   const void *value, size_t size, int flags);
ssize_t ff_gw_getxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node,
		       const char *name, void *buf, size_t size);
ssize_t ff_gw_listxattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node, char *buf,
			size_t size);
int ff_gw_removexattr(struct ff_mount *m, const struct ff_cred *cred, ff_node *node,
		      const char *name);

#endif /* FEDFUSE_GATEWAY_H */
