/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_edit.c - `fedfuse-junction add` and `remove`: making a directory (or a symlink) a
 * junction of any format, and making it plain again, without following a symlink on the way.
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
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"
#include "tools/fedfuse-junction.h"
#include "fedfuse/readfile.h"

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
			tool_complain("%s: %s", p, g_strerror(errno));
			return -1;
		}
		if (mkdir(path, 0777) < 0) {
			tool_complain("cannot create directory %s: %s", p, g_strerror(errno));
			return -1;
		}
		*created = true;
	} else if (S_ISLNK(st.st_mode)) {
		tool_complain("%s is a symbolic link, not a directory", p);
		return -1;
	} else if (!S_ISDIR(st.st_mode)) {
		tool_complain("%s is not a directory", p);
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		tool_complain("%s: %s", p, g_strerror(errno));
		goto out_rmdir;
	}
	if (fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS) ||
	    fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE)) {
		tool_complain("%s is already a junction; remove it first", p);
		goto out_close;
	}
	rc = dir_is_empty(fd);
	if (rc < 0) {
		tool_complain("%s: %s", p, g_strerror(-rc));
		goto out_close;
	}
	if (rc == 0) {
		tool_complain("%s is not empty: a junction would hide what it holds", p);
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
		tool_complain("cannot write %s on %s: %s", FF_JUNCTION_XATTR_FEDFUSE, p,
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

/* What a fedfs junction holds: `locs` (nfs:// locations), or the FSN `fsn_uuid` on the NSDB
 * `nsdb_host`:`nsdb_port` (--format fedfs-nsdb). */
struct fedfs_content {
	GPtrArray *locs;
	char *nsdb_host;
	int nsdb_port;
	const char *fsn_uuid;
};

static char *fedfs_xml(const struct fedfs_content *c, mode_t saved_mode, char **msg)
{
	if (c->fsn_uuid)
		return ff_junction_format_fedfs_nsdb(c->nsdb_host, c->nsdb_port, c->fsn_uuid,
						     saved_mode, msg);
	return ff_junction_format_fedfs(c->locs, saved_mode, ff_plugin_server_port, NULL, msg);
}

/* As nfsref add: the XML (with the mode the directory had), the saved mode, then mode 01000. */
static int add_fedfs(const char *path, const char *p, const struct fedfs_content *c)
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
		tool_complain("%s: %s", p, g_strerror(errno));
		goto out_undo;
	}
	xml = fedfs_xml(c, st.st_mode & 07777, &msg);
	if (!xml) { /* checked before, but the writer has the last word */
		tool_complain("%s", msg);
		goto out_undo;
	}
	g_snprintf(mode_text, sizeof(mode_text), "%o", (unsigned int)(st.st_mode & 07777));
	if (fsetxattr(fd, FF_JUNCTION_XATTR_FEDFS, xml, strlen(xml), XATTR_CREATE) < 0)
		goto out_xattr;
	failed_name = FF_JUNCTION_XATTR_FEDFS_MODE;
	if (fsetxattr(fd, FF_JUNCTION_XATTR_FEDFS_MODE, mode_text, strlen(mode_text), 0) < 0)
		goto out_xattr;
	if (fchmod(fd, S_ISVTX) < 0) {
		tool_complain("cannot set mode 01000 on %s: %s", p, g_strerror(errno));
		goto out_undo;
	}
	close(fd);
	g_free(xml);
	return 0;

out_xattr:
	e = errno;
	tool_complain("cannot write %s on %s: %s", failed_name, p, xattr_error(e, failed_name));
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
			tool_complain("%s exists and is not an empty directory", p);
			return 1;
		}
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			tool_complain("%s: %s", p, g_strerror(errno));
			return 1;
		}
		rc = dir_is_empty(fd);
		if (rc == 1 && (fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS) ||
				fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE))) {
			tool_complain("%s is already a junction; remove it first", p);
			close(fd);
			return 1;
		}
		close(fd);
		if (rc < 0) {
			tool_complain("%s: %s", p, g_strerror(-rc));
			return 1;
		}
		if (rc == 0) {
			tool_complain(
				"%s is not empty: an msdfs junction replaces an empty directory "
				"only",
				p);
			return 1;
		}
		if (rmdir(path) < 0) {
			tool_complain("cannot remove the empty directory %s: %s", p,
				      g_strerror(errno));
			return 1;
		}
		removed_dir = true;
	} else if (errno != ENOENT) {
		tool_complain("%s: %s", p, g_strerror(errno));
		return 1;
	}
	if (symlink(target, path) < 0) {
		tool_complain("cannot create the symbolic link %s: %s", p, g_strerror(errno));
		if (removed_dir && mkdir(path, st.st_mode & 07777) == 0)
			chmod(path, st.st_mode & 07777);
		return 1;
	}
	return 0;
}

