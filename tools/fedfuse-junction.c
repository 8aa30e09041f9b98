/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fedfuse-junction.c - the junction admin tool (DESIGN §8): one interface that adds, lists,
 * shows, checks and removes junctions of all three formats (fedfuse xattr, FedFS as nfsref
 * writes it, Samba msdfs symlinks) with the daemon's own parsers, and prints a mount's state.
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
#include "fedfuse/readfile.h"

#define EXIT_USAGE 2
#define DEFAULT_TIMEOUT 5.0 /* seconds a TCP probe of `check` may take */
#define SMB_PORT 445
#define CONTROL_FILE_MAX (16 << 20) /* bytes read from one control file */

static const char usage_text[] =
	"Usage: fedfuse-junction COMMAND ARGS...\n"
	"\n"
	"  add PATH LOCATION... [--format fedfuse|fedfs|msdfs]\n"
	"                      make PATH a junction to the LOCATIONs (URIs), in order of\n"
	"                      preference; the default format is fedfuse\n"
	"  list DIR            every junction below DIR, one per line: path, format, locations\n"
	"  show PATH           the junction PATH: format, locations, mode, ttl\n"
	"  check PATH [--timeout SECONDS]\n"
	"                      probe each location of PATH; exit status 0 only if all answer\n"
	"  remove PATH         make the junction PATH a plain empty directory again\n"
	"  status MOUNTPOINT   the state of a fedfuse mount (its .fedfuse control files)\n"
	"\n"
	"fedfs junctions (trusted.* extended attributes) can only be made and seen by root.\n"
	"See fedfuse-junction(8).\n";

/* ---- output -------------------------------------------------------------------------------- */

static void G_GNUC_PRINTF(1, 2) complain(const char *fmt, ...)
{
	va_list ap;

	fputs("fedfuse-junction: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static int usage_error(const char *fmt, ...)
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
static char *shown(const char *s)
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
static char *path_arg(const char *arg)
{
	char *path = g_strdup(arg);

	for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
		path[n - 1] = '\0';
	return path;
}

/* ---- reading junctions --------------------------------------------------------------------- */

/* What a path is, as a junction. */
struct found {
	enum ff_junction_format format;
	struct ff_junction *j; /* NULL when the junction is malformed or unsupported */
	char *problem;	       /* then why */
	bool unsupported;      /* a FedFS NSDB junction */
};

static void found_clear(struct found *f)
{
	ff_junction_free(f->j);
	g_free(f->problem);
	memset(f, 0, sizeof(*f));
}

/* Extended attribute `name` of `path` (not followed if a symlink) into a new buffer of *len
 * bytes plus a NUL. Returns 0, -ENODATA when there is none (or xattrs are not supported), or
 * -errno. A value longer than FF_JUNCTION_VALUE_MAX is -E2BIG. */
static int read_xattr(const char *path, const char *name, char **out, size_t *len)
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
		f->unsupported = !f->j && errno == ENOTSUP;
		break;
	case FF_JUNCTION_MSDFS:
		f->j = ff_junction_parse_msdfs(value, len, &f->problem);
		break;
	}
	return 1;
}

/*
 * Whether `path` is a junction as the daemon sees one: a symlink to "msdfs:...", a directory
 * whose mode is FedFS's (sticky, no execute bit) carrying trusted.junction.nfs (seen by root
 * only), else a directory carrying user.fedfuse.locations. Returns 1 (f filled in, f->j NULL
 * when malformed), 0 when it is none, or -errno when `path` cannot be looked at.
 */
