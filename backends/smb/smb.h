/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb.h - internals shared by the files of the SMB backend: the per-location state, the pool of
 * libsmbclient contexts (smb_pool.c), the errno helpers (smb_errno.c), and what the operations
 * (smb_node.c, smb_file.c, smb_dir.c, smb_xattr.c) share with each other and with the ops table.
 * Nothing here is seen by the core; the backend exports only its descriptor (smb.c).
 */
#ifndef FEDFUSE_SMB_H
#define FEDFUSE_SMB_H

#include <glib.h>
#include <libsmbclient.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backends/backend.h"
#include "backends/pathtree/pathtree.h"

#define SMB_PORT 445		  /* SMB over TCP, tried first */
#define SMB_NETBIOS_PORT 139	  /* SMB over NetBIOS, tried when SMB_PORT refuses */
#define SMB_DEFAULT_CONNECTIONS 8 /* contexts per location unless ?connections=N */
#define SMB_MAX_CONNECTIONS 64
#define SMB_AUTH_HOLDOFF_US (60 * G_USEC_PER_SEC) /* no new logon for this long after one failed */
#define SMB_KRB5_HOLDOFF_US (2 * G_USEC_PER_SEC)  /* the same with a user's Kerberos ticket */
#define SMB_CRED_MAX 4096			  /* a credentials file is a few lines */
#define SMB_WRITERS 4 /* threads per location writing files' queued data (write-behind) */
#define SMB_WB_WRITE_MAX (8u << 20)   /* queued writes joined into one up to this size */
#define SMB_WB_TOTAL_MAX (512u << 20) /* queued by all files of the daemon: then writes wait */
#define SMB_NAME_MAX 255 /* and libsmbclient's fstring buffers for user/password/domain */

struct smb_pool;
struct smb_watch;

/* Whom contexts log on as: a user of the server, or its guest account. */
struct smb_ident {
	char *user;	/* "" (anonymous, i.e. guest) when no credentials */
	char *domain;	/* NULL: the library's default workgroup */
	char *password; /* wiped with explicit_bzero when freed; "" for guest */
	size_t password_len;
	bool guest;
	/* sec=krb5: logons take the tickets of krb5_uid from its cache (smb_krb5.c) */
	bool krb5;
	uid_t krb5_uid;
	char *krb5_ccache;
};

/*
 * One libsmbclient context: one TCP connection (plus an IPC$ one for security descriptors).
 * A context is not thread safe, so exactly one thread uses it at a time: the one that checked
 * it out of the pool (busy). Files opened on it belong to it (nfiles counts them); their
 * operations check out this very context, which serializes them per context and so per handle.
 */
struct smb_conn {
	SMBCCTX *ctx;
	struct smb_pool *pool;
	bool busy;	     /* checked out; pool lock */
	bool broken;	     /* its connection is gone: not handed out again; pool lock */
	unsigned int nfiles; /* open files on it; pool lock */
	GArray *socks;	     /* its sockets (smb_sock.c); set before it is first checked out */
	gint interrupted;    /* its sockets were shut down: retire it */
};

/*
 * The contexts of one location. Lock order: pool->lock is a leaf (never held across
 * libsmbclient calls or while taking another lock).
 */
struct smb_pool {
	GMutex lock;
	GCond cond;	       /* a context became idle or a slot free */
	GPtrArray *live;       /* struct smb_conn *, usable (busy or idle); broken ones leave it */
	unsigned int creating; /* slots reserved by threads creating a context */
	unsigned int max;
	const struct smb_ident *id; /* whom its contexts log on as */
	gint64 auth_holdoff_until;  /* monotonic µs; new contexts fail -EACCES before it */
	bool auth_logged;	    /* the failure was logged; quiet until a logon works */
	GAsyncQueue *reap;	    /* contexts to free, by the reaper thread */
	unsigned int reaping;	    /* contexts queued or being freed; pool lock */
	GThread *reaper;
	struct smb_loc *loc;
};

