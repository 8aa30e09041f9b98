/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_watch.h - change notification for a local location (DESIGN §6): a fanotify group that
 * reports what other programs do to the location's filesystem, turned into the core's
 * inval_inode/inval_entry callbacks. Events the daemon itself caused are dropped: the kernel
 * already knows of those, since they came through the mount.
 */
#ifndef FEDFUSE_LOCAL_WATCH_H
#define FEDFUSE_LOCAL_WATCH_H

#include <glib.h>

#include "backends/backend.h"

struct local_watch;

/* Watch the filesystem of `root_fd` (an O_PATH descriptor of the location's root, which must
 * stay open until it returns) for `path`. NULL when it cannot be watched; *why then says
 * why (a static string). */
struct local_watch *local_watch_start(int root_fd, const char *path, const struct ff_notify *notify,
				      const char **why);

/* Stop the watch; no callback runs once it returns. */
void local_watch_stop(struct local_watch *w);

/* A watcher thread's loop: read the events of `fd` in batches of up to `size` bytes and hand
 * each batch to batch(data, buf, n), until `stop_fd` (an eventfd) is written to or reading
 * fails (said in the log). */
void local_watch_read_loop(int fd, int stop_fd, size_t size,
			   void (*batch)(void *data, unsigned char *buf, size_t n), void *data);

/* End a watcher thread running local_watch_read_loop(): write to its `stop_fd`, wait for it,
 * close stop_fd. */
void local_watch_join(GThread *thread, int stop_fd);

/* Is the filesystem of `fd` one whose changes all pass through this kernel's VFS (ext2/3/4,
 * xfs, btrfs, tmpfs, f2fs, overlayfs), so that watching it here sees every change? */
bool local_watch_fs_ok(int fd);

#endif /* FEDFUSE_LOCAL_WATCH_H */