static int read_junction(const char *path, const struct stat *st, struct found *f)
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
		rc = read_xattr(path, FF_JUNCTION_XATTR_FEDFS, &value, &len);
		if (rc == 0) {
			rc = read_xattr(path, FF_JUNCTION_XATTR_FEDFS_MODE, &mode, &mode_len);
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
	rc = read_xattr(path, FF_JUNCTION_XATTR_FEDFUSE, &value, &len);
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
static char *locations_line(const struct ff_junction *j)
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

/* lstat() and read_junction() of a path given on the command line, complaining on failure.
 * Returns 1 for a junction, 0 (complaint made) for anything else, -1 on error. */
static int junction_arg(const char *arg, struct stat *st, struct found *f)
{
	char *path = path_arg(arg);
	char *p = shown(path);
	int rc = -1;

	if (lstat(path, st) < 0) {
		complain("%s: %s", p, g_strerror(errno));
		goto out_free;
	}
	rc = read_junction(path, st, f);
	if (rc < 0)
		complain("%s: %s", p, g_strerror(-rc));
	else if (rc == 0)
		complain("%s is not a junction", p);
out_free:
	g_free(p);
	g_free(path);
	return rc;
}

/* Complain about a malformed or unsupported junction. */
static void complain_bad(const char *path, const struct found *f)
{
	char *p = shown(path);

	if (f->unsupported)
		complain("%s: %s", p, f->problem);
	else
		complain("%s: invalid %s junction: %s", p, ff_junction_format_name(f->format),
			 f->problem);
	g_free(p);
}

/* ---- add ----------------------------------------------------------------------------------- */

static bool format_from_name(const char *name, enum ff_junction_format *format)
{
	for (int f = FF_JUNCTION_FEDFUSE; f <= FF_JUNCTION_MSDFS; f++) {
		if (strcmp(name, ff_junction_format_name(f)) == 0) {
			*format = f;
			return true;
		}
	}
	return false;
}

static void location_free(gpointer p)
{
	ff_location_clear(p);
	g_free(p);
}

/* Whether the directory open at `fd` has no entry but "." and "..". 1, 0 or -errno. */
static int dir_is_empty(int fd)
{
	int dfd = dup(fd);
	struct dirent *d;
	DIR *dir;
	int rc = 1;

	if (dfd < 0)
		return -errno;
	dir = fdopendir(dfd);
	if (!dir) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	errno = 0;
	while ((d = readdir(dir))) {
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0) {
			rc = 0;
			break;
		}
	}
	if (rc == 1 && errno)
		rc = -errno;
	closedir(dir);
	return rc;
}

/* Whether the directory open at `fd` carries the extended attribute `name`. */
static bool fd_has_xattr(int fd, const char *name)
{
	return fgetxattr(fd, name, NULL, 0) >= 0;
}

/* What failing to write an xattr means, for a message. */
static const char *xattr_error(int e, const char *name)
{
	if (e == ENOTSUP && g_str_has_prefix(name, "user."))
		return "the file system does not support user.* extended attributes";
	if (e == ENOTSUP)
		return "the file system does not support trusted.* extended attributes";
	if (e == EPERM && g_str_has_prefix(name, "trusted."))
		return "writing trusted.* extended attributes needs CAP_SYS_ADMIN (run as root)";
	return g_strerror(e);
}

/* Open the directory a fedfuse or fedfs junction is made in: created when missing (its parent
 * must exist), else it must be an empty directory that is no junction yet. Returns an fd, or -1
 * after complaining. *created tells whether it was made here. */
static int open_junction_dir(const char *path, const char *p, bool *created)
{
	struct stat st;
	int fd, rc;

	*created = false;
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT) {
			complain("%s: %s", p, g_strerror(errno));
			return -1;
		}
		if (mkdir(path, 0777) < 0) {
			complain("cannot create directory %s: %s", p, g_strerror(errno));
			return -1;
		}
		*created = true;
	} else if (S_ISLNK(st.st_mode)) {
		complain("%s is a symbolic link, not a directory", p);
		return -1;
	} else if (!S_ISDIR(st.st_mode)) {
		complain("%s is not a directory", p);
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		complain("%s: %s", p, g_strerror(errno));
		goto out_rmdir;
	}
	if (fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS) ||
	    fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE)) {
		complain("%s is already a junction; remove it first", p);
		goto out_close;
	}
	rc = dir_is_empty(fd);
	if (rc < 0) {
		complain("%s: %s", p, g_strerror(-rc));
		goto out_close;
	}
	if (rc == 0) {
		complain("%s is not empty: a junction would hide what it holds", p);
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
out_rmdir:
	if (*created)
		rmdir(path);
	return -1;
}

