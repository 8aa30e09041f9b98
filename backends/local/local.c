/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local.c - the file:// backend: a location is a directory tree on this machine, served the way
 * libfuse's passthrough_ll serves one. Every node holds an O_PATH descriptor of its object; every
 * operation is a *at() call on a node descriptor with one name component that never follows a
 * symlink, and I/O reopens a node through /proc/self/fd/N, so nothing outside the root is reached.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/local.h"

/* Pin `node`, then act for `cred`: reopening a node takes the daemon's own capabilities, so the
 * order matters. On success *fd is the node's descriptor until local_node_unpin(node). */
int local_pin_as(const struct ff_cred *cred, ff_node *node, int *fd)
{
	int rc;

	*fd = local_node_pin(node);
	if (*fd < 0)
		return *fd;
	rc = local_become(cred);
	if (rc)
		local_node_unpin(node);
	return rc;
}

/* The same for two nodes (`b` may be `a`). */
int local_pin2_as(const struct ff_cred *cred, ff_node *a, int *afd, ff_node *b, int *bfd)
{
	int rc;

	*afd = local_node_pin(a);
	if (*afd < 0)
		return *afd;
	*bfd = local_node_pin(b);
	if (*bfd < 0) {
		local_node_unpin(a);
		return *bfd;
	}
	rc = local_become(cred);
	if (rc) {
		local_node_unpin(b);
		local_node_unpin(a);
	}
	return rc;
}

void local_unpin2(ff_node *a, ff_node *b)
{
	local_node_unpin(b);
	local_node_unpin(a);
}

/* A call that made a descriptor failed for want of descriptors: make room, and say whether to
 * try once more. */
bool local_out_of_fds(void)
{
	return (errno == EMFILE || errno == ENFILE) && local_nodes_relieve();
}

void local_proc_path(char *buf, int fd)
{
	snprintf(buf, PROC_FD_LEN, "/proc/self/fd/%d", fd);
}

/* Pin `node`, act for `cred`, and name the node by its /proc path: for the calls that take no
 * O_PATH descriptor (the *xattr calls; chmod, truncate and the like of a file that is not
 * open). Unpin the node after. */
int local_pin_by_proc(const struct ff_cred *cred, ff_node *node, int *fd, char proc[PROC_FD_LEN])
{
	int rc = local_pin_as(cred, node, fd);

	if (rc == 0)
		local_proc_path(proc, *fd);
	return rc;
}

int local_fh_fd(ff_fh *fh)
{
	return ((struct local_file *)fh)->fd;
}

/* ---- locations -------------------------------------------------------------------------- */

/* The daemon is about to change (done: has changed) the entry `name` of `dirfd` (see
 * local_inotify.h). */
static void expect_entry(void *loc, int dirfd, const char *name, bool done)
{
	local_inotify_expect_entry(((struct local_loc *)loc)->inotify, dirfd, name, done);
}

static int local_check(const struct ff_location_spec *spec, char **msg)
{
	/* RFC 8089: an empty host and "localhost" both mean this machine */
	if ((spec->host && spec->host[0] && g_ascii_strcasecmp(spec->host, "localhost") != 0) ||
	    spec->port) {
		*msg = g_strdup_printf("file:// location %s names a host: write file:///path",
				       spec->uri);
		return -EINVAL;
	}
	if (spec->query) {
		*msg = g_strdup_printf("file:// location %s has a query (?%s); it takes no options",
				       spec->uri, spec->query);
		return -EINVAL;
	}
	if (!spec->path || spec->path[0] != '/') {
		*msg = g_strdup_printf("file:// location %s: the path must be absolute", spec->uri);
		return -EINVAL;
	}
	if (spec->krb5) {
		*msg = g_strdup_printf("%s: sec=krb5 is for smb:// locations; file:// acts as "
				       "each caller already",
				       spec->uri);
		return -EINVAL;
	}
	return 0;
}

