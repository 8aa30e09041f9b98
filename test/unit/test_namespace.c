/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_namespace.c - unit tests of the namespace file parser and of the location URI parser
 * (fedfuse/namespace.c): a full valid file, then every error message with its exact line, then
 * random input that must never crash the URI or file parsers.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fedfuse/namespace.h"
#include "fedfuse/nsdb.h"

static char *tmpdir;

/* `s` with every "@D@" replaced by the test's temporary directory. */
static char *subst(const char *s)
{
	char **parts = g_strsplit(s, "@D@", -1);
	char *out = g_strjoinv(tmpdir, parts);

	g_strfreev(parts);
	return out;
}

static char *write_len(const char *name, const char *text, gssize len)
{
	char *path = g_build_filename(tmpdir, name, NULL);
	GError *err = NULL;

	g_file_set_contents(path, text, len, &err);
	g_assert_no_error(err);
	return path;
}

static char *write_conf(const char *name, const char *text)
{
	char *body = subst(text);
	char *path = write_len(name, body, -1);

	g_free(body);
	return path;
}

static void expect_load_error_check(const char *text, const char *tail, ff_location_check_fn check,
				    void *data)
{
	char *path = write_conf("ns.conf", text);
	char *want_tail = subst(tail);
	char *want = g_strdup_printf("%s:%s", path, want_tail);
	GError *err = NULL;
	struct ff_namespace *ns = ff_namespace_load(path, check, data, &err);

	g_assert_null(ns);
	g_assert_nonnull(err);
	g_assert_cmpstr(err->message, ==, want);
	g_error_free(err);
	g_free(want);
	g_free(want_tail);
	g_free(path);
}

static void expect_load_error(const char *text, const char *tail)
{
	expect_load_error_check(text, tail, NULL, NULL);
}

static struct ff_namespace *load_ok(const char *text, ff_location_check_fn check, void *data)
{
	char *path = write_conf("ok.conf", text);
	GError *err = NULL;
	struct ff_namespace *ns = ff_namespace_load(path, check, data, &err);

	g_assert_no_error(err);
	g_assert_nonnull(ns);
	g_free(path);
	return ns;
}

static const struct ff_location *loc_at(const struct ff_referral *r, guint i)
{
	g_assert_cmpuint(i, <, r->locations->len);
	return g_ptr_array_index(r->locations, i);
}

/* ---- a valid file ------------------------------------------------------------------------- */

static const char full_conf[] =
	"# A namespace with every key.\n"			     /* 1 */
	"[namespace]\n"						     /* 2 */
	"junction-cache-ttl = 60\n"				     /* 3 */
	"attr-timeout=0.5\n"					     /* 4 */
	"timeout=30\n"						     /* 5 */
	"\n"							     /* 6 */
	"[/projects/alpha]\n"					     /* 7 */
	"  # replicas in order of preference\n"			     /* 8 */
	"locations=nfs://filer1.example.org/export/alpha?version=4;" /* 9 */
	"smb://filer2.example.org/alpha\n"
	"\n"	       /* 10 */
	"[/home]   \n" /* 11 */
	"locations = file:///srv/home ; nfs://[::1]:2050/export/home?version=3&mountport=20048"
	" ; smb://nas.example.org:4445/home/users;\n"	      /* 12 */
	"read-only=true\n"				      /* 13 */
	"timeout=5\n"					      /* 14 */
	"attr-timeout=0\n"				      /* 15 */
	"credentials=@D@/good.cred\n"			      /* 16 */
	"on-unreachable=skip\n"				      /* 17 */
	"uid=root\n"					      /* 18 */
	"gid=1234\n"					      /* 19 */
	"file-mode=0600\n"				      /* 20 */
	"dir-mode=700\n"				      /* 21 */
	"\n"						      /* 22 */
	"[/]\n"						      /* 23 */
	"locations=file://localhost/srv/root\n"		      /* 24 */
	"\n"						      /* 25 */
	"[/projects/alpha/beta]\n"			      /* 26 */
	"locations=smb://filer2.example.org/beta/sub%20dir\n" /* 27 */
	"\n"						      /* 28 */
	"[/corp/x/y]\n"					      /* 29 */
	"locations=file:///srv/y\n";			      /* 30 */

/* A check callback that sees the options already filled in, and counts its calls. */
static int check_count(const struct ff_location_spec *spec, void *data, char **msg)
{
	int *calls = data;

	(*calls)++;
	if (strcmp(spec->uri, "file:///srv/home") == 0) {
		g_assert_cmpfloat(spec->timeout, ==, 5);
		g_assert_true(spec->read_only);
		g_assert_true(spec->uid_set);
		g_assert_nonnull(spec->credentials);
	}
	return 0;
}

static void test_valid_full(void)
{
	int calls = 0;
	struct ff_namespace *ns = load_ok(full_conf, check_count, &calls);
	const struct ff_referral *r;
	const struct ff_location *l;
	char *cred = subst("@D@/good.cred");

	g_assert_cmpint(calls, ==, 8);
	g_assert_cmpfloat(ns->junction_cache_ttl, ==, 60);
	g_assert_cmpfloat(ns->attr_timeout, ==, 0.5);
	g_assert_cmpfloat(ns->timeout, ==, 30);
	g_assert_cmpuint(ns->referrals->len, ==, 5);

	/* file order, inherited settings, two replicas in order */
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_cmpstr(r->path, ==, "/projects/alpha");
	g_assert_cmpint(r->line, ==, 7);
	g_assert_cmpuint(r->locations->len, ==, 2);
	g_assert_false(r->read_only);
	g_assert_cmpfloat(r->timeout, ==, 30);
	g_assert_cmpfloat(r->attr_timeout, ==, 0.5);
	g_assert_cmpint(r->on_unreachable, ==, FF_UNREACHABLE_ERROR);
	g_assert_null(r->credentials);
	l = loc_at(r, 0);
	g_assert_cmpint(l->line, ==, 9);
	g_assert_cmpstr(l->spec.uri, ==, "nfs://filer1.example.org/export/alpha?version=4");
	g_assert_cmpstr(l->spec.scheme, ==, "nfs");
	g_assert_cmpstr(l->spec.host, ==, "filer1.example.org");
	g_assert_cmpint(l->spec.port, ==, 0);
	g_assert_cmpstr(l->spec.path, ==, "/export/alpha");
	g_assert_cmpstr(l->spec.query, ==, "version=4");
	g_assert_cmpfloat(l->spec.timeout, ==, 30);
	g_assert_false(l->spec.uid_set);
	g_assert_false(l->spec.gid_set);
	g_assert_cmpuint(l->spec.file_mode, ==, 0755);
	g_assert_cmpuint(l->spec.dir_mode, ==, 0755);
	l = loc_at(r, 1);
	g_assert_cmpstr(l->spec.scheme, ==, "smb");
	g_assert_cmpstr(l->spec.host, ==, "filer2.example.org");
	g_assert_cmpstr(l->spec.path, ==, "/alpha");
	g_assert_null(l->spec.query);

	/* every referral key, three replicas, a trailing ';' and spaces around entries */
	r = g_ptr_array_index(ns->referrals, 1);
	g_assert_cmpstr(r->path, ==, "/home");
	g_assert_cmpint(r->line, ==, 11);
	g_assert_cmpuint(r->locations->len, ==, 3);
	g_assert_true(r->read_only);
	g_assert_cmpfloat(r->timeout, ==, 5);
	g_assert_cmpfloat(r->attr_timeout, ==, 0);
	g_assert_cmpint(r->on_unreachable, ==, FF_UNREACHABLE_SKIP);
	g_assert_cmpstr(r->credentials, ==, cred);
	l = loc_at(r, 0);
	g_assert_cmpstr(l->spec.uri, ==, "file:///srv/home");
	g_assert_cmpstr(l->spec.scheme, ==, "file");
	g_assert_null(l->spec.host);
	g_assert_cmpstr(l->spec.path, ==, "/srv/home");
	g_assert_cmpint(l->line, ==, 12);
	g_assert_true(l->spec.read_only);
	g_assert_cmpfloat(l->spec.timeout, ==, 5);
	g_assert_cmpstr(l->spec.credentials, ==, cred);
	g_assert_true(l->spec.uid_set);
	g_assert_cmpuint(l->spec.uid, ==, 0);
	g_assert_true(l->spec.gid_set);
	g_assert_cmpuint(l->spec.gid, ==, 1234);
	g_assert_cmpuint(l->spec.file_mode, ==, 0600);
	g_assert_cmpuint(l->spec.dir_mode, ==, 0700);
	l = loc_at(r, 1);
	g_assert_cmpstr(l->spec.host, ==, "::1");
	g_assert_cmpint(l->spec.port, ==, 2050);
	g_assert_cmpstr(l->spec.path, ==, "/export/home");
	g_assert_cmpstr(l->spec.query, ==, "version=3&mountport=20048");
	g_assert_cmpuint(l->spec.dir_mode, ==, 0700);
	l = loc_at(r, 2);
	g_assert_cmpstr(l->spec.host, ==, "nas.example.org");
	g_assert_cmpint(l->spec.port, ==, 4445);
	g_assert_cmpstr(l->spec.path, ==, "/home/users");

	/* "/" as a referral, file://localhost */
	r = g_ptr_array_index(ns->referrals, 2);
	g_assert_cmpstr(r->path, ==, "/");
	g_assert_true(ns->root->referral == r);
	l = loc_at(r, 0);
	g_assert_cmpstr(l->spec.host, ==, "localhost"); /* the local backend's to read */
	g_assert_cmpstr(l->spec.path, ==, "/srv/root");

	/* percent-decoding of the path; the URI stays as written */
	r = g_ptr_array_index(ns->referrals, 3);
	l = loc_at(r, 0);
	g_assert_cmpstr(l->spec.uri, ==, "smb://filer2.example.org/beta/sub%20dir");
	g_assert_cmpstr(l->spec.path, ==, "/beta/sub dir");

	g_free(cred);
	ff_namespace_unref(ns);
}

