/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nsdb.c - the NSDB client against the test servers' slapd (scripts/test-servers writes
 * its address to $FEDFUSE_TEST_STATE/servers.env): entries written and read back as RFC 7532
 * lays them out, and the daemon's cache of resolved FSNs (order, going, TTL, replicas, errors).
 * TLS: StartTLS on the provider's port and LDAP over TLS on its ldaps port (NSDB_LDAPS_PORT),
 * trusting the CA of servers.env (NSDB_CA_FILE) and not the system's CAs.
 * Without an NSDB in servers.env the LDAP cases fail: a test that needs a server does not skip.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fedfuse/namespace.h"
#include "fedfuse/nsdb.h"
#include "test/unit/servers_env.h"

static char *server;   /* "127.0.0.1:PORT" of the provider */
static char *consumer; /* of the consumer */
static char *ldaps;    /* of the provider's LDAP over TLS */
static char *ca_file;  /* the CA the provider's certificate is signed by */
static char *admin_dn, *password;
static char *tmpdir;

static gint64 soon(double seconds)
{
	return g_get_monotonic_time() + (gint64)(seconds * G_USEC_PER_SEC);
}

static struct ff_nsdb_conn *admin(void)
{
	struct ff_nsdb_conn *conn = NULL;
	char *msg = NULL;

	g_assert_nonnull(server);
	g_assert_cmpint(ff_nsdb_connect(server, NULL, soon(10), admin_dn, password, &conn, &msg),
			==, 0);
	g_assert_null(msg);
	return conn;
}

static char *new_uuid(void)
{
	return g_uuid_string_random();
}

static void put_fsl(struct ff_nsdb_conn *conn, const char *fsn, const char *fsl_uuid,
		    const char *uri, int rank, int order, bool going)
{
	struct ff_nsdb_fsl fsl = { .uuid = (char *)fsl_uuid,
				   .uri = (char *)uri,
				   .read_rank = rank,
				   .read_order = order,
				   .going = going };
	char *msg = NULL;

	g_assert_cmpint(ff_nsdb_put_fsl(conn, fsn, &fsl, true, true, soon(10), &msg), ==, 0);
	g_assert_null(msg);
}

static struct ff_namespace *load_ns(const char *text)
{
	g_autofree char *path = g_build_filename(tmpdir, "ns.conf", NULL);
	GError *err = NULL;
	struct ff_namespace *ns;

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	ns = ff_namespace_load(path, NULL, NULL, &err);
	g_assert_no_error(err);
	return ns;
}

static struct ff_location *fsn_location(const char *srv, const char *fsn)
{
	g_autofree char *uri = g_strdup_printf("fedfs://%s/%s", srv, fsn);
	struct ff_location *loc = g_new0(struct ff_location, 1);

	g_assert_true(ff_location_parse(uri, loc, NULL));
	loc->spec.timeout = 5;
	return loc;
}

/* The URIs ff_nsdb_resolve() gives, joined by ' ', or the error as "-errno". */
static char *resolved(struct ff_nsdb *db, const struct ff_namespace *ns,
		      const struct ff_location *loc)
{
	GPtrArray *locs = NULL;
	GString *out = g_string_new(NULL);
	char *msg = NULL;
	int rc = ff_nsdb_resolve(db, ns, loc, loc->spec.timeout, &locs, &msg);

	if (rc < 0) {
		g_assert_nonnull(msg);
		g_free(msg);
		g_string_printf(out, "%d", rc);
		return g_string_free(out, FALSE);
	}
	g_assert_null(msg);
	for (guint i = 0; i < locs->len; i++) {
		const struct ff_location *l = locs->pdata[i];

		g_string_append_printf(out, "%s%s", i ? " " : "", l->spec.uri);
		g_assert_cmpfloat(l->spec.timeout, ==, loc->spec.timeout); /* the FSN's options */
	}
	g_ptr_array_unref(locs);
	return g_string_free(out, FALSE);
}

