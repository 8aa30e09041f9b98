/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4_lock.c - byte-range locks kept by an NFSv4 server (LOCK, LOCKU, LOCKT,
 * RELEASE_LOCKOWNER; RFC 7530 9.1.5, 16.10-16.12, 16.37), so that they exclude the other
 * clients of the server.
 *
 * Each lock owner of ours (a process's record locks on one file, an open file's flock()) is a
 * lock-owner of the client identity of the context it first locks through, named after the
 * owner and the file. Its first LOCK turns the open's stateid into a lock stateid
 * (open_to_lock_owner4, which bears the open-owner's seqid); the later ones, and LOCKU, use that
 * lock stateid and the lock-owner's own seqid, counted as RFC 7530 9.1.7 says. A first LOCK the
 * server refuses leaves no state we could count on: the next try is by a lock-owner of a new
 * name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "backends/nfs/nfs_v4.h"

#define LENGTH_TO_END UINT64_MAX /* an NFSv4 lock length: to the end of the file, however long */

struct nfs4_lock {
	uint64_t open;	  /* the serial of the open its state came from; 0: none */
	stateid4 stateid; /* the lock stateid, with open */
	uint32_t seqid;	  /* the lock-owner's next seqid, with open */
	uint64_t owner;
	bool flock;
	const void *file;  /* what names the file in the lock-owner's name */
	unsigned int name; /* a new one after a refused first LOCK */
	char buf[80];	   /* the lock-owner's name */
};

struct nfs4_lock *nfs4_lock_new(uint64_t owner, bool flock, const void *file)
{
	struct nfs4_lock *lk = g_new0(struct nfs4_lock, 1);

	lk->owner = owner;
	lk->flock = flock;
	lk->file = file;
	return lk;
}

void nfs4_lock_free(struct nfs4_lock *lk)
{
	g_free(lk);
}

bool nfs4_lock_held_through(const struct nfs4_lock *lk, const struct nfs4_file *f)
{
	return lk->open != 0 && lk->open == f->serial;
}

bool nfs4_lock_has_state(const struct nfs4_lock *lk)
{
	return lk->open != 0;
}

void nfs4_lock_forget(struct nfs4_lock *lk)
{
	lk->open = 0;
	lk->name++;
}

static void set_owner(struct nfs_conn *conn, struct nfs4_lock *lk, lock_owner4 *lo)
{
	g_snprintf(lk->buf, sizeof(lk->buf), "lock %c %016" G_GINT64_MODIFIER "x %p %u",
		   lk->flock ? 'f' : 'p', (guint64)lk->owner, lk->file, lk->name);
	lo->clientid = conn->v4client->clientid;
	lo->owner.owner_len = (u_int)strlen(lk->buf);
	lo->owner.owner_val = lk->buf;
}

/* NFSv4's range of a struct flock (l_whence SEEK_SET, l_start and l_len >= 0). */
static void to_range(const struct flock *fl, offset4 *off, length4 *len)
{
	*off = (offset4)fl->l_start;
	*len = fl->l_len == 0 ? LENGTH_TO_END : (length4)fl->l_len;
}

/* A lock the server says conflicts, as F_GETLK tells it: of another machine, so no pid. */
static void from_denied(const LOCK4denied *d, struct flock *fl)
{
	fl->l_type = d->locktype == READ_LT || d->locktype == READW_LT ? F_RDLCK : F_WRLCK;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)MIN(d->offset, (offset4)INT64_MAX);
	fl->l_len = d->length == LENGTH_TO_END || d->length > (length4)INT64_MAX ? 0
										 : (off_t)d->length;
	fl->l_pid = 0;
}

struct lock_out {
	nfs_opnum4 op;
	bool seen;	  /* the reply has the operation's result */
	nfsstat4 status;  /* and this was it */
	stateid4 stateid; /* LOCK, LOCKU */
	bool denied;	  /* LOCK, LOCKT: NFS4ERR_DENIED, and by this lock: */
	struct flock *fl;
};

static int decode_lock(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct lock_out *out = c->arg;
	nfs_resop4 r;

	if (!nfs4_find_res(res, out->op, false, &r))
		return err;
	out->seen = true;
	/* every result type starts with its status */
	memcpy(&out->status, &r.nfs_resop4_u, sizeof(out->status));
	if (out->op == OP_LOCK && out->status == NFS4_OK) {
		out->stateid = r.nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
	} else if (out->op == OP_LOCKU && out->status == NFS4_OK) {
		out->stateid = r.nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid;
	} else if (out->op == OP_LOCK && out->status == NFS4ERR_DENIED) {
		out->denied = true;
		from_denied(&r.nfs_resop4_u.oplock.LOCK4res_u.denied, out->fl);
	} else if (out->op == OP_LOCKT && out->status == NFS4ERR_DENIED) {
		out->denied = true;
		from_denied(&r.nfs_resop4_u.oplockt.LOCKT4res_u.denied, out->fl);
	}
	return err;
}