/* One mounted location. */
struct smb_loc {
	char *host;
	int port; /* 0: libsmbclient's default (SMB_PORT, then SMB_NETBIOS_PORT) */
	char *share;
	char *url;     /* "smb://host[:port]/share[/sub...]", percent-encoded, no trailing '/' */
	char *display; /* "//host[:port]/share[/sub]" for messages */
	struct smb_ident id; /* the location's one identity; unused when per_user */
	/* identity=per-user: each caller's operations run on a pool of their own, logged on
	 * with their credentials file from cred_dir, else user_cred below their home directory
	 * (smb_users.c). Either may be NULL. */
	bool per_user;
	char *cred_dir;
	char *user_cred;
	bool krb5;		  /* sec=krb5: per_user, each caller with their Kerberos tickets */
	char *krb5_ccache;	  /* where a user's tickets are: %U, %u and %% to expand */
	unsigned int connections; /* contexts per pool */
	GMutex users_lock;	  /* a leaf */
	GHashTable *users;	  /* uid -> struct smb_user * */
	int timeout_ms;
	uid_t uid;
	gid_t gid;
	mode_t file_mode;
	mode_t dir_mode;
	dev_t dev;
	bool dfs; /* the share is a DFS root (statvfs says so at mount) */
	struct ff_pathtree *tree;
	struct smb_pool pool;
	/* Lock order: gate, then a pool's context (checked out), then wlock, then the path tree's
	 * lock; pool->lock is a leaf. */
	GRWLock gate;		 /* handle operations read; moving open handles (rename) writes */
	GMutex wlock;		 /* guards open, and the write-behind state of files and nodes */
	GHashTable *open;	 /* struct ff_pathnode * -> struct smb_open_node * (smb_file.c) */
	GCond wb_done;		 /* (with wlock) a file's write-behind write ended */
	GThreadPool *writers;	 /* write-behind: threads that write files' queued data */
	GThreadPool *readers;	 /* read-ahead: threads that read blocks of files ahead */
	uint64_t wb_window;	 /* bytes per file written behind (write-behind=) */
	bool read_ahead;	 /* read-ahead= is not 0 */
	uint64_t wb_queued;	 /* bytes queued by all its files (atomic; changed under wlock) */
	struct smb_watch *watch; /* changes by others (smb_watch.c), or NULL */
	GMutex names_lock;	 /* a leaf lock, for names */
	GHashTable *names; /* directory URL -> its exact names, recently listed (smb_case.c) */
	guint names_total; /* names in them together */
};

/*
 * An open file. It lives on the context that opened it (see struct smb_conn). `file` is NULL
 * after smb_flush() closed a written SMB handle (see there); the next operation on the handle
 * opens the file again on the same context, which keeps it counted (nfiles) until release.
 * `file` and `dirty` change only with the context checked out, or with the gate held for
 * writing (smb_rename_open()); smb_flush() reads `dirty` without it (atomic).
 */
struct smb_file {
	struct smb_pool *pool;	  /* the opener's: its contexts are the handle's */
	struct smb_conn *conn;	  /* NULL: to be bound to a live context (smb_fh_begin()) */
	SMBCFILE *file;		  /* NULL: to be opened again by path (smb_fh_begin()) */
	int flags;		  /* as the caller opened it */
	struct ff_pathnode *node; /* reference */
	bool no_fstat;		  /* a write-only SMB handle may not read its attributes */
	bool dirty;		  /* written through this SMB handle: its close moves mtime */
	bool rebound;		  /* its context died: check the file's identity when reopening */
	bool stale;		  /* reopened after that, it was another file: ESTALE for good */
	gint64 t0;		  /* start of the running operation (its context is held) */
	/* Write-behind (smb_file.c), under loc->wlock: */
	GQueue wb;	    /* struct smb_wbuf: data to write, in order */
	uint64_t wb_queued; /* its bytes, with those being written */
	bool wb_busy;	    /* a writer thread has the file */
	int wb_err;	    /* the first write error: every later write and flush fails */
	struct smb_ra *ra;  /* read-ahead (smb_readahead.c); NULL for a write-only handle */
};

/* Arguments of the path operations run through smb_run() (setattr, namespace, statfs). */
struct smb_path_arg {
	const char *url;
	const char *url2;
	const char *dir2_url; /* rename: url2's directory, and its name there */
	const char *name2;
	off_t size;
	mode_t mode;
	struct timeval tv[2];
	struct stat *st;
	struct statvfs *sv;
	unsigned int flags;
};

/* A node is a path node (backends/pathtree). */
static inline struct ff_pathnode *smb_pn(ff_node *node)
{
	return (struct ff_pathnode *)node;
}

/* An operation run by smb_run() on a checked-out context: 0 or -errno. */
typedef int (*smb_op_fn)(struct smb_loc *loc, struct smb_conn *conn, void *arg);

