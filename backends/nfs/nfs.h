/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs.h - internals shared by the files of the NFS backend: the per-location state, the pool of
 * libnfs contexts (one TCP connection and one mount each, never used by two threads at once),
 * the error table, the NFSv4 COMPOUNDs we build ourselves where libnfs 4.0 falls short, and what
 * the operations (nfs_node.c, nfs_file.c, nfs_dir.c) share with each other and with the ops table
 * (nfs.c).
 *
 * Lock order: nfs_loc.locks_lock, then nfs_handle.lock, then nfs_pool.lock, then the path tree's
 * lock (backends/pathtree); nfs_loc.node_lock is taken alone. (Leasing a context counts as
 * taking nfs_pool.lock: locks_lock is never taken by a holder of a lease.)
 * No lock but nfs_handle.lock and nfs_loc.locks_lock (locks are rare) is ever held across
 * network I/O.
 */
#ifndef FEDFUSE_NFS_H
#define FEDFUSE_NFS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backends/backend.h"
#include "backends/pathtree/pathtree.h"

struct nfs_context;
struct nfsfh;
struct nfsdir;
struct nfs_stat_64;
struct rpc_context;
struct statvfs;
struct timeval;

/* Exported by libnfs 4.0 but missing from its headers: sets what nfs_get_error() returns; frees
 * a struct nfsfh without I/O (what nfs_close() ends with); sets how often a dropped connection
 * is reopened (see nfs_pool.c). */
void rpc_set_error(struct rpc_context *rpc, const char *error_string, ...);
void nfs_free_nfsfh(struct nfsfh *nfsfh);
void rpc_set_autoreconnect(struct rpc_context *rpc, int num_retries);

#define NFS_DEFAULT_VERSION 3
#define NFS_PORT 2049	      /* where the server answers unless the location says otherwise */
#define NFS_CONNS_PER_CRED 4  /* contexts one credential may hold at once */
#define NFS_CONNS_PER_LOC 64  /* and all credentials of one location together */
#define NFS_IDLE_SECONDS 30   /* an idle context older than this is closed (NFSv4 leases) */
#define NFS_MAX_GROUPS 16     /* AUTH_SYS carries at most 16 supplementary groups */
#define NFS4_WRITE_CHUNK 3584 /* libnfs 4.0 cannot encode an NFSv4 WRITE of 4 KiB (see nfs_v4.c) */
#define NFS_XFER_MAX (1024 * 1024) /* libnfs 4.0 rejects RPC replies above 1 MiB + 4 KiB */

/* The caller's identity as AUTH_SYS carries it; the key of a set of pooled contexts. */
struct nfs_ident {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[NFS_MAX_GROUPS];
};

struct nfs_credset;
struct nfs4_client;
struct nfs4_file;

/* One libnfs context: one connection, one mount, one AUTH_SYS identity. */
struct nfs_conn {
	struct nfs_context *nfs;
	struct nfs_loc *loc;
	struct nfs_credset *set;
	/* Under pool.lock: */
	int refs;	   /* 1 while in the pool + 1 per open file handle bound to it */
	bool busy;	   /* leased to one thread */
	bool broken;	   /* never leased for new work again; freed when refs reaches 0 */
	bool suspect;	   /* a sync call quit its loop on nfs_service() failure (conn_free) */
	gint64 idle_since; /* monotonic µs */
	uint64_t readmax, writemax;
	/* Under pool.lock, NFSv4 only: struct ff_pathnode * -> how many file handles have that
	 * file open on this context. */
	GHashTable *opens;
	struct nfs4_client *v4client; /* NFSv4 OPEN state of our own (nfs_v4_file.c), or NULL */
};

struct nfs_pool {
	GMutex lock;
	GCond cond;	    /* a context became free, or a slot did */
	GHashTable *sets;   /* struct nfs_ident * -> struct nfs_credset * */
	unsigned int total; /* contexts alive or being created */
};

/* Everything about one mounted location. */
struct nfs_loc {
	char *uri; /* for log messages */
	char *host;
	int version; /* 3 or 4 */
	int nfsport, mountport;
	char *mount_path; /* what nfs_mount() is given */
	char *prefix;	  /* a directory below mount_path ("" for none) for every node path */
	int timeout_ms;
	bool read_only;
	dev_t root_dev;	  /* st_dev of the location's root */
	GMutex node_lock; /* ff_node.dir_st */
	struct ff_pathtree *tree;
	struct nfs_fhcache *fhc; /* directories' filehandles, or NULL (nfs_fhcache.c) */
	GByteArray *v3_root;	 /* NFSv3: the mount's root filehandle, once known (node_lock) */
	struct nfs_pool pool;
	int v4_lease_s;		      /* the server's lease time (atomic; 0: not known yet) */
	struct nfs4_renewer *renewer; /* NFSv4: keeps leases alive (nfs_v4_renew.c) */
	GMutex locks_lock;	      /* serialises server locks; guards: */
	GHashTable *locks;	      /* NFSv4: struct nfs_lockref (nfs_file.c) */
	int wb_bytes;		      /* write-behind window per file (0: none) */
	GMutex wb_lock;		      /* guards: */
	GHashTable *wb_files;	      /* struct ff_pathnode * -> GPtrArray of struct nfs_wb * */
	int64_t wb_kept;	      /* bytes kept by its files (atomic) */
	uint64_t ra_gen;	      /* truncations and closes of written files (atomic) */
	uint64_t ra_bytes;	      /* read ahead per file (read-ahead=; 0: none) */
};

