/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_junction.c - unit tests of the junction formats (fedfuse/junction.c): valid values of
 * each format (a FedFS document exactly as nfsref writes it among them), every rejection with
 * its message, writers and parsers in round trips, and random mutations that must never crash.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "fedfuse/junction.h"
#include "fedfuse/plugins.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* A message must be safe to log: UTF-8, no control character (C0, DEL, C1), bounded. */
static void assert_msg_safe(const char *msg)
{
	g_assert_nonnull(msg);
	g_assert_true(g_utf8_validate(msg, -1, NULL));
	g_assert_cmpuint(strlen(msg), <=, FF_JUNCTION_MSG_MAX);
	g_assert_cmpuint(strlen(msg), >, 0);
	for (const char *p = msg; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		g_assert_false(c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0));
	}
}

static void assert_uris(const struct ff_junction *j, const char *const *want)
{
	guint n = g_strv_length((char **)want);

	g_assert_nonnull(j);
	g_assert_cmpuint(j->locations->len, ==, n);
	for (guint i = 0; i < n; i++) {
		const struct ff_location *loc = g_ptr_array_index(j->locations, i);

		g_assert_cmpstr(loc->spec.uri, ==, want[i]);
	}
}

static const char *uri_at(const struct ff_junction *j, guint i)
{
	return ((const struct ff_location *)g_ptr_array_index(j->locations, i))->spec.uri;
}

static const struct ff_location_spec *spec_at(const struct ff_junction *j, guint i)
{
	return &((const struct ff_location *)g_ptr_array_index(j->locations, i))->spec;
}

static struct ff_junction *parse_fedfuse(const char *s)
{
	char *msg = NULL;
	struct ff_junction *j = ff_junction_parse_fedfuse(s, strlen(s), &msg);

	if (!j)
		g_test_message("unexpected error: %s", msg);
	g_assert_null(msg);
	g_assert_nonnull(j);
	g_assert_cmpint(j->format, ==, FF_JUNCTION_FEDFUSE);
	return j;
}

static struct ff_junction *parse_fedfs(const char *xml, const char *mode)
{
	char *msg = NULL;
	struct ff_junction *j =
		ff_junction_parse_fedfs(xml, strlen(xml), mode, mode ? strlen(mode) : 0, &msg);

	if (!j)
		g_test_message("unexpected error: %s", msg);
	g_assert_null(msg);
	g_assert_nonnull(j);
	g_assert_cmpint(j->format, ==, FF_JUNCTION_FEDFS);
	return j;
}

static struct ff_junction *parse_msdfs(const char *s)
{
	char *msg = NULL;
	struct ff_junction *j = ff_junction_parse_msdfs(s, strlen(s), &msg);

	if (!j)
		g_test_message("unexpected error: %s", msg);
	g_assert_null(msg);
	g_assert_nonnull(j);
	g_assert_cmpint(j->format, ==, FF_JUNCTION_MSDFS);
	return j;
}

/* A rejection: NULL, errno `code`, a safe message containing `want`. */
static void check_rejected(struct ff_junction *j, char *msg, int code, const char *want)
{
	int e = errno;

	g_assert_null(j);
	g_assert_cmpint(e, ==, code);
	assert_msg_safe(msg);
	if (want && !strstr(msg, want))
		g_error("message '%s' does not contain '%s'", msg, want);
	g_free(msg);
}

static void reject_fedfuse_len(const char *s, size_t len, const char *want)
{
	char *msg = NULL;
	struct ff_junction *j = ff_junction_parse_fedfuse(s, len, &msg);

	check_rejected(j, msg, EINVAL, want);
}

static void reject_fedfuse(const char *s, const char *want)
{
	reject_fedfuse_len(s, strlen(s), want);
}

static void reject_fedfs_full(const char *xml, size_t len, const char *mode, int code,
			      const char *want)
{
	char *msg = NULL;
	struct ff_junction *j =
		ff_junction_parse_fedfs(xml, len, mode, mode ? strlen(mode) : 0, &msg);

	check_rejected(j, msg, code, want);
}

static void reject_fedfs(const char *xml, const char *want)
{
	reject_fedfs_full(xml, strlen(xml), NULL, EINVAL, want);
}

static void reject_msdfs_len(const char *s, size_t len, const char *want)
{
	char *msg = NULL;
	struct ff_junction *j = ff_junction_parse_msdfs(s, len, &msg);

	check_rejected(j, msg, EINVAL, want);
}

static void reject_msdfs(const char *s, const char *want)
{
	reject_msdfs_len(s, strlen(s), want);
}

static GPtrArray *locations_of(const char *const *uris)
{
	GPtrArray *a = g_ptr_array_new();

	for (const char *const *u = uris; *u; u++) {
		struct ff_location *loc = g_new0(struct ff_location, 1);
		char *msg = NULL;

		if (!ff_location_parse(*u, loc, &msg))
			g_error("%s: %s", *u, msg);
		g_ptr_array_add(a, loc);
	}
	return a;
}

static void locations_free(GPtrArray *a)
{
	for (guint i = 0; i < a->len; i++) {
		ff_location_clear(g_ptr_array_index(a, i));
		g_free(g_ptr_array_index(a, i));
	}
	g_ptr_array_unref(a);
}

/* ---- documents ----------------------------------------------------------------------------- */

/* Exactly what `nfsref add /j filer1.example.org:20049 /export/alpha filer2.example.org
 * /export/alpha` stores (libxml2's xmlDocDumpFormatMemoryEnc, nfsref's defaults); nfsref leaves
 * out the port 2049, and writes the mode the directory had before. */
