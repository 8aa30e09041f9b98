/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4_file.c - NFSv4 open files with OPEN state of our own. libnfs 4.0's OPEN asks ACCESS of
 * the parent directory and refuses what that does not grant (a file whose mode lets the caller
 * write, in a directory the caller may not write, failed EINVAL), and it counts its open-owner's
 * seqid up even when an operation before OPEN failed, so the next OPEN fails
 * NFS4ERR_BAD_SEQID. Here each context has a client identity and an open-owner of its own,
 * whose seqid follows RFC 7530 9.1.7; READ (many in flight, nfs_read.c), WRITE (pipelined
 * chunks of the server's maxwrite, see nfs4_compound_send()), COMMIT and CLOSE use the stateid
 * that OPEN gave.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "backends/nfs/nfs_v4.h"

static gint client_serial;
static uint64_t open_serial;

/* ---- client identity ------------------------------------------------------------------------- */

static int decode_setclientid(struct v4_call *c, COMPOUND4res *res, int err)
{
	SETCLIENTID4resok *ok = c->arg;
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_SETCLIENTID, false, &r) ||
	    r.nfs_resop4_u.opsetclientid.status != NFS4_OK)
		return -EPROTO;
	*ok = r.nfs_resop4_u.opsetclientid.SETCLIENTID4res_u.resok4;
	return 0;
}

/* SETCLIENTID and SETCLIENTID_CONFIRM, once per context. */
static int client_ready(struct nfs_conn *conn)
{
	struct nfs4_client *cl;
	SETCLIENTID4resok ok;
	SETCLIENTID4args *sa;
	SETCLIENTID_CONFIRM4args *ca;
	struct v4_ops o;
	gint64 now = g_get_real_time();
	int rc;

	if (conn->v4client)
		return 0;
	cl = g_new0(struct nfs4_client, 1);
	g_snprintf(cl->id, sizeof(cl->id), "fedfuse-open %s pid:%d n:%u t:%" G_GINT64_FORMAT,
		   g_get_host_name(), (int)getpid(),
		   (unsigned int)g_atomic_int_add(&client_serial, 1), now);
	nfs4_ops_init(&o);
	sa = &nfs4_ops_add(&o, OP_SETCLIENTID)->nfs_argop4_u.opsetclientid;
	memcpy(sa->client.verifier, &now, MIN(sizeof(now), sizeof(sa->client.verifier)));
	sa->client.id.id_len = (u_int)strlen(cl->id);
	sa->client.id.id_val = cl->id;
	sa->callback.cb_program = 0; /* no callbacks: the server grants no delegation */
	sa->callback.cb_location.r_netid = "tcp";
	sa->callback.cb_location.r_addr = "0.0.0.0.0.0";
	rc = nfs4_ops_run(conn->nfs, &o, decode_setclientid, &ok);
	nfs4_ops_free(&o);
	if (rc)
		goto out_free;
	nfs4_ops_init(&o);
	ca = &nfs4_ops_add(&o, OP_SETCLIENTID_CONFIRM)->nfs_argop4_u.opsetclientid_confirm;
	ca->clientid = ok.clientid;
	memcpy(ca->setclientid_confirm, ok.setclientid_confirm, sizeof(ca->setclientid_confirm));
	rc = nfs4_ops_run(conn->nfs, &o, NULL, NULL);
	nfs4_ops_free(&o);
	if (rc)
		goto out_free;
	cl->clientid = ok.clientid;
	conn->v4client = cl;
	return 0;
out_free:
	g_free(cl);
	return rc;
}

void nfs4_client_free(struct nfs4_client *cl)
{
	g_free(cl);
}

int nfs4_client_renew(struct nfs_conn *conn)
{
	struct v4_ops o;
	int rc;

	if (!conn->v4client)
		return 0;
	nfs4_ops_init(&o);
	nfs4_ops_add(&o, OP_RENEW)->nfs_argop4_u.oprenew.clientid = conn->v4client->clientid;
	rc = nfs4_ops_run(conn->nfs, &o, NULL, NULL);
	nfs4_ops_free(&o);
	return rc;
}

