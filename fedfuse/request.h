/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request.h - what one FUSE request on one inode carries through its handler: the state, the
 * inode and the backend object it stands for, the caller's credentials. The handlers of
 * fuse_ops.c, file.c and xattr.c begin and end with it; the sign of an error flips in
 * ff_reply_err() and nowhere else.
 */
#ifndef FEDFUSE_REQUEST_H
#define FEDFUSE_REQUEST_H

#include "fedfuse/cred.h"
#include "fedfuse/fedfuse.h"
#include "fedfuse/resolve.h"

struct ff_request {
	struct ff_state *s;
	struct ff_inode *inode;
	struct ff_target t;
	struct ff_cred_hold h;
	struct ff_ctx c; /* s, the namespace in force and h.cred, for resolve.c */
};

static inline struct ff_state *ff_req_state(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Find the inode and its backend target. With `write`, refuse namespace-only inodes and
 * read-only referrals with EROFS. Call ff_req_end() whatever it returns. In between, the
 * request can be interrupted (interrupt.h). */
int ff_req_begin(fuse_req_t req, fuse_ino_t ino, bool write, struct ff_request *op);
void ff_req_end(struct ff_request *op);

/* 0 or -errno as FUSE wants it. */
static inline void ff_reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* Open files and directories, so that unmount releases what the kernel left open. */
void ff_handle_track(struct ff_state *s, void *handle, bool is_dir);
void ff_handle_untrack(struct ff_state *s, void *handle);

/* The mode to create an object with (see request.c). */
mode_t ff_create_mode(const struct ff_request *op, mode_t mode);

/* After a size change by the caller of `op`, clear the setid bits the kernel's rule clears
 * where the backend left them; `st` is updated. */
int ff_req_drop_setid(struct ff_request *op, ff_fh *fh, struct stat *st);

#endif /* FEDFUSE_REQUEST_H */
