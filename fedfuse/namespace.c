/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namespace.c - the namespace file (DESIGN §3) as an immutable tree of virtual directories and
 * referrals. GKeyFile decodes values; our own line scanner finds lines and duplicates, which
 * GKeyFile neither reports nor sees. Location URIs are location.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fedfuse/location.h"
#include "fedfuse/namespace.h"
#include "fedfuse/namespace_tree.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/readfile.h"

#define NS_FILE_MAX (1 << 20)	 /* bytes; a bigger namespace file is a mistake (or /dev/zero) */
#define NS_PATH_MAX 4095	 /* bytes in a namespace path */
#define NS_SECONDS_MAX 1000000.0 /* keeps seconds * 1000 far inside an int for the backends */

#define DEFAULT_JUNCTION_CACHE_TTL 300.0
#define DEFAULT_ATTR_TIMEOUT 1.0

/* ---- scanner: where each group and key is ------------------------------------------------- */

struct scan_key {
	char *name;
	int line;
};

enum group_kind { GROUP_SETTINGS, GROUP_REFERRAL, GROUP_NSDB };

struct scan_group {
	char *name;
	int line;
	enum group_kind kind; /* set by check_names() */
	GArray *keys;	      /* struct scan_key, in file order */
};

/* The state of one ff_namespace_load() call. */
struct loader {
	const char *file;
	ff_location_check_fn check;
	void *check_data;
	GError **err;
	GPtrArray *groups; /* struct scan_group *, in file order */
	GKeyFile *kf;
	struct ff_namespace *ns;
};

/* Options of a referral that live only in the specs of its locations. */
struct spec_opts {
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
	mode_t file_mode, dir_mode;
	bool identity_given; /* identity= was written */
};

static const char *const settings_keys[] = {
	"junction-cache-ttl", "attr-timeout", "timeout",    "watch",
	"nsdb-stale-grace",   "write-behind", "read-ahead", NULL,
};
static const char *const nsdb_keys[] = { "security", "ca-file", "replicas", NULL };
static const char *const referral_keys[] = {
	"locations",	   "read-only",	       "timeout", "attr-timeout",
	"credentials",	   "on-unreachable",   "uid",	  "gid",
	"file-mode",	   "dir-mode",	       "watch",	  "identity",
	"credentials-dir", "user-credentials", "sec",	  "krb5-ccache",
	"write-behind",	   "read-ahead",       NULL,
};