static const char nfsref_doc[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<junction>\n"
	"  <savedmode bits=\"755\"/>\n"
	"  <fileset>\n"
	"    <location>\n"
	"      <host name=\"filer1.example.org\" port=\"20049\"/>\n"
	"      <path>\n"
	"        <component>export</component>\n"
	"        <component>alpha</component>\n"
	"      </path>\n"
	"      <currency>-1</currency>\n"
	"      <genflags writable=\"false\" going=\"false\" split=\"true\"/>\n"
	"      <transflags rdma=\"true\"/>\n"
	"      <class simul=\"0\" handle=\"0\" fileid=\"0\" writever=\"0\" change=\"0\" "
	"readdir=\"0\"/>\n"
	"      <read rank=\"0\" order=\"0\"/>\n"
	"      <write rank=\"0\" order=\"0\"/>\n"
	"      <flags varsub=\"false\"/>\n"
	"      <validfor>0</validfor>\n"
	"    </location>\n"
	"    <location>\n"
	"      <host name=\"filer2.example.org\"/>\n"
	"      <path>\n"
	"        <component>export</component>\n"
	"        <component>alpha</component>\n"
	"      </path>\n"
	"      <currency>-1</currency>\n"
	"      <genflags writable=\"false\" going=\"false\" split=\"true\"/>\n"
	"      <transflags rdma=\"true\"/>\n"
	"      <class simul=\"0\" handle=\"0\" fileid=\"0\" writever=\"0\" change=\"0\" "
	"readdir=\"0\"/>\n"
	"      <read rank=\"0\" order=\"0\"/>\n"
	"      <write rank=\"0\" order=\"0\"/>\n"
	"      <flags varsub=\"false\"/>\n"
	"      <validfor>0</validfor>\n"
	"    </location>\n"
	"  </fileset>\n"
	"</junction>\n";

static const char *const nfsref_uris[] = {
	"nfs://filer1.example.org:20049/export/alpha",
	"nfs://filer2.example.org/export/alpha",
	NULL,
};

/* A FedFS junction in `<fileset>...</fileset>` with a small location of host h (n of them). */
static char *fedfs_doc(const char *fileset)
{
	return g_strconcat("<junction><savedmode bits=\"755\"/><fileset>", fileset,
			   "</fileset></junction>", NULL);
}

static char *fedfs_loc(const char *host_attrs, const char *inner)
{
	return g_strdup_printf("<location><host %s/><path><component>x</component></path>%s"
			       "</location>",
			       host_attrs, inner);
}

/* ---- fedfuse ------------------------------------------------------------------------------- */

static void test_fedfuse_valid(void)
{
	static const char *const three[] = { "file:///srv/a", "nfs://h/export?version=4",
					     "smb://h2/share/dir", NULL };
	static const char *const semi[] = { "file:///a;b", "nfs://h:3049/x", NULL };
	struct ff_junction *j;

	j = parse_fedfuse("file:///srv/a;nfs://h/export?version=4;smb://h2/share/dir");
	assert_uris(j, three);
	g_assert_cmpuint(j->mode, ==, 0755);
	g_assert_true(j->ttl == 0);
	g_assert_cmpstr(spec_at(j, 1)->host, ==, "h");
	g_assert_cmpstr(spec_at(j, 1)->query, ==, "version=4");
	ff_junction_free(j);

	/* white space around entries and the value, one trailing ';', a trailing NUL */
	j = parse_fedfuse("  file:///srv/a ; nfs://h/export?version=4\t;smb://h2/share/dir;\n");
	assert_uris(j, three);
	ff_junction_free(j);
	j = ff_junction_parse_fedfuse("file:///srv/a;nfs://h/export?version=4;smb://h2/share/dir",
				      strlen("file:///srv/a;nfs://h/export?version=4;"
					     "smb://h2/share/dir") +
					      1,
				      NULL);
	assert_uris(j, three);
	ff_junction_free(j);

	/* "\;" is a ';' inside a URI, as in locations= */
	j = parse_fedfuse("file:///a\\;b;nfs://h:3049/x");
	assert_uris(j, semi);
	g_assert_cmpstr(spec_at(j, 0)->path, ==, "/a;b");
	g_assert_cmpint(spec_at(j, 1)->port, ==, 3049);
	ff_junction_free(j);

	/* not NUL-terminated: only `len` bytes are read */
	j = ff_junction_parse_fedfuse("file:///onlythisXXXX", strlen("file:///onlythis"), NULL);
	g_assert_nonnull(j);
	g_assert_cmpstr(uri_at(j, 0), ==, "file:///onlythis");
	ff_junction_free(j);

	ff_junction_free(NULL);
	g_assert_cmpstr(ff_junction_format_name(FF_JUNCTION_FEDFUSE), ==, "fedfuse");
	g_assert_cmpstr(ff_junction_format_name(FF_JUNCTION_FEDFS), ==, "fedfs");
	g_assert_cmpstr(ff_junction_format_name(FF_JUNCTION_MSDFS), ==, "msdfs");
}

static void test_fedfuse_max(void)
{
	GString *s = g_string_new(NULL);
	struct ff_junction *j;

	for (int i = 0; i < FF_JUNCTION_LOCATIONS_MAX; i++)
		g_string_append_printf(s, "%sfile:///d%d", i ? ";" : "", i);
	j = parse_fedfuse(s->str);
	g_assert_cmpuint(j->locations->len, ==, FF_JUNCTION_LOCATIONS_MAX);
	g_assert_cmpstr(uri_at(j, 255), ==, "file:///d255");
	ff_junction_free(j);
	g_string_append(s, ";file:///one-too-many");
	reject_fedfuse(s->str, "more than 256 locations");
	g_string_free(s, TRUE);
}

static void test_fedfuse_errors(void)
{
	char *big = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
	GRand *rand = g_rand_new_with_seed(7);

	reject_fedfuse("", "no location given");
	reject_fedfuse("   \n", "no location given");
	reject_fedfuse(";", "empty entry");
	reject_fedfuse("file:///a;;file:///b", "empty entry (number 2)");
	reject_fedfuse("file:///a/../b", "not normalised");
	reject_fedfuse("file:///a/%2e%2e/b", "not normalised");
	reject_fedfuse("nfs://h/x/..", "not normalised");
	reject_fedfuse("smb://h/share/./x", "not normalised");
	reject_fedfuse("nfs://h/x;nfs://h/x", "listed twice");
	reject_fedfuse("ftp:x", "not absolute");
	reject_fedfuse("nfs://h", "no path");
	reject_fedfuse("smb://bob:secret@h/share", "user name or password");
	reject_fedfuse("file:///a\\qb", "invalid escape sequence '\\q'");
	reject_fedfuse("file:///a\\", "lone backslash");
	reject_fedfuse_len("file:///a\0b", 11, "NUL byte");
	reject_fedfuse("file:///a\x01z", "not allowed in a URI");
	reject_fedfuse("relative/path", "not a location URI");

	/* 64 KiB of junk, and one byte more */
	for (int i = 0; i < FF_JUNCTION_VALUE_MAX + 1; i++)
		big[i] = (char)g_rand_int_range(rand, 0, 256);
	reject_fedfuse_len(big, FF_JUNCTION_VALUE_MAX + 1, "more than 65536");
	reject_fedfuse_len(big, FF_JUNCTION_VALUE_MAX, NULL);
	memset(big, 'a', FF_JUNCTION_VALUE_MAX);
	reject_fedfuse_len(big, FF_JUNCTION_VALUE_MAX, NULL);
	g_free(big);
	g_rand_free(rand);

	/* messages say what is wrong, escaped and bounded, also for a long hostile value */
	{
		GString *s = g_string_new("file:///");
		char *msg = NULL;

		for (int i = 0; i < 700; i++)
			g_string_append(s, "\x1b[31m");
		g_assert_null(ff_junction_parse_fedfuse(s->str, s->len, &msg));
		assert_msg_safe(msg);
		g_assert_true(g_str_has_prefix(msg, FF_JUNCTION_XATTR_FEDFUSE ": "));
		g_assert_true(g_str_has_suffix(msg, "..."));
		g_free(msg);
		g_string_free(s, TRUE);
	}
	/* msg may be NULL */
	errno = 0;
	g_assert_null(ff_junction_parse_fedfuse("", 0, NULL));
	g_assert_cmpint(errno, ==, EINVAL);
}

/* ---- fedfs --------------------------------------------------------------------------------- */

static void test_fedfs_nfsref(void)
{
	struct ff_junction *j;

	/* the mode saved in trusted.junction.mode wins */
	j = parse_fedfs(nfsref_doc, "750");
	assert_uris(j, nfsref_uris);
	g_assert_cmpuint(j->mode, ==, 0750);
	g_assert_true(j->ttl == 0);
	g_assert_cmpint(spec_at(j, 0)->port, ==, 20049);
	g_assert_cmpstr(spec_at(j, 0)->path, ==, "/export/alpha");
	ff_junction_free(j);

	/* without it, <savedmode> */
	j = parse_fedfs(nfsref_doc, NULL);
	assert_uris(j, nfsref_uris);
	g_assert_cmpuint(j->mode, ==, 0755);
	ff_junction_free(j);

	/* a trailing NUL (some writers store one) on either value */
	j = ff_junction_parse_fedfs(nfsref_doc, sizeof(nfsref_doc), "700", 4, NULL);
	assert_uris(j, nfsref_uris);
	g_assert_cmpuint(j->mode, ==, 0700);
	ff_junction_free(j);

	/* white space around the mode; four digits; leading zeros */
	j = parse_fedfs(nfsref_doc, "1777\n");
	g_assert_cmpuint(j->mode, ==, 01777);
	ff_junction_free(j);
	j = parse_fedfs(nfsref_doc, "0000644");
	g_assert_cmpuint(j->mode, ==, 0644);
	ff_junction_free(j);
}

static void test_fedfs_forms(void)
{
	static const char *const root[] = { "nfs://h/", NULL };
	static const char *const v6[] = { "nfs://[::1]:3049/e", NULL };
	static const char *const enc[] = { "nfs://h/a%20b/%25/%C3%A9/%26%3B", NULL };
	static const char *const ordered[] = { "nfs://c/x", "nfs://a/x", "nfs://b/x", "nfs://d/x",
					       NULL };
	struct ff_junction *j;
	char *doc, *l1, *l2, *l3, *l4, *all;

	/* the export root: no component; the DESIGN's short form without the optional elements;
	 * port 2049 is left out of the URI */
	j = parse_fedfs("<junction><fileset><location><host name=\"h\" port=\"2049\"/><path/>"
			"</location></fileset></junction>",
			NULL);
	assert_uris(j, root);
	g_assert_cmpuint(j->mode, ==, FF_JUNCTION_DEFAULT_MODE);
	ff_junction_free(j);

	j = parse_fedfs("<junction><fileset><location><path><component>e</component></path>"
			"<host name=\"::1\" port=\"3049\"/></location></fileset></junction>",
			NULL);
	assert_uris(j, v6);
	g_assert_cmpstr(spec_at(j, 0)->host, ==, "::1");
	ff_junction_free(j);

	/* components are %-encoded; entities, character references and CDATA are text;
	 * comments, processing instructions and unknown elements are ignored */
	j = parse_fedfs("<?xml version='1.0' encoding='utf-8'?>\n<!-- made by hand -->\n"
			"<junction><extension a=\"1\"><deep><deeper/></deep></extension>"
			"<fileset><future/><location><?pi x?><host name=\"h\" color=\"red\"/>"
			"<path><component>a b</component><!-- c --><component>%</component>"
			"<component>\xc3\xa9</component><component>&amp;<![CDATA[;]]></component>"
			"<other>ignored</other></path><unknown><component>..</component></unknown>"
			"</location></fileset></junction>",
			NULL);
	assert_uris(j, enc);
	g_assert_cmpstr(spec_at(j, 0)->path, ==, "/a b/%/\xc3\xa9/&;");
	ff_junction_free(j);

	/* order of preference: read rank, then read order, then document order; the smallest
	 * non-zero validfor is the ttl */
	l1 = fedfs_loc("name=\"a\"", "<read rank=\"1\" order=\"0\"/><validfor>300</validfor>");
	l2 = fedfs_loc("name=\"b\"", "<read rank=\"1\" order=\"0\"/><validfor> 60 </validfor>");
	l3 = fedfs_loc("name=\"c\"", "<read rank=\"0\" order=\"9\"/><validfor>0</validfor>");
	l4 = fedfs_loc("name=\"d\"", "<read rank=\"1\" order=\"7\"/>");
	all = g_strconcat(l1, l2, l3, l4, NULL);
	doc = fedfs_doc(all);
	j = parse_fedfs(doc, NULL);
	assert_uris(j, ordered);
	g_assert_cmpfloat(j->ttl, ==, 60);
	ff_junction_free(j);
	g_free(doc);
	g_free(all);
	g_free(l1);
	g_free(l2);
	g_free(l3);
	g_free(l4);

	/* 256 locations are fine */
	{
		GString *s = g_string_new(NULL);

		for (int i = 0; i < FF_JUNCTION_LOCATIONS_MAX; i++)
			g_string_append_printf(s,
					       "<location><host name=\"h%d\"/><path><component>x"
					       "</component></path></location>",
					       i);
		doc = fedfs_doc(s->str);
		j = parse_fedfs(doc, NULL);
		g_assert_cmpuint(j->locations->len, ==, FF_JUNCTION_LOCATIONS_MAX);
		ff_junction_free(j);
		g_free(doc);
		g_string_append(s, "<location><host name=\"more\"/><path/></location>");
		doc = fedfs_doc(s->str);
		reject_fedfs(doc, "more than 256 <location> elements");
		g_free(doc);
		g_string_free(s, TRUE);
	}
}

/* Every value is wrapped in a one-location document, `what` replacing the usual parts. */
struct fedfs_case {
	const char *xml;
	const char *want;
};

/* clang-format off: one case per two lines reads better than what it would make */
static const struct fedfs_case fedfs_cases[] = {
	/* not a junction document */
	{ "hello", "Document must begin with an element" },
	{ "<foo/>", "the root element is <foo>, not <junction>" },
	{ "<junction/><junction/>", "" },
	{ "<junction>", "" },
	{ "<junction><fileset>", "" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>x</component></path>"
	  "</location></fileset>",
	  "" },
	{ "<junction></fileset>", "" },
	{ "<junction/>", "no <fileset> in <junction>" },
	{ "<junction><fileset/></junction>", "no <location> in <fileset>" },
	{ "<junction><fileset/><fileset/></junction>", "more than one <fileset>" },
	{ "<junction><savedmode bits=\"755\"/><savedmode bits=\"755\"/><fileset/></junction>",
	  "more than one <savedmode>" },
	{ "<junction>text<fileset/></junction>", "unexpected text 'text' in <junction>" },
	{ "<!DOCTYPE junction [<!ENTITY a \"b\">]><junction/>", "DOCTYPE is not allowed" },
	{ "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><junction/>", "encoding 'ISO-8859-1' is "
									"not UTF-8" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>&bogus;</component>"
	  "</path></location></fileset></junction>",
	  "" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>\xff</component>"
	  "</path></location></fileset></junction>",
	  "" },
	/* locations */
	{ "<junction><fileset><location><path/></location></fileset></junction>", "<location> 1 "
										  "has no <host>" },
	{ "<junction><fileset><location><host name=\"h\"/></location></fileset></junction>", "<loca"
											     "tion>"
											     " 1 "
											     "has "
											     "no "
											     "<path"
											     ">" },
	{ "<junction><fileset><location><host name=\"h\"/><host name=\"i\"/><path/></location>"
	  "</fileset></junction>",
	  "<location> 1 has more than one <host>" },
	{ "<junction><fileset><location><host/><path/></location></fileset></junction>", "<host> "
											 "has no "
											 "name "
											 "attribut"
											 "e" },
	{ "<junction><fileset><location><host name=\"h\" name=\"i\"/><path/></location>"
	  "</fileset></junction>",
	  "" },
	{ "<junction><fileset><location><host name=\"a b\"/><path/></location></fileset>"
	  "</junction>",
	  "not a host name or IP address" },
	{ "<junction><fileset><location><host name=\"evil?x\"/><path/></location></fileset>"
	  "</junction>",
	  "not a host name" },
	{ "<junction><fileset><location><host name=\"u@h\"/><path/></location></fileset>"
	  "</junction>",
	  "not a host name" },
	{ "<junction><fileset><location><host name=\"\"/><path/></location></fileset>"
	  "</junction>",
	  "not a host name" },
	{ "<junction><fileset><location><host name=\"h\" port=\"0\"/><path/></location>"
	  "</fileset></junction>",
	  "not a port from 1 to 65535" },
	{ "<junction><fileset><location><host name=\"h\" port=\"65536\"/><path/></location>"
	  "</fileset></junction>",
	  "not a port" },
	{ "<junction><fileset><location><host name=\"h\" port=\"2049x\"/><path/></location>"
	  "</fileset></junction>",
	  "not a port" },
	{ "<junction><fileset><location><host name=\"h\"><x/></host><path/></location>"
	  "</fileset></junction>",
	  "unexpected <x> inside <host>" },
	{ "<junction><fileset><location><host name=\"h\">txt</host><path/></location>"
	  "</fileset></junction>",
	  "unexpected text 'txt' in <host>" },
	/* components */
	{ "<junction><fileset><location><host name=\"h\"/><path><component>..</component>"
	  "</path></location></fileset></junction>",
	  "<component>..</component> is '.' or '..'" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>.</component>"
	  "</path></location></fileset></junction>",
	  "is '.' or '..'" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>a/b</component>"
	  "</path></location></fileset></junction>",
	  "holds a '/'" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component/></path>"
	  "</location></fileset></junction>",
	  "is empty" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>a&#10;b</component>"
	  "</path></location></fileset></junction>",
	  "control character" },
	{ "<junction><fileset><location><host name=\"h\"/><path><component>a<b/></component>"
	  "</path></location></fileset></junction>",
	  "unexpected <b> inside <component>" },
	/* the values nfsref writes are checked when present */
	{ "<junction><savedmode bits=\"999\"/><fileset/></junction>", "not an octal mode from 0 to "
								      "7777" },
	{ "<junction><savedmode bits=\"17777\"/><fileset/></junction>", "not an octal mode" },
	{ "<junction><savedmode/><fileset/></junction>", "<savedmode> has no bits attribute" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><validfor>-1</validfor>"
	  "</location></fileset></junction>",
	  "<validfor>-1</validfor> is not a number of seconds" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><validfor>99999999999"
	  "</validfor></location></fileset></junction>",
	  "is not a number of seconds" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><currency>x</currency>"
	  "</location></fileset></junction>",
	  "<currency>x</currency> is not an integer" },
	{ "<junction><fileset><location><host name=\"h\"/><path/>"
	  "<genflags writable=\"maybe\"/></location></fileset></junction>",
	  "<genflags writable='maybe'>: not true or false" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><class simul=\"300\"/>"
	  "</location></fileset></junction>",
	  "<class simul='300'>: not a number from 0 to 255" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><read rank=\"-1\"/>"
	  "</location></fileset></junction>",
	  "<read rank='-1'>" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><read rank=\"0\"/>"
	  "<read rank=\"0\"/></location></fileset></junction>",
	  "has more than one <read>" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><transflags rdma=\"1\"/>"
	  "</location></fileset></junction>",
	  "not true or false" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><flags varsub=\"yes\"/>"
	  "</location></fileset></junction>",
	  "not true or false" },
	{ "<junction><fileset><location><host name=\"h\"/><path/><write order=\"x\"/>"
	  "</location></fileset></junction>",
	  "<write order='x'>" },
	/* the NSDB form, badly made */
	{ "<junction><fileset><name fsnuuid=\"u\"/></fileset></junction>", "<name> needs fsnuuid "
									   "and nsdbname "
									   "attributes" },
	{ "<junction><fileset><name fsnuuid=\"u\" nsdbname=\"n\" nsdbport=\"0\"/></fileset>"
	  "</junction>",
	  "not a port" },
	{ "<junction><fileset><name fsnuuid=\"u\" nsdbname=\"n\"/><name fsnuuid=\"u\" "
	  "nsdbname=\"n\"/></fileset></junction>",
	  "more than one <name>" },
};
/* clang-format on */

static void test_fedfs_case(gconstpointer data)
{
	const struct fedfs_case *c = data;

	reject_fedfs(c->xml, c->want[0] ? c->want : NULL);
}

static void test_fedfs_errors(void)
{
	GRand *rand = g_rand_new_with_seed(11);
	char *big = g_malloc(FF_JUNCTION_VALUE_MAX + 2);
	GString *s;
	char *doc;

	reject_fedfs_full("", 0, NULL, EINVAL, "trusted.junction.nfs is empty");
	reject_fedfs_full("\0", 1, NULL, EINVAL, "is empty");
	reject_fedfs_full("<junction>\0</junction>", 22, NULL, EINVAL, "holds a NUL byte");

	/* trusted.junction.mode */
	reject_fedfs_full(nfsref_doc, strlen(nfsref_doc), "abc", EINVAL,
			  "trusted.junction.mode 'abc' is not an octal mode");
	reject_fedfs_full(nfsref_doc, strlen(nfsref_doc), "77777", EINVAL, "not an octal mode");
	reject_fedfs_full(nfsref_doc, strlen(nfsref_doc), "", EINVAL, "not an octal mode");
	reject_fedfs_full(nfsref_doc, strlen(nfsref_doc), "-755", EINVAL, "not an octal mode");
	reject_fedfs_full(nfsref_doc, strlen(nfsref_doc), "0755012345670123456701234567012345",
			  EINVAL, "more than 32");

	/* truncated anywhere before the end of the root element: refused */
	for (size_t n = 0; n < strlen(nfsref_doc) - 1; n++) {
		char *msg = NULL;

		g_assert_null(ff_junction_parse_fedfs(nfsref_doc, n, NULL, 0, &msg));
		assert_msg_safe(msg);
		g_free(msg);
	}

	/* 64 KiB of junk, and more */
	for (int i = 0; i < FF_JUNCTION_VALUE_MAX + 2; i++)
		big[i] = (char)g_rand_int_range(rand, 1, 256);
	reject_fedfs_full(big, FF_JUNCTION_VALUE_MAX + 2, NULL, EINVAL, "more than 65536");
	reject_fedfs_full(big, FF_JUNCTION_VALUE_MAX, NULL, EINVAL, NULL);
	big[0] = '<';
	reject_fedfs_full(big, FF_JUNCTION_VALUE_MAX, NULL, EINVAL, NULL);

	/* deep nesting, even of ignored elements */
	s = g_string_new("<junction>");
	for (int i = 0; i < 40; i++)
		g_string_append(s, "<x>");
	doc = g_string_free(s, FALSE);
	reject_fedfs(doc, "nested more than 32 deep");
	g_free(doc);

	/* a component longer than 255 bytes */
	s = g_string_new("<junction><fileset><location><host name=\"h\"/><path><component>");
	for (int i = 0; i < 256; i++)
		g_string_append_c(s, 'c');
	g_string_append(s, "</component></path></location></fileset></junction>");
	reject_fedfs(s->str, "longer than 255 bytes");
	g_string_free(s, TRUE);

	/* a URI that comes out longer than a location URI may be */
	s = g_string_new("<junction><fileset><location><host name=\"h\"/><path>");
	for (int i = 0; i < 40; i++)
		g_string_append(s, "<component>%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%</"
				   "component>");
	g_string_append(s, "</path></location></fileset></junction>");
	reject_fedfs(s->str, "longer than 4096 bytes");
	g_string_free(s, TRUE);

	/* two locations naming the same place */
	reject_fedfs("<junction><fileset><location><host name=\"h\" port=\"2049\"/><path/>"
		     "</location><location><host name=\"h\"/><path/></location></fileset>"
		     "</junction>",
		     "listed twice");

	/* hostile text is escaped in messages */
	{
		char *msg = NULL;
		const char *x = "<junction><fileset><location><host name=\"h\x1b[2J\"/><path/>"
				"</location></fileset></junction>";

		g_assert_null(ff_junction_parse_fedfs(x, strlen(x), NULL, 0, &msg));
		assert_msg_safe(msg);
		g_assert_nonnull(strstr(msg, "\\x1b[2J"));
		g_free(msg);
	}
	g_free(big);
	g_rand_free(rand);
}

static void test_fedfs_nsdb(void)
{
	/* what fedfs-utils' nfsref add -t nfs-fedfs writes: one location, the FSN */
	static const char nsdb[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				   "<junction>\n"
				   "  <savedmode bits=\"1777\"/>\n"
				   "  <fileset>\n"
				   "    <name fsnuuid=\"D2B09895-98ff-415e-ac73-565fad7b429b\" "
				   "nsdbname=\"nsdb.example.net\" nsdbport=\"1389\"/>\n"
				   "  </fileset>\n"
				   "</junction>\n";
	static const char *const fsn[] = {
		"fedfs://nsdb.example.net:1389/d2b09895-98ff-415e-ac73-565fad7b429b", NULL
	};
	static const char *const fsn389[] = {
		"fedfs://[fd00::1]/d2b09895-98ff-415e-ac73-565fad7b429b", NULL
	};
	struct ff_junction *j;
	char *msg = NULL;

	j = ff_junction_parse_fedfs(nsdb, strlen(nsdb), NULL, 0, &msg);
	g_assert_null(msg);
	assert_uris(j, fsn);
	g_assert_cmpint(j->mode, ==, 01777);
	ff_junction_free(j);

	/* the LDAP port is left out; an IPv6 NSDB name gets its brackets */
	j = ff_junction_parse_fedfs(
		"<junction><fileset><name fsnuuid=\"d2b09895-98ff-415e-ac73-"
		"565fad7b429b\" nsdbname=\"fd00::1\" nsdbport=\"389\"/>"
		"</fileset></junction>",
		strlen("<junction><fileset><name fsnuuid=\"d2b09895-98ff-415e-ac73-"
		       "565fad7b429b\" nsdbname=\"fd00::1\" nsdbport=\"389\"/>"
		       "</fileset></junction>"),
		NULL, 0, &msg);
	g_assert_null(msg);
	assert_uris(j, fsn389);
	ff_junction_free(j);

	/* a name that is no UUID, a host that is none, both kinds in one fileset */
	reject_fedfs("<junction><fileset><name fsnuuid=\"u\" nsdbname=\"n\"/></fileset>"
		     "</junction>",
		     "<name fsnuuid='u'> is not a UUID");
	reject_fedfs("<junction><fileset><name fsnuuid=\"d2b09895-98ff-415e-ac73-565fad7b429b\" "
		     "nsdbname=\"a b\"/></fileset></junction>",
		     "trusted.junction.nfs: <name>");
	reject_fedfs("<junction><fileset><name fsnuuid=\"d2b09895-98ff-415e-ac73-565fad7b429b\" "
		     "nsdbname=\"n\"/><location><host name=\"h\"/><path/></location></fileset>"
		     "</junction>",
		     "holds both <name> (an NSDB junction) and <location>");
}

static void test_fedfs_mode_test(void)
{
	g_assert_true(ff_junction_is_fedfs_mode(S_IFDIR | 01000));
	g_assert_true(ff_junction_is_fedfs_mode(S_IFDIR | 01644));
	g_assert_false(ff_junction_is_fedfs_mode(S_IFDIR | 01755));
	g_assert_false(ff_junction_is_fedfs_mode(S_IFDIR | 01001));
	g_assert_false(ff_junction_is_fedfs_mode(S_IFDIR | 0755));
	g_assert_false(ff_junction_is_fedfs_mode(S_IFDIR | 0));
}

/* ---- msdfs --------------------------------------------------------------------------------- */

static void test_msdfs_valid(void)
{
	static const char *const one[] = { "smb://server/share", NULL };
	static const char *const two[] = { "smb://srv1/share/dir/sub", "smb://srv2/share2", NULL };
	static const char *const enc[] = { "smb://srv/my%20share/%C3%A9t%C3%A9/a%25b", NULL };
	static const char *const v6[] = { "smb://[::1]/s", "smb://10.0.0.1/t", NULL };
	struct ff_junction *j;

	j = parse_msdfs("msdfs:server\\share");
	assert_uris(j, one);
	g_assert_cmpuint(j->mode, ==, 0755);
	g_assert_true(j->ttl == 0);
	ff_junction_free(j);

	/* any case, '/' as separator too, leading separators ignored as Samba does */
	j = parse_msdfs("MsDfS:srv1\\share\\dir/sub,\\\\srv2/share2");
	assert_uris(j, two);
	g_assert_cmpstr(spec_at(j, 0)->path, ==, "/share/dir/sub");
	ff_junction_free(j);

	j = parse_msdfs("msdfs:srv\\my share\\\xc3\xa9t\xc3\xa9\\a%b");
	assert_uris(j, enc);
	g_assert_cmpstr(spec_at(j, 0)->path, ==, "/my share/\xc3\xa9t\xc3\xa9/a%b");
	ff_junction_free(j);

	j = parse_msdfs("msdfs:::1\\s,10.0.0.1\\t");
	assert_uris(j, v6);
	ff_junction_free(j);

	/* a trailing NUL; only `len` bytes */
	j = ff_junction_parse_msdfs("msdfs:server\\share", 19, NULL);
	assert_uris(j, one);
	ff_junction_free(j);
	j = ff_junction_parse_msdfs("msdfs:server\\share,more", 18, NULL);
	assert_uris(j, one);
	ff_junction_free(j);

	g_assert_true(ff_junction_is_msdfs("msdfs:", 6));
	g_assert_true(ff_junction_is_msdfs("MSDFS:x", 7));
	g_assert_false(ff_junction_is_msdfs("msdfs:", 5));
	g_assert_false(ff_junction_is_msdfs("msdfs", 5));
	g_assert_false(ff_junction_is_msdfs("xmsdfs:a", 8));
	g_assert_false(ff_junction_is_msdfs("", 0));
	g_assert_false(ff_junction_is_msdfs(NULL, 0));
	g_assert_false(ff_junction_is_msdfs("../target", 9));
}

static void test_msdfs_errors(void)
{
	GString *s = g_string_new("msdfs:");
	char *big;
	struct ff_junction *j;

	reject_msdfs("", "does not start with 'msdfs:'");
	reject_msdfs("../somewhere", "link target '../somewhere' does not start with 'msdfs:'");
	reject_msdfs("msdfs:", "names no target");
	reject_msdfs("msdfs:server", "names no share");
	reject_msdfs("msdfs:\\\\", "is empty");
	reject_msdfs("msdfs:srv\\share,,srv\\x", "msdfs target 2 '' is empty");
	reject_msdfs("msdfs:srv\\share,", "msdfs target 2 '' is empty");
	reject_msdfs("msdfs:srv\\\\share", "component 2 is empty");
	reject_msdfs("msdfs:srv\\share\\", "component 3 is empty");
	reject_msdfs("msdfs:srv\\share\\..\\x", "component 3 is '.' or '..'");
	reject_msdfs("msdfs:srv\\.", "is '.' or '..'");
	reject_msdfs("msdfs:bad host\\share", "bad server name");
	reject_msdfs("msdfs:srv:445\\share", "bad server name");
	reject_msdfs("msdfs:u@srv\\share", "bad server name");
	reject_msdfs("msdfs:srv\\sh\x01re", "control character");
	reject_msdfs("msdfs:srv\\a,srv\\a", "listed twice");
	reject_msdfs("msdfs:srv/a,srv\\a", "listed twice");
	reject_msdfs_len("msdfs:srv\\a\0b", 13, "NUL byte");

	/* at most 256 targets */
	for (int i = 0; i < FF_JUNCTION_LOCATIONS_MAX; i++)
		g_string_append_printf(s, "%ssrv%d\\share", i ? "," : "", i);
	j = parse_msdfs(s->str);
	g_assert_cmpuint(j->locations->len, ==, FF_JUNCTION_LOCATIONS_MAX);
	ff_junction_free(j);
	g_string_append(s, ",srvX\\share");
	reject_msdfs(s->str, "257 targets, more than 256");
	g_string_free(s, TRUE);

	big = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
	memcpy(big, "msdfs:", 6);
	memset(big + 6, 'x', FF_JUNCTION_VALUE_MAX - 5);
	reject_msdfs_len(big, FF_JUNCTION_VALUE_MAX + 1, "more than 65536");
	reject_msdfs_len(big, FF_JUNCTION_VALUE_MAX, "component 1 is longer than 255 bytes");
	g_free(big);
}

/* ---- writers and round trips --------------------------------------------------------------- */

static void test_round_trip_fedfuse(void)
{
	static const char *const uris[] = { "file:///a;b", "nfs://h:3049/x?version=3",
					    "smb://[::1]/share/sub%20dir", "file:///", NULL };
	GPtrArray *locs = locations_of(uris);
	char *value = ff_junction_format_fedfuse(locs);
	struct ff_junction *j;

	g_assert_cmpstr(value, ==,
			"file:///a\\;b;nfs://h:3049/x?version=3;smb://[::1]/share/sub%20dir;"
			"file:///");
	j = parse_fedfuse(value);
	assert_uris(j, uris);
	ff_junction_free(j);
	g_free(value);
	locations_free(locs);
}

/* The FedFS writer needs the nfs backend (a build without libnfs has none). */
static bool have_nfs(void)
{
	g_autofree char *msg = NULL;

	if (ff_plugin_find("nfs", &msg))
		return true;
	g_test_skip(msg);
	return false;
}

static void test_round_trip_fedfs(void)
{
	static const char *const uris[] = { "nfs://filer1.example.org:20049/export/alpha",
					    "nfs://filer2.example.org/export/alpha", NULL };
	static const char *const more[] = { "nfs://h/", "nfs://[::1]:3049/e?nfsport=3049",
					    "NFS://H2/a%20b/%C3%A9/%26%3C%3E%22'",
					    "nfs://h3/x?nfsport=2049", NULL };
	static const char *const more_back[] = { "nfs://h/", "nfs://[::1]:3049/e",
						 "nfs://H2/a%20b/%C3%A9/%26%3C%3E%22%27",
						 "nfs://h3/x", NULL };
	GPtrArray *locs;
	struct ff_junction *j;
	char *xml;

	if (!have_nfs())
		return;
	locs = locations_of(uris);
	xml = ff_junction_format_fedfs(locs, 040755, ff_plugin_server_port, NULL, NULL);

	/* byte for byte what nfsref writes, but <read order=> numbers the locations */
	{
		char **parts = g_strsplit(nfsref_doc, "<read rank=\"0\" order=\"0\"/>", -1);
		char *want;

		g_assert_cmpuint(g_strv_length(parts), ==, 3);
		want = g_strconcat(parts[0], "<read rank=\"0\" order=\"0\"/>", parts[1],
				   "<read rank=\"0\" order=\"1\"/>", parts[2], NULL);
		g_assert_cmpstr(xml, ==, want);
		g_free(want);
		g_strfreev(parts);
	}
	j = parse_fedfs(xml, NULL);
	assert_uris(j, uris);
	g_assert_cmpuint(j->mode, ==, 0755);
	ff_junction_free(j);
	g_free(xml);
	locations_free(locs);

	locs = locations_of(more);
	xml = ff_junction_format_fedfs(locs, 01750, ff_plugin_server_port, NULL, NULL);
	g_assert_nonnull(strstr(xml, "<path/>"));
	g_assert_nonnull(strstr(xml, "<host name=\"::1\" port=\"3049\"/>"));
	g_assert_nonnull(strstr(xml, "<component>&amp;&lt;&gt;&quot;&apos;</component>"));
	j = parse_fedfs(xml, "1750");
	assert_uris(j, more_back);
	g_assert_cmpuint(j->mode, ==, 01750);
	g_assert_cmpstr(spec_at(j, 2)->path, ==, "/a b/\xc3\xa9/&<>\"'");
	ff_junction_free(j);
	g_free(xml);
	locations_free(locs);
}

/* What fedfs-utils' nfsref add -t nfs-fedfs writes, and the FSN location it reads back as. */
static void test_round_trip_fedfs_nsdb(void)
{
	static const char want[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				   "<junction>\n"
				   "  <savedmode bits=\"750\"/>\n"
				   "  <fileset>\n"
				   "    <name fsnuuid=\"d2b09895-98ff-415e-ac73-565fad7b429b\" "
				   "nsdbname=\"nsdb.example.net\" nsdbport=\"389\"/>\n"
				   "  </fileset>\n"
				   "</junction>\n";
	static const struct {
		const char *host;
		int port;
		const char *name; /* nsdbname= */
		const char *uri;
	} cases[] = {
		{ "nsdb.example.net", 389, "nsdb.example.net",
		  "fedfs://nsdb.example.net/d2b09895-98ff-415e-ac73-565fad7b429b" },
		{ "nsdb.example.net", 1389, "nsdb.example.net",
		  "fedfs://nsdb.example.net:1389/d2b09895-98ff-415e-ac73-565fad7b429b" },
		{ "fd00::1", 389, "fd00::1",
		  "fedfs://[fd00::1]/d2b09895-98ff-415e-ac73-565fad7b429b" },
		{ "[fd00::1]", 636, "fd00::1",
		  "fedfs://[fd00::1]:636/d2b09895-98ff-415e-ac73-565fad7b429b" },
		{ "192.0.2.7", 389, "192.0.2.7",
		  "fedfs://192.0.2.7/d2b09895-98ff-415e-ac73-565fad7b429b" },
	};
	static const struct {
		const char *host;
		int port;
		const char *uuid, *want;
	} bad[] = {
		{ "h", 389, "d2b09895-98ff-415e-ac73", "is not an FSN UUID" },
		{ "h", 389, "d2b09895-98ff-415e-ac73-565fad7b429g", "is not an FSN UUID" },
		{ "h", 389, "\x1b[2J", "is not an FSN UUID" },
		{ "a b", 389, "d2b09895-98ff-415e-ac73-565fad7b429b", "NSDB 'a b' is not a host" },
		{ "h\"/><x", 389, "d2b09895-98ff-415e-ac73-565fad7b429b", "is not a host" },
		{ "[h]", 389, "d2b09895-98ff-415e-ac73-565fad7b429b", "is not a host" },
		{ "", 389, "d2b09895-98ff-415e-ac73-565fad7b429b", "is not a host" },
		{ "h", 0, "d2b09895-98ff-415e-ac73-565fad7b429b", "port 0 is not a port" },
		{ "h", 65536, "d2b09895-98ff-415e-ac73-565fad7b429b", "port 65536 is not" },
	};
	struct ff_junction *j;
	char *xml, *msg = NULL;

	/* byte for byte nfsref's layout; the UUID in lower case, the LDAP port written */
	xml = ff_junction_format_fedfs_nsdb("nsdb.example.net", 389,
					    "D2B09895-98FF-415E-AC73-565FAD7B429B", 040750, &msg);
	g_assert_null(msg);
	g_assert_cmpstr(xml, ==, want);
	j = parse_fedfs(xml, NULL);
	g_assert_cmpuint(j->mode, ==, 0750);
	ff_junction_free(j);
	g_free(xml);

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		const char *const uris[] = { cases[i].uri, NULL };
		char *name = g_strdup_printf("nsdbname=\"%s\" nsdbport=\"%d\"/>", cases[i].name,
					     cases[i].port);

		xml = ff_junction_format_fedfs_nsdb(cases[i].host, cases[i].port,
						    "d2b09895-98ff-415e-ac73-565fad7b429b", 01777,
						    &msg);
		g_assert_null(msg);
		g_assert_nonnull(strstr(xml, name));
		j = parse_fedfs(xml, "1777");
		assert_uris(j, uris);
		g_assert_cmpuint(j->mode, ==, 01777);
		ff_junction_free(j);
		g_free(xml);
		g_free(name);
	}

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		errno = 0;
		xml = ff_junction_format_fedfs_nsdb(bad[i].host, bad[i].port, bad[i].uuid, 0755,
						    &msg);
		g_assert_null(xml);
		check_rejected(NULL, msg, EINVAL, bad[i].want);
		msg = NULL;
	}
}

static void test_round_trip_msdfs(void)
{
	static const char *const uris[] = { "smb://srv/share/dir", "smb://[::1]/s",
					    "smb://h/my%20share/%C3%A9", NULL };
	GPtrArray *locs = locations_of(uris);
	char *target = ff_junction_format_msdfs(locs, NULL);
	struct ff_junction *j;

	g_assert_cmpstr(target, ==, "msdfs:srv\\share\\dir,::1\\s,h\\my share\\\xc3\xa9");
	j = parse_msdfs(target);
	assert_uris(j, uris);
	ff_junction_free(j);
	g_free(target);
	locations_free(locs);
}

static void expect_format_error(int format, const char *uri, const char *want)
{
	const char *uris[] = { "nfs://ok/x", uri, NULL };
	GPtrArray *locs = locations_of(uris);
	char *msg = NULL;
	char *out;

	errno = 0;
	if (format == FF_JUNCTION_FEDFS)
		out = ff_junction_format_fedfs(locs, 0755, ff_plugin_server_port, NULL, &msg);
	else
		out = ff_junction_format_msdfs(locs, &msg);
	g_assert_null(out);
	g_assert_cmpint(errno, ==, EINVAL);
	assert_msg_safe(msg);
	if (!strstr(msg, want))
		g_error("message '%s' does not contain '%s'", msg, want);
	g_free(msg);
	locations_free(locs);
}

static void test_format_errors(void)
{
	const char *smb_only[] = { "smb://h/s", NULL };
	GPtrArray *locs;
	char *out;

	if (!have_nfs())
		return;
	expect_format_error(FF_JUNCTION_FEDFS, "smb://h/share", "hold nfs:// locations only");
	expect_format_error(FF_JUNCTION_FEDFS, "file:///srv", "hold nfs:// locations only");
	expect_format_error(FF_JUNCTION_FEDFS, "nfs://h/x?version=4",
			    "cannot hold the option "
			    "'version=4'");
	/* the port is the nfs backend's to read */
	expect_format_error(FF_JUNCTION_FEDFS, "nfs://h:3049/x?nfsport=4049",
			    "gives port 3049 and nfsport=4049");
	expect_format_error(FF_JUNCTION_FEDFS, "nfs://h/x?nfsport=0",
			    "nfsport=0: not a port number");
	expect_format_error(FF_JUNCTION_FEDFS, "nfs://h/x?mountport=20048", "mountport");
	expect_format_error(FF_JUNCTION_FEDFS, "nfs://h/a%FFb", "hold UTF-8 components");
	/* the first location of expect_format_error() is an nfs one: msdfs refuses it */
	expect_format_error(FF_JUNCTION_MSDFS, "smb://h/s",
			    "'nfs://ok/x': msdfs junctions hold "
			    "smb:// locations only");

	locs = locations_of(smb_only);
	out = ff_junction_format_msdfs(locs, NULL);
	g_assert_cmpstr(out, ==, "msdfs:h\\s");
	g_free(out);
	locations_free(locs);
	{
		static const char *const bad[][2] = {
			{ "smb://h:4445/s", "cannot hold a port" },
			{ "smb://h/s?connections=2", "cannot hold options" },
			{ "smb://h/a%2Cb", "cannot hold a ',' or '\\'" },
			{ "smb://h/s/a%5Cb", "cannot hold a ',' or '\\'" },
		};

		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			const char *u[] = { "smb://ok/s", bad[i][0], NULL };
			char *msg = NULL;

			locs = locations_of(u);
			g_assert_null(ff_junction_format_msdfs(locs, &msg));
			assert_msg_safe(msg);
			g_assert_nonnull(strstr(msg, bad[i][1]));
			g_free(msg);
			locations_free(locs);
		}
	}
}

