/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_inode.c - unit tests of the inode table: stable numbers, lookup counting, collisions,
 * virtual inodes and release.
 */
#include <glib.h>

#include "fedfuse/inode.h"

struct released {
	int count;
	ff_node *last;
};

static void on_release(struct ff_inode *inode, void *data)
{
	struct released *r = data;

	r->count++;
	r->last = inode->bnode;
}

#define NODE(n) ((ff_node *)(uintptr_t)(n))

static void test_stable_numbers(void)
{
	struct released r = { 0 };
	struct ff_itab *itab = ff_itab_new(on_release, &r);
	struct ff_inode *a, *b;
	bool created;
	uint64_t first;

	a = ff_itab_intern(itab, NULL, 3, 10, 1234, NODE(1), S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_cmpuint(a->ino, ==, (UINT64_C(3) << 48) | 1234);
	g_assert_cmpuint(ff_itab_predict(itab, NULL, 3, 10, 1234), ==, a->ino);
	first = a->ino;

	/* The same object again: same inode, one more lookup, the caller keeps its node. */
	b = ff_itab_intern(itab, NULL, 3, 10, 1234, NODE(2), S_IFREG, false, &created);
	g_assert_false(created);
	g_assert_true(a == b);
	g_assert_true(b->bnode == NODE(1));
	g_assert_cmpuint(b->nlookup, ==, 2);

	/* Forgotten entirely, then seen again: the same number. */
	ff_itab_forget(itab, first, 2);
	g_assert_cmpint(r.count, ==, 1);
	g_assert_true(r.last == NODE(1));
	g_assert_null(ff_itab_get(itab, first));
	a = ff_itab_intern(itab, NULL, 3, 10, 1234, NODE(3), S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_cmpuint(a->ino, ==, first);
	ff_itab_free(itab);
	g_assert_cmpint(r.count, ==, 2);
}

static void test_partial_forget(void)
{
	struct released r = { 0 };
	struct ff_itab *itab = ff_itab_new(on_release, &r);
	struct ff_inode *a;
	bool created;

	a = ff_itab_intern(itab, NULL, 1, 1, 5, NODE(1), S_IFDIR, false, &created);
	ff_itab_ref(itab, a);
	ff_itab_ref(itab, a);
	g_assert_cmpuint(a->nlookup, ==, 3);
	ff_itab_forget(itab, a->ino, 2);
	g_assert_cmpint(r.count, ==, 0);
	g_assert_true(ff_itab_get(itab, a->ino) == a);
	g_assert_true(ff_itab_find(itab, NULL, 1, 1, 5) == a);
	/* More than counted is clamped: gone, released once. */
	ff_itab_forget(itab, a->ino, 10);
	g_assert_cmpint(r.count, ==, 1);
	g_assert_null(ff_itab_find(itab, NULL, 1, 1, 5));
	/* Unknown numbers are ignored. */
	ff_itab_forget(itab, 999, 1);
	g_assert_cmpuint(ff_itab_count(itab), ==, 0);
	ff_itab_free(itab);
}

/* A directory of a path-named backend has one name: the same identity with another node is
 * another directory that was given a removed one's number. The old inode is retired (found by
 * number only), the new object gets its own; a file's second node is a hard link. */
static void test_one_node(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *a, *b, *c;
	bool created;

	a = ff_itab_intern(itab, NULL, 1, 1, 42, NODE(1), S_IFDIR, true, &created);
	g_assert_true(created);
	b = ff_itab_intern(itab, NULL, 1, 1, 42, NODE(1), S_IFDIR, true, &created);
	g_assert_false(created); /* the same node: the same directory */
	g_assert_true(a == b);
	c = ff_itab_intern(itab, NULL, 1, 1, 42, NODE(2), S_IFDIR, true, &created);
	g_assert_true(created);
	g_assert_true(c != a && c->ino != a->ino);
	g_assert_true(ff_itab_get(itab, a->ino) == a);
	g_assert_true(ff_itab_find(itab, NULL, 1, 1, 42) == c);
	b = ff_itab_intern(itab, NULL, 1, 1, 43, NODE(3), S_IFREG, false, &created);
	c = ff_itab_intern(itab, NULL, 1, 1, 43, NODE(4), S_IFREG, false, &created);
	g_assert_false(created);
	g_assert_true(b == c);
	ff_itab_free(itab);
}

static void test_collisions(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *a, *b, *c;
	bool created;

	/* Same backend inode on two devices of one location: distinct inodes. */
	a = ff_itab_intern(itab, NULL, 2, 1, 77, NODE(1), S_IFREG, false, &created);
	b = ff_itab_intern(itab, NULL, 2, 2, 77, NODE(2), S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_cmpuint(a->ino, !=, b->ino);
	g_assert_cmpuint(b->ino >> 48, ==, 0xffff);
	/* Same backend inode in two locations: distinct by construction. */
	c = ff_itab_intern(itab, NULL, 4, 1, 77, NODE(3), S_IFREG, false, &created);
	g_assert_cmpuint(c->ino, ==, (UINT64_C(4) << 48) | 77);
	/* A backend inode number too large for 48 bits, and inode 0, get counter numbers. */
	a = ff_itab_intern(itab, NULL, 2, 1, UINT64_C(1) << 50, NODE(4), S_IFREG, false, &created);
	b = ff_itab_intern(itab, NULL, 2, 1, 0, NODE(5), S_IFREG, false, &created);
	g_assert_cmpuint(a->ino >> 48, ==, 0xffff);
	g_assert_cmpuint(b->ino >> 48, ==, 0xffff);
	g_assert_cmpuint(a->ino, !=, b->ino);
	g_assert_cmpuint(ff_itab_count(itab), ==, 5);
	ff_itab_free(itab);
}

/* An object that could not have its composed number keeps its counter number, and is found
 * by its identity, while the object that took the number comes and goes. */
static void test_number_reuse(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *x, *y, *f;
	uint64_t composed = (UINT64_C(2) << 48) | 77, counted;
	bool created;

	x = ff_itab_intern(itab, NULL, 2, 1, 77, NODE(1), S_IFREG, false, &created);
	y = ff_itab_intern(itab, NULL, 2, 2, 77, NODE(2), S_IFREG, false, &created);
	g_assert_cmpuint(x->ino, ==, composed);
	counted = y->ino;
	g_assert_cmpuint(counted, !=, composed);
	g_assert_true(ff_itab_find(itab, NULL, 2, 1, 77) == x);
	g_assert_true(ff_itab_find(itab, NULL, 2, 2, 77) == y);
	g_assert_cmpuint(ff_itab_find_number(itab, NULL, 2, 2, 77), ==, counted);
	g_assert_cmpuint(ff_itab_predict(itab, NULL, 2, 2, 77), ==, counted);

	/* x goes: y keeps its number and is still found; x's number is free */
	ff_itab_forget(itab, composed, 1);
	g_assert_null(ff_itab_find(itab, NULL, 2, 1, 77));
	g_assert_cmpuint(ff_itab_find_number(itab, NULL, 2, 1, 77), ==, 0);
	f = ff_itab_find_ref(itab, NULL, 2, 2, 77);
	g_assert_true(f == y);
	g_assert_cmpuint(y->nlookup, ==, 2);
	g_assert_cmpuint(ff_itab_predict(itab, NULL, 2, 1, 77), ==, composed);

	/* y seen again (as it is): the same inode, not a new one at the free composed number */
	f = ff_itab_intern(itab, NULL, 2, 2, 77, NODE(3), S_IFREG, false, &created);
	g_assert_false(created);
	g_assert_true(f == y);
	/* x back: its composed number again */
	x = ff_itab_intern(itab, NULL, 2, 1, 77, NODE(4), S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_cmpuint(x->ino, ==, composed);

	/* y goes entirely: found no more, and the number it had is free */
	ff_itab_forget(itab, counted, 3);
	g_assert_null(ff_itab_find(itab, NULL, 2, 2, 77));
	g_assert_null(ff_itab_get(itab, counted));
	g_assert_true(ff_itab_find(itab, NULL, 2, 1, 77) == x);
	g_assert_cmpuint(ff_itab_count(itab), ==, 1);
	ff_itab_free(itab);
}

/* A backend that gives a removed object's identity to a new one (NFS and SMB servers reuse file
 * ids): a removed directory's record, or one of another type, is never revived. The old record
 * keeps its number for the kernel; lookups find the new object under a number of its own. */
static void test_identity_reused(void)
{
	struct released r = { 0 };
	struct ff_itab *itab = ff_itab_new(on_release, &r);
	struct ff_inode *dir, *file, *again, *dir2;
	bool created;
	uint64_t dir_ino;

	dir = ff_itab_intern(itab, NULL, 2, 7, 500, NODE(1), S_IFDIR, false, &created);
	g_assert_true(created);
	dir_ino = dir->ino;
	/* removed through the mount while the kernel still holds it */
	g_mutex_lock(&dir->lock);
	ff_inode_gone(dir)->removed = true;
	g_mutex_unlock(&dir->lock);

	/* a new file with the same identity: a new record, another number */
	file = ff_itab_intern(itab, NULL, 2, 7, 500, NODE(2), S_IFREG, false, &created);
	g_assert_true(created);
	g_assert_true(file != dir);
	g_assert_cmpuint(file->ino, !=, dir_ino);
	g_assert_null(file->gone);
	g_assert_true(ff_itab_get(itab, dir_ino) == dir);
	g_assert_true(ff_itab_find(itab, NULL, 2, 7, 500) == file);
	g_assert_cmpuint(ff_itab_find_number(itab, NULL, 2, 7, 500), ==, file->ino);
	g_assert_cmpuint(ff_itab_predict(itab, NULL, 2, 7, 500), ==, file->ino);

	/* the kernel forgets the old one: the new one stays found */
	ff_itab_forget(itab, dir_ino, 1);
	g_assert_cmpint(r.count, ==, 1);
	g_assert_null(ff_itab_get(itab, dir_ino));
	g_assert_true(ff_itab_find(itab, NULL, 2, 7, 500) == file);

	/* the same file again: the same record */
	again = ff_itab_intern(itab, NULL, 2, 7, 500, NODE(3), S_IFREG, false, &created);
	g_assert_false(created);
	g_assert_true(again == file);

	/* the identity becomes a directory: the file's record is retired too, even unremoved */
	dir2 = ff_itab_intern(itab, NULL, 2, 7, 500, NODE(4), S_IFDIR, false, &created);
	g_assert_true(created);
	g_assert_true(dir2 != file);
	g_assert_true(ff_itab_find(itab, NULL, 2, 7, 500) == dir2);
	ff_itab_forget(itab, file->ino, 2);
	g_assert_true(ff_itab_find(itab, NULL, 2, 7, 500) == dir2);
	g_assert_cmpuint(ff_itab_count(itab), ==, 1);
	ff_itab_free(itab);
}

static void test_virtual(void)
{
	struct released r = { 0 };
	struct ff_itab *itab = ff_itab_new(on_release, &r);
	struct ff_inode *root, *v1, *v2, *v3;

	root = ff_itab_intern_virtual(itab, FF_INO_ROOT, "/");
	g_assert_cmpuint(root->ino, ==, FF_INO_ROOT);
	v1 = ff_itab_intern_virtual(itab, 0, "/corp");
	v2 = ff_itab_intern_virtual(itab, 0, "/corp/eu");
	g_assert_cmpuint(v1->ino, >=, FF_INO_VIRTUAL_FIRST);
	g_assert_cmpuint(v1->ino, !=, v2->ino);
	/* Pinned: forgetting never releases, and the path keeps its number. */
	ff_itab_forget(itab, v1->ino, 100);
	g_assert_true(ff_itab_get(itab, v1->ino) == v1);
	v3 = ff_itab_intern_virtual(itab, 0, "/corp");
	g_assert_true(v3 == v1);
	g_assert_cmpint(r.count, ==, 0);
	ff_itab_free(itab);
	g_assert_cmpint(r.count, ==, 3);
}

/* Many threads interning and forgetting the same objects: counts stay exact. */
#define THREADS 4
#define ROUNDS 20000

static gpointer hammer(gpointer data)
{
	struct ff_itab *itab = data;
	bool created;

	for (int i = 0; i < ROUNDS; i++) {
		struct ff_inode *in = ff_itab_intern(itab, NULL, 1, 1, 1 + i % 50, NODE(1), S_IFREG,
						     false, &created);

		ff_itab_forget(itab, in->ino, 1);
	}
	return NULL;
}

static void test_threads(void)
{
	struct released r = { 0 };
	struct ff_itab *itab = ff_itab_new(on_release, &r);
	GThread *t[THREADS];

	for (int i = 0; i < THREADS; i++)
		t[i] = g_thread_new("hammer", hammer, itab);
	for (int i = 0; i < THREADS; i++)
		g_thread_join(t[i]);
	g_assert_cmpuint(ff_itab_count(itab), ==, 0);
	ff_itab_free(itab);
}

int main(int argc, char *argv[])
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/inode/stable-numbers", test_stable_numbers);
	g_test_add_func("/inode/partial-forget", test_partial_forget);
	g_test_add_func("/inode/collisions", test_collisions);
	g_test_add_func("/inode/one-node", test_one_node);
	g_test_add_func("/inode/number-reuse", test_number_reuse);
	g_test_add_func("/inode/identity-reused", test_identity_reused);
	g_test_add_func("/inode/virtual", test_virtual);
	g_test_add_func("/inode/threads", test_threads);
	return g_test_run();
}