static int local_mount(const struct ff_location_spec *spec, const struct ff_notify *notify,
		       void **loc, char **msg)
{
	char proc[PROC_FD_LEN];
	struct local_loc *l;
	int fd, probe, rc;

	local_cred_init();
	/* The core may mount lazily from a worker thread acting for some user: open the admin's
	 * path as the daemon. */
	rc = local_become(NULL);
	if (rc)
		goto out_msg;

	fd = open(spec->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && local_out_of_fds())
		fd = open(spec->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		/* Not there (yet: a disk not mounted, a directory not made): the location is
		 * unreachable, as a server that does not answer; the core retries it. */
		if (rc == -ENOENT || rc == -ENOTDIR || rc == -ENXIO || rc == -ENODEV ||
		    rc == -ESTALE || rc == -EIO) {
			if (msg)
				*msg = g_strdup_printf("cannot open %s: %s", spec->path,
						       g_strerror(-rc));
			return -EHOSTDOWN;
		}
		goto out_msg;
	}

	/* Every reopen for I/O goes through /proc/self/fd: fail here, clearly, without it. */
	local_proc_path(proc, fd);
	probe = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (probe < 0) {
		rc = -errno;
		if (msg)
			*msg = g_strdup_printf("cannot reopen %s through /proc/self/fd: %s",
					       spec->path, g_strerror(-rc));
		goto out_close;
	}
	close(probe);
	local_nodes_init(fd);

	l = g_new0(struct local_loc, 1);
	l->spec = spec;
	l->as_root = geteuid() == 0;
	if (notify) {
		const char *why = NULL;

		if (l->as_root)
			l->watch = local_watch_start(fd, spec->path, notify, &why);
		else
			l->inotify = local_inotify_start(fd, notify, &why);
		if (!l->watch && !l->inotify)
			g_message("%s: changes by others are not watched: %s", spec->uri, why);
	}
	l->root = local_node_new(fd, S_IFDIR);
	*loc = l;
	return 0;

out_close:
	close(fd);
	return rc;
out_msg:
	if (msg)
		*msg = g_strdup_printf("cannot open %s: %s", spec->path, g_strerror(-rc));
	return rc;
}

static void local_unmount(void *loc)
{
	struct local_loc *l = loc;

	local_watch_stop(l->watch);
	local_inotify_stop(l->inotify);
	local_node_free(l->root);
	g_free(l);
}

static bool local_watched(void *loc)
{
	const struct local_loc *l = loc;

	return l->watch || l->inotify;
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* A node for the object that `fd` (O_PATH, owned by the caller) refers to, with its attributes.
 * Consumes fd whatever happens. */
static int local_node_from_fd(int fd, ff_node **node, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	*node = local_node_new(fd, st->st_mode);
	return 0;
}

void local_give(struct local_loc *l, ff_node *node, const struct stat *st)
{
	int fd;

	if (!l->inotify || !S_ISDIR(st->st_mode))
		return;
	fd = local_node_pin(node);
	if (fd < 0)
		return;
	local_inotify_hold(l->inotify, node, fd, st);
	local_node_unpin(node);
}

int local_node_at(int dirfd, const char *name, ff_node **node, struct stat *st)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && local_out_of_fds())
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return local_node_from_fd(fd, node, st);
}

static int local_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct local_loc *l = loc;
	int root, fd, rc;

	rc = local_pin_as(cred, l->root, &root);
	if (rc)
		return rc;
	fd = fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 && local_out_of_fds())
		fd = fcntl(root, F_DUPFD_CLOEXEC, 0);
	local_node_unpin(l->root);
	if (fd < 0)
		return -errno;
	rc = local_node_from_fd(fd, node, st);
	if (rc == 0)
		local_give(l, *node, st);
	return rc;
}

static int local_lookup(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			ff_node **node, struct stat *st)
{
	int fd, rc;

	/* The core never passes these, but the kernel does send ".." for an exported mount, and
	 * ".." of the root is the one name that would leave the location: refuse, cheaply. */
	if (local_is_dot_or_dotdot(name) || strchr(name, '/'))
		return -EINVAL;
	rc = local_pin_as(cred, parent, &fd);
	if (rc)
		return rc;
	/* A parent that is not a directory (a symlink node included) fails with ENOTDIR. */
	rc = local_node_at(fd, name, node, st);
	local_node_unpin(parent);
	if (rc == 0)
		local_give(loc, *node, st);
	return rc;
}

static void local_forget(void *loc, ff_node *node)
{
	local_inotify_release(((struct local_loc *)loc)->inotify, node);
	local_node_free(node);
}

static int local_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
			 struct stat *st)
{
	int fd, rc;