/* A node reference: one reference to a path node (backends/pathtree), the object named by its path
 * below the location's root. Each reference handed to the core is an object of its own, even
 * when two name the same path node: the core tells references apart by their address (when a
 * lookup returns the very node an inode already holds, it keeps one and forgets nothing). */
/* A node is a path node (struct ff_pathnode *). Its `priv` is a directory's attributes when
 * last seen (a struct stat, under loc->node_lock): what fstat() of it shows, with st_nlink 0,
 * once it is removed. */
static inline struct ff_pathnode *nfs_pnode(ff_node *node)
{
	return (struct ff_pathnode *)node;
}

/* ---- nfs.c ----------------------------------------------------------------------------------- */

/* The path of `pn` (plus "/child") below the mount; NULL once no path reaches it. g_free it. */
char *nfs_pnode_path(struct nfs_loc *loc, struct ff_pathnode *pn, const char *child);
/* The same for a node. */
char *nfs_node_path(struct nfs_loc *loc, ff_node *node, const char *child);
/* A new node reference for the core, taking over the path node reference `pn`. */
ff_node *nfs_node_new(struct ff_pathnode *pn);
/* Remember a directory's attributes, for when it is gone (node_gone() in nfs_node.c). */
void nfs_node_seen(struct nfs_loc *loc, ff_node *node, const struct stat *st);
/* A new node reference for `name` in `parent`. */
ff_node *nfs_child_node(struct nfs_loc *loc, ff_node *parent, const char *name);
/* The path from the server's (pseudo) root, for our own NFSv4 COMPOUNDs. g_free it. */
char *nfs_v4_path(struct nfs_loc *loc, const char *path);
/* lstat of `path` (below the mount) on a leased context. */
int nfs_do_lstat(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st);

/* An operation on a path with a context of the caller. */
struct nfs_op {
	struct nfs_loc *loc;
	struct nfs_conn *conn;
	struct nfs_context *nfs;
	gint64 deadline;
};

/* Lease a context of the caller; `avoid`: see nfs_conn_get(). */
int nfs_op_begin_avoid(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred,
		       const void *avoid);
/* Lease a context of the caller. */
int nfs_op_begin(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred);
/* Lease a context and make the path of `child` of `node` (NULL: `node`); see nfs.c. */
int nfs_op_begin_at(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred,
		    ff_node *node, const char *child, char **path);
/* End the lease with the operation's result (see nfs_conn_put()); returns `rc`. */
int nfs_op_end(struct nfs_op *op, int rc);

/* ---- nfs_node.c ------------------------------------------------------------------------------ */

/* The location's root directory: its node and attributes. */
int nfs_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st);
/* `name` in `parent`: its node and attributes. */
int nfs_lookup(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node **node, struct stat *st);
/* Drop the core's reference to a node. */
void nfs_forget(void *loc, ff_node *node);
/* The core keeps `keep` for what `fresh` names. */
void nfs_relink(void *loc, ff_node *keep, ff_node *fresh);
/* Attributes of a node; through `fh` when given on NFSv3, or when an open file's name is gone. */
int nfs_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh, struct stat *st);
/* Set attributes of `path` on the operation's context; `st` gets them after. */
int nfs_setattr_path(struct nfs_op *op, const char *path, const struct stat *attr,
		     unsigned int to_set, struct stat *st);
/* Set attributes of a node, by its path. */
int nfs_setattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		const struct stat *attr, unsigned int to_set, struct stat *st);
/* A symlink's target, without NUL; -ENAMETOOLONG when it does not fit in `size`. */
ssize_t nfs_readlink_node(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			  size_t size);
/* mknod(2): regular files, fifos, sockets and device nodes. */
int nfs_mknod_node(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		   mode_t mode, dev_t rdev, ff_node **node, struct stat *st);
/* mkdir(2). */
int nfs_mkdir_node(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		   mode_t mode, ff_node **node, struct stat *st);
/* symlink(2); -ENAMETOOLONG for a target too long for libnfs to send. */
int nfs_symlink_node(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
		     const char *name, ff_node **node, struct stat *st);