static void test_tree(void)
{
	int calls = 0;
	struct ff_namespace *ns = load_ok(full_conf, check_count, &calls);
	const struct ff_ns_node *root = ns->root, *n, *alpha;
	static const char *const order[] = { "corp", "home", "projects" };

	/* root, then nodes in order of creation, indexed by id - 1 */
	g_assert_cmpuint(root->id, ==, 1);
	g_assert_cmpstr(root->name, ==, "");
	g_assert_cmpstr(root->path, ==, "/");
	g_assert_null(root->parent);
	g_assert_cmpuint(ns->nodes->len, ==, 8);
	for (guint i = 0; i < ns->nodes->len; i++) {
		n = g_ptr_array_index(ns->nodes, i);
		g_assert_cmpuint(n->id, ==, i + 1);
		g_assert_true(ff_namespace_find(ns, n->path) == n);
	}

	/* child_list sorted by name, whatever the file order */
	g_assert_cmpuint(root->child_list->len, ==, 3);
	g_assert_cmpuint(g_hash_table_size(root->children), ==, 3);
	for (guint i = 0; i < 3; i++) {
		n = g_ptr_array_index(root->child_list, i);
		g_assert_cmpstr(n->name, ==, order[i]);
		g_assert_true(n->parent == root);
		g_assert_true(ff_ns_node_child(root, order[i]) == n);
	}
	g_assert_null(ff_ns_node_child(root, "nope"));

	/* virtual directories and a referral below a referral */
	n = ff_namespace_find(ns, "/projects");
	g_assert_nonnull(n);
	g_assert_null(n->referral);
	g_assert_cmpstr(n->path, ==, "/projects");
	alpha = ff_namespace_find(ns, "/projects/alpha");
	g_assert_nonnull(alpha);
	g_assert_nonnull(alpha->referral);
	g_assert_cmpstr(alpha->referral->path, ==, "/projects/alpha");
	g_assert_true(alpha->parent == n);
	n = ff_ns_node_child(alpha, "beta");
	g_assert_nonnull(n);
	g_assert_cmpstr(n->path, ==, "/projects/alpha/beta");
	g_assert_cmpstr(n->referral->path, ==, "/projects/alpha/beta");
	g_assert_true(ff_namespace_find(ns, "/") == root);
	g_assert_null(ff_namespace_find(ns, "/corp/x/y/z"));
	g_assert_null(ff_namespace_find(ns, "/corp/"));
	g_assert_null(ff_namespace_find(ns, "/corp//x"));
	g_assert_null(ff_namespace_find(ns, "corp"));
	g_assert_null(ff_namespace_find(ns, ""));
	g_assert_null(ff_namespace_find(ns, "/co"));
	g_assert_nonnull(ff_namespace_find(ns, "/corp/x"));
	g_assert_null(ff_namespace_find(ns, "/corp/x")->referral);
	ff_namespace_unref(ns);
}

static void check_resolve(const struct ff_namespace *ns, const char *path, const char *referral,
			  const char *rest)
{
	const char *got_rest = NULL;
	const struct ff_referral *r = ff_namespace_resolve(ns, path, &got_rest);

	if (!referral) {
		g_assert_null(r);
		return;
	}
	g_assert_nonnull(r);
	g_assert_cmpstr(r->path, ==, referral);
	g_assert_cmpstr(got_rest, ==, rest);
	/* rest points into path */
	g_assert_true(got_rest >= path && got_rest <= path + strlen(path));
	g_assert_true(got_rest == path + strlen(path) - strlen(rest));
}

static void test_resolve(void)
{
	int calls = 0;
	struct ff_namespace *ns = load_ok(full_conf, check_count, &calls);

	check_resolve(ns, "/", "/", "");
	check_resolve(ns, "/etc/passwd", "/", "etc/passwd");
	check_resolve(ns, "/home", "/home", "");
	check_resolve(ns, "/home/a/b", "/home", "a/b");
	check_resolve(ns, "/homex", "/", "homex");
	check_resolve(ns, "/projects", "/", "projects");
	check_resolve(ns, "/projects/alpha", "/projects/alpha", "");
	check_resolve(ns, "/projects/alpha/file", "/projects/alpha", "file");
	check_resolve(ns, "/projects/alpha/beta", "/projects/alpha/beta", "");
	check_resolve(ns, "/projects/alpha/beta/c/d", "/projects/alpha/beta", "c/d");
	check_resolve(ns, "/projects/alpha/betax", "/projects/alpha", "betax");
	check_resolve(ns, "/corp/x/y/z", "/corp/x/y", "z");
	check_resolve(ns, "/corp/x/z", "/", "corp/x/z");
	g_assert_null(ff_namespace_resolve(ns, "relative", NULL));
	g_assert_nonnull(ff_namespace_resolve(ns, "/home/x", NULL));
	ff_namespace_unref(ns);
}

static void test_describe(void)
{
	int calls = 0;
	struct ff_namespace *ns = load_ok(full_conf, check_count, &calls);
	char *text = ff_namespace_describe(ns);
	char *want = subst(
		"file=@D@/ok.conf\n"
		"junction-cache-ttl=60\n"
		"attr-timeout=0.5\n"
		"timeout=30\n"
		"watch=true\n"
		"nsdb-stale-grace=300\n"
		"/ referral locations=file://localhost/srv/root read-only=false timeout=30 "
		"attr-timeout=0.5 watch=true on-unreachable=error file-mode=0755 dir-mode=0755\n"
		"/corp virtual\n"
		"/corp/x virtual\n"
		"/corp/x/y referral locations=file:///srv/y read-only=false timeout=30 "
		"attr-timeout=0.5 watch=true on-unreachable=error file-mode=0755 dir-mode=0755\n"
		"/home referral locations=file:///srv/home;"
		"nfs://[::1]:2050/export/home?version=3&mountport=20048;"
		"smb://nas.example.org:4445/home/users read-only=true timeout=5 attr-timeout=0 "
		"watch=true on-unreachable=skip credentials=@D@/good.cred uid=0 gid=1234 file-mode=0600 "
		"dir-mode=0700\n"
		"/projects virtual\n"
		"/projects/alpha referral "
		"locations=nfs://filer1.example.org/export/alpha?version=4;"
		"smb://filer2.example.org/alpha read-only=false timeout=30 attr-timeout=0.5 "
		"watch=true on-unreachable=error file-mode=0755 dir-mode=0755\n"
		"/projects/alpha/beta referral locations=smb://filer2.example.org/beta/sub%20dir "
		"read-only=false timeout=30 attr-timeout=0.5 watch=true on-unreachable=error "
		"file-mode=0755 dir-mode=0755\n");

	g_assert_cmpstr(text, ==, want);
	g_free(want);
	g_free(text);
	ff_namespace_unref(ns);
}

static bool location_watched(const struct ff_namespace *ns, const char *path)
{
	const struct ff_referral *r = ff_namespace_resolve(ns, path, NULL);

	g_assert_nonnull(r);
	return loc_at(r, 0)->spec.watch;
}

/* watch= in [namespace] is the referrals' default; a referral may say otherwise. */
static void test_watch(void)
{
	struct ff_namespace *ns = load_ok("[namespace]\nwatch=false\n"
					  "[/a]\nlocations=file:///srv/a\n"
					  "[/b]\nlocations=file:///srv/b\nwatch=true\n",
					  NULL, NULL);

	g_assert_false(ns->watch);
	g_assert_false(location_watched(ns, "/a"));
	g_assert_true(location_watched(ns, "/b"));
	ff_namespace_unref(ns);

	ns = load_ok("[/a]\nlocations=file:///srv/a\nwatch=0\n", NULL, NULL);
	g_assert_false(location_watched(ns, "/a"));
	ff_namespace_unref(ns);
}

/* Two referrals that show the same local objects are not watched (changes made through one
 * would never reach the other's cache); ones beside each other are. */
static void test_watch_overlaps(void)
{
	struct ff_namespace *ns = load_ok("[/a]\nlocations=file:///srv/data\n"
					  "[/b]\nlocations=file:///srv/data/sub\n"
					  "[/c]\nlocations=file:///srv/datab\n"
					  "[/d]\nlocations=file:///srv/other\n"
					  "[/e]\nlocations=file:///srv/other\n"
					  "[/f]\nlocations=nfs://h/srv/data\n",
					  NULL, NULL);

	g_assert_false(location_watched(ns, "/a"));
	g_assert_false(location_watched(ns, "/b"));
	g_assert_true(location_watched(ns, "/c")); /* /srv/datab is not below /srv/data */
	g_assert_false(location_watched(ns, "/d"));
	g_assert_false(location_watched(ns, "/e"));
	g_assert_true(location_watched(ns, "/f")); /* not a local path */
	g_assert_true(((const struct ff_referral *)ff_namespace_resolve(ns, "/a", NULL))->watch);
	ff_namespace_unref(ns);

	ns = load_ok("[/]\nlocations=file:///\n[/x]\nlocations=file:///srv/x\n", NULL, NULL);
	g_assert_false(location_watched(ns, "/"));
	g_assert_false(location_watched(ns, "/x"));
	ff_namespace_unref(ns);
}

