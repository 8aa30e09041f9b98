/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * location.c - location URIs (DESIGN §1): the one strict parser of the URIs that namespace
 * files, junctions (untrusted) and the admin tool hold, of `;`-separated lists of them, and the
 * rule for showing untrusted text in a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedfuse/location.h"

#define HOST_MAX 253  /* bytes in a DNS name */
#define SCHEME_MAX 32 /* bytes in a scheme: a backend module's name */

bool ff_has_control_char(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

/* `s` as it may appear in a message, which must be printable UTF-8: lines of a namespace file
 * and URIs from junctions may carry anything into a terminal or a log. Control characters are
 * escaped, and so is every byte >= 0x80 when `s` is not valid UTF-8. */
char *ff_shown(const char *s)
{
	bool utf8 = g_utf8_validate(s, -1, NULL);
	char high[129];

	if (utf8 && !ff_has_control_char(s, strlen(s)))
		return g_strdup(s);
	if (!utf8)
		return g_strescape(s, NULL);
	for (int i = 0; i < 128; i++)
		high[i] = (char)(0x80 + i);
	high[128] = '\0';
	return g_strescape(s, high);
}

static bool is_component(const char *c, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(c, word, n) == 0;
}

/* Whether absolute `path` (of `len` bytes) has no ".", ".." or empty component and no trailing
 * '/', "/" excepted. */
bool ff_path_is_normalised(const char *path, size_t len)
{
	const char *p = path, *end = path + len;

	if (len == 1)
		return true;
	while (p < end) {
		const char *c = p + 1;
		const char *slash = memchr(c, '/', end - c);
		size_t n = (slash ? slash : end) - c;

		if (n == 0 || is_component(c, n, ".") || is_component(c, n, ".."))
			return false;
		p = c + n;
	}
	return true;
}

void ff_location_free(gpointer p)
{
	ff_location_clear(p);
	g_free(p);
}

/* ---- location URIs ------------------------------------------------------------------------ */

/* Characters RFC 3986 allows in a URI; anything else must be %-encoded. */
static bool uri_char_ok(char c)
{
	return c != '\0' && (g_ascii_isalnum(c) || strchr("-._~:/?#[]@!$&'()*+,;=%", c));
}

/* The authority of "scheme://authority/...": sets *start and returns its length, or -1 when
 * `uri` has no scheme followed by "//". */
static ssize_t authority_span(const char *uri, const char **start)
{
	size_t n = 0;

	if (!g_ascii_isalpha(uri[0]))
		return -1;
	while (g_ascii_isalnum(uri[n]) || uri[n] == '+' || uri[n] == '-' || uri[n] == '.')
		n++;
	if (strncmp(uri + n, "://", 3) != 0)
		return -1;
	*start = uri + n + 3;
	return (ssize_t)strcspn(*start, "/?#");
}

/* RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), here in lower case and short. */
static bool scheme_ok(const char *scheme)
{
	size_t len = strlen(scheme);

	if (len == 0 || len > SCHEME_MAX || !g_ascii_islower(scheme[0]))
		return false;
	for (const char *c = scheme; *c; c++)
		if (!g_ascii_islower(*c) && !g_ascii_isdigit(*c) && !strchr("+-.", *c))
			return false;
	return true;
}

/* A host name we will hand to a library: an IP literal (GUri removed the brackets) or a DNS or
 * NetBIOS name of letters, digits, '-', '_' and '.'. */
static bool host_ok(const char *host)
{
	size_t len = strlen(host);

	if (strchr(host, ':'))
		return g_hostname_is_ip_address(host);
	if (len == 0 || len > HOST_MAX)
		return false;
	for (const char *c = host; *c; c++)
		if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_' && *c != '.')
			return false;
	return true;
}

/* `uri` as messages quote it, with no password and no raw control character. A password can
 * only sit in a "user:password@" run, wherever a malformed URI puts it, so every segment (between
 * '/', '?' and '#') that has an '@' and either a ':' before it or "//" before the segment is
 * shown as "***" up to its last '@'. */
static char *uri_shown(const char *uri)
{
	GString *out = g_string_new(NULL);
	const char *p = uri;
	char *escaped;

	for (;;) {
		size_t n = strcspn(p, "/?#");
		const char *at = memrchr(p, '@', n);
		bool after_slashes = p - uri >= 2 && p[-1] == '/' && p[-2] == '/';

		if (at && (after_slashes || memchr(p, ':', at - p))) {
			g_string_append(out, "***");
			g_string_append_len(out, at, p + n - at);
		} else {
			g_string_append_len(out, p, n);
		}
		if (p[n] == '\0')
			break;
		g_string_append_c(out, p[n]);
		p += n + 1;
	}
	escaped = ff_shown(out->str);
	g_string_free(out, TRUE);
	return escaped;
}

static char *uri_split_message(const char *uri, const GError *gerr)
{
	switch (gerr->code) {
	case G_URI_ERROR_BAD_HOST:
		return g_strdup_printf("bad host in '%s'", uri);
	case G_URI_ERROR_BAD_PORT:
		return g_strdup_printf("bad port in '%s' (expected 1 to 65535)", uri);
	case G_URI_ERROR_BAD_PATH:
		return g_strdup_printf("bad %%-encoding in the path of '%s'", uri);
	case G_URI_ERROR_BAD_QUERY:
		return g_strdup_printf("bad %%-encoding in the query of '%s'", uri);
	case G_URI_ERROR_BAD_FRAGMENT:
		return g_strdup_printf("fragment not allowed in '%s'", uri);
	default:
		return g_strdup_printf("'%s' is not a location URI "
				       "(file:///PATH, nfs://HOST/PATH or smb://HOST/SHARE)",
				       uri);
	}
}

bool ff_location_parse(const char *uri, struct ff_location *loc, char **msg)
{
	char *scheme = NULL, *userinfo = NULL, *host = NULL, *path = NULL, *query = NULL;
	char *fragment = NULL, *decoded = NULL, *err = NULL, *show = NULL, *canon = NULL;
	const char *auth, *data;
	GBytes *bytes = NULL;
	GError *gerr = NULL;
	int port = -1;
	ssize_t auth_len;
	size_t len, size;

	memset(loc, 0, sizeof(*loc));
	if (!uri || uri[0] == '\0') {
		err = g_strdup("empty location URI");
		goto out_fail;
	}
	len = strnlen(uri, FF_LOCATION_URI_MAX + 1);
	if (len > FF_LOCATION_URI_MAX) {
		err = g_strdup_printf("location URI longer than %d bytes", FF_LOCATION_URI_MAX);
		goto out_fail;
	}
	/* messages quote `show`: never a password, never a raw control character */
	show = uri_shown(uri);
	auth_len = authority_span(uri, &auth);
	if (auth_len > 0 && memchr(auth, '@', auth_len)) {
		err = g_strdup_printf("user name or password in '%s'; use credentials= instead",
				      show);
		goto out_fail;
	}
	for (size_t i = 0; i < len; i++) {
		if (!uri_char_ok(uri[i])) {
			err = g_strdup_printf("'%s' has a character not allowed in a URI "
					      "at byte %zu (%%-encode it)",
					      show, i + 1);
			goto out_fail;
		}
	}
	/* g_uri_split, not g_uri_parse: the latter silently removes "." and ".." segments,
	 * which we must refuse instead. ENCODED keeps the path and query as written. */
	if (!g_uri_split(uri, G_URI_FLAGS_ENCODED | G_URI_FLAGS_NON_DNS, &scheme, &userinfo, &host,
			 &port, &path, &query, &fragment, &gerr)) {
		err = uri_split_message(show, gerr);
		g_error_free(gerr);
		goto out_fail;
	}
	if (!scheme) { /* g_uri_split takes relative references too */
		err = g_strdup_printf("'%s' is not a location URI "
				      "(file:///PATH, nfs://HOST/PATH or smb://HOST/SHARE)",
				      show);
		goto out_fail;
	}
	/* The scheme names the backend module (SCHEME.so): RFC 3986's syntax keeps it a plain
	 * file name; what else the URI must hold is the backend's to say (its check op). */
	canon = g_ascii_strdown(scheme, -1);
	if (!scheme_ok(canon)) {
		err = g_strdup_printf("bad scheme '%s' in '%s'", canon, show);
		goto out_fail;
	}
	if (userinfo) { /* needs an authority, whose '@' was refused above: kept for safety */
		err = g_strdup("user name or password in a location URI; use credentials= instead");
		goto out_fail;
	}
	if (fragment) {
		err = g_strdup_printf("fragment not allowed in '%s'", show);
		goto out_fail;
	}
	if (host && host[0] == '\0')
		g_clear_pointer(&host, g_free);
	if (host && !host_ok(host)) {
		err = g_strdup_printf("bad host in '%s'", show);
		goto out_fail;
	}
	if (port == 0) {
		err = g_strdup_printf("bad port in '%s' (expected 1 to 65535)", show);
		goto out_fail;
	}
	if (query && query[0] == '\0')
		g_clear_pointer(&query, g_free);

	bytes = g_uri_unescape_bytes(path, -1, NULL, NULL);
	if (!bytes) {
		err = g_strdup_printf("bad %%-encoding in the path of '%s'", show);
		goto out_fail;
	}
	data = g_bytes_get_data(bytes, &size);
	if (size > 0 && memchr(data, '\0', size)) {
		err = g_strdup_printf("path of '%s' contains %%00", show);
		goto out_fail;
	}
	if (ff_has_control_char(data, size)) {
		err = g_strdup_printf("path of '%s' contains a control character", show);
		goto out_fail;
	}
	decoded = g_strndup(data, size);
	if (size == 0) {
		err = g_strdup_printf("no path in '%s'", show);
		goto out_fail;
	}
	if (decoded[0] != '/') {
		err = g_strdup_printf("path of '%s' is not absolute", show);
		goto out_fail;
	}
	if (!ff_path_is_normalised(decoded, size)) {
		char *p = uri_shown(decoded); /* any bytes but control characters, and a
						 * malformed URI's "user:password@" */

		err = g_strdup_printf("path '%s' in '%s' is not normalised", p, show);
		g_free(p);
		goto out_fail;
	}

	loc->spec.uri = g_strdup(uri);
	loc->spec.scheme = g_steal_pointer(&canon);
	loc->spec.host = g_steal_pointer(&host);
	loc->spec.port = port > 0 ? port : 0;
	loc->spec.path = g_steal_pointer(&decoded);
	loc->spec.query = g_steal_pointer(&query);
	loc->spec.timeout = FF_DEFAULT_TIMEOUT;
	loc->spec.file_mode = FF_DEFAULT_FILE_MODE;
	loc->spec.dir_mode = FF_DEFAULT_DIR_MODE;
	loc->spec.write_behind = -1;
	loc->spec.read_ahead = -1;
	g_bytes_unref(bytes);
	g_free(scheme);
	g_free(path);
	g_free(show);
	return true;

out_fail:
	if (bytes)
		g_bytes_unref(bytes);
	g_free(decoded);
	g_free(canon);
	g_free(scheme);
	g_free(userinfo);
	g_free(host);
	g_free(path);
	g_free(query);
	g_free(fragment);
	g_free(show);
	if (msg)
		*msg = err;
	else
		g_free(err);
	return false;
}

void ff_location_clear(struct ff_location *loc)
{
	if (!loc)
		return;
	g_free((char *)loc->spec.uri);
	g_free((char *)loc->spec.scheme);
	g_free((char *)loc->spec.host);
	g_free((char *)loc->spec.path);
	g_free((char *)loc->spec.query);
	memset(loc, 0, sizeof(*loc));
}

/* ---- location lists (junctions) ----------------------------------------------------------- */

/* One entry of a location list: strip it, parse it, refuse a repeat. */
static bool list_entry(GPtrArray *locs, GString *entry, guint index, guint max, char **err)
{
	char *uri = g_strstrip(entry->str);
	struct ff_location *loc;
	char *show;

	if (uri[0] == '\0') {
		*err = g_strdup_printf("empty entry (number %u) in the location list", index);
		return false;
	}
	if (max > 0 && locs->len >= max) {
		*err = g_strdup_printf("more than %u locations in the location list", max);
		return false;
	}
	loc = g_new0(struct ff_location, 1);
	if (!ff_location_parse(uri, loc, err)) {
		g_free(loc);
		return false;
	}
	for (guint j = 0; j < locs->len; j++) {
		const struct ff_location *other = g_ptr_array_index(locs, j);

		if (strcmp(other->spec.uri, loc->spec.uri) == 0) {
			show = uri_shown(uri);
			*err = g_strdup_printf("location '%s' is listed twice", show);
			g_free(show);
			ff_location_free(loc);
			return false;
		}
	}
	g_ptr_array_add(locs, loc);
	return true;
}

bool ff_location_list_parse(const char *value, size_t len, guint max, GPtrArray **out, char **msg)
{
	GPtrArray *locs = g_ptr_array_new_with_free_func(ff_location_free);
	GString *entry = g_string_new(NULL);
	const char *p, *end;
	guint index = 0;
	char *err = NULL;

	if (!value)
		value = "";
	p = value;
	end = value + len;
	if (len > 0 && memchr(value, '\0', len)) {
		err = g_strdup("the location list contains a NUL byte");
		goto out_fail;
	}
	while (p < end && g_ascii_isspace(*p))
		p++;
	while (end > p && g_ascii_isspace(end[-1]))
		end--;
	/* GKeyFile's rules: every ';' ends an entry, the text after the last ';' is one more entry
	 * only when it is not empty (so one trailing ';' is allowed, two are an empty entry). */
	for (;;) {
		if (p < end && *p == '\\') {
			char c = p + 1 < end ? p[1] : '\0';

			if (c == '\0') {
				err = g_strdup("the location list ends with a lone backslash");
				goto out_fail;
			}
			if (!strchr("sntr\\;", c)) {
				if (g_ascii_isgraph(c))
					err = g_strdup_printf(
						"invalid escape sequence '\\%c' in the "
						"location list",
						c);
				else
					err = g_strdup_printf(
						"invalid escape sequence (a backslash "
						"before byte 0x%02x) in the location list",
						(unsigned int)(unsigned char)c);
				goto out_fail;
			}
			switch (c) {
			case 's':
				c = ' ';
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			default: /* '\\' and ';' stand for themselves */
				break;
			}
			g_string_append_c(entry, c);
			p += 2;
			continue;
		}
		if (p < end && *p != ';') {
			g_string_append_c(entry, *p++);
			continue;
		}
		if (p == end && entry->len == 0 && index > 0)
			break; /* one trailing ';' */
		if (p == end && entry->len == 0) {
			err = g_strdup("no location given");
			goto out_fail;
		}
		if (!list_entry(locs, entry, ++index, max, &err))
			goto out_fail;
		g_string_truncate(entry, 0);
		if (p == end)
			break;
		p++; /* the ';' */
	}
	g_string_free(entry, TRUE);
	*out = locs;
	return true;

out_fail:
	g_string_free(entry, TRUE);
	g_ptr_array_unref(locs);
	if (msg)
		*msg = err;
	else
		g_free(err);
	return false;
}
