/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_dir.c - unit tests of directory listings on the reference backend, without a mount:
 * namespace directories list their referrals and virtual directories (never the control
 * directory), a nested referral hides what its location has at that name, a listing read in
 * small pieces gives every entry once, it is a snapshot until it is rewound, and readdirplus
 * entries come with attributes and a counted lookup.
 *
 * ff_dir_read() answers a FUSE request; here the request is the test's, and the two reply
 * functions it calls are defined below to keep the answer (fuse_add_direntry*() are libfuse's).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/fuse.h>
#include <string.h>

#include "fedfuse/dir.h"
#include "fedfuse/gateway.h"
#include "fedfuse/location.h"
#include "fedfuse/plugins.h"
#include "test/unit/fixture.h"

struct fuse_req {
	int err;
	char *buf; /* the answer, g_malloc'd */
	size_t size;
};

int fuse_reply_err(fuse_req_t req, int err)
{
	req->err = err;
	return 0;
}

int fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	req->buf = g_memdup2(buf, size);
	req->size = size;
	return 0;
}

static struct ff_inode *lookup(struct ff_state *s, struct ff_inode *parent, const char *name)
{
	struct fuse_entry_param e;
	struct ff_ctx c;

	ff_ctx_begin(&c, s, fx_cred);
	g_assert_cmpint(ff_resolve_lookup(&c, parent, name, &e), ==, 0);
	ff_ctx_end(&c);
	return ff_itab_get(s->itab, e.ino);
}

static int dir_open(struct ff_state *s, struct ff_inode *inode, struct ff_dir **dir)
{
	struct ff_ctx c;
	int rc;

	ff_ctx_begin(&c, s, fx_cred);
	rc = ff_dir_open(&c, inode, dir);
	ff_ctx_end(&c);
	return rc;
}

/* ---- reading listings ------------------------------------------------------------------------- */

struct listed {
	GPtrArray *names;
	off_t next;	 /* the offset to go on from */
	GArray *nodeids; /* readdirplus: the inode numbers given (0: no lookup counted) */
};

/* One readdir(plus) of at most `size` bytes from `off`: its entries appended to *l; how many. */
static guint read_once(struct ff_state *s, struct ff_dir *dir, size_t size, off_t off, bool plus,
		       struct listed *l)
{
	struct fuse_req req = { 0 };
	struct ff_ctx c;
	size_t pos = 0;
	guint n = 0;

	ff_ctx_begin(&c, s, fx_cred);
	ff_dir_read(&c, &req, dir, size, off, plus);
	ff_ctx_end(&c);
	g_assert_cmpint(req.err, ==, 0);
	while (pos < req.size) {
		const struct fuse_dirent *d;

		if (plus) {
			const struct fuse_direntplus *dp = (const void *)(req.buf + pos);

			d = &dp->dirent;
			g_array_append_val(l->nodeids, dp->entry_out.nodeid);
			if (dp->entry_out.nodeid)
				g_assert_cmpuint(dp->entry_out.attr.ino, ==, dp->entry_out.nodeid);
			pos += FUSE_DIRENTPLUS_SIZE(dp);
		} else {
			d = (const void *)(req.buf + pos);
			pos += FUSE_DIRENT_SIZE(d);
		}
		g_ptr_array_add(l->names, g_strndup(d->name, d->namelen));
		l->next = d->off;
		n++;
	}
	g_free(req.buf);
	return n;
}

/* The whole listing, in reads of `size` bytes. */
static void read_all(struct ff_state *s, struct ff_dir *dir, size_t size, bool plus,
		     struct listed *l)
{
	l->next = 0;
	while (read_once(s, dir, size, l->next, plus, l))
		;
}

static struct listed *listed_new(void)
{
	struct listed *l = g_new0(struct listed, 1);

	l->names = g_ptr_array_new_with_free_func(g_free);
	l->nodeids = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	return l;
}

static void listed_free(struct listed *l)
{
	g_ptr_array_free(l->names, TRUE);
	g_array_free(l->nodeids, TRUE);
	g_free(l);
}