static bool fail(struct loader *ld, int code, int line, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Set the loader's error to "FILE:LINE: message". Returns false, for `return fail(...)`. */
static bool fail(struct loader *ld, int code, int line, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error(ld->err, G_KEY_FILE_ERROR, code, "%s:%d: %s", ld->file, line, msg);
	g_free(msg);
	return false;
}

static void scan_key_clear(gpointer p)
{
	struct scan_key *k = p;

	g_free(k->name);
}

static void scan_group_free(gpointer p)
{
	struct scan_group *g = p;

	g_free(g->name);
	g_array_unref(g->keys);
	g_free(g);
}

static bool syntax_error(struct loader *ld, int line, const char *s, size_t n)
{
	char *text = g_strndup(s, n);
	char *show = ff_shown(text);

	fail(ld, G_KEY_FILE_ERROR_PARSE, line,
	     "syntax error: '%s' is not a [group], a key=value or a # comment", show);
	g_free(show);
	g_free(text);
	return false;
}

/* A line that starts with '['. GKeyFile takes "[name]" followed by spaces or tabs only, where
 * name is non-empty and holds no '[' and no control character. */
static bool scan_group_line(struct loader *ld, const char *s, size_t n, int line)
{
	const char *close = memchr(s, ']', n);
	struct scan_group *g;
	char *name, *show;

	if (!close)
		return syntax_error(ld, line, s, n);
	for (const char *q = close + 1; q < s + n; q++)
		if (*q != ' ' && *q != '\t')
			return syntax_error(ld, line, s, n);
	name = g_strndup(s + 1, close - s - 1);
	if (name[0] == '\0') {
		g_free(name);
		return fail(ld, G_KEY_FILE_ERROR_PARSE, line, "empty group name []");
	}
	if (strchr(name, '[') || ff_has_control_char(name, strlen(name))) {
		show = ff_shown(name);
		fail(ld, G_KEY_FILE_ERROR_PARSE, line, "invalid group name '[%s]'", show);
		g_free(show);
		g_free(name);
		return false;
	}
	g = g_new0(struct scan_group, 1);
	g->name = name;
	g->line = line;
	g->keys = g_array_new(FALSE, TRUE, sizeof(struct scan_key));
	g_array_set_clear_func(g->keys, scan_key_clear);
	g_ptr_array_add(ld->groups, g);
	return true;
}

/* A line "key = value": the key ends at the first '=', white space before it is not part of it
 * (GKeyFile's rule). The value is left to GKeyFile. */
static bool scan_key_line(struct loader *ld, const char *s, const char *eq, int line)
{
	const char *end = eq;
	struct scan_group *g;
	struct scan_key k;
	char *show;

	while (end > s && g_ascii_isspace(end[-1]))
		end--;
	if (end == s)
		return fail(ld, G_KEY_FILE_ERROR_PARSE, line, "missing key name before '='");
	k.name = g_strndup(s, end - s);
	k.line = line;
	if (ld->groups->len == 0) {
		show = ff_shown(k.name);
		fail(ld, G_KEY_FILE_ERROR_PARSE, line,
		     "key '%s' outside any group (the file must start with a [group])", show);
		g_free(show);
		g_free(k.name);
		return false;
	}
	g = g_ptr_array_index(ld->groups, ld->groups->len - 1);
	g_array_append_val(g->keys, k);
	return true;
}

/* Pass 1: syntax, line by line as GKeyFile reads it ('\n' ends a line, a '\r' before it is
 * dropped, leading white space is skipped, '#' starts a comment). Records groups and keys. */
static bool scan_text(struct loader *ld, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int line = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *s = p, *eq;
		size_t n = (size_t)((nl ? nl : end) - p);

		line++;
		p = nl ? nl + 1 : end;
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (memchr(s, '\0', n))
			return fail(ld, G_KEY_FILE_ERROR_PARSE, line, "line contains a NUL byte");
		while (n > 0 && g_ascii_isspace(*s)) {
			s++;
			n--;
		}
		if (n == 0 || *s == '#')
			continue;
		if (line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
			return fail(ld, G_KEY_FILE_ERROR_PARSE, line,
				    "the file starts with a byte order mark; save it without one");
		if (!g_utf8_validate(s, n, NULL))
			return fail(ld, G_KEY_FILE_ERROR_PARSE, line, "line is not valid UTF-8");
		if (*s == '[') {
			if (!scan_group_line(ld, s, n, line))
				return false;
			continue;
		}
		eq = memchr(s, '=', n);
		if (!eq)
			return syntax_error(ld, line, s, n);
		if (!scan_key_line(ld, s, eq, line))
			return false;
	}
	return true;
}

/* ---- pass 2: names of groups and keys ----------------------------------------------------- */

/* NULL when `path` may name a referral, else what is wrong with it. */
static const char *ns_path_problem(const char *path)
{
	size_t len = strlen(path);
	const char *c;

	if (path[0] != '/')
		return "is not absolute";
	if (!ff_path_is_normalised(path, len))
		return "is not normalised";
	if (len > NS_PATH_MAX)
		return "is longer than 4095 bytes";
	for (c = path + 1; *c != '\0';) {
		size_t n = strcspn(c, "/");

		if (n > NS_NAME_MAX)
			return "has a component longer than 255 bytes";
		c += n;
		if (*c == '/')
			c++;
	}
	return NULL;
}

static bool key_known(const char *const *keys, const char *name)
{
	for (; *keys; keys++)
		if (strcmp(*keys, name) == 0)
			return true;
	return false;
}

static bool check_group_keys(struct loader *ld, const struct scan_group *g,
			     const char *const *known)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	bool ok = false;

	for (guint i = 0; i < g->keys->len; i++) {
		const struct scan_key *k = &g_array_index(g->keys, struct scan_key, i);
		const struct scan_key *first = g_hash_table_lookup(seen, k->name);

		if (!key_known(known, k->name)) {
			char *show = ff_shown(k->name);

			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			     "unknown key '%s' in [%s]", show, g->name);
			g_free(show);
			goto out_free_seen;
		}
		if (first) {
			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			     "duplicate key '%s' in [%s] (first at line %d)", k->name, g->name,
			     first->line);
			goto out_free_seen;
		}
		g_hash_table_insert(seen, k->name, (gpointer)k);
	}
	ok = true;
out_free_seen:
	g_hash_table_unref(seen);
	return ok;
}

/* Pass 2: every group is [namespace] or a valid, unique referral path, and holds only known keys,
 * each once. After this GKeyFile's merged view equals what the scanner saw. */
static bool check_names(struct loader *ld)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
	bool ok = false;

	for (guint i = 0; i < ld->groups->len; i++) {
		struct scan_group *g = g_ptr_array_index(ld->groups, i);
		const struct scan_group *first = g_hash_table_lookup(seen, g->name);
		const char *problem;

		if (strcmp(g->name, "namespace") == 0) {
			g->kind = GROUP_SETTINGS;
		} else if (strchr(g->name, '/')) {
			problem = ns_path_problem(g->name);
			if (problem) {
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line, "path '%s' %s",
				     g->name, problem);
				goto out_free_seen;
			}
			g->kind = GROUP_REFERRAL;
		} else if (g_str_has_prefix(g->name, "nsdb ")) {
			g->kind = GROUP_NSDB;
		} else {
			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
			     "unknown group [%s]: expected [namespace], [nsdb HOST[:PORT]] or an "
			     "absolute path",
			     g->name);
			goto out_free_seen;
		}
		if (first) {
			if (g->kind != GROUP_REFERRAL)
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
				     "duplicate group [%s] (first at line %d)", g->name,
				     first->line);
			else
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
				     "duplicate referral '%s' (first at line %d)", g->name,
				     first->line);
			goto out_free_seen;
		}
		g_hash_table_insert(seen, g->name, g);
		if (!check_group_keys(ld, g,
				      g->kind == GROUP_SETTINGS ? settings_keys
				      : g->kind == GROUP_NSDB	? nsdb_keys
								: referral_keys))
			goto out_free_seen;
	}
	ok = true;