/* The NSDB "host:port" of `arg` (as ff_nsdb_server_name() reads it) into c->nsdb_host (without
 * brackets) and c->nsdb_port. */
static bool nsdb_arg(const char *arg, struct fedfs_content *c, char **msg)
{
	char *name = ff_nsdb_server_name(arg, msg), *colon;

	if (!name)
		return false;
	colon = strrchr(name, ':');
	*colon = '\0';
	c->nsdb_port = atoi(colon + 1);
	if (name[0] == '[')
		c->nsdb_host = g_strndup(name + 1, strlen(name) - 2);
	else
		c->nsdb_host = g_strdup(name);
	g_free(name);
	return true;
}

/* The LOCATIONs (args after the PATH) parsed and checked by their backends into `locs`, or
 * false after complaining. */
static bool locations_of_args(GPtrArray *args, GPtrArray *locs)
{
	char *msg = NULL;

	if (args->len - 1 > FF_JUNCTION_LOCATIONS_MAX) {
		tool_complain("%u locations given; a junction holds at most %d", args->len - 1,
			      FF_JUNCTION_LOCATIONS_MAX);
		return false;
	}
	for (guint i = 1; i < args->len; i++) {
		struct ff_location *loc = g_new0(struct ff_location, 1);

		if (!ff_location_parse(g_ptr_array_index(args, i), loc, &msg) ||
		    ff_plugin_check_location(&loc->spec, NULL, &msg) < 0) {
			tool_complain("%s", msg);
			g_free(msg);
			ff_location_free(loc);
			return false;
		}
		for (guint k = 0; k < locs->len; k++) {
			if (strcmp(((struct ff_location *)locs->pdata[k])->spec.uri,
				   loc->spec.uri) == 0) {
				char *u = tool_shown(loc->spec.uri);

				tool_complain("location '%s' is given twice", u);
				g_free(u);
				ff_location_free(loc);
				return false;
			}
		}
		g_ptr_array_add(locs, loc);
	}
	return true;
}

int cmd_add(int argc, char **argv)
{
	enum ff_junction_format format = FF_JUNCTION_FEDFUSE;
	GPtrArray *args = g_ptr_array_new();
	GPtrArray *locs = g_ptr_array_new_with_free_func(ff_location_free);
	char *path = NULL, *p = NULL, *msg = NULL, *value = NULL;
	struct fedfs_content fedfs = { .locs = locs };
	bool options = true, nsdb = false;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		const char *fmt = NULL;

		if (options && strcmp(argv[i], "--") == 0) {
			options = false;
		} else if (options &&
			   (strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0)) {
			if (i + 1 == argc) {
				rc = tool_usage_error(
					"%s needs a value: fedfuse, fedfs, fedfs-nsdb or msdfs",
					argv[i]);
				goto out_free;
			}
			fmt = argv[++i];
		} else if (options && g_str_has_prefix(argv[i], "--format=")) {
			fmt = argv[i] + strlen("--format=");
		} else if (options && argv[i][0] == '-' && argv[i][1] != '\0') {
			rc = tool_usage_error("add: unknown option '%s'", argv[i]);
			goto out_free;
		} else {
			g_ptr_array_add(args, argv[i]);
		}
		if (fmt && strcmp(fmt, "fedfs-nsdb") == 0) {
			format = FF_JUNCTION_FEDFS;
			nsdb = true;
		} else if (fmt && format_from_name(fmt, &format)) {
			nsdb = false;
		} else if (fmt) {
			rc = tool_usage_error("unknown format '%s' (fedfuse, fedfs, fedfs-nsdb or "
					      "msdfs)",
					      fmt);
			goto out_free;
		}
	}
	if (nsdb && args->len != 3) {
		rc = tool_usage_error("add --format fedfs-nsdb needs a PATH, an NSDB and an "
				      "FSN-UUID");
		goto out_free;
	}
	if (args->len < 2) {
		rc = tool_usage_error("add needs a PATH and at least one LOCATION");
		goto out_free;
	}
	path = tool_path_arg(g_ptr_array_index(args, 0));
	p = tool_shown(path);
	if (path[0] == '\0') {
		rc = tool_usage_error("empty PATH");
		goto out_free;
	}
	if (nsdb) {
		fedfs.fsn_uuid = g_ptr_array_index(args, 2);
		if (!nsdb_arg(g_ptr_array_index(args, 1), &fedfs, &msg))
			goto out_complain;
	} else if (!locations_of_args(args, locs)) {
		goto out_free;
	}
	/* every location must fit the format before anything on disk changes */
	if (format == FF_JUNCTION_FEDFS)
		value = fedfs_xml(&fedfs, 0755, &msg);
	else if (format == FF_JUNCTION_MSDFS)
		value = ff_junction_format_msdfs(locs, &msg);
	else
		value = ff_junction_format_fedfuse(locs);
	if (!value)
		goto out_complain;
	switch (format) {
	case FF_JUNCTION_FEDFUSE:
		rc = add_fedfuse(path, p, locs);
		break;
	case FF_JUNCTION_FEDFS:
		rc = add_fedfs(path, p, &fedfs);
		break;
	case FF_JUNCTION_MSDFS:
		rc = add_msdfs(path, p, value);
		break;
	}
	if (rc == 0)
		printf("created %s junction %s\n", ff_junction_format_name(format), p);
	goto out_free;

