/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request.c - the request context of the FUSE handlers (request.h) and the rules they share
 * about new objects' modes and setid bits.
 */
#include <errno.h>

#include "fedfuse/control.h"
#include "fedfuse/gateway.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/request.h"

/* Find the inode and its backend target. With `write`, refuse namespace-only inodes and
 * read-only referrals with EROFS. */
int ff_req_begin(fuse_req_t req, fuse_ino_t ino, bool write, struct ff_request *op)
{
	int rc;

	ff_intr_begin(req);
	op->s = ff_req_state(req);
	op->t = (struct ff_target){ 0 };
	ff_cred_get(req, &op->h);
	ff_ctx_begin(&op->c, op->s, &op->h.cred);
	op->inode = ff_itab_get(op->s->itab, ino);
	if (!op->inode)
		return -ESTALE;
	if (ff_control_is_control(ino))
		return write ? -EROFS : 0;
	rc = ff_target_get(&op->c, op->inode, &op->t);
	if (rc < 0)
		return rc;
	if (write && (!op->t.mnt || op->t.mnt->loc.spec.read_only))
		return -EROFS;
	return 0;
}

void ff_req_end(struct ff_request *op)
{
	ff_target_put(op->s, &op->t);
	ff_ctx_end(&op->c);
	ff_cred_put(&op->h);
	ff_intr_end();
}

void ff_handle_track(struct ff_state *s, void *handle, bool is_dir)
{
	g_mutex_lock(&s->handles_lock);
	g_hash_table_insert(s->handles, handle, GINT_TO_POINTER(is_dir));
	g_mutex_unlock(&s->handles_lock);
}

void ff_handle_untrack(struct ff_state *s, void *handle)
{
	g_mutex_lock(&s->handles_lock);
	g_hash_table_remove(s->handles, handle);
	g_mutex_unlock(&s->handles_lock);
}

/* The mode to create an object with: the caller's umask applied, unless the backend applies it
 * itself because it knows whether the object inherits a default ACL (FF_CAP_ACL). Without
 * FUSE_CAP_DONT_MASK the kernel applied it already, and cred->umask changes nothing more. */
mode_t ff_create_mode(const struct ff_request *op, mode_t mode)
{
	return (op->t.mnt->be->caps & FF_CAP_ACL) ? mode : mode & ~op->h.cred.umask;
}

static bool cred_in_group(const struct ff_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (int i = 0; i < cred->ngroups && cred->groups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

/*
 * A size change by a caller without CAP_FSETID clears setuid, and setgid when the file is
 * group-executable or the caller is not in its group (Linux >= 6.2). The kernel's FUSE client
 * leaves that to us for a truncate, and a server may not do it (ganesha keeps the bits on a
 * SETATTR of the size): after a truncate, `st` tells what the backend left, and what should
 * have gone is cleared with the daemon's credentials, as is_kill_setid() does for the kernel.
 */
int ff_req_drop_setid(struct ff_request *op, ff_fh *fh, struct stat *st)
{
	mode_t drop = 0;
	struct ff_cred_hold self;
	struct stat attr = { .st_mode = st->st_mode };
	int rc;

	if (op->h.cred.uid == 0 || !S_ISREG(st->st_mode))
		return 0;
	drop = st->st_mode & S_ISUID;
	if ((st->st_mode & S_ISGID) &&
	    ((st->st_mode & S_IXGRP) || !cred_in_group(&op->h.cred, st->st_gid)))
		drop |= S_ISGID;
	if (!drop)
		return 0;
	attr.st_mode &= ~drop;
	ff_cred_self(&self);
	rc = ff_gw_setattr(op->t.mnt, &self.cred, op->t.bnode, fh, &attr, FF_SET_MODE, st);
	ff_cred_put(&self);
	return rc;
}