bool nfs4_seqid_counts(nfsstat4 status)
{
	switch (status) {
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_BAD_SEQID:
	case NFS4ERR_BADZDR:
	case NFS4ERR_RESOURCE:
	case NFS4ERR_NOFILEHANDLE:
	case NFS4ERR_MOVED:
		return false;
	default:
		return true;
	}
}

void nfs4_open_seqid_after(struct nfs4_client *cl, const struct v4_ops *o, bool status_seen,
			   nfsstat4 status)
{
	if (!status_seen) {
		if (o->reached == OP_ILLEGAL) { /* no reply at all */
			cl->owner++;
			cl->seqid = 0;
		}
		return;
	}
	if (nfs4_seqid_counts(status))
		cl->seqid++;
}

/* ---- OPEN, OPEN_CONFIRM, CLOSE --------------------------------------------------------------- */

struct open_out {
	nfs_opnum4 op;	  /* the seqid-bearing operation */
	bool seen;	  /* the reply has its result */
	nfsstat4 status;  /* and this was it */
	OPEN4resok ok;	  /* OPEN */
	stateid4 stateid; /* OPEN_CONFIRM, CLOSE */
	struct nfs4_file *f;
	struct stat *st;
};

static int decode_open(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct open_out *out = c->arg;
	nfs_resop4 r;

	if (!nfs4_find_res(res, out->op, false, &r))
		return err;
	out->seen = true;
	/* every result type starts with its status */
	memcpy(&out->status, &r.nfs_resop4_u, sizeof(out->status));
	if (out->status == NFS4_OK && out->op == OP_OPEN) {
		out->ok = r.nfs_resop4_u.opopen.OPEN4res_u.resok4;
		out->stateid = out->ok.stateid;
	} else if (out->status == NFS4_OK && out->op == OP_OPEN_CONFIRM) {
		out->stateid = r.nfs_resop4_u.opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid;
	}
	/* after a successful OPEN, its filehandle even if what follows failed: to CLOSE it */
	if (out->f && nfs4_find_res(res, OP_GETFH, false, &r) &&
	    r.nfs_resop4_u.opgetfh.status == NFS4_OK) {
		const nfs_fh4 *fh = &r.nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;

		if (fh->nfs_fh4_len > sizeof(out->f->fh))
			return err ?: -EPROTO;
		out->f->fhlen = fh->nfs_fh4_len;
		memcpy(out->f->fh, fh->nfs_fh4_val, fh->nfs_fh4_len);
	}
	if (err)
		return err;
	return out->st ? nfs4_decode_getattr_res(res, out->st) : 0;
}

static void set_owner(struct nfs4_client *cl, open_owner4 *owner, char *buf, size_t size)
{
	g_snprintf(buf, size, "open-owner %u", cl->owner);
	owner->clientid = cl->clientid;
	owner->owner.owner_len = (u_int)strlen(buf);
	owner->owner.owner_val = buf;
}

/* PUTFH and `opnum`, which bears the open-owner's seqid: OPEN_CONFIRM of a new open-owner's
 * first OPEN (`f` gets the confirmed stateid), or CLOSE. */
static int owner_op(struct nfs_conn *conn, struct nfs4_file *f, nfs_opnum4 opnum)
{
	struct nfs4_client *cl = conn->v4client;
	struct open_out out = { .op = opnum };
	nfs_argop4 *op;
	struct v4_ops o;
	int rc;

	nfs4_ops_init(&o);
	nfs4_ops_putfh(&o, f->fh, f->fhlen);
	op = nfs4_ops_add(&o, opnum);
	if (opnum == OP_OPEN_CONFIRM) {
		op->nfs_argop4_u.opopen_confirm.open_stateid = f->stateid;
		op->nfs_argop4_u.opopen_confirm.seqid = cl->seqid;
	} else {
		op->nfs_argop4_u.opclose.open_stateid = f->stateid;
		op->nfs_argop4_u.opclose.seqid = cl->seqid;
	}
	rc = nfs4_ops_run_always(conn->nfs, &o, decode_open, &out);
	nfs4_open_seqid_after(cl, &o, out.seen, out.status);
	nfs4_ops_free(&o);
	if (rc == 0 && opnum == OP_OPEN_CONFIRM)
		f->stateid = out.stateid;
	return rc;
}