out_free_seen:
	g_hash_table_unref(seen);
	return ok;
}

/* Pass 3: GKeyFile itself. The passes above refuse everything GKeyFile refuses, as far as we know;
 * should it still fail, find its line by loading ever longer prefixes of the file (it parses
 * line by line, so a prefix fails exactly when it holds the bad line). */
static bool load_key_file(struct loader *ld, const char *text, size_t len)
{
	GError *kerr = NULL;
	GArray *ends;
	guint lo, hi;

	if (g_key_file_load_from_data(ld->kf, text, len, G_KEY_FILE_NONE, &kerr))
		return true;
	ends = g_array_new(FALSE, FALSE, sizeof(size_t));
	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n')
			g_array_append_val(ends, i);
	if (len > 0 && text[len - 1] != '\n')
		g_array_append_val(ends, len);
	lo = 1;
	hi = ends->len ? ends->len : 1;
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;
		GKeyFile *probe = g_key_file_new();

		if (g_key_file_load_from_data(probe, text, g_array_index(ends, size_t, mid - 1),
					      G_KEY_FILE_NONE, NULL))
			lo = mid + 1;
		else
			hi = mid;
		g_key_file_free(probe);
	}
	fail(ld, G_KEY_FILE_ERROR_PARSE, (int)lo, "%s", kerr->message);
	g_array_unref(ends);
	g_error_free(kerr);
	return false;
}

/* ---- pass 4: values ----------------------------------------------------------------------- */

/* Whether the raw value `raw` has only the escapes GKeyFile decodes (\s \n \t \r \\, and \; in
 * lists). Checked before GKeyFile decodes, whose own error reporting here is unreliable (2.74
 * sets a GError twice for a trailing backslash in a list). */
static bool escapes_ok(const char *raw, bool list)
{
	for (const char *c = raw; *c; c++) {
		if (*c != '\\')
			continue;
		c++;
		if (*c == '\0' || !(strchr("sntr\\", *c) || (list && *c == ';')))
			return false;
	}
	return true;
}

/* The value of `k` in `g`, unescaped by GKeyFile, surrounding white space removed; NULL (error
 * set) when it cannot be decoded or holds a control character. */
static char *get_value(struct loader *ld, const struct scan_group *g, const struct scan_key *k)
{
	char *raw = g_key_file_get_value(ld->kf, g->name, k->name, NULL);
	char *show, *v = NULL;

	if (raw && escapes_ok(raw, false))
		v = g_key_file_get_string(ld->kf, g->name, k->name, NULL);
	if (!v) {
		show = ff_shown(raw ? raw : "");
		fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
		     "%s: invalid escape sequence in '%s'", k->name, show);
		g_free(show);
		g_free(raw);
		return NULL;
	}
	g_free(raw);
	g_strstrip(v);
	if (ff_has_control_char(v, strlen(v))) {
		fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
		     "%s: value contains a control character", k->name);
		g_free(v);
		return NULL;
	}
	return v;
}

/* Seconds in plain decimal notation (g_ascii_strtod alone would take "inf", "nan" and hex). */
static bool parse_seconds(struct loader *ld, const struct scan_key *k, const char *v, bool zero_ok,
			  double *out)
{
	char *endp = NULL;
	double d = 0;
	bool ok = v[0] != '\0' && strspn(v, "0123456789.eE+-") == strlen(v);

	if (ok) {
		d = g_ascii_strtod(v, &endp);
		ok = *endp == '\0' && isfinite(d) && (zero_ok ? d >= 0 : d > 0);
	}
	if (!ok && zero_ok)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: '%s' is not a number of seconds (0 or more)", k->name, v);
	if (!ok)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: '%s' is not a positive number of seconds", k->name, v);
	if (d > NS_SECONDS_MAX)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: '%s' is more than 1000000 seconds", k->name, v);
	*out = d == 0 ? 0 : d; /* no "-0" */
	return true;
}

/* write-behind= and read-ahead=: whole MiB from 0 to `max`, in plain decimal digits. */
static bool parse_mib(struct loader *ld, const struct scan_key *k, const char *v, int max, int *out)
{
	guint64 n = 0;

	if (v[0] == '\0' || strspn(v, "0123456789") != strlen(v) ||
	    !g_ascii_string_to_unsigned(v, 10, 0, (guint64)max, &n, NULL))
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: '%s' is not a whole number of MiB from 0 to %d", k->name, v, max);
	*out = (int)n;
	return true;
}

/* GKeyFile's booleans: true, false, 1, 0. */
static bool parse_bool(struct loader *ld, const struct scan_key *k, const char *v, bool *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
		*out = true;
		return true;
	}
	if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
		*out = false;
		return true;
	}
	return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "%s: '%s' is not true or false",
		    k->name, v);
}

