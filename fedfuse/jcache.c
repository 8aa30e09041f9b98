/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jcache.c - the junction cache (see jcache.h). A hash table under one mutex; lookups hold it
 * for a hash probe only, and expired entries are dropped when met.
 */
#include "fedfuse/jcache.h"
#include "fedfuse/metrics.h"

struct key {
	uint64_t mnt; /* the id of the mount holding it */
	dev_t dev;
	ino_t ino;
};

struct slot {
	struct key key;
	GList link;    /* in `order`, oldest first */
	GQueue *order; /* the cache's */
	struct timespec ctime;
	gint64 expires; /* monotonic usec */
	struct ff_jentry *entry;
};

struct ff_jcache {
	GMutex lock;
	GHashTable *slots; /* struct key * (in the slot) -> struct slot * */
	GQueue order;	   /* of slot.link, oldest first */
	gint64 hits;
	gint64 misses;
	gint64 next_sweep; /* monotonic usec */
};

#define SWEEP_INTERVAL (60 * G_USEC_PER_SEC)

static gboolean expired(gpointer key, gpointer value, gpointer now)
{
	return ((struct slot *)value)->expires <= *(gint64 *)now;
}

/* Make room for one more entry: expired ones go (every minute or so), and when the cache is
 * still full, the oldest eighth. Called with the lock held. */
static void make_room_locked(struct ff_jcache *c, gint64 now)
{
	if (now >= c->next_sweep) {
		g_hash_table_foreach_remove(c->slots, expired, &now);
		c->next_sweep = now + SWEEP_INTERVAL;
	}
	if (g_hash_table_size(c->slots) < FF_JCACHE_MAX)
		return;
	for (guint n = FF_JCACHE_MAX / 8; n > 0 && c->order.head; n--)
		g_hash_table_remove(c->slots, &((struct slot *)c->order.head->data)->key);
}

static guint key_hash(gconstpointer p)
{
	const struct key *k = p;
	uint64_t h = (uint64_t)k->ino * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)k->dev ^
		     k->mnt * UINT64_C(0xc2b2ae3d27d4eb4f);

	return (guint)(h ^ (h >> 32));
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct key *x = a, *y = b;

	return x->mnt == y->mnt && x->dev == y->dev && x->ino == y->ino;
}

void ff_jentry_unref(struct ff_jentry *e)
{
	if (e && g_atomic_int_dec_and_test(&e->refcount)) {
		ff_junction_free(e->junction);
		g_free(e);
	}
}

static void slot_free(gpointer p)
{
	struct slot *slot = p;

	g_queue_unlink(slot->order, &slot->link);
	ff_jentry_unref(slot->entry);
	g_free(slot);
}

struct ff_jcache *ff_jcache_new(void)
{
	struct ff_jcache *c = g_new0(struct ff_jcache, 1);

	g_mutex_init(&c->lock);
	c->slots = g_hash_table_new_full(key_hash, key_equal, NULL, slot_free);
	return c;
}

void ff_jcache_free(struct ff_jcache *c)
{
	if (!c)
		return;
	g_hash_table_destroy(c->slots);
	g_mutex_clear(&c->lock);
	g_free(c);
}

struct ff_jentry *ff_jcache_get(struct ff_jcache *c, uint64_t mnt, const struct stat *st)
{
	struct key key = { mnt, st->st_dev, st->st_ino };
	struct ff_jentry *e = NULL;
	struct slot *slot;

	g_mutex_lock(&c->lock);
	slot = g_hash_table_lookup(c->slots, &key);
	if (slot &&
	    (slot->expires <= g_get_monotonic_time() || slot->ctime.tv_sec != st->st_ctim.tv_sec ||
	     slot->ctime.tv_nsec != st->st_ctim.tv_nsec)) {
		g_hash_table_remove(c->slots, &key);
		slot = NULL;
	}
	if (slot) {
		e = slot->entry;
		g_atomic_int_inc(&e->refcount);
		c->hits++;
	} else {
		c->misses++;
	}
	g_mutex_unlock(&c->lock);
	return e;
}

struct ff_jentry *ff_jcache_put(struct ff_jcache *c, uint64_t mnt, const struct stat *st,
				struct ff_junction *junction, double ttl)
{
	struct ff_jentry *e = g_new0(struct ff_jentry, 1);
	struct slot *slot;
	gint64 now;

	e->refcount = 1;
	e->junction = junction;
	if (ttl <= 0)
		return e;
	slot = g_new0(struct slot, 1);
	slot->key = (struct key){ mnt, st->st_dev, st->st_ino };
	slot->ctime = st->st_ctim;
	slot->expires = g_get_monotonic_time() + (gint64)(ttl * G_USEC_PER_SEC);
	slot->entry = e;
	slot->link.data = slot;
	slot->order = &c->order;
	g_atomic_int_inc(&e->refcount);
	g_mutex_lock(&c->lock);
	now = g_get_monotonic_time();
	make_room_locked(c, now);
	g_hash_table_replace(c->slots, &slot->key, slot);
	g_queue_push_tail_link(&c->order, &slot->link);
	g_mutex_unlock(&c->lock);
	return e;
}

void ff_jcache_clear(struct ff_jcache *c)
{
	g_mutex_lock(&c->lock);
	g_hash_table_remove_all(c->slots);
	g_mutex_unlock(&c->lock);
}

void ff_jcache_describe(struct ff_jcache *c, GString *out)
{
	g_mutex_lock(&c->lock);
	g_string_append_printf(out,
			       "junction-cache hits=%" G_GINT64_FORMAT " misses=%" G_GINT64_FORMAT
			       " entries=%u\n",
			       c->hits, c->misses, g_hash_table_size(c->slots));
	g_mutex_unlock(&c->lock);
}

void ff_jcache_describe_metrics(struct ff_jcache *c, GString *out)
{
	gint64 hits, misses;
	guint entries;

	g_mutex_lock(&c->lock);
	hits = c->hits;
	misses = c->misses;
	entries = g_hash_table_size(c->slots);
	g_mutex_unlock(&c->lock);
	ff_metrics_append_value(out, "fedfuse_junction_cache_hits_total", "counter",
				"Junctions found in the junction cache.", hits);
	ff_metrics_append_value(out, "fedfuse_junction_cache_misses_total", "counter",
				"Junctions read from their backend.", misses);
	ff_metrics_append_value(out, "fedfuse_junction_cache_entries", "gauge",
				"Junctions in the junction cache.", entries);
}