/* ---- robustness ---------------------------------------------------------------------------- */

static const char *const fuzz_seeds[] = {
	nfsref_doc,
	"<junction><fileset><name fsnuuid=\"u\" nsdbname=\"n\"/></fileset></junction>",
	"<junction><savedmode bits=\"1777\"/><fileset><location><host name=\"::1\"/><path/>"
	"<read rank=\"1\" order=\"2\"/><validfor>30</validfor></location></fileset></junction>",
	"file:///srv/a;nfs://h/export?version=4;smb://h2/share/dir",
	"file:///a\\;b;nfs://h:3049/x;",
	"msdfs:srv1\\share\\dir/sub,\\\\srv2/share2",
	"MSDFS:::1\\s,10.0.0.1\\t",
};

static const char fuzz_bytes[] = "<>/\\;,:.&#\"'=?%@[] \n\t\x01\x80\xc3\xa9\xff"
				 "0123456789azAZ";

/* A random edit of `base`: insert, replace, delete, truncate, repeat a chunk, or flip bits. */
static GString *mutate(GRand *rand, const char *base)
{
	GString *s = g_string_new(base);
	int edits = g_rand_int_range(rand, 1, 5);

	for (int e = 0; e < edits; e++) {
		guint pos = s->len ? (guint)g_rand_int_range(rand, 0, (gint32)s->len + 1) : 0;
		char c = fuzz_bytes[g_rand_int_range(rand, 0, sizeof(fuzz_bytes) - 1)];
		guint len = (guint)g_rand_int_range(rand, 1, 200); /* of a chunk after pos */

		len = MIN(len, s->len - pos);

		switch (g_rand_int_range(rand, 0, 7)) {
		case 0:
			g_string_insert_c(s, pos, c);
			break;
		case 1:
			if (pos < s->len)
				s->str[pos] = c;
			break;
		case 2:
			g_string_erase(s, pos, MIN(len, 8));
			break;
		case 3:
			g_string_truncate(s, pos);
			break;
		case 4: {
			char *chunk = g_malloc(len + 1);

			memcpy(chunk, s->str + pos, len);
			for (int k = g_rand_int_range(rand, 1, 40); k > 0; k--)
				g_string_insert_len(s, pos, chunk, len);
			g_free(chunk);
			break;
		}
		case 5:
			if (pos < s->len)
				s->str[pos] ^= (char)(1 << g_rand_int_range(rand, 0, 8));
			break;
		default:
			g_string_insert_len(s, pos, "\0", 1);
			break;
		}
	}
	return s;
}

