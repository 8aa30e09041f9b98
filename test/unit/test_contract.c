/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_contract.c - the backend contract's conformance suite: the same checks, through the
 * core's mount table and gateway, against every backend the build has: the in-memory reference
 * backend and the local one always, NFS (v3 and v4) and SMB when the loopback test servers run
 * (scripts/test-servers writes their URIs to $FEDFUSE_TEST_STATE/servers.env). Each check works
 * in a directory of its own below the location's root and removes it after.
 *
 * What a backend may leave out (symlinks, hard links, xattrs, rename flags) it leaves out the
 * contract's way: the operation's default errno, which the checks accept in its place.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fedfuse/gateway.h"
#include "fedfuse/location.h"
#include "fedfuse/junction.h"
#include "fedfuse/mount.h"
#include "fedfuse/plugins.h"
#include "test/unit/servers_env.h"

struct target {
	const char *kind; /* names the test paths */
	char *uri;
	struct ff_mount *m;
	ff_node *root;
	int error; /* connecting failed: every check of it fails with this */
};

/* One check's working directory. */
struct dir {
	struct target *t;
	ff_node *node;
	char name[64];
};

static struct ff_mounts *mounts;
static const struct ff_cred root_cred = { .uid = 0, .gid = 0, .umask = 022 };
static const struct ff_cred *cred = &root_cred;

static bool path_nodes(const struct target *t)
{
	return t->m->be->caps & FF_CAP_PATH_NODES;
}

/* An optional operation: it worked (true), or the backend said it does not have it. */
static bool supported(int rc, int absent)
{
	if (rc == -absent || rc == -EOPNOTSUPP || rc == -ENOTSUP)
		return false;
	g_assert_cmpint(rc, >=, 0);
	return true;
}

static void target_connect(struct target *t)
{
	struct ff_location loc;
	g_autofree char *msg = NULL;
	struct stat st;

	if (t->m || t->error)
		return;
	g_assert_true(ff_location_parse(t->uri, &loc, &msg));
	t->m = ff_mounts_get(mounts, "/contract", &loc, 1.0, NULL);
	ff_location_clear(&loc);
	t->error = ff_mount_connect(t->m);
	if (t->error == 0)
		t->error = ff_gw_root(t->m, cred, &t->root, &st);
}

