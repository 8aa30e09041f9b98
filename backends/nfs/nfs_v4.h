/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4.h - the COMPOUND plumbing that nfs_v4.c (metadata) and nfs_v4_file.c (open files) share:
 * a COMPOUND is built as a growing array of operations, starts at a path (walked in pieces when
 * long), and is run synchronously on a leased context.
 */
#ifndef FEDFUSE_NFS_V4_H
#define FEDFUSE_NFS_V4_H

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "backends/nfs/nfs.h"

/* What one COMPOUND may spend on LOOKUPs of its path (bytes and operations), and what the
 * COMPOUNDs that walk a longer path in pieces may: all within libnfs 4.0's 4096-byte encoding
 * buffer, with room for the credential, filehandles and the operation itself. */
#define V4_TAIL_BYTES 1024
#define V4_TAIL_OPS 16
#define V4_WALK_BYTES 2560
#define V4_WALK_OPS 32

struct v4_ops {
	nfs_argop4 *op;
	unsigned int n, max;
	GPtrArray *keep;     /* what the operations point into, freed with them */
	nfs_opnum4 reached;  /* after running: the last operation the server answered */
	struct nfs_loc *loc; /* set before a walk: its directory filehandles may start it */
	GArray *cached;	     /* struct v4_cached: the walks that started at one of those */
	bool walk_above;     /* ...but never at the walked path's own */
};

struct v4_call;
/* Decode a reply; `err` is the COMPOUND's result (0, or -errno when the decoder runs always). */
typedef int (*v4_decode_fn)(struct v4_call *c, COMPOUND4res *res, int err);

struct v4_call {
	int done;
	int err;
	bool abandoned;	    /* the caller left (event loop failure): free on callback */
	bool decode_always; /* decode failed COMPOUNDs too */
	v4_decode_fn decode;
	void *arg; /* for decode */
	struct v4_ops *ops;
	struct rpc_context *rpc;
};

/* A context's NFSv4 client identity and its one open-owner (nfs_v4_file.c). */
struct nfs4_client {
	uint64_t clientid;
	uint32_t seqid;	    /* the open-owner's next seqid */
	unsigned int owner; /* the open-owner's number: a new one when its seqid is unknown */
	char id[96];
};

/* An open file: the stateid its OPEN gave, and its filehandle. */
struct nfs4_file {
	uint64_t serial; /* this open's, unique in the process: what lock state is bound to */
	stateid4 stateid;
	u_int fhlen;
	char fh[NFS4_FHSIZE];
};

/* Whether an operation that bears an open-owner's or a lock-owner's seqid counted it up, given
 * its status (RFC 7530 9.1.7). */
bool nfs4_seqid_counts(nfsstat4 status);
/* After a COMPOUND whose operation bearing the open-owner's seqid (OPEN, OPEN_CONFIRM, CLOSE, a
 * LOCK of a new lock-owner) ended with `status` (when the reply had it: `status_seen`): count
 * it up as the server did; without a reply nobody knows, so start a new open-owner. */
void nfs4_open_seqid_after(struct nfs4_client *cl, const struct v4_ops *o, bool status_seen,
			   nfsstat4 status);

void nfs4_ops_init(struct v4_ops *o);
void nfs4_ops_free(struct v4_ops *o);
/* Append an operation (zeroed but for its number) and return it. */
nfs_argop4 *nfs4_ops_add(struct v4_ops *o, nfs_opnum4 op);
/* Append PUTFH of a copy of `fh`. */
void nfs4_ops_putfh(struct v4_ops *o, const void *fh, size_t len);
/* Append PUTROOTFH and a LOOKUP per component of `full` (below the server's root), or, when
 * those would take more than `tail` bytes or V4_TAIL_OPS operations, walk the leading
 * components first and append PUTFH of where that ended and LOOKUPs of the rest. */
int nfs4_ops_walk(struct v4_ops *o, struct nfs_context *nfs, const char *full, size_t tail);
/* Append GETATTR of the attributes decode_fattr4() reads. */
void nfs4_ops_getattr(struct v4_ops *o);
/* Run the COMPOUND; `decode` (may be NULL) reads a successful reply inside the callback. */
int nfs4_ops_run(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg);
/* The same, decoding failed replies too. */
int nfs4_ops_run_always(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg);
/* The first (or, with `last`, the last) result of operation `op` in the reply, copied. */
bool nfs4_find_res(const COMPOUND4res *res, nfs_opnum4 op, bool last, nfs_resop4 *out);
/* The attributes of the last GETATTR in the reply, into `st`. */
int nfs4_decode_getattr_res(const COMPOUND4res *res, struct stat *st);
/* rpc_nfs4_compound_async() for a COMPOUND that carries `payload` bytes of data (a WRITE's)
 * beyond libnfs 4.0's fixed 4096-byte encoding buffer. -ENOTSUP when this libnfs cannot (see
 * nfs4_big_compounds()); -ENOMEM when the COMPOUND could not be queued. */
int nfs4_compound_send(struct rpc_context *rpc, rpc_cb cb, COMPOUND4args *args, void *priv,
		       size_t payload);
/* Whether nfs4_compound_send() can carry a payload with this libnfs (checked once). */
bool nfs4_big_compounds(struct rpc_context *rpc);
/* What a LOOKUP of `name` takes in an encoded COMPOUND. */
size_t nfs4_lookup_bytes(const char *name);

/* ---- attributes in XDR (nfs_v4_attr.c) ----------------------------------------------------- */

/* Decode a fattr4 answering the GETATTR of nfs4_ops_getattr() or a READDIR's entries into `st`.
 * *full (when not NULL) tells whether the server sent the attributes, rather than an
 * rdattr_error and whatever it could: then `st` has st_ino and the type if they came, zeros
 * otherwise. */
int nfs4_decode_fattr(const fattr4 *fa, struct stat *st, bool *full);
/* maxread and maxwrite, where the server sent them (else left alone). */
/* FATTR4_LEASE_TIME, FATTR4_MAXREAD and FATTR4_MAXWRITE, each left as it is when not given. */
int nfs4_decode_server(const fattr4 *fa, uint32_t *lease, uint64_t *maxread, uint64_t *maxwrite);
/* XDR of attribute values: unsigned 32 and 64 bits, a string, a settime4. */
void nfs4_put_u32(GByteArray *b, uint32_t v);
void nfs4_put_u64(GByteArray *b, uint64_t v);
void nfs4_put_string(GByteArray *b, const char *s);
void nfs4_put_settime(GByteArray *b, bool now, const struct timespec *ts);

#endif /* FEDFUSE_NFS_V4_H */