static void check_result(struct ff_junction *j, char *msg, int e, bool fedfs, guint *accepted)
{
	if (j) {
		g_assert_null(msg);
		g_assert_cmpuint(j->locations->len, >=, 1);
		g_assert_cmpuint(j->locations->len, <=, FF_JUNCTION_LOCATIONS_MAX);
		g_assert_cmpuint(j->mode, <=, 07777);
		g_assert_true(j->ttl >= 0);
		for (guint i = 0; i < j->locations->len; i++) {
			struct ff_location again;
			char *m = NULL;

			g_assert_true(ff_location_parse(uri_at(j, i), &again, &m));
			ff_location_clear(&again);
		}
		/* every writer copes with whatever a parser accepted */
		g_free(ff_junction_format_fedfuse(j->locations));
		g_free(ff_junction_format_fedfs(j->locations, j->mode, ff_plugin_server_port, NULL,
						&msg));
		g_free(msg);
		msg = NULL;
		g_free(ff_junction_format_msdfs(j->locations, &msg));
		g_free(msg);
		ff_junction_free(j);
		(*accepted)++;
		return;
	}
	assert_msg_safe(msg);
	g_assert_true(e == EINVAL || (fedfs && e == ENOTSUP));
	g_free(msg);
}

static void test_fuzz(void)
{
	GRand *rand = g_rand_new_with_seed(20261203);
	guint accepted = 0, rejected = 0;

	for (int i = 0; i < 6000; i++) {
		GString *s = mutate(rand, fuzz_seeds[i % G_N_ELEMENTS(fuzz_seeds)]);
		guint before = accepted;
		struct ff_junction *j;
		char *msg = NULL;

		/* every input through every parser */
		j = ff_junction_parse_fedfuse(s->str, s->len, &msg);
		check_result(j, msg, errno, false, &accepted);
		msg = NULL;
		j = ff_junction_parse_fedfs(s->str, s->len, NULL, 0, &msg);
		check_result(j, msg, errno, true, &accepted);
		msg = NULL;
		j = ff_junction_parse_fedfs(s->str, s->len, s->str, MIN(s->len, 6), &msg);
		check_result(j, msg, errno, true, &accepted);
		msg = NULL;
		j = ff_junction_parse_msdfs(s->str, s->len, &msg);
		check_result(j, msg, errno, false, &accepted);
		if (accepted == before)
			rejected++;
		g_string_free(s, TRUE);
	}
	/* the mutations keep a fair share valid, so both paths ran */
	g_test_message("fuzz: %u accepted, %u inputs rejected by every parser", accepted, rejected);
	g_assert_cmpuint(accepted, >, 300);
	g_assert_cmpuint(rejected, >, 300);
	g_rand_free(rand);
}

