/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4.c - NFSv4 COMPOUNDs built by hand where libnfs 4.0's high-level calls are wrong: its
 * READDIR leaves dirents' fileid uninitialised, its GETATTR asks for no fsid or rawdev, its
 * READLINK result has garbage after the target, its chmod/chown/utimes OPEN the object (fail on
 * directories, follow symlinks; utimes(NULL) crashes), its mknod makes no fifos, its unlink and
 * rmdir remove any type; and it cannot encode a WRITE of 4 KiB or more (every COMPOUND goes into
 * a fixed 4096-byte buffer), so writes go in pipelined chunks. Each COMPOUND here starts at the
 * server's root: PUTROOTFH, one LOOKUP per component (LOOKUP never follows a symlink), then the
 * operation.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "backends/nfs/nfs.h"

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

/* ---- XDR reading of fattr4 values ------------------------------------------------------------ */

struct xdr_in {
	const unsigned char *p, *end;
};

static int get_u32(struct xdr_in *x, uint32_t *v)
{
	if (x->end - x->p < 4)
		return -EPROTO;
	*v = (uint32_t)x->p[0] << 24 | (uint32_t)x->p[1] << 16 | (uint32_t)x->p[2] << 8 | x->p[3];
	x->p += 4;
	return 0;
}

static int get_u64(struct xdr_in *x, uint64_t *v)
{
	uint32_t hi, lo;

	if (get_u32(x, &hi) || get_u32(x, &lo))
		return -EPROTO;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* An owner or group: a number with Only_Numeric_Owners; anything else becomes nobody. */
static int get_owner(struct xdr_in *x, uint32_t *id)
{
	uint32_t len, padded;
	char buf[16];

	if (get_u32(x, &len))
		return -EPROTO;
	padded = (len + 3) & ~3u;
	if (len > 1024 || (size_t)(x->end - x->p) < padded)
		return -EPROTO;
	*id = 65534;
	if (len > 0 && len < sizeof(buf)) {
		char *end;
		unsigned long v;

		memcpy(buf, x->p, len);
		buf[len] = '\0';
		v = strtoul(buf, &end, 10);
		if (*end == '\0' && buf[0] >= '0' && buf[0] <= '9' && v <= UINT32_MAX)
			*id = (uint32_t)v;
	}
	x->p += padded;
	return 0;
}

static int get_time(struct xdr_in *x, struct timespec *ts)
{
	uint64_t sec;
	uint32_t nsec;

	if (get_u64(x, &sec) || get_u32(x, &nsec))
		return -EPROTO;
	ts->tv_sec = (time_t)(int64_t)sec;
	ts->tv_nsec = nsec < 1000000000 ? nsec : 0;
	return 0;
}

static mode_t v4_type_mode(uint32_t type)
{
	switch (type) {
	case NF4REG:
		return S_IFREG;
	case NF4DIR:
		return S_IFDIR;
	case NF4BLK:
		return S_IFBLK;
	case NF4CHR:
		return S_IFCHR;
	case NF4LNK:
		return S_IFLNK;
	case NF4SOCK:
		return S_IFSOCK;
	case NF4FIFO:
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

/* Decode a fattr4 answering v4_attr_request or v4_readdir_request into `st`. *full (when not
 * NULL) tells whether the server sent the attributes, rather than an rdattr_error and whatever
 * it could: then `st` has st_ino and the type if they came, zeros otherwise. */
static int decode_fattr4(const fattr4 *fa, struct stat *st, bool *full)
{
	struct xdr_in x = { (const unsigned char *)fa->attr_vals.attrlist4_val,
			    (const unsigned char *)fa->attr_vals.attrlist4_val +
				    fa->attr_vals.attrlist4_len };
	uint32_t type = NF4REG, mode = 0, rderr = NFS4_OK;
	bool have_type = false;

	memset(st, 0, sizeof(*st));
	st->st_blksize = NFS_XFER_MAX;
	for (unsigned int bit = 0; bit < 32 * fa->attrmask.bitmap4_len && bit < 64; bit++) {
		uint64_t u64 = 0, minor = 0;
		uint32_t u32 = 0, u32b = 0;
		int rc = 0;

		if (!(fa->attrmask.bitmap4_val[bit / 32] & (1u << (bit % 32))))
			continue;
		switch (bit) {
		case FATTR4_TYPE:
			rc = get_u32(&x, &type);
			have_type = true;
			break;
		case FATTR4_SIZE:
			rc = get_u64(&x, &u64);
			st->st_size = (off_t)u64;
			break;
		case FATTR4_FSID:
			rc = get_u64(&x, &u64) ?: get_u64(&x, &minor);
			st->st_dev = (dev_t)(u64 ^ (minor << 32 | minor >> 32));
			break;
		case FATTR4_RDATTR_ERROR:
			rc = get_u32(&x, &rderr);
			break;
		case FATTR4_FILEID:
			rc = get_u64(&x, &u64);
			st->st_ino = (ino_t)u64;
			break;
		case FATTR4_MODE:
			rc = get_u32(&x, &mode);
			break;
		case FATTR4_NUMLINKS:
			rc = get_u32(&x, &u32);
			st->st_nlink = u32;
			break;
		case FATTR4_OWNER:
			rc = get_owner(&x, &u32);
			st->st_uid = u32;
			break;
		case FATTR4_OWNER_GROUP:
			rc = get_owner(&x, &u32);
			st->st_gid = u32;
			break;
		case FATTR4_RAWDEV:
			rc = get_u32(&x, &u32) ?: get_u32(&x, &u32b);
			st->st_rdev = makedev(u32, u32b);
			break;
		case FATTR4_SPACE_USED:
			rc = get_u64(&x, &u64);
			st->st_blocks = (blkcnt_t)((u64 + 511) / 512);
			break;
		case FATTR4_TIME_ACCESS:
			rc = get_time(&x, &st->st_atim);
			break;
		case FATTR4_TIME_METADATA:
			rc = get_time(&x, &st->st_ctim);
			break;
		case FATTR4_TIME_MODIFY:
			rc = get_time(&x, &st->st_mtim);
			break;
		case FATTR4_MOUNTED_ON_FILEID: /* after FATTR4_FILEID, which it never replaces */
			rc = get_u64(&x, &u64);
			if (st->st_ino == 0)
				st->st_ino = (ino_t)u64;
			break;
		default:
			return -EPROTO; /* not asked for: its size is unknown */
		}
		if (rc)
			return rc;
	}
	if (!full) { /* GETATTR, which asks for no rdattr_error */
		if (rderr != NFS4_OK)
			return nfs4_status_errno((int)rderr);
		st->st_mode = v4_type_mode(type) | (mode & 07777);
		return 0;
	}
	*full = rderr == NFS4_OK && have_type;
	st->st_mode = have_type ? v4_type_mode(type) : 0;
	if (*full)
		st->st_mode |= mode & 07777;
	return 0;
}

/* ---- COMPOUND plumbing ----------------------------------------------------------------------- */

struct v4_call;
typedef int (*v4_decode_fn)(struct v4_call *c, COMPOUND4res *res, int first);

struct v4_call {
	int done;
	int err;
	bool abandoned; /* the caller left (event loop failure): free on callback */
	v4_decode_fn decode;
	void *arg; /* for decode */
};

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
	} else if (res->status != NFS4_OK) {
		c->err = nfs4_status_errno(res->status);
	} else {
		c->err = 0;
	}
	/* Decode also on failure: READDIR may want to know which op failed. */
	if (res && status == RPC_STATUS_SUCCESS && c->decode && c->err == 0)
		c->err = c->decode(c, res, 0);
}

/* The COMPOUND "PUTROOTFH, LOOKUP <each component of full>" followed by `extra` free slots. */
struct v4_ops {
	nfs_argop4 *op;
	unsigned int n; /* used */
	char *path;	/* components point into this copy */
};

static int v4_ops_init(struct v4_ops *o, const char *full, unsigned int extra)
{
	unsigned int max = 2 + extra;
	char *s;

	o->path = g_strdup(full);
	for (s = o->path; *s; s++)
		if (*s == '/')
			max++;
	o->op = g_new0(nfs_argop4, max);
	o->n = 0;
	o->op[o->n++].argop = OP_PUTROOTFH;
	for (char *tok = strtok_r(o->path, "/", &s); tok; tok = strtok_r(NULL, "/", &s)) {
		LOOKUP4args *la = &o->op[o->n].nfs_argop4_u.oplookup;

		o->op[o->n++].argop = OP_LOOKUP;
		la->objname.utf8string_len = (u_int)strlen(tok);
		la->objname.utf8string_val = tok;
	}
	return 0;
}

static void v4_ops_free(struct v4_ops *o)
{
	g_free(o->op);
	g_free(o->path);
}

static void v4_add_getattr(struct v4_ops *o)
{
	GETATTR4args *ga = &o->op[o->n].nfs_argop4_u.opgetattr;

	o->op[o->n++].argop = OP_GETATTR;
	ga->attr_request.bitmap4_len = 2;
	ga->attr_request.bitmap4_val = v4_attr_request;
}

/* Send the COMPOUND and wait for its answer; decode runs inside the callback. */
static int v4_run(struct nfs_context *nfs, struct v4_ops *o, v4_decode_fn decode, void *arg)
{
	struct v4_call *c = g_new0(struct v4_call, 1);
	COMPOUND4args args;
	gint64 deadline;
	int rc;

	memset(&args, 0, sizeof(args));
	args.argarray.argarray_len = o->n;
	args.argarray.argarray_val = o->op;
	c->decode = decode;
	c->arg = arg;
	rc = rpc_nfs4_compound_async(nfs_get_rpc_context(nfs), v4_cb, &args, c);
	if (rc != 0) {
		g_free(c);
		/* -2: the arguments did not fit libnfs' 4096-byte encoding buffer */
		return rc == -2 ? -ENAMETOOLONG : -ENOMEM;
	}
	/* libnfs expires the RPC after its timeout; give it a second more to say so. */
	deadline = g_get_monotonic_time() + ((gint64)MAX(nfs_get_timeout(nfs), 0) + 1000) * 1000;
	rc = nfs_event_loop(nfs, &c->done, deadline);
	if (rc && !c->done) {
		c->abandoned = true; /* its callback frees it, if it ever runs */
		return rc;
	}
	rc = c->err;
	g_free(c);
	return rc;
}

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
static bool find_res(const COMPOUND4res *res, nfs_opnum4 op, bool last, nfs_resop4 *out)
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

static int decode_getattr(struct v4_call *c, COMPOUND4res *res, int first)
{
	nfs_resop4 r;

	/* the last GETATTR (after SETATTR or CREATE, the object's) */
	if (!find_res(res, OP_GETATTR, true, &r) || r.nfs_resop4_u.opgetattr.status != NFS4_OK)
		return -EPROTO;
	return c->arg ? decode_fattr4(&r.nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes,
				      c->arg, NULL)
		      : 0;
}

int nfs4_getattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st)
{
	struct v4_ops o;
	int rc;

	v4_ops_init(&o, path, 1);
	v4_add_getattr(&o);
	rc = v4_run(nfs, &o, decode_getattr, st);
	v4_ops_free(&o);
	return rc;
}

