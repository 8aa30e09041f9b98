/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_absent.c - unit tests of the names kept absent (absent.h): kept for their time only, by
 * directory and name, forgotten by any change, not kept when a change came during the lookup,
 * the most recent FF_ABSENT_SLOTS kept.
 */
#include <stdio.h>

#include <glib.h>

#include "fedfuse/absent.h"

static void note(struct ff_absent *a, uint64_t dir, const char *name, double ttl)
{
	ff_absent_note(a, dir, name, ff_absent_gen(a), ttl);
}

static void test_kept_by_directory_and_name(void)
{
	struct ff_absent *a = ff_absent_new();
	GString *out = g_string_new(NULL);

	g_assert_false(ff_absent_known(a, 7, "f"));
	note(a, 7, "f", 60);
	g_assert_true(ff_absent_known(a, 7, "f"));
	g_assert_false(ff_absent_known(a, 8, "f"));
	g_assert_false(ff_absent_known(a, 7, "F"));
	g_assert_false(ff_absent_known(a, 7, "f2"));
	note(a, 7, "g", 0); /* a location whose names are not kept absent */
	g_assert_false(ff_absent_known(a, 7, "g"));
	ff_absent_describe(a, out);
	g_assert_cmpstr(out->str, ==, "absent-names hits=1 kept=1\n");
	g_string_free(out, TRUE);
	ff_absent_free(a);
}

static void test_for_its_time_only(void)
{
	struct ff_absent *a = ff_absent_new();

	note(a, 1, "f", 0.02);
	g_assert_true(ff_absent_known(a, 1, "f"));
	g_usleep(40 * 1000);
	g_assert_false(ff_absent_known(a, 1, "f"));
	ff_absent_free(a);
}

static void test_a_change_forgets_all(void)
{
	struct ff_absent *a = ff_absent_new();

	note(a, 1, "f", 60);
	note(a, 2, "g", 60);
	ff_absent_changed(a);
	g_assert_false(ff_absent_known(a, 1, "f"));
	g_assert_false(ff_absent_known(a, 2, "g"));
	note(a, 1, "f", 60); /* looked up again since: kept again */
	g_assert_true(ff_absent_known(a, 1, "f"));
	ff_absent_free(a);
}

static void test_change_during_the_lookup(void)
{
	struct ff_absent *a = ff_absent_new();
	uint64_t gen = ff_absent_gen(a);

	ff_absent_changed(a); /* the name may have been made after the server answered */
	ff_absent_note(a, 1, "f", gen, 60);
	g_assert_false(ff_absent_known(a, 1, "f"));
	ff_absent_free(a);
}

static void test_most_recent_kept(void)
{
	struct ff_absent *a = ff_absent_new();
	char name[32];

	for (int i = 0; i <= FF_ABSENT_SLOTS; i++) {
		g_snprintf(name, sizeof(name), "n%d", i);
		note(a, 1, name, 60);
	}
	g_assert_false(ff_absent_known(a, 1, "n0"));
	g_assert_true(ff_absent_known(a, 1, "n1"));
	g_snprintf(name, sizeof(name), "n%d", FF_ABSENT_SLOTS);
	g_assert_true(ff_absent_known(a, 1, name));
	ff_absent_free(a);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/absent/kept-by-directory-and-name", test_kept_by_directory_and_name);
	g_test_add_func("/absent/for-its-time-only", test_for_its_time_only);
	g_test_add_func("/absent/a-change-forgets-all", test_a_change_forgets_all);
	g_test_add_func("/absent/change-during-the-lookup", test_change_during_the_lookup);
	g_test_add_func("/absent/most-recent-kept", test_most_recent_kept);
	return g_test_run();
}