int nfs4_file_open(struct nfs_conn *conn, const char *full, int flags, bool create, mode_t mode,
		   struct nfs4_file **fp, struct stat *st)
{
	char *dir = g_path_get_dirname(full), *name = g_path_get_basename(full);
	struct nfs4_file *f = g_new0(struct nfs4_file, 1);
	uint32_t mask[2] = { 0, 1u << (FATTR4_MODE - 32) }, size_mask[1] = { 1u << FATTR4_SIZE };
	char zero_size[8] = { 0 }, owner[32];
	GByteArray *vals = g_byte_array_new();
	struct nfs4_client *cl;
	int rc;

	f->serial = __atomic_add_fetch(&open_serial, 1, __ATOMIC_RELAXED);
	rc = client_ready(conn);
	if (rc)
		goto out_free;
	cl = conn->v4client;
	nfs4_put_u32(vals, mode & 07777);
	for (int attempt = 0; attempt < 2; attempt++) {
		struct open_out out = { .op = OP_OPEN, .f = f, .st = st };
		struct v4_ops o;
		OPEN4args *oa;

		nfs4_ops_init(&o);
		o.loc = conn->loc;
		rc = nfs4_ops_walk(&o, conn->nfs, dir, V4_TAIL_BYTES);
		if (rc) {
			nfs4_ops_free(&o);
			break;
		}
		oa = &nfs4_ops_add(&o, OP_OPEN)->nfs_argop4_u.opopen;
		oa->seqid = cl->seqid;
		switch (flags & O_ACCMODE) {
		case O_RDONLY:
			oa->share_access = OPEN4_SHARE_ACCESS_READ;
			break;
		case O_WRONLY:
			oa->share_access = OPEN4_SHARE_ACCESS_WRITE;
			break;
		default:
			oa->share_access = OPEN4_SHARE_ACCESS_BOTH;
		}
		oa->share_deny = OPEN4_SHARE_DENY_NONE;
		set_owner(cl, &oa->owner, owner, sizeof(owner));
		if (create) {
			/* GUARDED4: fails NFS4ERR_EXIST on an existing name; the mode is set as
			 * the file is made */
			fattr4 *fa = &oa->openhow.openflag4_u.how.createhow4_u.createattrs;

			oa->openhow.opentype = OPEN4_CREATE;
			oa->openhow.openflag4_u.how.mode = GUARDED4;
			fa->attrmask.bitmap4_len = 2;
			fa->attrmask.bitmap4_val = mask;
			fa->attr_vals.attrlist4_len = vals->len;
			fa->attr_vals.attrlist4_val = (char *)vals->data;
		} else {
			oa->openhow.opentype = OPEN4_NOCREATE;
		}
		oa->claim.claim = CLAIM_NULL;
		oa->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
		oa->claim.open_claim4_u.file.utf8string_val = name;
		nfs4_ops_add(&o, OP_GETFH);
		if (!create && (flags & O_TRUNC)) {
			/* Linux truncates for O_RDONLY too (the kernel checked the caller may
			 * write); the anonymous stateid, as our open denies nothing */
			SETATTR4args *sa = &nfs4_ops_add(&o, OP_SETATTR)->nfs_argop4_u.opsetattr;

			sa->obj_attributes.attrmask.bitmap4_len = 1;
			sa->obj_attributes.attrmask.bitmap4_val = size_mask;
			sa->obj_attributes.attr_vals.attrlist4_len = sizeof(zero_size);
			sa->obj_attributes.attr_vals.attrlist4_val = zero_size;
		}
		nfs4_ops_getattr(&o);
		rc = nfs4_ops_run_always(conn->nfs, &o, decode_open, &out);
		nfs4_open_seqid_after(cl, &o, out.seen, out.status);
		nfs4_ops_free(&o);
		if (out.seen && out.status == NFS4_OK && f->fhlen) {
			/* opened, even if a later operation (SETATTR, GETATTR) failed */
			f->stateid = out.stateid;
			if (out.ok.rflags & OPEN4_RESULT_CONFIRM) {
				int rc2 = owner_op(conn, f, OP_OPEN_CONFIRM);

				rc = rc ?: rc2;
			}
			if (rc) {
				nfs4_file_close(conn, g_steal_pointer(&f));
				break;
			}
		}
		if (!out.seen || out.status != NFS4ERR_BAD_SEQID)
			break;
		/* our count disagrees with the server's: go on with a new open-owner */
		cl->owner++;
		cl->seqid = 0;
	}
	if (rc == 0) {
		*fp = f;
		f = NULL;
	}
out_free:
	g_free(f);
	g_byte_array_free(vals, TRUE);
	g_free(dir);
	g_free(name);
	return rc;
}