static void test_defaults(void)
{
	struct ff_namespace *ns = load_ok("[/a/b]\nlocations=file:///a\n", NULL, NULL);
	const struct ff_referral *r;
	const struct ff_location *l;
	const char *rest = "unchanged";

	g_assert_cmpfloat(ns->junction_cache_ttl, ==, 300);
	g_assert_cmpfloat(ns->attr_timeout, ==, 1.0);
	g_assert_cmpfloat(ns->timeout, ==, 15);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_false(r->read_only);
	g_assert_cmpfloat(r->timeout, ==, 15);
	g_assert_cmpfloat(r->attr_timeout, ==, 1.0);
	g_assert_cmpint(r->on_unreachable, ==, FF_UNREACHABLE_ERROR);
	g_assert_null(r->credentials);
	l = loc_at(r, 0);
	g_assert_false(l->spec.read_only);
	g_assert_null(l->spec.credentials);
	g_assert_false(l->spec.uid_set);
	g_assert_false(l->spec.gid_set);
	g_assert_cmpuint(l->spec.file_mode, ==, 0755);
	g_assert_cmpuint(l->spec.dir_mode, ==, 0755);
	g_assert_cmpfloat(l->spec.timeout, ==, 15);
	g_assert_true(ns->watch);
	g_assert_true(r->watch);
	g_assert_true(l->spec.watch);

	/* no "/" referral: the root and /a are virtual */
	g_assert_null(ns->root->referral);
	g_assert_null(ff_namespace_resolve(ns, "/", &rest));
	g_assert_null(ff_namespace_resolve(ns, "/a", &rest));
	g_assert_null(ff_namespace_resolve(ns, "/x/y", &rest));
	g_assert_cmpstr(rest, ==, "unchanged");
	check_resolve(ns, "/a/b/c", "/a/b", "c");
	g_assert_cmpuint(ff_namespace_find(ns, "/a")->id, ==, 2);
	g_assert_cmpuint(ff_namespace_find(ns, "/a/b")->id, ==, 3);

	/* reference counting */
	g_assert_true(ff_namespace_ref(ns) == ns);
	g_assert_cmpint(ns->refcount, ==, 2);
	ff_namespace_unref(ns);
	g_assert_cmpint(ns->refcount, ==, 1);
	ff_namespace_unref(ns);
	ff_namespace_unref(NULL);
	g_assert_null(ff_namespace_ref(NULL));
}

