/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_inotify.h - change notification for a local location when the daemon does not run as
 * root (DESIGN §6): inotify on the directories the core holds, turned into the core's
 * inval_inode/inval_entry callbacks. inotify does not say who made a change, so the daemon's
 * own operations say beforehand what they will change, and the events those cause are dropped
 * (a table of expected changes, each with a short life).
 */
#ifndef FEDFUSE_LOCAL_INOTIFY_H
#define FEDFUSE_LOCAL_INOTIFY_H

#include <stdbool.h>
#include <sys/stat.h>

#include "backends/backend.h"

struct local_inotify;

/* Watch changes for `notify`. `root_fd` is the location's root (O_PATH); its filesystem must be
 * one whose changes all pass through this machine. NULL when it cannot be watched; *why then
 * says why (a static string). */
struct local_inotify *local_inotify_start(int root_fd, const struct ff_notify *notify,
					  const char **why);
/* Stop watching; no callback runs once it returns. Every node must have been released. */
void local_inotify_stop(struct local_inotify *w);

/* The core was given `node`, of the object `fd` refers to (`st` its attributes): a directory
 * is watched from now until local_inotify_release() of the same node. Nothing for other types,
 * nor when w is NULL. */
void local_inotify_hold(struct local_inotify *w, ff_node *node, int fd, const struct stat *st);
void local_inotify_release(struct local_inotify *w, ff_node *node);

/* The daemon is about to change (done: has changed) the entry `name` of the directory `dirfd`,
 * or the object `fd` (its data, attributes, extended attributes): what inotify reports of it
 * until a moment after `done` is the daemon's own. Nothing when w is NULL. */
void local_inotify_expect_entry(struct local_inotify *w, int dirfd, const char *name, bool done);
void local_inotify_expect_object(struct local_inotify *w, int fd, bool done);

#endif /* FEDFUSE_LOCAL_INOTIFY_H */
