/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cred.h - who is calling: uid, gid, umask and supplementary groups of a FUSE request, with the
 * groups taken from a per-user cache rather than from /proc on every request.
 */
#ifndef FEDFUSE_CRED_H
#define FEDFUSE_CRED_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "backends/backend.h"

/* A cred plus the cache entry that owns its group list. */
struct ff_cred_hold {
	struct ff_cred cred;
	void *entry;
};

/* Fill `h` for the caller of `req`. Groups are looked up only when the daemon runs as root and
 * the caller is not root (they matter only when backends act as the caller). */
void ff_cred_get(fuse_req_t req, struct ff_cred_hold *h);
void ff_cred_put(struct ff_cred_hold *h);
/* The daemon's own identity (root when it runs as root), for internal operations. */
void ff_cred_self(struct ff_cred_hold *h);
/* Forget every cached group list (SIGHUP). */
void ff_cred_flush(void);

#endif /* FEDFUSE_CRED_H */
