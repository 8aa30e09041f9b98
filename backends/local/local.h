/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local.h - what the files of the file:// backend share: a location, open files and
 * directories, and the rules for reaching a node (pin its descriptor, then act as the caller).
 * local.c has the locations, nodes, names and files; local_dir.c the directories; local_xattr.c
 * the extended attributes.
 */
#ifndef FEDFUSE_LOCAL_H
#define FEDFUSE_LOCAL_H

#include <dirent.h>
#include <glib.h>
#include <stdbool.h>

#include "backends/backend.h"
#include "backends/local/local_cred.h"
#include "backends/local/local_inotify.h"
#include "backends/local/local_node.h"
#include "backends/local/local_watch.h"

/* One mounted location. Read-only after mount(), so shared by all threads without a lock. */
struct local_loc {
	const struct ff_location_spec *spec;
	ff_node *root; /* the admin's path, symlinks in it followed once */
	bool as_root;  /* the daemon runs as root (and acts for callers, see local_cred.h) */
	struct local_watch *watch; /* changes by others are reported (fanotify, as root), or NULL */
	struct local_inotify *inotify; /* the same without root (inotify), or NULL */
};

/* Nodes hold their object by a descriptor that is cached, not kept (local_node.h). */
#define node_type local_node_type

/* An open file. `fd` comes first here and in struct local_dir, so that a handle passed to
 * getattr()/setattr() can be used whichever kind it is. */
struct local_file {
	int fd;
};

/* An open directory. The kernel serialises readdir on one handle; the lock makes that a
 * guarantee here rather than an assumption about the core. */
struct local_dir {
	int fd; /* dirfd(dp) */
	GMutex lock;
	DIR *dp;
	off_t pos;		/* offset of the next entry to hand out: `pending`, if any */
	struct dirent *pending; /* entry read from dp that fill() has not taken yet, or NULL;
				 * valid until the next readdir/seekdir on dp */
};

/* "/proc/self/fd/" and an int */
#define PROC_FD_LEN 32

/* Pin `node`, then act for `cred`: reopening a node takes the daemon's own capabilities, so the
 * order matters. On success *fd is the node's descriptor until local_node_unpin(node). */
int local_pin_as(const struct ff_cred *cred, ff_node *node, int *fd);

/* The same for two nodes (`b` may be `a`). */
int local_pin2_as(const struct ff_cred *cred, ff_node *a, int *afd, ff_node *b, int *bfd);

/* Unpin what local_pin2_as() pinned. */
void local_unpin2(ff_node *a, ff_node *b);

/* A call that made a descriptor failed for want of descriptors: make room, and say whether to
 * try once more. */
bool local_out_of_fds(void);

/* "/proc/self/fd/FD" into buf (PROC_FD_LEN bytes): opened, it reopens the descriptor's object
 * itself, never a path. */
void local_proc_path(char *buf, int fd);

/* Pin `node`, act for `cred`, and name the node by its /proc path: for the calls that take no
 * O_PATH descriptor (the *xattr calls; chmod, truncate and the like of a file that is not
 * open). Unpin the node after. */
int local_pin_by_proc(const struct ff_cred *cred, ff_node *node, int *fd, char proc[PROC_FD_LEN]);

/* The descriptor of an open file or directory handle. */
int local_fh_fd(ff_fh *fh);

static inline bool local_is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* A node for `name` in the directory `dirfd`, never following a symlink named `name`. */
int local_node_at(int dirfd, const char *name, ff_node **node, struct stat *st);

/* The core is given `node` (attributes `st`): without root, a directory is watched while the
 * core holds it (local_inotify.h). */
void local_give(struct local_loc *l, ff_node *node, const struct stat *st);

/* local_dir.c */
int local_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh);
int local_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		  bool plus, ff_fill_fn fill, void *buf);
int local_releasedir(void *loc, ff_dh *dh);
int local_fsyncdir(void *loc, ff_dh *dh, int datasync);

/* local_xattr.c */
int local_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		   const void *value, size_t size, int flags);
ssize_t local_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		       void *buf, size_t size);
ssize_t local_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			size_t size);
int local_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name);

#endif /* FEDFUSE_LOCAL_H */
