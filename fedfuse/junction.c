/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction.c - the three junction formats of DESIGN §4 read into location lists and written
 * back: the fedfuse xattr (location.c's list syntax) and Samba's msdfs: symlinks here, nfsref's
 * FedFS XML in junction_fedfs.c. Every input is untrusted: bounded, checked, quoted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fedfuse/junction.h"
#include "fedfuse/junction_util.h"

/* ---- messages ------------------------------------------------------------------------------ */

/* `len` bytes at `s` as printable UTF-8 of at most `max` bytes (max >= 8): valid UTF-8 is kept;
 * control characters (C0, DEL, C1) and bytes that are not UTF-8 are written as \xNN or \uNNNN;
 * a text cut short ends in "...". */
static char *printable(const char *s, size_t len, size_t max)
{
	GString *out = g_string_sized_new(MIN(len, max) + 1);
	const char *p = s, *end = s + len;
	size_t cut = 0; /* out->len where "..." would go, when it comes to that */

	while (p < end) {
		gunichar c = g_utf8_get_char_validated(p, end - p);
		char buf[16];
		const char *add = p;
		size_t n, step;

		if (c == (gunichar)-1 || c == (gunichar)-2) {
			g_snprintf(buf, sizeof(buf), "\\x%02x", (unsigned int)(unsigned char)*p);
			add = buf;
			n = strlen(buf);
			step = 1;
		} else {
			step = g_utf8_next_char(p) - p;
			n = step;
			if (c < 0x20 || c == 0x7f) {
				g_snprintf(buf, sizeof(buf), "\\x%02x", (unsigned int)c);
				add = buf;
				n = strlen(buf);
			} else if (c >= 0x80 && c < 0xa0) {
				g_snprintf(buf, sizeof(buf), "\\u%04x", (unsigned int)c);
				add = buf;
				n = strlen(buf);
			}
		}
		if (out->len + n > max) {
			g_string_truncate(out, cut);
			g_string_append(out, "...");
			break;
		}
		g_string_append_len(out, add, n);
		if (out->len + 3 <= max)
			cut = out->len;
		p += step;
	}
	return g_string_free(out, FALSE);
}

/* Untrusted text quoted inside a message. */
char *fj_quote(const char *s, size_t len)
{
	return printable(s, len, QUOTE_MAX);
}

char *fj_quote_str(const char *s)
{
	return printable(s, strlen(s), QUOTE_MAX);
}

char *fj_errf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return s;
}

/* The end of every failing public function: hand out `err` made safe and set errno last, after
 * everything that could touch it. Takes ownership of `err`. */
void *fj_failed(int code, char *err, char **msg)
{
	if (msg)
		*msg = printable(err, strlen(err), FF_JUNCTION_MSG_MAX);
	g_free(err);
	errno = code;
	return NULL;
}

/* ---- shared pieces ------------------------------------------------------------------------- */

static void location_free(gpointer p)
{
	ff_location_clear(p);
	g_free(p);
}

void ff_junction_free(struct ff_junction *j)
{
	if (!j)
		return;
	if (j->locations)
		g_ptr_array_unref(j->locations);
	g_free(j);
}

const char *ff_junction_format_name(enum ff_junction_format format)
{
	switch (format) {
	case FF_JUNCTION_FEDFUSE:
		return "fedfuse";
	case FF_JUNCTION_FEDFS:
		return "fedfs";
	case FF_JUNCTION_MSDFS:
		return "msdfs";
	}
	return "unknown";
}

struct ff_junction *fj_new(enum ff_junction_format format)
{
	struct ff_junction *j = g_new0(struct ff_junction, 1);

	j->format = format;
	j->locations = g_ptr_array_new_with_free_func(location_free);
	j->mode = FF_JUNCTION_DEFAULT_MODE;
	return j;
}

/* Parse `uri` (which we built) and append it to `locs`; `what` names its source in messages. */
bool fj_add_location(GPtrArray *locs, const char *uri, const char *what, char **err)
{
	struct ff_location *loc;
	char *m = NULL;

	if (locs->len >= FF_JUNCTION_LOCATIONS_MAX) {
		*err = fj_errf("more than %d locations", FF_JUNCTION_LOCATIONS_MAX);
		return false;
	}
	loc = g_new0(struct ff_location, 1);
	if (!ff_location_parse(uri, loc, &m)) {
		*err = fj_errf("%s: %s", what, m);
		g_free(m);
		g_free(loc);
		return false;
	}
	for (guint i = 0; i < locs->len; i++) {
		const struct ff_location *other = g_ptr_array_index(locs, i);

		if (strcmp(other->spec.uri, loc->spec.uri) == 0) {
			char *q = fj_quote_str(uri);

			*err = fj_errf("%s: location '%s' is listed twice", what, q);
			g_free(q);
			location_free(loc);
			return false;
		}
	}
	g_ptr_array_add(locs, loc);
	return true;
}

