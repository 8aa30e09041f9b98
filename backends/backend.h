/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend.h - the contract between the fedfuse core and its backend plugins.
 *
 * A backend speaks one URI scheme (file, nfs, smb). It is a libtool module that exports exactly
 * one symbol, FF_BACKEND_SYMBOL, a `const struct ff_backend`. The core checks the ABI version at
 * load time, mounts each location of that scheme into an opaque context, and then calls node
 * operations on it from many FUSE worker threads at once.
 *
 * Conventions, for every operation below:
 *  - The location context (`void *loc`, what mount() returned) is the first argument.
 *  - The return value is 0 (or a byte count where documented) on success and -errno on failure.
 *    Never return -1 with errno set, and never -EIO where a precise errno exists.
 *  - Operations may block (network I/O); the core calls them from worker threads and holds no
 *    core lock across a call, except across lock_fd() (which must not block) and across the
 *    listing of one open directory (its own lock: see the lock order in fedfuse/fedfuse.h).
 *    A backend must honour spec->timeout: no call may block longer.
 *  - Operations may be called concurrently, on the same or different nodes and handles, except
 *    where noted. Backends whose libraries are not thread safe keep a pool of contexts.
 *  - Names passed in are single components: never empty, never "." or "..", never containing
 *    '/'. The core guarantees this. A backend must still never follow a symlink while resolving
 *    a name, and nothing outside the location's root may be reachable.
 *  - A NULL operation means "not supported": the core answers with the errno that
 *    fedfuse/gateway.h gives for it, without calling the backend. mount, unmount, root,
 *    lookup, forget, getattr, open, read, release, opendir, readdir and releasedir are
 *    required: a backend without one of them is refused at load.
 *  - Logging: through GLib's log functions (g_warning, g_message, g_info, g_debug), in the
 *    backend's own log domain (G_LOG_DOMAIN: local, nfs, smb); the core sends the lines where its own
 *    go (stderr in the foreground, syslog otherwise). Never a password.
 *  - No libfuse type or header: this file is the whole contract.
 */
#ifndef FEDFUSE_BACKEND_H
#define FEDFUSE_BACKEND_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <fcntl.h>

#define FF_BACKEND_ABI_MAJOR 4 /* incompatible changes bump this; the core refuses others */
#define FF_BACKEND_ABI_MINOR 9 /* compatible additions (new ops at the end) bump this */
#define FF_BACKEND_SYMBOL "fedfuse_backend"

/* An object (file, directory, symlink, ...) inside a location, as the backend represents it.
 * Opaque to the core. A node reference is created by root(), lookup(), the create-style ops and
 * readdir() in plus mode, and dropped by forget(). */
typedef struct ff_node ff_node;

/* An open file (open(), create()) and an open directory (opendir()) of a backend: opaque to the
 * core, distinct types so that one is never passed for the other. */
typedef struct ff_fh ff_fh;
typedef struct ff_dh ff_dh;