/* After an operation bearing the lock-owner's seqid: count it up as the server did. Without a
 * reply nobody knows: the state is forgotten (its locks go with the open's CLOSE). */
static void lock_seqid_after(struct nfs4_lock *lk, const struct lock_out *out)
{
	if (!out->seen)
		nfs4_lock_forget(lk);
	else if (nfs4_seqid_counts(out->status))
		lk->seqid++;
}

int nfs4_lock_set(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk,
		  struct flock *fl)
{
	struct nfs4_client *cl = conn->v4client;
	struct lock_out out = { .op = fl->l_type == F_UNLCK ? OP_LOCKU : OP_LOCK, .fl = fl };
	bool fresh = !nfs4_lock_held_through(lk, f);
	struct v4_ops o;
	offset4 off;
	length4 len;
	int rc;

	if (out.op == OP_LOCKU && fresh)
		return 0; /* no state through this open: nothing held */
	if (fresh)
		nfs4_lock_forget(lk);
	to_range(fl, &off, &len);
	nfs4_ops_init(&o);
	nfs4_ops_putfh(&o, f->fh, f->fhlen);
	if (out.op == OP_LOCKU) {
		LOCKU4args *ua = &nfs4_ops_add(&o, OP_LOCKU)->nfs_argop4_u.oplocku;

		ua->locktype = WRITE_LT;
		ua->seqid = lk->seqid;
		ua->lock_stateid = lk->stateid;
		ua->offset = off;
		ua->length = len;
	} else {
		LOCK4args *la = &nfs4_ops_add(&o, OP_LOCK)->nfs_argop4_u.oplock;

		la->locktype = fl->l_type == F_RDLCK ? READ_LT : WRITE_LT;
		la->offset = off;
		la->length = len;
		la->locker.new_lock_owner = fresh;
		if (fresh) {
			open_to_lock_owner4 *oo = &la->locker.locker4_u.open_owner;

			oo->open_seqid = cl->seqid;
			oo->open_stateid = f->stateid;
			oo->lock_seqid = 0;
			set_owner(conn, lk, &oo->lock_owner);
		} else {
			la->locker.locker4_u.lock_owner.lock_stateid = lk->stateid;
			la->locker.locker4_u.lock_owner.lock_seqid = lk->seqid;
		}
	}
	rc = nfs4_ops_run_always(conn->nfs, &o, decode_lock, &out);
	if (fresh) {
		nfs4_open_seqid_after(cl, &o, out.seen, out.status);
		if (rc == 0) {
			lk->open = f->serial;
			lk->seqid = 1;
		} else {
			nfs4_lock_forget(lk); /* a new name next time */
		}
	} else {
		lock_seqid_after(lk, &out);
	}
	if (rc == 0)
		lk->stateid = out.stateid;
	nfs4_ops_free(&o);
	return out.denied ? -EAGAIN : rc;
}

int nfs4_lock_test(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk,
		   struct flock *fl)
{
	struct lock_out out = { .op = OP_LOCKT, .fl = fl };
	LOCKT4args *ta;
	struct v4_ops o;
	int rc;

	nfs4_ops_init(&o);
	nfs4_ops_putfh(&o, f->fh, f->fhlen);
	ta = &nfs4_ops_add(&o, OP_LOCKT)->nfs_argop4_u.oplockt;
	ta->locktype = fl->l_type == F_RDLCK ? READ_LT : WRITE_LT;
	to_range(fl, &ta->offset, &ta->length);
	/* as the owner itself (its own locks never conflict), with the name its state has */
	set_owner(conn, lk, &ta->owner);
	rc = nfs4_ops_run_always(conn->nfs, &o, decode_lock, &out);
	nfs4_ops_free(&o);
	if (out.denied)
		return 0;
	if (rc == 0)
		fl->l_type = F_UNLCK;
	return rc;
}

int nfs4_lock_release(struct nfs_conn *conn, const struct nfs4_file *f, struct nfs4_lock *lk)
{
	struct flock all = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	struct v4_ops o;
	int rc;

	if (!nfs4_lock_held_through(lk, f))
		return 0;
	rc = nfs4_lock_set(conn, f, lk, &all);
	if (rc)
		return rc;
	/* the server may forget the lock-owner now (CLOSE would refuse NFS4ERR_LOCKS_HELD while
	 * it held anything) */
	nfs4_ops_init(&o);
	set_owner(conn, lk,
		  &nfs4_ops_add(&o, OP_RELEASE_LOCKOWNER)
			   ->nfs_argop4_u.oprelease_lockowner.lock_owner);
	rc = nfs4_ops_run(conn->nfs, &o, NULL, NULL);
	nfs4_ops_free(&o);
	nfs4_lock_forget(lk);
	return rc;
}
