/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_gateway.c - unit tests of the gateway to the backends: what a backend leaves out gets
 * the documented default, a backend without a required operation is refused, calls are timed
 * and counted (errors too), and a location that is down is not called at all.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "fedfuse/gateway.h"
#include "fedfuse/metrics.h"

static int calls;

static int fake_mount(const struct ff_location_spec *spec, const struct ff_notify *notify,
		      void **loc, char **msg)
{
	return 0;
}

static void fake_unmount(void *loc)
{
}

static int fake_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	calls++;
	return 0;
}

static int fake_lookup(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		       ff_node **node, struct stat *st)
{
	calls++;
	return strcmp(name, "here") == 0 ? 0 : -ENOENT;
}

static void fake_forget(void *loc, ff_node *node)
{
}

static int fake_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
			struct stat *st)
{
	calls++;
	return 0;
}

static int fake_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh)
{
	return 0;
}

static ssize_t fake_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off)
{
	calls++;
	return (ssize_t)size;
}

static int fake_release(void *loc, ff_fh *fh)
{
	return 0;
}

static int fake_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh)
{
	return 0;
}

static int fake_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
			bool plus, ff_fill_fn fill, void *buf)
{
	return 0;
}

static int fake_releasedir(void *loc, ff_dh *dh)
{
	return 0;
}

/* The operations the core cannot do without, and nothing else. */
/* A descriptor numbered like an errno of a lost connection (a daemon with 110 files open). */
static int fake_lock_fd(void *loc, ff_node *node)
{
	return ETIMEDOUT;
}

static const struct ff_backend_ops minimal_ops = {
	.mount = fake_mount,
	.unmount = fake_unmount,
	.root = fake_root,
	.lookup = fake_lookup,
	.forget = fake_forget,
	.getattr = fake_getattr,
	.open = fake_open,
	.read = fake_read,
	.release = fake_release,
	.opendir = fake_opendir,
	.readdir = fake_readdir,
	.releasedir = fake_releasedir,
};

static void test_defaults(void)
{
	const char *missing = "unset";
	const struct ff_backend_ops *o =
		ff_gw_complete_ops(&minimal_ops, FF_BACKEND_ABI_MINOR, &missing);
	struct ff_location_spec spec = { .write_behind = -1, .read_ahead = -1 };
	char buf[8];

	g_assert_nonnull(o);
	g_assert_null(missing);
	g_assert_true(o->lookup == fake_lookup); /* what it has stays */
	/* one errno per thing left out, as gateway.h documents */
	g_assert_cmpint(o->setattr(NULL, NULL, NULL, NULL, NULL, FF_SET_MODE, NULL), ==, -EPERM);
	g_assert_cmpint(o->readlink(NULL, NULL, NULL, buf, sizeof(buf)), ==, -EINVAL);
	g_assert_cmpint(o->mknod(NULL, NULL, NULL, "x", S_IFIFO, 0, NULL, NULL), ==, -EPERM);
	g_assert_cmpint(o->mkdir(NULL, NULL, NULL, "x", 0755, NULL, NULL), ==, -EPERM);
	g_assert_cmpint(o->symlink(NULL, NULL, "t", NULL, "x", NULL, NULL), ==, -EPERM);
	g_assert_cmpint(o->link(NULL, NULL, NULL, NULL, "x", NULL), ==, -EPERM);
	g_assert_cmpint(o->unlink(NULL, NULL, NULL, "x"), ==, -EPERM);
	g_assert_cmpint(o->rmdir(NULL, NULL, NULL, "x"), ==, -EPERM);
	g_assert_cmpint(o->rename(NULL, NULL, NULL, "x", NULL, "y", 0), ==, -EPERM);
	g_assert_cmpint(o->create(NULL, NULL, NULL, "x", 0644, O_CREAT, NULL, NULL, NULL), ==,
			-ENOSYS);
	g_assert_cmpint(o->write(NULL, NULL, NULL, buf, 1, 0), ==, -EROFS);
	g_assert_cmpint(o->flush(NULL, NULL), ==, -ENOSYS);
	g_assert_cmpint(o->fsync(NULL, NULL, 0), ==, -ENOSYS);
	g_assert_cmpint(o->fsyncdir(NULL, NULL, 0), ==, -ENOSYS);
	g_assert_cmpint(o->fallocate(NULL, NULL, NULL, 0, 0, 1), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->lseek(NULL, NULL, 0, SEEK_DATA), ==, -ENOSYS);
	g_assert_cmpint(o->copy_file_range(NULL, NULL, NULL, 0, NULL, 0, 1, 0), ==, -EXDEV);
	g_assert_cmpint(o->lock_fd(NULL, NULL), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->statfs(NULL, NULL, NULL, NULL), ==, -ENOSYS);
	g_assert_cmpint(o->getxattr(NULL, NULL, NULL, "user.x", buf, sizeof(buf)), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->listxattr(NULL, NULL, NULL, buf, sizeof(buf)), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->setxattr(NULL, NULL, NULL, "user.x", "v", 1, 0), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->removexattr(NULL, NULL, NULL, "user.x"), ==, -EOPNOTSUPP);
	g_assert_cmpint(o->handle_fd(NULL, NULL), ==, -1);
	g_assert_false(o->watched(NULL));
	g_assert_cmpint(o->check(&spec, NULL), ==, 0);
	g_assert_cmpint(o->server_port(&spec, NULL), ==, 0); /* no server */
	g_assert_cmpint(o->write_behind_bytes(NULL), ==, 0);
	g_assert_cmpint(o->read_held(NULL, NULL, 1, 0, NULL, NULL), ==, -EAGAIN); /* read() then */
	g_free((gpointer)o);
}