/* ---- SETATTR --------------------------------------------------------------------------------- */

static void put_u32(GByteArray *b, uint32_t v)
{
	unsigned char c[4] = { v >> 24, v >> 16, v >> 8, v };

	g_byte_array_append(b, c, 4);
}

static void put_u64(GByteArray *b, uint64_t v)
{
	put_u32(b, (uint32_t)(v >> 32));
	put_u32(b, (uint32_t)v);
}

static void put_string(GByteArray *b, const char *s)
{
	static const unsigned char zero[3];
	size_t len = strlen(s);

	put_u32(b, (uint32_t)len);
	g_byte_array_append(b, (const unsigned char *)s, (guint)len);
	if (len % 4)
		g_byte_array_append(b, zero, (guint)(4 - len % 4));
}

static void put_settime(GByteArray *b, bool now, const struct timespec *ts)
{
	if (now) {
		put_u32(b, SET_TO_SERVER_TIME4);
		return;
	}
	put_u32(b, SET_TO_CLIENT_TIME4);
	put_u64(b, (uint64_t)(int64_t)ts->tv_sec);
	put_u32(b, (uint32_t)ts->tv_nsec);
}

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
		put_u64(vals, (uint64_t)attr->st_size);
	}
	if (to_set & FF_SET_MODE) {
		mask[1] |= 1u << (FATTR4_MODE - 32);
		put_u32(vals, attr->st_mode & 07777);
	}
	if (to_set & FF_SET_UID) {
		mask[1] |= 1u << (FATTR4_OWNER - 32);
		g_snprintf(num, sizeof(num), "%u", (unsigned int)attr->st_uid);
		put_string(vals, num);
	}
	if (to_set & FF_SET_GID) {
		mask[1] |= 1u << (FATTR4_OWNER_GROUP - 32);
		g_snprintf(num, sizeof(num), "%u", (unsigned int)attr->st_gid);
		put_string(vals, num);
	}
	if (to_set & (FF_SET_ATIME | FF_SET_ATIME_NOW)) {
		mask[1] |= 1u << (FATTR4_TIME_ACCESS_SET - 32);
		put_settime(vals, to_set & FF_SET_ATIME_NOW, &attr->st_atim);
	}
	if (to_set & (FF_SET_MTIME | FF_SET_MTIME_NOW)) {
		mask[1] |= 1u << (FATTR4_TIME_MODIFY_SET - 32);
		put_settime(vals, to_set & FF_SET_MTIME_NOW, &attr->st_mtim);
	}

	v4_ops_init(&o, path, 2);
	if (mask[0] || mask[1]) {
		sa = &o.op[o.n].nfs_argop4_u.opsetattr;
		o.op[o.n++].argop = OP_SETATTR;
		/* the anonymous stateid (all zeros) */
		sa->obj_attributes.attrmask.bitmap4_len = 2;
		sa->obj_attributes.attrmask.bitmap4_val = mask;
		sa->obj_attributes.attr_vals.attrlist4_len = vals->len;
		sa->obj_attributes.attr_vals.attrlist4_val = (char *)vals->data;
	}
	v4_add_getattr(&o);
	rc = v4_run(nfs, &o, decode_getattr, st);
	v4_ops_free(&o);
	g_byte_array_free(vals, TRUE);
	return rc;
}