/* Written with the writes of fedfuse-junction nsdb, read back as the daemon reads. */
static void test_write_read(void)
{
	struct ff_nsdb_conn *conn = admin();
	g_autofree char *fsn = new_uuid(), *a = new_uuid(), *b = new_uuid();
	struct ff_nsdb_fsl change = { .uuid = b, .read_rank = 7, .read_order = -1 };
	struct ff_nsdb_fsn *got = NULL;
	const struct ff_nsdb_fsl *fa, *fb;
	char *msg = NULL;

	g_assert_cmpint(ff_nsdb_create_fsn(conn, fsn, 60, soon(10), &msg), ==, 0);
	g_assert_cmpint(ff_nsdb_create_fsn(conn, fsn, 60, soon(10), &msg), ==, -EEXIST);
	g_assert_nonnull(strstr(msg, fsn));
	g_clear_pointer(&msg, g_free);
	put_fsl(conn, fsn, a, "nfs://a.example.org/export/a", 1, 2, false);
	put_fsl(conn, fsn, b, "nfs://b.example.org/export/b", 0, 0, true);
	change.going = false;
	g_assert_cmpint(ff_nsdb_put_fsl(conn, fsn, &change, false, true, soon(10), &msg), ==, 0);

	g_assert_cmpint(ff_nsdb_read_fsn(conn, fsn, soon(10), &got, NULL, &msg), ==, 0);
	g_assert_cmpstr(got->uuid, ==, fsn);
	g_assert_cmpint(got->ttl, ==, 60);
	g_assert_cmpuint(got->fsls->len, ==, 2);
	fa = got->fsls->pdata[0];
	fb = got->fsls->pdata[1];
	if (strcmp(fa->uuid, a) != 0) {
		const struct ff_nsdb_fsl *t = fa;

		fa = fb;
		fb = t;
	}
	g_assert_cmpstr(fa->uri, ==, "nfs://a.example.org/export/a");
	g_assert_cmpint(fa->read_rank, ==, 1);
	g_assert_cmpint(fa->read_order, ==, 2);
	g_assert_false(fa->going);
	g_assert_cmpstr(fb->uri, ==, "nfs://b.example.org/export/b");
	g_assert_cmpint(fb->read_rank, ==, 7);
	g_assert_false(fb->going);
	ff_nsdb_fsn_free(got);

	g_assert_cmpint(ff_nsdb_delete_fsl(conn, fsn, a, soon(10), &msg), ==, 0);
	g_assert_cmpint(ff_nsdb_delete_fsn(conn, fsn, soon(10), &msg), ==, 0);
	g_assert_cmpint(ff_nsdb_read_fsn(conn, fsn, soon(10), &got, NULL, &msg), ==, -ENOENT);
	g_assert_nonnull(strstr(msg, "no FSN"));
	g_free(msg);
	ff_nsdb_close(conn);
}

/* Order by rank then order, going left out, and the answer kept for the TTL. */
static void test_resolve_order_ttl(void)
{
	struct ff_nsdb_conn *conn = admin();
	g_autofree char *fsn = new_uuid(), *a = new_uuid(), *b = new_uuid(), *c = new_uuid();
	g_autofree char *got1 = NULL, *got2 = NULL, *got3 = NULL;
	struct ff_namespace *ns = load_ns("[namespace]\n");
	struct ff_location *loc = fsn_location(server, fsn);
	struct ff_nsdb_fsl move = { .uuid = c, .read_rank = 0, .read_order = 0 };
	struct ff_nsdb *db = ff_nsdb_new();
	char *msg = NULL;
	gint64 fetched;

	g_assert_cmpint(ff_nsdb_create_fsn(conn, fsn, 2, soon(10), &msg), ==, 0);
	put_fsl(conn, fsn, a, "nfs://a.example.org/export", 2, 0, false);
	put_fsl(conn, fsn, b, "nfs://b.example.org//export/b", 1, 9, false);
	put_fsl(conn, fsn, c, "nfs://c.example.org/export", 1, 3, true);
	got1 = resolved(db, ns, loc);
	fetched = g_get_monotonic_time();
	/* the RFC's form of a path ("//export/b") is the path /export/b */
	g_assert_cmpstr(got1, ==, "nfs://b.example.org/export/b nfs://a.example.org/export");

	g_assert_cmpint(ff_nsdb_put_fsl(conn, fsn, &move, false, true, soon(10), &msg), ==, 0);
	got2 = resolved(db, ns, loc);
	g_assert_cmpint(g_get_monotonic_time() - fetched, <, 2 * G_USEC_PER_SEC);
	g_assert_cmpstr(got2, ==, got1); /* within the TTL: the directory is not asked */
	g_usleep(2100 * 1000);
	got3 = resolved(db, ns, loc);
	g_assert_cmpstr(got3, ==,
			"nfs://c.example.org/export nfs://b.example.org/export/b "
			"nfs://a.example.org/export");

	g_assert_cmpint(ff_nsdb_delete_fsn(conn, fsn, soon(10), &msg), ==, 0);
	ff_nsdb_free(db);
	ff_location_free(loc);
	ff_namespace_unref(ns);
	ff_nsdb_close(conn);
}

