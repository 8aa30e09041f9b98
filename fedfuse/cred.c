/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cred.c - supplementary groups per (uid, gid), from the user database, cached for a minute:
 * one getgrouplist() per user per minute instead of a /proc read per request.
 */
#include <glib.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "fedfuse/cred.h"

#define GROUPS_TTL_USEC (60 * G_USEC_PER_SEC)

struct groups_entry {
	uid_t uid;
	gid_t gid;
	gint64 expires;
	int ngroups;
	gid_t groups[]; /* allocated with the entry */
};

static GMutex cache_lock;
static GHashTable *cache; /* (uid << 32 | gid) -> struct groups_entry * (rc box) */

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

void ff_cred_get(fuse_req_t req, struct ff_cred_hold *h)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct groups_entry *e = NULL;

	h->cred = (struct ff_cred){ .uid = ctx->uid, .gid = ctx->gid, .pid = ctx->pid,
				    .umask = ctx->umask };
	if (geteuid() == 0 && ctx->uid != 0) {
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
