/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mount.c - unit tests of the mount table: one mount per location of a referral, one per
 * location for every junction naming it, references that keep a junction's mount, lingering and
 * freeing once unused, and inode-number indexes reused after a free with no cap on how many
 * mounts there may be.
 */
#include <glib.h>

#include "fedfuse/inode.h"
#include "fedfuse/location.h"
#include "fedfuse/mount.h"

static struct ff_location loc(const char *uri)
{
	struct ff_location l;
	g_autofree char *msg = NULL;

	g_assert_true(ff_location_parse(uri, &l, &msg));
	return l;
}

/* Poll (the prober frees lingering mounts every half second) until the table holds `n`. */
static bool count_becomes(struct ff_mounts *mounts, guint n)
{
	gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

	while (ff_mounts_count(mounts) != n) {
		if (g_get_monotonic_time() > deadline) {
			g_test_message("the table holds %u mounts, not %u", ff_mounts_count(mounts),
				       n);
			return false;
		}
		g_usleep(20000);
	}
	return true;
}

static void test_sharing(void)
{
	struct ff_mounts *mounts = ff_mounts_new();
	struct ff_location a = loc("file:///srv/a"), b = loc("file:///srv/b");
	struct ff_mount *ref, *ref_again, *ref_other, *j1, *j2, *j3;

	/* A referral's location: one mount per (referral, location); two referrals never share. */
	ref = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	ref_again = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	ref_other = ff_mounts_get(mounts, "/other", &a, 1.0, NULL);
	g_assert_true(ref == ref_again);
	g_assert_true(ref != ref_other);
	/* Junctions naming the same location share a mount, whichever mount holds them. */
	j1 = ff_mounts_get(mounts, NULL, &b, 1.0, ref);
	j2 = ff_mounts_get(mounts, NULL, &b, 1.0, ref_other);
	j3 = ff_mounts_get(mounts, NULL, &a, 1.0, ref);
	g_assert_true(j1 == j2);
	g_assert_true(j3 != ref && j3 != j1);
	g_assert_cmpuint(ff_mounts_count(mounts), ==, 4);
	g_assert_cmpuint(j1->index, !=, j3->index);
	g_assert_cmpuint(j1->id, !=, j3->id);
	g_assert_cmpstr(j1->loc.spec.uri, ==, "file:///srv/b");

	ff_mounts_set_linger(mounts, 0);
	ff_mount_unref(ref);
	ff_mount_unref(ref_again);
	ff_mount_unref(ref_other);
	ff_mount_unref(j1);
	ff_mount_unref(j3);
	/* j2 still holds the shared junction mount; the referrals' mounts stay with the table */
	g_assert_true(count_becomes(mounts, 3));
	g_assert_cmpint(g_atomic_int_get(&j2->refs), ==, 1);
	ff_mount_unref(j2);
	g_assert_true(count_becomes(mounts, 2));
	ff_mounts_free(mounts);
	ff_location_clear(&a);
	ff_location_clear(&b);
}

/* A junction's location takes the timeout of the mount that holds the junction (its own says
 * nothing), and junctions under mounts of different timeouts do not share. */
static void test_junction_timeout(void)
{
	struct ff_mounts *mounts = ff_mounts_new();
	struct ff_location a = loc("file:///srv/a"), b = loc("file:///srv/b");
	struct ff_mount *quick, *slow, *j1, *j2;

	a.spec.timeout = 3;
	quick = ff_mounts_get(mounts, "/quick", &a, 1.0, NULL);
	a.spec.timeout = 40;
	slow = ff_mounts_get(mounts, "/slow", &a, 1.0, NULL);
	j1 = ff_mounts_get(mounts, NULL, &b, 1.0, quick);
	j2 = ff_mounts_get(mounts, NULL, &b, 1.0, slow);
	g_assert_cmpfloat(j1->loc.spec.timeout, ==, 3);
	g_assert_cmpfloat(j2->loc.spec.timeout, ==, 40);
	g_assert_true(j1 != j2);
	ff_mount_unref(j1);
	ff_mount_unref(j2);
	ff_mount_unref(quick);
	ff_mount_unref(slow);
	ff_mounts_free(mounts);
	ff_location_clear(&a);
	ff_location_clear(&b);
}

/* write-behind= changes how a location is written to: a referral whose value changed (a
 * reload) gets a mount of its own, and a junction's location takes the value of the mount that
 * holds the junction, as it takes its timeout. */
static void test_junction_write_behind(void)
{
	struct ff_mounts *mounts = ff_mounts_new();
	struct ff_location a = loc("file:///srv/a"), b = loc("file:///srv/b");
	struct ff_mount *plain, *held, *held_again, *j1, *j2, *j3, *ra_off;

	g_assert_cmpint(a.spec.write_behind, ==, -1); /* not given: the backend's default */
	plain = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	a.spec.write_behind = 16;
	held = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	held_again = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	g_assert_true(plain != held);
	g_assert_true(held == held_again);
	g_assert_cmpint(plain->loc.spec.write_behind, ==, -1);
	g_assert_cmpint(held->loc.spec.write_behind, ==, 16);
	j1 = ff_mounts_get(mounts, NULL, &b, 1.0, plain);
	j2 = ff_mounts_get(mounts, NULL, &b, 1.0, held);
	g_assert_cmpint(j1->loc.spec.write_behind, ==, -1);
	g_assert_cmpint(j2->loc.spec.write_behind, ==, 16);
	/* read-ahead= the same way */
	g_assert_cmpint(a.spec.read_ahead, ==, -1);
	a.spec.read_ahead = 0;
	ra_off = ff_mounts_get(mounts, "/a", &a, 1.0, NULL);
	g_assert_true(ra_off != held);
	j3 = ff_mounts_get(mounts, NULL, &b, 1.0, ra_off);
	g_assert_cmpint(j3->loc.spec.read_ahead, ==, 0);
	g_assert_cmpint(j2->loc.spec.read_ahead, ==, -1);
	ff_mount_unref(j3);
	ff_mount_unref(ra_off);
	g_assert_true(j1 != j2);
	ff_mount_unref(j1);
	ff_mount_unref(j2);
	ff_mount_unref(plain);
	ff_mount_unref(held);
	ff_mount_unref(held_again);
	ff_mounts_free(mounts);
	ff_location_clear(&a);
	ff_location_clear(&b);
}

