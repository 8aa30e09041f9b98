/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_watch.h - change notification for a local location (DESIGN §6): a fanotify group that
 * reports what other programs do to the location's filesystem, turned into the core's
 * inval_inode/inval_entry callbacks. Events the daemon itself caused are dropped: the kernel
 * already knows of those, since they came through the mount.
 */
#ifndef FEDFUSE_LOCAL_WATCH_H
#define FEDFUSE_LOCAL_WATCH_H

#include "backends/backend.h"

struct local_watch;

/* Watch the filesystem of `root_fd` (an O_PATH descriptor of the location's root, which must
 * stay open until it returns) for `path`. NULL when it cannot be watched; *why then says
 * why (a static string). */
struct local_watch *local_watch_start(int root_fd, const char *path, const struct ff_notify *notify,
				      const char **why);

/* Stop the watch; no callback runs once it returns. */
void local_watch_stop(struct local_watch *w);

#endif /* FEDFUSE_LOCAL_WATCH_H */
