/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jcache.h - the junction cache: what a backend object (a directory or a symlink) is as a
 * junction, positive or negative, for a time-to-live, so that crossing a known junction costs
 * no extra backend round trip. Entries are keyed by (mount id, st_dev, st_ino) and checked
 * against st_ctime, so a changed xattr or a replaced link is read again.
 */
#ifndef FEDFUSE_JCACHE_H
#define FEDFUSE_JCACHE_H

#include <glib.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fedfuse/junction.h"

/* A cached answer, shared between readers: ff_jentry_unref() it. */
struct ff_jentry {
	gint refcount;
	struct ff_junction *junction; /* NULL: not a junction */
};

struct ff_jcache;

struct ff_jcache *ff_jcache_new(void);
void ff_jcache_free(struct ff_jcache *c);

/* The cached answer for an object, or NULL on a miss (counted). */
struct ff_jentry *ff_jcache_get(struct ff_jcache *c, uint64_t mnt, const struct stat *st);

/* Remember an answer (`junction` NULL: not a junction; the cache takes it) for `ttl` seconds
 * (0: do not cache) and return a reference to it. Expired entries are dropped as they are met,
 * and all of them at once every minute or so; the cache holds at most FF_JCACHE_MAX entries
 * (the oldest go first), so that a walk through a hundred thousand junctions does not keep
 * their parsed values once the kernel has forgotten them. */
#define FF_JCACHE_MAX 2048
struct ff_jentry *ff_jcache_put(struct ff_jcache *c, uint64_t mnt, const struct stat *st,
				struct ff_junction *junction, double ttl);

void ff_jentry_unref(struct ff_jentry *e);

/* Forget everything (namespace reload). */
void ff_jcache_clear(struct ff_jcache *c);

/* "junction-cache hits=N misses=N entries=N" for /.fedfuse/stats. */
void ff_jcache_describe(struct ff_jcache *c, GString *out);
/* Its families of /.fedfuse/metrics. */
void ff_jcache_describe_metrics(struct ff_jcache *c, GString *out);

#endif /* FEDFUSE_JCACHE_H */
