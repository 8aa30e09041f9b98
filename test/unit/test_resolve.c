/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_resolve.c - unit tests of name resolution on the reference backend (mem://), without a
 * mount: the namespace tree and its virtual directories, entering referrals, crossing junctions
 * and the junction cache, junction loops, failover from an unreachable location to a replica and
 * the back-off that keeps a down location from being tried by every lookup, and the references
 * lookups count and forgets release (down to the mounts).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fedfuse/fedfuse.h"
#include "fedfuse/gateway.h"
#include "fedfuse/location.h"
#include "fedfuse/plugins.h"
#include "fedfuse/resolve.h"
#include "test/unit/fixture.h"

/* ---- the state under test --------------------------------------------------------------------- */

static struct ff_inode *root_inode(struct ff_state *s)
{
	return ff_itab_get(s->itab, FF_INO_ROOT);
}

/* Look `name` up in `parent`: 0 and the inode (one lookup counted), or -errno. */
static int lookup(struct ff_state *s, struct ff_inode *parent, const char *name,
		  struct ff_inode **inode, struct stat *st)
{
	struct fuse_entry_param e;
	struct ff_ctx c;
	int rc;

	ff_ctx_begin(&c, s, fx_cred);
	rc = ff_resolve_lookup(&c, parent, name, &e);
	ff_ctx_end(&c);

	*inode = rc == 0 ? ff_itab_get(s->itab, e.ino) : NULL;
	if (rc == 0) {
		g_assert_nonnull(*inode);
		g_assert_cmpuint(e.attr.st_ino, ==, e.ino);
		if (st)
			*st = e.attr;
	}
	return rc;
}

static void forget(struct ff_state *s, struct ff_inode *inode)
{
	ff_itab_forget(s->itab, inode->ino, 1);
}

static void junction_cache(struct ff_state *s, guint *hits, guint *misses)
{
	g_autoptr(GString) out = g_string_new(NULL);

	ff_jcache_describe(s->jcache, out);
	g_assert_cmpint(sscanf(out->str, "junction-cache hits=%u misses=%u", hits, misses), ==, 2);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_namespace_tree(void)
{
	struct ff_state *s = fx_state_new("[/a]\nlocations=mem://ns-a/a\n\n"
					  "[/virt/deep]\nlocations=mem://ns-deep/d\n");
	struct ff_inode *a, *virt, *deep, *again;
	struct stat st, dst;

	fx_make_file("mem://ns-a/a", "inside");
	g_assert_cmpint(lookup(s, root_inode(s), "a", &a, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
	g_assert_nonnull(a->mnt);
	/* a virtual directory on the way to a nested referral: no location of its own */
	g_assert_cmpint(lookup(s, root_inode(s), "virt", &virt, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
	g_assert_null(virt->mnt);
	g_assert_cmpint(lookup(s, virt, "deep", &deep, &dst), ==, 0);
	g_assert_nonnull(deep->mnt);
	g_assert_true(deep->mnt != a->mnt);
	g_assert_cmpuint(dst.st_dev, !=, 0);
	/* the same name gives the same inode, one more lookup counted */
	g_assert_cmpint(lookup(s, root_inode(s), "a", &again, NULL), ==, 0);
	g_assert_true(again == a);
	forget(s, again);
	g_assert_cmpint(lookup(s, root_inode(s), "missing", &again, NULL), ==, -ENOENT);
	g_assert_cmpint(lookup(s, virt, "missing", &again, NULL), ==, -ENOENT);
	/* and into the referral's location */
	g_assert_cmpint(lookup(s, a, "inside", &again, &st), ==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	g_assert_true(again->mnt == a->mnt);
	forget(s, again);
	forget(s, deep);
	forget(s, virt);
	forget(s, a);
	g_assert_cmpuint(ff_itab_count(s->itab), ==, 2); /* the root and the virtual directory */
	fx_state_free(s);
}

static void test_junction_crossing(void)
{
	struct ff_state *s = fx_state_new("[/h]\nlocations=mem://jc-holder/h\n");
	struct ff_inode *h, *j, *f, *again;
	struct stat st, hst;
	guint hits, misses;

	fx_make_dir("mem://jc-holder/h", "j", "mem://jc-target/t");
	fx_make_dir("mem://jc-holder/h", "plain", NULL);
	fx_make_file("mem://jc-target/t", "f");
	g_assert_cmpint(lookup(s, root_inode(s), "h", &h, &hst), ==, 0);

	/* the junction is entered: its entry is the target's root, on another mount */
	g_assert_cmpint(lookup(s, h, "j", &j, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
	g_assert_true(j->mnt != h->mnt);
	g_assert_cmpstr(j->mnt->loc.spec.uri, ==, "mem://jc-target/t");
	g_assert_cmpuint(st.st_dev, !=, hst.st_dev);
	g_assert_cmpint(lookup(s, j, "f", &f, &st), ==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	forget(s, f);
	junction_cache(s, &hits, &misses);
	g_assert_cmpuint(hits, ==, 0);

	/* crossed again once the kernel forgot it: from the cache, onto the same mount */
	forget(s, j);
	g_assert_cmpint(lookup(s, h, "j", &again, NULL), ==, 0);
	junction_cache(s, &hits, &misses);
	g_assert_cmpuint(hits, ==, 1);
	g_assert_cmpstr(again->mnt->loc.spec.uri, ==, "mem://jc-target/t");
	forget(s, again);

	/* a plain directory is no junction (and is cached as such) */
	g_assert_cmpint(lookup(s, h, "plain", &again, NULL), ==, 0);
	g_assert_true(again->mnt == h->mnt);
	forget(s, again);
	forget(s, h);
	fx_state_free(s);
}

static void test_junction_loop(void)
{
	struct ff_state *s = fx_state_new("[/l]\nlocations=mem://loop-a/x\n");
	struct ff_inode *l, *j, *back;

	/* loop-a/x/j -> loop-b/y, loop-b/y/k -> loop-a/x: the second crossing would loop */
	fx_make_dir("mem://loop-a/x", "j", "mem://loop-b/y");
	fx_make_dir("mem://loop-b/y", "k", "mem://loop-a/x");
	fx_make_dir("mem://loop-b/y", "self", "mem://loop-b/y");
	g_assert_cmpint(lookup(s, root_inode(s), "l", &l, NULL), ==, 0);
	g_assert_cmpint(lookup(s, l, "j", &j, NULL), ==, 0);
	g_assert_cmpint(lookup(s, j, "k", &back, NULL), ==, -ELOOP);
	g_assert_cmpint(lookup(s, j, "self", &back, NULL), ==, -ELOOP);
	forget(s, j);
	forget(s, l);
	fx_state_free(s);
}

static void test_failover_and_backoff(void)
{
	g_autofree char *gone = g_build_filename(fx_tmp(), "never-made", NULL);
	g_autofree char *ns = g_strdup_printf("[/r]\nlocations=file://%s;mem://replica/r\n", gone);
	struct ff_state *s = fx_state_new(ns);
	struct ff_inode *r, *again;
	struct ff_mount *down;
	gint64 retry_at, since;
	g_autoptr(GString) out = g_string_new(NULL);

	/* The first location is unreachable: the replica answers. */
	g_assert_cmpint(lookup(s, root_inode(s), "r", &r, NULL), ==, 0);
	g_assert_cmpstr(r->mnt->loc.spec.uri, ==, "mem://replica/r");
	ff_mounts_describe_locations(s->mounts, s->ns, out);
	g_assert_nonnull(strstr(out->str, "state=down"));
	g_assert_nonnull(strstr(out->str, "mem://replica/r\tstate=up"));
	g_assert_nonnull(strstr(out->str, "\tlocks=this-mount")); /* mem:// has no lock_fd */

	/* Within its back-off the down location is not tried again: its state stays as it was. */
	{
		const struct ff_referral *ref = s->ns->referrals->pdata[0];

		down = ff_mounts_get(s->mounts, ref->path, ref->locations->pdata[0],
				     ref->attr_timeout, NULL);
		ff_mount_unref(down); /* a referral's: the table keeps it */
	}
	g_assert_cmpint(down->state, ==, FF_MOUNT_DOWN);
	retry_at = down->retry_at;
	since = down->since;
	forget(s, r);
	g_assert_cmpint(lookup(s, root_inode(s), "r", &again, NULL), ==, 0);
	g_assert_cmpstr(again->mnt->loc.spec.uri, ==, "mem://replica/r");
	g_assert_cmpint(down->retry_at, ==, retry_at);
	g_assert_cmpint(down->since, ==, since);
	g_assert_cmpint(ff_mount_connect(down), ==, -EHOSTDOWN); /* at once, from memory */
	forget(s, again);
	fx_state_free(s);
}

/* Every lookup counted is released by its forget: inodes go, and with them the references they
 * hold on junction mounts, which are then freed. */
static void test_references(void)
{
	struct ff_state *s = fx_state_new("[/h]\nlocations=mem://refs-holder/h\n");
	struct ff_inode *h, *j;
	guint mounts;

	ff_mounts_set_linger(s->mounts, 0);
	for (int i = 0; i < 20; i++) {
		g_autofree char *name = g_strdup_printf("j%d", i);
		g_autofree char *target = g_strdup_printf("mem://refs-target/t%d", i);

		fx_make_dir("mem://refs-target/", name, NULL);
		fx_make_dir("mem://refs-holder/h", name, target);
	}
	g_assert_cmpint(lookup(s, root_inode(s), "h", &h, NULL), ==, 0);
	for (int i = 0; i < 20; i++) {
		g_autofree char *name = g_strdup_printf("j%d", i);

		g_assert_cmpint(lookup(s, h, name, &j, NULL), ==, 0);
		forget(s, j);
	}
	/* The holder's mount stays (a referral's); the junctions' go once unused. */
	for (int tries = 0; (mounts = ff_mounts_count(s->mounts)) > 1 && tries < 200; tries++)
		g_usleep(20000);
	g_assert_cmpuint(mounts, ==, 1);
	g_assert_cmpuint(ff_itab_count(s->itab), ==, 2); /* the root and h */
	forget(s, h);
	g_assert_cmpuint(ff_itab_count(s->itab), ==, 1);
	fx_state_free(s);
}

/* An inode found in one namespace keeps working after a reload: lookups in it follow the new
 * namespace, found by its path there. */
static void test_reload(void)
{
	struct ff_state *s = fx_state_new("[/virt/a]\nlocations=mem://reload/a\n");
	g_autofree char *file = g_build_filename(fx_tmp(), "namespace.conf", NULL);
	struct ff_inode *virt, *got;

	g_assert_cmpint(lookup(s, root_inode(s), "virt", &virt, NULL), ==, 0);
	g_assert_cmpint(lookup(s, virt, "a", &got, NULL), ==, 0);
	forget(s, got);
	g_assert_true(g_file_set_contents(file, "[/virt/b]\nlocations=mem://reload/b\n", -1, NULL));
	s->opts.namespace_file = g_steal_pointer(&file);
	g_assert_true(ff_state_reload(s));
	g_assert_cmpint(lookup(s, virt, "a", &got, NULL), ==, -ENOENT);
	g_assert_cmpint(lookup(s, virt, "b", &got, NULL), ==, 0);
	g_assert_cmpstr(got->mnt->loc.spec.uri, ==, "mem://reload/b");
	forget(s, got);
	/* a path the new namespace does not have is no namespace directory any more */
	g_assert_true(g_file_set_contents(s->opts.namespace_file,
					  "[/other]\nlocations=mem://reload/o\n", -1, NULL));
	g_assert_true(ff_state_reload(s));
	g_assert_cmpint(lookup(s, virt, "b", &got, NULL), ==, -ENOENT);
	forget(s, virt);
	g_free(s->opts.namespace_file);
	fx_state_free(s);
}

int main(int argc, char **argv)
{
	fx_init(&argc, &argv, "resolve", true);
	g_test_add_func("/resolve/namespace-tree", test_namespace_tree);
	g_test_add_func("/resolve/junction-crossing", test_junction_crossing);
	g_test_add_func("/resolve/junction-loop", test_junction_loop);
	g_test_add_func("/resolve/failover-and-backoff", test_failover_and_backoff);
	g_test_add_func("/resolve/references", test_references);
	g_test_add_func("/resolve/reload", test_reload);
	return fx_finish(g_test_run());
}