static bool parse_mode(struct loader *ld, const struct scan_key *k, const char *v, mode_t *out)
{
	const char *digits = v + strspn(v, "0");
	unsigned long m = 010000;

	/* at most four significant digits, so strtoul cannot overflow */
	if (v[0] != '\0' && strspn(v, "01234567") == strlen(v) && strlen(digits) <= 4)
		m = strtoul(v, NULL, 8);
	if (m > 07777)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: '%s' is not an octal mode from 0000 to 07777", k->name, v);
	*out = (mode_t)m;
	return true;
}

/* getpwnam_r/getgrnam_r report "no such name" as 0 or as one of these (see their man page). */
static bool is_not_found(int rc)
{
	return rc == 0 || rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM;
}

/* Resolve a user (is_group false) or group name. Returns 0, -ENOENT when unknown, or -errno. */
static int lookup_owner(const char *name, bool is_group, unsigned int *id)
{
	size_t size = 1024;
	char *buf = NULL;
	int rc;

	for (;;) {
		struct passwd pw, *pres = NULL;
		struct group gr, *gres = NULL;

		buf = g_malloc(size);
		if (is_group) {
			rc = getgrnam_r(name, &gr, buf, size, &gres);
			if (gres)
				*id = gr.gr_gid;
		} else {
			rc = getpwnam_r(name, &pw, buf, size, &pres);
			if (pres)
				*id = pw.pw_uid;
		}
		if (rc != ERANGE || size >= (1 << 20)) {
			if (pres || gres)
				rc = 0;
			else if (is_not_found(rc))
				rc = ENOENT;
			break;
		}
		g_free(buf);
		size *= 2;
	}
	g_free(buf);
	return -rc;
}

/* uid= and gid=: a number, or a name resolved now (so that a typo fails at load time). */
static bool parse_owner(struct loader *ld, const struct scan_key *k, const char *v, bool is_group,
			unsigned int *out)
{
	const char *what = is_group ? "group" : "user";
	unsigned long long n;
	int rc;

	if (v[0] != '\0' && strspn(v, "0123456789") == strlen(v)) {
		errno = 0;
		n = strtoull(v, NULL, 10);
		/* (uid_t)-1 means "no change" to chown(2): never an owner */
		if (errno == ERANGE || n >= (unsigned long long)(uid_t)-1)
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "%s: '%s' is out of range", k->name, v);
		*out = (unsigned int)n;
		return true;
	}
	if (v[0] == '\0')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: empty value; give a %s name or number", k->name, what);
	rc = lookup_owner(v, is_group, out);
	if (rc == -ENOENT)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "%s: unknown %s '%s'",
			    k->name, what, v);
	if (rc < 0)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "%s: cannot look up %s '%s': %s", k->name, what, v, g_strerror(-rc));
	return true;
}

/* credentials=: the file must be private to the user running fedfuse. Its contents are the
 * backend's business; we only look at its inode. */
static bool check_credentials(struct loader *ld, const struct scan_key *k, const char *path)
{
	struct stat st;
	mode_t perm;
	int e;

	if (path[0] != '/')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials: '%s' is not an absolute path", path);
	if (stat(path, &st) < 0) {
		e = errno;
		if (e == ENOENT)
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "credentials file %s does not exist", path);
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "credentials file %s: %s",
			    path, g_strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials file %s is not a regular file", path);
	if (st.st_uid != geteuid())
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials file %s is owned by uid %u, "
			    "not by uid %u which runs fedfuse",
			    path, (unsigned int)st.st_uid, (unsigned int)geteuid());
	perm = st.st_mode & 07777;
	if (perm & 077) {
		bool others = perm & 007;
		bool readable = others ? perm & 004 : perm & 040;

		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials file %s is %s by %s (mode %04o); chmod 600 it", path,
			    readable ? "readable" : "accessible", others ? "others" : "its group",
			    (unsigned int)perm);
	}
	if (!(perm & S_IRUSR))
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials file %s is not readable by its owner (mode %04o); "
			    "chmod 600 it",
			    path, (unsigned int)perm);
	return true;
}

/* credentials-dir=: a directory of the daemon's user that nobody else may write (it holds one
 * credentials file per user; the backend checks each file when it reads it). */
static bool check_credentials_dir(struct loader *ld, const struct scan_key *k, const char *path)
{
	struct stat st;

	if (path[0] != '/')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials-dir: '%s' is not an absolute path", path);
	if (stat(path, &st) < 0)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "credentials-dir %s: %s",
			    path, g_strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials-dir %s is not a directory", path);
	if (st.st_uid != geteuid())
		return fail(
			ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			"credentials-dir %s is owned by uid %u, not by uid %u which runs fedfuse",
			path, (unsigned int)st.st_uid, (unsigned int)geteuid());
	if (st.st_mode & 022)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "credentials-dir %s is writable by %s (mode %04o); chmod 700 it", path,
			    (st.st_mode & 002) ? "others" : "its group",
			    (unsigned int)(st.st_mode & 07777));
	return true;
}

