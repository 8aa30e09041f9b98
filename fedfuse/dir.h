/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dir.h - directory listings. A listing is read from the backend whole when a directory is
 * opened (or rewound) and served from that snapshot by index, which gives stable offsets for
 * telldir/seekdir whatever the backend's cookies are, and lets the namespace add its own
 * entries (nested referrals, virtual directories) and hide the ones they cover.
 */
#ifndef FEDFUSE_DIR_H
#define FEDFUSE_DIR_H

#include "fedfuse/resolve.h"

struct ff_dir;

int ff_dir_open(const struct ff_ctx *c, struct ff_inode *inode, struct ff_dir **dirp);
/* Reply to a readdir or readdirplus request. */
void ff_dir_read(const struct ff_ctx *c, fuse_req_t req, struct ff_dir *dir, size_t size, off_t off,
		 bool plus);
/* The kernel may keep the listing across opens: every change to the directory invalidates it
 * (a watched location's). */
bool ff_dir_cacheable(const struct ff_dir *dir);
int ff_dir_fsync(struct ff_state *s, struct ff_dir *dir, int datasync);
void ff_dir_release(struct ff_state *s, struct ff_dir *dir);

#endif /* FEDFUSE_DIR_H */