/* What the namespace file says about one location. Strings stay valid until unmount(). */
struct ff_location_spec {
	const char *uri;	 /* as written, e.g. "nfs://h/export?version=4" (never logged
				  * with a password: URIs carry none) */
	const char *scheme;	 /* "file", "nfs", "smb" */
	const char *host;	 /* NULL for file:// */
	int port;		 /* 0 when not given */
	const char *path;	 /* percent-decoded, absolute, normalised, "/" at least */
	const char *query;	 /* raw query without '?', or NULL; the backend parses it */
	double timeout;		 /* seconds an operation may take before it fails ETIMEDOUT */
	bool read_only;		 /* the core already refuses writes; backends may open read-only */
	const char *credentials; /* path of a mount.cifs-style credentials file, or NULL */
	/* Ownership and modes for backends without POSIX ownership (smb), like mount.cifs. */
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
	mode_t file_mode; /* default 0644 */
	mode_t dir_mode;  /* default 0755 */
	/* The namespace wants changes by others watched (watch=, DESIGN §6). The core passes a
	 * notify to mount() only then. */
	bool watch;
	/* Seconds the kernel caches this location's entries and attributes (attr-timeout=): a
	 * backend may trust what it learnt of a path (an NFSv4 directory's filehandle) as long.
	 * (ABI minor 3.) */
	double attr_timeout;
	/* identity=per-user (ABI minor 4): each caller acts on the server as themself, with the
	 * credentials file named after them (user name, else uid) in `credentials_dir`, which the
	 * core has checked to be a directory of the daemon's user that nobody else may write. A
	 * caller without one is refused (EACCES). Backends that act as the caller anyway (nfs,
	 * file) ignore it. */
	bool per_user;
	const char *credentials_dir;
	/* identity=per-user (ABI minor 5): a caller's own credentials file, at this path below
	 * their home directory (relative, no ".."), owned by them and private; read without
	 * following a symlink when credentials_dir has no file of theirs. Either may be NULL, not
	 * both. */
	const char *user_credentials;
	/* sec=krb5 (ABI minor 6): each caller acts on the server as themself with their own
	 * Kerberos tickets, from their ticket cache at `krb5_ccache` (a path with %U for the uid
	 * and %u for the user name; NULL: /tmp/krb5cc_%U). per_user is set too; the credentials
	 * keys above are not. A backend without Kerberos refuses it. */
	bool krb5;
	const char *krb5_ccache;
	/* write-behind= (ABI minor 7): MiB of data per open file a backend may have written but
	 * not yet acknowledged by the server; 0: none (every write() waits for the server); -1:
	 * not given, the backend's default. Backends without a server (file) ignore it. */
	int write_behind;
	/* read-ahead= (ABI minor 9): MiB per open file a backend may read ahead of a sequential
	 * reader; 0: none; -1: not given, the backend's default. */
	int read_ahead;
};

#define FF_KRB5_CCACHE "/tmp/krb5cc_%U" /* where a user's tickets are unless krb5-ccache= says */
#define FF_WRITE_BEHIND_DEFAULT 8	/* MiB per open file, unless write-behind= says */
#define FF_WRITE_BEHIND_MAX 1024	/* MiB: the most write-behind= may give */
#define FF_READ_AHEAD_DEFAULT 4		/* MiB per open file, unless read-ahead= says */
#define FF_READ_AHEAD_MAX 64		/* MiB: the most read-ahead= may give */

/* The caller of an operation, from the FUSE request. */
struct ff_cred {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	mode_t umask;
	const gid_t *groups; /* supplementary groups (cached by the core), may be NULL */
	int ngroups;
};

/* Properties of a backend that change how the core treats it. What a backend cannot do is said
 * one way only: it leaves the operation out, and the core answers with the default written
 * beside the operation in fedfuse/gateway.h (an operation it has may still refuse a case, as
 * mknod() of a fifo where there are none: EPERM). */
enum ff_caps {
	FF_CAP_LOCAL = 1u << 4,	       /* data is on this machine: long kernel cache timeouts are
				      * safe together with change notification */
	FF_CAP_PATH_NODES = 1u << 5,   /* nodes name objects by path: the core provides relink(),
				      * silly-renames unlinked open files, re-checks on open */
	FF_CAP_NOTIFY = 1u << 6,       /* the backend reports external changes (notify callbacks) */
	FF_CAP_POSIX_OWNERS = 1u << 7, /* st_uid/st_gid are real; chown works */
	/* The system.posix_acl_access/_default xattrs are the objects' POSIX ACLs, kept in sync
	 * with the mode by the backend; create-style ops get the mode as the caller asked and
	 * apply cred->umask themselves, except where the new object inherits its parent's
	 * default ACL (as a local filesystem does). */
	FF_CAP_ACL = 1u << 8,
};

