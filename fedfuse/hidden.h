/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hidden.h - files unlinked (or renamed over) while open on a backend that names objects by
 * path: set aside under a hidden name and removed at their last close, as NFS clients do.
 */
#ifndef FEDFUSE_HIDDEN_H
#define FEDFUSE_HIDDEN_H

#include "fedfuse/request.h"

/* Before `name` in directory `dir` (target `dt`) goes away: 1 when it went to a hidden name,
 * 0 when nothing was needed, or -errno. */
int ff_hide_if_open(struct ff_request *op, struct ff_inode *dir, struct ff_target *dt,
		    const char *name);
/* Whether a file unlinked while open still waits under a hidden name in directory `dir` for
 * its last release (which FUSE sends after close() returned). */
bool ff_hidden_pending(struct ff_state *s, struct ff_inode *dir);

/* At the last close of `inode`: remove its hidden name, if it has one. */
void ff_remove_hidden(struct ff_state *s, struct ff_inode *inode);

#endif /* FEDFUSE_HIDDEN_H */