/* A replica answers when the NSDB named does not; with none answering, EHOSTDOWN at once; an
 * FSN that does not exist or has no usable FSL is an error of its own. */
static void test_resolve_replicas_and_errors(void)
{
	struct ff_nsdb_conn *conn = admin();
	g_autofree char *fsn = new_uuid(), *a = new_uuid(), *bad = new_uuid(),
			*missing = new_uuid();
	g_autofree char *text = NULL, *got = NULL, *none = NULL, *lonely = NULL, *absent = NULL;
	struct ff_namespace *ns;
	struct ff_location *dead, *loc_bad, *loc_missing;
	struct ff_nsdb *db = ff_nsdb_new();
	GString *desc = g_string_new(NULL);
	char *msg = NULL;
	gint64 start;

	g_assert_nonnull(consumer);
	/* 127.0.0.1:1 refuses connections: the NSDB named is down, its replica is not */
	text = g_strdup_printf("[nsdb 127.0.0.1:1]\nreplicas=%s\n", consumer);
	ns = load_ns(text);
	g_assert_cmpint(ff_nsdb_create_fsn(conn, fsn, 60, soon(10), &msg), ==, 0);
	put_fsl(conn, fsn, a, "nfs://a.example.org/export", 0, 0, false);
	g_assert_cmpint(ff_nsdb_create_fsn(conn, bad, 60, soon(10), &msg), ==, 0);
	put_fsl(conn, bad, a, "nfs://a.example.org/export/../../etc", 0, 0, false);
	dead = fsn_location("127.0.0.1:1", fsn);
	for (int i = 0; i < 100; i++) { /* replication takes a moment */
		g_free(got);
		got = resolved(db, ns, dead);
		if (strcmp(got, "nfs://a.example.org/export") == 0)
			break;
		ff_nsdb_free(db);
		db = ff_nsdb_new();
		g_usleep(100 * 1000);
	}
	g_assert_cmpstr(got, ==, "nfs://a.example.org/export");
	ff_nsdb_describe(db, desc);
	g_assert_nonnull(strstr(desc->str, "state=fresh"));
	g_assert_nonnull(strstr(desc->str, consumer));

	/* no server at all: an error at once, not after the timeout */
	ff_namespace_unref(ns);
	ns = load_ns("[namespace]\n");
	ff_nsdb_free(db);
	db = ff_nsdb_new();
	start = g_get_monotonic_time();
	none = resolved(db, ns, dead);
	g_assert_cmpstr(none, ==, "-112"); /* EHOSTDOWN */
	g_assert_cmpint(g_get_monotonic_time() - start, <, 2 * G_USEC_PER_SEC);

	loc_bad = fsn_location(server, bad);
	lonely = resolved(db, ns, loc_bad);
	g_assert_cmpint(atoi(lonely), ==, -ENOENT);
	loc_missing = fsn_location(server, missing);
	absent = resolved(db, ns, loc_missing);
	g_assert_cmpint(atoi(absent), ==, -ENOENT);

	g_assert_cmpint(ff_nsdb_delete_fsn(conn, fsn, soon(10), &msg), ==, 0);
	g_assert_cmpint(ff_nsdb_delete_fsn(conn, bad, soon(10), &msg), ==, 0);
	g_string_free(desc, TRUE);
	ff_location_free(dead);
	ff_location_free(loc_bad);
	ff_location_free(loc_missing);
	ff_nsdb_free(db);
	ff_namespace_unref(ns);
	ff_nsdb_close(conn);
}

/* A group [nsdb NAME] with security=SECURITY and, unless `ca` is NULL, ca-file=CA. */
static struct ff_nsdb_conf *tls_conf(const char *name, const char *security, const char *ca)
{
	char *msg = NULL;
	struct ff_nsdb_conf *conf = ff_nsdb_conf_new(name, 1, &msg);

	g_assert_null(msg);
	g_assert_nonnull(conf);
	g_assert_true(ff_nsdb_conf_set(conf, "security", security, &msg));
	if (ca)
		g_assert_true(ff_nsdb_conf_set(conf, "ca-file", ca, &msg));
	g_assert_null(msg);
	return conf;
}

/* Connect anonymously to `name` as the group says and read an FSN that is not there: -ENOENT
 * when the directory answered so (the session worked), else the error of the connection or of
 * the read; *msg says why either way. With `keep`, a connection made is left in *keep. */