static void fake_attach(const struct ff_host *host)
{
}

static int fake_server_port(const struct ff_location_spec *spec, char **msg)
{
	return 1234;
}

static const char held_data[] = "held";

static ssize_t fake_read_held(void *loc, ff_fh *fh, size_t size, off_t off, const void **data,
			      void **ref)
{
	*data = held_data;
	return 4;
}

static void fake_read_done(void *loc, ff_fh *fh, void *ref)
{
}

/* A module built for an older ABI minor has a shorter ops table: what it lacks is never read
 * (here it holds what a newer module would, and must be ignored), and gets the default. */
static void test_older_minor(void)
{
	struct ff_backend_ops ops = minimal_ops;
	struct ff_location_spec spec = { .write_behind = -1, .read_ahead = -1 };
	const struct ff_backend_ops *o;
	const char *missing = NULL;

	ops.attach = fake_attach;
	ops.server_port = fake_server_port;
	o = ff_gw_complete_ops(&ops, 0, &missing);
	g_assert_null(o->attach);
	g_assert_cmpint(o->server_port(&spec, NULL), ==, 0);
	g_free((gpointer)o);
	o = ff_gw_complete_ops(&ops, 2, &missing);
	g_assert_true(o->attach == fake_attach);
	g_assert_cmpint(o->server_port(&spec, NULL), ==, 0);
	g_free((gpointer)o);
	o = ff_gw_complete_ops(&ops, 3, &missing);
	g_assert_cmpint(o->server_port(&spec, NULL), ==, 1234);
	g_free((gpointer)o);
	/* read-ahead came with minor 8; half of the pair is none */
	ops.read_held = fake_read_held;
	ops.read_done = fake_read_done;
	o = ff_gw_complete_ops(&ops, 7, &missing);
	g_assert_cmpint(o->read_held(NULL, NULL, 1, 0, NULL, NULL), ==, -EAGAIN);
	g_free((gpointer)o);
	o = ff_gw_complete_ops(&ops, 8, &missing);
	g_assert_true(o->read_held == fake_read_held && o->read_done == fake_read_done);
	g_free((gpointer)o);
	ops.read_done = NULL;
	o = ff_gw_complete_ops(&ops, 8, &missing);
	g_assert_cmpint(o->read_held(NULL, NULL, 1, 0, NULL, NULL), ==, -EAGAIN);
	g_free((gpointer)o);
}

static void test_required(void)
{
	struct ff_backend_ops ops = minimal_ops;
	const char *missing = NULL;

	ops.readdir = NULL;
	g_assert_null(ff_gw_complete_ops(&ops, FF_BACKEND_ABI_MINOR, &missing));
	g_assert_cmpstr(missing, ==, "readdir");
	ops = minimal_ops;
	ops.lookup = NULL;
	g_assert_null(ff_gw_complete_ops(&ops, FF_BACKEND_ABI_MINOR, &missing));
	g_assert_cmpstr(missing, ==, "lookup");
}