/* ---- smb_case.c ------------------------------------------------------------------------------ */

void smb_names_init(struct smb_loc *loc);
void smb_names_clear(struct smb_loc *loc);
/* Remember the exact names `set` (a set of g_malloc'd strings, taken over) of a directory just
 * listed. */
void smb_names_note(struct smb_loc *loc, const char *dir_url, GHashTable *set);
/* Is `name` in the directory at `dir_url`, spelled exactly? 1 or 0, or -errno; lists the
 * directory on `ctx` (checked out) unless a listing is recent. */
int smb_name_exact(struct smb_loc *loc, SMBCCTX *ctx, const char *dir_url, const char *name);
/* The same for a directory node, on a context of the pool. */
int smb_name_exact_in(struct smb_loc *loc, const struct ff_cred *cred, struct ff_pathnode *dir,
		      const char *name);
/* The mount made (`present`) or removed `name` in directory `dir`: so says its listing too. */
void smb_names_update(struct smb_loc *loc, struct ff_pathnode *dir, const char *name, bool present);

/* ---- smb_cred.c ------------------------------------------------------------------------------ */

/* Parse a credentials file's text (`len` bytes in `buf`, which has room for one byte more and
 * is written to) into id->user, id->domain and id->password; messages name `path` and a line,
 * never the text. 0 or -EINVAL with *msg set. */
int smb_parse_credentials(char *buf, size_t len, const char *path, struct smb_ident *id,
			  char **msg);
/* Read and parse the credentials file `path` (relative to `dirfd`, or AT_FDCWD): a regular file
 * of `owner` that neither group nor others may access, opened without following a symlink.
 * -ENOENT when there is none. */
int smb_read_credentials(int dirfd, const char *path, uid_t owner, struct smb_ident *id,
			 char **msg);
/* Open `path` (relative to `dirfd`, or AT_FDCWD) for reading as a private file of `owner`: a
 * regular file of theirs that neither group nor others may access, not a symlink. An fd, or
 * -errno with *msg set, naming it as `what` ("credentials file"). */
int smb_open_private(int dirfd, const char *path, uid_t owner, const char *what, char **msg);
/* Free an identity's strings, the password wiped first. */
void smb_ident_clear(struct smb_ident *id);

/* ---- smb_krb5.c ------------------------------------------------------------------------------ */

/* Once, before the first context: KRB5CCNAME names no cache. */
void smb_krb5_global_init(void);
/* May `host` be reached with Kerberos (a name, not an address nor localhost)? */
bool smb_krb5_host_ok(const char *host);
/* A sec=krb5 location opens (makes the daemon's private ticket file's directory the first
 * time) or closes. */
int smb_krb5_open(char **msg);
void smb_krb5_close(void);
/* uid's identity on a sec=krb5 location: their cache, checked to be theirs and private.
 * 0, or -EACCES (or -errno) with *msg set. */
int smb_krb5_user(struct smb_loc *loc, uid_t uid, struct smb_ident *id, char **msg);
/* Open a logon window for `id` (its tickets where libsmbclient takes them, the daemon's other
 * logons held off) and close it. begin: 0, or -EACCES with *msg set (no window then). */
int smb_krb5_begin(const struct smb_ident *id, char **msg);
void smb_krb5_end(void);
/* True when a logon for the sec=krb5 identity `id` is attempted outside its window. */
bool smb_krb5_outside(const struct smb_ident *id);

/* ---- smb.c ----------------------------------------------------------------------------------- */

/* 0 when `name` is a valid SMB name: -ENAMETOOLONG, or -EINVAL for reserved characters. */
int smb_check_name(const char *name);
/* The URL of `node` (plus "/child"); NULL when unlinked or child is no valid SMB name. */
char *smb_url(struct smb_loc *loc, struct ff_pathnode *node, const char *child);
/* True when libsmbclient's raw stat shows the DOS read-only attribute. */
bool smb_raw_readonly(const struct stat *st);
/* Raw libsmbclient attributes -> what we show (owners, modes, st_dev, st_blksize). */
void smb_fix_stat(struct smb_loc *loc, struct stat *st);
/* Raw libsmbclient stat on a context: 0 or -errno. */
int smb_stat_raw(SMBCCTX *ctx, const char *url, struct stat *st);
/* Open (or create) a file on a context; `regain` lifts the DOS read-only attribute for it. */
SMBCFILE *smb_open_raw(SMBCCTX *ctx, const char *url, int flags, mode_t mode, bool regain, int *rc);
/* What a failed operation really meant: a timeout, a dead connection (DFS), or rc itself. */
int smb_classify(struct smb_loc *loc, struct smb_conn *conn, int rc, gint64 t0);
/* Run fn on a context of `pool`, once more on a fresh one when the connection was dead. */
int smb_run_in(struct smb_pool *pool, bool for_open, smb_op_fn fn, void *arg);
/* The same on the pool of the caller (smb_pool_of()). */
int smb_run(struct smb_loc *loc, const struct ff_cred *cred, bool for_open, smb_op_fn fn,
	    void *arg);

