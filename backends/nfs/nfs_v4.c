/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4.c - NFSv4 COMPOUNDs built by hand where libnfs 4.0's high-level calls are wrong: its
 * READDIR leaves dirents' fileid uninitialised, its GETATTR asks for no fsid or rawdev, its
 * READLINK result has garbage after the target, its chmod/chown/utimes OPEN the object (fail on
 * directories, follow symlinks; utimes(NULL) crashes), its mknod makes no fifos, its unlink and
 * rmdir remove any type, and none of its calls takes a path longer than its 4096-byte encoding
 * buffer holds. Each COMPOUND here names its object by path: PUTROOTFH, one LOOKUP per
 * component (LOOKUP never follows a symlink), then the operation; a long path is walked in
 * pieces first (nfs4_ops_walk()). A directory whose filehandle was learnt within attr-timeout
 * is started from instead (PUTFH, then the LOOKUPs below it): a stat ten directories deep is
 * PUTFH, LOOKUP, GETFH, GETATTR rather than PUTROOTFH, ten LOOKUPs, GETATTR. Open files:
 * nfs_v4_file.c; attributes in XDR: nfs_v4_attr.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "backends/nfs/nfs_v4.h"

unsigned long nfs_stat_readdir_rpcs;

#define V4_READDIR_MAXCOUNT 65536

/* The attributes we ask for, in bitmap4 form. */
static uint32_t v4_attr_request[2] = {
	(1u << FATTR4_TYPE) | (1u << FATTR4_SIZE) | (1u << FATTR4_FSID) | (1u << FATTR4_FILEID),
	(1u << (FATTR4_MODE - 32)) | (1u << (FATTR4_NUMLINKS - 32)) | (1u << (FATTR4_OWNER - 32)) |
		(1u << (FATTR4_OWNER_GROUP - 32)) | (1u << (FATTR4_RAWDEV - 32)) |
		(1u << (FATTR4_SPACE_USED - 32)) | (1u << (FATTR4_TIME_ACCESS - 32)) |
		(1u << (FATTR4_TIME_METADATA - 32)) | (1u << (FATTR4_TIME_MODIFY - 32)),
};

/* The same for READDIR, with rdattr_error: without it a server that cannot give one entry's
 * attributes (nfs-ganesha: a directory the caller may read but not search) fails the whole
 * READDIR with NFS4ERR_ACCESS; with it that entry comes with rdattr_error alone (and, from
 * nfs-ganesha, mounted_on_fileid: its inode number). */
static uint32_t v4_readdir_request[2] = {
	(1u << FATTR4_TYPE) | (1u << FATTR4_SIZE) | (1u << FATTR4_FSID) |
		(1u << FATTR4_RDATTR_ERROR) | (1u << FATTR4_FILEID),
	(1u << (FATTR4_MODE - 32)) | (1u << (FATTR4_NUMLINKS - 32)) | (1u << (FATTR4_OWNER - 32)) |
		(1u << (FATTR4_OWNER_GROUP - 32)) | (1u << (FATTR4_RAWDEV - 32)) |
		(1u << (FATTR4_SPACE_USED - 32)) | (1u << (FATTR4_TIME_ACCESS - 32)) |
		(1u << (FATTR4_TIME_METADATA - 32)) | (1u << (FATTR4_TIME_MODIFY - 32)) |
		(1u << (FATTR4_MOUNTED_ON_FILEID - 32)),
};

/*
 * Decoded results are read through copies. libnfs' ZDR decoder allocates every variable-length
 * array and optional-data pointer (resarray, the entry4 list of READDIR) with zdr_malloc(), which
 * returns the space after a 12-byte header (struct zdr_mem { next; uint32_t size; char buf[]; }
 * in lib/libnfs-zdr.c, 4.0.0 and later): 4-byte aligned, while nfs_resop4 and entry4 hold
 * 64-bit values and pointers. Accessing them in place is undefined behaviour; memcpy() is not.
 */
static void res_copy(const COMPOUND4res *res, u_int i, nfs_resop4 *out)
{
	memcpy(out, (const char *)res->resarray.resarray_val + (size_t)i * sizeof(*out),
	       sizeof(*out));
}

/* The result of the first (or, with `last`, the last) `op` in the reply, copied into `out`. */
bool nfs4_find_res(const COMPOUND4res *res, nfs_opnum4 op, bool last, nfs_resop4 *out)
{
	bool found = false;

	for (u_int i = 0; i < res->resarray.resarray_len; i++) {
		nfs_resop4 r;

		res_copy(res, i, &r);
		if (r.resop != op)
			continue;
		*out = r;
		found = true;
		if (!last)
			break;
	}
	return found;
}

/* ---- COMPOUND plumbing ----------------------------------------------------------------------- */