static void dir_open(struct dir *d, struct target *t, const char *check)
{
	struct stat st;
	ff_node *stale;

	target_connect(t);
	if (t->error)
		g_error("%s: cannot connect: %s", t->uri, g_strerror(-t->error));
	d->t = t;
	snprintf(d->name, sizeof(d->name), "contract-%s-%d", check, (int)getpid());
	if (ff_gw_lookup(t->m, cred, t->root, d->name, &stale, &st) == 0) {
		ff_gw_forget(t->m, stale);
		g_error("%s: %s is left over from an earlier run: remove it", t->uri, d->name);
	}
	g_assert_cmpint(ff_gw_mkdir(t->m, cred, t->root, d->name, 0755, &d->node, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
}

/* Remove what a check left (names given), then its directory. */
static void dir_close(struct dir *d, const char *const *names)
{
	for (; names && *names; names++) {
		int rc = ff_gw_unlink(d->t->m, cred, d->node, *names);

		if (rc == -EISDIR || rc == -EPERM)
			rc = ff_gw_rmdir(d->t->m, cred, d->node, *names);
		g_assert_true(rc == 0 || rc == -ENOENT);
	}
	ff_gw_forget(d->t->m, d->node);
	g_assert_cmpint(ff_gw_rmdir(d->t->m, cred, d->t->root, d->name), ==, 0);
}

static ff_node *lookup_ok(struct dir *d, ff_node *parent, const char *name, struct stat *st)
{
	ff_node *node = NULL;

	g_assert_cmpint(ff_gw_lookup(d->t->m, cred, parent, name, &node, st), ==, 0);
	return node;
}

static int lookup_rc(struct dir *d, ff_node *parent, const char *name)
{
	struct stat st;
	ff_node *node;
	int rc = ff_gw_lookup(d->t->m, cred, parent, name, &node, &st);

	if (rc == 0)
		ff_gw_forget(d->t->m, node);
	return rc;
}

/* Create `name` in `parent` with `data`; its inode number. */
static ino_t make_file(struct dir *d, ff_node *parent, const char *name, const char *data)
{
	struct stat st;
	ff_node *node;
	ff_fh *fh;
	size_t len = strlen(data);

	g_assert_cmpint(ff_gw_create(d->t->m, cred, parent, name, 0644, O_RDWR | O_CREAT | O_EXCL,
				     &node, &st, &fh),
			==, 0);
	g_assert_true(S_ISREG(st.st_mode));
	if (len)
		g_assert_cmpint(ff_gw_write(d->t->m, cred, fh, data, len, 0), ==, len);
	g_assert_cmpint(ff_gw_release(d->t->m, fh), ==, 0);
	ff_gw_forget(d->t->m, node);
	return st.st_ino;
}

static char *read_all(struct dir *d, ff_node *parent, const char *name)
{
	char buf[4096];
	struct stat st;
	ff_node *node = lookup_ok(d, parent, name, &st);
	ff_fh *fh;
	ssize_t n;

	g_assert_cmpint(ff_gw_open(d->t->m, cred, node, O_RDONLY, &fh), ==, 0);
	n = ff_gw_read(d->t->m, fh, buf, sizeof(buf) - 1, 0);
	g_assert_cmpint(n, >=, 0);
	buf[n] = '\0';
	g_assert_cmpint(ff_gw_release(d->t->m, fh), ==, 0);
	ff_gw_forget(d->t->m, node);
	return g_strdup(buf);
}

/* ---- the checks ------------------------------------------------------------------------- */

static void check_lookup_and_mkdir(gconstpointer data)
{
	struct target *t = (struct target *)data;
	struct stat st, again;
	struct dir d;
	ff_node *sub, *found;

	dir_open(&d, t, "mkdir");
	g_assert_cmpint(lookup_rc(&d, d.node, "missing"), ==, -ENOENT);
	g_assert_cmpint(ff_gw_mkdir(t->m, cred, d.node, "sub", 0750, &sub, &st), ==, 0);
	g_assert_true(S_ISDIR(st.st_mode));
	found = lookup_ok(&d, d.node, "sub", &again);
	g_assert_cmpuint(again.st_ino, ==, st.st_ino);
	g_assert_cmpuint(again.st_dev, ==, st.st_dev);
	g_assert_true(S_ISDIR(again.st_mode));
	g_assert_cmpint(ff_gw_mkdir(t->m, cred, d.node, "sub", 0750, &found, &st), ==, -EEXIST);
	g_assert_cmpint(ff_gw_getattr(t->m, cred, sub, NULL, &again), ==, 0);
	g_assert_cmpuint(again.st_ino, ==, st.st_ino);
	ff_gw_forget(t->m, sub);
	ff_gw_forget(t->m, found);
	g_assert_cmpint(ff_gw_rmdir(t->m, cred, d.node, "sub"), ==, 0);
	g_assert_cmpint(lookup_rc(&d, d.node, "sub"), ==, -ENOENT);
	dir_close(&d, NULL);
}

static void check_file_data(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "f", NULL };
	char buf[128], zeros[95] = { 0 };
	struct stat st;
	ff_node *node, *other;
	ff_fh *fh, *fh2;
	struct dir d;
	struct stat attr = { .st_size = 5 };

	dir_open(&d, t, "data");
	make_file(&d, d.node, "f", "hello world");
	g_autofree char *text = read_all(&d, d.node, "f");
	g_assert_cmpstr(text, ==, "hello world");
	node = lookup_ok(&d, d.node, "f", &st);
	g_assert_cmpint(st.st_size, ==, 11);
	g_assert_cmpint(ff_gw_create(t->m, cred, d.node, "f", 0644, O_RDWR | O_CREAT | O_EXCL,
				     &other, &st, &fh2),
			==, -EEXIST);

	/* truncate, then a write past the end: the gap reads as zeros */
	g_assert_cmpint(ff_gw_setattr(t->m, cred, node, NULL, &attr, FF_SET_SIZE, &st), ==, 0);
	g_assert_cmpint(st.st_size, ==, 5);
	g_assert_cmpint(ff_gw_open(t->m, cred, node, O_RDWR, &fh), ==, 0);
	g_assert_cmpint(ff_gw_write(t->m, cred, fh, "end", 3, 100), ==, 3);
	g_assert_cmpint(ff_gw_flush(t->m, fh), ==, 0);
	g_assert_cmpint(ff_gw_getattr(t->m, cred, node, fh, &st), ==, 0);
	g_assert_cmpint(st.st_size, ==, 103);
	g_assert_cmpint(ff_gw_read(t->m, fh, buf, sizeof(buf), 0), ==, 103);
	g_assert_cmpmem(buf, 5, "hello", 5);
	g_assert_cmpmem(buf + 5, 95, zeros, 95);
	g_assert_cmpmem(buf + 100, 3, "end", 3);
	/* a read at the end is empty, not an error */
	g_assert_cmpint(ff_gw_read(t->m, fh, buf, sizeof(buf), 103), ==, 0);
	supported(ff_gw_fsync(t->m, fh, 0), ENOSYS); /* 0, or the contract's "not supported" */
	g_assert_cmpint(ff_gw_release(t->m, fh), ==, 0);

	/* O_TRUNC empties it */
	g_assert_cmpint(ff_gw_open(t->m, cred, node, O_WRONLY | O_TRUNC, &fh), ==, 0);
	g_assert_cmpint(ff_gw_release(t->m, fh), ==, 0);
	g_assert_cmpint(ff_gw_getattr(t->m, cred, node, NULL, &st), ==, 0);
	g_assert_cmpint(st.st_size, ==, 0);
	ff_gw_forget(t->m, node);
	dir_close(&d, names);
}

static void check_errors(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "f", "sub", NULL };
	struct stat st;
	ff_node *file, *sub, *node;
	struct dir d;

	dir_open(&d, t, "errors");
	make_file(&d, d.node, "f", "x");
	file = lookup_ok(&d, d.node, "f", &st);
	g_assert_cmpint(ff_gw_mkdir(t->m, cred, d.node, "sub", 0755, &sub, &st), ==, 0);
	make_file(&d, sub, "inner", "");

	g_assert_cmpint(ff_gw_mkdir(t->m, cred, d.node, "f", 0755, &node, &st), ==, -EEXIST);
	g_assert_cmpint(ff_gw_rmdir(t->m, cred, d.node, "sub"), ==, -ENOTEMPTY);
	g_assert_cmpint(ff_gw_rmdir(t->m, cred, d.node, "f"), ==, -ENOTDIR);
	g_assert_cmpint(ff_gw_unlink(t->m, cred, d.node, "missing"), ==, -ENOENT);
	g_assert_cmpint(ff_gw_rmdir(t->m, cred, d.node, "missing"), ==, -ENOENT);
	g_assert_cmpint(ff_gw_rename(t->m, cred, d.node, "missing", d.node, "other", 0), ==,
			-ENOENT);

	g_assert_cmpint(ff_gw_unlink(t->m, cred, sub, "inner"), ==, 0);
	ff_gw_forget(t->m, sub);
	ff_gw_forget(t->m, file);
	dir_close(&d, names);
}

