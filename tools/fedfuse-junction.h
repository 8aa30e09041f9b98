/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fedfuse-junction.h - what the admin tool's commands share: messages, reading a path as a
 * junction, and the commands kept in files of their own.
 */
#ifndef TOOLS_FEDFUSE_JUNCTION_H
#define TOOLS_FEDFUSE_JUNCTION_H

#include <stdbool.h>
#include <sys/stat.h>

#include <glib.h>

#include "fedfuse/junction.h"

#define EXIT_USAGE 2
#define DEFAULT_TIMEOUT 5.0	    /* seconds a TCP probe of `check` may take */
#define CONTROL_FILE_MAX (16 << 20) /* bytes read from one control file */

/* What a path is, as a junction. */
struct found {
	enum ff_junction_format format;
	struct ff_junction *j; /* NULL when the junction is malformed */
	char *problem;	       /* then why */
};

/* "fedfuse-junction: MESSAGE" on stderr. */
void tool_complain(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* The same, with a hint at --help; returns EXIT_USAGE. */
int tool_usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* A path or value as it may be printed on one line (g_malloc'd). */
char *tool_shown(const char *s);
/* A path from the command line without trailing '/' ("/" excepted). */
char *tool_path_arg(const char *arg);
void tool_found_clear(struct found *f);
/* The value of xattr `name` of `path` (not following a symlink): 0, -ENODATA, -E2BIG or
 * -errno. */
int tool_read_xattr(const char *path, const char *name, char **out, size_t *len);
/* What `path` (of attributes `st`) is as a junction, into `f`: 1 for a junction, 0 for
 * anything else, or -errno. */
int tool_read_junction(const char *path, const struct stat *st, struct found *f);
/* The locations of `j` as one line. */
char *tool_locations_line(const struct ff_junction *j);
/* tool_read_junction() of a command-line path, complaining unless it is a junction: 1 for a
 * junction, 0 (complaint made) for anything else, -1 on error. */
int tool_junction_arg(const char *arg, struct stat *st, struct found *f);
void tool_complain_bad(const char *path, const struct found *f);

int cmd_add(int argc, char **argv);    /* junction_edit.c */
int cmd_remove(int argc, char **argv); /* junction_edit.c */
int cmd_check(int argc, char **argv);  /* junction_probe.c */
int cmd_status(int argc, char **argv); /* junction_status.c */
int cmd_nsdb(int argc, char **argv);   /* junction_nsdb.c */

#endif /* TOOLS_FEDFUSE_JUNCTION_H */