/* An empty file is a valid, empty namespace; CRLF line ends and booleans 1/0 are GKeyFile's. */
static void test_valid_edge(void)
{
	struct ff_namespace *ns = load_ok("", NULL, NULL);
	const struct ff_referral *r;
	char *text;

	g_assert_cmpuint(ns->referrals->len, ==, 0);
	g_assert_cmpuint(ns->nodes->len, ==, 1);
	g_assert_null(ff_namespace_resolve(ns, "/x", NULL));
	text = ff_namespace_describe(ns);
	g_assert_nonnull(strstr(text, "\n/ virtual\n"));
	g_free(text);
	ff_namespace_unref(ns);

	ns = load_ok("[/a]\r\nlocations=file:///a\r\nread-only=1\r\n[namespace]\r\ntimeout=2.5\r\n",
		     NULL, NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_true(r->read_only);
	/* [namespace] applies to referrals before it in the file too */
	g_assert_cmpfloat(r->timeout, ==, 2.5);
	ff_namespace_unref(ns);

	/* a ';' inside a URI is "\;"; describe writes it back the same way */
	ns = load_ok("[/a]\nlocations=smb://h/s/a\\;b;nfs://h/x\n", NULL, NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_cmpuint(r->locations->len, ==, 2);
	g_assert_cmpstr(loc_at(r, 0)->spec.path, ==, "/s/a;b");
	text = ff_namespace_describe(ns);
	g_assert_nonnull(strstr(text, "locations=smb://h/s/a\\;b;nfs://h/x "));
	g_free(text);
	ff_namespace_unref(ns);
}

/* ---- errors: "FILE:LINE: message" --------------------------------------------------------- */

struct error_case {
	const char *name;
	const char *text;
	const char *error; /* after "FILE:"; "@D@" is the temporary directory */
};

#define LOC "locations=file:///a\n"

static const struct error_case error_cases[] = {
	/* syntax */
	{ "syntax/line", "[/a]\n" LOC "foo\n",
	  "3: syntax error: 'foo' is not a [group], a key=value or a # comment" },
	{ "syntax/semicolon-comment", "; old-style comment\n[/a]\n" LOC,
	  "1: syntax error: '; old-style comment' is not a [group], a key=value or a # comment" },
	{ "syntax/group-trailing-text", "[/a] # no\n" LOC,
	  "1: syntax error: '[/a] # no' is not a [group], a key=value or a # comment" },
	{ "syntax/group-unclosed", "# c\n[/a\n" LOC,
	  "2: syntax error: '[/a' is not a [group], a key=value or a # comment" },
	{ "syntax/empty-group", "\n[]\n", "2: empty group name []" },
	{ "syntax/bracket-in-group", "[/a[b]\n" LOC, "1: invalid group name '[/a[b]'" },
	{ "syntax/control-in-group", "[/a\001]\n" LOC, "1: invalid group name '[/a\\001]'" },
	{ "syntax/no-key-name", "[/a]\n   = x\n", "2: missing key name before '='" },
	{ "syntax/key-outside-group", "\n# c\n" LOC "[/a]\n",
	  "3: key 'locations' outside any group (the file must start with a [group])" },
	{ "syntax/not-utf8", "[/a]\nlocations=file:///\xff\n", "2: line is not valid UTF-8" },
	{ "syntax/byte-order-mark", "\xef\xbb\xbf[/a]\n" LOC,
	  "1: the file starts with a byte order mark; save it without one" },
	/* groups and paths */
	{ "group/unknown", "[/a]\n" LOC "\n[global]\n",
	  "4: unknown group [global]: expected [namespace], [nsdb HOST[:PORT]] or an absolute "
	  "path" },
	{ "group/relative-path", "[home/user]\n" LOC, "1: path 'home/user' is not absolute" },
	{ "group/dotdot", "[/a/../b]\n" LOC, "1: path '/a/../b' is not normalised" },
	{ "group/dotdot-end", "[/a/..]\n" LOC, "1: path '/a/..' is not normalised" },
	{ "group/dot", "[/a/./b]\n" LOC, "1: path '/a/./b' is not normalised" },
	{ "group/slash-dot", "[/.]\n" LOC, "1: path '/.' is not normalised" },
	{ "group/double-slash", "[/a//b]\n" LOC, "1: path '/a//b' is not normalised" },
	{ "group/slash-slash", "[//]\n" LOC, "1: path '//' is not normalised" },
	{ "group/trailing-slash", "[/a/]\n" LOC, "1: path '/a/' is not normalised" },
	{ "group/duplicate-referral",
	  "[/media]\nlocations=smb://nas/media\n\n[/home]\n" LOC "\n[/media]\n"
	  "locations=smb://nas/m2\n",
	  "7: duplicate referral '/media' (first at line 1)" },
	{ "group/duplicate-namespace", "[namespace]\ntimeout=1\n[/a]\n" LOC "[namespace]\n",
	  "5: duplicate group [namespace] (first at line 1)" },
	/* keys */
	{ "key/unknown", "[/home]\nlocations=file:///h\nlocaions=x\n",
	  "3: unknown key 'locaions' in [/home]" },
	{ "key/unknown-in-namespace", "[namespace]\ntimeouts=3\n",
	  "2: unknown key 'timeouts' in [namespace]" },
	{ "key/referral-key-in-namespace", "[namespace]\nread-only=true\n",
	  "2: unknown key 'read-only' in [namespace]" },
	{ "key/locale", "[/home]\nlocations[de]=file:///h\n",
	  "2: unknown key 'locations[de]' in [/home]" },
	{ "key/duplicate", "[/a]\n" LOC "read-only=true\nread-only=false\n",
	  "4: duplicate key 'read-only' in [/a] (first at line 3)" },
	{ "key/duplicate-spaced", "[/a]\n" LOC "locations  =file:///b\n",
	  "3: duplicate key 'locations' in [/a] (first at line 2)" },
	/* values */
	{ "value/timeout-word", "[namespace]\ntimeout=abc\n",
	  "2: timeout: 'abc' is not a positive number of seconds" },
	{ "value/timeout-negative", "[/a]\n" LOC "timeout=-1\n",
	  "3: timeout: '-1' is not a positive number of seconds" },
	{ "value/timeout-zero", "[namespace]\ntimeout=0\n",
	  "2: timeout: '0' is not a positive number of seconds" },
	{ "value/timeout-nan", "[namespace]\ntimeout=nan\n",
	  "2: timeout: 'nan' is not a positive number of seconds" },
	{ "value/timeout-hex", "[namespace]\ntimeout=0x10\n",
	  "2: timeout: '0x10' is not a positive number of seconds" },
	{ "value/timeout-overflow", "[namespace]\ntimeout=1e999\n",
	  "2: timeout: '1e999' is not a positive number of seconds" },
	{ "value/timeout-huge", "[namespace]\ntimeout=1e9\n",
	  "2: timeout: '1e9' is more than 1000000 seconds" },
	{ "value/attr-timeout-negative", "[namespace]\nattr-timeout=-0.5\n",
	  "2: attr-timeout: '-0.5' is not a number of seconds (0 or more)" },
	{ "value/attr-timeout-referral", "[/a]\n" LOC "attr-timeout=-1\n",
	  "3: attr-timeout: '-1' is not a number of seconds (0 or more)" },
	{ "value/ttl-unit", "[namespace]\njunction-cache-ttl=5s\n",
	  "2: junction-cache-ttl: '5s' is not a number of seconds (0 or more)" },
	{ "value/ttl-empty", "[namespace]\njunction-cache-ttl=\n",
	  "2: junction-cache-ttl: '' is not a number of seconds (0 or more)" },
	{ "value/bool", "[/a]\n" LOC "read-only=yes\n",
	  "3: read-only: 'yes' is not true or false" },
	{ "value/watch", "[/a]\n" LOC "watch=on\n", "3: watch: 'on' is not true or false" },
	{ "value/watch-settings", "[namespace]\nwatch=\n", "2: watch: '' is not true or false" },
	{ "value/octal-digit", "[/a]\n" LOC "file-mode=0999\n",
	  "3: file-mode: '0999' is not an octal mode from 0000 to 07777" },
	{ "value/octal-big", "[/a]\n" LOC "dir-mode=10000\n",
	  "3: dir-mode: '10000' is not an octal mode from 0000 to 07777" },
	{ "value/octal-word", "[/a]\n" LOC "dir-mode=rwx\n",
	  "3: dir-mode: 'rwx' is not an octal mode from 0000 to 07777" },
	{ "value/octal-empty", "[/a]\n" LOC "file-mode=\n",
	  "3: file-mode: '' is not an octal mode from 0000 to 07777" },
	{ "value/uid-unknown", "[/a]\n" LOC "uid=no-such-user-fedfuse\n",
	  "3: uid: unknown user 'no-such-user-fedfuse'" },
	{ "value/uid-negative", "[/a]\n" LOC "uid=-1\n", "3: uid: unknown user '-1'" },
	{ "value/uid-range", "[/a]\n" LOC "uid=4294967295\n",
	  "3: uid: '4294967295' is out of range" },
	{ "value/uid-empty", "[/a]\n" LOC "uid=\n",
	  "3: uid: empty value; give a user name or number" },
	{ "value/gid-unknown", "[/a]\n" LOC "gid=no-such-group-fedfuse\n",
	  "3: gid: unknown group 'no-such-group-fedfuse'" },
	{ "value/gid-range", "[/a]\n" LOC "gid=99999999999999999999999\n",
	  "3: gid: '99999999999999999999999' is out of range" },
	{ "value/on-unreachable", "[/a]\n" LOC "on-unreachable=retry\n",
	  "3: on-unreachable: 'retry' is not 'error' or 'skip'" },
	{ "value/bad-escape-list", "[/a]\nlocations=file:///a\\q\n",
	  "2: locations: invalid escape sequence in 'file:///a\\q'" },
	{ "value/trailing-backslash-list", "[/a]\nlocations=file:///a\\\n",
	  "2: locations: invalid escape sequence in 'file:///a\\'" },
	{ "value/semicolon-escape-scalar", "[/a]\n" LOC "credentials=/a\\;b\n",
	  "3: credentials: invalid escape sequence in '/a\\;b'" },
	{ "value/bad-escape", "[/a]\n" LOC "credentials=\\x\n",
	  "3: credentials: invalid escape sequence in '\\x'" },
	{ "value/control-char", "[/a]\n" LOC "credentials=/a\\tb\n",
	  "3: credentials: value contains a control character" },
	/* locations */
	{ "locations/empty", "[/a]\nlocations=\n", "2: locations: no location given" },
	{ "locations/blank", "[/a]\nlocations=   \n", "2: locations: no location given" },
	{ "locations/only-separator", "[/a]\nlocations=;\n", "2: locations: empty entry in ';'" },
	{ "locations/empty-entry", "[/a]\nlocations=file:///a;;file:///b\n",
	  "2: locations: empty entry in 'file:///a;;file:///b'" },
	{ "locations/missing", "# c\n[/a]\nread-only=true\n", "2: missing 'locations' in [/a]" },
	{ "locations/twice", "[/a]\nlocations=file:///a; file:///a\n",
	  "2: location 'file:///a' is listed twice in [/a]" },
	{ "locations/second-entry-bad", "[/a]\nlocations=file:///a;gopher://h/x#y\n",
	  "2: fragment not allowed in 'gopher://h/x#y'" },
	/* URIs */
	{ "uri/scheme-too-long", "[/a]\nlocations=abcdefghijklmnopqrstuvwxyzabcdefg://x/y\n",
	  "2: bad scheme 'abcdefghijklmnopqrstuvwxyzabcdefg' in "
	  "'abcdefghijklmnopqrstuvwxyzabcdefg://x/y'" },
	{ "uri/not-a-uri", "[/a]\nlocations=/srv/a\n",
	  "2: '/srv/a' is not a location URI (file:///PATH, nfs://HOST/PATH or smb://HOST/SHARE)" },
	{ "uri/userinfo", "[/a]\nlocations=smb://bob:secret@nas/media\n",
	  "2: user name or password in 'smb://***@nas/media'; use credentials= instead" },
	{ "uri/userinfo-empty", "[/a]\nlocations=nfs://@h/x\n",
	  "2: user name or password in 'nfs://***@h/x'; use credentials= instead" },
	{ "uri/userinfo-bad-port", "[/a]\nlocations=smb://u:pw@h:99999/s\n",
	  "2: user name or password in 'smb://***@h:99999/s'; use credentials= instead" },
	{ "uri/fragment", "[/a]\nlocations=nfs://h/a#x\n",
	  "2: fragment not allowed in 'nfs://h/a#x'" },
	{ "uri/fragment-empty", "[/a]\nlocations=nfs://h/a#\n",
	  "2: fragment not allowed in 'nfs://h/a#'" },
	{ "uri/dotdot", "[/a]\nlocations=nfs://h/a/../b\n",
	  "2: path '/a/../b' in 'nfs://h/a/../b' is not normalised" },
	{ "uri/dotdot-encoded", "[/a]\nlocations=nfs://h/a/%2E%2e/b\n",
	  "2: path '/a/../b' in 'nfs://h/a/%2E%2e/b' is not normalised" },
	{ "uri/dot", "[/a]\nlocations=file:///srv/./a\n",
	  "2: path '/srv/./a' in 'file:///srv/./a' is not normalised" },
	{ "uri/slash-encoded", "[/a]\nlocations=nfs://h/a%2F%2Fb\n",
	  "2: path '/a//b' in 'nfs://h/a%2F%2Fb' is not normalised" },
	{ "uri/double-slash", "[/a]\nlocations=smb://h/share//x\n",
	  "2: path '/share//x' in 'smb://h/share//x' is not normalised" },
	{ "uri/trailing-slash", "[/a]\nlocations=file:///srv/a/\n",
	  "2: path '/srv/a/' in 'file:///srv/a/' is not normalised" },
	{ "uri/nul", "[/a]\nlocations=nfs://h/a%00b\n", "2: path of 'nfs://h/a%00b' contains %00" },
	{ "uri/control", "[/a]\nlocations=nfs://h/a%0Ab\n",
	  "2: path of 'nfs://h/a%0Ab' contains a control character" },
	{ "uri/space", "[/a]\nlocations=file:///a b\n",
	  "2: 'file:///a b' has a character not allowed in a URI at byte 10 (%-encode it)" },
	{ "uri/non-ascii",
	  "[/a]\nlocations=smb://h/m\xc3\xa9"
	  "dia\n",
	  "2: 'smb://h/m\xc3\xa9"
	  "dia' has a character not allowed in a URI at byte 10 "
	  "(%-encode it)" },
	{ "uri/not-normalised-not-utf8", "[/a]\nlocations=nfs://h/%FF/..\n",
	  "2: path '/\\377/..' in 'nfs://h/%FF/..' is not normalised" },
	{ "uri/bad-percent", "[/a]\nlocations=nfs://h/a%zz\n",
	  "2: bad %-encoding in the path of 'nfs://h/a%zz'" },
	{ "uri/bad-host", "[/a]\nlocations=nfs://h!x/y\n", "2: bad host in 'nfs://h!x/y'" },
	{ "uri/bad-ipv6", "[/a]\nlocations=nfs://[::1/x\n", "2: bad host in 'nfs://[::1/x'" },
	{ "uri/no-path", "[/a]\nlocations=nfs://h\n", "2: no path in 'nfs://h'" },
	{ "uri/file-host-encoded", "[/a]\nlocations=file://%FFx/a\n",
	  "2: bad host in 'file://%FFx/a'" },
	{ "uri/file-relative", "[/a]\nlocations=file:srv\n",
	  "2: path of 'file:srv' is not absolute" },
	{ "uri/bad-port", "[/a]\nlocations=nfs://h:99999/x\n",
	  "2: bad port in 'nfs://h:99999/x' (expected 1 to 65535)" },
	{ "uri/port-zero", "[/a]\nlocations=nfs://h:0/x\n",
	  "2: bad port in 'nfs://h:0/x' (expected 1 to 65535)" },
	{ "uri/port-word", "[/a]\nlocations=smb://h:abc/s\n",
	  "2: bad port in 'smb://h:abc/s' (expected 1 to 65535)" },
	/* credentials */
	{ "credentials/missing", "[/a]\n" LOC "credentials=@D@/nope.cred\n",
	  "3: credentials file @D@/nope.cred does not exist" },
	{ "credentials/relative", "[/a]\n" LOC "credentials=nas.cred\n",
	  "3: credentials: 'nas.cred' is not an absolute path" },
	{ "credentials/group-readable", "[/a]\n" LOC "credentials=@D@/g640.cred\n",
	  "3: credentials file @D@/g640.cred is readable by its group (mode 0640); chmod 600 it" },
	{ "credentials/group-writable", "[/a]\n" LOC "credentials=@D@/g620.cred\n",
	  "3: credentials file @D@/g620.cred is accessible by its group (mode 0620); "
	  "chmod 600 it" },
	{ "credentials/world-readable", "[/a]\n" LOC "credentials=@D@/w644.cred\n",
	  "3: credentials file @D@/w644.cred is readable by others (mode 0644); chmod 600 it" },
	{ "credentials/others-only", "[/a]\n" LOC "credentials=@D@/o604.cred\n",
	  "3: credentials file @D@/o604.cred is readable by others (mode 0604); chmod 600 it" },
	{ "credentials/unreadable", "[/a]\n" LOC "credentials=@D@/u200.cred\n",
	  "3: credentials file @D@/u200.cred is not readable by its owner (mode 0200); "
	  "chmod 600 it" },
	{ "credentials/directory", "[/a]\n" LOC "credentials=@D@\n",
	  "3: credentials file @D@ is not a regular file" },
	/* NSDBs */
	{ "nsdb/name", "[nsdb a b]\n",
	  "1: [nsdb a b]: NSDB 'a b' is not HOST, HOST:PORT or [IPV6]:PORT" },
	{ "nsdb/v6-without-brackets", "[nsdb fd00::1]\n",
	  "1: [nsdb fd00::1]: NSDB 'fd00::1' is not HOST, HOST:PORT or [IPV6]:PORT" },
	{ "nsdb/port", "[nsdb h:0]\n",
	  "1: [nsdb h:0]: NSDB 'h:0': port is not a number from 1 to 65535" },
	{ "nsdb/security", "[nsdb h]\nsecurity=tls\n",
	  "2: [nsdb h] security: 'tls' is not none, starttls or ldaps" },
	{ "nsdb/ca-relative", "[nsdb h]\nca-file=ca.pem\n",
	  "2: [nsdb h] ca-file: 'ca.pem' is not an absolute path" },
	{ "nsdb/ca-missing", "[nsdb h]\nca-file=@D@/no-such-ca.pem\n",
	  "2: [nsdb h] ca-file: cannot read '@D@/no-such-ca.pem': No such file or directory" },
	{ "nsdb/replica-twice", "[nsdb h]\nreplicas=h2;H2:389\n",
	  "2: [nsdb h] replicas: h2:389 is listed twice (or is the NSDB itself)" },
	{ "nsdb/replica-is-itself", "[nsdb h:1389]\nreplicas=h:1389\n",
	  "2: [nsdb h:1389] replicas: h:1389 is listed twice (or is the NSDB itself)" },
	{ "nsdb/replica-empty", "[nsdb h]\nreplicas=h2;;h3\n",
	  "2: [nsdb h] replicas: empty entry" },
	{ "nsdb/twice", "[nsdb h]\n[nsdb H:389]\n",
	  "2: [nsdb H:389]: NSDB h:389 is described twice (first at line 1)" },
	{ "nsdb/unknown-key", "[nsdb h]\nlocations=file:///a\n",
	  "2: unknown key 'locations' in [nsdb h]" },
	{ "nsdb/grace", "[namespace]\nnsdb-stale-grace=-1\n",
	  "2: nsdb-stale-grace: '-1' is not a number of seconds (0 or more)" },
};

/* ---- NSDBs ------------------------------------------------------------------------------- */

static void test_nsdb(void)
{
	struct ff_namespace *ns = load_ok(
		"[namespace]\nnsdb-stale-grace=60\n"
		"[nsdb NSDB1.example.org]\nsecurity=starttls\n"
		"replicas = nsdb2.example.org:1389, [FD00::2] ;\n"
		"[nsdb 10.0.0.9:1636]\nsecurity=ldaps\n"
		"[/fleet]\nlocations=fedfs://nsdb1.example.org/d2b09895-98ff-415e-ac73-565fad7b429b\n",
		NULL, NULL);
	const struct ff_nsdb_conf *conf = g_hash_table_lookup(ns->nsdbs, "nsdb1.example.org:389");
	g_autofree char *text = ff_namespace_describe(ns);
	g_autofree char *server = NULL, *uuid = NULL;
	const struct ff_referral *r = ff_namespace_resolve(ns, "/fleet", NULL);

	g_assert_cmpfloat(ns->nsdb_stale_grace, ==, 60);
	g_assert_nonnull(conf);
	g_assert_cmpint(conf->security, ==, FF_NSDB_SEC_STARTTLS);
	g_assert_cmpuint(conf->servers->len, ==, 3);
	g_assert_cmpstr(conf->servers->pdata[0], ==, "nsdb1.example.org:389");
	g_assert_cmpstr(conf->servers->pdata[1], ==, "nsdb2.example.org:1389");
	g_assert_cmpstr(conf->servers->pdata[2], ==, "[fd00::2]:389");
	conf = g_hash_table_lookup(ns->nsdbs, "10.0.0.9:1636");
	g_assert_nonnull(conf);
	g_assert_cmpint(conf->security, ==, FF_NSDB_SEC_LDAPS);
	g_assert_nonnull(strstr(text, "nsdb-stale-grace=60\nnsdb 10.0.0.9:1636 security=ldaps\n"
				      "nsdb nsdb1.example.org:389 security=starttls "
				      "replicas=nsdb2.example.org:1389;[fd00::2]:389\n"));
	g_assert_nonnull(r);
	g_assert_true(ff_nsdb_is_fsn(&loc_at(r, 0)->spec));
	g_assert_cmpint(ff_nsdb_fsn_parse(&loc_at(r, 0)->spec, &server, &uuid, NULL), ==, 0);
	g_assert_cmpstr(server, ==, "nsdb1.example.org:389");
	g_assert_cmpstr(uuid, ==, "d2b09895-98ff-415e-ac73-565fad7b429b");
	ff_namespace_unref(ns);
}

/* The rules of an FSN location, as the daemon's check applies them. */
static void test_nsdb_fsn_location(void)
{
	static const struct {
		const char *uri, *want; /* NULL: accepted */
	} cases[] = {
		{ "fedfs://h:1389/D2B09895-98FF-415E-AC73-565FAD7B429B", NULL },
		{ "fedfs://[::1]/d2b09895-98ff-415e-ac73-565fad7b429b", NULL },
		{ "fedfs:///d2b09895-98ff-415e-ac73-565fad7b429b", "names its NSDB" },
		{ "fedfs://h/d2b09895-98ff-415e-ac73-565fad7b429b?x=1", "takes no options" },
		{ "fedfs://h/d2b09895-98ff-415e-ac73-565fad7b429", "is not one FSN UUID" },
		{ "fedfs://h/d2b09895-98ff-415e-ac73-565fad7b429bb", "is not one FSN UUID" },
		{ "fedfs://h/d2b09895x98ff-415e-ac73-565fad7b429b", "is not one FSN UUID" },
		{ "fedfs://h/d2b09895-98ff-415e-ac73-565fad7b429g", "is not one FSN UUID" },
		{ "fedfs://h/a/d2b09895-98ff-415e-ac73-565fad7b429b", "is not one FSN UUID" },
		{ "fedfs://h/", "is not one FSN UUID" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct ff_location loc;
		char *msg = NULL;
		int rc;

		g_assert_true(ff_location_parse(cases[i].uri, &loc, NULL));
		rc = ff_nsdb_fsn_parse(&loc.spec, NULL, NULL, &msg);
		if (!cases[i].want) {
			g_assert_cmpint(rc, ==, 0);
			g_assert_null(msg);
		} else {
			g_assert_cmpint(rc, ==, -EINVAL);
			g_assert_nonnull(strstr(msg, cases[i].want));
		}
		g_free(msg);
		ff_location_clear(&loc);
	}
}

static void test_error_case(gconstpointer data)
{
	const struct error_case *c = data;

	expect_load_error(c->text, c->error);
}

static void test_error_missing_file(void)
{
	char *path = g_build_filename(tmpdir, "missing.conf", NULL);
	char *want = g_strdup_printf("%s:0: cannot read: %s", path, g_strerror(ENOENT));
	GError *err = NULL;

	g_assert_null(ff_namespace_load(path, NULL, NULL, &err));
	g_assert_error(err, G_FILE_ERROR, G_FILE_ERROR_NOENT);
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(want);

	/* a directory opens but cannot be read */
	want = g_strdup_printf("%s:0: cannot read: %s", tmpdir, g_strerror(EISDIR));
	g_assert_null(ff_namespace_load(tmpdir, NULL, NULL, &err));
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(want);
	g_free(path);
}

/* A file past 1 MiB (or /dev/zero) is refused as a whole, not read until memory runs out. */
static void test_error_too_large(void)
{
	size_t size = (1 << 20) + 1;
	char *text = g_malloc(size);
	char *path, *want;
	GError *err = NULL;

	memset(text, '#', size); /* one long comment */
	path = write_len("large.conf", text, size);
	want = g_strdup_printf("%s:0: larger than %d bytes", path, 1 << 20);
	g_assert_null(ff_namespace_load(path, NULL, NULL, &err));
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(want);

	want = g_strdup_printf("/dev/zero:0: larger than %d bytes", 1 << 20);
	g_assert_null(ff_namespace_load("/dev/zero", NULL, NULL, &err));
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(want);
	g_free(path);
	g_free(text);
}

static void test_error_nul_byte(void)
{
	static const char text[] = "[/a]\nlocations=file:///a\0b\n";
	char *path = write_len("nul.conf", text, sizeof(text) - 1);
	char *want = g_strdup_printf("%s:2: line contains a NUL byte", path);
	GError *err = NULL;

	g_assert_null(ff_namespace_load(path, NULL, NULL, &err));
	g_assert_error(err, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE);
	g_assert_cmpstr(err->message, ==, want);
	g_error_free(err);
	g_free(want);
	g_free(path);
}

static void test_error_long_paths(void)
{
	char *name = g_strnfill(256, 'x');
	char *text = g_strdup_printf("[/ok/%s]\n" LOC, name);
	char *want =
		g_strdup_printf("1: path '/ok/%s' has a component longer than 255 bytes", name);
	char *uri, *msg = NULL;
	struct ff_location loc;

	expect_load_error(text, want);
	g_free(want);
	g_free(text);

	/* 255 bytes is fine */
	name[255] = '\0';
	text = g_strdup_printf("[/ok/%s]\n" LOC, name);
	ff_namespace_unref(load_ok(text, NULL, NULL));
	g_free(text);

	/* URIs are bounded */
	text = g_strnfill(FF_LOCATION_URI_MAX - strlen("nfs://h/"), 'a');
	uri = g_strconcat("nfs://h/", text, NULL);
	g_assert_cmpuint(strlen(uri), ==, FF_LOCATION_URI_MAX);
	g_assert_true(ff_location_parse(uri, &loc, &msg));
	ff_location_clear(&loc);
	g_free(uri);
	uri = g_strconcat("nfs://h/a", text, NULL);
	g_assert_false(ff_location_parse(uri, &loc, &msg));
	g_assert_cmpstr(msg, ==, "location URI longer than 4096 bytes");
	g_free(msg);
	g_free(uri);
	g_free(text);
	g_free(name);
}

static void test_error_credentials_owner(void)
{
	char *path;

	if (geteuid() != 0) {
		/* cannot give a file away: use one that root owns */
		char *want = g_strdup_printf("3: credentials file /etc/passwd is owned by uid 0, "
					     "not by uid %u which runs fedfuse",
					     (unsigned int)geteuid());

		expect_load_error("[/a]\n" LOC "credentials=/etc/passwd\n", want);
		g_free(want);
		return;
	}
	path = write_conf("other.cred", "username=x\n");
	g_assert_cmpint(chmod(path, 0600), ==, 0);
	g_assert_cmpint(chown(path, 1, 1), ==, 0);
	expect_load_error("[/a]\n" LOC "credentials=@D@/other.cred\n",
			  "3: credentials file @D@/other.cred is owned by uid 1, not by uid 0 "
			  "which runs fedfuse");
	g_free(path);
}

/* identity=per-user: credentials-dir (private to the daemon's user) or user-credentials (a path
 * below each home) required; the referral is neither cached nor watched, and every location's
 * spec says so. */
static void test_identity_per_user(void)
{
	char *dir = g_build_filename(tmpdir, "creds", NULL);
	const struct ff_referral *r;
	struct ff_namespace *ns;

	g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
	g_assert_cmpint(chmod(dir, 0700), ==, 0);
	ns = load_ok("[/a]\nlocations=smb://nas/s;smb://nas2/s\nattr-timeout=60\n"
		     "identity=per-user\ncredentials-dir=@D@/creds\n",
		     NULL, NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_true(r->per_user);
	g_assert_cmpstr(r->credentials_dir, ==, dir);
	g_assert_cmpfloat(r->attr_timeout, ==, 0);
	for (guint i = 0; i < r->locations->len; i++) {
		g_assert_true(loc_at(r, i)->spec.per_user);
		g_assert_cmpstr(loc_at(r, i)->spec.credentials_dir, ==, dir);
		g_assert_false(loc_at(r, i)->spec.watch);
	}
	ff_namespace_unref(ns);
	ns = load_ok("[/a]\nlocations=smb://nas/s\nidentity=shared\n", NULL, NULL);
	g_assert_false(((struct ff_referral *)g_ptr_array_index(ns->referrals, 0))->per_user);
	ff_namespace_unref(ns);

	/* or the users' own files only, below each home directory */
	ns = load_ok("[/a]\nlocations=smb://nas/s\nidentity=per-user\n"
		     "user-credentials=.config/fedfuse/smb.cred\n",
		     NULL, NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_true(r->per_user);
	g_assert_null(loc_at(r, 0)->spec.credentials_dir);
	g_assert_cmpstr(loc_at(r, 0)->spec.user_credentials, ==, ".config/fedfuse/smb.cred");
	ff_namespace_unref(ns);

	expect_load_error("[/a]\nlocations=smb://nas/s\nidentity=per-user\n",
			  "1: identity=per-user in [/a] needs credentials-dir or user-credentials");
	expect_load_error("[/a]\nlocations=smb://nas/s\nuser-credentials=/etc/cred\n",
			  "3: user-credentials: '/etc/cred' is not a path relative to the user's "
			  "home directory (write it without '/' or '~' in front)");
	expect_load_error("[/a]\nlocations=smb://nas/s\nuser-credentials=~/cred\n",
			  "3: user-credentials: '~/cred' is not a path relative to the user's "
			  "home directory (write it without '/' or '~' in front)");
	expect_load_error("[/a]\nlocations=smb://nas/s\nuser-credentials=a/../../b\n",
			  "3: user-credentials: 'a/../../b' has an empty, '.' or '..' component");
	expect_load_error("[/a]\nlocations=smb://nas/s\nidentity=each\n",
			  "3: identity: 'each' is not 'shared' or 'per-user'");
	expect_load_error("[/a]\nlocations=smb://nas/s\ncredentials-dir=creds\n",
			  "3: credentials-dir: 'creds' is not an absolute path");
	g_assert_cmpint(chmod(dir, 0775), ==, 0);
	expect_load_error("[/a]\nlocations=smb://nas/s\ncredentials-dir=@D@/creds\n",
			  "3: credentials-dir @D@/creds is writable by its group (mode 0775); "
			  "chmod 700 it");
	g_assert_cmpint(rmdir(dir), ==, 0);
	g_free(dir);
}

/* sec=krb5: each user with their own tickets, so per-user without credentials files;
 * krb5-ccache= a FILE cache per user. */
static void test_sec_krb5(void)
{
	const struct ff_referral *r;
	struct ff_namespace *ns;

	ns = load_ok("[/a]\nlocations=smb://nas.example/s\nattr-timeout=60\nsec=krb5\n", NULL,
		     NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_true(r->krb5);
	g_assert_true(r->per_user);
	g_assert_cmpfloat(r->attr_timeout, ==, 0);
	g_assert_true(loc_at(r, 0)->spec.krb5);
	g_assert_true(loc_at(r, 0)->spec.per_user);
	g_assert_null(loc_at(r, 0)->spec.krb5_ccache); /* the backend's default */
	ff_namespace_unref(ns);
	ns = load_ok("[/a]\nlocations=smb://nas.example/s\nsec=krb5\nidentity=per-user\n"
		     "krb5-ccache=FILE:/run/user/%U/krb5cc\n",
		     NULL, NULL);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_cmpstr(loc_at(r, 0)->spec.krb5_ccache, ==, "/run/user/%U/krb5cc");
	ff_namespace_unref(ns);
	ns = load_ok("[/a]\nlocations=smb://nas.example/s\nsec=ntlmssp\n", NULL, NULL);
	g_assert_false(((struct ff_referral *)g_ptr_array_index(ns->referrals, 0))->krb5);
	ff_namespace_unref(ns);

	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5i\n",
			  "3: sec: 'krb5i' is not 'ntlmssp' or 'krb5'");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nidentity=shared\n",
			  "1: sec=krb5 in [/a] acts as each user with their own tickets; it cannot "
			  "be identity=shared");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nuser-credentials=a/b\n",
			  "1: sec=krb5 in [/a] takes each user's Kerberos tickets; credentials, "
			  "credentials-dir and user-credentials do not go with it");
	expect_load_error("[/a]\nlocations=smb://nas/s\nkrb5-ccache=/tmp/krb5cc_%U\n",
			  "1: krb5-ccache in [/a] needs sec=krb5");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nkrb5-ccache=/tmp/krb5cc\n",
			  "4: krb5-ccache: '/tmp/krb5cc' names one file for all users; put %U "
			  "(uid) or %u (user name) in it");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nkrb5-ccache=KEYRING:x%U\n",
			  "4: krb5-ccache: 'KEYRING:x%U' is not a file cache (only FILE: caches "
			  "can be read for a user)");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nkrb5-ccache=cc_%U\n",
			  "4: krb5-ccache: 'cc_%U' is not an absolute path");
	expect_load_error("[/a]\nlocations=smb://nas/s\nsec=krb5\nkrb5-ccache=/t/%U%d\n",
			  "4: krb5-ccache: '/t/%U%d' has '%d'; only %U (uid), %u (user name) and "
			  "%% may follow a '%'");
}