/* user-credentials=: a path below each user's home directory (the backend opens it there, as
 * the user's own file): relative, and never up out of it. */
static bool check_user_credentials(struct loader *ld, const struct scan_key *k, const char *path)
{
	g_auto(GStrv) parts = g_strsplit(path, "/", -1);

	if (path[0] == '/' || path[0] == '~')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "user-credentials: '%s' is not a path relative to the user's home "
			    "directory (write it without '/' or '~' in front)",
			    path);
	for (char **p = parts; *p; p++)
		if (!**p || strcmp(*p, ".") == 0 || strcmp(*p, "..") == 0)
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "user-credentials: '%s' has an empty, '.' or '..' component",
				    path);
	return true;
}

/* krb5-ccache=: where each user's Kerberos ticket cache is, "/tmp/krb5cc_%U" style: a FILE
 * cache (the daemon reads it as the user's own file), an absolute path, with %U (uid) or %u
 * (user name) in it so that each user has their own, and no other % escape but %%. */
static bool check_krb5_ccache(struct loader *ld, const struct scan_key *k, const char *v)
{
	const char *path = g_str_has_prefix(v, "FILE:") ? v + 5 : v;
	bool per_user = false;

	if (path == v && strchr(v, ':') && v[0] != '/')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "krb5-ccache: '%s' is not a file cache (only FILE: caches can be read "
			    "for a user)",
			    v);
	if (path[0] != '/')
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "krb5-ccache: '%s' is not an absolute path", v);
	for (const char *p = strchr(path, '%'); p; p = strchr(p + 2, '%')) {
		if (p[1] == 'U' || p[1] == 'u')
			per_user = true;
		else if (p[1] != '%')
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "krb5-ccache: '%s' has '%%%c'; only %%U (uid), %%u (user "
				    "name) and %%%% may follow a '%%'",
				    v, p[1] ? p[1] : ' ');
	}
	if (!per_user)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			    "krb5-ccache: '%s' names one file for all users; put %%U (uid) or %%u "
			    "(user name) in it",
			    v);
	return true;
}

/* locations=: a GKeyFile list (';'-separated, "\;" for a ';' inside an entry, one trailing ';'
 * tolerated), each entry a location URI; white space around entries is ignored. */
static bool parse_locations(struct loader *ld, const struct scan_group *g, const struct scan_key *k,
			    GPtrArray *locs)
{
	char *raw = g_key_file_get_value(ld->kf, g->name, k->name, NULL);
	char *show = ff_shown(raw ? raw : "");
	gsize n = 0;
	char **list = NULL;
	char *msg = NULL;
	bool ok = false;

	if (raw && escapes_ok(raw, true))
		list = g_key_file_get_string_list(ld->kf, g->name, k->name, &n, NULL);
	if (!list) {
		fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
		     "locations: invalid escape sequence in '%s'", show);
		goto out_free;
	}
	if (n == 0) {
		fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "locations: no location given");
		goto out_free;
	}
	for (gsize i = 0; i < n; i++) {
		const char *uri = g_strstrip(list[i]);
		struct ff_location *loc;

		if (uri[0] == '\0') {
			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
			     "locations: empty entry in '%s'", show);
			goto out_free;
		}
		loc = g_new0(struct ff_location, 1);
		if (!ff_location_parse(uri, loc, &msg)) {
			g_free(loc);
			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "%s", msg);
			goto out_free;
		}
		loc->line = k->line;
		g_ptr_array_add(locs, loc);
		for (guint j = 0; j + 1 < locs->len; j++) {
			const struct ff_location *other = g_ptr_array_index(locs, j);

			if (strcmp(other->spec.uri, uri) == 0) {
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				     "location '%s' is listed twice in [%s]", uri, g->name);
				goto out_free;
			}
		}
	}
	ok = true;
out_free:
	g_free(msg);
	g_strfreev(list);
	g_free(show);
	g_free(raw);
	return ok;
}

static bool load_settings(struct loader *ld, const struct scan_group *g)
{
	struct ff_namespace *ns = ld->ns;

	for (guint i = 0; i < g->keys->len; i++) {
		const struct scan_key *k = &g_array_index(g->keys, struct scan_key, i);
		char *v = get_value(ld, g, k);
		bool ok;

		if (!v)
			return false;
		if (strcmp(k->name, "junction-cache-ttl") == 0)
			ok = parse_seconds(ld, k, v, true, &ns->junction_cache_ttl);
		else if (strcmp(k->name, "attr-timeout") == 0)
			ok = parse_seconds(ld, k, v, true, &ns->attr_timeout);
		else if (strcmp(k->name, "watch") == 0)
			ok = parse_bool(ld, k, v, &ns->watch);
		else if (strcmp(k->name, "nsdb-stale-grace") == 0)
			ok = parse_seconds(ld, k, v, true, &ns->nsdb_stale_grace);
		else if (strcmp(k->name, "write-behind") == 0)
			ok = parse_mib(ld, k, v, FF_WRITE_BEHIND_MAX, &ns->write_behind);
		else if (strcmp(k->name, "read-ahead") == 0)
			ok = parse_mib(ld, k, v, FF_READ_AHEAD_MAX, &ns->read_ahead);
		else
			ok = parse_seconds(ld, k, v, false, &ns->timeout);
		g_free(v);
		if (!ok)
			return false;
	}
	return true;
}