static void v4_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v4_call *c = private_data;
	COMPOUND4res *res = data;

	if (c->abandoned) {
		g_free(c);
		return;
	}
	c->done = 1;
	if (status == RPC_STATUS_TIMEOUT || status == RPC_STATUS_CANCEL) {
		c->err = -ETIMEDOUT;
	} else if (status != RPC_STATUS_SUCCESS || !res) {
		c->err = -ECONNRESET;
	} else {
		c->err = nfs4_status_errno(res->status);
		if (res->resarray.resarray_len > 0) {
			nfs_resop4 r;

			res_copy(res, res->resarray.resarray_len - 1, &r);
			c->ops->reached = r.resop;
		}
		if (res->status !=
		    NFS4_OK) /* as libnfs words it: nfs_error_lost_state() reads it */
			rpc_set_error(rpc, "NFS4: COMPOUND failed with NFS4ERR_%s",
				      nfs4_status_name((int)res->status));
	}
	if (res && status == RPC_STATUS_SUCCESS && c->decode && (c->err == 0 || c->decode_always))
		c->err = c->decode(c, res, c->err);
}

nfs_argop4 *nfs4_ops_add(struct v4_ops *o, nfs_opnum4 op)
{
	if (o->n == o->max) {
		o->max = o->max ? 2 * o->max : 16;
		o->op = g_renew(nfs_argop4, o->op, o->max);
	}
	memset(&o->op[o->n], 0, sizeof(o->op[0]));
	o->op[o->n].argop = op;
	return &o->op[o->n++];
}

void nfs4_ops_init(struct v4_ops *o)
{
	memset(o, 0, sizeof(*o));
	o->keep = g_ptr_array_new_with_free_func(g_free);
}

void nfs4_ops_free(struct v4_ops *o)
{
	g_free(o->op);
	g_ptr_array_free(o->keep, TRUE);
	if (o->cached)
		g_array_free(o->cached, TRUE);
}

/* What a LOOKUP of `name` takes in the encoded COMPOUND. */
size_t nfs4_lookup_bytes(const char *name)
{
	return 8 + (strlen(name) + 3) / 4 * 4;
}

static int decode_getfh(struct v4_call *c, COMPOUND4res *res, int first)
{
	GByteArray *fh = c->arg;
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_GETFH, true, &r) || r.nfs_resop4_u.opgetfh.status != NFS4_OK)
		return -EPROTO;
	g_byte_array_set_size(fh, 0);
	g_byte_array_append(fh,
			    (guint8 *)r.nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val,
			    r.nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len);
	return 0;
}

/* PUTFH of `fh` (which must outlive the COMPOUND), or PUTROOTFH for none. */
static void add_putfh(struct v4_ops *o, const void *fh, size_t len)
{
	if (!fh) {
		nfs4_ops_add(o, OP_PUTROOTFH);
	} else {
		nfs_argop4 *a = nfs4_ops_add(o, OP_PUTFH);

		a->nfs_argop4_u.opputfh.object.nfs_fh4_len = (u_int)len;
		a->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh;
	}
}

static void add_lookup(struct v4_ops *o, char *name)
{
	nfs_argop4 *a = nfs4_ops_add(o, OP_LOOKUP);

	a->nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
	a->nfs_argop4_u.oplookup.objname.utf8string_val = name;
}

void nfs4_ops_putfh(struct v4_ops *o, const void *fh, size_t len)
{
	void *copy = g_memdup2(fh, len);

	g_ptr_array_add(o->keep, copy);
	add_putfh(o, copy, len);
}

/* A walk that started at a kept directory's filehandle: the index of its PUTFH, and the key
 * (nfs_fhcache.c). */
struct v4_cached {
	unsigned int index;
	char *key;	/* in o->keep */
	gint64 expires; /* what is learnt from it is trusted no longer */
};

/*
 * Append "start at `full`" to the COMPOUND: PUTROOTFH and a LOOKUP per component. A long path
 * would not fit: libnfs 4.0 encodes a COMPOUND into 4096 bytes, and servers cap the operations
 * in one (nfs-ganesha: 100). So when the LOOKUPs would take more than `tail` bytes or
 * V4_TAIL_OPS operations, the leading components are walked first, V4_WALK_OPS at a time, in
 * COMPOUNDs of their own that end in GETFH, and this one starts from that filehandle (PUTFH).
 * LOOKUP never follows a symlink. With o->loc, a kept directory on the way is started from
 * (when the rest fits), and noted in o->cached for v4_run().
 */
