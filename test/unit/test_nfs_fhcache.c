/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nfs_fhcache.c - the NFSv4 backend's cache of directories' filehandles (nfs_fhcache.c):
 * what a walk may start from, for how long, and what our own renames and removals forget.
 */
#include <glib.h>
#include <string.h>

#include "backends/nfs/nfs_v4.h"

/* nfs_v4.c's measure of a LOOKUP in an encoded COMPOUND (op, length, name, padding). */
size_t nfs4_lookup_bytes(const char *name)
{
	return 8 + (strlen(name) + 3) / 4 * 4;
}

static GPtrArray *names_of(const char *path)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	char **parts = g_strsplit(path, "/", -1);

	for (char **p = parts; *p; p++)
		if (**p)
			g_ptr_array_add(names, g_strdup(*p));
	g_strfreev(parts);
	return names;
}

/* The depth and filehandle (as text) a walk of `path` would start from; "" for the root. */
static char *start_of(struct nfs_fhcache *c, const char *path, bool above)
{
	GPtrArray *names = names_of(path);
	GByteArray *fh = g_byte_array_new();
	char *key = NULL, *out;
	gint64 expires = 0;
	guint depth = 0;

	if (nfs_fhc_nearest(c, names, above, &depth, fh, &key, &expires)) {
		g_assert_cmpint(expires, >, g_get_monotonic_time());
		out = g_strdup_printf("%u %.*s", depth, (int)fh->len, (const char *)fh->data);
	} else {
		out = g_strdup("");
	}
	g_free(key);
	g_byte_array_free(fh, TRUE);
	g_ptr_array_unref(names);
	return out;
}

static void put(struct nfs_fhcache *c, const char *path, const char *fh, gint64 not_after)
{
	nfs_fhc_put(c, path, fh, (guint)strlen(fh), not_after);
}

#define ASSERT_START(c, path, above, want)                                                         \
	do {                                                                                       \
		char *got_ = start_of(c, path, above);                                             \
		g_assert_cmpstr(got_, ==, want);                                                   \
		g_free(got_);                                                                      \
	} while (0)

static void test_nearest(void)
{
	struct nfs_fhcache *c = nfs_fhcache_new(60, true);

	put(c, "/e/a", "A", 0);
	put(c, "/e/a/b/c", "C", 0);
	put(c, "/", "ROOT", 0); /* never kept: PUTROOTFH costs no more */
	ASSERT_START(c, "/e", false, "");
	ASSERT_START(c, "/e/a", false, "2 A");
	ASSERT_START(c, "/e/a", true, ""); /* a getattr looks the last name up again */
	ASSERT_START(c, "/e/a/b", true, "2 A");
	ASSERT_START(c, "/e/a/b/c/d/f", false, "4 C");
	ASSERT_START(c, "/e/a/b/c", true, "2 A");
	ASSERT_START(c, "/e/ab", false, ""); /* components, not bytes */
	ASSERT_START(c, "//e///a/b", false, "2 A");
	nfs_fhcache_free(c);
	g_assert_null(nfs_fhcache_new(0, true)); /* attr-timeout=0: nothing is kept */
	nfs_fhc_put(NULL, "/e/a", "A", 1, 0);
	nfs_fhc_drop(NULL, "/e/a", true);
}

static void test_drop(void)
{
	struct nfs_fhcache *c = nfs_fhcache_new(60, true);

	put(c, "/e/a", "A", 0);
	put(c, "/e/a/b", "B", 0);
	put(c, "/e/ab", "X", 0);
	nfs_fhc_drop(c, "/e/a/b", false);
	ASSERT_START(c, "/e/a/b/f", false, "2 A");
	put(c, "/e/a/b", "B", 0);
	nfs_fhc_drop(c, "/e/a", true); /* a rename or rmdir of /e/a takes what is below along */
	ASSERT_START(c, "/e/a/b/f", false, "");
	ASSERT_START(c, "/e/ab/f", false, "2 X");
	nfs_fhcache_free(c);
}

/* Each wait is past a deadline, so that a slow machine cannot make a check fail; the checks
 * made before a deadline have a second of room. */
static void test_expiry(void)
{
	struct nfs_fhcache *c = nfs_fhcache_new(60, true);
	gint64 now = g_get_monotonic_time();

	put(c, "/e/a", "A", 0);
	put(c, "/e/a/b", "B", now + G_USEC_PER_SEC); /* learnt from something that goes sooner */
	put(c, "/e/a/x", "X", now - 1);		     /* from something gone already */
	ASSERT_START(c, "/e/a/b/f", false, "3 B");
	ASSERT_START(c, "/e/a/x/f", false, "2 A");
	g_usleep(G_USEC_PER_SEC + 100000);
	ASSERT_START(c, "/e/a/b/f", false, "2 A");
	nfs_fhcache_free(c);

	c = nfs_fhcache_new(0.3, true); /* attr-timeout=0.3 */
	put(c, "/e/a", "A", 0);
	g_usleep(350000);
	ASSERT_START(c, "/e/a/f", false, "");
	nfs_fhcache_free(c);
}

/* Only what a COMPOUND's tail can walk from the root is kept, so that the walk can always go
 * back to the root when a kept filehandle is stale. */
static void test_long_paths(void)
{
	struct nfs_fhcache *c = nfs_fhcache_new(60, true);
	GString *deep = g_string_new(NULL);
	char *want;

	for (int i = 0; i < V4_TAIL_OPS + 1; i++)
		g_string_append(deep, "/d");
	put(c, deep->str, "D", 0);
	ASSERT_START(c, deep->str, false, "");
	nfs_fhcache_free(c);

	/* NFSv3 walks with LOOKUP3s, one at a time: any depth is kept */
	c = nfs_fhcache_new(60, false);
	put(c, deep->str, "D", 0);
	want = g_strdup_printf("%d D", V4_TAIL_OPS + 1);
	ASSERT_START(c, deep->str, false, want);
	g_free(want);
	g_string_free(deep, TRUE);
	nfs_fhcache_free(c);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/nfs/fhcache/nearest", test_nearest);
	g_test_add_func("/nfs/fhcache/drop", test_drop);
	g_test_add_func("/nfs/fhcache/expiry", test_expiry);
	g_test_add_func("/nfs/fhcache/long-paths", test_long_paths);
	return g_test_run();
}