static int add_fedfuse(const char *path, const char *p, GPtrArray *locs)
{
	char *value = ff_junction_format_fedfuse(locs);
	bool created;
	int fd, e;

	fd = open_junction_dir(path, p, &created);
	if (fd < 0)
		goto out_free;
	if (fsetxattr(fd, FF_JUNCTION_XATTR_FEDFUSE, value, strlen(value), XATTR_CREATE) < 0) {
		e = errno;
		complain("cannot write %s on %s: %s", FF_JUNCTION_XATTR_FEDFUSE, p,
			 xattr_error(e, FF_JUNCTION_XATTR_FEDFUSE));
		close(fd);
		if (created)
			rmdir(path);
		goto out_free;
	}
	close(fd);
	g_free(value);
	return 0;

out_free:
	g_free(value);
	return 1;
}

/* As nfsref add: the XML (with the mode the directory had), the saved mode, then mode 01000. */
static int add_fedfs(const char *path, const char *p, GPtrArray *locs)
{
	char *xml = NULL, *msg = NULL, mode_text[16];
	const char *failed_name = FF_JUNCTION_XATTR_FEDFS;
	struct stat st;
	bool created;
	int fd, e;

	fd = open_junction_dir(path, p, &created);
	if (fd < 0)
		return 1;
	if (fstat(fd, &st) < 0) {
		complain("%s: %s", p, g_strerror(errno));
		goto out_undo;
	}
	xml = ff_junction_format_fedfs(locs, st.st_mode & 07777, &msg);
	if (!xml) { /* checked before, but the writer has the last word */
		complain("%s", msg);
		goto out_undo;
	}
	g_snprintf(mode_text, sizeof(mode_text), "%o", (unsigned int)(st.st_mode & 07777));
	if (fsetxattr(fd, FF_JUNCTION_XATTR_FEDFS, xml, strlen(xml), XATTR_CREATE) < 0)
		goto out_xattr;
	failed_name = FF_JUNCTION_XATTR_FEDFS_MODE;
	if (fsetxattr(fd, FF_JUNCTION_XATTR_FEDFS_MODE, mode_text, strlen(mode_text), 0) < 0)
		goto out_xattr;
	if (fchmod(fd, S_ISVTX) < 0) {
		complain("cannot set mode 01000 on %s: %s", p, g_strerror(errno));
		goto out_undo;
	}
	close(fd);
	g_free(xml);
	return 0;

out_xattr:
	e = errno;
	complain("cannot write %s on %s: %s", failed_name, p, xattr_error(e, failed_name));
out_undo:
	fremovexattr(fd, FF_JUNCTION_XATTR_FEDFS_MODE);
	fremovexattr(fd, FF_JUNCTION_XATTR_FEDFS);
	close(fd);
	if (created)
		rmdir(path);
	g_free(xml);
	g_free(msg);
	return 1;
}

/* The symlink PATH -> "msdfs:...". PATH must not exist, or be an empty directory, which the link
 * replaces (remove makes an empty directory again). */
static int add_msdfs(const char *path, const char *p, const char *target)
{
	struct stat st;
	bool removed_dir = false;
	int fd, rc;

	if (lstat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			complain("%s exists and is not an empty directory", p);
			return 1;
		}
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			complain("%s: %s", p, g_strerror(errno));
			return 1;
		}
		rc = dir_is_empty(fd);
		if (rc == 1 && (fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS) ||
				fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE))) {
			complain("%s is already a junction; remove it first", p);
			close(fd);
			return 1;
		}
		close(fd);
		if (rc < 0) {
			complain("%s: %s", p, g_strerror(-rc));
			return 1;
		}
		if (rc == 0) {
			complain("%s is not empty: an msdfs junction replaces an empty directory "
				 "only",
				 p);
			return 1;
		}
		if (rmdir(path) < 0) {
			complain("cannot remove the empty directory %s: %s", p, g_strerror(errno));
			return 1;
		}
		removed_dir = true;
	} else if (errno != ENOENT) {
		complain("%s: %s", p, g_strerror(errno));
		return 1;
	}
	if (symlink(target, path) < 0) {
		complain("cannot create the symbolic link %s: %s", p, g_strerror(errno));
		if (removed_dir && mkdir(path, st.st_mode & 07777) == 0)
			chmod(path, st.st_mode & 07777);
		return 1;
	}
	return 0;
}