int nfs4_ops_walk(struct v4_ops *o, struct nfs_context *nfs, const char *full, size_t tail)
{
	char *path = g_strdup(full), *save, *key = NULL;
	GPtrArray *names = g_ptr_array_new();
	GByteArray *fh = NULL;
	size_t bytes = 0;
	guint first = 0;
	int rc = 0;

	g_ptr_array_add(o->keep, path);
	for (char *tok = strtok_r(path, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		g_ptr_array_add(names, tok);
		bytes += nfs4_lookup_bytes(tok);
	}
	if (o->loc && o->loc->fhc) {
		GByteArray *kept = g_byte_array_new();
		size_t rest = 0;
		gint64 expires;
		guint depth;

		if (nfs_fhc_nearest(o->loc->fhc, names, o->walk_above, &depth, kept, &key,
				    &expires)) {
			for (guint i = depth; i < names->len; i++)
				rest += nfs4_lookup_bytes(names->pdata[i]);
			if (names->len - depth <= V4_TAIL_OPS && rest <= tail) {
				struct v4_cached c = { .index = o->n,
						       .key = key,
						       .expires = expires };

				if (!o->cached)
					o->cached = g_array_new(FALSE, FALSE, sizeof(c));
				g_array_append_val(o->cached, c);
				g_ptr_array_add(o->keep, key);
				nfs4_ops_putfh(o, kept->data, kept->len);
				for (guint i = depth; i < names->len; i++)
					add_lookup(o, names->pdata[i]);
				g_byte_array_free(kept, TRUE);
				goto out;
			}
			g_free(key);
		}
		g_byte_array_free(kept, TRUE);
	}
	while (names->len - first > V4_TAIL_OPS || bytes > tail) {
		struct v4_ops w;
		size_t chunk = 0;

		nfs4_ops_init(&w);
		add_putfh(&w, fh ? fh->data : NULL, fh ? fh->len : 0);
		while (first < names->len && w.n - 1 < V4_WALK_OPS &&
		       chunk + nfs4_lookup_bytes(names->pdata[first]) <= V4_WALK_BYTES) {
			chunk += nfs4_lookup_bytes(names->pdata[first]);
			bytes -= nfs4_lookup_bytes(names->pdata[first]);
			add_lookup(&w, names->pdata[first++]);
		}
		nfs4_ops_add(&w, OP_GETFH);
		if (!fh)
			fh = g_byte_array_new();
		rc = nfs4_ops_run(nfs, &w, decode_getfh, fh);
		nfs4_ops_free(&w);
		if (rc)
			goto out;
	}
	if (fh)
		nfs4_ops_putfh(o, fh->data, fh->len);
	else
		add_putfh(o, NULL, 0);
	while (first < names->len)
		add_lookup(o, names->pdata[first++]);
out:
	if (fh)
		g_byte_array_free(fh, TRUE);
	g_ptr_array_free(names, TRUE);
	return rc;
}

/* A COMPOUND that starts at `full` (see nfs4_ops_walk()), with the default room. */
static int v4_ops_at(struct v4_ops *o, struct nfs_loc *loc, struct nfs_context *nfs,
		     const char *full)
{
	int rc;

	nfs4_ops_init(o);
	o->loc = loc;
	rc = nfs4_ops_walk(o, nfs, full, V4_TAIL_BYTES);
	if (rc)
		nfs4_ops_free(o);
	return rc;
}

void nfs4_ops_getattr(struct v4_ops *o)
{
	GETATTR4args *ga = &nfs4_ops_add(o, OP_GETATTR)->nfs_argop4_u.opgetattr;

	ga->attr_request.bitmap4_len = 2;
	ga->attr_request.bitmap4_val = v4_attr_request;
}

/* ---- the server's transfer sizes ------------------------------------------------------------ */

struct server_attrs {
	uint32_t lease;
	uint64_t maxread, maxwrite;
};

static int decode_server(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct server_attrs *a = c->arg;
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_GETATTR, true, &r) || r.nfs_resop4_u.opgetattr.status != NFS4_OK)
		return -EPROTO;
	return nfs4_decode_server(&r.nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes,
				  &a->lease, &a->maxread, &a->maxwrite);
}

int nfs4_server_attrs(struct nfs_context *nfs, uint32_t *lease, uint64_t *maxread,
		      uint64_t *maxwrite)
{
	static uint32_t mask[1] = { (1u << FATTR4_LEASE_TIME) | (1u << FATTR4_MAXREAD) |
				    (1u << FATTR4_MAXWRITE) };
	struct server_attrs a = { 0, 0, 0 };
	GETATTR4args *ga;
	struct v4_ops o;
	int rc;

	nfs4_ops_init(&o);
	nfs4_ops_add(&o, OP_PUTROOTFH);
	ga = &nfs4_ops_add(&o, OP_GETATTR)->nfs_argop4_u.opgetattr;
	ga->attr_request.bitmap4_len = 1;
	ga->attr_request.bitmap4_val = mask;
	rc = nfs4_ops_run(nfs, &o, decode_server, &a);
	nfs4_ops_free(&o);
	*lease = a.lease;
	*maxread = a.maxread;
	*maxwrite = a.maxwrite;
	return rc;
}