/* ---- smb_users.c ----------------------------------------------------------------------------- */

/* The pool a caller's operations run on: the location's, or with identity=per-user the caller's
 * own, made at their first operation and logged on with their credentials file. -EACCES for a
 * caller who has none (never another identity). */
int smb_pool_of(struct smb_loc *loc, const struct ff_cred *cred, struct smb_pool **pool);
void smb_users_init(struct smb_loc *loc);
/* Frees every user's pool (joins their reapers). */
void smb_users_free(struct smb_loc *loc);

/* ---- smb_node.c ------------------------------------------------------------------------------ */

/* The location's root directory. */
int smb_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st);
/* `name` in `parent`: its node and attributes. */
int smb_lookup(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node **node, struct stat *st);
/* Drop the core's reference to a node. */
void smb_forget(void *loc, ff_node *node);
/* The core keeps `keep` for what `fresh` names. */
void smb_relink(void *loc, ff_node *keep, ff_node *fresh);
/* The server's file id (st_ino) of what `node` names, as last seen; 0 when never seen. */
void smb_node_seen(struct smb_loc *loc, struct ff_pathnode *node, const struct stat *st);
ino_t smb_node_ino(struct smb_loc *loc, struct ff_pathnode *node);
/* How a node keeps its file id (smb_node.c): in priv itself where a pointer holds an ino_t. */
#define SMB_INO_IN_PRIV (GLIB_SIZEOF_VOID_P >= 8)
#if SMB_INO_IN_PRIV
#define SMB_NODE_PRIV_FREE NULL
#else
#define SMB_NODE_PRIV_FREE g_free
#endif
/* Attributes through an open handle (its context checked out), by path when it cannot. */
int smb_fh_stat(struct smb_loc *loc, struct smb_file *fh, struct stat *st);
/* Attributes of a node, through `fh` when given. */
int smb_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh, struct stat *st);
/* Size, the DOS read-only attribute (from the write bits) and times; owners are ignored. */
int smb_setattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		const struct stat *attr, unsigned int to_set, struct stat *st);
/* smb_op_fn: set the DOS attributes of a->url from a->mode (libsmbclient's chmod). */
int smb_chmod_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg);
/* smb_op_fn: set the times of a->url to a->tv. */
int smb_utimes_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg);
/* Regular files only; EPERM for the rest. */
int smb_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      dev_t rdev, ff_node **node, struct stat *st);
/* mkdir(2); the mode is not stored. */
int smb_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      ff_node **node, struct stat *st);
/* unlink(2): files only (EISDIR for a directory). */
int smb_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
/* rmdir(2). */
int smb_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
/* smb_op_fn: rename a->url to a->url2 with POSIX answers (a->flags: RENAME_NOREPLACE). */
int smb_rename_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg);
/* rename(2); RENAME_NOREPLACE only. */
int smb_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node *newparent, const char *newname, unsigned int flags);

/* ---- smb_file.c ------------------------------------------------------------------------------ */

/* Frees a struct smb_open_node (the value destructor of loc->open). */
void smb_open_node_free(gpointer p);
/* Begin a handle's operation: inside the gate, its context checked out (see smb_file.c). */
int smb_fh_begin(struct smb_loc *loc, struct smb_file *fh, bool need_file);
/* End it: the context checked in, the gate left; a lost connection is EIO. */
int smb_fh_end(struct smb_loc *loc, struct smb_file *fh, int rc);
/* The same for an operation that can simply run again (a read, a write at an offset): *again
 * says that its connection died under it; the next smb_fh_begin() rebinds the handle. */