/* link(2); a symlink is linked itself, not followed. */
int nfs_link_node(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
		  const char *newname, struct stat *st);
/* unlink(2): anything but a directory. */
int nfs_unlink_node(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
/* rmdir(2): directories only. */
int nfs_rmdir_node(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
/* rename(2); no flags (-EINVAL: NFS has neither RENAME_NOREPLACE nor RENAME_EXCHANGE). */
int nfs_rename_node(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		    ff_node *newparent, const char *newname, unsigned int flags);

/* ---- nfs_file.c ------------------------------------------------------------------------------ */

/* An open file: its context, libnfs handle and path node (nfs_file.c). */
struct nfs_handle;

/* Attributes of an open file, through its handle (on its own context, reopened if retired). */
int nfs_handle_getattr(struct nfs_loc *loc, struct nfs_handle *h, struct stat *st);
/* Open a node's file (no O_CREAT); once more on a fresh context when NFSv4 state was lost. */
int nfs_open_file(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fhp);
/* Create and open `name` in `parent` (exclusively first; without O_EXCL an existing file is
 * opened as it is). */
int nfs_create_file(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		    mode_t mode, int flags, ff_node **nodep, struct stat *st, ff_fh **fhp);
/* pread(2) through the handle's context: READs of the server's rsize at once, and READs ahead
 * of a sequential reader (nfs_read.c). */
ssize_t nfs_read_file(void *loc, ff_fh *fh, void *buf, size_t size, off_t off);
/* The backend's read_held() and read_done(): a read answered from what was read ahead. */
ssize_t nfs_read_held(void *loc, ff_fh *fh, size_t size, off_t off, const void **data, void **ref);
void nfs_read_done(void *loc, ff_fh *fh, void *ref);
/* pwrite(2); with O_APPEND at the file's current end; NFSv4 through nfs4_file_write(). */
ssize_t nfs_write_file(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf,
		       size_t size, off_t off);
/* close(2): COMMIT what was written, and report a write error not reported yet. */
int nfs_flush_file(void *loc, ff_fh *fh);
/* fsync(2) and fdatasync(2): COMMIT. */
int nfs_fsync_file(void *loc, ff_fh *fh, int datasync);
/* The last close of a handle: the locks it carries given back, CLOSE on its context (unless
 * retired), then free it. */
int nfs_release_file(void *loc, ff_fh *fh);
/* The backend's server_lock(): NFSv4 only (-EOPNOTSUPP on NFSv3). */
int nfs_server_lock(void *loc, ff_fh *fh, uint64_t owner, unsigned int how, struct flock *fl);
/* loc->locks' hash, equality and free. */
guint nfs_lockref_hash(gconstpointer p);
gboolean nfs_lockref_equal(gconstpointer a, gconstpointer b);
void nfs_lockref_free(gpointer p);

/* ---- nfs_dir.c ------------------------------------------------------------------------------- */

/* Open a directory: its whole listing with attributes, read in one go; no context is held. */
int nfs_opendir_node(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dhp);
/* Entries from `off` (an index); offset 0 after entries were served lists it again. */
int nfs_readdir_node(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		     bool plus, ff_fill_fn fill, void *buf);
/* Free an open directory. */
int nfs_releasedir_node(void *loc, ff_dh *dh);

/* ---- nfs_errno.c ----------------------------------------------------------------------------- */

/* The precise -errno for a failed libnfs call that returned `rc`, using the NFS3ERR_* or
 * NFS4ERR_* name libnfs put in its error string when there is one (libnfs' own mapping turns
 * e.g. NFS3ERR_DQUOT into ERANGE and every NFSv4 error through the NFSv3 table). */
int nfs_map_error(struct nfs_context *nfs, int rc);
/* -errno for an NFSv3 or NFSv4 status number. */
int nfs3_status_errno(int status);
int nfs4_status_errno(int status);
/* Does this NFSv4 status mean that the client's or an open's state is gone? */
bool nfs4_status_lost_state(int status);
/* The name of an NFSv4 status without its NFS4ERR_ prefix ("NOENT"). */
const char *nfs4_status_name(int status);
/* Does this NFSv4 error mean an open stateid is no longer good (reopen and retry)? */
bool nfs_error_lost_state(struct nfs_context *nfs);

/* ---- nfs_pool.c ------------------------------------------------------------------------------ */

void nfs_pool_init(struct nfs_loc *loc);
/* Close every context; called at unmount when no handle is left. */
void nfs_pool_destroy(struct nfs_loc *loc);
void nfs_ident_from_cred(struct nfs_ident *id, const struct ff_cred *cred);
/* Lease a context for `id`: an idle one, a new one (mounting it), or the next one freed. Fails
 * with -ETIMEDOUT at `deadline` (monotonic µs). The context's RPC timeout is set to what is
 * left until the deadline. With `avoid` (a file about to be opened over NFSv4), prefer a context
 * that does not have it open already: each context has one open-owner (nfs_v4_file.c), so a second
 * OPEN of a file there shares the first one's state, and the first CLOSE ends both (their
 * I/O then fails NFS4ERR_OLD_STATEID or NFS4ERR_BAD_STATEID). */
int nfs_conn_get(struct nfs_loc *loc, const struct nfs_ident *id, gint64 deadline,
		 const void *avoid, struct nfs_conn **conn);
/* Count a file handle with `key` open on `conn` (open), or no longer (!open). */
void nfs_conn_opened(struct nfs_conn *conn, const void *key, bool open);
/* Lease this particular context (the one a file handle belongs to). */
int nfs_conn_lease(struct nfs_conn *conn, gint64 deadline);
/* End a lease. `err` is the operation's result: an error that shows the connection broken
 * retires the context. */
void nfs_conn_put(struct nfs_conn *conn, int err);
/* A file handle's reference: taken while leased, dropped at any time. */
void nfs_conn_ref(struct nfs_conn *conn);
void nfs_conn_unref(struct nfs_conn *conn);
/* nfs_destroy_context(), and close the socket libnfs 4.0 leaks after a failed reconnection. */
void nfs_context_free(struct nfs_context *nfs);
/* Mount a fresh context outside the pool (mount-time probe); NULL with *err on failure. */
struct nfs_context *nfs_context_new(struct nfs_loc *loc, const struct nfs_ident *id,
				    gint64 deadline, int *err, char **msg);
gint64 nfs_deadline(const struct nfs_loc *loc);
/* Set the context's RPC timeout to what is left until `deadline`; -ETIMEDOUT when nothing is. */
int nfs_set_deadline(struct nfs_context *nfs, gint64 deadline);
/* When a call sent on the context now must have ended: libnfs expires each RPC after the
 * context's timeout; a second more lets it say so. */
gint64 nfs_call_deadline(struct nfs_context *nfs);
/* Run the context's event loop until *done is set, or until `deadline`. Returns 0, or an error
 * when the connection failed (then pending callbacks have been called or never will be), or
 * -EINTR when the caller was interrupted (then the call is still pending: its callback runs
 * later, or when the context is destroyed). */
int nfs_event_loop(struct nfs_context *nfs, const int *done, gint64 deadline);
/* One turn of that loop: wait at most 100 ms for the context's socket and serve it. 0, or
 * -ETIMEDOUT past `deadline`, -EINTR, -ECONNRESET as nfs_event_loop(). */
int nfs_event_step(struct nfs_context *nfs, gint64 deadline);
/* The same for a reply to an RPC of ours sent at `sent` (monotonic µs) with no libnfs timeout
 * (nfs_write.c says why): once the server has answered nothing for the location's timeout, the
 * log says so (it answered no `what`), *expired is set and it returns -ETIMEDOUT. */
int nfs_rpc_step(struct nfs_loc *loc, struct nfs_conn *conn, gint64 sent, gint64 deadline,
		 const char *what, bool *expired);
/* The module's attach(): nfs_event_loop() asks the core whether its caller was interrupted (it
 * then returns -EINTR, and the caller abandons its call as after a timeout). */
void nfs_attach(const struct ff_host *host);

/* ---- nfs_sync.c -------------------------------------------------------------------------- */

/* libnfs' calls of the same names, waited for on nfs_event_step() so that an interrupted
 * caller leaves at once (-EINTR) and the whole call ends a second after the context's timeout
 * (-ETIMEDOUT). 0 or -errno, mapped already (nfs_map_error()). A reply
 * that comes after its caller left is dropped; what it made is freed. */
int nfs_sync_statvfs(struct nfs_context *nfs, const char *path, struct statvfs *st);
int nfs_sync_open(struct nfs_context *nfs, const char *path, int flags, struct nfsfh **fh);
int nfs_sync_create(struct nfs_context *nfs, const char *path, int flags, int mode,
		    struct nfsfh **fh);
/* The whole listing (libnfs reads it all); nfs_readdir() and nfs_closedir() as usual. */
int nfs_sync_opendir(struct nfs_context *nfs, const char *path, struct nfsdir **dir);
/* *target: g_free() it. */
int nfs_sync_readlink(struct nfs_context *nfs, const char *path, char **target);
int nfs_sync_mknod(struct nfs_context *nfs, const char *path, int mode, int dev);
int nfs_sync_symlink(struct nfs_context *nfs, const char *target, const char *path);
int nfs_sync_link(struct nfs_context *nfs, const char *oldpath, const char *newpath);
/* rmdir when `dir`, else unlink */
int nfs_sync_lchmod(struct nfs_context *nfs, const char *path, int mode);
/* -1: leave as it is */
int nfs_sync_lchown(struct nfs_context *nfs, const char *path, int uid, int gid);
int nfs_sync_truncate(struct nfs_context *nfs, const char *path, uint64_t length);
/* NULL: both times to the server's clock */
int nfs_sync_lutimes(struct nfs_context *nfs, const char *path, struct timeval *times);

/* ---- nfs_write.c ------------------------------------------------------------------------- */

#define NFS_VERF_SIZE 8		      /* NFS3_WRITEVERFSIZE, NFS4_VERIFIER_SIZE */
#define NFS_WB_KEPT_MIN (8u << 20)    /* a file keeps up to 4 windows, and at least this, ... */
#define NFS_WB_TOTAL_MAX (512u << 20) /* ...and all files together this: then COMMIT */

/* A file's WRITEs not yet on the server's stable storage (write-behind). */
struct nfs_wb;
/* One of them: the private data of its RPC while in flight. */
struct nfs_wbent;

/* What to write to, and how one WRITE is sent: `send` encodes a WRITE of e's bytes from
 * `data` (copied at once) whose callback ends in nfs_wchunk_done(). */
struct nfs_wtarget {
	int (*send)(struct nfs_conn *conn, const struct nfs_wtarget *t, struct nfs_wbent *e,
		    uint64_t off, size_t len, const void *data);
	const char *fh; /* the file's filehandle */
	unsigned int fhlen;
	const void *stateid; /* NFSv4: the open's stateid4 */
	bool sync;	     /* FILE_SYNC, else UNSTABLE (COMMIT follows) */
	size_t chunk;	     /* bytes per WRITE */
};

/* What the reads of a file were made at (nfs_wb_node_gen()). */
struct nfs_gen {
	uint64_t loc;  /* loc->ra_gen */
	uint64_t node; /* writes through this mount to the file's open files */
};

/* A file opened for writing on `node`, known to the location until nfs_wb_free(). */
struct nfs_wb *nfs_wb_new(struct nfs_loc *loc, struct ff_pathnode *node);
void nfs_wb_free(struct nfs_loc *loc, struct nfs_wb *wb);
/* Copy `size` bytes for writing at `off` and send them, in WRITEs of t->chunk, on `conn`
 * (leased); their replies come whenever the context is served. With `hold`, a tail shorter
 * than a WRITE waits for the next write to join it (nfs_write.c). 0, or -ENOMEM. */
int nfs_wb_write(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t,
		 uint64_t off, size_t size, const void *buf, bool hold);
/* Send again, on `conn`, the WRITEs lost with a connection or dropped by a restarted server;
 * the file's error when one of them was lost too often. */
int nfs_wb_resend(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t);
/* Serve the contexts the file's WRITEs are in flight on until at most `limit` bytes are;
 * with `limit` 0, send the piece held first.
 * Contexts that fail are retired and their WRITEs kept for nfs_wb_resend(). 0; -EINTR or
 * -ETIMEDOUT at `deadline`; -ETIMEDOUT when the server answered nothing within the location's
 * timeout (then also the file's error). Never called while holding a lease. */
int nfs_wb_wait(struct nfs_loc *loc, struct nfs_wb *wb, uint64_t limit, gint64 deadline);
/* Before a COMMIT: the WRITEs it will cover are those answered UNSTABLE by now (how many). */
int nfs_wb_commit_begin(struct nfs_wb *wb);
/* After that COMMIT answered `verf`: the WRITEs it covers with that verifier are done; the
 * others are to be sent again (-EAGAIN; logged). `verf` NULL: it failed, they are kept. */
int nfs_wb_committed(struct nfs_loc *loc, struct nfs_wb *wb, const char verf[NFS_VERF_SIZE]);
/* The file's first write error (sticky), or 0. */
int nfs_wb_error(struct nfs_wb *wb);
/* Make `err` the file's error unless it has one. */
void nfs_wb_fail(struct nfs_wb *wb, int err);
/* Bytes kept: held, in flight, unstable or to be sent again. */
uint64_t nfs_wb_kept(struct nfs_wb *wb);
/* Bytes kept by the whole daemon; by the files of a location (the backend's
 * write_behind_bytes()). */
uint64_t nfs_wb_total_kept(void);
uint64_t nfs_write_behind_bytes(void *loc);
/* Whether bytes [off, off + size) are in a WRITE held, in flight or to be sent again: a WRITE
 * of them now could be carried out by the server before that one (it may take the WRITEs of
 * one connection in any order) and be overwritten with what was there before. */
bool nfs_wb_overlaps(struct nfs_wb *wb, uint64_t off, size_t size);
/* Anything to send again; with `unstable_too`, or to COMMIT. */
bool nfs_wb_pending(struct nfs_wb *wb, bool unstable_too);
/* A WRITE's reply: `err` 0 or its -errno (-ECONNRESET: the connection broke; -ENOTCONN: the
 * server forgot the NFSv4 open); `count` bytes written; `stable`: FILE_SYNC (`verf` unused). */
void nfs_wchunk_done(struct nfs_wbent *e, int err, size_t count, bool stable,
		     const char verf[NFS_VERF_SIZE]);
/* Wait until no file of `node` but `except` (NULL: none) has WRITEs in flight or held (reads
 * and attributes then see them); 0 or -EINTR. */
int nfs_wb_node_wait(struct nfs_loc *loc, struct ff_pathnode *node, const struct nfs_wb *except,
		     gint64 deadline);
/* Raise st_size to the end of the node's WRITEs not yet answered. */
void nfs_wb_node_size(struct nfs_loc *loc, struct ff_pathnode *node, struct stat *st);

/* The generation of what is read of `node`: it changes with every write through this mount
 * to the file, and with every truncation or close of a written file on the location. */
void nfs_wb_node_gen(struct nfs_loc *loc, struct ff_pathnode *node, struct nfs_gen *gen);
/* A file of the location changed other than by a WRITE (truncated): drop what was read. */
void nfs_ra_changed(struct nfs_loc *loc);

/* ---- nfs_read.c ----------------------------------------------------------------------------- */

/* An open file's READs in flight and those read ahead of a sequential reader. */
struct nfs_ra;
/* One READ: the private data of its RPC while in flight. */
struct nfs_raseg;

/* How one READ is sent: `send` encodes a READ of `len` bytes at `off` whose callback ends in
 * nfs_rchunk_done(). */
struct nfs_rtarget {
	int (*send)(struct nfs_conn *conn, const struct nfs_rtarget *t, struct nfs_raseg *s,
		    uint64_t off, size_t len);
	const char *fh; /* the file's filehandle */
	unsigned int fhlen;
	const void *stateid; /* NFSv4: the open's stateid4 */
	size_t chunk;	     /* bytes per READ */
};

struct nfs_ra *nfs_ra_new(void);
/* Forget every READ (those in flight are freed by their callbacks). */
void nfs_ra_drop(struct nfs_ra *ra);
void nfs_ra_free(struct nfs_ra *ra);
/* pread(2) on `conn` (leased): what was read ahead where it is still good (the file's
 * generation is `gen`), READs for the rest, and, for a sequential reader, READs of what comes
 * next. The bytes read (short at the end of the file), or -errno (-ENOTCONN: the server forgot
 * the NFSv4 open). */
ssize_t nfs_ra_read(struct nfs_loc *loc, struct nfs_ra *ra, struct nfs_conn *conn,
		    const struct nfs_rtarget *t, const struct nfs_gen *gen, void *buf, size_t size,
		    uint64_t off, gint64 deadline);
/* The same answered from one segment without a copy: *data points into it until
 * nfs_ra_done(*ref). -EAGAIN when no one segment holds the request (nfs_ra_read() then). */
ssize_t nfs_ra_held(struct nfs_loc *loc, struct nfs_ra *ra, struct nfs_conn *conn,
		    const struct nfs_rtarget *t, const struct nfs_gen *gen, size_t size,
		    uint64_t off, gint64 deadline, const void **data, void **ref);
void nfs_ra_done(void *ref);
/* A READ's reply: `err` 0 or its -errno; `count` bytes at `data`; `eof`: the file ends there. */
void nfs_rchunk_done(struct nfs_raseg *s, int err, const void *data, size_t count, bool eof);

/* ---- nfs_fhcache.c ------------------------------------------------------------------------ */

/* The filehandles of directories by their server path, trusted for `ttl` seconds: a walk to a
 * path starts at the nearest one instead of the server's root (NFSv4: a COMPOUND's PUTFH; NFSv3:
 * the first LOOKUP3). `compound`: keep only paths whose walk fits one COMPOUND's tail (NFSv4).
 * NULL for ttl 0. */
struct nfs_fhcache *nfs_fhcache_new(double ttl, bool compound);
void nfs_fhcache_free(struct nfs_fhcache *c);
/* Keep the filehandle of the directory at server path `full` for the cache's time, and not
 * past `not_after` (monotonic µs; 0: no such bound). Nothing is kept for the root, or (with
 * `compound`) for a path whose walk would not fit one COMPOUND's tail. */
void nfs_fhc_put(struct nfs_fhcache *c, const char *full, const void *fh, guint len,
		 gint64 not_after);
/* Forget `full` and, with `below`, every path below it. */
void nfs_fhc_drop(struct nfs_fhcache *c, const char *full, bool below);
/* The kept directory nearest to the end of the path whose components are `names` (its first
 * `*depth` components; fewer than all of them with `above`): its filehandle copied into `fh`,
 * its key into *keyp (g_malloc'd), when it expires into *expires; false for none. */
bool nfs_fhc_nearest(struct nfs_fhcache *c, GPtrArray *names, bool above, guint *depth,
		     GByteArray *fh, char **keyp, gint64 *expires);

/* ---- nfs_v3.c ---------------------------------------------------------------------------- */

/* Attributes of `path` (below the mount; a symlink is not followed): one LOOKUP3 from the
 * nearest kept directory (nfs_fhcache.c), where libnfs 4.0 walks from the root and then asks
 * GETATTR3. */
int nfs3_lstat(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st);
/* SETATTR3 of `path` (below the mount, never following a symlink) with all of `to_set` at once
 * and times in nanoseconds. *have_st tells whether `st` got the attributes after. */
int nfs3_setattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path,
		 const struct stat *attr, unsigned int to_set, struct stat *st, bool *have_st);
/* LINK3 of the object at `path` itself (a symlink is not followed, unlike libnfs 4.0's
 * nfs_link()) as `newname` in directory `newdir`. */
int nfs3_link(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, const char *newdir,
	      const char *newname);
/* Bring a time into what NFSv3 carries (unsigned 32-bit seconds). */
void nfs3_time_clamp(struct timespec *ts);

/* CREATE3 of `path` (GUARDED: -EEXIST when the name is taken) with `mode`: one call from the
 * nearest kept directory, where libnfs 4.0 walks from the root, creates, and looks the file
 * up again. Its filehandle (g_byte_array) into *fhp, its attributes into `st`. */
int nfs3_create(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
		GByteArray **fhp, struct stat *st);
/* MKDIR3 of `path` with `mode`, from the nearest kept directory; the new directory is kept. */
int nfs3_mkdir(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
	       struct stat *st);
/* REMOVE3, or with `dir` RMDIR3, of `path`. */
int nfs3_remove(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, bool dir);
/* RENAME3 of `from` to `to`; what was kept below either is forgotten. */
int nfs3_rename(struct nfs_loc *loc, struct nfs_context *nfs, const char *from, const char *to);
/* GETATTR3 of a filehandle. */
int nfs3_getattr(struct nfs_context *nfs, const GByteArray *fh, struct stat *st);
/* A copy of the filehandle of a file libnfs opened. */
GByteArray *nfs3_fh_of(struct nfsfh *fh);
/* How WRITE3s of the server's wsize are sent for `fh` (which must outlive them); `sync`:
 * FILE_SYNC, else UNSTABLE. */
void nfs3_wtarget(struct nfs_conn *conn, const GByteArray *fh, bool sync, struct nfs_wtarget *t);
/* How READ3s of the server's rsize are sent for `fh` (which must outlive them). */
void nfs3_rtarget(struct nfs_conn *conn, const GByteArray *fh, struct nfs_rtarget *t);
/* COMMIT3 of the whole file; `verf` gets the server's write verifier. */
int nfs3_file_commit(struct nfs_context *nfs, const GByteArray *fh, char verf[NFS_VERF_SIZE]);

/* ---- nfs_v4.c -------------------------------------------------------------------------------- */

/* Attributes of `path` (below the server's pseudo root, lstat semantics) with fsid and rawdev,
 * which libnfs 4.0 leaves out. */
int nfs4_getattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st);
/* The server's lease time, largest READ and largest WRITE (FATTR4_LEASE_TIME, FATTR4_MAXREAD,
 * FATTR4_MAXWRITE; 0: not said), in one GETATTR. */