int nfs4_file_close(struct nfs_conn *conn, struct nfs4_file *f)
{
	int rc = owner_op(conn, f, OP_CLOSE);

	g_free(f);
	return rc;
}

void nfs4_file_free(struct nfs4_file *f)
{
	g_free(f);
}

/* ---- attributes, READ, COMMIT ---------------------------------------------------------------- */

static int decode_attrs(struct v4_call *c, COMPOUND4res *res, int err)
{
	return nfs4_decode_getattr_res(res, c->arg);
}

int nfs4_file_getattr(struct nfs_conn *conn, struct nfs4_file *f, struct stat *st)
{
	struct v4_ops o;
	int rc;

	nfs4_ops_init(&o);
	nfs4_ops_putfh(&o, f->fh, f->fhlen);
	nfs4_ops_getattr(&o);
	rc = nfs4_ops_run(conn->nfs, &o, decode_attrs, st);
	nfs4_ops_free(&o);
	return rc;
}

/* The error of a READ or WRITE COMPOUND's reply (`what`): -ENOTCONN when the server lost the
 * open's state (the operation is made again once the file is opened anew). */
static int reply_err(struct rpc_context *rpc, int status, const COMPOUND4res *res, const char *what)
{
	if (status == RPC_STATUS_TIMEOUT || status == RPC_STATUS_CANCEL)
		return -ETIMEDOUT;
	if (status != RPC_STATUS_SUCCESS || !res)
		return -ECONNRESET;
	if (res->status == NFS4_OK)
		return 0;
	rpc_set_error(rpc, "NFS4: %s failed with NFS4ERR_%s", what,
		      nfs4_status_name((int)res->status));
	return nfs4_status_lost_state((int)res->status) ? -ENOTCONN
							: nfs4_status_errno((int)res->status);
}

static void read_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	COMPOUND4res *res = data;
	READ4resok *ok = NULL;
	nfs_resop4 r;
	int err = reply_err(rpc, status, res, "READ");

	if (err == 0 && !nfs4_find_res(res, OP_READ, false, &r))
		err = -EPROTO;
	else if (err == 0)
		ok = &r.nfs_resop4_u.opread.READ4res_u.resok4;
	nfs_rchunk_done(private_data, err, ok ? ok->data.data_val : NULL,
			ok ? ok->data.data_len : 0, ok && ok->eof);
}

static int read_chunk(struct nfs_conn *conn, const struct nfs_rtarget *t, struct nfs_raseg *s,
		      uint64_t off, size_t len)
{
	nfs_argop4 op[2];
	COMPOUND4args args;
	READ4args *ra;

	memset(op, 0, sizeof(op));
	op[0].argop = OP_PUTFH;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_len = t->fhlen;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)t->fh;
	op[1].argop = OP_READ;
	ra = &op[1].nfs_argop4_u.opread;
	ra->stateid = *(const stateid4 *)t->stateid;
	ra->offset = off;
	ra->count = (count4)len;
	memset(&args, 0, sizeof(args));
	args.argarray.argarray_len = 2;
	args.argarray.argarray_val = op;
	if (rpc_nfs4_compound_async(nfs_get_rpc_context(conn->nfs), read_cb, &args, s) != 0)
		return -ENOMEM;
	return 0;
}