/* ---- CREATE of special files ----------------------------------------------------------------- */

int nfs4_mknod(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
	       dev_t rdev, struct stat *st)
{
	char *dir = g_path_get_dirname(path), *name = g_path_get_basename(path);
	GByteArray *vals = g_byte_array_new();
	uint32_t mask[2] = { 0, 1u << (FATTR4_MODE - 32) };
	CREATE4args *ca;
	struct v4_ops o;
	int rc;

	put_u32(vals, mode & 07777);
	v4_ops_init(&o, dir, 2);
	ca = &o.op[o.n].nfs_argop4_u.opcreate;
	o.op[o.n++].argop = OP_CREATE;
	switch (mode & S_IFMT) {
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
	ca->createattrs.attr_vals.attrlist4_len = vals->len;
	ca->createattrs.attr_vals.attrlist4_val = (char *)vals->data;
	v4_add_getattr(&o); /* CREATE leaves the new object as the current filehandle */
	rc = v4_run(nfs, &o, decode_getattr, st);
out_free:
	v4_ops_free(&o);
	g_byte_array_free(vals, TRUE);
	g_free(dir);
	g_free(name);
	return rc;
}

/* ---- LINK ------------------------------------------------------------------------------------ */

/* PUTROOTFH, LOOKUP <path...>, SAVEFH, PUTROOTFH, LOOKUP <newdir...>, LINK newname: the saved
 * filehandle is the object (LOOKUP never follows a symlink), the current one the directory. */
int nfs4_link(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, const char *newdir,
	      const char *newname)
{
	char *dir = g_strdup(newdir), *s;
	unsigned int extra = 4;
	struct v4_ops o;
	int rc;

	for (s = dir; *s; s++)
		if (*s == '/')
			extra++;
	v4_ops_init(&o, path, extra);
	o.op[o.n++].argop = OP_SAVEFH;
	o.op[o.n++].argop = OP_PUTROOTFH;
	for (char *tok = strtok_r(dir, "/", &s); tok; tok = strtok_r(NULL, "/", &s)) {
		LOOKUP4args *la = &o.op[o.n].nfs_argop4_u.oplookup;

		o.op[o.n++].argop = OP_LOOKUP;
		la->objname.utf8string_len = (u_int)strlen(tok);
		la->objname.utf8string_val = tok;
	}
	o.op[o.n].argop = OP_LINK;
	o.op[o.n].nfs_argop4_u.oplink.newname.utf8string_len = (u_int)strlen(newname);
	o.op[o.n++].nfs_argop4_u.oplink.newname.utf8string_val = (char *)newname;
	rc = v4_run(nfs, &o, NULL, NULL);
	v4_ops_free(&o);
	g_free(dir);
	return rc;
}

/* ---- READLINK ------------------------------------------------------------------------------ */

struct readlink_out {
	char *buf;
	size_t size;
	ssize_t len;
};

static int decode_readlink(struct v4_call *c, COMPOUND4res *res, int first)
{
	struct readlink_out *out = c->arg;
	const linktext4 *link;
	nfs_resop4 r;

	if (!find_res(res, OP_READLINK, false, &r) || r.nfs_resop4_u.opreadlink.status != NFS4_OK)
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

	v4_ops_init(&o, path, 1);
	o.op[o.n++].argop = OP_READLINK;
	rc = v4_run(nfs, &o, decode_readlink, &out);
	v4_ops_free(&o);
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
	fattr4 *fa;
	struct v4_ops o;
	int rc;

	v4_ops_init(&o, parent, 5);
	o.op[o.n++].argop = OP_SAVEFH;
	o.op[o.n].argop = OP_LOOKUP;
	o.op[o.n].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(name);
	o.op[o.n++].nfs_argop4_u.oplookup.objname.utf8string_val = name;
	if (dir) {
		o.op[o.n].argop = OP_VERIFY;
		fa = &o.op[o.n++].nfs_argop4_u.opverify.obj_attributes;
	} else {
		o.op[o.n].argop = OP_NVERIFY;
		fa = &o.op[o.n++].nfs_argop4_u.opnverify.obj_attributes;
	}
	fa->attrmask.bitmap4_len = 1;
	fa->attrmask.bitmap4_val = mask;
	fa->attr_vals.attrlist4_len = sizeof(type);
	fa->attr_vals.attrlist4_val = (char *)type;
	o.op[o.n++].argop = OP_RESTOREFH;
	o.op[o.n].argop = OP_REMOVE;
	o.op[o.n].nfs_argop4_u.opremove.target.utf8string_len = (u_int)strlen(name);
	o.op[o.n++].nfs_argop4_u.opremove.target.utf8string_val = name;
	rc = v4_run(nfs, &o, NULL, NULL);
	if (rc == -EINVAL) /* NFS4ERR_NOT_SAME / NFS4ERR_SAME from the type check */
		rc = dir ? -ENOTDIR : -EISDIR;
	v4_ops_free(&o);
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

static int decode_readdir(struct v4_call *c, COMPOUND4res *res, int first)
{
	struct readdir_state *s = c->arg;
	const READDIR4resok *ok;
	nfs_resop4 r;

	if (!find_res(res, OP_READDIR, false, &r) || r.nfs_resop4_u.opreaddir.status != NFS4_OK)
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
		rc = decode_fattr4(&e.attrs, &st, &full);
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

		v4_ops_init(&o, path, 1);
		ra = &o.op[o.n].nfs_argop4_u.opreaddir;
		o.op[o.n++].argop = OP_READDIR;
		ra->cookie = s.cookie;
		memcpy(ra->cookieverf, s.verf, sizeof(s.verf));
		ra->dircount = V4_READDIR_MAXCOUNT;
		ra->maxcount = V4_READDIR_MAXCOUNT;
		ra->attr_request.bitmap4_len = 2;
		ra->attr_request.bitmap4_val = v4_readdir_request;
		__atomic_fetch_add(&nfs_stat_readdir_rpcs, 1, __ATOMIC_RELAXED);
		rc = v4_run(nfs, &o, decode_readdir, &s);
		v4_ops_free(&o);
		if (rc)
			return rc;
	}
	return s.stop < 0 ? s.stop : 0;
}

/* ---- WRITE in chunks ------------------------------------------------------------------------- */

struct wchunk {
	struct wpipe *pipe;
	uint64_t off;
	size_t len;
};

struct wpipe {
	int inflight;
	int err;
	uint64_t short_at; /* lowest offset a short WRITE stopped at, or UINT64_MAX */
};

static void wchunk_cb(int status, struct nfs_context *nfs, void *data, void *private_data)
{
	struct wchunk *ch = private_data;
	struct wpipe *p = ch->pipe;

	p->inflight--;
	if (status < 0) {
		if (!p->err)
			p->err = nfs_map_error(nfs, status);
	} else if ((size_t)status < ch->len && ch->off + (uint64_t)status < p->short_at) {
		p->short_at = ch->off + (uint64_t)status;
	}
	g_free(ch);
}

ssize_t nfs4_pwrite_chunked(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off, size_t size,
			    const void *buf, gint64 deadline)
{
	uint64_t pos = off, end = off + size;

	while (pos < end) {
		struct wpipe p = { .short_at = UINT64_MAX };
		uint64_t next = pos;

		while ((next < end && !p.err) || p.inflight > 0) {
			struct pollfd pfd;
			gint64 left;
			int n;

			while (next < end && !p.err && p.inflight < NFS4_WRITE_DEPTH) {
				struct wchunk *ch = g_new(struct wchunk, 1);

				ch->pipe = &p;
				ch->off = next;
				ch->len = MIN((uint64_t)NFS4_WRITE_CHUNK, end - next);
				if (nfs_pwrite_async(nfs, fh, ch->off, ch->len,
						     (const char *)buf + (ch->off - off), wchunk_cb,
						     ch) != 0) {
					g_free(ch);
					p.err = nfs_map_error(nfs, -1);
					break;
				}
				p.inflight++;
				next += ch->len;
			}
			if (p.inflight == 0)
				break;
			/* Chunks in flight point at `p`: wait for every callback, whatever. libnfs
			 * expires each RPC after its timeout, so this ends. */
			pfd.fd = nfs_get_fd(nfs);
			pfd.events = nfs_which_events(nfs);
			pfd.revents = 0;
			left = deadline - g_get_monotonic_time();
			n = poll(&pfd, 1, left > 0 ? (int)MIN(left / 1000 + 1, 100) : 100);
			if (n < 0 && errno == EINTR)
				continue;
			if (nfs_service(nfs, n < 0 ? POLLERR : pfd.revents) < 0 && !p.err)
				p.err = -ECONNRESET;
			if (p.err == -ECONNRESET && nfs_queue_length(nfs) == 0)
				break; /* the connection died and took every call with it */
		}
		if (p.err)
			return p.err;
		if (p.short_at == UINT64_MAX)
			break;
		pos = p.short_at; /* rewrite from the first short WRITE on: writes are idempotent */
	}
	return (ssize_t)size;
}