static int cmd_add(int argc, char **argv)
{
	enum ff_junction_format format = FF_JUNCTION_FEDFUSE;
	GPtrArray *args = g_ptr_array_new();
	GPtrArray *locs = g_ptr_array_new_with_free_func(location_free);
	char *path = NULL, *p = NULL, *msg = NULL, *value = NULL;
	bool options = true;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		const char *fmt = NULL;

		if (options && strcmp(argv[i], "--") == 0) {
			options = false;
		} else if (options &&
			   (strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0)) {
			if (i + 1 == argc) {
				rc = usage_error("%s needs a value: fedfuse, fedfs or msdfs",
						 argv[i]);
				goto out_free;
			}
			fmt = argv[++i];
		} else if (options && g_str_has_prefix(argv[i], "--format=")) {
			fmt = argv[i] + strlen("--format=");
		} else if (options && argv[i][0] == '-' && argv[i][1] != '\0') {
			rc = usage_error("add: unknown option '%s'", argv[i]);
			goto out_free;
		} else {
			g_ptr_array_add(args, argv[i]);
		}
		if (fmt && !format_from_name(fmt, &format)) {
			rc = usage_error("unknown format '%s' (fedfuse, fedfs or msdfs)", fmt);
			goto out_free;
		}
	}
	if (args->len < 2) {
		rc = usage_error("add needs a PATH and at least one LOCATION");
		goto out_free;
	}
	path = path_arg(g_ptr_array_index(args, 0));
	p = shown(path);
	if (path[0] == '\0') {
		rc = usage_error("empty PATH");
		goto out_free;
	}
	if (args->len - 1 > FF_JUNCTION_LOCATIONS_MAX) {
		complain("%u locations given; a junction holds at most %d", args->len - 1,
			 FF_JUNCTION_LOCATIONS_MAX);
		goto out_free;
	}
	for (guint i = 1; i < args->len; i++) {
		struct ff_location *loc = g_new0(struct ff_location, 1);

		if (!ff_location_parse(g_ptr_array_index(args, i), loc, &msg)) {
			complain("%s", msg);
			g_free(loc);
			goto out_free;
		}
		for (guint k = 0; k < locs->len; k++) {
			if (strcmp(((struct ff_location *)locs->pdata[k])->spec.uri,
				   loc->spec.uri) == 0) {
				char *u = shown(loc->spec.uri);

				complain("location '%s' is given twice", u);
				g_free(u);
				location_free(loc);
				goto out_free;
			}
		}
		g_ptr_array_add(locs, loc);
	}
	/* every location must fit the format before anything on disk changes */
	if (format == FF_JUNCTION_FEDFS)
		value = ff_junction_format_fedfs(locs, 0755, &msg);
	else if (format == FF_JUNCTION_MSDFS)
		value = ff_junction_format_msdfs(locs, &msg);
	else
		value = ff_junction_format_fedfuse(locs);
	if (!value) {
		complain("%s", msg);
		goto out_free;
	}
	switch (format) {
	case FF_JUNCTION_FEDFUSE:
		rc = add_fedfuse(path, p, locs);
		break;
	case FF_JUNCTION_FEDFS:
		rc = add_fedfs(path, p, locs);
		break;
	case FF_JUNCTION_MSDFS:
		rc = add_msdfs(path, p, value);
		break;
	}
	if (rc == 0)
		printf("created %s junction %s\n", ff_junction_format_name(format), p);
out_free:
	g_free(value);
	g_free(msg);
	g_free(p);
	g_free(path);
	g_ptr_array_unref(locs);
	g_ptr_array_unref(args);
	return rc;
}

/* ---- list, show ---------------------------------------------------------------------------- */

