/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * notify.h - change notification (DESIGN §6): what a backend reports of changes made by others
 * becomes invalidations of the kernel's caches, for the inodes and entries the kernel may hold.
 */
#ifndef FEDFUSE_NOTIFY_H
#define FEDFUSE_NOTIFY_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <glib.h>

#include "backends/backend.h"
#include "fedfuse/absent.h"
#include "fedfuse/inode.h"

struct ff_mount;

/* Deliver reports to the kernel through `se`, finding inodes in `itab`; each also makes
 * `absent` forget the names it keeps. Before it (and after ff_notify_stop) reports are dropped:
 * nothing is cached that they could invalidate. */
void ff_notify_start(struct fuse_session *se, struct ff_itab *itab, struct ff_absent *absent);
/* Drop reports from now on; returns once none is being delivered. Call it before the session
 * or the table goes away. */
void ff_notify_stop(void);

/* Drop the kernel's cached attributes of `inode` (not its pages): the next stat asks. */
void ff_notify_attrs_stale(struct ff_inode *inode);

/* The daemon's own operation on `inode` changed attributes in a way the kernel does not infer
 * from its reply (a write that cleared setid bits): drop the kernel's cached attributes now, so
 * that the reply, sent after this returns, is not followed by stale ones. Does nothing for an
 * inode whose mode had no setid bits. */
void ff_notify_after_write(struct ff_inode *inode);

/* The callbacks a backend gets for the location of `m`. */
void ff_notify_init(struct ff_notify *n, struct ff_mount *m);

/* "notify invalidations=N" for /.fedfuse/stats: kernel invalidations sent for others' changes. */
void ff_notify_describe(GString *out);
/* Its family of /.fedfuse/metrics. */
void ff_notify_describe_metrics(GString *out);

#endif /* FEDFUSE_NOTIFY_H */