int nfs4_server_attrs(struct nfs_context *nfs, uint32_t *lease, uint64_t *maxread,
		      uint64_t *maxwrite);
/* SETATTR through the anonymous stateid: works on directories and symlinks too, unlike libnfs
 * 4.0 which OPENs the object first; times with nanoseconds or the server's clock. */
int nfs4_setattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path,
		 const struct stat *attr, unsigned int to_set, struct stat *st);
/* CREATE of anything but a regular file: a directory, a symlink to `target`, a fifo, socket or
 * device node (libnfs 4.0 makes no fifos); `st` gets the new object's attributes. */
int nfs4_create(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
		dev_t rdev, const char *target, struct stat *st);
/* The target of a symlink; libnfs 4.0 returns it with garbage after it (no terminating NUL). */
ssize_t nfs4_readlink(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, char *buf,
		      size_t size);
/* REMOVE that refuses a directory (unlink, -EISDIR) or anything else (rmdir, -ENOTDIR): libnfs
 * 4.0's NFSv4 unlink and rmdir both remove whatever has the name. */
int nfs4_remove(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, bool dir);
/* READDIR with the attributes we need; libnfs 4.0 returns no fileid (garbage) in its dirents.
 * Calls `cb` for every entry but "." and ".."; one round trip per `maxcount` bytes. `full` is
 * false for an entry whose attributes the server would not give (`st` then has at most st_ino
 * and the type). */