static void list_entry(const char *path, const struct found *f, int *problems)
{
	char *p = shown(path);

	if (f->j) {
		char *line = locations_line(f->j);

		printf("%s\t%s\t%s\n", p, ff_junction_format_name(f->format), line);
		g_free(line);
	} else {
		printf("%s\t%s\t%s: %s\n", p, ff_junction_format_name(f->format),
		       f->unsupported ? "unsupported" : "invalid", f->problem);
		if (!f->unsupported)
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

	rc = read_junction(path, st, &f);
	if (rc < 0) {
		char *p = shown(path);

		complain("%s: %s", p, g_strerror(-rc));
		g_free(p);
		(*problems)++;
		return;
	}
	if (rc == 1) {
		list_entry(path, &f, problems);
		found_clear(&f);
	}
	if (!S_ISDIR(st->st_mode))
		return;
	dir = opendir(path);
	if (!dir) {
		char *p = shown(path);

		complain("cannot read directory %s: %s", p, g_strerror(errno));
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
			char *p = shown(child);

			complain("%s: %s", p, g_strerror(errno));
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
		return usage_error("list needs exactly one DIR");
	dir = path_arg(argv[1]);
	p = shown(dir);
	if (lstat(dir, &st) < 0) {
		complain("%s: %s", p, g_strerror(errno));
		problems++;
	} else if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
		complain("%s is not a directory", p);
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
		return usage_error("show needs exactly one PATH");
	rc = junction_arg(argv[1], &st, &f);
	if (rc <= 0)
		return 1;
	if (!f.j) {
		complain_bad(argv[1], &f);
		found_clear(&f);
		return 1;
	}
	path = path_arg(argv[1]);
	p = shown(path);
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
	found_clear(&f);
	return 0;
}

/* ---- check --------------------------------------------------------------------------------- */

/* The TCP port a location's server answers on. */
static int location_port(const struct ff_location_spec *spec)
{
	if (spec->port)
		return spec->port;
	if (strcmp(spec->scheme, "nfs") == 0) {
		char **opts = g_strsplit(spec->query ? spec->query : "", "&", -1);
		int port = FF_JUNCTION_NFS_PORT;

		for (char **o = opts; *o; o++) {
			if (g_str_has_prefix(*o, "nfsport=")) {
				int n = atoi(*o + strlen("nfsport="));

				if (n > 0 && n < 65536)
					port = n;
			}
		}
		g_strfreev(opts);
		return port;
	}
	return SMB_PORT;
}

/* Connect to one address within `timeout_ms`. 0 or -errno. */
static int tcp_connect(const struct addrinfo *ai, int timeout_ms)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		close(fd);
		return 0;
	}
	if (errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do
		rc = poll(&pfd, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		rc = -ETIMEDOUT;
	else if (rc < 0)
		rc = -errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		rc = -errno;
	else
		rc = soerr ? -soerr : 0;
	close(fd);
	return rc;
}

/* Probe one location; print one line. Returns true when it answers. */
static bool probe(const struct ff_location_spec *spec, double timeout)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	gint64 start = g_get_monotonic_time();
	char port[16];
	int rc = -EHOSTUNREACH, gai;

	if (strcmp(spec->scheme, "file") == 0) {
		struct stat st;
		char *p = shown(spec->path);
		bool ok = false;

		if (stat(spec->path, &st) < 0)
			printf("FAIL  %s: %s: %s\n", spec->uri, p, g_strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			printf("FAIL  %s: %s is not a directory\n", spec->uri, p);
		else
			ok = true;
		if (ok)
			printf("ok    %s (directory %s)\n", spec->uri, p);
		g_free(p);
		return ok;
	}
	g_snprintf(port, sizeof(port), "%d", location_port(spec));
	gai = getaddrinfo(spec->host, port, &hints, &res);
	if (gai != 0) {
		printf("FAIL  %s: cannot resolve %s: %s\n", spec->uri, spec->host,
		       gai == EAI_SYSTEM ? g_strerror(errno) : gai_strerror(gai));
		return false;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		gint64 left_ms = (gint64)(timeout * 1000) - (g_get_monotonic_time() - start) / 1000;

		if (left_ms <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		rc = tcp_connect(ai, (int)left_ms);
		if (rc == 0)
			break;
	}
	freeaddrinfo(res);
	if (rc == 0)
		printf("ok    %s (TCP %s port %s answered in %.0f ms)\n", spec->uri, spec->host,
		       port, (g_get_monotonic_time() - start) / 1000.0);
	else if (rc == -ETIMEDOUT)
		printf("FAIL  %s: TCP %s port %s: no answer within %g s\n", spec->uri, spec->host,
		       port, timeout);
	else
		printf("FAIL  %s: TCP %s port %s: %s\n", spec->uri, spec->host, port,
		       g_strerror(-rc));
	return rc == 0;
}

static int cmd_check(int argc, char **argv)
{
	double timeout = DEFAULT_TIMEOUT;
	const char *path = NULL;
	struct found f;
	struct stat st;
	guint up = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *t = NULL;
		char *end = NULL;

		if (strcmp(argv[i], "--timeout") == 0 || strcmp(argv[i], "-t") == 0) {
			if (i + 1 == argc)
				return usage_error("%s needs a number of seconds", argv[i]);
			t = argv[++i];
		} else if (g_str_has_prefix(argv[i], "--timeout=")) {
			t = argv[i] + strlen("--timeout=");
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return usage_error("check: unknown option '%s'", argv[i]);
		} else if (path) {
			return usage_error("check takes one PATH");
		} else {
			path = argv[i];
		}
		if (t) {
			timeout = g_ascii_strtod(t, &end);
			if (!*t || *end || !(timeout > 0 && timeout <= 3600))
				return usage_error("--timeout: '%s' is not a number of seconds "
						   "(0 < s <= 3600)",
						   t);
		}
	}
	if (!path)
		return usage_error("check needs a PATH");
	rc = junction_arg(path, &st, &f);
	if (rc <= 0)
		return 1;
	if (!f.j) {
		complain_bad(path, &f);
		found_clear(&f);
		return 1;
	}
	for (guint i = 0; i < f.j->locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(f.j->locations, i);

		up += probe(&loc->spec, timeout);
	}
	rc = up == f.j->locations->len ? 0 : 1;
	if (rc)
		complain("%u of %u locations of %s did not answer", f.j->locations->len - up,
			 f.j->locations->len, path);
	found_clear(&f);
	return rc;
}

/* ---- remove -------------------------------------------------------------------------------- */

/* trusted.junction.mode (or <savedmode>) as nfsref restores it; 0755 when there is none. */
static mode_t saved_mode(int fd)
{
	char buf[64], *end;
	ssize_t n = fgetxattr(fd, FF_JUNCTION_XATTR_FEDFS_MODE, buf, sizeof(buf) - 1);
	unsigned long m;

	if (n > 0) {
		buf[n] = '\0';
		g_strstrip(buf);
		m = strtoul(buf, &end, 8);
		if (buf[0] && !*end && m <= 07777)
			return (mode_t)m;
	}
	/* the XML's <savedmode>, when the rest of it is well formed */
	{
		char *xml = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
		struct ff_junction *j = NULL;

		n = fgetxattr(fd, FF_JUNCTION_XATTR_FEDFS, xml, FF_JUNCTION_VALUE_MAX);
		if (n > 0)
			j = ff_junction_parse_fedfs(xml, (size_t)n, NULL, 0, NULL);
		m = j ? j->mode : FF_JUNCTION_DEFAULT_MODE;
		ff_junction_free(j);
		g_free(xml);
	}
	return (mode_t)m;
}

static int remove_dir_junction(const char *path, const char *p)
{
	/* trusted.junction.type: written by old fedfs-utils */
	static const char *const fedfs_names[] = { FF_JUNCTION_XATTR_FEDFS,
						   FF_JUNCTION_XATTR_FEDFS_MODE,
						   "trusted.junction.type" };
	bool fedfs, fedfuse;
	int fd, rc = 1;
	mode_t mode;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		complain("%s: %s", p, g_strerror(errno));
		return 1;
	}
	/* present is enough: a malformed junction must be removable too */
	fedfs = fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS);
	fedfuse = fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE);
	if (!fedfs && !fedfuse) {
		complain("%s is not a junction", p);
		goto out_close;
	}
	if (fedfs) {
		mode = saved_mode(fd);
		if (fchmod(fd, mode) < 0) {
			complain("cannot restore mode %04o of %s: %s", (unsigned int)mode, p,
				 g_strerror(errno));
			goto out_close;
		}
		for (guint i = 0; i < G_N_ELEMENTS(fedfs_names); i++) {
			if (fremovexattr(fd, fedfs_names[i]) < 0 && errno != ENODATA) {
				complain("cannot remove %s from %s: %s", fedfs_names[i], p,
					 xattr_error(errno, fedfs_names[i]));
				goto out_close;
			}
		}
		printf("removed fedfs junction %s (mode %04o restored)\n", p, (unsigned int)mode);
	}
	if (fedfuse) {
		if (fremovexattr(fd, FF_JUNCTION_XATTR_FEDFUSE) < 0) {
			complain("cannot remove %s from %s: %s", FF_JUNCTION_XATTR_FEDFUSE, p,
				 xattr_error(errno, FF_JUNCTION_XATTR_FEDFUSE));
			goto out_close;
		}
		printf("removed fedfuse junction %s\n", p);
	}
	rc = 0;
