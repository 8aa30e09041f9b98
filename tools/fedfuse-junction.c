/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fedfuse-junction.c - the junction admin tool (DESIGN §8): one interface that adds, lists,
 * shows, checks and removes junctions of all three formats (fedfuse xattr, FedFS as nfsref
 * writes it, Samba msdfs symlinks) with the daemon's own parsers, prints a mount's state, and
 * manages the fileset names of a FedFS NSDB (junction_nsdb.c).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>

#include "fedfuse/junction.h"
#include "fedfuse/location.h"
#include "fedfuse/plugins.h"
#include "tools/fedfuse-junction.h"
#include "fedfuse/readfile.h"

static const char usage_text[] =
	"Usage: fedfuse-junction COMMAND ARGS...\n"
	"\n"
	"  add PATH LOCATION... [--format fedfuse|fedfs|msdfs]\n"
	"                      make PATH a junction to the LOCATIONs (URIs), in order of\n"
	"                      preference; the default format is fedfuse\n"
	"  add --format fedfs-nsdb PATH NSDB[:PORT] FSN-UUID\n"
	"                      make PATH a FedFS NSDB junction (as nfsref -t nfs-fedfs):\n"
	"                      its location is fedfs://NSDB[:PORT]/FSN-UUID\n"
	"  list DIR            every junction below DIR, one per line: path, format, locations\n"
	"  show PATH           the junction PATH: format, locations, mode, ttl\n"
	"  check PATH [--timeout SECONDS]\n"
	"                      probe each location of PATH; exit status 0 only if all answer\n"
	"  remove PATH         make the junction PATH a plain empty directory again\n"
	"  status MOUNTPOINT   the state of a fedfuse mount (its .fedfuse control files)\n"
	"  nsdb [NSDB-OPTIONS] SUBCOMMAND ARGS...\n"
	"                      the fileset names (FSNs) and locations (FSLs) of a FedFS\n"
	"                      NSDB (RFC 7532), an LDAP directory:\n"
	"      create-fsn [FSN-UUID] [--ttl SECONDS]\n"
	"                      a new FSN (a random UUID unless given; TTL 300); prints it\n"
	"      add-fsl FSN-UUID URI [--fsl-uuid UUID] [--rank N] [--order N] [--going]\n"
	"                      a new FSL of the FSN (an nfs:// or smb:// URI); prints its UUID\n"
	"      update-fsl FSN-UUID FSL-UUID [--uri URI] [--rank N] [--order N]\n"
	"                 [--going|--not-going]\n"
	"      remove-fsl FSN-UUID FSL-UUID\n"
	"      delete-fsn FSN-UUID  the FSN with its FSLs\n"
	"      list [FSN-UUID...]   the FSNs (all without UUIDs) and their FSLs, one per line,\n"
	"                           tab-separated, the FSLs in the daemon's order\n"
	"    NSDB-OPTIONS:\n"
	"      --nsdb HOST[:PORT]   the NSDB (default $FEDFUSE_NSDB; port 389)\n"
	"      -D BINDDN            bind as BINDDN (writes need it; list is anonymous without)\n"
	"      -y PASSWORD-FILE     its password, in a file only its owner can access (chmod\n"
	"                           600); without -y it is asked for on the terminal\n"
	"      --security none|starttls|ldaps, --ca-file FILE\n"
	"                           as the namespace file's [nsdb] groups (default none)\n"
	"      --timeout SECONDS    for each exchange with the NSDB (default 10)\n"
	"\n"
	"fedfs junctions (trusted.* extended attributes) can only be made and seen by root.\n"
	"See fedfuse-junction(8).\n";

/* ---- output -------------------------------------------------------------------------------- */