	if (fh) {
		rc = local_become(cred);
		if (rc)
			return rc;
		return fstat(local_fh_fd(fh), st) < 0 ? -errno : 0;
	}
	rc = local_pin_as(cred, node, &fd);
	if (rc)
		return rc;
	rc = fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	local_node_unpin(node);
	return rc;
}

/* Times in setattr: the NOW bits win; an unset time is left alone. */
static struct timespec set_time(unsigned int to_set, unsigned int bit, unsigned int now_bit,
				struct timespec value)
{
	if (to_set & now_bit)
		return (struct timespec){ .tv_nsec = UTIME_NOW };
	if (to_set & bit)
		return value;
	return (struct timespec){ .tv_nsec = UTIME_OMIT };
}

/* setattr with the node pinned: `nfd` its descriptor, `proc` its /proc path. */
static int setattr_pinned(ff_node *node, int nfd, const char *proc, ff_fh *fh,
			  const struct stat *attr, unsigned int to_set)
{
	int fd = fh ? local_fh_fd(fh) : -1;
	int rc;

	/* In the order chmod, chown, truncate, utimes: the last one sets what the others bump. */
	if (to_set & FF_SET_MODE) {
		mode_t mode = attr->st_mode & 07777;

		if (fd >= 0)
			rc = fchmod(fd, mode);
		else if (node_type(node) == S_IFLNK)
			return -EOPNOTSUPP; /* what fchmodat(AT_SYMLINK_NOFOLLOW) says on Linux */
		else
			rc = chmod(proc, mode); /* follows the magic link to the node only */
		if (rc < 0)
			return -errno;
	}

	if (to_set & (FF_SET_UID | FF_SET_GID)) {
		uid_t uid = (to_set & FF_SET_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (to_set & FF_SET_GID) ? attr->st_gid : (gid_t)-1;

		if (fd >= 0)
			rc = fchown(fd, uid, gid);
		else
			rc = fchownat(nfd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (rc < 0)
			return -errno;
	}

	if (to_set & FF_SET_SIZE) {
		if (fd >= 0)
			rc = ftruncate(fd, attr->st_size);
		else
			rc = truncate(proc, attr->st_size);
		if (rc < 0)
			return -errno;
	}

	if (to_set & (FF_SET_ATIME | FF_SET_MTIME | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW)) {
		struct timespec ts[2] = {
			set_time(to_set, FF_SET_ATIME, FF_SET_ATIME_NOW, attr->st_atim),
			set_time(to_set, FF_SET_MTIME, FF_SET_MTIME_NOW, attr->st_mtim),
		};

		if (fd >= 0) {
			rc = futimens(fd, ts);
		} else {
			/* utimensat() takes AT_EMPTY_PATH since Linux 5.8, symlinks included;
			 * before that only the /proc path works, and not for symlinks. */
			rc = utimensat(nfd, "", ts, AT_EMPTY_PATH);
			if (rc < 0 && errno == EINVAL && node_type(node) != S_IFLNK)
				rc = utimensat(AT_FDCWD, proc, ts, 0);
		}
		if (rc < 0)
			return -errno;
	}

	/* FF_SET_CTIME: the kernel sets ctime itself with each change above. */
	return 0;
}

static int local_setattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
			 const struct stat *attr, unsigned int to_set, struct stat *st)
{
	char proc[PROC_FD_LEN];
	int fd, rc = local_pin_by_proc(cred, node, &fd, proc);

	if (rc)
		return rc;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, false);
	rc = setattr_pinned(node, fd, proc, fh, attr, to_set);
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, true);
	local_node_unpin(node);
	return rc ? rc : local_getattr(loc, cred, node, fh, st);
}

static ssize_t local_readlink(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			      size_t size)
{
	ssize_t len;
	char *big;
	int fd, rc;

	if (node_type(node) != S_IFLNK)
		return -EINVAL; /* readlinkat(fd, "") would say ENOENT */
	rc = local_pin_as(cred, node, &fd);
	if (rc)
		return rc;
	len = readlinkat(fd, "", buf, size);
	if (len < 0) {
		len = -errno;
	} else if ((size_t)len == size) {
		/* The target filled buf: it fits exactly or was cut. Ask again with room. */
		big = g_malloc(size + 1);
		len = readlinkat(fd, "", big, size + 1);
		if (len < 0)
			len = -errno;
		else if ((size_t)len > size)
			len = -ENAMETOOLONG;
		else
			memcpy(buf, big, len);
		g_free(big);
	}
	local_node_unpin(node);
	return len;
}

