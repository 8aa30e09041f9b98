/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount.h - live locations ("mounts"): one backend context per distinct location, connected
 * on first use, with its state (up, down since when, last error) and per-operation statistics.
 * A mount outlives namespace reloads that keep its location, so open files keep working.
 */
#ifndef FEDFUSE_MOUNT_H
#define FEDFUSE_MOUNT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "fedfuse/namespace.h"

enum ff_op {
	FF_OP_LOOKUP,
	FF_OP_GETATTR,
	FF_OP_SETATTR,
	FF_OP_READLINK,
	FF_OP_CREATE, /* mknod, mkdir, symlink, link, create */
	FF_OP_REMOVE, /* unlink, rmdir */
	FF_OP_RENAME,
	FF_OP_OPEN,
	FF_OP_READ,
	FF_OP_WRITE,
	FF_OP_SYNC, /* flush, fsync, fsyncdir */
	FF_OP_READDIR,
	FF_OP_STATFS,
	FF_OP_XATTR,
	FF_OP_OTHER,   /* fallocate, lseek, copy_file_range, locks */
	FF_OP_CONNECT, /* the backend's mount(): connecting to the location */
	FF_OP_COUNT
};

struct ff_op_stats {
	gint64 calls;
	gint64 errors;
	gint64 usec; /* total latency */
};

enum ff_mount_state { FF_MOUNT_IDLE, FF_MOUNT_UP, FF_MOUNT_DOWN };

struct ff_mounts;
struct ff_metrics;

struct ff_mount {
	/* Part of inode numbers: 1..FF_MOUNT_INDEX_MAX, unique among live mounts and reused once
	 * a mount is freed (no inode of it is left then); FF_MOUNT_INDEX_NONE when all are taken
	 * (its objects are numbered from a counter). */
	uint16_t index;
	uint64_t id;		  /* never reused: names it in caches that outlive it */
	struct ff_mounts *mounts; /* the table it belongs to */
	char *key;		  /* what makes two locations the same mount */
	/* The referral it serves (two referrals never share a mount), or NULL for the location
	 * of junctions: one mount for every junction that names the same location. */
	char *ns_path;
	/* References: the table's own for a referral's mount (never freed before the table), one
	 * per inode of it, one per child junction mount, and a caller's between ff_mounts_get()
	 * and ff_mount_unref(). Unreferenced, a junction's mount lingers (a location found again
	 * soon is not connected again, and one that is down keeps its back-off), then the prober
	 * unmounts and frees it: FF_MOUNT_LINGER seconds after its last use, or BACKOFF_MAX
	 * (60 s) while it is down. */
	gint refs;
	gint64 idle_since; /* monotonic usec at which refs last fell to 0 */
	GList link;	   /* in the table's list */
	struct ff_location loc;
	double attr_timeout; /* seconds the kernel may cache its entries and attributes, unless
			      * watched (ff_mount_cache_timeout) */
	/* For the location of a junction: the mount holding the junction (loops are found by
	 * walking up), else NULL. */
	struct ff_mount *parent;
	int depth;
	const struct ff_backend *be;
	void *ctx; /* the backend's context once connected; never changes after */
	/* Set with ctx: the backend reports changes by others through `notify`. */
	bool watched;
	bool server_locks; /* its locks are taken on its server too (lock.c) */
	struct ff_notify notify;

	GMutex lock;	 /* guards the fields below; `state` is also read without it (atomically) */
	bool connecting; /* a thread is connecting it, without the lock; others wait on: */
	GCond connected;
	int state;	 /* enum ff_mount_state */
	int last_errno;	 /* the error that marked it down */
	gint64 since;	 /* monotonic usec of the last state change */
	gint64 retry_at; /* while down: when to try again */
	double backoff;	 /* seconds */
	char *last_error;

	/* The root's attributes as last seen, so that crossing into a location whose root the
	 * kernel already knows needs no backend call. */
	bool root_known;
	bool root_refresh; /* the prober is to ask the root afresh (atomic) */
	/* A node of the root, kept until unmount for operations on a namespace whose root is
	 * this location (ff_mount_root_node). */
	ff_node *root_node;
	struct stat root_st;
	gint64 root_time; /* monotonic usec */

