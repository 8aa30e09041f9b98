/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_fedfs.c - FedFS junctions as nfs-utils' nfsref writes them: the XML of
 * trusted.junction.nfs read with GMarkup (no libxml2), strictly and within bounds, and written
 * back for `fedfuse-junction add --format fedfs` (and fedfs-nsdb, a junction naming an FSN).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fedfuse/junction.h"
#include "fedfuse/junction_util.h"
#include "fedfuse/nsdb.h"

/* ---- FedFS: reading nfsref's XML ------------------------------------------------------------ */

enum fx_elem {
	FX_NONE, /* above the root */
	FX_JUNCTION,
	FX_SAVEDMODE,
	FX_FILESET,
	FX_LOCATION,
	FX_NAME,
	FX_HOST,
	FX_PATH,
	FX_COMPONENT,
	FX_CURRENCY,
	FX_GENFLAGS,
	FX_TRANSFLAGS,
	FX_CLASS,
	FX_READ,
	FX_WRITE,
	FX_FLAGS,
	FX_VALIDFOR,
	FX_COUNT
};

static const char *const fx_names[FX_COUNT] = {
	[FX_NONE] = "",
	[FX_JUNCTION] = "junction",
	[FX_SAVEDMODE] = "savedmode",
	[FX_FILESET] = "fileset",
	[FX_LOCATION] = "location",
	[FX_NAME] = "name",
	[FX_HOST] = "host",
	[FX_PATH] = "path",
	[FX_COMPONENT] = "component",
	[FX_CURRENCY] = "currency",
	[FX_GENFLAGS] = "genflags",
	[FX_TRANSFLAGS] = "transflags",
	[FX_CLASS] = "class",
	[FX_READ] = "read",
	[FX_WRITE] = "write",
	[FX_FLAGS] = "flags",
	[FX_VALIDFOR] = "validfor",
};

/* One <location>. */
struct fx_location {
	guint index; /* 1-based, in document order */
	guint seen;  /* 1u << enum fx_elem of each child met */
	char *host;
	int port;	       /* 0 when not given */
	GPtrArray *components; /* char * */
	int rank, order;       /* <read>; 0 when not given */
	gint64 validfor;       /* seconds, 0 when not given */
};

struct fx_parser {
	enum fx_elem stack[XML_DEPTH_MAX];
	int depth;
	int skip;      /* > 0 while inside an ignored element: its depth */
	GString *text; /* text of the current <component>, <currency> or <validfor> */
	bool root_seen, savedmode_seen, fileset_seen, name_seen;
	int savedmode;	      /* -1 when absent */
	GPtrArray *locations; /* struct fx_location * */
	struct fx_location *cur;
	char *nsdb_uuid, *nsdb_name;
	int nsdb_port;
};

static void fx_location_free(gpointer p)
{
	struct fx_location *l = p;

	g_free(l->host);
	g_ptr_array_unref(l->components);
	g_free(l);
}

static gboolean fx_fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Set a callback error (GMarkup prefixes the position). Returns FALSE. */
static gboolean fx_fail(GError **error, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT, s);
	g_free(s);
	return FALSE;
}

static bool is_xml_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