/* write-behind=: whole MiB from 0 to 1024 in a referral or in [namespace] (the referrals'
 * default), carried to every location's spec; -1 when not given, the backend's default.
 * file:// takes it too (its backend ignores it). */
static void test_write_behind(void)
{
	const struct ff_referral *r;
	struct ff_namespace *ns;
	char *text;

	ns = load_ok("[/a]\nlocations=nfs://h/x;smb://nas/s\n", NULL, NULL);
	g_assert_cmpint(ns->write_behind, ==, -1);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_cmpint(r->write_behind, ==, -1);
	g_assert_cmpint(loc_at(r, 0)->spec.write_behind, ==, -1);
	g_assert_cmpint(loc_at(r, 1)->spec.write_behind, ==, -1);
	text = ff_namespace_describe(ns);
	g_assert_null(strstr(text, "write-behind"));
	g_free(text);
	ff_namespace_unref(ns);

	ns = load_ok("[/a]\nlocations=nfs://h/x;smb://nas/s;file:///srv/a\nwrite-behind=32\n"
		     "[/b]\nlocations=smb://nas/t\nwrite-behind=0\n"
		     "[/c]\nlocations=smb://nas/u\nwrite-behind=1024\n",
		     NULL, NULL);
	r = ff_namespace_resolve(ns, "/a", NULL);
	g_assert_cmpint(r->write_behind, ==, 32);
	for (guint i = 0; i < r->locations->len; i++)
		g_assert_cmpint(loc_at(r, i)->spec.write_behind, ==, 32);
	r = ff_namespace_resolve(ns, "/b", NULL);
	g_assert_cmpint(r->write_behind, ==, 0); /* every write() waits for the server */
	g_assert_cmpint(loc_at(r, 0)->spec.write_behind, ==, 0);
	r = ff_namespace_resolve(ns, "/c", NULL);
	g_assert_cmpint(loc_at(r, 0)->spec.write_behind, ==, 1024);
	text = ff_namespace_describe(ns);
	g_assert_nonnull(strstr(text, " on-unreachable=error write-behind=32 file-mode="));
	g_assert_nonnull(strstr(text, " on-unreachable=error write-behind=0 file-mode="));
	g_assert_null(strstr(text, "\nwrite-behind="));
	g_free(text);
	ff_namespace_unref(ns);

	/* [namespace] gives the referrals' default, wherever it stands; a referral may say
	 * otherwise */
	ns = load_ok("[/a]\nlocations=nfs://h/x\n"
		     "[/b]\nlocations=nfs://h/y\nwrite-behind=0\n"
		     "[namespace]\nwrite-behind=64\n",
		     NULL, NULL);
	g_assert_cmpint(ns->write_behind, ==, 64);
	r = ff_namespace_resolve(ns, "/a", NULL);
	g_assert_cmpint(loc_at(r, 0)->spec.write_behind, ==, 64);
	r = ff_namespace_resolve(ns, "/b", NULL);
	g_assert_cmpint(loc_at(r, 0)->spec.write_behind, ==, 0);
	text = ff_namespace_describe(ns);
	g_assert_nonnull(strstr(text, "\nwrite-behind=64\n"));
	g_free(text);
	ff_namespace_unref(ns);

	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=abc\n",
			  "3: write-behind: 'abc' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=-1\n",
			  "3: write-behind: '-1' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=2000\n",
			  "3: write-behind: '2000' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=1.5\n",
			  "3: write-behind: '1.5' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=1025\n",
			  "3: write-behind: '1025' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=+8\n",
			  "3: write-behind: '+8' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=\n",
			  "3: write-behind: '' is not a whole number of MiB from 0 to 1024");
	expect_load_error("[/a]\nlocations=nfs://h/x\nwrite-behind=99999999999999999999999\n",
			  "3: write-behind: '99999999999999999999999' is not a whole number of "
			  "MiB from 0 to 1024");
	expect_load_error("[namespace]\ntimeout=5\nwrite-behind=8M\n",
			  "3: write-behind: '8M' is not a whole number of MiB from 0 to 1024");
}