/* One referral key other than locations=, already known to be valid by name. */
static bool referral_key(struct loader *ld, const struct scan_key *k, const char *v,
			 struct ff_referral *r, struct spec_opts *o)
{
	const char *name = k->name;
	unsigned int id;

	if (strcmp(name, "read-only") == 0)
		return parse_bool(ld, k, v, &r->read_only);
	if (strcmp(name, "watch") == 0)
		return parse_bool(ld, k, v, &r->watch);
	if (strcmp(name, "timeout") == 0)
		return parse_seconds(ld, k, v, false, &r->timeout);
	if (strcmp(name, "attr-timeout") == 0)
		return parse_seconds(ld, k, v, true, &r->attr_timeout);
	if (strcmp(name, "write-behind") == 0)
		return parse_mib(ld, k, v, FF_WRITE_BEHIND_MAX, &r->write_behind);
	if (strcmp(name, "read-ahead") == 0)
		return parse_mib(ld, k, v, FF_READ_AHEAD_MAX, &r->read_ahead);
	if (strcmp(name, "file-mode") == 0)
		return parse_mode(ld, k, v, &o->file_mode);
	if (strcmp(name, "dir-mode") == 0)
		return parse_mode(ld, k, v, &o->dir_mode);
	if (strcmp(name, "credentials") == 0) {
		if (!check_credentials(ld, k, v))
			return false;
		r->credentials = g_strdup(v);
		return true;
	}
	if (strcmp(name, "identity") == 0) {
		if (strcmp(v, "per-user") != 0 && strcmp(v, "shared") != 0)
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "identity: '%s' is not 'shared' or 'per-user'", v);
		r->per_user = strcmp(v, "per-user") == 0;
		o->identity_given = true;
		return true;
	}
	if (strcmp(name, "sec") == 0) {
		if (strcmp(v, "krb5") != 0 && strcmp(v, "ntlmssp") != 0)
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "sec: '%s' is not 'ntlmssp' or 'krb5'", v);
		r->krb5 = strcmp(v, "krb5") == 0;
		return true;
	}
	if (strcmp(name, "krb5-ccache") == 0) {
		if (!check_krb5_ccache(ld, k, v))
			return false;
		r->krb5_ccache = g_strdup(g_str_has_prefix(v, "FILE:") ? v + 5 : v);
		return true;
	}
	if (strcmp(name, "credentials-dir") == 0) {
		if (!check_credentials_dir(ld, k, v))
			return false;
		r->credentials_dir = g_strdup(v);
		return true;
	}
	if (strcmp(name, "user-credentials") == 0) {
		if (!check_user_credentials(ld, k, v))
			return false;
		r->user_credentials = g_strdup(v);
		return true;
	}
	if (strcmp(name, "on-unreachable") == 0) {
		if (strcmp(v, "error") == 0)
			r->on_unreachable = FF_UNREACHABLE_ERROR;
		else if (strcmp(v, "skip") == 0)
			r->on_unreachable = FF_UNREACHABLE_SKIP;
		else
			return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line,
				    "on-unreachable: '%s' is not 'error' or 'skip'", v);
		return true;
	}
	if (strcmp(name, "uid") == 0) {
		if (!parse_owner(ld, k, v, false, &id))
			return false;
		o->uid_set = true;
		o->uid = id;
		return true;
	}
	/* gid, the last known key */
	if (!parse_owner(ld, k, v, true, &id))
		return false;
	o->gid_set = true;
	o->gid = id;
	return true;
}

/* Give each location of `r` the referral's options, then let its backend check it. */
static bool finish_locations(struct loader *ld, struct ff_referral *r, const struct spec_opts *o)
{
	for (guint i = 0; i < r->locations->len; i++) {
		struct ff_location *loc = g_ptr_array_index(r->locations, i);
		struct ff_location_spec *spec = &loc->spec;
		char *msg = NULL;
		int rc;

		spec->timeout = r->timeout;
		spec->read_only = r->read_only;
		spec->watch = r->watch;
		spec->credentials = r->credentials;
		spec->uid_set = o->uid_set;
		spec->uid = o->uid;
		spec->gid_set = o->gid_set;
		spec->gid = o->gid;
		spec->file_mode = o->file_mode;
		spec->dir_mode = o->dir_mode;
		spec->per_user = r->per_user;
		spec->credentials_dir = r->credentials_dir;
		spec->user_credentials = r->user_credentials;
		spec->krb5 = r->krb5;
		spec->krb5_ccache = r->krb5_ccache;
		spec->write_behind = r->write_behind;
		spec->read_ahead = r->read_ahead;
		if (!ld->check)
			continue;
		rc = ld->check(spec, ld->check_data, &msg);
		if (rc != 0) {
			if (msg)
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, loc->line, "%s", msg);
			else
				fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, loc->line,
				     "location '%s' refused by its backend: %s", spec->uri,
				     g_strerror(rc < 0 ? -rc : rc));
			g_free(msg);
			return false;
		}
		g_free(msg);
	}
	return true;
}