void tool_complain(const char *fmt, ...)
{
	va_list ap;

	fputs("fedfuse-junction: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int tool_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("fedfuse-junction: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'fedfuse-junction --help'.\n", stderr);
	return EXIT_USAGE;
}

/* A path or value as it may be printed on one line: control characters and bytes that are not
 * UTF-8 become \xNN, so a name cannot break a line of `list` or move the terminal. */
char *tool_shown(const char *s)
{
	GString *out = g_string_new(NULL);
	const char *end = s + strlen(s);

	while (s < end) {
		gunichar c = g_utf8_get_char_validated(s, end - s);

		if (c == (gunichar)-1 || c == (gunichar)-2 || c < 0x20 || c == 0x7f) {
			g_string_append_printf(out, "\\x%02x", (unsigned int)(unsigned char)*s);
			s++;
			continue;
		}
		g_string_append_len(out, s, g_utf8_next_char(s) - s);
		s = g_utf8_next_char(s);
	}
	return g_string_free(out, FALSE);
}

/* A path from the command line without trailing '/' ("/" excepted): "link/" would name what a
 * symlink points to, and symlink() refuses it. */
char *tool_path_arg(const char *arg)
{
	char *path = g_strdup(arg);

	for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
		path[n - 1] = '\0';
	return path;
}

/* ---- reading junctions --------------------------------------------------------------------- */

void tool_found_clear(struct found *f)
{
	ff_junction_free(f->j);
	g_free(f->problem);
	memset(f, 0, sizeof(*f));
}

/* Extended attribute `name` of `path` (not followed if a symlink) into a new buffer of *len
 * bytes plus a NUL. Returns 0, -ENODATA when there is none (or xattrs are not supported), or
 * -errno. A value longer than FF_JUNCTION_VALUE_MAX is -E2BIG. */
int tool_read_xattr(const char *path, const char *name, char **out, size_t *len)
{
	char *buf = g_malloc(FF_JUNCTION_VALUE_MAX + 2);
	ssize_t n = lgetxattr(path, name, buf, FF_JUNCTION_VALUE_MAX + 1);
	int e = errno;

	if (n < 0 || n > FF_JUNCTION_VALUE_MAX) {
		g_free(buf);
		if (n > FF_JUNCTION_VALUE_MAX || e == ERANGE)
			return -E2BIG;
		return e == ENOTSUP ? -ENODATA : -e;
	}
	buf[n] = '\0';
	*out = buf;
	*len = (size_t)n;
	return 0;
}

static int parse_into(struct found *f, enum ff_junction_format format, const char *value,
		      size_t len, const char *mode, size_t mode_len)
{
	f->format = format;
	switch (format) {
	case FF_JUNCTION_FEDFUSE:
		f->j = ff_junction_parse_fedfuse(value, len, &f->problem);
		break;
	case FF_JUNCTION_FEDFS:
		f->j = ff_junction_parse_fedfs(value, len, mode, mode_len, &f->problem);
		break;
	case FF_JUNCTION_MSDFS:
		f->j = ff_junction_parse_msdfs(value, len, &f->problem);
		break;
	}
	if (f->j && !ff_plugin_check_junction(f->j, &f->problem)) /* as the daemon reads it */
		g_clear_pointer(&f->j, ff_junction_free);
	return 1;
}

/*
 * Whether `path` is a junction as the daemon sees one: a symlink to "msdfs:...", a directory
 * whose mode is FedFS's (sticky, no execute bit) carrying trusted.junction.nfs (seen by root
 * only), else a directory carrying user.fedfuse.locations. Returns 1 (f filled in, f->j NULL
 * when malformed), 0 when it is none, or -errno when `path` cannot be looked at.
 */
int tool_read_junction(const char *path, const struct stat *st, struct found *f)
{
	char *value = NULL, *mode = NULL;
	size_t len = 0, mode_len = 0;
	int rc;

	memset(f, 0, sizeof(*f));
	if (S_ISLNK(st->st_mode)) {
		char *buf = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
		ssize_t n = readlink(path, buf, FF_JUNCTION_VALUE_MAX + 1);

		rc = 0;
		if (n < 0)
			rc = -errno;
		else if (ff_junction_is_msdfs(buf, (size_t)n))
			rc = parse_into(f, FF_JUNCTION_MSDFS, buf, (size_t)n, NULL, 0);
		g_free(buf);
		return rc;
	}
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (ff_junction_is_fedfs_mode(st->st_mode)) {
		rc = tool_read_xattr(path, FF_JUNCTION_XATTR_FEDFS, &value, &len);
		if (rc == 0) {
			rc = tool_read_xattr(path, FF_JUNCTION_XATTR_FEDFS_MODE, &mode, &mode_len);
			if (rc == 0 || rc == -ENODATA)
				rc = parse_into(f, FF_JUNCTION_FEDFS, value, len, mode, mode_len);
			goto out_free;
		}
		if (rc == -E2BIG) {
			f->format = FF_JUNCTION_FEDFS;
			f->problem = g_strdup_printf("%s is larger than %d bytes",
						     FF_JUNCTION_XATTR_FEDFS,
						     FF_JUNCTION_VALUE_MAX);
			return 1;
		}
		if (rc != -ENODATA)
			return rc;
	}
	rc = tool_read_xattr(path, FF_JUNCTION_XATTR_FEDFUSE, &value, &len);
	if (rc == 0) {
		rc = parse_into(f, FF_JUNCTION_FEDFUSE, value, len, NULL, 0);
	} else if (rc == -E2BIG) {
		f->format = FF_JUNCTION_FEDFUSE;
		f->problem = g_strdup_printf("%s is larger than %d bytes",
					     FF_JUNCTION_XATTR_FEDFUSE, FF_JUNCTION_VALUE_MAX);
		rc = 1;
	} else if (rc == -ENODATA) {
		rc = 0;
	}
out_free:
	g_free(value);
	g_free(mode);
	return rc;
}

/* The locations of `j` on one line, separated by spaces (URIs hold none). */
char *tool_locations_line(const struct ff_junction *j)
{
	GString *out = g_string_new(NULL);

	for (guint i = 0; i < j->locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(j->locations, i);

		if (i > 0)
			g_string_append_c(out, ' ');
		g_string_append(out, loc->spec.uri);
	}
	return g_string_free(out, FALSE);
}

/* lstat() and tool_read_junction() of a path given on the command line, complaining on failure.
 * Returns 1 for a junction, 0 (complaint made) for anything else, -1 on error. */
int tool_junction_arg(const char *arg, struct stat *st, struct found *f)
{
	char *path = tool_path_arg(arg);
	char *p = tool_shown(path);
	int rc = -1;

	if (lstat(path, st) < 0) {
		tool_complain("%s: %s", p, g_strerror(errno));
		goto out_free;
	}
	rc = tool_read_junction(path, st, f);
	if (rc < 0)
		tool_complain("%s: %s", p, g_strerror(-rc));
	else if (rc == 0)
		tool_complain("%s is not a junction", p);
out_free:
	g_free(p);
	g_free(path);
	return rc;
}

/* Complain about a malformed junction. */
void tool_complain_bad(const char *path, const struct found *f)
{
	char *p = tool_shown(path);

	tool_complain("%s: invalid %s junction: %s", p, ff_junction_format_name(f->format),
		      f->problem);
	g_free(p);
}

/* ---- list, show ---------------------------------------------------------------------------- */

static void list_entry(const char *path, const struct found *f, int *problems)
{
	char *p = tool_shown(path);

	if (f->j) {
		char *line = tool_locations_line(f->j);

		printf("%s\t%s\t%s\n", p, ff_junction_format_name(f->format), line);
		g_free(line);
	} else {
		printf("%s\t%s\tinvalid: %s\n", p, ff_junction_format_name(f->format), f->problem);
		(*problems)++;
	}
	g_free(p);
}

static gint name_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every junction at or below `path`, in name order; symlinks are never followed. */
static void list_walk(const char *path, const struct stat *st, int *problems)
{
	GPtrArray *names;
	struct found f;
	struct dirent *d;
	DIR *dir;
	int rc;

	rc = tool_read_junction(path, st, &f);
	if (rc < 0) {
		char *p = tool_shown(path);

		tool_complain("%s: %s", p, g_strerror(-rc));
		g_free(p);
		(*problems)++;
		return;
	}
	if (rc == 1) {
		list_entry(path, &f, problems);
		tool_found_clear(&f);
	}
	if (!S_ISDIR(st->st_mode))
		return;
	dir = opendir(path);
	if (!dir) {
		char *p = tool_shown(path);

		tool_complain("cannot read directory %s: %s", p, g_strerror(errno));
		g_free(p);
		(*problems)++;
		return;
	}
	names = g_ptr_array_new_with_free_func(g_free);
	while ((d = readdir(dir)))
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			g_ptr_array_add(names, g_strdup(d->d_name));
	closedir(dir);
	g_ptr_array_sort(names, name_cmp);
	for (guint i = 0; i < names->len; i++) {
		char *child = strcmp(path, "/") == 0
				      ? g_strconcat("/", names->pdata[i], NULL)
				      : g_strconcat(path, "/", names->pdata[i], NULL);
		struct stat cst;

		if (lstat(child, &cst) < 0) {
			char *p = tool_shown(child);

			tool_complain("%s: %s", p, g_strerror(errno));
			g_free(p);
			(*problems)++;
		} else {
			list_walk(child, &cst, problems);
		}
		g_free(child);
	}
	g_ptr_array_unref(names);
}

static int cmd_list(int argc, char **argv)
{
	char *dir, *p;
	struct stat st;
	int problems = 0;

	if (argc != 2)
		return tool_usage_error("list needs exactly one DIR");
	dir = tool_path_arg(argv[1]);
	p = tool_shown(dir);
	if (lstat(dir, &st) < 0) {
		tool_complain("%s: %s", p, g_strerror(errno));
		problems++;
	} else if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
		tool_complain("%s is not a directory", p);
		problems++;
	} else {
		list_walk(dir, &st, &problems);
	}
	g_free(p);
	g_free(dir);
	return problems ? 1 : 0;
}

