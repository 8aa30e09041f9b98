/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_node.h - nodes of local locations, and their descriptors as a cache (DESIGN §10).
 *
 * A node names its object by an O_PATH descriptor, as libfuse's passthrough_ll does: it follows
 * the object through renames and never resolves a path again. But the kernel may cache far more
 * inodes than the daemon may open descriptors, and a lookup that fails with EMFILE blames the
 * caller's program. So descriptors are a cache: past a budget (3/4 of RLIMIT_NOFILE), the
 * least recently used nodes' descriptors are closed, and each such node keeps a file handle
 * (name_to_handle_at) from which it is reopened on its next use (open_by_handle_at, which needs
 * CAP_DAC_READ_SEARCH: a daemon without it keeps every descriptor, as before). A handle names the
 * object itself, never a path, so reopening follows no symlink and leaves no root.
 *
 * A call uses a node's descriptor between local_node_pin() and local_node_unpin(); a pinned
 * descriptor is never closed under it. Pin before local_become(): reopening takes the daemon's
 * own capabilities.
 */
#ifndef FEDFUSE_LOCAL_NODE_H
#define FEDFUSE_LOCAL_NODE_H

#include <sys/types.h>

#include "backends/backend.h"

/* Size the cache from RLIMIT_NOFILE and find out whether handles can be reopened, testing on
 * `root_fd` (an O_PATH descriptor of a location's root, opened as the daemon). Calls after the
 * first only add what `root_fd` teaches (its filesystem's anchor). */
void local_nodes_init(int root_fd);

/* A node for the object `fd` (O_PATH, of type `type`) refers to; takes fd. */
ff_node *local_node_new(int fd, mode_t type);
void local_node_free(ff_node *node);
mode_t local_node_type(const ff_node *node);

/* The node's descriptor, open until local_node_unpin(); or -errno (ESTALE: the object is gone).
 * Reopening acts as the daemon: the caller must local_become() after it. */
int local_node_pin(ff_node *node);
void local_node_unpin(ff_node *node);

/* Descriptors ran out (EMFILE, ENFILE): close the idle half of the cache. True when any was
 * closed, so that the failed call may be tried again. */
bool local_nodes_relieve(void);

#endif /* FEDFUSE_LOCAL_NODE_H */