typedef int (*nfs4_dirent_fn)(void *arg, const char *name, const struct stat *st, bool full);
int nfs4_readdir(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, nfs4_dirent_fn cb,
		 void *arg);
/* LINK of the object at `path` itself (never following a symlink) as `newname` in `newdir`. */
int nfs4_link(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, const char *newdir,
	      const char *newname);
/* RENAME of `oldname` in `olddir` to `newname` in `newdir`. */
int nfs4_rename(struct nfs_loc *loc, struct nfs_context *nfs, const char *olddir,
		const char *oldname, const char *newdir, const char *newname);
/* READDIR round trips made by nfs4_readdir(), for tests and statistics. */
extern unsigned long nfs_stat_readdir_rpcs;

/* ---- nfs_v4_file.c --------------------------------------------------------------------------- */

/* OPEN `full` (below the server's root) on `conn` as the context's own open-owner: with
 * `create`, make it (GUARDED4, -EEXIST when it exists) with `mode`; O_TRUNC of `flags` empties
 * an existing file. `st` gets the file's attributes. */
int nfs4_file_open(struct nfs_conn *conn, const char *full, int flags, bool create, mode_t mode,
		   struct nfs4_file **f, struct stat *st);
/* CLOSE and free. */
int nfs4_file_close(struct nfs_conn *conn, struct nfs4_file *f);
/* Free without a CLOSE (its context is gone). */
void nfs4_file_free(struct nfs4_file *f);
int nfs4_file_getattr(struct nfs_conn *conn, struct nfs4_file *f, struct stat *st);
/* How READs of the server's maxread are sent for the open `f`. */
void nfs4_rtarget(struct nfs_conn *conn, struct nfs4_file *f, struct nfs_rtarget *t);
/* How WRITEs are sent for the open `f`: of the server's maxwrite, or NFS4_WRITE_CHUNK bytes
 * where libnfs' own buffer must hold them; `sync`: FILE_SYNC4, else UNSTABLE4. */