/*
 * libnfs 4.0 encodes every COMPOUND into 4096 bytes (rpc_nfs4_compound_async()), so an NFSv4
 * WRITE carried at most 3.5 KiB, some 300 RPCs per MiB. Its NFSv3 WRITE sizes the buffer for
 * the data (rpc_allocate_pdu2()'s alloc_hint); the same functions, exported but not declared,
 * build a COMPOUND of any size here. The encoder lives in the PDU, whose layout libnfs keeps
 * private: the prefix below is libnfs 4.0's (include/libnfs-private.h), and it is checked once
 * against a PDU made to measure before it is trusted; otherwise writes stay small.
 */
struct rpc_pdu;
struct rpc_pdu *rpc_allocate_pdu2(struct rpc_context *rpc, int program, int version, int procedure,
				  rpc_cb cb, void *private_data, zdrproc_t zdr_decode_fn,
				  int zdr_decode_bufsize, size_t alloc_hint);
void rpc_free_pdu(struct rpc_context *rpc, struct rpc_pdu *pdu);
int rpc_queue_pdu(struct rpc_context *rpc, struct rpc_pdu *pdu);

#define V4_PDU_ENCODE_MIN 4096 /* libnfs' ZDR_ENCODEBUF_MINSIZE */

struct v4_pdu_prefix {
	struct rpc_pdu *next;
	uint32_t xid;
	ZDR zdr;
};

static struct rpc_pdu *v4_pdu_new(struct rpc_context *rpc, rpc_cb cb, void *priv, size_t payload)
{
	return rpc_allocate_pdu2(rpc, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, cb, priv,
				 (zdrproc_t)zdr_COMPOUND4res, sizeof(COMPOUND4res), payload);
}

static ZDR *v4_pdu_zdr(struct rpc_pdu *pdu)
{
	return &((struct v4_pdu_prefix *)pdu)->zdr;
}

static void v4_noop_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
}

static gpointer v4_big_check(gpointer data)
{
	const size_t probe = 123456; /* a size no other field of the PDU holds */
	struct rpc_context *rpc = data;
	struct rpc_pdu *pdu = v4_pdu_new(rpc, v4_noop_cb, NULL, probe);
	bool ok;
	ZDR *z;

	if (!pdu)
		return GINT_TO_POINTER(1);
	z = v4_pdu_zdr(pdu);
	/* an encoder of the size asked for, past the RPC header it wrote, inside its buffer */
	ok = z->x_op == ZDR_ENCODE && z->size == (int)(V4_PDU_ENCODE_MIN + probe) && z->pos > 24 &&
	     z->pos < 1024 && z->buf != NULL;
	rpc_free_pdu(rpc, pdu);
	if (!ok)
		g_message("this libnfs' RPC layout is not 4.0's: NFSv4 WRITEs are sent in %d-byte "
			  "pieces",
			  NFS4_WRITE_CHUNK);
	return GINT_TO_POINTER(ok ? 2 : 1);
}

bool nfs4_big_compounds(struct rpc_context *rpc)
{
	static GOnce once = G_ONCE_INIT;

	return GPOINTER_TO_INT(g_once(&once, v4_big_check, rpc)) == 2;
}

int nfs4_compound_send(struct rpc_context *rpc, rpc_cb cb, COMPOUND4args *args, void *priv,
		       size_t payload)
{
	struct rpc_pdu *pdu;

	if (!nfs4_big_compounds(rpc))
		return -ENOTSUP;
	pdu = v4_pdu_new(rpc, cb, priv, payload);
	if (!pdu)
		return -ENOMEM;
	if (!zdr_COMPOUND4args(v4_pdu_zdr(pdu), args)) {
		rpc_set_error(rpc, "Failed to encode COMPOUND4args");
		rpc_free_pdu(rpc, pdu);
		return -ENOMEM;
	}
	if (rpc_queue_pdu(rpc, pdu) != 0) /* only over UDP, which frees the PDU then */
		return -ENOMEM;
	return 0;
}

/* Send the COMPOUND and wait for its answer; decode runs inside the callback. */
static int v4_run_once(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg,
		       bool decode_always)
{
	struct v4_call *c = g_new0(struct v4_call, 1);
	COMPOUND4args args;
	int rc;

	memset(&args, 0, sizeof(args));
	args.argarray.argarray_len = o->n;
	args.argarray.argarray_val = o->op;
	c->decode = decode;
	c->decode_always = decode_always;
	c->arg = arg;
	c->ops = o;
	o->reached = OP_ILLEGAL;
	rc = rpc_nfs4_compound_async(nfs_get_rpc_context(nfs), v4_cb, &args, c);
	if (rc != 0) {
		g_free(c);
		/* -2: the arguments did not fit libnfs' 4096-byte encoding buffer */
		return rc == -2 ? -ENAMETOOLONG : -ENOMEM;
	}
	rc = nfs_event_loop(nfs, &c->done, nfs_call_deadline(nfs));
	if (rc && !c->done) {
		c->abandoned = true; /* its callback frees it, if it ever runs */
		return rc;
	}
	rc = c->err;
	g_free(c);
	return rc;
}

