/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fixture.c - the shared set-up of the unit tests that run the core on the reference backend
 * (fixture.h).
 */
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "fedfuse/gateway.h"
#include "fedfuse/location.h"
#include "fedfuse/plugins.h"
#include "test/unit/fixture.h"

static const struct ff_cred root_cred = { .uid = 0, .gid = 0, .umask = 022 };
const struct ff_cred *const fx_cred = &root_cred;
static char *tmp;
static struct ff_mounts *setup;

void fx_init(int *argc, char ***argv, const char *name, bool local)
{
	const char *builddir = g_getenv("FEDFUSE_BUILDDIR");
	g_autofree char *dirs = NULL, *tmpl = g_strdup_printf("%s-XXXXXX", name);

	g_test_init(argc, argv, NULL);
	if (!builddir)
		builddir = ".";
	dirs = local ? g_strdup_printf("%1$s/backends/mem/.libs:%1$s/backends/local/.libs",
				       builddir)
		     : g_strdup_printf("%s/backends/mem/.libs", builddir);
	g_setenv("FEDFUSE_BACKEND_DIR", dirs, TRUE);
	tmp = g_dir_make_tmp(tmpl, NULL);
	g_assert_nonnull(tmp);
	setup = ff_mounts_new();
}

const char *fx_tmp(void)
{
	return tmp;
}

int fx_finish(int rc)
{
	g_autofree char *file = g_build_filename(tmp, "namespace.conf", NULL);

	ff_mounts_free(setup);
	g_unlink(file);
	g_rmdir(tmp);
	g_free(tmp);
	return rc;
}

struct ff_mount *fx_setup_mount(const char *uri, ff_node **root)
{
	struct ff_location loc;
	g_autofree char *msg = NULL;
	struct ff_mount *m;
	struct stat st;

	g_assert_true(ff_location_parse(uri, &loc, &msg));
	m = ff_mounts_get(setup, "/setup", &loc, 1.0, NULL);
	ff_location_clear(&loc);
	g_assert_cmpint(ff_mount_connect(m), ==, 0);
	g_assert_cmpint(ff_gw_root(m, fx_cred, root, &st), ==, 0);
	ff_mount_unref(m); /* the table keeps a referral's mount */
	return m;
}

void fx_make_dir(const char *uri, const char *name, const char *target)
{
	ff_node *root, *dir;
	struct ff_mount *m = fx_setup_mount(uri, &root);
	struct stat st;

	g_assert_cmpint(ff_gw_mkdir(m, fx_cred, root, name, 0755, &dir, &st), ==, 0);
	if (target)
		g_assert_cmpint(ff_gw_setxattr(m, fx_cred, dir, "user.fedfuse.locations", target,
					       strlen(target), 0),
				==, 0);
	ff_gw_forget(m, dir);
	ff_gw_forget(m, root);
}

void fx_make_file(const char *uri, const char *name)
{
	ff_node *root, *node;
	struct ff_mount *m = fx_setup_mount(uri, &root);
	struct stat st;
	ff_fh *fh;

	g_assert_cmpint(ff_gw_create(m, fx_cred, root, name, 0644, O_RDWR | O_CREAT | O_EXCL, &node,
				     &st, &fh),
			==, 0);
	g_assert_cmpint(ff_gw_release(m, fh), ==, 0);
	ff_gw_forget(m, node);
	ff_gw_forget(m, root);
}

void fx_unlink_file(const char *uri, const char *name)
{
	ff_node *root;
	struct ff_mount *m = fx_setup_mount(uri, &root);

	g_assert_cmpint(ff_gw_unlink(m, fx_cred, root, name), ==, 0);
	ff_gw_forget(m, root);
}

struct ff_state *fx_state_new(const char *ns_text)
{
	struct ff_state *s = g_new0(struct ff_state, 1);
	g_autofree char *file = g_build_filename(tmp, "namespace.conf", NULL);
	g_autoptr(GError) err = NULL;

	g_assert_true(g_file_set_contents(file, ns_text, -1, NULL));
	s->ns = ff_namespace_load(file, ff_plugin_check_location, NULL, &err);
	g_assert_no_error(err);
	ff_state_init(s);
	s->mounts = ff_mounts_new();
	return s;
}

void fx_state_free(struct ff_state *s)
{
	ff_state_clear(s);
	g_free(s);
}