static void check_rename(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "b", "c", "sub", NULL };
	struct stat st;
	ff_node *sub;
	ino_t a, c;
	struct dir d;
	int rc;

	dir_open(&d, t, "rename");
	a = make_file(&d, d.node, "a", "A");
	g_assert_cmpint(ff_gw_rename(t->m, cred, d.node, "a", d.node, "b", 0), ==, 0);
	g_assert_cmpint(lookup_rc(&d, d.node, "a"), ==, -ENOENT);
	ff_gw_forget(t->m, lookup_ok(&d, d.node, "b", &st));
	g_assert_cmpuint(st.st_ino, ==, a);

	/* onto an existing file: it is replaced */
	c = make_file(&d, d.node, "c", "C");
	g_assert_cmpuint(c, !=, a);
	g_assert_cmpint(ff_gw_rename(t->m, cred, d.node, "b", d.node, "c", 0), ==, 0);
	g_autofree char *text = read_all(&d, d.node, "c");
	g_assert_cmpstr(text, ==, "A");

	/* across directories, and back */
	g_assert_cmpint(ff_gw_mkdir(t->m, cred, d.node, "sub", 0755, &sub, &st), ==, 0);
	g_assert_cmpint(ff_gw_rename(t->m, cred, d.node, "c", sub, "moved", 0), ==, 0);
	ff_gw_forget(t->m, lookup_ok(&d, sub, "moved", &st));
	g_assert_cmpuint(st.st_ino, ==, a);
	g_assert_cmpint(ff_gw_rename(t->m, cred, sub, "moved", d.node, "c", 0), ==, 0);

	/* RENAME_NOREPLACE onto an existing name; a backend without the flag says EINVAL */
	make_file(&d, d.node, "b", "B");
	rc = ff_gw_rename(t->m, cred, d.node, "b", d.node, "c", RENAME_NOREPLACE);
	g_assert_true(rc == -EEXIST || rc == -EINVAL);
	g_autofree char *kept = read_all(&d, d.node, "c");
	g_assert_cmpstr(kept, ==, "A");
	/* a directory into itself */
	rc = ff_gw_rename(t->m, cred, d.node, "sub", sub, "self", 0);
	g_assert_true(rc == -EINVAL || rc == -EBUSY || rc == -EACCES);
	ff_gw_forget(t->m, sub);
	dir_close(&d, names);
}