/* Replace each PUTFH of a kept directory by PUTROOTFH and the LOOKUPs of its path. */
static void v4_unkeep(struct v4_ops *o)
{
	nfs_argop4 *old = o->op;
	unsigned int n = o->n;

	o->op = NULL;
	o->n = o->max = 0;
	for (unsigned int i = 0; i < n; i++) {
		const struct v4_cached *c = NULL;

		for (guint k = 0; o->cached && k < o->cached->len && !c; k++)
			if (g_array_index(o->cached, struct v4_cached, k).index == i)
				c = &g_array_index(o->cached, struct v4_cached, k);
		if (!c) {
			*nfs4_ops_add(o, old[i].argop) = old[i];
			continue;
		}
		add_putfh(o, NULL, 0);
		for (char *name = c->key + 1; *name;) {
			char *end = strchrnul(name, '/');
			char *part = g_strndup(name, (gsize)(end - name));

			g_ptr_array_add(o->keep, part);
			add_lookup(o, part);
			name = *end ? end + 1 : end;
		}
	}
	g_free(old);
	g_array_set_size(o->cached, 0);
}

/* Run the COMPOUND. A kept directory's filehandle the server calls stale (the directory was
 * removed, or the server restarted with a new export) is forgotten, and the COMPOUND runs once
 * more from the root: a stale filehandle never reaches the caller for a path that exists. */
static int v4_run(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg,
		  bool decode_always)
{
	int rc = v4_run_once(nfs, o, decode, arg, decode_always);

	if (rc == -ESTALE && o->cached && o->cached->len > 0) {
		for (guint k = 0; k < o->cached->len; k++)
			nfs_fhc_drop(o->loc->fhc, g_array_index(o->cached, struct v4_cached, k).key,
				     false);
		v4_unkeep(o);
		rc = v4_run_once(nfs, o, decode, arg, decode_always);
	}
	return rc;
}

int nfs4_ops_run(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg)
{
	return v4_run(nfs, o, decode, arg, false);
}

int nfs4_ops_run_always(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg)
{
	return v4_run(nfs, o, decode, arg, true);
}

int nfs4_decode_getattr_res(const COMPOUND4res *res, struct stat *st)
{
	nfs_resop4 r;

	/* the last GETATTR (after SETATTR or CREATE, the object's) */
	if (!nfs4_find_res(res, OP_GETATTR, true, &r) || r.nfs_resop4_u.opgetattr.status != NFS4_OK)
		return -EPROTO;
	return nfs4_decode_fattr(&r.nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, st,
				 NULL);
}

static int decode_getattr(struct v4_call *c, COMPOUND4res *res, int err)
{
	return c->arg ? nfs4_decode_getattr_res(res, c->arg) : 0;
}

struct getattr_out {
	struct stat *st;
	GByteArray *fh;
};

static int decode_getattr_fh(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct getattr_out *out = c->arg;
	int rc = nfs4_decode_getattr_res(res, out->st);

	if (rc == 0 && S_ISDIR(out->st->st_mode) && out->fh)
		decode_getfh(&(struct v4_call){ .arg = out->fh }, res, 0);
	return rc;
}

/* The attributes of `path`; a directory's filehandle is kept on the way (nfs4_fhcache). */
int nfs4_getattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st)
{
	struct getattr_out out = { .st = st, .fh = loc->fhc ? g_byte_array_new() : NULL };
	gint64 not_after = 0;
	struct v4_ops o;
	int rc;

	/* Not from the path's own filehandle: its last name is looked up again, so that what is
	 * kept follows a directory renamed or replaced by others (and is not kept alive by its
	 * own use). */
	nfs4_ops_init(&o);
	o.loc = loc;
	o.walk_above = true;
	rc = nfs4_ops_walk(&o, nfs, path, V4_TAIL_BYTES);
	if (rc) {
		nfs4_ops_free(&o);
		goto out_free;
	}
	if (out.fh)
		nfs4_ops_add(&o, OP_GETFH);
	nfs4_ops_getattr(&o);
	rc = nfs4_ops_run(nfs, &o, decode_getattr_fh, &out);
	/* learnt from a kept directory: trusted no longer than what it was learnt from, so that
	 * every kept path is checked from the root once per attr-timeout */
	for (guint k = 0; o.cached && k < o.cached->len; k++) {
		gint64 e = g_array_index(o.cached, struct v4_cached, k).expires;

		if (not_after == 0 || e < not_after)
			not_after = e;
	}
	nfs4_ops_free(&o);
	if (rc == 0 && out.fh && out.fh->len > 0)
		nfs_fhc_put(loc->fhc, path, out.fh->data, out.fh->len, not_after);
out_free:
	if (out.fh)
		g_byte_array_free(out.fh, TRUE);
	return rc;
}