/* A server name that may stand in a URI's authority as it is: a DNS or NetBIOS name of letters,
 * digits, '-', '_' and '.', or an IP address (IPv6 without brackets or zone). */
bool fj_host_name_ok(const char *host)
{
	size_t len = strlen(host);

	if (len == 0 || len > HOST_MAX)
		return false;
	if (strchr(host, ':'))
		return !strchr(host, '%') && g_hostname_is_ip_address(host);
	for (const char *c = host; *c; c++)
		if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_' && *c != '.')
			return false;
	return true;
}

void fj_append_host(GString *uri, const char *host)
{
	if (strchr(host, ':'))
		g_string_append_printf(uri, "[%s]", host);
	else
		g_string_append(uri, host);
}

void fj_append_component(GString *uri, const char *comp)
{
	char *esc = g_uri_escape_string(comp, NULL, FALSE);

	g_string_append_c(uri, '/');
	g_string_append(uri, esc);
	g_free(esc);
}

/* NULL when `c` (`n` bytes) may be one path component, else what is wrong with it. */
const char *fj_component_problem(const char *c, size_t n)
{
	if (n == 0)
		return "is empty";
	if (n > COMPONENT_MAX)
		return "is longer than 255 bytes";
	if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
		return "is '.' or '..'";
	if (memchr(c, '/', n))
		return "holds a '/'";
	if (memchr(c, '\0', n))
		return "holds a NUL byte";
	return NULL;
}

/* Drop the one trailing NUL some writers store with a value. */
size_t fj_without_nul(const char *s, size_t len)
{
	return len > 0 && s[len - 1] == '\0' ? len - 1 : len;
}

/* ---- fedfuse ------------------------------------------------------------------------------- */

struct ff_junction *ff_junction_parse_fedfuse(const char *value, size_t len, char **msg)
{
	struct ff_junction *j;
	GPtrArray *locs = NULL;
	char *m = NULL;

	len = fj_without_nul(value, len);
	if (len > FF_JUNCTION_VALUE_MAX)
		return fj_failed(EINVAL,
				 fj_errf("%s is %zu bytes, more than %d", FF_JUNCTION_XATTR_FEDFUSE,
					 len, FF_JUNCTION_VALUE_MAX),
				 msg);
	if (!ff_location_list_parse(value, len, FF_JUNCTION_LOCATIONS_MAX, &locs, &m)) {
		char *err = fj_errf("%s: %s", FF_JUNCTION_XATTR_FEDFUSE, m);

		g_free(m);
		return fj_failed(EINVAL, err, msg);
	}
	j = g_new0(struct ff_junction, 1);
	j->format = FF_JUNCTION_FEDFUSE;
	j->locations = locs;
	j->mode = FF_JUNCTION_DEFAULT_MODE;
	return j;
}

char *ff_junction_format_fedfuse(GPtrArray *locations)
{
	GString *out = g_string_new(NULL);

	g_return_val_if_fail(locations && locations->len > 0, NULL);
	for (guint i = 0; i < locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(locations, i);

		if (i > 0)
			g_string_append_c(out, ';');
		for (const char *c = loc->spec.uri; *c; c++) {
			if (*c == ';' || *c == '\\')
				g_string_append_c(out, '\\');
			g_string_append_c(out, *c);
		}
	}
	return g_string_free(out, FALSE);
}

/* ---- msdfs --------------------------------------------------------------------------------- */

bool ff_junction_is_msdfs(const char *target, size_t len)
{
	size_t n = strlen(FF_JUNCTION_MSDFS_PREFIX);

	return target && len >= n && g_ascii_strncasecmp(target, FF_JUNCTION_MSDFS_PREFIX, n) == 0;
}

/* One msdfs target, `n` bytes at `p`: SERVER\SHARE[\PATH...] -> smb://SERVER/SHARE[/PATH]. */
static char *msdfs_target_uri(const char *p, size_t n, guint index, char **err)
{
	const char *end = p + n, *c;
	char *shown = fj_quote(p, n);
	GString *uri = g_string_new("smb://");
	guint ncomp = 0;

	while (p < end && (*p == '\\' || *p == '/'))
		p++; /* Samba ignores leading separators ("\\server\share") */
	if (p == end) {
		*err = fj_errf("msdfs target %u '%s' is empty", index, shown);
		goto out_fail;
	}
	for (c = p;; c++) {
		const char *problem;
		char *comp;

		if (c < end && *c != '\\' && *c != '/')
			continue;
		problem = fj_component_problem(p, c - p);
		if (problem) {
			*err = fj_errf("msdfs target %u '%s': component %u %s", index, shown,
				       ncomp + 1, problem);
			goto out_fail;
		}
		comp = g_strndup(p, c - p);
		if (ncomp == 0 && !fj_host_name_ok(comp)) {
			*err = fj_errf("msdfs target %u '%s': bad server name", index, shown);
			g_free(comp);
			goto out_fail;
		}
		if (ncomp == 0)
			fj_append_host(uri, comp);
		else
			fj_append_component(uri, comp);
		g_free(comp);
		ncomp++;
		if (c == end)
			break;
		p = c + 1;
	}
	if (ncomp < 2) {
		*err = fj_errf(
			"msdfs target %u '%s' names no share (expected SERVER\\SHARE[\\PATH])",
			index, shown);
		goto out_fail;
	}
	g_free(shown);
	return g_string_free(uri, FALSE);

out_fail:
	g_free(shown);
	g_string_free(uri, TRUE);
	return NULL;
}