/* Random bytes, and random bytes behind each format's prefix. */
static void test_fuzz_random(void)
{
	static const char *const prefixes[] = { "", "msdfs:", "<junction><fileset><location>",
						"nfs://", "<?xml version=\"1.0\"?><junction>" };
	GRand *rand = g_rand_new_with_seed(4242);
	guint accepted = 0;

	for (int i = 0; i < 3000; i++) {
		GString *s = g_string_new(prefixes[i % G_N_ELEMENTS(prefixes)]);
		int n = g_rand_int_range(rand, 0, i % 100 == 0 ? 70000 : 300);
		struct ff_junction *j;
		char *msg = NULL;

		for (int k = 0; k < n; k++)
			g_string_append_c(s, (char)g_rand_int_range(rand, 0, 256));
		j = ff_junction_parse_fedfuse(s->str, s->len, &msg);
		check_result(j, msg, errno, false, &accepted);
		msg = NULL;
		j = ff_junction_parse_fedfs(s->str, s->len, s->str, MIN(s->len, 40), &msg);
		check_result(j, msg, errno, true, &accepted);
		msg = NULL;
		j = ff_junction_parse_msdfs(s->str, s->len, &msg);
		check_result(j, msg, errno, false, &accepted);
		g_string_free(s, TRUE);
	}
	g_rand_free(rand);
}