/* ---- SETATTR --------------------------------------------------------------------------------- */

int nfs4_setattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path,
		 const struct stat *attr, unsigned int to_set, struct stat *st)
{
	GByteArray *vals = g_byte_array_new();
	uint32_t mask[2] = { 0, 0 };
	SETATTR4args *sa;
	struct v4_ops o;
	char num[16];
	int rc;

	/* values in the order of their attribute numbers */
	if (to_set & FF_SET_SIZE) {
		mask[0] |= 1u << FATTR4_SIZE;
		nfs4_put_u64(vals, (uint64_t)attr->st_size);
	}
	if (to_set & FF_SET_MODE) {
		mask[1] |= 1u << (FATTR4_MODE - 32);
		nfs4_put_u32(vals, attr->st_mode & 07777);
	}
	if (to_set & FF_SET_UID) {
		mask[1] |= 1u << (FATTR4_OWNER - 32);
		g_snprintf(num, sizeof(num), "%u", (unsigned int)attr->st_uid);
		nfs4_put_string(vals, num);
	}
	if (to_set & FF_SET_GID) {
		mask[1] |= 1u << (FATTR4_OWNER_GROUP - 32);
		g_snprintf(num, sizeof(num), "%u", (unsigned int)attr->st_gid);
		nfs4_put_string(vals, num);
	}
	if (to_set & (FF_SET_ATIME | FF_SET_ATIME_NOW)) {
		mask[1] |= 1u << (FATTR4_TIME_ACCESS_SET - 32);
		nfs4_put_settime(vals, to_set & FF_SET_ATIME_NOW, &attr->st_atim);
	}
	if (to_set & (FF_SET_MTIME | FF_SET_MTIME_NOW)) {
		mask[1] |= 1u << (FATTR4_TIME_MODIFY_SET - 32);
		nfs4_put_settime(vals, to_set & FF_SET_MTIME_NOW, &attr->st_mtim);
	}

	rc = v4_ops_at(&o, loc, nfs, path);
	if (rc)
		goto out_vals;
	if (mask[0] || mask[1]) {
		sa = &nfs4_ops_add(&o, OP_SETATTR)->nfs_argop4_u.opsetattr;
		/* the anonymous stateid (all zeros) */
		sa->obj_attributes.attrmask.bitmap4_len = 2;
		sa->obj_attributes.attrmask.bitmap4_val = mask;
		sa->obj_attributes.attr_vals.attrlist4_len = vals->len;
		sa->obj_attributes.attr_vals.attrlist4_val = (char *)vals->data;
	}
	nfs4_ops_getattr(&o);
	rc = nfs4_ops_run(nfs, &o, decode_getattr, st);
	nfs4_ops_free(&o);
out_vals:
	g_byte_array_free(vals, TRUE);
	return rc;
}

/* ---- CREATE of everything but regular files ------------------------------------------------ */

int nfs4_create(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
		dev_t rdev, const char *target, struct stat *st)
{
	char *dir = g_path_get_dirname(path), *name = g_path_get_basename(path);
	GByteArray *vals = g_byte_array_new();
	uint32_t mask[2] = { 0, 1u << (FATTR4_MODE - 32) };
	size_t tail = V4_TAIL_BYTES;
	CREATE4args *ca;
	struct v4_ops o;
	int rc;

	nfs4_put_u32(vals, mode & 07777);
	if (target && strlen(target) > V4_TAIL_BYTES)
		tail = 0; /* a long target leaves no room for LOOKUPs: start at the directory */
	nfs4_ops_init(&o);
	o.loc = loc;
	rc = nfs4_ops_walk(&o, nfs, dir, tail);
	if (rc)
		goto out_free;
	ca = &nfs4_ops_add(&o, OP_CREATE)->nfs_argop4_u.opcreate;
	switch (mode & S_IFMT) {
	case S_IFDIR:
		ca->objtype.type = NF4DIR;
		break;
	case S_IFLNK:
		ca->objtype.type = NF4LNK;
		ca->objtype.createtype4_u.linkdata.utf8string_len = (u_int)strlen(target);
		ca->objtype.createtype4_u.linkdata.utf8string_val = (char *)target;
		mask[1] = 0; /* a symlink's mode means nothing */
		break;
	case S_IFIFO:
		ca->objtype.type = NF4FIFO;
		break;
	case S_IFSOCK:
		ca->objtype.type = NF4SOCK;
		break;
	case S_IFCHR:
	case S_IFBLK:
		ca->objtype.type = S_ISCHR(mode) ? NF4CHR : NF4BLK;
		ca->objtype.createtype4_u.devdata.specdata1 = major(rdev);
		ca->objtype.createtype4_u.devdata.specdata2 = minor(rdev);
		break;
	default:
		rc = -EINVAL;
		goto out_free;
	}
	ca->objname.utf8string_len = (u_int)strlen(name);
	ca->objname.utf8string_val = name;
	ca->createattrs.attrmask.bitmap4_len = 2;
	ca->createattrs.attrmask.bitmap4_val = mask;
	ca->createattrs.attr_vals.attrlist4_len = mask[1] ? vals->len : 0;
	ca->createattrs.attr_vals.attrlist4_val = (char *)vals->data;
	nfs4_ops_getattr(&o); /* CREATE leaves the new object as the current filehandle */
	rc = nfs4_ops_run(nfs, &o, decode_getattr, st);
out_free:
	nfs4_ops_free(&o);
	g_byte_array_free(vals, TRUE);
	g_free(dir);
	g_free(name);
	return rc;
}