/* A decimal integer (a '-' allowed when min < 0) within [min, max], nothing else. */
static bool parse_int(const char *s, gint64 min, gint64 max, gint64 *out)
{
	const char *digits = s[0] == '-' && min < 0 ? s + 1 : s;
	size_t n = strlen(digits);
	gint64 v;

	if (n == 0 || strspn(digits, "0123456789") != n)
		return false;
	digits += strspn(digits, "0");
	if (strlen(digits) > INT32_TEXT_MAX)
		return false;
	v = g_ascii_strtoll(s, NULL, 10);
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Octal permission bits, 0 to 07777, as nfsref's "%o" writes them. */
static bool parse_octal_mode(const char *s, mode_t *out)
{
	size_t n = strlen(s);
	const char *digits = s + strspn(s, "0");

	if (n == 0 || strspn(s, "01234567") != n || strlen(digits) > 4)
		return false;
	*out = (mode_t)strtoul(s, NULL, 8);
	return *out <= 07777;
}

/* The value of attribute `key`, or NULL; a second attribute of that name is an error. */
static bool fx_attr(const char **names, const char **values, const char *key, const char **out,
		    GError **error)
{
	*out = NULL;
	for (int i = 0; names[i]; i++) {
		if (strcmp(names[i], key) != 0)
			continue;
		if (*out)
			return fx_fail(error, "attribute '%s' given twice", key);
		*out = values[i];
	}
	return true;
}

/* Optional integer attributes of an element that we only check. */
static bool fx_check_ints(const char *elem, const char **names, const char **values,
			  const char *const *keys, gint64 min, gint64 max, GError **error)
{
	for (; *keys; keys++) {
		const char *v;
		gint64 n;

		if (!fx_attr(names, values, *keys, &v, error))
			return false;
		if (v && !parse_int(v, min, max, &n)) {
			char *q = fj_quote_str(v);

			fx_fail(error,
				"<%s %s='%s'>: not a number from %" G_GINT64_FORMAT
				" to %" G_GINT64_FORMAT,
				elem, *keys, q, min, max);
			g_free(q);
			return false;
		}
	}
	return true;
}

/* Optional true/false attributes of an element that we only check. */
static bool fx_check_bools(const char *elem, const char **names, const char **values,
			   const char *const *keys, GError **error)
{
	for (; *keys; keys++) {
		const char *v;

		if (!fx_attr(names, values, *keys, &v, error))
			return false;
		if (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
			char *q = fj_quote_str(v);

			fx_fail(error, "<%s %s='%s'>: not true or false", elem, *keys, q);
			g_free(q);
			return false;
		}
	}
	return true;
}

static bool fx_port(const char *elem, const char *key, const char *v, int *port, GError **error)
{
	gint64 n;

	if (!v)
		return true;
	if (!parse_int(v, 1, 65535, &n)) {
		char *q = fj_quote_str(v);

		fx_fail(error, "<%s %s='%s'>: not a port from 1 to 65535", elem, key, q);
		g_free(q);
		return false;
	}
	*port = (int)n;
	return true;
}

/* The attributes of a new element `e`. */
static bool fx_attributes(struct fx_parser *px, enum fx_elem e, const char **names,
			  const char **values, GError **error)
{
	static const char *const class_keys[] = { "simul",  "handle",  "fileid", "writever",
						  "change", "readdir", NULL };
	static const char *const rank_keys[] = { "rank", "order", NULL };
	static const char *const genflags_keys[] = { "writable", "going", "split", NULL };
	static const char *const rdma_keys[] = { "rdma", NULL };
	static const char *const varsub_keys[] = { "varsub", NULL };
	const char *v, *v2;
	gint64 n;
	mode_t mode;

	switch (e) {
	case FX_SAVEDMODE:
		if (!fx_attr(names, values, "bits", &v, error))
			return false;
		if (!v)
			return fx_fail(error, "<savedmode> has no bits attribute");
		if (!parse_octal_mode(v, &mode)) {
			char *q = fj_quote_str(v);

			fx_fail(error, "<savedmode bits='%s'>: not an octal mode from 0 to 7777",
				q);
			g_free(q);
			return false;
		}
		px->savedmode = (int)mode;
		return true;
	case FX_HOST:
		if (!fx_attr(names, values, "name", &v, error) ||
		    !fx_attr(names, values, "port", &v2, error))
			return false;
		if (!v)
			return fx_fail(error, "<host> has no name attribute");
		if (!fj_host_name_ok(v)) {
			char *q = fj_quote_str(v);

			fx_fail(error, "<host name='%s'>: not a host name or IP address", q);
			g_free(q);
			return false;
		}
		px->cur->host = g_strdup(v);
		return fx_port("host", "port", v2, &px->cur->port, error);
	case FX_NAME:
		if (!fx_attr(names, values, "fsnuuid", &v, error) ||
		    !fx_attr(names, values, "nsdbname", &v2, error))
			return false;
		if (!v || !v2)
			return fx_fail(error, "<name> needs fsnuuid and nsdbname attributes");
		px->nsdb_uuid = g_strdup(v);
		px->nsdb_name = g_strdup(v2);
		if (!fx_attr(names, values, "nsdbport", &v, error))
			return false;
		return fx_port("name", "nsdbport", v, &px->nsdb_port, error);
	case FX_READ:
		if (!fx_check_ints("read", names, values, rank_keys, 0, 255, error))
			return false;
		fx_attr(names, values, "rank", &v, NULL);
		if (v && parse_int(v, 0, 255, &n))
			px->cur->rank = (int)n;
		fx_attr(names, values, "order", &v, NULL);
		if (v && parse_int(v, 0, 255, &n))
			px->cur->order = (int)n;
		return true;
	case FX_WRITE:
		return fx_check_ints("write", names, values, rank_keys, 0, 255, error);
	case FX_CLASS:
		return fx_check_ints("class", names, values, class_keys, 0, 255, error);
	case FX_GENFLAGS:
		return fx_check_bools("genflags", names, values, genflags_keys, error);
	case FX_TRANSFLAGS:
		return fx_check_bools("transflags", names, values, rdma_keys, error);
	case FX_FLAGS:
		return fx_check_bools("flags", names, values, varsub_keys, error);
	default:
		return true;
	}
}

/* What a child element `name` of `parent` is: an enum fx_elem, FX_NONE to ignore it, or -1
 * with the error set. */
static int fx_child(struct fx_parser *px, enum fx_elem parent, const char *name, GError **error)
{
	struct fx_location *l;

	switch (parent) {
	case FX_NONE:
		if (px->root_seen) {
			fx_fail(error, "a second root element <%s>", name);
			return -1;
		}
		if (strcmp(name, "junction") != 0) {
			fx_fail(error, "the root element is <%s>, not <junction>", name);
			return -1;
		}
		px->root_seen = true;
		return FX_JUNCTION;
	case FX_JUNCTION:
		if (strcmp(name, "savedmode") == 0) {
			if (px->savedmode_seen) {
				fx_fail(error, "more than one <savedmode>");
				return -1;
			}
			px->savedmode_seen = true;
			return FX_SAVEDMODE;
		}
		if (strcmp(name, "fileset") == 0) {
			if (px->fileset_seen) {
				fx_fail(error, "more than one <fileset>");
				return -1;
			}
			px->fileset_seen = true;
			return FX_FILESET;
		}
		return FX_NONE;
	case FX_FILESET:
		if (strcmp(name, "name") == 0) {
			if (px->name_seen) {
				fx_fail(error, "more than one <name> in <fileset>");
				return -1;
			}
			px->name_seen = true;
			return FX_NAME;
		}
		if (strcmp(name, "location") != 0)
			return FX_NONE;
		if (px->locations->len >= FF_JUNCTION_LOCATIONS_MAX) {
			fx_fail(error, "more than %d <location> elements",
				FF_JUNCTION_LOCATIONS_MAX);
			return -1;
		}
		l = g_new0(struct fx_location, 1);
		l->index = px->locations->len + 1;
		l->components = g_ptr_array_new_with_free_func(g_free);
		g_ptr_array_add(px->locations, l);
		px->cur = l;
		return FX_LOCATION;
	case FX_LOCATION:
		for (int e = FX_HOST; e < FX_COUNT; e++) {
			if (e == FX_COMPONENT || strcmp(name, fx_names[e]) != 0)
				continue;
			if (px->cur->seen & (1u << e)) {
				fx_fail(error, "<location> %u has more than one <%s>",
					px->cur->index, name);
				return -1;
			}
			px->cur->seen |= 1u << e;
			return e;
		}
		return FX_NONE;
	case FX_PATH:
		return strcmp(name, "component") == 0 ? FX_COMPONENT : FX_NONE;
	default: /* the leaves hold text or attributes, never elements */
		fx_fail(error, "unexpected <%s> inside <%s>", name, fx_names[parent]);
		return -1;
	}
}

static void fx_start(GMarkupParseContext *ctx, const char *name, const char **names,
		     const char **values, gpointer data, GError **error)
{
	struct fx_parser *px = data;
	enum fx_elem parent = px->depth ? px->stack[px->depth - 1] : FX_NONE;
	int e;

	if (px->depth + px->skip >= XML_DEPTH_MAX) {
		fx_fail(error, "elements nested more than %d deep", XML_DEPTH_MAX);
		return;
	}
	if (px->skip) {
		px->skip++;
		return;
	}
	e = fx_child(px, parent, name, error);
	if (e < 0)
		return;
	if (e == FX_NONE) {
		px->skip = 1;
		return;
	}
	if (!fx_attributes(px, e, names, values, error))
		return;
	g_string_truncate(px->text, 0);
	px->stack[px->depth++] = e;
}

/* The text of a finished <component>, <currency> or <validfor>. */
static bool fx_text_done(struct fx_parser *px, enum fx_elem e, GError **error)
{
	GString *t = px->text;
	const char *problem;
	char *q;
	gint64 n;

	if (e == FX_COMPONENT) {
		problem = fj_component_problem(t->str, t->len);
		if (problem) {
			q = fj_quote(t->str, t->len);
			fx_fail(error, "<location> %u: <component>%s</component> %s",
				px->cur->index, q, problem);
			g_free(q);
			return false;
		}
		g_ptr_array_add(px->cur->components, g_strndup(t->str, t->len));
		return true;
	}
	g_strstrip(t->str); /* numbers may be surrounded by white space */
	if (!parse_int(t->str, e == FX_CURRENCY ? G_MININT32 : 0, G_MAXINT32, &n)) {
		q = fj_quote_str(t->str);
		fx_fail(error, "<location> %u: <%s>%s</%s> is not %s", px->cur->index, fx_names[e],
			q, fx_names[e], e == FX_CURRENCY ? "an integer" : "a number of seconds");
		g_free(q);
		return false;
	}
	if (e == FX_VALIDFOR)
		px->cur->validfor = n;
	return true;
}

static void fx_end(GMarkupParseContext *ctx, const char *name, gpointer data, GError **error)
{
	struct fx_parser *px = data;
	enum fx_elem e;

	if (px->skip) {
		px->skip--;
		return;
	}
	e = px->stack[--px->depth];
	switch (e) {
	case FX_COMPONENT:
	case FX_CURRENCY:
	case FX_VALIDFOR:
		fx_text_done(px, e, error);
		g_string_truncate(px->text, 0);
		break;
	case FX_LOCATION:
		if (!(px->cur->seen & (1u << FX_HOST)))
			fx_fail(error, "<location> %u has no <host>", px->cur->index);
		else if (!(px->cur->seen & (1u << FX_PATH)))
			fx_fail(error, "<location> %u has no <path>", px->cur->index);
		px->cur = NULL;
		break;
	default:
		break;
	}
}

static void fx_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
		    GError **error)
{
	struct fx_parser *px = data;
	enum fx_elem e = px->depth ? px->stack[px->depth - 1] : FX_NONE;
	char *q;

	if (px->skip)
		return;
	if (e == FX_COMPONENT || e == FX_CURRENCY || e == FX_VALIDFOR) {
		g_string_append_len(px->text, text, len);
		return;
	}
	if (is_xml_space(text, len))
		return;
	q = fj_quote(text, len);
	if (e == FX_NONE)
		fx_fail(error, "text '%s' outside <junction>", q);
	else
		fx_fail(error, "unexpected text '%s' in <%s>", q, fx_names[e]);
	g_free(q);
}