static void test_linger(void)
{
	struct ff_mounts *mounts = ff_mounts_new();
	struct ff_location a = loc("file:///srv/a");
	struct ff_mount *m = ff_mounts_get(mounts, NULL, &a, 1.0, NULL), *again;
	uint64_t id = m->id;

	/* Unused but within its linger time, it is found again: the same mount. */
	ff_mount_unref(m);
	g_usleep(600000); /* past a prober pass */
	again = ff_mounts_get(mounts, NULL, &a, 1.0, NULL);
	g_assert_true(again == m);
	g_assert_cmpuint(again->id, ==, id);
	ff_mount_unref(again);
	ff_mounts_set_linger(mounts, 0);
	g_assert_true(count_becomes(mounts, 0));
	again = ff_mounts_get(mounts, NULL, &a, 1.0, NULL);
	g_assert_cmpuint(again->id, >, id); /* a new one */
	ff_mount_unref(again);
	ff_mounts_free(mounts);
	ff_location_clear(&a);
}

/* More mounts than inode-number indexes: the later ones number their objects from the counter,
 * and a freed mount's index goes to the next new mount. */
static void test_no_cap(void)
{
	struct ff_mounts *mounts = ff_mounts_new();
	GPtrArray *held = g_ptr_array_new();
	guint n = FF_MOUNT_INDEX_MAX + 10;
	struct ff_mount *m;
	uint16_t freed;

	for (guint i = 0; i < n; i++) {
		g_autofree char *uri = g_strdup_printf("file:///srv/j%u", i);
		struct ff_location l = loc(uri);

		g_ptr_array_add(held, ff_mounts_get(mounts, NULL, &l, 1.0, NULL));
		ff_location_clear(&l);
	}
	g_assert_cmpuint(ff_mounts_count(mounts), ==, n);
	g_assert_cmpuint(((struct ff_mount *)held->pdata[0])->index, ==, 1);
	g_assert_cmpuint(((struct ff_mount *)held->pdata[FF_MOUNT_INDEX_MAX - 1])->index, ==,
			 FF_MOUNT_INDEX_MAX);
	g_assert_cmpuint(((struct ff_mount *)held->pdata[n - 1])->index, ==, FF_MOUNT_INDEX_NONE);

	ff_mounts_set_linger(mounts, 0);
	freed = ((struct ff_mount *)held->pdata[41])->index;
	ff_mount_unref(held->pdata[41]);
	g_assert_true(count_becomes(mounts, n - 1));
	{
		struct ff_location l = loc("file:///srv/new");

		m = ff_mounts_get(mounts, NULL, &l, 1.0, NULL);
		g_assert_cmpuint(m->index, ==, freed);
		ff_mount_unref(m);
		ff_location_clear(&l);
	}
	for (guint i = 0; i < held->len; i++)
		if (i != 41)
			ff_mount_unref(held->pdata[i]);
	g_assert_true(count_becomes(mounts, 0));
	g_ptr_array_free(held, TRUE);
	ff_mounts_free(mounts);
}

/* Objects of two mounts are told apart even when both number them from the counter. */
static void test_identity_by_mount(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_mount *m1 = (struct ff_mount *)GSIZE_TO_POINTER(0x1000);
	struct ff_mount *m2 = (struct ff_mount *)GSIZE_TO_POINTER(0x2000);
	struct ff_inode *a, *b;
	bool created;

	a = ff_itab_intern(itab, m1, FF_MOUNT_INDEX_NONE, 5, 77, NULL, S_IFREG, false, &created);
	g_assert_true(created);
	b = ff_itab_intern(itab, m2, FF_MOUNT_INDEX_NONE, 5, 77, NULL, S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_true(a != b);
	g_assert_cmpuint(a->ino, !=, b->ino);
	g_assert_cmpuint(a->ino >> 48, ==, 0xffff);
	g_assert_true(ff_itab_find(itab, m1, FF_MOUNT_INDEX_NONE, 5, 77) == a);
	g_assert_true(ff_itab_find(itab, m2, FF_MOUNT_INDEX_NONE, 5, 77) == b);
	ff_itab_free(itab);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/mount/sharing", test_sharing);
	g_test_add_func("/mount/junction-timeout", test_junction_timeout);
	g_test_add_func("/mount/junction-write-behind", test_junction_write_behind);
	g_test_add_func("/mount/linger", test_linger);
	g_test_add_func("/mount/no-cap", test_no_cap);
	g_test_add_func("/mount/identity-by-mount", test_identity_by_mount);
	return g_test_run();
}