void nfs4_wtarget(struct nfs_conn *conn, struct nfs4_file *f, bool sync, struct nfs_wtarget *t);
/* COMMIT of the whole file; `verf` gets the server's write verifier. */
int nfs4_file_commit(struct nfs_conn *conn, struct nfs4_file *f, char verf[NFS_VERF_SIZE]);
/* Free a context's client identity. */
void nfs4_client_free(struct nfs4_client *cl);
/* RENEW the lease of the context's client identity (leased); 0 when it has none. */
int nfs4_client_renew(struct nfs_conn *conn);

/* ---- nfs_v4_lock.c -------------------------------------------------------------------------- */

/* One lock owner's locks on one file, on the server: its state, made by its first LOCK through
 * an open (bound to that open: gone with it), and the name of its lock-owner (`owner`, `flock`
 * and `file` make it). */
struct nfs4_lock;
struct flock;
struct nfs4_lock *nfs4_lock_new(uint64_t owner, bool flock, const void *file);
void nfs4_lock_free(struct nfs4_lock *lk);
/* Whether it has state on the server, and whether that came through `f`. */
bool nfs4_lock_has_state(const struct nfs4_lock *lk);
bool nfs4_lock_held_through(const struct nfs4_lock *lk, const struct nfs4_file *f);
/* Forget the state (a new lock-owner name next time). */
void nfs4_lock_forget(struct nfs4_lock *lk);
/* LOCK (F_RDLCK, F_WRLCK) or LOCKU (F_UNLCK) of fl's range (l_whence SEEK_SET; l_len 0: to the
 * end) through the open `f` on `conn` (leased). -EAGAIN when another owner holds a conflicting
 * lock (*fl is then that lock). */
int nfs4_lock_set(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk,
		  struct flock *fl);
/* LOCKT, as the owner: *fl becomes another owner's conflicting lock, or l_type F_UNLCK. */
int nfs4_lock_test(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk,
		   struct flock *fl);
/* LOCKU of everything the state holds and RELEASE_LOCKOWNER, when it came through `f`. */
int nfs4_lock_release(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk);

/* ---- nfs_v4_renew.c ------------------------------------------------------------------------ */

struct nfs4_renewer;
struct nfs4_renewer *nfs4_renewer_start(struct nfs_loc *loc);
void nfs4_renewer_stop(struct nfs4_renewer *r);
/* An idle context of `loc` with NFSv4 files open on it, idle since before `idle_before`
 * (monotonic usec), leased to the caller (nfs_conn_put() it); NULL when there is none. */
struct nfs_conn *nfs_pool_take_idle_v4(struct nfs_loc *loc, gint64 idle_before);

#endif /* FEDFUSE_NFS_H */