/* ---- LINK and RENAME ------------------------------------------------------------------------- */

/* `first`, SAVEFH, `second`, then `op` (LINK or RENAME) with its names: the saved filehandle
 * is the source, the current one the target directory. */
static int two_paths(struct nfs_loc *loc, struct nfs_context *nfs, const char *first,
		     const char *second, nfs_opnum4 opnum, const char *oldname, const char *newname)
{
	struct v4_ops o;
	nfs_argop4 *op;
	int rc;

	nfs4_ops_init(&o);
	o.loc = loc;
	rc = nfs4_ops_walk(&o, nfs, first, V4_TAIL_BYTES);
	if (rc)
		goto out_free;
	nfs4_ops_add(&o, OP_SAVEFH);
	rc = nfs4_ops_walk(&o, nfs, second, V4_TAIL_BYTES);
	if (rc)
		goto out_free;
	op = nfs4_ops_add(&o, opnum);
	if (opnum == OP_LINK) {
		op->nfs_argop4_u.oplink.newname.utf8string_len = (u_int)strlen(newname);
		op->nfs_argop4_u.oplink.newname.utf8string_val = (char *)newname;
	} else {
		op->nfs_argop4_u.oprename.oldname.utf8string_len = (u_int)strlen(oldname);
		op->nfs_argop4_u.oprename.oldname.utf8string_val = (char *)oldname;
		op->nfs_argop4_u.oprename.newname.utf8string_len = (u_int)strlen(newname);
		op->nfs_argop4_u.oprename.newname.utf8string_val = (char *)newname;
	}
	rc = nfs4_ops_run(nfs, &o, NULL, NULL);
out_free:
	nfs4_ops_free(&o);
	return rc;
}

/* LOOKUP never follows a symlink: a symlink is linked itself. */
int nfs4_link(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, const char *newdir,
	      const char *newname)
{
	return two_paths(loc, nfs, path, newdir, OP_LINK, NULL, newname);
}

/* A directory renamed, or replaced by the rename, takes what is below it along: its kept
 * filehandles are forgotten (whether the RENAME worked or not: it may have, unanswered). */
int nfs4_rename(struct nfs_loc *loc, struct nfs_context *nfs, const char *olddir,
		const char *oldname, const char *newdir, const char *newname)
{
	char *from = g_build_filename(olddir, oldname, NULL),
	     *to = g_build_filename(newdir, newname, NULL);
	int rc = two_paths(loc, nfs, olddir, newdir, OP_RENAME, oldname, newname);

	nfs_fhc_drop(loc->fhc, from, true);
	nfs_fhc_drop(loc->fhc, to, true);
	g_free(from);
	g_free(to);
	return rc;
}

/* ---- READLINK ------------------------------------------------------------------------------ */

struct readlink_out {
	char *buf;
	size_t size;
	ssize_t len;
};

static int decode_readlink(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct readlink_out *out = c->arg;
	const linktext4 *link;
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_READLINK, false, &r) ||
	    r.nfs_resop4_u.opreadlink.status != NFS4_OK)
		return -EPROTO;
	link = &r.nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link;
	if (link->utf8string_len > out->size)
		return -ENAMETOOLONG;
	memcpy(out->buf, link->utf8string_val, link->utf8string_len);
	out->len = link->utf8string_len;
	return 0;
}

ssize_t nfs4_readlink(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, char *buf,
		      size_t size)
{
	struct readlink_out out = { buf, size, 0 };
	struct v4_ops o;
	int rc;

	rc = v4_ops_at(&o, loc, nfs, path);
	if (rc)
		return rc;
	nfs4_ops_add(&o, OP_READLINK);
	rc = nfs4_ops_run(nfs, &o, decode_readlink, &out);
	nfs4_ops_free(&o);
	return rc ? rc : out.len;
}

/* ---- REMOVE of a given type ------------------------------------------------------------------ */

/* REMOVE removes any type: check the type first within the same COMPOUND,
 *   PUTROOTFH, LOOKUP <parent...>, SAVEFH, LOOKUP name, [N]VERIFY type=NF4DIR, RESTOREFH, REMOVE
 * so that rmdir of a file is ENOTDIR and unlink of a directory EISDIR, in one round trip. */
