/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb.h - internals shared by the files of the SMB backend: the per-location state, the pool of
 * libsmbclient contexts (smb_pool.c) and the errno helpers (smb_errno.c). Nothing here is seen
 * by the core; the backend exports only its descriptor (smb.c).
 */
#ifndef FEDFUSE_SMB_H
#define FEDFUSE_SMB_H

#include <glib.h>
#include <libsmbclient.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backends/backend.h"
#include "backends/pathnode.h"

#define SMB_DEFAULT_CONNECTIONS 8 /* contexts per location unless ?connections=N */
#define SMB_MAX_CONNECTIONS 64
#define SMB_AUTH_HOLDOFF_US (60 * G_USEC_PER_SEC) /* no new logon for this long after one failed */

struct smb_pool;

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
	gint64 auth_holdoff_until; /* monotonic µs; new contexts fail -EACCES before it */
	bool auth_logged;	   /* the failure was logged; quiet until a logon works */
	GAsyncQueue *reap;	   /* contexts to free, by the reaper thread */
	unsigned int reaping;	   /* contexts queued or being freed; pool lock */
	GThread *reaper;
	struct smb_loc *loc;
};

/* One mounted location. */
struct smb_loc {
	char *host;
	int port; /* 0: libsmbclient's default (445, then 139) */
	char *share;
	char *url;	/* "smb://host[:port]/share[/sub...]", percent-encoded, no trailing '/' */
	char *display;	/* "//host[:port]/share[/sub]" for messages */
	char *user;	/* "" (anonymous, i.e. guest) when no credentials */
	char *domain;	/* NULL: the library's default workgroup */
	char *password; /* wiped with explicit_bzero at unmount; "" for guest */
	size_t password_len;
	bool guest;
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
	GRWLock gate;	  /* handle operations read; moving open handles (rename) writes */
	GMutex wlock;	  /* guards open */
	GHashTable *open; /* struct ff_pathnode * -> struct smb_open_node * (smb.c) */
};

/* ---- smb_pool.c ------------------------------------------------------------------------------ */

int smb_pool_init(struct smb_pool *pool, struct smb_loc *loc, unsigned int max);
/* Free every context (joins the reaper). All handles must have been released. */
void smb_pool_destroy(struct smb_pool *pool);
/* Check out an idle context, or a new one. for_open prefers a context without open files, so
 * that files opened one after another can later be read in parallel. Waits at most the
 * location's timeout for a context to become free. */
int smb_pool_get(struct smb_pool *pool, bool for_open, struct smb_conn **conn);
/* Check out the context a handle belongs to: -EIO when its connection was lost. Waits at most
 * the timeout for it, or, when patient (release must not leave a file open), until it is free:
 * whoever holds it gives it back within its own timeout. */
int smb_pool_get_conn(struct smb_pool *pool, struct smb_conn *conn, bool patient);
/* Check a context back in. rc is the operation's result: a lost connection retires it. */
void smb_pool_put(struct smb_pool *pool, struct smb_conn *conn, int rc);
/* Retired contexts may still hold files open on the server (a file whose connection hung
 * is closed by the reaper): wait until they are freed, at most the timeout. True when there
 * were any, i.e. a sharing violation (EBUSY) may be gone now. */
bool smb_pool_wait_reaped(struct smb_pool *pool);
/* Account an open file to / release it from a context (called while it is checked out). */
void smb_pool_file_opened(struct smb_pool *pool, struct smb_conn *conn);
void smb_pool_file_closed(struct smb_pool *pool, struct smb_conn *conn);

/* Held around every libsmbclient call when Samba's thread hooks are missing (smb_pool.c);
 * no-ops otherwise. smb_pool_get*() take it with the context, smb_pool_put() drops it. */
void smb_lib_lock(void);
void smb_lib_unlock(void);

/* ---- smb_errno.c ----------------------------------------------------------------------------- */

/* The errno of a failed libsmbclient call, as -errno, normalised (see smb_errno.c). */
int smb_err(int err);
/* True for errors that mean the context's connection is gone (not a timeout). */
bool smb_err_is_disconnect(int neg_errno);

#endif /* FEDFUSE_SMB_H */