int main(int argc, char **argv)
{
	const char *builddir = g_getenv("FEDFUSE_BUILDDIR");
	g_autofree char *dir = NULL;

	g_test_init(&argc, &argv, NULL);
	/* the FedFS writer asks the nfs backend for each location's port */
	dir = g_strdup_printf("%s/backends/nfs/.libs", builddir ? builddir : ".");
	g_setenv("FEDFUSE_BACKEND_DIR", dir, TRUE);

	g_test_add_func("/junction/fedfuse/valid", test_fedfuse_valid);
	g_test_add_func("/junction/fedfuse/max", test_fedfuse_max);
	g_test_add_func("/junction/fedfuse/errors", test_fedfuse_errors);
	g_test_add_func("/junction/fedfs/nfsref", test_fedfs_nfsref);
	g_test_add_func("/junction/fedfs/forms", test_fedfs_forms);
	for (guint i = 0; i < G_N_ELEMENTS(fedfs_cases); i++) {
		char *name = g_strdup_printf("/junction/fedfs/error/%02u", i + 1);

		g_test_add_data_func(name, &fedfs_cases[i], test_fedfs_case);
		g_free(name);
	}
	g_test_add_func("/junction/fedfs/errors", test_fedfs_errors);
	g_test_add_func("/junction/fedfs/nsdb", test_fedfs_nsdb);
	g_test_add_func("/junction/fedfs/mode-test", test_fedfs_mode_test);
	g_test_add_func("/junction/msdfs/valid", test_msdfs_valid);
	g_test_add_func("/junction/msdfs/errors", test_msdfs_errors);
	g_test_add_func("/junction/round-trip/fedfuse", test_round_trip_fedfuse);
	g_test_add_func("/junction/round-trip/fedfs", test_round_trip_fedfs);
	g_test_add_func("/junction/round-trip/fedfs-nsdb", test_round_trip_fedfs_nsdb);
	g_test_add_func("/junction/round-trip/msdfs", test_round_trip_msdfs);
	g_test_add_func("/junction/format/errors", test_format_errors);
	g_test_add_func("/junction/robustness/mutations", test_fuzz);
	g_test_add_func("/junction/robustness/random", test_fuzz_random);
	return g_test_run();
}
