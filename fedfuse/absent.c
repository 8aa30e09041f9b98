/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * absent.c - names a network location was just found not to have (absent.h): a ring of the
 * most recent, all forgotten at once by a change (a generation counter).
 */
#include <string.h>

#include "fedfuse/absent.h"

struct slot {
	uint64_t dir;
	uint64_t gen; /* kept only while it is the current one */
	gint64 until; /* monotonic µs */
	char *name;
};

struct ff_absent {
	GMutex lock;  /* a leaf */
	uint64_t gen; /* atomic: a change need not wait for a lookup */
	/* Atomic, for a look without the lock: the generation of the newest name kept, and the
	 * latest time any is kept until. Once gen moved past the first, or the clock past the
	 * second, none is kept, as after every change made through the mount. */
	uint64_t newest_gen;
	gint64 latest_until;
	uint64_t hits;
	unsigned int next; /* the slot to fill next */
	struct slot slots[FF_ABSENT_SLOTS];
};

struct ff_absent *ff_absent_new(void)
{
	struct ff_absent *a = g_new0(struct ff_absent, 1);

	g_mutex_init(&a->lock);
	return a;
}

void ff_absent_free(struct ff_absent *a)
{
	if (!a)
		return;
	for (unsigned int i = 0; i < FF_ABSENT_SLOTS; i++)
		g_free(a->slots[i].name);
	g_mutex_clear(&a->lock);
	g_free(a);
}

uint64_t ff_absent_gen(struct ff_absent *a)
{
	return __atomic_load_n(&a->gen, __ATOMIC_ACQUIRE);
}

void ff_absent_note(struct ff_absent *a, uint64_t dir, const char *name, uint64_t gen, double ttl)
{
	struct slot *s;

	if (ttl <= 0)
		return;
	g_mutex_lock(&a->lock);
	if (gen == ff_absent_gen(a)) { /* else something changed while it was looked up */
		s = &a->slots[a->next];
		a->next = (a->next + 1) % FF_ABSENT_SLOTS;
		g_free(s->name);
		s->name = g_strdup(name);
		s->dir = dir;
		s->gen = gen;
		s->until = g_get_monotonic_time() + (gint64)(ttl * G_USEC_PER_SEC);
		__atomic_store_n(&a->newest_gen, gen, __ATOMIC_RELAXED);
		if (s->until > a->latest_until)
			__atomic_store_n(&a->latest_until, s->until, __ATOMIC_RELAXED);
	}
	g_mutex_unlock(&a->lock);
}

bool ff_absent_known(struct ff_absent *a, uint64_t dir, const char *name)
{
	gint64 now = g_get_monotonic_time();
	uint64_t gen = ff_absent_gen(a);
	bool known = false;

	/* Nothing kept now: no lock, no walk (a racing note costs at most one server lookup). */
	if (__atomic_load_n(&a->newest_gen, __ATOMIC_RELAXED) != gen ||
	    now >= __atomic_load_n(&a->latest_until, __ATOMIC_RELAXED))
		return false;
	g_mutex_lock(&a->lock);
	for (unsigned int i = 0; i < FF_ABSENT_SLOTS && !known; i++) {
		const struct slot *s = &a->slots[i];

		known = s->name && s->dir == dir && s->gen == gen && now < s->until &&
			strcmp(s->name, name) == 0;
	}
	if (known)
		a->hits++;
	g_mutex_unlock(&a->lock);
	return known;
}

void ff_absent_changed(struct ff_absent *a)
{
	__atomic_add_fetch(&a->gen, 1, __ATOMIC_RELEASE);
}

void ff_absent_describe(struct ff_absent *a, GString *out)
{
	gint64 now = g_get_monotonic_time();
	uint64_t gen = ff_absent_gen(a);
	unsigned int kept = 0;

	g_mutex_lock(&a->lock);
	for (unsigned int i = 0; i < FF_ABSENT_SLOTS; i++)
		kept += a->slots[i].name && a->slots[i].gen == gen && now < a->slots[i].until;
	g_string_append_printf(out, "absent-names hits=%" G_GUINT64_FORMAT " kept=%u\n", a->hits,
			       kept);
	g_mutex_unlock(&a->lock);
}