/* read-ahead= (MiB, 0 to 64) in [namespace] (the referrals' default) or a referral: carried to
 * every location's spec; -1 when not given, the backend's default. */
static void test_read_ahead(void)
{
	const struct ff_referral *r;
	struct ff_namespace *ns;
	char *text;

	ns = load_ok("[/a]\nlocations=nfs://h/x;smb://nas/s\n", NULL, NULL);
	g_assert_cmpint(ns->read_ahead, ==, -1);
	r = g_ptr_array_index(ns->referrals, 0);
	g_assert_cmpint(loc_at(r, 0)->spec.read_ahead, ==, -1);
	g_assert_cmpint(loc_at(r, 1)->spec.read_ahead, ==, -1);
	text = ff_namespace_describe(ns);
	g_assert_null(strstr(text, "read-ahead"));
	g_free(text);
	ff_namespace_unref(ns);

	ns = load_ok("[/a]\nlocations=nfs://h/x\n"
		     "[/b]\nlocations=nfs://h/y;smb://nas/s\nread-ahead=0\n"
		     "[namespace]\nread-ahead=16\n",
		     NULL, NULL);
	g_assert_cmpint(ns->read_ahead, ==, 16);
	r = ff_namespace_resolve(ns, "/a", NULL);
	g_assert_cmpint(loc_at(r, 0)->spec.read_ahead, ==, 16);
	r = ff_namespace_resolve(ns, "/b", NULL);
	g_assert_cmpint(r->read_ahead, ==, 0);
	g_assert_cmpint(loc_at(r, 0)->spec.read_ahead, ==, 0);
	g_assert_cmpint(loc_at(r, 1)->spec.read_ahead, ==, 0);
	text = ff_namespace_describe(ns);
	g_assert_nonnull(strstr(text, "\nread-ahead=16\n"));
	g_assert_nonnull(strstr(text, " read-ahead=0"));
	g_free(text);
	ff_namespace_unref(ns);

	expect_load_error("[/a]\nlocations=nfs://h/x\nread-ahead=4k\n",
			  "3: read-ahead: '4k' is not a whole number of MiB from 0 to 64");
	expect_load_error("[namespace]\nread-ahead=65\n",
			  "2: read-ahead: '65' is not a whole number of MiB from 0 to 64");
}