static void referral_free(gpointer p)
{
	struct ff_referral *r = p;

	g_free(r->path);
	g_free(r->credentials);
	g_free(r->credentials_dir);
	g_free(r->user_credentials);
	g_free(r->krb5_ccache);
	g_ptr_array_unref(r->locations);
	g_free(r);
}

static bool load_referral(struct loader *ld, const struct scan_group *g)
{
	struct ff_referral *r = g_new0(struct ff_referral, 1);
	struct spec_opts opts = { .file_mode = FF_DEFAULT_FILE_MODE,
				  .dir_mode = FF_DEFAULT_DIR_MODE };
	bool has_locations = false;

	r->path = g_strdup(g->name);
	r->line = g->line;
	r->locations = g_ptr_array_new_with_free_func(ff_location_free);
	r->timeout = ld->ns->timeout;
	r->attr_timeout = ld->ns->attr_timeout;
	r->watch = ld->ns->watch;
	r->write_behind = ld->ns->write_behind;
	r->read_ahead = ld->ns->read_ahead;
	r->on_unreachable = FF_UNREACHABLE_ERROR;
	g_ptr_array_add(ld->ns->referrals, r); /* the namespace frees it, also on error */

	for (guint i = 0; i < g->keys->len; i++) {
		const struct scan_key *k = &g_array_index(g->keys, struct scan_key, i);
		char *v;
		bool ok;

		if (strcmp(k->name, "locations") == 0) {
			if (!parse_locations(ld, g, k, r->locations))
				return false;
			has_locations = true;
			continue;
		}
		v = get_value(ld, g, k);
		if (!v)
			return false;
		ok = referral_key(ld, k, v, r, &opts);
		g_free(v);
		if (!ok)
			return false;
	}
	if (!has_locations)
		return fail(ld, G_KEY_FILE_ERROR_KEY_NOT_FOUND, g->line,
			    "missing 'locations' in [%s]", g->name);
	if (r->krb5_ccache && !r->krb5)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
			    "krb5-ccache in [%s] needs sec=krb5", g->name);
	if (r->krb5 && opts.identity_given && !r->per_user)
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
			    "sec=krb5 in [%s] acts as each user with their own tickets; it cannot "
			    "be identity=shared",
			    g->name);
	if (r->krb5 && (r->credentials || r->credentials_dir || r->user_credentials))
		return fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line,
			    "sec=krb5 in [%s] takes each user's Kerberos tickets; credentials, "
			    "credentials-dir and user-credentials do not go with it",
			    g->name);
	if (r->krb5)
		r->per_user = true;
	if (r->per_user && !r->krb5 && !r->credentials_dir && !r->user_credentials)
		return fail(ld, G_KEY_FILE_ERROR_KEY_NOT_FOUND, g->line,
			    "identity=per-user in [%s] needs credentials-dir or user-credentials",
			    g->name);
	if (r->per_user) {
		/* What the kernel caches it shows to every user alike: each lookup and stat goes
		 * to the server as its caller, who may see less than the last one. Nor is such a
		 * location watched (a watch would need an identity of its own). */
		r->attr_timeout = 0;
		r->watch = false;
	}
	return finish_locations(ld, r, &opts);
}

/* True when one of two absolute, normalised paths is the other or lies below it. */
static bool paths_overlap(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	const char *longer = la >= lb ? a : b;
	size_t n = MIN(la, lb);

	if (n == 1) /* "/" holds everything */
		return true;
	return strncmp(a, b, n) == 0 && (longer[n] == '\0' || longer[n] == '/');
}

/*
 * The daemon drops the change events its own operations cause, since the kernel saw those
 * through the mount. Two referrals whose directories overlap are two mounts of the same
 * objects: what is done through one would never reach the other's kernel caches. Such
 * locations are not watched (they keep their attr-timeout).
 */
static void unwatch_overlaps(struct ff_namespace *ns)
{
	struct file_loc {
		struct ff_location *loc;
		guint referral;
	};
	g_autoptr(GArray) locals = g_array_new(FALSE, FALSE, sizeof(struct file_loc));

	for (guint i = 0; i < ns->referrals->len; i++) {
		const struct ff_referral *r = ns->referrals->pdata[i];

		for (guint j = 0; j < r->locations->len; j++) {
			struct file_loc l = { r->locations->pdata[j], i };

			if (strcmp(l.loc->spec.scheme, "file") == 0)
				g_array_append_val(locals, l);
		}
	}
	/* replicas of one referral are never in use together: only other referrals count */
	for (guint i = 0; i < locals->len; i++) {
		struct file_loc *a = &g_array_index(locals, struct file_loc, i);

		for (guint j = i + 1; j < locals->len; j++) {
			struct file_loc *b = &g_array_index(locals, struct file_loc, j);

			if (a->referral != b->referral &&
			    paths_overlap(a->loc->spec.path, b->loc->spec.path))
				a->loc->spec.watch = b->loc->spec.watch = false;
		}
	}
}