out_close:
	close(fd);
	return rc;
}

static int cmd_remove(int argc, char **argv)
{
	char *path, *p, *target;
	struct stat st;
	ssize_t n;
	int rc = 1;

	if (argc != 2)
		return usage_error("remove needs exactly one PATH");
	path = path_arg(argv[1]);
	p = shown(path);
	if (lstat(path, &st) < 0) {
		complain("%s: %s", p, g_strerror(errno));
		goto out_free;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = remove_dir_junction(path, p);
		goto out_free;
	}
	if (!S_ISLNK(st.st_mode)) {
		complain("%s is not a junction", p);
		goto out_free;
	}
	target = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
	n = readlink(path, target, FF_JUNCTION_VALUE_MAX + 1);
	if (n < 0 || !ff_junction_is_msdfs(target, (size_t)n)) {
		if (n < 0)
			complain("%s: %s", p, g_strerror(errno));
		else
			complain("%s is a symbolic link, not an msdfs junction", p);
		g_free(target);
		goto out_free;
	}
	g_free(target);
	if (unlink(path) < 0) {
		complain("cannot remove %s: %s", p, g_strerror(errno));
		goto out_free;
	}
	if (mkdir(path, 0777) < 0) {
		complain("removed the msdfs link %s but cannot create the directory: %s", p,
			 g_strerror(errno));
		goto out_free;
	}
	printf("removed msdfs junction %s (now an empty directory)\n", p);
	rc = 0;
out_free:
	g_free(p);
	g_free(path);
	return rc;
}