out_complain:
	tool_complain("%s", msg);
out_free:
	g_free(fedfs.nsdb_host);
	g_free(value);
	g_free(msg);
	g_free(p);
	g_free(path);
	g_ptr_array_unref(locs);
	g_ptr_array_unref(args);
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
		tool_complain("%s: %s", p, g_strerror(errno));
		return 1;
	}
	/* present is enough: a malformed junction must be removable too */
	fedfs = fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFS);
	fedfuse = fd_has_xattr(fd, FF_JUNCTION_XATTR_FEDFUSE);
	if (!fedfs && !fedfuse) {
		tool_complain("%s is not a junction", p);
		goto out_close;
	}
	if (fedfs) {
		mode = saved_mode(fd);
		if (fchmod(fd, mode) < 0) {
			tool_complain("cannot restore mode %04o of %s: %s", (unsigned int)mode, p,
				      g_strerror(errno));
			goto out_close;
		}
		for (guint i = 0; i < G_N_ELEMENTS(fedfs_names); i++) {
			if (fremovexattr(fd, fedfs_names[i]) < 0 && errno != ENODATA) {
				tool_complain("cannot remove %s from %s: %s", fedfs_names[i], p,
					      xattr_error(errno, fedfs_names[i]));
				goto out_close;
			}
		}
		printf("removed fedfs junction %s (mode %04o restored)\n", p, (unsigned int)mode);
	}
	if (fedfuse) {
		if (fremovexattr(fd, FF_JUNCTION_XATTR_FEDFUSE) < 0) {
			tool_complain("cannot remove %s from %s: %s", FF_JUNCTION_XATTR_FEDFUSE, p,
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

int cmd_remove(int argc, char **argv)
{
	char *path, *p, *target;
	struct stat st;
	ssize_t n;
	int rc = 1;

	if (argc != 2)
		return tool_usage_error("remove needs exactly one PATH");
	path = tool_path_arg(argv[1]);
	p = tool_shown(path);
	if (lstat(path, &st) < 0) {
		tool_complain("%s: %s", p, g_strerror(errno));
		goto out_free;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = remove_dir_junction(path, p);
		goto out_free;
	}
	if (!S_ISLNK(st.st_mode)) {
		tool_complain("%s is not a junction", p);
		goto out_free;
	}
	target = g_malloc(FF_JUNCTION_VALUE_MAX + 1);
	n = readlink(path, target, FF_JUNCTION_VALUE_MAX + 1);
	if (n < 0 || !ff_junction_is_msdfs(target, (size_t)n)) {
		if (n < 0)
			tool_complain("%s: %s", p, g_strerror(errno));
		else
			tool_complain("%s is a symbolic link, not an msdfs junction", p);
		g_free(target);
		goto out_free;
	}
	g_free(target);
	if (unlink(path) < 0) {
		tool_complain("cannot remove %s: %s", p, g_strerror(errno));
		goto out_free;
	}
	if (mkdir(path, 0777) < 0) {
		tool_complain("removed the msdfs link %s but cannot create the directory: %s", p,
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