static int cmd_show(int argc, char **argv)
{
	struct found f;
	struct stat st;
	char *path, *p;
	int rc;

	if (argc != 2)
		return tool_usage_error("show needs exactly one PATH");
	rc = tool_junction_arg(argv[1], &st, &f);
	if (rc <= 0)
		return 1;
	if (!f.j) {
		tool_complain_bad(argv[1], &f);
		tool_found_clear(&f);
		return 1;
	}
	path = tool_path_arg(argv[1]);
	p = tool_shown(path);
	printf("path:     %s\n", p);
	printf("format:   %s\n", ff_junction_format_name(f.format));
	for (guint i = 0; i < f.j->locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(f.j->locations, i);

		printf("location: %s\n", loc->spec.uri);
	}
	printf("mode:     %04o\n", (unsigned int)f.j->mode);
	if (f.j->ttl > 0)
		printf("ttl:      %g s\n", f.j->ttl);
	else
		printf("ttl:      none (the namespace's junction-cache-ttl)\n");
	g_free(p);
	g_free(path);
	tool_found_clear(&f);
	return 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} commands[] = {
		{ "add", cmd_add },	{ "list", cmd_list },	  { "show", cmd_show },
		{ "check", cmd_check }, { "remove", cmd_remove }, { "status", cmd_status },
		{ "nsdb", cmd_nsdb },
	};

	if (argc < 2)
		return tool_usage_error("no command given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("fedfuse-junction %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		for (int k = 2; k < argc; k++) {
			if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
				fputs(usage_text, stdout);
				return 0;
			}
			if (strcmp(argv[k], "--") == 0)
				break;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	return tool_usage_error("unknown command '%s'", argv[1]);
}