int smb_fh_end_again(struct smb_loc *loc, struct smb_file *fh, int rc, bool *again);
/* Times were set on `node`: remember them while it has writers. */
void smb_times_set(struct smb_loc *loc, struct ff_pathnode *node, const struct timeval tv[2]);
/* A write through `node`: forget the times set on it. */
void smb_times_written(struct smb_loc *loc, struct ff_pathnode *node);
/* A rename refused for files open at or below its source: close ours, rename, reopen them. */
int smb_rename_open(struct smb_loc *loc, const struct ff_cred *cred, struct smb_path_arg *a, int rc,
		    struct ff_pathnode *parent, const char *name, struct ff_pathnode *newparent,
		    const char *newname);
/* Open a node's file (no O_CREAT). */
int smb_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fhp);
/* Create (or open) `name` in `parent`; a mode without write bits makes it read-only. */
int smb_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fhp);
/* pread(2) through the handle's own context. */
ssize_t smb_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off);
/* pwrite(2); with O_APPEND at the file's current end. */
ssize_t smb_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf, size_t size,
		  off_t off);
/* The writer threads' task: write what a file has queued (write-behind). */
void smb_wb_run(gpointer fh, gpointer loc);
ssize_t smb_read_direct(struct smb_loc *loc, struct smb_file *fh, void *buf, size_t size,
			off_t off);
/* The data of `node` changed (a write, a truncation, another client): read-ahead drops it. */
void smb_data_changed(struct smb_loc *loc, struct ff_pathnode *node);

/* smb_readahead.c */
#define SMB_READERS 4 /* threads per location reading blocks of files ahead */
struct smb_ra *smb_ra_new(void);
/* Nothing more is read ahead; returns once its reader thread is done with the handle and no
 * reply is sent from its blocks. */
void smb_ra_close(struct smb_ra *ra);
void smb_ra_free(struct smb_ra *ra);  /* closes it first */
void smb_ra_stale(struct smb_ra *ra); /* the file's data changed */
ssize_t smb_ra_read(struct smb_loc *loc, struct smb_file *fh, void *buf, size_t size, off_t off);
ssize_t smb_read_held(void *loc, ff_fh *fh, size_t size, off_t off, const void **data, void **ref);
void smb_read_done(void *loc, ff_fh *fh, void *ref);
void smb_ra_run(gpointer fh, gpointer loc);
/* Wait until no file of `node` has data queued (reads and attributes then see it). */
void smb_wb_node_wait(struct smb_loc *loc, struct ff_pathnode *node);
/* Raise st_size to the end of the data the files of `node` have queued. */
void smb_wb_node_size(struct smb_loc *loc, struct ff_pathnode *node, struct stat *st);
/* The backend's write_behind_bytes(). */
uint64_t smb_write_behind_bytes(void *loc);
/* close(2): a handle that wrote is closed here, so that mtime settles (see smb_file.c). */
int smb_flush(void *loc, ff_fh *fh);
/* fsync(2) settles mtime as flush does; fdatasync(2) only checks the connection. */
int smb_fsync(void *loc, ff_fh *fh, int datasync);
/* The last close of a handle: the SMB handle is closed, pending times set again. */
int smb_release(void *loc, ff_fh *fh);

/* ---- smb_dir.c ------------------------------------------------------------------------------- */

/* Open a directory: its whole listing, copied; no context is held after. */
int smb_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dhp);
/* Entries from `off` (an index); offset 0 after entries were served lists it again. */
int smb_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		bool plus, ff_fill_fn fill, void *buf);
/* Free an open directory. */
int smb_releasedir(void *loc, ff_dh *dh);

/* ---- smb_xattr.c ----------------------------------------------------------------------------- */

/* Only system.nt_sec_desc.* and system.dos_attr.*, read-only and unlisted. */
ssize_t smb_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		     void *buf, size_t size);
/* Lists nothing (see smb_xattr.c). */
ssize_t smb_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf, size_t size);
/* EPERM for the known families, EOPNOTSUPP for any other name. */
int smb_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		 const void *value, size_t size, int flags);
/* As smb_setxattr(). */
int smb_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name);

/* ---- smb_sock.c ------------------------------------------------------------------------------ */

struct sockaddr_storage;
struct smb_connecting;