struct listing {
	GHashTable *names;
	guint take; /* entries to take before answering FF_FILL_FULL (0: all) */
	guint taken;
	off_t next;
	bool plus;
	struct ff_mount *m;
	bool complete; /* plus mode: every entry came with attributes */
};

static int fill(void *buf, const char *name, const struct stat *st, off_t next, ff_node *node,
		bool by_name)
{
	struct listing *l = buf;

	if (l->take && l->taken == l->take) {
		if (node)
			ff_gw_forget(l->m, node);
		return FF_FILL_FULL;
	}
	g_assert_false(g_hash_table_contains(l->names, name)); /* each entry once */
	g_hash_table_add(l->names, g_strdup(name));
	g_assert_cmpuint(st->st_ino, !=, 0);
	if (l->plus && !(node || by_name))
		l->complete = false;
	if (l->plus && (node || by_name))
		g_assert_true(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode));
	if (node)
		ff_gw_forget(l->m, node);
	l->taken++;
	l->next = next;
	return FF_FILL_TAKEN;
}

static void check_readdir(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "e0", "e1", "e2", "e3", "e4", "e5",
				      "e6", "e7", "e8", "e9", NULL };
	struct listing l = { .m = t->m };
	struct dir d;
	ff_dh *dh;

	dir_open(&d, t, "readdir");
	for (int i = 0; names[i]; i++)
		make_file(&d, d.node, names[i], "");
	for (int plus = 0; plus <= 1; plus++) {
		l.names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		l.plus = plus;
		l.complete = true;
		l.next = 0;
		g_assert_cmpint(ff_gw_opendir(t->m, cred, d.node, &dh), ==, 0);
		/* three entries per call: every call resumes where the last one stopped */
		for (int calls = 0; calls < 20; calls++) {
			guint before = g_hash_table_size(l.names);

			l.take = 3;
			l.taken = 0;
			g_assert_cmpint(ff_gw_readdir(t->m, cred, d.node, dh, l.next, plus, fill,
						      &l),
					==, 0);
			if (g_hash_table_size(l.names) == before)
				break;
		}
		g_assert_cmpint(ff_gw_releasedir(t->m, dh), ==, 0);
		g_assert_cmpuint(g_hash_table_size(l.names), ==, 10);
		for (int i = 0; names[i]; i++)
			g_assert_true(g_hash_table_contains(l.names, names[i]));
		g_assert_true(l.complete);
		g_hash_table_destroy(l.names);
	}
	dir_close(&d, names);
}

static void check_links(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "f", "hard", "sym", NULL };
	char target[64];
	struct stat st, fst;
	ff_node *file, *node;
	struct dir d;
	ssize_t n;

	dir_open(&d, t, "links");
	make_file(&d, d.node, "f", "data");
	file = lookup_ok(&d, d.node, "f", &fst);

	if (supported(ff_gw_symlink(t->m, cred, "f/../f", d.node, "sym", &node, &st), EPERM)) {
		g_assert_true(S_ISLNK(st.st_mode));
		n = ff_gw_readlink(t->m, cred, node, target, sizeof(target));
		g_assert_cmpint(n, ==, 6);
		g_assert_cmpmem(target, 6, "f/../f", 6);
		/* a target that does not fit is ENAMETOOLONG, not cut; one that just fits is whole */
		g_assert_cmpint(ff_gw_readlink(t->m, cred, node, target, 5), ==, -ENAMETOOLONG);
		g_assert_cmpint(ff_gw_readlink(t->m, cred, node, target, 6), ==, 6);
		ff_gw_forget(t->m, node);
		g_assert_cmpint(ff_gw_readlink(t->m, cred, file, target, sizeof(target)), ==,
				-EINVAL);
		/* lookup does not follow it */
		ff_gw_forget(t->m, lookup_ok(&d, d.node, "sym", &st));
		g_assert_true(S_ISLNK(st.st_mode));
	}
	if (supported(ff_gw_link(t->m, cred, file, d.node, "hard", &st), EPERM)) {
		g_assert_cmpuint(st.st_ino, ==, fst.st_ino);
		g_assert_cmpuint(st.st_nlink, ==, 2);
		ff_gw_forget(t->m, lookup_ok(&d, d.node, "hard", &st));
		g_assert_cmpuint(st.st_ino, ==, fst.st_ino);
		g_autofree char *text = read_all(&d, d.node, "hard");
		g_assert_cmpstr(text, ==, "data");
	}
	ff_gw_forget(t->m, file);
	dir_close(&d, names);
}

