/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fedfuse.h - the daemon's runtime state, shared by the files of the core. Options are parsed
 * into struct ff_options once; everything that changes at run time lives in struct ff_state,
 * which every FUSE operation reaches through fuse_req_userdata().
 */
#ifndef FEDFUSE_FEDFUSE_H
#define FEDFUSE_FEDFUSE_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <glib.h>
#include <stdbool.h>

#include "fedfuse/inode.h"
#include "fedfuse/absent.h"
#include "fedfuse/jcache.h"
#include "fedfuse/lock.h"
#include "fedfuse/mount.h"
#include "fedfuse/namespace.h"
#include "fedfuse/nsdb.h"

/* fedfuse's own options (main.c's fuse_opt table); libfuse's are in its fuse_cmdline_opts. */
struct ff_options {
	char *namespace_file;
	unsigned int readahead_kib; /* the kernel's read-ahead window for the mount */
	bool default_permissions;   /* -o default_permissions: passed on to the kernel too */
	/* fuse_opt sets a flag as an int */
	int noxattr;	     /* -o noxattr: no extended attributes through the mount */
	int nouring;	     /* -o nouring: requests through /dev/fuse only */
	int uring_poll_usec; /* -o uring_poll=USEC; -1: the default */
};

/*
 * Locks of the core, in the order they may be taken: one is never taken while a lock later in
 * the list is held by the same thread.
 *   1. an open directory's lock (dir.c): one reader per open directory at a time. Held across
 *      the directory's listing, backend calls included: it is that handle's alone.
 *   2. the lock table's mutex (lock.c). Held across a backend's lock_fd(), which must not
 *      block (backend.h); across no other backend call.
 *   3. the mount table's lock, then a mount's lock (mount.c). Never across a backend call: a
 *      mount being connected is marked `connecting`, and others wait on its condition.
 *   4. the plugin table's lock (plugins.c), taken under a mount's lock to load a backend.
 *   5. the notify hub's rwlock (notify.c).
 *   6. the inode table's mutex, then an inode's lock (inode.h).
 * Leaves, under which nothing is taken: ns_lock and handles_lock below, the junction cache's
 * lock (jcache.c), the group cache's (cred.c), the log's (log.c), a connection request's
 * (mount.c); the NSDB cache's (nsdb.c), under which only the log's is. Apart from 1 and 2, no
 * core lock is held across a call into a backend.
 */
struct ff_state {
	struct ff_options opts;
	struct fuse_session *se;

	/* The namespace in force; replaced whole by a reload. Readers take a reference with
	 * ff_state_ns(). Lock order: ns_lock is a leaf (nothing is taken while holding it). */
	GMutex ns_lock;
	struct ff_namespace *ns;
	struct timespec ns_time; /* when it was loaded: times of virtual directories */

	struct ff_itab *itab;
	struct ff_mounts *mounts;
	struct ff_jcache *jcache;
	struct ff_absent *absent; /* names just found absent (absent.h) */
	struct ff_nsdb *nsdb;	  /* FSNs resolved through NSDBs (nsdb.h) */
	struct ff_locks *locks;	  /* made with the worker threads' session loop */

	/* Open files and directories, so that a shutdown with some still open releases them. */
	GMutex handles_lock;
	GHashTable *handles; /* struct ff_file * or struct ff_dir * -> GINT_TO_POINTER(is_dir) */
	bool default_permissions; /* the kernel checks permissions (-o default_permissions) */
	bool noxattr;		  /* -o noxattr (xattr.c) */
	uid_t uid;		  /* the daemon's */
	gid_t gid;
};

/* A reference to the namespace in force; ff_namespace_unref() it. */
/* Make the parts of `s` that need no thread (inode table with its root, junction cache, handle
 * table), with s->ns set; the mounts (which start threads) and the locks are the caller's. */
void ff_state_init(struct ff_state *s);
/* Free everything of `s` but its options and session, after ff_release_all(). */
void ff_state_clear(struct ff_state *s);

struct ff_namespace *ff_state_ns(struct ff_state *s);

/* Re-read the namespace file; on error keep the old namespace and return false. */
bool ff_state_reload(struct ff_state *s);

extern const struct fuse_lowlevel_ops ff_ops;

/* Release the files and directories the kernel left open (after the session ended). */
void ff_release_all(struct ff_state *s);

#endif /* FEDFUSE_FEDFUSE_H */