static int local_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		       mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	int fd, rc = local_pin_as(cred, parent, &fd);

	if (rc)
		return rc;
	mode = local_create_mode(mode, cred->umask);
	expect_entry(loc, fd, name, false);
	/* Regular files, fifos and sockets; devices when the caller has CAP_MKNOD (root). */
	rc = mknodat(fd, name, mode, rdev) < 0 ? -errno : local_node_at(fd, name, node, st);
	expect_entry(loc, fd, name, true);
	local_node_unpin(parent);
	return rc;
}

static int local_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		       mode_t mode, ff_node **node, struct stat *st)
{
	int fd, rc = local_pin_as(cred, parent, &fd);

	if (rc)
		return rc;
	mode = local_create_mode(mode, cred->umask);
	expect_entry(loc, fd, name, false);
	rc = mkdirat(fd, name, mode & 07777) < 0 ? -errno : local_node_at(fd, name, node, st);
	expect_entry(loc, fd, name, true);
	local_node_unpin(parent);
	if (rc == 0)
		local_give(loc, *node, st);
	return rc;
}

static int local_symlink(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
			 const char *name, ff_node **node, struct stat *st)
{
	int fd, rc = local_pin_as(cred, parent, &fd);

	if (rc)
		return rc;
	expect_entry(loc, fd, name, false);
	rc = symlinkat(target, fd, name) < 0 ? -errno : local_node_at(fd, name, node, st);
	expect_entry(loc, fd, name, true);
	local_node_unpin(parent);
	return rc;
}

static int local_link(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
		      const char *newname, struct stat *st)
{
	struct local_loc *l = loc;
	char proc[PROC_FD_LEN];
	int fd, dirfd, rc;

	rc = local_pin2_as(cred, node, &fd, newparent, &dirfd);
	if (rc)
		return rc;

	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH, which only a root caller keeps (and
	 * fails ENOENT without it). Otherwise link through the magic link: AT_SYMLINK_FOLLOW
	 * follows /proc/self/fd/N to the node itself, a symlink node included. */
	expect_entry(loc, dirfd, newname, false);
	local_inotify_expect_object(l->inotify, fd, false); /* its link count */
	rc = -ENOENT;
	if (l->as_root && (!cred || cred->uid == 0)) {
		rc = linkat(fd, "", dirfd, newname, AT_EMPTY_PATH);
		if (rc < 0)
			rc = -errno;
	}
	if (rc == -ENOENT) {
		local_proc_path(proc, fd);
		rc = linkat(AT_FDCWD, proc, dirfd, newname, AT_SYMLINK_FOLLOW);
		if (rc < 0)
			rc = -errno;
	}
	if (rc == 0 && fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		rc = -errno;
	expect_entry(loc, dirfd, newname, true);
	local_inotify_expect_object(l->inotify, fd, true);
	local_unpin2(node, newparent);
	return rc;
}

static int local_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	int fd, rc = local_pin_as(cred, parent, &fd);

	if (rc)
		return rc;
	expect_entry(loc, fd, name, false);
	rc = unlinkat(fd, name, 0) < 0 ? -errno : 0;
	expect_entry(loc, fd, name, true);
	local_node_unpin(parent);
	return rc;
}

static int local_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	int fd, rc = local_pin_as(cred, parent, &fd);

	if (rc)
		return rc;
	expect_entry(loc, fd, name, false);
	rc = unlinkat(fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	expect_entry(loc, fd, name, true);
	local_node_unpin(parent);
	return rc;
}

static int local_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			ff_node *newparent, const char *newname, unsigned int flags)
{
	int fd, newfd, rc;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	rc = local_pin2_as(cred, parent, &fd, newparent, &newfd);
	if (rc)
		return rc;
	expect_entry(loc, fd, name, false);
	expect_entry(loc, newfd, newname, false);
	rc = renameat2(fd, name, newfd, newname, flags) < 0 ? -errno : 0;
	expect_entry(loc, fd, name, true);
	expect_entry(loc, newfd, newname, true);
	local_unpin2(parent, newparent);
	return rc;
}

/* ---- files ------------------------------------------------------------------------------ */