static int tls_read(const char *name, const char *security, const char *ca,
		    struct ff_nsdb_conn **keep, char **msg)
{
	struct ff_nsdb_conf *conf = tls_conf(name, security, ca);
	struct ff_nsdb_conn *conn = NULL;
	struct ff_nsdb_fsn *fsn = NULL;
	g_autofree char *fsn_uuid = new_uuid();
	gint64 start = g_get_monotonic_time();
	int rc;

	*msg = NULL;
	rc = ff_nsdb_connect(name, conf, soon(10), NULL, NULL, &conn, msg);
	if (rc == 0) {
		g_assert_null(*msg);
		rc = ff_nsdb_read_fsn(conn, fsn_uuid, soon(10), &fsn, NULL, msg);
		g_assert_cmpint(rc, !=, 0);
		g_assert_null(fsn);
	}
	g_assert_nonnull(*msg);
	g_test_message("%s security=%s ca-file=%s: %d %s", name, security, ca ? ca : "(none)", rc,
		       *msg);
	/* a refusal is quick: no wait for the deadline */
	g_assert_cmpint(g_get_monotonic_time() - start, <, 5 * G_USEC_PER_SEC);
	if (keep)
		*keep = conn;
	else
		ff_nsdb_close(conn);
	ff_nsdb_conf_free(conf);
	return rc;
}

/* The directory answered over TLS: the FSN read is not there, and the message says so. */
static void assert_answered(int rc, char *msg)
{
	g_assert_cmpint(rc, ==, -ENOENT);
	g_assert_nonnull(strstr(msg, "has no FSN"));
	g_free(msg);
}

/* No answer: the connection or the read failed for another reason than a missing FSN. */
static void assert_refused(int rc, char *msg)
{
	g_assert_cmpint(rc, <, 0);
	g_assert_cmpint(rc, !=, -ENOENT);
	g_assert_null(strstr(msg, "has no FSN"));
	g_free(msg);
}

/* No answer: the server's certificate is refused. */
static void assert_cert_refused(int rc, char *msg)
{
	g_assert_nonnull(strstr(msg, "certificate is refused"));
	assert_refused(rc, msg);
}

/* StartTLS and LDAP over TLS with the CA of the test servers; refused without it (the system's
 * CAs do not know it), and plain LDAP to the TLS port gets no answer. Each connection has TLS
 * settings of its own: a refusal leaves an open one working. */
static void test_tls(void)
{
	g_autofree char *fsn_uuid = new_uuid();
	struct ff_nsdb_conn *conn = NULL;
	struct ff_nsdb_fsn *fsn = NULL;
	char *msg = NULL;
	int rc;

	g_assert_nonnull(server);
	g_assert_nonnull(ldaps);   /* NSDB_LDAPS_PORT in servers.env */
	g_assert_nonnull(ca_file); /* NSDB_CA_FILE */

	rc = tls_read(server, "starttls", ca_file, &conn, &msg);
	assert_answered(rc, msg);
	rc = tls_read(ldaps, "ldaps", ca_file, NULL, &msg);
	assert_answered(rc, msg);

	rc = tls_read(server, "starttls", NULL, NULL, &msg);
	g_assert_nonnull(strstr(msg, "StartTLS")); /* refused at the handshake */
	assert_cert_refused(rc, msg);
	rc = tls_read(ldaps, "ldaps", NULL, NULL, &msg);
	assert_cert_refused(rc, msg);
	rc = tls_read(ldaps, "none", NULL, NULL, &msg);
	assert_refused(rc, msg);
	rc = tls_read(ldaps, "none", ca_file, NULL, &msg);
	assert_refused(rc, msg);

	/* the first connection still reads, and a new one with the CA still works */
	g_assert_nonnull(conn);
	rc = ff_nsdb_read_fsn(conn, fsn_uuid, soon(10), &fsn, NULL, &msg);
	assert_answered(rc, msg);
	ff_nsdb_close(conn);
	rc = tls_read(server, "starttls", ca_file, NULL, &msg);
	assert_answered(rc, msg);
}

static void set_or_unset(const char *var, const char *value)
{
	if (value)
		g_setenv(var, value, TRUE);
	else
		g_unsetenv(var);
}

/* Run this test in a subprocess whose libldap takes its CAs from LDAPTLS_CACERT=`file` and
 * LDAPTLS_CACERTDIR=`dir` (NULL: unset), as it would from ldap.conf. */