	gint open_files;     /* open handles, for silly rename decisions */
	gint no_user_xattrs; /* the backend refused user.* xattrs: no fedfuse junctions here */
	struct ff_op_stats stats[FF_OP_COUNT]; /* updated atomically */
	/* Its referral's series in /.fedfuse/metrics: its own for a referral's mount, else the
	 * parent's (metrics.h). */
	struct ff_metrics *metrics;
	bool own_metrics;
};

struct ff_mounts *ff_mounts_new(void);
/* Unmounts every connected location. */
void ff_mounts_free(struct ff_mounts *mounts);

#define FF_MOUNT_LINGER 10.0

/* A reference to the mount for `loc` of the referral at `ns_path` (or, `ns_path` NULL, for a
 * junction found inside `parent`), with its own copy of `loc`, made on first use; not
 * connected yet. Never NULL. */
struct ff_mount *ff_mounts_get(struct ff_mounts *mounts, const char *ns_path,
			       const struct ff_location *loc, double attr_timeout,
			       struct ff_mount *parent);
/* Another reference to `m`, which the caller holds one of. */
void ff_mount_ref(struct ff_mount *m);
void ff_mount_unref(struct ff_mount *m);
/* How many mounts the table holds (live and lingering). */
guint ff_mounts_count(struct ff_mounts *mounts);
/* For tests: how long an unused mount that is not down lingers (FF_MOUNT_LINGER). */
void ff_mounts_set_linger(struct ff_mounts *mounts, double seconds);

/* Connect if needed. Returns 0, or -errno quickly, without I/O, while the location is down and
 * its back-off has not expired, or when its last attempt timed out: a location that does not
 * answer is tried again by the prober alone, so no request waits out the timeout twice. */
int ff_mount_connect(struct ff_mount *m);

/* 0 when operations may be sent to `m`; while it is down, the error that put it down (without
 * I/O: a down location answers at once until the prober finds it back). Cheap: no lock when up. */
int ff_mount_usable(struct ff_mount *m);

/* Report the result of an operation on `m` (`rc`: a -errno, or 0 or more on success, e.g. a
 * descriptor): counts it, and marks the location down when `rc` is a connection-level error
 * (timeout, refused, reset, unreachable) or up when it succeeded after being down. Returns rc. */
int ff_mount_account(struct ff_mount *m, enum ff_op op, int rc, gint64 start_usec);
/* Bytes a read returned or a write wrote (op FF_OP_READ or FF_OP_WRITE), for the metrics. */
void ff_mount_account_bytes(struct ff_mount *m, enum ff_op op, gint64 n);
/* "lookup", "getattr"...: the name of an operation in the statistics. */
const char *ff_op_name(enum ff_op op);

/* A node of the root of `m` (connected), shared and kept by the mount until it is unmounted:
 * the first call asks the backend, the others nothing. 0 or -errno. */
int ff_mount_root_node(struct ff_mount *m, const struct ff_cred *cred, ff_node **node);

/* The root's attributes as last seen (root_st), at once, while `m` is up: true when known (and,
 * given `ino`, when the root is the object (dev, *ino); false at once otherwise).
 * When they are older than the cache allows, the prober asks the server for fresh ones in its
 * next round. For entries and attributes of referral and junction roots, so that a server that
 * stalls never holds up `ls -l` of the directory above (its own operations wait, and when
 * they time out the location is down). */
bool ff_mount_root_attr(struct ff_mount *m, const ino_t *ino, dev_t dev, struct stat *st);

/* How long the kernel may cache what it learns of `m` (a connected mount): long when every
 * change by others to a location on this machine is reported, the location's attr-timeout
 * otherwise. */
#define FF_WATCHED_TIMEOUT 3600.0
double ff_mount_cache_timeout(const struct ff_mount *m);

/* Text for /.fedfuse/locations and /.fedfuse/stats. */
/* Every location of the namespace, in order, with its state ("idle": not used yet). */
void ff_mounts_describe_locations(struct ff_mounts *mounts, const struct ff_namespace *ns,
				  GString *out);
void ff_mounts_describe_stats(struct ff_mounts *mounts, GString *out);
/* The per-location families of /.fedfuse/metrics (metrics.h), and the number of mounts. */
void ff_mounts_describe_metrics(struct ff_mounts *mounts, GString *out);

#endif /* FEDFUSE_MOUNT_H */