static int local_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh)
{
	char proc[PROC_FD_LEN];
	struct local_file *f;
	int fd, pinned, rc;

	/* The kernel opens only regular files through FUSE_OPEN (directories use opendir, special
	 * files never reach the filesystem); refuse anything else rather than block on a fifo. */
	if (node_type(node) == S_IFDIR)
		return -EISDIR;
	if (node_type(node) == S_IFLNK)
		return -ELOOP;
	if (node_type(node) != S_IFREG)
		return -ENXIO;

	rc = local_pin_by_proc(cred, node, &pinned, proc);
	if (rc)
		return rc;
	/* Reopen the node itself; the kernel checks the access mode as the caller. O_NOFOLLOW
	 * would refuse the magic link; the node is no symlink anyway. Not O_DIRECT: the data
	 * comes in FUSE's buffers, which direct I/O would refuse as unaligned (backend.h). */
	flags = (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL | O_DIRECT)) | O_CLOEXEC;
	if (flags & O_TRUNC)
		local_inotify_expect_object(((struct local_loc *)loc)->inotify, pinned, false);
	fd = open(proc, flags);
	if (fd < 0 && local_out_of_fds())
		fd = open(proc, flags);
	rc = -errno;
	if (flags & O_TRUNC)
		local_inotify_expect_object(((struct local_loc *)loc)->inotify, pinned, true);
	local_node_unpin(node);
	if (fd < 0)
		return rc;

	f = g_new(struct local_file, 1);
	f->fd = fd;
	*fh = (ff_fh *)f;
	return 0;
}

/* A description for locks, opened as the daemon: the caller's access to the file was checked
 * when it opened it. Read-write when possible, since a lock's type needs the matching mode. */
static int local_lock_fd(void *loc, ff_node *node)
{
	static const int modes[] = { O_RDWR, O_RDONLY, O_WRONLY };
	char proc[PROC_FD_LEN];
	int fd, rc;

	if (node_type(node) != S_IFREG)
		return -EINVAL;
	rc = local_pin_by_proc(NULL, node, &fd, proc);
	if (rc)
		return rc;
	for (size_t i = 0; i < G_N_ELEMENTS(modes); i++) {
		fd = open(proc, modes[i] | O_CLOEXEC | O_NOCTTY);
		if (fd < 0 && local_out_of_fds())
			fd = open(proc, modes[i] | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0) {
			rc = fd;
			break;
		}
		rc = -errno;
	}
	local_node_unpin(node);
	return rc;
}

static int local_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
			mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh)
{
	char proc[PROC_FD_LEN];
	struct local_file *f;
	int dirfd, fd, pathfd, rc;

	rc = local_pin_as(cred, parent, &dirfd);
	if (rc)
		return rc;
	mode = local_create_mode(mode, cred->umask);
	flags = (flags & ~O_DIRECT) | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	expect_entry(loc, dirfd, name, false); /* and a truncation of what was there */
	fd = openat(dirfd, name, flags, mode & 07777);
	if (fd < 0 && local_out_of_fds())
		fd = openat(dirfd, name, flags, mode & 07777);
	rc = -errno;
	expect_entry(loc, dirfd, name, true);
	local_node_unpin(parent);
	if (fd < 0)
		return rc;

	/* The node's O_PATH descriptor, from the open file rather than the name, which another
	 * process could already have replaced. */
	local_proc_path(proc, fd);
	pathfd = open(proc, O_PATH | O_CLOEXEC);
	if (pathfd < 0) {
		rc = -errno;
		goto out_close;
	}
	rc = local_node_from_fd(pathfd, node, st);
	if (rc)
		goto out_close;

	f = g_new(struct local_file, 1);
	f->fd = fd;
	*fh = (ff_fh *)f;
	return 0;

out_close:
	close(fd);
	return rc;
}

static ssize_t local_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off)
{
	int fd = local_fh_fd(fh);
	size_t done = 0;

	/* Short only at end of file: finish a read cut by a signal or by the filesystem. */
	while (done < size) {
		ssize_t n = pread(fd, (char *)buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break; /* what was read is good; the error repeats next time */
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static ssize_t local_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf,
			   size_t size, off_t off)
{
	int fd = local_fh_fd(fh);
	size_t done = 0;
	int rc = local_become(cred); /* the writer's CAP_FSETID and groups decide setid bits */

	if (rc)
		return rc;

	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, false);
	/* With O_APPEND, Linux's pwrite() appends whatever the offset: off is ignored. */
	while (done < size) {
		ssize_t n = pwrite(fd, (const char *)buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Some bytes are in the file (e.g. then ENOSPC): say so, as write(2)
			 * does, rather than have them written again. */
			if (done)
				break;
			rc = -errno;
			break;
		}
		done += n;
	}
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, true);
	return rc ? rc : (ssize_t)done;
}