struct ff_junction *ff_junction_parse_msdfs(const char *target, size_t len, char **msg)
{
	size_t plen = strlen(FF_JUNCTION_MSDFS_PREFIX);
	struct ff_junction *j;
	const char *p, *end;
	guint count = 1, index = 0;
	char *err = NULL;

	len = fj_without_nul(target, len);
	if (len > FF_JUNCTION_VALUE_MAX)
		return fj_failed(EINVAL,
				 fj_errf("msdfs link target is %zu bytes, more than %d", len,
					 FF_JUNCTION_VALUE_MAX),
				 msg);
	if (!ff_junction_is_msdfs(target, len)) {
		char *q = fj_quote(target ? target : "", target ? len : 0);

		err = fj_errf("link target '%s' does not start with '%s'", q,
			      FF_JUNCTION_MSDFS_PREFIX);
		g_free(q);
		return fj_failed(EINVAL, err, msg);
	}
	if (memchr(target, '\0', len))
		return fj_failed(EINVAL, fj_errf("msdfs link target holds a NUL byte"), msg);
	p = target + plen;
	end = target + len;
	if (p == end)
		return fj_failed(EINVAL, fj_errf("msdfs link names no target"), msg);
	for (const char *c = p; c < end; c++)
		count += *c == ',';
	if (count > FF_JUNCTION_LOCATIONS_MAX)
		return fj_failed(EINVAL,
				 fj_errf("msdfs link has %u targets, more than %d", count,
					 FF_JUNCTION_LOCATIONS_MAX),
				 msg);
	j = fj_new(FF_JUNCTION_MSDFS);
	while (p <= end) {
		const char *comma = memchr(p, ',', end - p);
		const char *stop = comma ? comma : end;
		char *uri = msdfs_target_uri(p, stop - p, ++index, &err);
		char *what;
		bool ok;

		if (!uri)
			goto out_fail;
		what = g_strdup_printf("msdfs target %u", index);
		ok = fj_add_location(j->locations, uri, what, &err);
		g_free(what);
		g_free(uri);
		if (!ok)
			goto out_fail;
		if (!comma)
			break;
		p = comma + 1;
	}
	return j;

out_fail:
	ff_junction_free(j);
	return fj_failed(EINVAL, err, msg);
}

char *ff_junction_format_msdfs(GPtrArray *locations, char **msg)
{
	GString *out = g_string_new(FF_JUNCTION_MSDFS_PREFIX);
	char *err = NULL, *q;

	g_return_val_if_fail(locations && locations->len > 0, NULL);
	if (locations->len > FF_JUNCTION_LOCATIONS_MAX) {
		err = fj_errf("more than %d locations", FF_JUNCTION_LOCATIONS_MAX);
		goto out_fail;
	}
	for (guint i = 0; i < locations->len; i++) {
		const struct ff_location_spec *spec =
			&((const struct ff_location *)g_ptr_array_index(locations, i))->spec;
		const char *path = spec->path;

		q = fj_quote_str(spec->uri);
		if (strcmp(spec->scheme, "smb") != 0)
			err = fj_errf("'%s': msdfs junctions hold smb:// locations only", q);
		else if (spec->port)
			err = fj_errf("'%s': msdfs junctions cannot hold a port", q);
		else if (spec->query)
			err = fj_errf("'%s': msdfs junctions cannot hold options (?%s)", q,
				      spec->query);
		else if (strpbrk(path, ",\\"))
			err = fj_errf("'%s': msdfs targets cannot hold a ',' or '\\'", q);
		g_free(q);
		if (err)
			goto out_fail;
		if (i > 0)
			g_string_append_c(out, ',');
		g_string_append(out, spec->host);
		for (const char *c = path; *c; c++)
			g_string_append_c(out, *c == '/' ? '\\' : *c);
	}
	return g_string_free(out, FALSE);

out_fail:
	g_string_free(out, TRUE);
	return fj_failed(EINVAL, err, msg);
}