static void trap_with_cas(const char *file, const char *dir)
{
	g_autofree char *old_file = g_strdup(g_getenv("LDAPTLS_CACERT"));
	g_autofree char *old_dir = g_strdup(g_getenv("LDAPTLS_CACERTDIR"));

	set_or_unset("LDAPTLS_CACERT", file);
	set_or_unset("LDAPTLS_CACERTDIR", dir);
	g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
	set_or_unset("LDAPTLS_CACERT", old_file);
	set_or_unset("LDAPTLS_CACERTDIR", old_dir);
	g_test_trap_assert_passed();
}

/* Without ca-file, the CAs the system trusts are those libldap's configuration names (TLS_CACERT
 * and TLS_CACERTDIR of ldap.conf, or the environment's LDAPTLS_CACERT and LDAPTLS_CACERTDIR):
 * the test CA named either way is trusted. With a ca-file, its CAs alone are: a file that holds
 * no certificate trusts none, whatever the system's configuration names. */
static void test_tls_system_cas(void)
{
	g_autofree char *nocert = g_build_filename(tmpdir, "nocert.pem", NULL);
	g_autofree char *dir = g_build_filename(tmpdir, "cas", NULL);
	g_autofree char *copy = g_build_filename(dir, "ca.crt", NULL);
	g_autofree char *pem = NULL;
	char *msg = NULL;
	int rc;

	g_assert_nonnull(server);
	g_assert_nonnull(ldaps);
	g_assert_nonnull(ca_file);
	g_assert_true(g_file_set_contents(nocert, "# no certificate here\n", -1, NULL));
	if (g_test_subprocess()) {
		rc = tls_read(server, "starttls", NULL, NULL, &msg);
		assert_answered(rc, msg);
		rc = tls_read(ldaps, "ldaps", NULL, NULL, &msg);
		assert_answered(rc, msg);
		rc = tls_read(server, "starttls", nocert, NULL, &msg);
		assert_cert_refused(rc, msg);
		rc = tls_read(ldaps, "ldaps", nocert, NULL, &msg);
		assert_cert_refused(rc, msg);
		g_unlink(nocert);
		return;
	}
	g_assert_true(g_file_get_contents(ca_file, &pem, NULL, NULL));
	g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
	g_assert_true(g_file_set_contents(copy, pem, -1, NULL));
	trap_with_cas(ca_file, NULL);
	trap_with_cas(nocert, dir);
	g_unlink(copy);
	g_rmdir(dir);
	g_unlink(nocert);
}

int main(int argc, char **argv)
{
	const char *builddir = g_getenv("FEDFUSE_BUILDDIR");
	g_autofree char *dirs = NULL, *port = NULL, *cport = NULL, *lport = NULL, *pwfile = NULL;
	int rc;

	g_test_init(&argc, &argv, NULL);
	dirs = g_strdup_printf("%1$s/backends/nfs/.libs:%1$s/backends/smb/.libs",
			       builddir ? builddir : ".");
	g_setenv("FEDFUSE_BACKEND_DIR", dirs, TRUE);
	tmpdir = g_dir_make_tmp("nsdb-XXXXXX", NULL);
	port = servers_env("NSDB_PORT");
	cport = servers_env("NSDB_CONSUMER_PORT");
	lport = servers_env("NSDB_LDAPS_PORT");
	ca_file = servers_env("NSDB_CA_FILE");
	pwfile = servers_env("NSDB_ADMIN_PW_FILE");
	admin_dn = servers_env("NSDB_ADMIN_DN");
	if (port)
		server = g_strdup_printf("127.0.0.1:%s", port);
	if (cport)
		consumer = g_strdup_printf("127.0.0.1:%s", cport);
	if (lport)
		ldaps = g_strdup_printf("127.0.0.1:%s", lport);
	if (pwfile)
		g_file_get_contents(pwfile, &password, NULL, NULL);

	g_test_add_func("/nsdb/ldap/write-read", test_write_read);
	g_test_add_func("/nsdb/ldap/tls", test_tls);
	g_test_add_func("/nsdb/ldap/tls-system-cas", test_tls_system_cas);
	g_test_add_func("/nsdb/resolve/order-going-ttl", test_resolve_order_ttl);
	g_test_add_func("/nsdb/resolve/replicas-and-errors", test_resolve_replicas_and_errors);
	rc = g_test_run();

	g_free(server);
	g_free(consumer);
	g_free(ldaps);
	g_free(ca_file);
	g_free(admin_dn);
	g_free(password);
	for (const char *const *f = (const char *const[]){ "ns.conf", "nocert.pem", NULL }; *f;
	     f++) {
		g_autofree char *path = g_build_filename(tmpdir, *f, NULL);

		g_unlink(path);
	}
	g_rmdir(tmpdir);
	g_free(tmpdir);
	return rc;
}