void nfs4_rtarget(struct nfs_conn *conn, struct nfs4_file *f, struct nfs_rtarget *t)
{
	*t = (struct nfs_rtarget){
		.send = read_chunk,
		.fh = f->fh,
		.fhlen = f->fhlen,
		.stateid = &f->stateid,
		.chunk = conn->readmax,
	};
}

static int decode_commit(struct v4_call *c, COMPOUND4res *res, int err)
{
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_COMMIT, false, &r) || r.nfs_resop4_u.opcommit.status != NFS4_OK)
		return -EPROTO;
	memcpy(c->arg, r.nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf, NFS_VERF_SIZE);
	return 0;
}

int nfs4_file_commit(struct nfs_conn *conn, struct nfs4_file *f, char verf[NFS_VERF_SIZE])
{
	struct v4_ops o;
	int rc;

	nfs4_ops_init(&o);
	nfs4_ops_putfh(&o, f->fh, f->fhlen);
	nfs4_ops_add(&o, OP_COMMIT); /* offset 0, count 0: the whole file */
	rc = nfs4_ops_run(conn->nfs, &o, decode_commit, verf);
	nfs4_ops_free(&o);
	return rc;
}

/* ---- WRITE ----------------------------------------------------------------------------------- */

static void write_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	COMPOUND4res *res = data;
	WRITE4resok *ok = NULL;
	nfs_resop4 r;
	int err = reply_err(rpc, status, res, "WRITE");

	if (err == 0 && !nfs4_find_res(res, OP_WRITE, false, &r))
		err = -EPROTO;
	else if (err == 0)
		ok = &r.nfs_resop4_u.opwrite.WRITE4res_u.resok4;
	nfs_wchunk_done(private_data, err, ok ? ok->count : 0, ok && ok->committed == FILE_SYNC4,
			ok ? ok->writeverf : NULL);
}

static int write_chunk(struct nfs_conn *conn, const struct nfs_wtarget *t, struct nfs_wbent *e,
		       uint64_t off, size_t len, const void *data)
{
	nfs_argop4 op[2];
	COMPOUND4args args;
	WRITE4args *wa;

	memset(op, 0, sizeof(op));
	op[0].argop = OP_PUTFH;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_len = t->fhlen;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)t->fh;
	op[1].argop = OP_WRITE;
	wa = &op[1].nfs_argop4_u.opwrite;
	wa->stateid = *(const stateid4 *)t->stateid;
	wa->offset = off;
	wa->stable = t->sync ? FILE_SYNC4 : UNSTABLE4;
	wa->data.data_len = (u_int)len;
	wa->data.data_val = (char *)data;
	memset(&args, 0, sizeof(args));
	args.argarray.argarray_len = 2;
	args.argarray.argarray_val = op;
	if (len > NFS4_WRITE_CHUNK)
		return nfs4_compound_send(nfs_get_rpc_context(conn->nfs), write_cb, &args, e, len);
	if (rpc_nfs4_compound_async(nfs_get_rpc_context(conn->nfs), write_cb, &args, e) != 0)
		return -ENOMEM;
	return 0;
}

void nfs4_wtarget(struct nfs_conn *conn, struct nfs4_file *f, bool sync, struct nfs_wtarget *t)
{
	bool big = nfs4_big_compounds(nfs_get_rpc_context(conn->nfs));

	*t = (struct nfs_wtarget){
		.send = write_chunk,
		.fh = f->fh,
		.fhlen = f->fhlen,
		.stateid = &f->stateid,
		.sync = sync,
		/* the server's wsize, as NFSv3; or what fits libnfs' fixed buffer */
		.chunk = big ? conn->writemax : NFS4_WRITE_CHUNK,
	};
}