/* Comments and processing instructions are ignored; a DOCTYPE (whose entities GMarkup would
 * not expand) and an XML declaration of an encoding other than UTF-8 are refused. */
static void fx_passthrough(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data,
			   GError **error)
{
	char *s, *enc;

	if (len >= 9 && g_ascii_strncasecmp(text, "<!DOCTYPE", 9) == 0) {
		fx_fail(error, "a DOCTYPE is not allowed");
		return;
	}
	if (len < 6 || strncmp(text, "<?xml", 5) != 0 || !is_xml_space(text + 5, 1))
		return;
	s = g_strndup(text, len);
	enc = strstr(s, "encoding");
	if (enc) {
		enc += strlen("encoding");
		enc += strspn(enc, " \t\r\n=");
		if (*enc == '"' || *enc == '\'') {
			char quote_char = *enc++;
			char *close = strchr(enc, quote_char);

			if (close)
				*close = '\0';
			if (g_ascii_strcasecmp(enc, "UTF-8") != 0 &&
			    g_ascii_strcasecmp(enc, "US-ASCII") != 0) {
				char *q = fj_quote_str(enc);

				fx_fail(error, "encoding '%s' is not UTF-8", q);
				g_free(q);
			}
		}
	}
	g_free(s);
}

static const GMarkupParser fx_markup = {
	.start_element = fx_start,
	.end_element = fx_end,
	.text = fx_text,
	.passthrough = fx_passthrough,
};