static void check_xattrs(gconstpointer data)
{
	struct target *t = (struct target *)data;
	const char *const names[] = { "f", NULL };
	char buf[64];
	struct stat st;
	ff_node *file;
	struct dir d;

	dir_open(&d, t, "xattr");
	make_file(&d, d.node, "f", "");
	file = lookup_ok(&d, d.node, "f", &st);
	if (supported(ff_gw_setxattr(t->m, cred, file, "user.contract", "v1", 2, 0), EOPNOTSUPP)) {
		g_assert_cmpint(ff_gw_getxattr(t->m, cred, file, "user.contract", NULL, 0), ==, 2);
		g_assert_cmpint(ff_gw_getxattr(t->m, cred, file, "user.contract", buf, 1), ==,
				-ERANGE);
		g_assert_cmpint(ff_gw_getxattr(t->m, cred, file, "user.contract", buf, sizeof(buf)),
				==, 2);
		g_assert_cmpmem(buf, 2, "v1", 2);
		g_assert_cmpint(ff_gw_setxattr(t->m, cred, file, "user.contract", "v2", 2,
					       XATTR_CREATE),
				==, -EEXIST);
		g_assert_cmpint(ff_gw_setxattr(t->m, cred, file, "user.other", "v", 1,
					       XATTR_REPLACE),
				==, -ENODATA);
		g_assert_cmpint(ff_gw_listxattr(t->m, cred, file, buf, sizeof(buf)), >=,
				(ssize_t)sizeof("user.contract"));
		g_assert_nonnull(memmem(buf, sizeof(buf), "user.contract", 14));
		g_assert_cmpint(ff_gw_removexattr(t->m, cred, file, "user.contract"), ==, 0);
		g_assert_cmpint(ff_gw_getxattr(t->m, cred, file, "user.contract", buf, sizeof(buf)),
				==, -ENODATA);
		g_assert_cmpint(ff_gw_removexattr(t->m, cred, file, "user.contract"), ==, -ENODATA);
	}
	ff_gw_forget(t->m, file);
	dir_close(&d, names);
}

/* Unlinked while open: the open handle still reads and writes it (backends whose nodes are
 * paths leave that to the core, which hides such files instead of removing them). */
static void check_unlinked_open(gconstpointer data)
{
	struct target *t = (struct target *)data;
	char buf[16];
	struct stat st;
	ff_node *file;
	ff_fh *fh;
	struct dir d;

	dir_open(&d, t, "unlinked");
	if (path_nodes(t)) {
		dir_close(&d, NULL);
		g_test_skip("nodes are paths: the core keeps unlinked open files");
		return;
	}
	make_file(&d, d.node, "f", "kept");
	file = lookup_ok(&d, d.node, "f", &st);
	g_assert_cmpint(ff_gw_open(t->m, cred, file, O_RDWR, &fh), ==, 0);
	g_assert_cmpint(ff_gw_unlink(t->m, cred, d.node, "f"), ==, 0);
	g_assert_cmpint(lookup_rc(&d, d.node, "f"), ==, -ENOENT);
	g_assert_cmpint(ff_gw_write(t->m, cred, fh, "!", 1, 4), ==, 1);
	g_assert_cmpint(ff_gw_read(t->m, fh, buf, sizeof(buf), 0), ==, 5);
	g_assert_cmpmem(buf, 5, "kept!", 5);
	g_assert_cmpint(ff_gw_getattr(t->m, cred, file, fh, &st), ==, 0);
	g_assert_cmpuint(st.st_nlink, ==, 0);
	g_assert_cmpint(ff_gw_release(t->m, fh), ==, 0);
	ff_gw_forget(t->m, file);
	dir_close(&d, NULL);
}