/* ---- status -------------------------------------------------------------------------------- */

/* A control file, read to its end (they report st_size 0). NULL with errno set on failure. */
static char *read_control(const char *dir, const char *name)
{
	char *path = g_build_filename(dir, name, NULL);
	char *text = ff_read_file(path, CONTROL_FILE_MAX, NULL);
	int e = errno;

	g_free(path);
	errno = e;
	return text;
}

/* One row of a table: cells padded to `width`, "-" for a missing one. */
static void print_row(char **cells, guint n, GArray *width)
{
	for (guint k = 0; k < n; k++) {
		const char *cell = cells[k] ? cells[k] : "-";
		int pad = g_array_index(width, int, k) - (int)g_utf8_strlen(cell, -1);

		printf("  %s%*s", cell, k + 1 < n ? pad : 0, "");
	}
	fputs("\n", stdout);
}

#define ROW_MAX 64 /* columns of the locations table */

static void row_free(gpointer p)
{
	char **row = p;

	for (int k = 0; k < ROW_MAX; k++)
		g_free(row[k]);
	g_free(row);
}

/* /.fedfuse/locations: "REFERRAL\tURI\tkey=value..." per line, as a table whose columns are the
 * keys in the order first met (so new keys the daemon adds show up by themselves). */
static void print_locations(const char *text)
{
	char **lines = g_strsplit(text, "\n", -1);
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
	GArray *width = g_array_new(FALSE, TRUE, sizeof(int));

	g_ptr_array_add(keys, g_strdup("REFERRAL"));
	g_ptr_array_add(keys, g_strdup("LOCATION"));
	for (char **l = lines; *l; l++) {
		char **fields;
		char **row;

		if (!**l)
			continue;
		fields = g_strsplit(*l, "\t", -1);
		if (g_strv_length(fields) < 2) {
			g_strfreev(fields);
			continue;
		}
		row = g_new0(char *, ROW_MAX);
		row[0] = g_strdup(fields[0]);
		row[1] = g_strdup(fields[1]);
		for (char **f = fields + 2; *f; f++) {
			char *eq = strchr(*f, '=');
			char *key = eq ? g_ascii_strup(*f, eq - *f) : g_strdup("");
			guint k;

			for (k = 0; k < keys->len; k++)
				if (strcmp(keys->pdata[k], key) == 0)
					break;
			if (k == keys->len && k < ROW_MAX)
				g_ptr_array_add(keys, g_strdup(key));
			if (k < ROW_MAX && !row[k])
				row[k] = g_strdup(eq ? eq + 1 : *f);
			g_free(key);
		}
		g_ptr_array_add(rows, row);
		g_strfreev(fields);
	}
	g_array_set_size(width, keys->len);
	for (guint k = 0; k < keys->len; k++)
		g_array_index(width, int, k) = (int)g_utf8_strlen(keys->pdata[k], -1);
	for (guint r = 0; r < rows->len; r++) {
		char **row = rows->pdata[r];

		for (guint k = 0; k < keys->len; k++) {
			int w = row[k] ? (int)g_utf8_strlen(row[k], -1) : 1;

			if (w > g_array_index(width, int, k))
				g_array_index(width, int, k) = w;
		}
	}
	printf("Locations\n");
	if (rows->len == 0)
		printf("  (none)\n");
	else
		print_row((char **)keys->pdata, keys->len, width);
	for (guint r = 0; r < rows->len; r++)
		print_row(rows->pdata[r], keys->len, width);
	g_array_unref(width);
	g_ptr_array_unref(rows);
	g_ptr_array_unref(keys);
	g_strfreev(lines);
}