/* The module's attach(): the core's interrupt hook (struct ff_host). */
void smb_attach(const struct ff_host *host);
/* The caller of the operation this thread runs was interrupted (Ctrl-C). */
bool smb_interrupted(void);
/* Around the making of a context's connection to `peer` (the server's address, as
 * smb_probe() reached it): connections to one address are made one at a time, and
 * smb_sock_connect_end() gives `conn` (NULL: it failed) the sockets to `peer` that appeared. */
struct smb_connecting *smb_sock_connect_begin(const struct sockaddr_storage *peer);
void smb_sock_connect_end(struct smb_connecting *c, struct smb_conn *conn);
/* While `conn` is checked out by a caller's operation: an interrupt shuts its sockets down and
 * sets conn->interrupted (its call fails; smb_classify() makes that EINTR). */
void smb_sock_watch(struct smb_conn *conn, bool on);
void smb_sock_free(struct smb_conn *conn);

/* ---- smb_pool.c ------------------------------------------------------------------------------ */

int smb_pool_init(struct smb_pool *pool, struct smb_loc *loc, const struct smb_ident *id,
		  unsigned int max);
/* A TCP connection to the location's server can be made (no logon): 0 or -errno. */
int smb_pool_probe(struct smb_loc *loc);
/* Free every context (joins the reaper). All handles must have been released. */
void smb_pool_destroy(struct smb_pool *pool);
/* Check out an idle context, or a new one. for_open prefers a context without open files, so
 * that files opened one after another can later be read in parallel. Waits at most the
 * location's timeout for a context to become free, or for a new one to connect; -EINTR when
 * the caller is interrupted meanwhile. */
int smb_pool_get(struct smb_pool *pool, bool for_open, struct smb_conn **conn);
/* The same, but only a context whose connection is up already: -EIO when there is none. */
int smb_pool_get_live(struct smb_pool *pool, struct smb_conn **conn);
/* Check out the context a handle belongs to: -EIO when its connection was lost. Waits at most
 * the timeout for it, or, when patient (release must not leave a file open), until it is free:
 * whoever holds it gives it back within its own timeout. Not patient, an interrupted caller
 * stops waiting (-EINTR). */
int smb_pool_get_conn(struct smb_pool *pool, struct smb_conn *conn, bool patient);
/* Check a context back in. rc is the operation's result: a lost connection retires it. */
void smb_pool_put(struct smb_pool *pool, struct smb_conn *conn, int rc);
/* Retired contexts may still hold files open on the server (a file whose connection hung
 * is closed by the reaper): wait until they are freed, at most the timeout or until the
 * caller is interrupted. True when there were any, i.e. a sharing violation (EBUSY) may be
 * gone now. */
bool smb_pool_wait_reaped(struct smb_pool *pool);
/* Account an open file to / release it from a context (called while it is checked out). */
void smb_pool_file_opened(struct smb_pool *pool, struct smb_conn *conn);
void smb_pool_file_closed(struct smb_pool *pool, struct smb_conn *conn);

/* Held around every libsmbclient call when Samba's thread hooks are missing (smb_pool.c);
 * no-ops otherwise. smb_pool_get*() take it with the context, smb_pool_put() drops it. */
void smb_lib_lock(void);
void smb_lib_unlock(void);
/* Whether libsmbclient's process-wide setup succeeded (done once, at the first call). */
bool smb_global_ready(void);
/* True when contexts may be used in parallel (the hooks are in; smb_lib_lock() does nothing). */
bool smb_lib_parallel(void);

/* ---- smb_watch.c ----------------------------------------------------------------------------- */

/* Watch the location's directory tree for changes by others, reported through `notify`. NULL
 * when it cannot be watched here (contexts cannot be used in parallel). */
struct smb_watch *smb_watch_start(struct smb_loc *loc, const struct ff_notify *notify);
/* No callback runs once it returns. */
void smb_watch_stop(struct smb_watch *w);
/* The daemon is about to change (done: has changed) `child` in `node` (child NULL: `node`
 * itself): the server's reports of it are the daemon's own, not to be passed on. Called before
 * and after every operation that changes something; nothing when the location is not watched. */
void smb_watch_expect(struct smb_loc *loc, struct ff_pathnode *node, const char *child, bool done);

/* ---- smb_errno.c ----------------------------------------------------------------------------- */

/* The errno of a failed libsmbclient call, as -errno, normalised (see smb_errno.c). */
int smb_err(int err);
/* True for errors that mean the context's connection is gone (not a timeout). */
bool smb_err_is_disconnect(int neg_errno);

#endif /* FEDFUSE_SMB_H */