static int local_handle_fd(void *loc, ff_fh *fh)
{
	return local_fh_fd(fh);
}

static int local_flush(void *loc, ff_fh *fh)
{
	/* Closing a duplicate runs the filesystem's flush for this descriptor without losing the
	 * handle: errors deferred until close (NFS-backed directories) surface here. */
	int fd = dup(local_fh_fd(fh));

	if (fd < 0)
		return -errno;
	return close(fd) < 0 ? -errno : 0;
}

static int local_fsync(void *loc, ff_fh *fh, int datasync)
{
	int rc = datasync ? fdatasync(local_fh_fd(fh)) : fsync(local_fh_fd(fh));

	return rc < 0 ? -errno : 0;
}

static int local_release(void *loc, ff_fh *fh)
{
	struct local_file *f = (struct local_file *)fh;
	int rc = close(f->fd) < 0 ? -errno : 0;

	g_free(f);
	return rc;
}

static int local_fallocate(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
			   off_t len)
{
	int rc = local_become(cred);

	if (rc)
		return rc;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, local_fh_fd(fh), false);
	rc = fallocate(local_fh_fd(fh), mode, off, len) < 0 ? -errno : 0;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, local_fh_fd(fh), true);
	return rc;
}

static off_t local_lseek(void *loc, ff_fh *fh, off_t off, int whence)
{
	off_t res = lseek(local_fh_fd(fh), off, whence);

	return res < 0 ? -errno : res;
}

static ssize_t local_copy_file_range(void *loc, const struct ff_cred *cred, ff_fh *fh_in,
				     off_t off_in, ff_fh *fh_out, off_t off_out, size_t len,
				     int flags)
{
	int rc = local_become(cred);
	ssize_t n;

	if (rc)
		return rc;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, local_fh_fd(fh_out), false);
	n = copy_file_range(local_fh_fd(fh_in), &off_in, local_fh_fd(fh_out), &off_out, len, flags);
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, local_fh_fd(fh_out), true);

	return n < 0 ? -errno : n;
}

/* ---- whole location --------------------------------------------------------------------- */

static int local_statfs(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	int fd, rc = local_pin_as(cred, node, &fd);

	if (rc)
		return rc;
	rc = fstatvfs(fd, st) < 0 ? -errno : 0;
	local_node_unpin(node);
	return rc;
}

/* ---- the module's one symbol ------------------------------------------------------------ */

static const struct ff_backend_ops local_ops = {
	.check = local_check,
	.mount = local_mount,
	.unmount = local_unmount,

	.root = local_root,
	.lookup = local_lookup,
	.forget = local_forget,
	.getattr = local_getattr,
	.setattr = local_setattr,
	.readlink = local_readlink,
	.mknod = local_mknod,
	.mkdir = local_mkdir,
	.symlink = local_symlink,
	.link = local_link,
	.unlink = local_unlink,
	.rmdir = local_rmdir,
	.rename = local_rename,

	.open = local_open,
	.create = local_create,
	.read = local_read,
	.write = local_write,
	.handle_fd = local_handle_fd,
	.flush = local_flush,
	.fsync = local_fsync,
	.release = local_release,
	.fallocate = local_fallocate,
	.lseek = local_lseek,
	.copy_file_range = local_copy_file_range,
	.lock_fd = local_lock_fd,

	.opendir = local_opendir,
	.readdir = local_readdir,
	.releasedir = local_releasedir,
	.fsyncdir = local_fsyncdir,

	.statfs = local_statfs,

	.setxattr = local_setxattr,
	.getxattr = local_getxattr,
	.listxattr = local_listxattr,
	.removexattr = local_removexattr,

	.watched = local_watched,
};

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "file",
	.description = "directories on this machine",
	.caps = FF_CAP_LOCAL | FF_CAP_POSIX_OWNERS | FF_CAP_NOTIFY | FF_CAP_ACL,
	.ops = &local_ops,
};