/* An [nsdb HOST[:PORT]] group: how to reach that NSDB. */
static bool load_nsdb(struct loader *ld, const struct scan_group *g)
{
	char *msg = NULL;
	struct ff_nsdb_conf *conf = ff_nsdb_conf_new(g->name + strlen("nsdb "), g->line, &msg);

	if (!conf)
		goto out_fail;
	if (g_hash_table_contains(ld->ns->nsdbs, conf->name)) {
		const struct ff_nsdb_conf *first = g_hash_table_lookup(ld->ns->nsdbs, conf->name);

		msg = g_strdup_printf("NSDB %s is described twice (first at line %d)", conf->name,
				      first->line);
		ff_nsdb_conf_free(conf);
		goto out_fail;
	}
	g_hash_table_insert(ld->ns->nsdbs, conf->name, conf);
	for (guint i = 0; i < g->keys->len; i++) {
		const struct scan_key *k = &g_array_index(g->keys, struct scan_key, i);
		g_autofree char *v = get_value(ld, g, k);

		if (!v)
			return false;
		if (!ff_nsdb_conf_set(conf, k->name, v, &msg)) {
			fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, k->line, "[%s] %s", g->name, msg);
			g_free(msg);
			return false;
		}
	}
	return true;

out_fail:
	fail(ld, G_KEY_FILE_ERROR_INVALID_VALUE, g->line, "[%s]: %s", g->name, msg);
	g_free(msg);
	return false;
}

/* [namespace] first, wherever it is, since referrals inherit its timeouts. */
static bool load_values(struct loader *ld)
{
	for (guint i = 0; i < ld->groups->len; i++) {
		const struct scan_group *g = g_ptr_array_index(ld->groups, i);

		if (g->kind == GROUP_SETTINGS && !load_settings(ld, g))
			return false;
	}
	for (guint i = 0; i < ld->groups->len; i++) {
		const struct scan_group *g = g_ptr_array_index(ld->groups, i);

		if (g->kind == GROUP_REFERRAL && !load_referral(ld, g))
			return false;
		if (g->kind == GROUP_NSDB && !load_nsdb(ld, g))
			return false;
	}
	unwatch_overlaps(ld->ns);
	return true;
}

static struct ff_namespace *namespace_new(const char *file)
{
	struct ff_namespace *ns = g_new0(struct ff_namespace, 1);

	ns->refcount = 1;
	ns->file = g_strdup(file);
	ns->junction_cache_ttl = DEFAULT_JUNCTION_CACHE_TTL;
	ns->attr_timeout = DEFAULT_ATTR_TIMEOUT;
	ns->timeout = FF_DEFAULT_TIMEOUT;
	ns->watch = true;
	ns->write_behind = -1;
	ns->read_ahead = -1;
	ns->nsdb_stale_grace = FF_NSDB_STALE_GRACE;
	ns->nsdbs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, ff_nsdb_conf_free);
	ns->referrals = g_ptr_array_new_with_free_func(referral_free);
	ns->nodes = g_ptr_array_new_with_free_func(ff_ns_node_free);
	ns->root = ff_ns_node_add(ns, NULL, "");
	return ns;
}

/* Read the whole file, refusing more than NS_FILE_MAX bytes. */
static char *read_text(const char *file, size_t *len, GError **err)
{
	char *text = ff_read_file(file, NS_FILE_MAX, len);
	int e = errno;

	if (!text && e == EFBIG)
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s:0: larger than %d bytes",
			    file, NS_FILE_MAX);
	else if (!text)
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "%s:0: cannot read: %s",
			    file, g_strerror(e));
	return text;
}

struct ff_namespace *ff_namespace_load(const char *file, ff_location_check_fn check, void *data,
				       GError **err)
{
	struct loader ld = { .file = file, .check = check, .check_data = data, .err = err };
	struct ff_namespace *ns = NULL;
	size_t len;
	char *text;

	g_return_val_if_fail(file != NULL, NULL);
	text = read_text(file, &len, err);
	if (!text)
		return NULL;
	ld.groups = g_ptr_array_new_with_free_func(scan_group_free);
	if (!scan_text(&ld, text, len) || !check_names(&ld))
		goto out_free_groups;
	ld.kf = g_key_file_new();
	if (!load_key_file(&ld, text, len))
		goto out_free_kf;
	ld.ns = namespace_new(file);
	if (!load_values(&ld)) {
		ff_namespace_unref(ld.ns);
		goto out_free_kf;
	}
	ff_namespace_build_tree(ld.ns);
	ns = ld.ns;
out_free_kf:
	g_key_file_free(ld.kf);
out_free_groups:
	g_ptr_array_unref(ld.groups);
	g_free(text);
	return ns;
}