/* What setattr() changes: the fields of `attr` it names. */
enum ff_set {
	FF_SET_MODE = 1u << 0,
	FF_SET_UID = 1u << 1,
	FF_SET_GID = 1u << 2,
	FF_SET_SIZE = 1u << 3,
	FF_SET_ATIME = 1u << 4,	    /* to attr->st_atim */
	FF_SET_MTIME = 1u << 5,	    /* to attr->st_mtim */
	FF_SET_ATIME_NOW = 1u << 6, /* to the current time */
	FF_SET_MTIME_NOW = 1u << 7,
	FF_SET_CTIME = 1u << 8, /* the change time alone: nothing else to change */
};

/* What fill() answers (or -errno to stop the listing). */
enum ff_fill_result {
	FF_FILL_TAKEN = 0, /* the entry is taken: go on */
	FF_FILL_FULL = 1,  /* not taken, the buffer is full: the next readdir() starts with it */
	FF_FILL_WANT_NODE = 2, /* a by-name entry not taken: give it again, with a node */
};

/* readdir() output. `st` has at least st_ino and the S_IFMT bits of st_mode; in plus mode it is
 * complete and `node` is a new node reference for the entry — or, when the entry could not be
 * looked up (no search permission, say), `node` is NULL and `st` minimal: the core then looks the
 * name up itself when the kernel asks for it. The callee takes ownership of `node` whatever it
 * returns (enum ff_fill_result, or -errno to stop). `next` is the offset that resumes the
 * listing after this entry.
 *
 * `by_name` (plus mode, `node` NULL): `st` is complete, but no node was made, because making one
 * costs the backend more than it costs the core to find the object among its inodes. For an
 * entry that is neither a directory nor a symlink (a junction is one of those), the core takes
 * it when it has an inode for (st_dev, st_ino); otherwise fill() answers FF_FILL_WANT_NODE.
 * Only for a backend whose (st_dev, st_ino) cannot name another object while the core holds a
 * node for it. */
typedef int (*ff_fill_fn)(void *buf, const char *name, const struct stat *st, off_t next,
			  ff_node *node, bool by_name);

/* Ways the core is told of changes it did not make (FF_CAP_NOTIFY). A backend calls these
 * from a thread of its own, never from inside an operation, for changes made by anything but
 * the daemon itself: what the daemon did came through the mount, and the kernel knows it
 * already. The identities are those lookup() reports (st_dev, st_ino); ones the core does not
 * hold cost one table search. Callbacks may come until unmount() returns. */
struct ff_notify {
	void *data;
	/* Something about the object with this identity changed (attributes or data). */
	void (*inval_inode)(void *data, dev_t dev, ino_t ino);
	/* The entry `name` in the directory with this identity was added, removed or renamed, or
	 * the object it names changed what it is (a directory became a junction, say). */
	void (*inval_entry)(void *data, dev_t dev, ino_t dir_ino, const char *name);
};

/* What the core offers every backend, whatever the location: given to attach() once, when the
 * module is loaded; valid as long as it is loaded. */
struct ff_host {
	/* True when the caller of the operation this thread runs was interrupted by a signal
	 * (Ctrl-C): a backend that waits for its server may stop waiting and return -EINTR,
	 * discarding the server's late answer, instead of waiting out its timeout; the caller
	 * then gets EINTR at once and the worker is free. Cheap enough to ask at every wake of a
	 * wait loop; a backend that asks wakes every 100 ms at least. */
	bool (*interrupted)(void);
	/* For a backend whose library waits in a loop of its own, which nothing but a dead
	 * connection ends (libsmbclient): while set, fn(arg) runs once, on another thread, when
	 * the caller of the operation this thread runs is interrupted (at once, if it was
	 * already). fn must be quick and must not block (shutdown(2) of the connection's socket).
	 * One per thread; set it again with fn NULL to clear it: once that returns, fn is not
	 * running and will not run. Outside an operation of a caller it does nothing. */
	void (*interrupt_hook)(void (*fn)(void *arg), void *arg);
};

struct ff_backend_ops {
	/* ---- locations ---------------------------------------------------------------------- */

	/* Validate a location at namespace load time, without any I/O. On error return -EINVAL and
	 * set *msg to a g_malloc'd sentence naming the value at fault (the core adds FILE:LINE). */
	int (*check)(const struct ff_location_spec *spec, char **msg);

