/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_pathtree.c - path-named nodes (backends/pathtree): one node per name, paths that follow
 * renames, and what change notification finds in the tree (find, entries) without adding to it.
 */
#include <glib.h>
#include <string.h>

#include "backends/pathtree/pathtree.h"

static void assert_path(struct ff_pathtree *t, struct ff_pathnode *n, const char *child,
			const char *want)
{
	g_autofree char *path = ff_pathtree_path(t, NULL, n, child);

	g_assert_cmpstr(path, ==, want);
}

static void test_paths_follow_renames(void)
{
	struct ff_pathtree *t = ff_pathtree_new(g_free);
	struct ff_pathnode *root = ff_pathtree_root(t);
	struct ff_pathnode *a = ff_pathtree_child(t, root, "a");
	struct ff_pathnode *b = ff_pathtree_child(t, a, "b");

	g_assert_true(ff_pathtree_child(t, root, "a") == a); /* one node per name */
	ff_pathtree_unref(t, a);
	assert_path(t, root, NULL, "/");
	assert_path(t, b, NULL, "/a/b");
	assert_path(t, b, "c", "/a/b/c");
	ff_pathtree_rename(t, root, "a", root, "z", false);
	assert_path(t, b, NULL, "/z/b");
	{ /* names longer than the node's own room, and back */
		char lng[201], want[210];

		memset(lng, 'n', 200);
		lng[200] = '\0';
		ff_pathtree_rename(t, root, "z", root, lng, false);
		g_snprintf(want, sizeof(want), "/%s/b", lng);
		assert_path(t, b, NULL, want);
		g_assert_true(ff_pathtree_child(t, root, lng) == a);
		ff_pathtree_unref(t, a);
		ff_pathtree_rename(t, root, lng, root, "z", false);
		assert_path(t, b, NULL, "/z/b");
	}
	ff_pathtree_unlink(t, a, "b");
	g_assert_null(ff_pathtree_path(t, NULL, b, NULL)); /* unlinked: no path */
	ff_pathtree_unref(t, b);
	ff_pathtree_unref(t, a);
	ff_pathtree_unref(t, root);
	ff_pathtree_free(t);
}

static void test_find_adds_nothing(void)
{
	struct ff_pathtree *t = ff_pathtree_new(g_free);
	struct ff_pathnode *root = ff_pathtree_root(t);
	struct ff_pathnode *a = ff_pathtree_child(t, root, "a");
	struct ff_pathnode *found;
	GArray *entries;

	g_assert_null(ff_pathtree_find(t, root, "b"));
	found = ff_pathtree_find(t, root, "a");
	g_assert_true(found == a);
	ff_pathtree_unref(t, found);
	entries = ff_pathtree_entries(t);
	g_assert_cmpuint(entries->len, ==, 1); /* "b" was not made by looking */
	ff_pathtree_entries_free(t, entries);
	ff_pathtree_unref(t, a);
	ff_pathtree_unref(t, root);
	ff_pathtree_free(t);
}

/* The entries hold their nodes: a node the core forgets meanwhile stays until they are given
 * back, and goes then. */
static void test_entries_hold_their_nodes(void)
{
	struct ff_pathtree *t = ff_pathtree_new(g_free);
	struct ff_pathnode *root = ff_pathtree_root(t);
	struct ff_pathnode *d = ff_pathtree_child(t, root, "d");
	struct ff_pathnode *f = ff_pathtree_child(t, d, "f");
	GArray *entries = ff_pathtree_entries(t);
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < entries->len; i++) {
		const struct ff_pathtree_entry *e =
			&g_array_index(entries, struct ff_pathtree_entry, i);

		g_hash_table_add(seen, e->name);
		g_assert_true(e->parent == (e->node == d ? root : d));
	}
	g_assert_cmpuint(g_hash_table_size(seen), ==, 2);
	g_assert_true(g_hash_table_contains(seen, "d") && g_hash_table_contains(seen, "f"));
	g_hash_table_destroy(seen);
	ff_pathtree_unref(t, f);
	ff_pathtree_unref(t, d);
	assert_path(t, f, NULL, "/d/f"); /* still there: the entries hold it */
	ff_pathtree_entries_free(t, entries);
	g_assert_null(ff_pathtree_find(t, root, "d"));
	ff_pathtree_unref(t, root);
	ff_pathtree_free(t);
}

static int privs_freed;

static void count_free(gpointer p)
{
	privs_freed++;
	g_free(p);
}

/* A node's priv goes to the tree's free_priv with the node, and to nothing without one (the
 * smb backend keeps a number there, not an allocation). */
static void test_priv_freed_by_the_tree(void)
{
	struct ff_pathtree *t = ff_pathtree_new(count_free);
	struct ff_pathtree *u = ff_pathtree_new(NULL);
	struct ff_pathnode *root = ff_pathtree_root(t), *uroot = ff_pathtree_root(u);
	struct ff_pathnode *a = ff_pathtree_child(t, root, "a");
	struct ff_pathnode *b = ff_pathtree_child(u, uroot, "b");

	a->priv = g_new0(int, 1);
	b->priv = GSIZE_TO_POINTER(42);
	ff_pathtree_unref(t, a);
	ff_pathtree_unref(u, b);
	g_assert_cmpint(privs_freed, ==, 1);
	g_assert_null(ff_pathtree_find(u, uroot, "b"));
	ff_pathtree_unref(t, root);
	ff_pathtree_unref(u, uroot);
	ff_pathtree_free(t);
	ff_pathtree_free(u);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/pathtree/paths-follow-renames", test_paths_follow_renames);
	g_test_add_func("/pathtree/find-adds-nothing", test_find_adds_nothing);
	g_test_add_func("/pathtree/entries-hold-their-nodes", test_entries_hold_their_nodes);
	g_test_add_func("/pathtree/priv-freed-by-the-tree", test_priv_freed_by_the_tree);
	return g_test_run();
}
