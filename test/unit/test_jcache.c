/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_jcache.c - unit tests of the junction cache: hits and misses counted, answers kept for
 * their time to live only, an object whose ctime changed read again, negative answers cached,
 * a reload forgetting everything, references outliving the cache, a bounded size.
 */
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "fedfuse/jcache.h"

static struct stat object(dev_t dev, ino_t ino, time_t ctime_sec)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_dev = dev;
	st.st_ino = ino;
	st.st_ctim.tv_sec = ctime_sec;
	return st;
}

static struct ff_junction *junction_to(const char *uri)
{
	char *msg = NULL;
	struct ff_junction *j = ff_junction_parse_fedfuse(uri, strlen(uri), &msg);

	g_assert_null(msg);
	g_assert_nonnull(j);
	return j;
}

static char *describe(struct ff_jcache *c)
{
	GString *out = g_string_new(NULL);

	ff_jcache_describe(c, out);
	return g_string_free(out, FALSE);
}

static void test_hit_and_miss(void)
{
	struct ff_jcache *c = ff_jcache_new();
	struct stat st = object(1, 42, 1000);
	struct ff_jentry *e, *again;
	g_autofree char *text = NULL;

	g_assert_null(ff_jcache_get(c, 3, &st)); /* a miss */
	e = ff_jcache_put(c, 3, &st, junction_to("file:///srv/a"), 60);
	g_assert_nonnull(e->junction);
	again = ff_jcache_get(c, 3, &st); /* a hit: the same entry */
	g_assert_true(again == e);
	/* the same object seen through another mount is another key, whatever the mount ids */
	g_assert_null(ff_jcache_get(c, 4, &st));
	g_assert_null(ff_jcache_get(c, 3 + (UINT64_C(1) << 40), &st));
	text = describe(c);
	g_assert_cmpstr(text, ==, "junction-cache hits=1 misses=3 entries=1\n");
	ff_jentry_unref(again);
	ff_jentry_unref(e);
	ff_jcache_free(c);
}

static void test_changed_object_read_again(void)
{
	struct ff_jcache *c = ff_jcache_new();
	struct stat st = object(1, 7, 1000), changed = object(1, 7, 1001);
	struct ff_jentry *e;

	ff_jentry_unref(ff_jcache_put(c, 1, &st, junction_to("file:///srv/a"), 60));
	/* a new xattr or link target changes ctime: the cached answer is stale */
	g_assert_null(ff_jcache_get(c, 1, &changed));
	g_assert_null(ff_jcache_get(c, 1, &st));     /* and it was dropped */
	e = ff_jcache_put(c, 1, &changed, NULL, 60); /* now not a junction: cached too */
	ff_jentry_unref(e);
	e = ff_jcache_get(c, 1, &changed);
	g_assert_nonnull(e);
	g_assert_null(e->junction);
	ff_jentry_unref(e);
	ff_jcache_free(c);
}

static void test_ttl(void)
{
	struct ff_jcache *c = ff_jcache_new();
	struct stat st = object(2, 9, 5);
	struct ff_jentry *e;

	/* ttl 0: answered, not kept */
	e = ff_jcache_put(c, 1, &st, junction_to("file:///srv/b"), 0);
	g_assert_nonnull(e->junction);
	ff_jentry_unref(e);
	g_assert_null(ff_jcache_get(c, 1, &st));
	/* a short ttl ends: after it, the answer is read again */
	ff_jentry_unref(ff_jcache_put(c, 1, &st, junction_to("file:///srv/b"), 0.02));
	g_usleep(50 * 1000);
	g_assert_null(ff_jcache_get(c, 1, &st));
	ff_jcache_free(c);
}

static void test_clear_keeps_references(void)
{
	struct ff_jcache *c = ff_jcache_new();
	struct stat st = object(2, 10, 5);
	struct ff_jentry *held = ff_jcache_put(c, 1, &st, junction_to("file:///srv/c"), 60);
	g_autofree char *text = NULL;

	ff_jcache_clear(c); /* a namespace reload */
	g_assert_null(ff_jcache_get(c, 1, &st));
	text = describe(c);
	g_assert_true(g_str_has_suffix(text, "entries=0\n"));
	/* a reader that held the entry still has it, whole */
	g_assert_cmpuint(held->junction->locations->len, ==, 1);
	ff_jentry_unref(held);
	ff_jcache_free(c);
}

/* The cache holds at most FF_JCACHE_MAX entries: past that the oldest go, the newest stay. */
static void test_bounded(void)
{
	struct ff_jcache *c = ff_jcache_new();
	guint n = FF_JCACHE_MAX + 100;
	struct stat first = object(1, 1, 1000), last = object(1, n, 1000);
	g_autofree char *text = NULL;
	struct ff_jentry *e;
	guint entries;

	for (guint i = 1; i <= n; i++) {
		struct stat st = object(1, i, 1000);

		ff_jentry_unref(ff_jcache_put(c, 1, &st, NULL, 60));
	}
	text = describe(c);
	g_assert_true(sscanf(text, "junction-cache hits=0 misses=0 entries=%u", &entries) == 1);
	g_assert_cmpuint(entries, <=, FF_JCACHE_MAX);
	g_assert_cmpuint(entries, >=, FF_JCACHE_MAX - FF_JCACHE_MAX / 8);
	g_assert_null(ff_jcache_get(c, 1, &first));
	e = ff_jcache_get(c, 1, &last);
	g_assert_nonnull(e);
	ff_jentry_unref(e);
	ff_jcache_free(c);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/jcache/hit-and-miss", test_hit_and_miss);
	g_test_add_func("/jcache/changed-object-read-again", test_changed_object_read_again);
	g_test_add_func("/jcache/ttl", test_ttl);
	g_test_add_func("/jcache/clear-keeps-references", test_clear_keeps_references);
	g_test_add_func("/jcache/bounded", test_bounded);
	return g_test_run();
}