static int cmp_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names, sorted and joined by spaces: each once, or the test fails. */
static char *sorted_names(struct listed *l)
{
	GString *out = g_string_new(NULL);

	g_ptr_array_sort(l->names, cmp_names);
	for (guint i = 0; i < l->names->len; i++) {
		const char *name = l->names->pdata[i];

		if (i)
			g_assert_cmpstr(l->names->pdata[i - 1], !=, name); /* no entry twice */
		g_string_append_printf(out, "%s%s", i ? " " : "", name);
	}
	return g_string_free(out, FALSE);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_namespace_listing(void)
{
	struct ff_state *s = fx_state_new("[/a]\nlocations=mem://dl-ns/a\n\n"
					  "[/virt/deep]\nlocations=mem://dl-ns/deep\n");
	struct ff_inode *root = ff_itab_get(s->itab, FF_INO_ROOT);
	struct listed *l = listed_new();
	g_autofree char *names = NULL;
	struct ff_dir *dir;

	g_assert_cmpint(dir_open(s, root, &dir), ==, 0);
	read_all(s, dir, 4096, false, l);
	ff_dir_release(s, dir);
	names = sorted_names(l);
	g_assert_cmpstr(names, ==, ". .. a virt"); /* not .fedfuse */
	listed_free(l);
	fx_state_free(s);
}

static void test_nested_referral_hides(void)
{
	struct ff_state *s = fx_state_new("[/a]\nlocations=mem://dl-hide/a\n\n"
					  "[/a/nested]\nlocations=mem://dl-hide/n\n");
	struct listed *l = listed_new();
	g_autofree char *names = NULL;
	struct ff_inode *a;
	struct ff_dir *dir;

	fx_make_dir("mem://dl-hide/a", "nested", NULL); /* covered by the nested referral */
	fx_make_file("mem://dl-hide/a", "x");
	a = lookup(s, ff_itab_get(s->itab, FF_INO_ROOT), "a");
	g_assert_cmpint(dir_open(s, a, &dir), ==, 0);
	read_all(s, dir, 4096, false, l);
	ff_dir_release(s, dir);
	names = sorted_names(l);
	g_assert_cmpstr(names, ==, ". .. nested x");
	ff_itab_forget(s->itab, a->ino, 1);
	listed_free(l);
	fx_state_free(s);
}

static void test_pieces_and_snapshot(void)
{
	struct ff_state *s = fx_state_new("[/d]\nlocations=mem://dl-snap/d\n");
	struct listed *l = listed_new(), *again = listed_new();
	g_autofree char *expected = NULL, *names = NULL, *rewound = NULL;
	GString *want = g_string_new(". ..");
	struct ff_inode *d;
	struct ff_dir *dir;

	for (int i = 0; i < 40; i++) {
		g_autofree char *name = g_strdup_printf("file-with-a-longish-name-%02d", i);

		fx_make_file("mem://dl-snap/d", name);
		g_string_append_printf(want, " %s", name);
	}
	expected = g_string_free(want, FALSE);
	d = lookup(s, ff_itab_get(s->itab, FF_INO_ROOT), "d");
	g_assert_cmpint(dir_open(s, d, &dir), ==, 0);

	/* a few entries per read; in between, one name goes and one comes: the open listing is
	 * the snapshot it took */
	g_assert_cmpuint(read_once(s, dir, 200, 0, false, l), >, 0);
	fx_unlink_file("mem://dl-snap/d", "file-with-a-longish-name-39");
	fx_make_file("mem://dl-snap/d", "new");
	while (read_once(s, dir, 200, l->next, false, l))
		;
	names = sorted_names(l);
	g_assert_cmpstr(names, ==, expected);

	/* rewound (offset 0), it is read again */
	read_all(s, dir, 200, false, again);
	rewound = sorted_names(again);
	g_assert_nonnull(strstr(rewound, " new"));
	g_assert_null(strstr(rewound, "name-39"));
	ff_dir_release(s, dir);
	ff_itab_forget(s->itab, d->ino, 1);
	listed_free(l);
	listed_free(again);
	fx_state_free(s);
}

static void test_plus(void)
{
	struct ff_state *s = fx_state_new("[/p]\nlocations=mem://dl-plus/p\n");
	struct listed *l = listed_new();
	struct ff_inode *p;
	struct ff_dir *dir;
	size_t before;
	guint counted = 0;

	fx_make_file("mem://dl-plus/p", "f1");
	fx_make_file("mem://dl-plus/p", "f2");
	fx_make_dir("mem://dl-plus/p", "sub", NULL);
	p = lookup(s, ff_itab_get(s->itab, FF_INO_ROOT), "p");
	before = ff_itab_count(s->itab);
	g_assert_cmpint(dir_open(s, p, &dir), ==, 0);
	read_all(s, dir, 4096, true, l);
	ff_dir_release(s, dir);
	/* every backend entry came with attributes and one lookup the kernel now holds */
	for (guint i = 0; i < l->names->len; i++) {
		const char *name = l->names->pdata[i];
		uint64_t nodeid = g_array_index(l->nodeids, uint64_t, i);

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		g_assert_cmpuint(nodeid, !=, 0);
		ff_itab_forget(s->itab, nodeid, 1);
		counted++;
	}
	g_assert_cmpuint(counted, ==, 3);
	g_assert_cmpuint(ff_itab_count(s->itab), ==, before);
	ff_itab_forget(s->itab, p->ino, 1);
	listed_free(l);
	fx_state_free(s);
}

int main(int argc, char **argv)
{
	fx_init(&argc, &argv, "dir", false);
	g_test_add_func("/dir/namespace-listing", test_namespace_listing);
	g_test_add_func("/dir/nested-referral-hides", test_nested_referral_hides);
	g_test_add_func("/dir/pieces-and-snapshot", test_pieces_and_snapshot);
	g_test_add_func("/dir/plus", test_plus);
	return fx_finish(g_test_run());
}