int nfs4_remove(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, bool dir)
{
	char *parent = g_path_get_dirname(path), *name = g_path_get_basename(path);
	uint32_t mask[1] = { 1u << FATTR4_TYPE };
	unsigned char type[4] = { 0, 0, 0, NF4DIR };
	nfs_argop4 *op;
	fattr4 *fa;
	struct v4_ops o;
	int rc;

	rc = v4_ops_at(&o, loc, nfs, parent);
	if (rc)
		goto out_free;
	nfs4_ops_add(&o, OP_SAVEFH);
	op = nfs4_ops_add(&o, OP_LOOKUP);
	op->nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
	op->nfs_argop4_u.oplookup.objname.utf8string_val = name;
	if (dir)
		fa = &nfs4_ops_add(&o, OP_VERIFY)->nfs_argop4_u.opverify.obj_attributes;
	else
		fa = &nfs4_ops_add(&o, OP_NVERIFY)->nfs_argop4_u.opnverify.obj_attributes;
	fa->attrmask.bitmap4_len = 1;
	fa->attrmask.bitmap4_val = mask;
	fa->attr_vals.attrlist4_len = sizeof(type);
	fa->attr_vals.attrlist4_val = (char *)type;
	nfs4_ops_add(&o, OP_RESTOREFH);
	op = nfs4_ops_add(&o, OP_REMOVE);
	op->nfs_argop4_u.opremove.target.utf8string_len = (u_int)strlen(name);
	op->nfs_argop4_u.opremove.target.utf8string_val = name;
	rc = nfs4_ops_run(nfs, &o, NULL, NULL);
	if (rc == -EINVAL) /* NFS4ERR_NOT_SAME / NFS4ERR_SAME from the type check */
		rc = dir ? -ENOTDIR : -EISDIR;
	nfs4_ops_free(&o);
	if (dir)
		nfs_fhc_drop(loc->fhc, path, true);
out_free:
	g_free(parent);
	g_free(name);
	return rc;
}

/* ---- READDIR --------------------------------------------------------------------------------- */

struct readdir_state {
	nfs4_dirent_fn cb;
	void *arg;
	uint64_t cookie;
	char verf[NFS4_VERIFIER_SIZE];
	bool eof;
	int stop; /* nonzero: what cb returned to stop */
};

static int decode_readdir(struct v4_call *c, COMPOUND4res *res, int err)
{
	struct readdir_state *s = c->arg;
	const READDIR4resok *ok;
	nfs_resop4 r;

	if (!nfs4_find_res(res, OP_READDIR, false, &r) ||
	    r.nfs_resop4_u.opreaddir.status != NFS4_OK)
		return -EPROTO;
	ok = &r.nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
	memcpy(s->verf, ok->cookieverf, sizeof(s->verf));
	/* each entry4 is zdr_malloc()ed, misaligned: see res_copy() */
	for (const entry4 *next = ok->reply.entries; next;) {
		entry4 e;
		char *name;
		struct stat st;
		bool full;
		int rc;

		memcpy(&e, next, sizeof(e));
		next = e.nextentry;
		s->cookie = e.cookie;
		name = g_strndup(e.name.utf8string_val, e.name.utf8string_len);
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/') ||
		    !*name) {
			g_free(name);
			continue;
		}
		rc = nfs4_decode_fattr(&e.attrs, &st, &full);
		if (rc == 0)
			rc = s->cb(s->arg, name, &st, full);
		g_free(name);
		if (rc) {
			s->stop = rc;
			return 0;
		}
	}
	s->eof = ok->reply.eof;
	return 0;
}

int nfs4_readdir(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, nfs4_dirent_fn cb,
		 void *arg)
{
	struct readdir_state s = { .cb = cb, .arg = arg };

	while (!s.eof && !s.stop) {
		READDIR4args *ra;
		struct v4_ops o;
		int rc;

		rc = v4_ops_at(&o, loc, nfs, path);
		if (rc)
			return rc;
		ra = &nfs4_ops_add(&o, OP_READDIR)->nfs_argop4_u.opreaddir;
		ra->cookie = s.cookie;
		memcpy(ra->cookieverf, s.verf, sizeof(s.verf));
		ra->dircount = V4_READDIR_MAXCOUNT;
		ra->maxcount = V4_READDIR_MAXCOUNT;
		ra->attr_request.bitmap4_len = 2;
		ra->attr_request.bitmap4_val = v4_readdir_request;
		__atomic_fetch_add(&nfs_stat_readdir_rpcs, 1, __ATOMIC_RELAXED);
		rc = nfs4_ops_run(nfs, &o, decode_readdir, &s);
		nfs4_ops_free(&o);
		if (rc)
			return rc;
	}
	return s.stop < 0 ? s.stop : 0;
}