	/* Connect to a location. May block up to spec->timeout. On success *loc is the context
	 * passed to every other op. On failure returns -errno and may set *msg to a g_malloc'd
	 * description for the log (never containing a password). `notify` is NULL unless the backend
	 * has FF_CAP_NOTIFY and the core wants notifications. */
	int (*mount)(const struct ff_location_spec *spec, const struct ff_notify *notify,
		     void **loc, char **msg);
	/* Disconnect. Called once, after every node and handle has been released. */
	void (*unmount)(void *loc);

	/* ---- nodes -------------------------------------------------------------------------- */

	/* The location's root directory: a new node reference and its attributes. */
	int (*root)(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st);
	/* Look up `name` in the directory `parent` (the kernel walks through directories only:
	 * what a lookup in anything else answers is the backend's), without following a symlink
	 * named `name`. On success returns a new node reference and full attributes; st_dev/st_ino
	 * identify the
	 * object within the location (the core keys its inode table on them). */
	int (*lookup)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node **node, struct stat *st);
	/* Drop a node reference. Must not block on the network. */
	void (*forget)(void *loc, ff_node *node);
	/* FF_CAP_PATH_NODES only: `fresh` (from a newer lookup) names the same object as `keep`.
	 * Make `keep` reach the object the way `fresh` does; the core then forgets `fresh`. */
	void (*relink)(void *loc, ff_node *keep, ff_node *fresh);

	/* Attributes. `fh` is an open handle of this node or NULL. */
	int (*getattr)(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		       struct stat *st);
	/* Change the attributes selected by `to_set` (enum ff_set) to the values in `attr`; then
	 * fill `st`. */
	int (*setattr)(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		       const struct stat *attr, unsigned int to_set, struct stat *st);

	/* Read a symlink's target into buf (not NUL-terminated). Returns its length, or -errno.
	 * A target longer than `size` is -ENAMETOOLONG. */
	ssize_t (*readlink)(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			    size_t size);

	/* Create-style ops: on success return a new node reference and full attributes of the new
	 * object, owned by cred->uid/gid where the backend has POSIX owners. Modes have the
	 * caller's umask already applied by the core, except for FF_CAP_ACL backends (above). */
	int (*mknod)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, dev_t rdev, ff_node **node, struct stat *st);
	int (*mkdir)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, ff_node **node, struct stat *st);
	int (*symlink)(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
		       const char *name, ff_node **node, struct stat *st);
	/* A new name for `node`; fills the attributes after the link (st_nlink grown). */
	int (*link)(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
		    const char *newname, struct stat *st);

	int (*unlink)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
	int (*rmdir)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
	/* `flags` is 0, RENAME_NOREPLACE or RENAME_EXCHANGE; -EINVAL for ones the backend lacks. */
	int (*rename)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node *newparent, const char *newname, unsigned int flags);

	/* ---- files -------------------------------------------------------------------------- */

	/* Open the regular file `node` (the kernel opens directories with opendir() and special
	 * files itself) with open(2) flags (O_CREAT/O_EXCL/O_NOCTTY already removed; O_TRUNC,
	 * O_APPEND, O_SYNC, O_DIRECT kept). *fh is the backend's handle. O_DIRECT is the core's
	 * to serve (the mount keeps no page cache for the file): a backend need not pass it on,
	 * and one that reads and writes the core's buffers directly must not, since they are not
	 * aligned as direct I/O may demand. */
	int (*open)(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh);
	/* Create and open `name` (flags include O_CREAT and maybe O_EXCL). */
	int (*create)(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh);
	/* Returns bytes read (short only at end of file), or -errno. */
	ssize_t (*read)(void *loc, ff_fh *fh, void *buf, size_t size, off_t off);
	/* Returns bytes written, honouring O_APPEND (off ignored): all of them, or fewer when an
	 * error struck after some were written (as write(2)), or -errno when none were.
	 * Data-changing calls (write, fallocate, copy_file_range) act as `cred`, the writer (not
	 * the opener): a writer without CAP_FSETID clears the file's setuid and setgid bits the way
	 * the kernel does for a direct write (setgid also when the writer is not in the file's
	 * group, Linux >= 6.2), and a root writer keeps them. */
	ssize_t (*write)(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf,
			 size_t size, off_t off);
	/* Optional: a kernel file descriptor for this handle, so the core can splice data between
	 * it and /dev/fuse without copies. Returns -1 when there is none. Must not block. */
	int (*handle_fd)(void *loc, ff_fh *fh);
	/* close(2) of one descriptor of this handle: report deferred write errors. */
	int (*flush)(void *loc, ff_fh *fh);
	int (*fsync)(void *loc, ff_fh *fh, int datasync);
	/* Last close: free the handle. Errors are logged by the core, never returned to a user. */
	int (*release)(void *loc, ff_fh *fh);
	int (*fallocate)(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
			 off_t len);
	/* SEEK_DATA / SEEK_HOLE (and SEEK_SET/CUR/END). Returns the new offset or -errno. */
	off_t (*lseek)(void *loc, ff_fh *fh, off_t off, int whence);
	/* Returns bytes copied, or -errno (-EXDEV/-EOPNOTSUPP make the kernel fall back). */
	ssize_t (*copy_file_range)(void *loc, const struct ff_cred *cred, ff_fh *fh_in,
				   off_t off_in, ff_fh *fh_out, off_t off_out, size_t len,
				   int flags);

	/* Optional, for locks: a new open file description of the regular file `node` (a kernel
	 * descriptor, readable and writable where it can be), on which the core takes open file
	 * description locks and flock()s, so that they also exclude the programs that lock the
	 * object directly. Returns the descriptor or -errno. Without it the core keeps the locks
	 * of the location's files for the processes of this machine alone. Must not block: the
	 * core calls it holding its lock table's mutex. */
	int (*lock_fd)(void *loc, ff_node *node);

	/* ---- directories -------------------------------------------------------------------- */

	/* Open the directory `node` for listing. */
	int (*opendir)(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh);
	/* List entries from offset `off` (0 = start; otherwise a `next` given to fill earlier),
	 * calling fill() for each, "." and ".." excluded, until it returns 1 or the end. In plus
	 * mode each entry carries full attributes and a node reference. Returns 0 or -errno. */
	int (*readdir)(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		       bool plus, ff_fill_fn fill, void *buf);
	int (*releasedir)(void *loc, ff_dh *dh);
	int (*fsyncdir)(void *loc, ff_dh *dh, int datasync);

	/* ---- whole location ------------------------------------------------------------------ */

	int (*statfs)(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st);

	/* ---- extended attributes -------------------------------------------------------------- */

	int (*setxattr)(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			const void *value, size_t size, int flags);
	/* size 0 asks for the length. Returns the length, or -errno (-ENODATA when absent,
	 * -ERANGE when buf is too small). listxattr is the same with NUL-separated names. */
	ssize_t (*getxattr)(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			    void *buf, size_t size);
	ssize_t (*listxattr)(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			     size_t size);
	int (*removexattr)(void *loc, const struct ff_cred *cred, ff_node *node, const char *name);

	/* ---- change notification ---------------------------------------------------------------- */

	/* FF_CAP_NOTIFY: true when mount() was given a notify and every change by others to the
	 * location will be reported through it (a backend may find it cannot watch a location).
	 * The core then lets the kernel cache the location's entries, attributes and listings
	 * for long. */
	bool (*watched)(void *loc);

	/* ---- the module (ABI minor 1) -------------------------------------------------------- */

	/* Optional. Called once, when the module is loaded, before any other operation. */
	void (*attach)(const struct ff_host *host);

	/* ---- locations, again (ABI minor 3) ---------------------------------------------------- */

	/* The TCP port the location's server answers on: the URI's port, or the one its options
	 * name, or the scheme's default; 0 when the location has no server (the default when
	 * left out). Without I/O. On a malformed location -EINVAL with *msg as for check(). */
	int (*server_port)(const struct ff_location_spec *spec, char **msg);

	/* ---- locks kept by the server (ABI minor 5) ------------------------------------------- */

	/* Optional: a byte-range lock kept by the location's server, so that it excludes other
	 * machines' programs too. `how` (enum ff_lock_how) says what:
	 *  - FF_LOCK_PROBE (fh, fl NULL): 0 when this location's locks go to its server,
	 *    -EOPNOTSUPP when they cannot (the core then keeps them for this machine alone);
	 *  - FF_LOCK_SET: fl->l_type F_RDLCK or F_WRLCK takes [l_start, l_start + l_len) (l_len 0:
	 *    to the end, however far the file grows), F_UNLCK releases it, POSIX-style (ranges of
	 *    one owner merge and split). Never waits: -EAGAIN when another owner holds a
	 *    conflicting lock;
	 *  - FF_LOCK_TEST (F_GETLK): *fl becomes a lock of another owner that conflicts (l_pid 0:
	 *    another machine's), or l_type F_UNLCK.
	 * FF_LOCK_FLOCK may be or'ed in: `owner` is an open file's flock(), a whole-file lock
	 * (the server has no other kind, so it conflicts with record locks there, as on the
	 * kernel's NFS client). `owner` is the core's lock owner, `fh` the open file the request
	 * came through, whose access mode allows the lock's type. The core asks its own table
	 * first (this machine's processes), calls this for one file at a time, releases an owner's
	 * ranges when its process closes the file; release() of a handle drops whatever its
	 * owners still hold. Blocks at most spec->timeout. */
	int (*server_lock)(void *loc, ff_fh *fh, uint64_t owner, unsigned int how,
			   struct flock *fl);

	/* ---- write-behind (ABI minor 7) ------------------------------------------------------ */

	/* Bytes of data written through the location that the backend still holds because the
	 * server has not yet acknowledged them, or not yet put them on stable storage (0 for a
	 * backend without write-behind). Cheap: the metrics ask it for every location. */
	uint64_t (*write_behind_bytes)(void *loc);

	/* ---- read-ahead (ABI minor 8) -------------------------------------------------------- */

	/* Optional: a read answered from data the backend holds already (read ahead of the
	 * kernel's requests), without copying it. *data points at the bytes (fewer than `size`
	 * only at the end of the file) and stays valid until read_done(loc, fh, *ref), which the
	 * core calls once the reply is sent. Returns their number, or -EAGAIN when the backend
	 * holds nothing for this request: the core calls read() then. May wait for data being
	 * read already. Once the kernel has the reply, the file may be closed: release() of `fh`
	 * may run before read_done() (a backend whose held data belongs to the handle makes its
	 * release wait for it). */
	ssize_t (*read_held)(void *loc, ff_fh *fh, size_t size, off_t off, const void **data,
			     void **ref);
	void (*read_done)(void *loc, ff_fh *fh, void *ref);
};

enum ff_lock_how {
	FF_LOCK_PROBE = 0,
	FF_LOCK_SET = 1,
	FF_LOCK_TEST = 2,
	FF_LOCK_FLOCK = 1u << 4,
};

/* Errors that mean "the location cannot be reached", not "this request failed": the core marks
 * a location down on them (and fails over to a replica), and a backend drops the connection
 * that gave one. One list, for both. */
static inline bool ff_errno_is_connection(int err)
{
	switch (err < 0 ? -err : err) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ENOTCONN:
	case EPIPE:
		return true;
	default:
		return false;
	}
}

/* The one symbol a backend module exports. */
struct ff_backend {
	unsigned int abi_major; /* FF_BACKEND_ABI_MAJOR */
	unsigned int abi_minor; /* FF_BACKEND_ABI_MINOR */
	const char *scheme;	/* "file", "nfs", "smb" */
	const char *description;
	unsigned int caps; /* enum ff_caps */
	const struct ff_backend_ops *ops;
};

#endif /* FEDFUSE_BACKEND_H */
