/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cred.c - the caller's supplementary groups. They are the calling process's own (the kernel
 * checked its permissions with them; newgrp, sg and setgroups(2) make them differ from the user
 * database), read from /proc by fuse_req_getgroups() and kept for a few milliseconds per
 * process, so that a burst of requests from one process costs one read. Only when /proc cannot
 * tell (the process is gone) do they come from the user database, cached for a minute.
 */
#include <glib.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "fedfuse/cred.h"

#define GROUPS_TTL_USEC (60 * G_USEC_PER_SEC)
#define PROC_GROUPS_TTL_USEC (20 * 1000) /* a process's groups, read from /proc */
#define PROC_GROUPS_MAX 65536		 /* NGROUPS_MAX */

struct groups_entry {
	uid_t uid;
	gid_t gid;
	gint64 expires;
	int ngroups;
	gid_t groups[]; /* allocated with the entry */
};

static GMutex cache_lock;
static GHashTable *cache; /* (uid << 32 | gid) -> struct groups_entry * (rc box) */

/* The last process seen by this thread and its groups (a reference), released when the
 * thread ends. */
struct last_proc {
	pid_t pid;
	struct groups_entry *e;
};

static void last_proc_free(gpointer p)
{
	struct last_proc *lp = p;

	if (lp->e)
		g_atomic_rc_box_release(lp->e);
	g_free(lp);
}

static GPrivate last_proc_key = G_PRIVATE_INIT(last_proc_free);

static struct groups_entry *groups_build(uid_t uid, gid_t gid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = 64;
	gid_t *list = g_new(gid_t, n);
	struct groups_entry *e;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res) {
		while (getgrouplist(res->pw_name, gid, list, &n) < 0)
			list = g_renew(gid_t, list, n);
	} else {
		list[0] = gid; /* a uid without a name: just its primary group */
		n = 1;
	}
	e = g_atomic_rc_box_alloc0(sizeof(*e) + n * sizeof(gid_t));
	e->uid = uid;
	e->gid = gid;
	e->ngroups = n;
	memcpy(e->groups, list, n * sizeof(gid_t));
	e->expires = g_get_monotonic_time() + GROUPS_TTL_USEC;
	g_free(list);
	return e;
}

static void entry_release(gpointer p)
{
	g_atomic_rc_box_release(p);
}

static struct groups_entry *groups_get(uid_t uid, gid_t gid)
{
	guint64 key = (guint64)uid << 32 | gid;
	struct groups_entry *e;

	g_mutex_lock(&cache_lock);
	if (!cache)
		cache = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, entry_release);
	e = g_hash_table_lookup(cache, &key);
	if (e && e->expires > g_get_monotonic_time()) {
		g_atomic_rc_box_acquire(e);
		g_mutex_unlock(&cache_lock);
		return e;
	}
	g_mutex_unlock(&cache_lock);

	/* The user database may be slow (NSS): build outside the lock. */
	e = groups_build(uid, gid);
	g_mutex_lock(&cache_lock);
	g_hash_table_insert(cache, g_memdup2(&key, sizeof(key)), e);
	g_atomic_rc_box_acquire(e);
	g_mutex_unlock(&cache_lock);
	return e;
}

/* The groups of the process behind `req`, or NULL when /proc cannot tell. */
static struct groups_entry *groups_of_process(fuse_req_t req, const struct fuse_ctx *ctx)
{
	gint64 now = g_get_monotonic_time();
	struct last_proc *lp = g_private_get(&last_proc_key);
	struct groups_entry *e;

	if (!lp) {
		lp = g_new0(struct last_proc, 1);
		g_private_set(&last_proc_key, lp);
	}
	e = lp->e;
	gid_t small[64], *list = small;
	int n;

	if (e && lp->pid == ctx->pid && e->uid == ctx->uid && e->gid == ctx->gid &&
	    e->expires > now) {
		g_atomic_rc_box_acquire(e);
		return e;
	}
	n = fuse_req_getgroups(req, G_N_ELEMENTS(small), small);
	if (n > (int)G_N_ELEMENTS(small) && n <= PROC_GROUPS_MAX) {
		list = g_new(gid_t, n);
		n = fuse_req_getgroups(req, n, list);
	}
	if (n < 0 || n > PROC_GROUPS_MAX) {
		if (list != small)
			g_free(list);
		return NULL;
	}
	e = g_atomic_rc_box_alloc0(sizeof(*e) + n * sizeof(gid_t));
	e->uid = ctx->uid;
	e->gid = ctx->gid;
	e->ngroups = n;
	memcpy(e->groups, list, n * sizeof(gid_t));
	e->expires = now + PROC_GROUPS_TTL_USEC;
	if (list != small)
		g_free(list);
	if (lp->e)
		g_atomic_rc_box_release(lp->e);
	lp->pid = ctx->pid;
	lp->e = e;
	g_atomic_rc_box_acquire(e);
	return e;
}

/* The daemon's effective uid: read once, not by a system call per request. */
static uid_t daemon_euid(void)
{
	static gsize euid_plus_one;

	if (g_once_init_enter(&euid_plus_one))
		g_once_init_leave(&euid_plus_one, (gsize)geteuid() + 1);
	return (uid_t)(euid_plus_one - 1);
}

void ff_cred_get(fuse_req_t req, struct ff_cred_hold *h)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct groups_entry *e = NULL;

	h->cred = (struct ff_cred){
		.uid = ctx->uid, .gid = ctx->gid, .pid = ctx->pid, .umask = ctx->umask
	};
	if (daemon_euid() == 0 && ctx->uid != 0) {
		e = groups_of_process(req, ctx);
		if (!e)
			e = groups_get(ctx->uid, ctx->gid);
		h->cred.groups = e->groups;
		h->cred.ngroups = e->ngroups;
	}
	h->entry = e;
}

void ff_cred_self(struct ff_cred_hold *h)
{
	h->cred = (struct ff_cred){ .uid = geteuid(), .gid = getegid(), .pid = getpid() };
	h->entry = NULL;
}

void ff_cred_put(struct ff_cred_hold *h)
{
	if (h->entry)
		g_atomic_rc_box_release(h->entry);
	h->entry = NULL;
}

void ff_cred_flush(void)
{
	g_mutex_lock(&cache_lock);
	if (cache)
		g_hash_table_remove_all(cache);
	g_mutex_unlock(&cache_lock);
}