/* What the operations above show in /.fedfuse/metrics. */
static void check_metrics(struct ff_mount *m)
{
	struct ff_metrics_location loc = { "/r", "fake:///a\"b", FF_MOUNT_UP, m->metrics };
	GString *out = g_string_new(NULL);

	ff_metrics_append_locations(&loc, 1, out);
	/* a label value's quote is escaped */
	g_assert_nonnull(strstr(out->str, "fedfuse_backend_ops_total{location=\"/r\","
					  "uri=\"fake:///a\\\"b\",op=\"lookup\"} 2\n"));
	g_assert_nonnull(strstr(out->str, ",op=\"lookup\",errno=\"ENOENT\"} 1\n"));
	g_assert_nonnull(strstr(out->str, ",op=\"statfs\",errno=\"ENOSYS\"} 1\n"));
	g_assert_nonnull(strstr(out->str, ",op=\"lookup\",le=\"+Inf\"} 2\n"));
	g_assert_nonnull(strstr(out->str, "fedfuse_backend_read_bytes_total{location=\"/r\","
					  "uri=\"fake:///a\\\"b\"} 4\n"));
	g_assert_nonnull(strstr(out->str, "fedfuse_location_up{location=\"/r\",uri=\"fake:"
					  "///a\\\"b\"} 1\n"));
	g_string_free(out, TRUE);
}

static void test_accounting_and_down(void)
{
	const char *missing = NULL;
	struct ff_backend be = { .scheme = "fake" };
	struct ff_backend_ops with_lock = minimal_ops;
	struct ff_mount m;
	ff_node *node = NULL;
	struct stat st;
	char buf[4];

	with_lock.lock_fd = fake_lock_fd;
	be.ops = ff_gw_complete_ops(&with_lock, FF_BACKEND_ABI_MINOR, &missing);
	memset(&m, 0, sizeof(m));
	g_mutex_init(&m.lock);
	m.be = &be;
	m.loc.spec.uri = "fake:///";
	m.state = FF_MOUNT_UP;
	m.metrics = ff_metrics_new();
	calls = 0;

	g_assert_cmpint(ff_gw_lookup(&m, NULL, NULL, "here", &node, &st), ==, 0);
	g_assert_cmpint(ff_gw_lookup(&m, NULL, NULL, "gone", &node, &st), ==, -ENOENT);
	g_assert_cmpint(m.stats[FF_OP_LOOKUP].calls, ==, 2);
	g_assert_cmpint(m.stats[FF_OP_LOOKUP].errors, ==, 1);
	g_assert_cmpint(ff_gw_read(&m, NULL, buf, sizeof(buf), 0), ==, sizeof(buf));
	g_assert_cmpint(m.stats[FF_OP_READ].calls, ==, 1);
	/* a success that is a number is no error, even one that looks like an errno */
	g_assert_cmpint(ff_gw_lock_fd(&m, NULL), ==, ETIMEDOUT);
	g_assert_cmpint(m.state, ==, FF_MOUNT_UP);
	g_assert_cmpint(m.stats[FF_OP_OTHER].errors, ==, 0);
	/* what a backend left out is counted too, with its error */
	g_assert_cmpint(ff_gw_statfs(&m, NULL, NULL, NULL), ==, -ENOSYS);
	g_assert_cmpint(m.stats[FF_OP_STATFS].errors, ==, 1);
	g_assert_cmpint(calls, ==, 3);
	check_metrics(&m);

	/* down: node operations fail with what put it down, open files with EIO, and the
	 * backend is not called; the root is still asked (it is how one finds it back) */
	m.state = FF_MOUNT_DOWN;
	m.last_errno = ETIMEDOUT;
	g_assert_cmpint(ff_gw_lookup(&m, NULL, NULL, "here", &node, &st), ==, -ETIMEDOUT);
	g_assert_cmpint(ff_gw_getattr(&m, NULL, NULL, NULL, &st), ==, -ETIMEDOUT);
	g_assert_cmpint(ff_gw_read(&m, NULL, buf, sizeof(buf), 0), ==, -EIO);
	g_assert_cmpint(calls, ==, 3);
	/* a flush that found nothing to send proves nothing (begun before the location went
	 * down, it ended after) */
	g_assert_cmpint(ff_mount_account(&m, FF_OP_SYNC, 0, g_get_monotonic_time()), ==, 0);
	g_assert_cmpint(m.state, ==, FF_MOUNT_DOWN);
	g_assert_cmpint(ff_gw_root(&m, NULL, &node, &st), ==, 0);
	g_assert_cmpint(calls, ==, 4);
	g_assert_cmpint(m.state, ==, FF_MOUNT_UP); /* a success brought it back */
	g_free(m.last_error);
	g_mutex_clear(&m.lock);
	ff_metrics_free(m.metrics);
	g_free((gpointer)be.ops);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/gateway/defaults", test_defaults);
	g_test_add_func("/gateway/older-minor", test_older_minor);
	g_test_add_func("/gateway/required", test_required);
	g_test_add_func("/gateway/accounting-and-down", test_accounting_and_down);
	return g_test_run();
}