static int check_refuse_smb(const struct ff_location_spec *spec, void *data, char **msg)
{
	if (strcmp(spec->scheme, "smb") == 0) {
		*msg = g_strdup("backend 'smb' is not available (built without libsmbclient)");
		return -EINVAL;
	}
	return 0;
}

static int check_refuse_silently(const struct ff_location_spec *spec, void *data, char **msg)
{
	return strcmp(spec->scheme, "nfs") == 0 ? -EPROTONOSUPPORT : 0;
}

static void test_error_check(void)
{
	char *want = g_strdup_printf("5: location 'nfs://h/x' refused by its backend: %s",
				     g_strerror(EPROTONOSUPPORT));

	expect_load_error_check("[/a]\n" LOC "\n[/b]\nlocations=file:///b;smb://nas/media\n",
				"5: backend 'smb' is not available (built without libsmbclient)",
				check_refuse_smb, NULL);
	expect_load_error_check("[/a]\n" LOC "\n[/b]\nlocations=file:///b;nfs://h/x\n", want,
				check_refuse_silently, NULL);
	g_free(want);
}

/* ---- ff_location_parse directly ----------------------------------------------------------- */

static void test_location_parse(void)
{
	struct ff_location loc;
	char *msg = NULL;

	g_assert_true(ff_location_parse("NFS://Filer.Example.org:2049/export/a%20b"
					"?version=3&nfsport=2049",
					&loc, &msg));
	g_assert_null(msg);
	g_assert_cmpstr(loc.spec.scheme, ==, "nfs");
	g_assert_cmpstr(loc.spec.host, ==, "Filer.Example.org");
	g_assert_cmpint(loc.spec.port, ==, 2049);
	g_assert_cmpstr(loc.spec.path, ==, "/export/a b");
	g_assert_cmpstr(loc.spec.query, ==, "version=3&nfsport=2049");
	g_assert_cmpint(loc.line, ==, 0);
	g_assert_cmpfloat(loc.spec.timeout, ==, 15);
	g_assert_cmpuint(loc.spec.file_mode, ==, 0755);
	g_assert_cmpuint(loc.spec.dir_mode, ==, 0755);
	ff_location_clear(&loc);
	g_assert_null(loc.spec.uri);
	ff_location_clear(&loc); /* twice is harmless */

	g_assert_true(ff_location_parse("nfs://[fe80::1]/", &loc, &msg));
	g_assert_cmpstr(loc.spec.host, ==, "fe80::1");
	g_assert_cmpstr(loc.spec.path, ==, "/");
	g_assert_null(loc.spec.query);
	ff_location_clear(&loc);

	g_assert_true(ff_location_parse("FILE:/srv", &loc, &msg));
	g_assert_cmpstr(loc.spec.scheme, ==, "file");
	g_assert_null(loc.spec.host);
	g_assert_cmpstr(loc.spec.path, ==, "/srv");
	ff_location_clear(&loc);

	g_assert_true(ff_location_parse("smb://NAS_1:445/share", &loc, &msg));
	g_assert_cmpstr(loc.spec.path, ==, "/share");
	g_assert_cmpint(loc.spec.port, ==, 445);
	ff_location_clear(&loc);

	g_assert_false(ff_location_parse("", &loc, &msg));
	g_assert_cmpstr(msg, ==, "empty location URI");
	g_clear_pointer(&msg, g_free);
	g_assert_false(ff_location_parse(NULL, &loc, &msg));
	g_clear_pointer(&msg, g_free);
	g_assert_false(ff_location_parse("nfs://h/a\nb", &loc, &msg));
	g_assert_cmpstr(msg, ==,
			"'nfs://h/a\\nb' has a character not allowed in a URI at byte 10 "
			"(%-encode it)");
	g_clear_pointer(&msg, g_free);
	g_assert_true(ff_location_parse("nfs://h/x", &loc, NULL));
	ff_location_clear(&loc);
	g_assert_false(ff_location_parse("nfs://u:pw@h/x", &loc, NULL));
	g_assert_null(loc.spec.uri);
}