static void check_statfs(gconstpointer data)
{
	struct target *t = (struct target *)data;
	struct statvfs sv;
	int rc;

	target_connect(t);
	g_assert_cmpint(t->error, ==, 0);
	rc = ff_gw_statfs(t->m, cred, t->root, &sv);
	if (supported(rc, ENOSYS)) {
		g_assert_cmpuint(sv.f_bsize, >, 0);
		g_assert_cmpuint(sv.f_blocks, >=, sv.f_bfree);
	}
}

/* ---- targets ---------------------------------------------------------------------------- */

/* KEY=VALUE from the test servers' environment file, or NULL. */
/* ---- what each scheme's backend says of a location, without I/O ------------------------- */

/* The rules past RFC 3986 are the backends': their check op refuses what their scheme cannot
 * use, and server_port reads the port as they will connect. A backend this build lacks is
 * skipped. */
static void test_location_rules(void)
{
	static const struct {
		const char *uri;
		int port;	  /* what server_port says; -1: refused */
		const char *says; /* in the message, when refused */
	} cases[] = {
		{ "file:///srv", 0, NULL },
		{ "file://localhost/srv", 0, NULL },
		{ "FILE://LocalHost/srv", 0, NULL },
		{ "file://server/srv", -1, "names a host" },
		{ "file://localhost:80/srv", -1, "names a host" },
		{ "file:///a?x", -1, "has a query" },
		{ "nfs://h/e", 2049, NULL },
		{ "nfs://h/e?version=3", 2049, NULL },
		{ "nfs://h:2050/e", 2050, NULL },
		{ "nfs://h/e?nfsport=2050", 2050, NULL },
		{ "nfs://h/e?version=4&nfsport=1", 1, NULL },
		{ "nfs://h/e?nfsport=65535&mountport=20048", 65535, NULL },
		{ "nfs://h/e?mountport=20048", 2049, NULL },
		{ "nfs://h:3049/e?nfsport=3049", 3049, NULL },
		{ "nfs://h:3049/e?nfsport=4049", -1, "gives port 3049 and nfsport=4049" },
		{ "nfs:///export", -1, "names no server" },
		{ "nfs://h/e?nfsportx=1", -1, "unknown key 'nfsportx'" },
		{ "nfs://h/e?nfsport=0", -1, "not a port number" },
		{ "nfs://h/e?nfsport=65536", -1, "not a port number" },
		{ "nfs://h/e?nfsport=20x", -1, "not a port number" },
		{ "nfs://h/e?nfsport=", -1, "not a port number" },
		{ "nfs://h/e?nfsport=-1", -1, "not a port number" },
		{ "nfs://h/e?nfsport=%2B1", -1, "not a port number" },
		{ "nfs://h/e?nfsport=1&nfsport=2", -1, "given twice" },
		{ "nfs://h/e?version=4&mountport=1", -1, "no MOUNT protocol" },
		{ "smb://nas/share", 445, NULL },
		{ "smb://nas:4445/share/dir", 4445, NULL },
		{ "smb://nas/", -1, "names no share" },
		{ "smb:///share", -1, "without a host" },
		{ "smb://[::1]/share", -1, "no IPv6 literal" },
		{ "mem://t/x", 0, NULL },
		{ "ftp://h/x", -1, "backend 'ftp' is not available" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct ff_location loc;
		char *msg = NULL, *msg2 = NULL;
		int rc, port;

		if (!ff_location_parse(cases[i].uri, &loc, &msg))
			g_error("%s: %s", cases[i].uri, msg);
		if (!ff_plugin_find(loc.spec.scheme, &msg) &&
		    !g_str_equal(loc.spec.scheme, "ftp")) {
			g_test_message("%s: %s", cases[i].uri, msg); /* not built */
			g_free(msg);
			ff_location_clear(&loc);
			continue;
		}
		g_clear_pointer(&msg, g_free);
		rc = ff_plugin_check_location(&loc.spec, NULL, &msg);
		port = ff_plugin_server_port(&loc.spec, NULL, &msg2);
		if (cases[i].port >= 0) {
			if (rc != 0 || port != cases[i].port)
				g_error("%s: check %d (%s), port %d (%s); want port %d",
					cases[i].uri, rc, msg, port, msg2, cases[i].port);
		} else {
			g_assert_cmpint(rc, <, 0);
			g_assert_cmpint(port, <, 0);
			g_assert_nonnull(msg);
			g_assert_cmpstr(msg, ==, msg2); /* one parser: one message */
			if (!strstr(msg, cases[i].says))
				g_error("%s: '%s' does not say '%s'", cases[i].uri, msg,
					cases[i].says);
		}
		g_free(msg);
		g_free(msg2);
		ff_location_clear(&loc);
	}
}

/* A junction is read as the URIs say, then each location checked by its backend, as the
 * daemon and the admin tool read one; a scheme without a backend here passes. */
static void test_junction_rules(void)
{
	static const struct {
		const char *value;
		const char *says; /* NULL: accepted */
	} cases[] = {
		{ "file:///a;nfs://h/x;smb://h/s", NULL },
		{ "ftp://h/x;file:///a", NULL },
		{ "file:///a;nfs:///x",
		  "location 'nfs:///x': nfs location 'nfs:///x' names no server" },
		{ "smb://h/", "location 'smb://h/': smb URI 'smb://h/' names no share" },
		{ "file://elsewhere/a", "names a host" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct ff_junction *j =
			ff_junction_parse_fedfuse(cases[i].value, strlen(cases[i].value), NULL);
		char *msg = NULL;
		bool ok;

		g_assert_nonnull(j);
		ok = ff_plugin_check_junction(j, &msg);
		if (!cases[i].says) {
			g_assert_true(ok);
		} else {
			g_assert_false(ok);
			if (!strstr(msg, cases[i].says))
				g_error("%s: '%s' does not say '%s'", cases[i].value, msg,
					cases[i].says);
		}
		g_free(msg);
		ff_junction_free(j);
	}
}

static void add_checks(struct target *t)
{
	static const struct {
		const char *name;
		GTestDataFunc fn;
	} checks[] = {
		{ "lookup-and-mkdir", check_lookup_and_mkdir },
		{ "file-data", check_file_data },
		{ "errors", check_errors },
		{ "rename", check_rename },
		{ "readdir", check_readdir },
		{ "links", check_links },
		{ "xattrs", check_xattrs },
		{ "unlinked-open", check_unlinked_open },
		{ "statfs", check_statfs },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(checks); i++) {
		g_autofree char *path = g_strdup_printf("/contract/%s/%s", t->kind, checks[i].name);

		g_test_add_data_func(path, t, checks[i].fn);
	}
}

int main(int argc, char **argv)
{
	const char *builddir = g_getenv("FEDFUSE_BUILDDIR");
	g_autofree char *tmp = NULL;
	g_autofree char *dirs = NULL;
	static struct target targets[] = {
		{ "mem" }, { "file" }, { "nfs3" }, { "nfs4" }, { "smb" },
	};
	int rc;

	g_test_init(&argc, &argv, NULL);
	dirs = g_strdup_printf("%1$s/backends/mem/.libs:%1$s/backends/local/.libs:"
			       "%1$s/backends/nfs/.libs:%1$s/backends/smb/.libs",
			       builddir ? builddir : ".");
	g_setenv("FEDFUSE_BACKEND_DIR", dirs, TRUE);
	mounts = ff_mounts_new();
	tmp = g_dir_make_tmp("contract-XXXXXX", NULL);
	g_assert_nonnull(tmp);

	targets[0].uri = g_strdup("mem://contract/root");
	targets[1].uri = g_strconcat("file://", tmp, NULL);
	targets[2].uri = servers_env("NFS_V3_URI");
	targets[3].uri = servers_env("NFS_V4_URI");
	targets[4].uri = servers_env("SMB_URI");
	g_test_add_func("/contract/location-rules", test_location_rules);
	g_test_add_func("/contract/junction-rules", test_junction_rules);
	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++)
		if (targets[i].uri)
			add_checks(&targets[i]);
	rc = g_test_run();

	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
		if (targets[i].root)
			ff_gw_forget(targets[i].m, targets[i].root);
		if (targets[i].m)
			ff_mount_unref(targets[i].m);
		g_free(targets[i].uri);
	}
	ff_mounts_free(mounts);
	g_rmdir(tmp);
	return rc;
}