static gint fx_cmp(gconstpointer a, gconstpointer b)
{
	const struct fx_location *x = *(struct fx_location *const *)a;
	const struct fx_location *y = *(struct fx_location *const *)b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static char *fx_uri(const struct fx_location *l)
{
	GString *uri = g_string_new("nfs://");

	fj_append_host(uri, l->host);
	if (l->port && l->port != FF_JUNCTION_NFS_PORT)
		g_string_append_printf(uri, ":%d", l->port);
	if (l->components->len == 0)
		g_string_append_c(uri, '/');
	for (guint i = 0; i < l->components->len; i++)
		fj_append_component(uri, g_ptr_array_index(l->components, i));
	return g_string_free(uri, FALSE);
}

/* trusted.junction.mode: octal text, maybe with a trailing NUL or white space. */
static bool parse_mode_text(const char *s, size_t len, mode_t *mode, char **err)
{
	char *text, *q;
	bool ok;

	len = fj_without_nul(s, len);
	if (len > MODE_TEXT_MAX) {
		*err = fj_errf("%s is %zu bytes, more than %d", FF_JUNCTION_XATTR_FEDFS_MODE, len,
			       MODE_TEXT_MAX);
		return false;
	}
	text = g_strndup(s, len);
	ok = strlen(text) == len;
	if (ok) {
		g_strstrip(text);
		ok = parse_octal_mode(text, mode);
	}
	if (!ok) {
		q = fj_quote(s, len);
		*err = fj_errf("%s '%s' is not an octal mode from 0 to 7777",
			       FF_JUNCTION_XATTR_FEDFS_MODE, q);
		g_free(q);
	}
	g_free(text);
	return ok;
}

/* The locations of a parsed document, in order of preference, into `j`. */
static bool fx_finish(struct fx_parser *px, struct ff_junction *j, char **err)
{
	if (!px->fileset_seen) {
		*err = fj_errf("%s: no <fileset> in <junction>", FF_JUNCTION_XATTR_FEDFS);
		return false;
	}
	if (px->locations->len > 0 && px->name_seen) {
		*err = fj_errf("%s: <fileset> holds both <name> (an NSDB junction) and <location>",
			       FF_JUNCTION_XATTR_FEDFS);
		return false;
	}
	if (px->locations->len == 0 && px->name_seen) {
		/* An NSDB junction: the FSN, resolved through LDAP by the daemon (nsdb.c). */
		char *u = fj_quote_str(px->nsdb_uuid), *uri;
		g_autofree char *host = NULL, *port = NULL, *lower = NULL;
		bool ok;

		if (!ff_nsdb_uuid_valid(px->nsdb_uuid)) {
			*err = fj_errf("%s: <name fsnuuid='%s'> is not a UUID",
				       FF_JUNCTION_XATTR_FEDFS, u);
			g_free(u);
			return false;
		}
		g_free(u);
		host = strchr(px->nsdb_name, ':') ? g_strdup_printf("[%s]", px->nsdb_name)
						  : g_strdup(px->nsdb_name);
		port = px->nsdb_port && px->nsdb_port != FF_NSDB_PORT
			       ? g_strdup_printf(":%d", px->nsdb_port)
			       : g_strdup("");
		lower = g_ascii_strdown(px->nsdb_uuid, -1);
		uri = g_strdup_printf("%s://%s%s/%s", FF_NSDB_SCHEME, host, port, lower);
		ok = fj_add_location(j->locations, uri, FF_JUNCTION_XATTR_FEDFS ": <name>", err);
		g_free(uri);
		if (ok && px->savedmode >= 0)
			j->mode = (mode_t)px->savedmode;
		return ok;
	}
	if (px->locations->len == 0) {
		*err = fj_errf("%s: no <location> in <fileset>", FF_JUNCTION_XATTR_FEDFS);
		return false;
	}
	g_ptr_array_sort(px->locations, fx_cmp);
	for (guint i = 0; i < px->locations->len; i++) {
		const struct fx_location *l = g_ptr_array_index(px->locations, i);
		char *uri = fx_uri(l);
		char *what =
			g_strdup_printf("%s: <location> %u", FF_JUNCTION_XATTR_FEDFS, l->index);
		bool ok = fj_add_location(j->locations, uri, what, err);

		g_free(what);
		g_free(uri);
		if (!ok)
			return false;
		if (l->validfor > 0 && (j->ttl == 0 || l->validfor < j->ttl))
			j->ttl = (double)l->validfor;
	}
	if (px->savedmode >= 0)
		j->mode = (mode_t)px->savedmode;
	return true;
}

struct ff_junction *ff_junction_parse_fedfs(const char *xml, size_t len, const char *mode_text,
					    size_t mode_len, char **msg)
{
	struct fx_parser px = { .savedmode = -1 };
	struct ff_junction *j = NULL;
	GMarkupParseContext *ctx;
	GError *gerr = NULL;
	const char *bad;
	bool ok;
	char *err = NULL;
	mode_t mode = 0;

	len = fj_without_nul(xml, len);
	if (len == 0)
		return fj_failed(EINVAL, fj_errf("%s is empty", FF_JUNCTION_XATTR_FEDFS), msg);
	if (len > FF_JUNCTION_VALUE_MAX)
		return fj_failed(EINVAL,
				 fj_errf("%s is %zu bytes, more than %d", FF_JUNCTION_XATTR_FEDFS,
					 len, FF_JUNCTION_VALUE_MAX),
				 msg);
	if (memchr(xml, '\0', len))
		return fj_failed(EINVAL, fj_errf("%s holds a NUL byte", FF_JUNCTION_XATTR_FEDFS),
				 msg);
	if (!g_utf8_validate_len(xml, len, &bad))
		return fj_failed(EINVAL,
				 fj_errf("%s is not valid UTF-8 (at byte %zu)",
					 FF_JUNCTION_XATTR_FEDFS, (size_t)(bad - xml) + 1),
				 msg);
	if (mode_text && !parse_mode_text(mode_text, mode_len, &mode, &err))
		return fj_failed(EINVAL, err, msg);

	px.text = g_string_new(NULL);
	px.locations = g_ptr_array_new_with_free_func(fx_location_free);
	ctx = g_markup_parse_context_new(
		&fx_markup, G_MARKUP_TREAT_CDATA_AS_TEXT | G_MARKUP_PREFIX_ERROR_POSITION, &px,
		NULL);
	/* GLib 2.74 has been seen to return TRUE from parse() with the error set: check both */
	ok = g_markup_parse_context_parse(ctx, xml, len, &gerr) && !gerr;
	if (ok)
		ok = g_markup_parse_context_end_parse(ctx, &gerr) && !gerr;
	if (!ok) {
		err = fj_errf("%s: %s", FF_JUNCTION_XATTR_FEDFS,
			      gerr ? gerr->message : "not well-formed XML");
		g_clear_error(&gerr);
		goto out_free;
	}
	j = fj_new(FF_JUNCTION_FEDFS);
	if (!fx_finish(&px, j, &err)) {
		ff_junction_free(j);
		j = NULL;
		goto out_free;
	}
	if (mode_text)
		j->mode = mode;
out_free:
	g_markup_parse_context_free(ctx);
	g_ptr_array_unref(px.locations);
	g_string_free(px.text, TRUE);
	g_free(px.nsdb_uuid);
	g_free(px.nsdb_name);
	if (!j)
		return fj_failed(EINVAL, err, msg);
	return j;
}

bool ff_junction_is_fedfs_mode(mode_t st_mode)
{
	return (st_mode & S_ISVTX) && !(st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
}

/* ---- FedFS: writing nfsref's XML ------------------------------------------------------------ */

/* The port of an nfs location, as its backend reads it (`port_of`): FedFS XML holds a host, a
 * port and a path, so the only option such a location may have is the one naming the port. */
static bool fedfs_port(const struct ff_location_spec *spec, ff_location_port_fn port_of, void *data,
		       int *port, char **err)
{
	char **opts = spec->query ? g_strsplit(spec->query, "&", -1) : NULL;
	char *why = NULL, *q;
	bool ok = false;

	for (char **o = opts; o && *o; o++) {
		if (!g_str_has_prefix(*o, "nfsport=")) {
			q = fj_quote_str(spec->uri);
			*err = fj_errf("'%s': fedfs junctions cannot hold the option '%s' "
				       "(only nfsport=)",
				       q, *o);
			g_free(q);
			goto out;
		}
	}
	*port = port_of(spec, data, &why);
	if (*port <= 0) {
		q = fj_quote_str(spec->uri);
		*err = fj_errf("'%s': %s", q, why ? why : "no server port");
		g_free(q);
		goto out;
	}
	ok = true;
out:
	g_free(why);
	g_strfreev(opts);
	return ok;
}

static void xml_escaped(GString *out, const char *s)
{
	char *esc = g_markup_escape_text(s, -1);

	g_string_append(out, esc);
	g_free(esc);
}

/* One <location> as nfsref's libxml2 writes it (two spaces per level). */
static bool fedfs_location(GString *out, const struct ff_location_spec *spec, guint order,
			   ff_location_port_fn port_of, void *data, char **err)
{
	char **comps = g_strsplit(spec->path + 1, "/", -1);
	bool ok = false;
	int port;
	char *q;

	if (!fedfs_port(spec, port_of, data, &port, err))
		goto out_free;
	for (char **c = comps; *c; c++) {
		if (**c == '\0')
			continue; /* the root "/" */
		if (!g_utf8_validate(*c, -1, NULL) || strlen(*c) > COMPONENT_MAX) {
			q = fj_quote_str(spec->uri);
			*err = fj_errf(
				"'%s': fedfs junctions hold UTF-8 components of 255 bytes at "
				"most",
				q);
			g_free(q);
			goto out_free;
		}
	}
	g_string_append(out, "    <location>\n      <host name=\"");
	xml_escaped(out, spec->host);
	if (port != FF_JUNCTION_NFS_PORT)
		g_string_append_printf(out, "\" port=\"%d", port);
	g_string_append(out, "\"/>\n");
	if (strcmp(spec->path, "/") == 0) {
		g_string_append(out, "      <path/>\n");
	} else {
		g_string_append(out, "      <path>\n");
		for (char **c = comps; *c; c++) {
			g_string_append(out, "        <component>");
			xml_escaped(out, *c);
			g_string_append(out, "</component>\n");
		}
		g_string_append(out, "      </path>\n");
	}
	g_string_append_printf(out,
			       "      <currency>-1</currency>\n"
			       "      <genflags writable=\"false\" going=\"false\" "
			       "split=\"true\"/>\n"
			       "      <transflags rdma=\"true\"/>\n"
			       "      <class simul=\"0\" handle=\"0\" fileid=\"0\" writever=\"0\" "
			       "change=\"0\" readdir=\"0\"/>\n"
			       "      <read rank=\"0\" order=\"%u\"/>\n"
			       "      <write rank=\"0\" order=\"0\"/>\n"
			       "      <flags varsub=\"false\"/>\n"
			       "      <validfor>0</validfor>\n"
			       "    </location>\n",
			       order);
	ok = true;
out_free:
	g_strfreev(comps);
	return ok;
}

char *ff_junction_format_fedfs(GPtrArray *locations, mode_t saved_mode, ff_location_port_fn port_of,
			       void *data, char **msg)
{
	GString *out;
	char *err = NULL, *q;

	g_return_val_if_fail(locations && locations->len > 0, NULL);
	if (locations->len > FF_JUNCTION_LOCATIONS_MAX)
		return fj_failed(EINVAL,
				 fj_errf("more than %d locations", FF_JUNCTION_LOCATIONS_MAX), msg);
	out = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<junction>\n");
	g_string_append_printf(out, "  <savedmode bits=\"%o\"/>\n  <fileset>\n",
			       (unsigned int)(saved_mode & 07777));
	for (guint i = 0; i < locations->len; i++) {
		const struct ff_location_spec *spec =
			&((const struct ff_location *)g_ptr_array_index(locations, i))->spec;

		if (strcmp(spec->scheme, "nfs") != 0) {
			q = fj_quote_str(spec->uri);
			err = fj_errf("'%s': fedfs junctions hold nfs:// locations only", q);
			g_free(q);
			goto out_fail;
		}
		if (!fedfs_location(out, spec, i, port_of, data, &err))
			goto out_fail;
	}
	g_string_append(out, "  </fileset>\n</junction>\n");
	return g_string_free(out, FALSE);

out_fail:
	g_string_free(out, TRUE);
	return fj_failed(EINVAL, err, msg);
}

char *ff_junction_format_fedfs_nsdb(const char *nsdb_host, int nsdb_port, const char *fsn_uuid,
				    mode_t saved_mode, char **msg)
{
	g_autofree char *host = NULL, *uuid = NULL;
	size_t len = strlen(nsdb_host);
	g_autofree char *q = NULL;
	GString *out;

	if (!ff_nsdb_uuid_valid(fsn_uuid)) {
		q = fj_quote_str(fsn_uuid);
		return fj_failed(EINVAL,
				 fj_errf("'%s' is not an FSN UUID "
					 "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
					 q),
				 msg);
	}
	/* nfsref writes an IPv6 address without its brackets */
	if (len > 2 && nsdb_host[0] == '[' && nsdb_host[len - 1] == ']')
		host = g_strndup(nsdb_host + 1, len - 2);
	else
		host = g_strdup(nsdb_host);
	if (!fj_host_name_ok(host) || (host[0] != nsdb_host[0] && !strchr(host, ':'))) {
		q = fj_quote_str(nsdb_host);
		return fj_failed(EINVAL, fj_errf("NSDB '%s' is not a host name or IP address", q),
				 msg);
	}
	if (nsdb_port < 1 || nsdb_port > 65535)
		return fj_failed(EINVAL,
				 fj_errf("NSDB port %d is not a port from 1 to 65535", nsdb_port),
				 msg);
	uuid = g_ascii_strdown(fsn_uuid, -1);
	out = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<junction>\n");
	g_string_append_printf(out, "  <savedmode bits=\"%o\"/>\n  <fileset>\n",
			       (unsigned int)(saved_mode & 07777));
	g_string_append_printf(out, "    <name fsnuuid=\"%s\" nsdbname=\"", uuid);
	xml_escaped(out, host);
	/* nfsref writes the port even when it is LDAP's */
	g_string_append_printf(out, "\" nsdbport=\"%d\"/>\n  </fileset>\n</junction>\n", nsdb_port);
	return g_string_free(out, FALSE);
}