/* ---- robustness --------------------------------------------------------------------------- */

static const char *const seeds[] = {
	"file:///srv/home",
	"file://localhost/srv/a%20b",
	"nfs://filer1.example.org/export/alpha?version=4",
	"nfs://[::1]:2050/export/home?version=3&mountport=20048",
	"smb://nas.example.org:4445/share/dir/sub",
	"smb://bob:pw@nas/share",
	"nfs://h/a/../b#frag",
};

static const char interesting[] = "%/.:@[]?#;=\\ \x01\x7f\xc3\xa9"
				  "0F";

/* Every URI the parser accepts must satisfy the contract the backends rely on. */
static void assert_spec_sane(const struct ff_location_spec *spec)
{
	g_assert_true(g_ascii_islower(spec->scheme[0]));
	for (const char *c = spec->scheme; *c; c++)
		g_assert_true(g_ascii_islower(*c) || g_ascii_isdigit(*c) || strchr("+-.", *c));
	g_assert_true(spec->path[0] == '/');
	g_assert_null(strstr(spec->path, "//"));
	g_assert_null(strstr(spec->path, "/../"));
	g_assert_null(strstr(spec->path, "/./"));
	g_assert_false(g_str_has_suffix(spec->path, "/..") || g_str_has_suffix(spec->path, "/."));
	g_assert_true(strcmp(spec->path, "/") == 0 || !g_str_has_suffix(spec->path, "/"));
	/* '@' may name a file, but never sits in an authority */
	if (strstr(spec->uri, "://")) {
		const char *auth = strstr(spec->uri, "://") + 3;

		g_assert_null(memchr(auth, '@', strcspn(auth, "/?#")));
	}
	g_assert_null(strchr(spec->uri, '#'));
	g_assert_cmpint(spec->port, >=, 0);
	g_assert_cmpint(spec->port, <=, 65535);
	/* what a scheme needs beyond that is its backend's check (test_contract) */
	g_assert_true(!spec->host || spec->host[0] != '\0');
	g_assert_true(!spec->query || spec->query[0] != '\0');
}

static char *mutate(GRand *rand, const char *seed)
{
	GString *s = g_string_new(seed);
	int edits = g_rand_int_range(rand, 1, 8);

	for (int e = 0; e < edits; e++) {
		guint pos = s->len ? g_rand_int_range(rand, 0, s->len + 1) : 0;
		char c = g_rand_boolean(rand)
				 ? interesting[g_rand_int_range(rand, 0, sizeof(interesting) - 1)]
				 : (char)g_rand_int_range(rand, 1, 256);

		switch (g_rand_int_range(rand, 0, 5)) {
		case 0: /* insert */
			g_string_insert_c(s, pos, c);
			break;
		case 1: /* replace */
			if (pos < s->len)
				s->str[pos] = c;
			break;
		case 2: /* delete */
			if (pos < s->len)
				g_string_erase(s, pos, 1);
			break;
		case 3: /* truncate */
			g_string_truncate(s, pos);
			break;
		default: /* grow, sometimes past the URI bound */
			for (int i = g_rand_int_range(rand, 0, 3000); i > 0; i--) {
				char fill = interesting[i % (sizeof(interesting) - 1)];

				g_string_insert_c(s, pos, fill);
			}
			break;
		}
	}
	return g_string_free(s, FALSE);
}

static void test_fuzz_location(void)
{
	GRand *rand = g_rand_new_with_seed(20240601);
	guint accepted = 0;

	for (int i = 0; i < 5000; i++) {
		char *uri = mutate(rand, seeds[i % G_N_ELEMENTS(seeds)]);
		struct ff_location loc;
		char *msg = NULL;

		if (ff_location_parse(uri, &loc, &msg)) {
			g_assert_null(msg);
			g_assert_cmpstr(loc.spec.uri, ==, uri);
			assert_spec_sane(&loc.spec);
			ff_location_clear(&loc);
			accepted++;
		} else {
			g_assert_nonnull(msg);
			/* no password ever reaches a message, which is always printable UTF-8 */
			if (strstr(msg, "bob:pw@"))
				g_error("%s -> %s", uri, msg);
			g_assert_true(g_utf8_validate(msg, -1, NULL));
			g_free(msg);
			g_assert_null(loc.spec.uri);
		}
		g_free(uri);
	}
	/* the mutations keep a fair share valid, so both paths ran */
	g_assert_cmpuint(accepted, >, 100);
	g_rand_free(rand);
}

/* Random edits of a valid file: loading must give a namespace or "FILE:LINE: ..." with a real
 * line number, and never crash. */
static void test_fuzz_file(void)
{
	GRand *rand = g_rand_new_with_seed(42);
	char *base = subst(full_conf);
	char *path = g_build_filename(tmpdir, "fuzz.conf", NULL);
	char *prefix = g_strconcat(path, ":", NULL);
	guint failed = 0;

	for (int i = 0; i < 400; i++) {
		char *text = mutate(rand, base);
		GError *err = NULL;
		struct ff_namespace *ns;
		guint64 line;
		char *end;
		guint lines = 1;

		for (const char *c = text; *c; c++)
			lines += *c == '\n';
		g_assert_true(g_file_set_contents(path, text, -1, NULL));
		ns = ff_namespace_load(path, NULL, NULL, &err);
		if (ns) {
			g_assert_no_error(err);
			g_free(ff_namespace_describe(ns));
			ff_namespace_unref(ns);
		} else {
			g_assert_nonnull(err);
			g_assert_true(g_str_has_prefix(err->message, prefix));
			line = g_ascii_strtoull(err->message + strlen(prefix), &end, 10);
			g_assert_cmpuint(line, >=, 1);
			g_assert_cmpuint(line, <=, lines);
			g_assert_true(g_str_has_prefix(end, ": "));
			g_assert_true(g_utf8_validate(err->message, -1, NULL));
			g_error_free(err);
			failed++;
		}
		g_free(text);
	}
	g_assert_cmpuint(failed, >, 0);
	g_free(prefix);
	g_free(path);
	g_free(base);
	g_rand_free(rand);
}

/* ---- set-up ------------------------------------------------------------------------------- */

static void make_cred(const char *name, mode_t mode)
{
	char *path = write_conf(name, "username=u\npassword=p\n");

	g_assert_cmpint(chmod(path, mode), ==, 0);
	g_free(path);
}

static void remove_tree(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;

	if (!d)
		return;
	while ((name = g_dir_read_name(d))) {
		char *path = g_build_filename(dir, name, NULL);

		g_unlink(path);
		g_free(path);
	}
	g_dir_close(d);
	g_rmdir(dir);
}

/* Port options read outside the backends (FedFS junctions, the admin tool's probe). */
int main(int argc, char **argv)
{
	GError *err = NULL;
	int rc;

	g_test_init(&argc, &argv, NULL);
	tmpdir = g_dir_make_tmp("test_namespace-XXXXXX", &err);
	g_assert_no_error(err);
	make_cred("good.cred", 0600);
	make_cred("g640.cred", 0640);
	make_cred("g620.cred", 0620);
	make_cred("w644.cred", 0644);
	make_cred("o604.cred", 0604);
	make_cred("u200.cred", 0200);

	g_test_add_func("/namespace/valid/full", test_valid_full);
	g_test_add_func("/namespace/valid/tree", test_tree);
	g_test_add_func("/namespace/valid/resolve", test_resolve);
	g_test_add_func("/namespace/valid/describe", test_describe);
	g_test_add_func("/namespace/valid/defaults", test_defaults);
	g_test_add_func("/namespace/valid/watch", test_watch);
	g_test_add_func("/namespace/valid/watch-overlaps", test_watch_overlaps);
	g_test_add_func("/namespace/valid/edge", test_valid_edge);
	for (guint i = 0; i < G_N_ELEMENTS(error_cases); i++) {
		char *name = g_strconcat("/namespace/error/", error_cases[i].name, NULL);

		g_test_add_data_func(name, &error_cases[i], test_error_case);
		g_free(name);
	}
	g_test_add_func("/namespace/error/file/missing", test_error_missing_file);
	g_test_add_func("/namespace/error/syntax/nul-byte", test_error_nul_byte);
	g_test_add_func("/namespace/error/too-large", test_error_too_large);
	g_test_add_func("/namespace/error/long-paths", test_error_long_paths);
	g_test_add_func("/namespace/error/credentials/owner", test_error_credentials_owner);
	g_test_add_func("/namespace/error/check-callback", test_error_check);
	g_test_add_func("/namespace/location/parse", test_location_parse);
	g_test_add_func("/namespace/identity/per-user", test_identity_per_user);
	g_test_add_func("/namespace/identity/sec-krb5", test_sec_krb5);
	g_test_add_func("/namespace/write-behind", test_write_behind);
	g_test_add_func("/namespace/read-ahead", test_read_ahead);
	g_test_add_func("/namespace/nsdb/groups", test_nsdb);
	g_test_add_func("/namespace/nsdb/fsn-location", test_nsdb_fsn_location);
	g_test_add_func("/namespace/robustness/location", test_fuzz_location);
	g_test_add_func("/namespace/robustness/file", test_fuzz_file);

	rc = g_test_run();
	remove_tree(tmpdir);
	g_free(tmpdir);
	return rc;
}