static void print_indented(const char *title, const char *text)
{
	char **lines = g_strsplit(text, "\n", -1);

	printf("\n%s\n", title);
	for (char **l = lines; *l; l++)
		if (**l)
			printf("  %s\n", *l);
	g_strfreev(lines);
}

static int cmd_status(int argc, char **argv)
{
	static const char *const names[] = { "locations", "stats", "namespace" };
	char *text[3] = { NULL, NULL, NULL };
	char *control, *p;
	struct stat st;
	int rc = 1;

	if (argc != 2)
		return usage_error("status needs exactly one MOUNTPOINT");
	control = g_build_filename(argv[1], ".fedfuse", NULL);
	p = shown(argv[1]);
	if (stat(control, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (stat(argv[1], &st) < 0)
			complain("%s: %s", p, g_strerror(errno));
		else
			complain("%s is not a fedfuse mount (it has no .fedfuse directory)", p);
		goto out_free;
	}
	for (int i = 0; i < 3; i++) {
		text[i] = read_control(control, names[i]);
		if (!text[i]) {
			complain("cannot read %s/.fedfuse/%s: %s", p, names[i], g_strerror(errno));
			goto out_free;
		}
	}
	printf("fedfuse mount %s\n\n", p);
	print_locations(text[0]);
	print_indented("Statistics", text[1]);
	print_indented("Namespace", text[2]);
	rc = 0;
out_free:
	for (int i = 0; i < 3; i++)
		g_free(text[i]);
	g_free(p);
	g_free(control);
	return rc;
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
	};

	if (argc < 2)
		return usage_error("no command given");
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
	return usage_error("unknown command '%s'", argv[1]);
}
