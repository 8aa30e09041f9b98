/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v3.c - NFSv3 calls built by hand: WRITE3 and COMMIT3 for nfs_write.c (libnfs 4.0's
 * hide a WRITE's status and the write verifier), READ3 for nfs_read.c (by filehandle, many in
 * flight), SETATTR3 and LINK3.
 *
 * SETATTR: libnfs 4.0 sets times through struct timeval (microseconds: tar and rsync see their
 * nanoseconds cut) and sends one SETATTR per attribute group; here every attribute goes in one
 * SETATTR3 with nanoseconds or the server's clock, whose reply carries the new attributes.
 *
 * Objects are found by one LOOKUP3 per component, which never follows a symlink, from the
 * nearest directory whose filehandle is kept (nfs_fhcache.c) or from the mount's root. libnfs
 * 4.0 walks every path from the root and asks GETATTR3 at the end: a file five directories
 * down cost six calls to stat, where here it costs one LOOKUP3, whose reply carries the
 * attributes.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "backends/nfs/nfs.h"

/* What nfs_get_fh() returns: libnfs-private.h's struct nfs_fh, which libnfs does not install. */
struct libnfs_fh {
	int len;
	char *val;
};

struct v3_call {
	int done;
	int err;
	bool abandoned;	 /* the caller left (event loop failure): free on callback */
	GByteArray *fh;	 /* LOOKUP3: the object's filehandle */
	struct stat *st; /* LOOKUP3, GETATTR3, SETATTR3: the attributes, when the server sent them */
	bool have_st;
	char *verf; /* COMMIT3: the server's write verifier */
};

static mode_t v3_type_mode(ftype3 type)
{
	switch (type) {
	case NF3DIR:
		return S_IFDIR;
	case NF3BLK:
		return S_IFBLK;
	case NF3CHR:
		return S_IFCHR;
	case NF3LNK:
		return S_IFLNK;
	case NF3SOCK:
		return S_IFSOCK;
	case NF3FIFO:
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

static void stat_from_fattr3(const fattr3 *fa, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = (dev_t)fa->fsid;
	st->st_ino = (ino_t)fa->fileid;
	st->st_mode = v3_type_mode(fa->type) | (fa->mode & 07777);
	st->st_nlink = fa->nlink;
	st->st_uid = fa->uid;
	st->st_gid = fa->gid;
	st->st_size = (off_t)fa->size;
	st->st_blocks = (blkcnt_t)((fa->used + 511) / 512);
	st->st_blksize = NFS_XFER_MAX;
	st->st_rdev = makedev(fa->rdev.specdata1, fa->rdev.specdata2);
	st->st_atim.tv_sec = fa->atime.seconds;
	st->st_atim.tv_nsec = fa->atime.nseconds;
	st->st_mtim.tv_sec = fa->mtime.seconds;
	st->st_mtim.tv_nsec = fa->mtime.nseconds;
	st->st_ctim.tv_sec = fa->ctime.seconds;
	st->st_ctim.tv_nsec = fa->ctime.nseconds;
}

static bool v3_call_status(struct v3_call *c, int status, void *data)
{
	if (c->abandoned) {
		if (c->fh)
			g_byte_array_free(c->fh, TRUE);
		g_free(c);
		return false;
	}
	c->done = 1;
	if (status == RPC_STATUS_TIMEOUT || status == RPC_STATUS_CANCEL)
		c->err = -ETIMEDOUT;
	else if (status != RPC_STATUS_SUCCESS || !data)
		c->err = -ECONNRESET;
	return c->err == 0;
}

static void lookup_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	LOOKUP3res *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK) {
		c->err = nfs3_status_errno(res->status);
		return;
	}
	g_byte_array_append(c->fh, (guint8 *)res->LOOKUP3res_u.resok.object.data.data_val,
			    res->LOOKUP3res_u.resok.object.data.data_len);
	if (res->LOOKUP3res_u.resok.obj_attributes.attributes_follow) {
		stat_from_fattr3(&res->LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes,
				 c->st);
		c->have_st = true;
	}
}

static void getattr_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	GETATTR3res *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK) {
		c->err = nfs3_status_errno(res->status);
		return;
	}
	stat_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, c->st);
	c->have_st = true;
}

/* For calls whose reply matters by its status alone: every *3res begins with it. */
static void status_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	const nfsstat3 *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (*res != NFS3_OK)
		c->err = nfs3_status_errno(*res);
}

static void setattr_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	SETATTR3res *res = data;
	const post_op_attr *after;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK) {
		c->err = nfs3_status_errno(res->status);
		return;
	}
	after = &res->SETATTR3res_u.resok.obj_wcc.after;
	if (after->attributes_follow && c->st) {
		stat_from_fattr3(&after->post_op_attr_u.attributes, c->st);
		c->have_st = true;
	}
}

static void commit_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	COMMIT3res *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK)
		c->err = nfs3_status_errno(res->status);
	else
		memcpy(c->verf, res->COMMIT3res_u.resok.verf, NFS_VERF_SIZE);
}

/* Wait for the call's callback until `deadline`; on failure leave `c` to it. Returns its
 * error. */
static int v3_wait_until(struct nfs_context *nfs, struct v3_call *c, gint64 deadline)
{
	int rc = nfs_event_loop(nfs, &c->done, deadline);

	if (rc && !c->done) {
		c->abandoned = true;
		return rc;
	}
	return c->err;
}

static int v3_wait(struct nfs_context *nfs, struct v3_call *c)
{
	return v3_wait_until(nfs, c, nfs_call_deadline(nfs));
}

/* Wait for a call without a filehandle to bring, queued with `queued`; its error. */
static int call_wait(struct nfs_context *nfs, struct v3_call *c, int queued)
{
	int rc;

	if (queued != 0) {
		g_free(c);
		return -ENOMEM;
	}
	rc = v3_wait(nfs, c);
	if (!(rc && !c->done)) /* else abandoned: its callback frees it */
		g_free(c);
	return rc;
}

#define STALE_PROBE_USEC G_USEC_PER_SEC

/* The filehandle of the mount's root, from libnfs (nfs_open() of "/"), asked once. */
static int root_fh(struct nfs_loc *loc, struct nfs_context *nfs, GByteArray *out)
{
	struct libnfs_fh *fh;
	struct nfsfh *root;
	int rc;

	g_mutex_lock(&loc->node_lock);
	if (loc->v3_root)
		g_byte_array_append(out, loc->v3_root->data, loc->v3_root->len);
	g_mutex_unlock(&loc->node_lock);
	if (out->len > 0)
		return 0;
	rc = nfs_sync_open(nfs, "/", O_RDONLY, &root);
	if (rc < 0)
		return rc;
	fh = (struct libnfs_fh *)nfs_get_fh(root);
	if (fh && fh->len > 0 && fh->len <= NFS3_FHSIZE)
		g_byte_array_append(out, (guint8 *)fh->val, (guint)fh->len);
	else
		rc = -EPROTO;
	nfs_close(nfs, root);
	if (rc == 0) {
		g_mutex_lock(&loc->node_lock);
		if (!loc->v3_root) {
			loc->v3_root = g_byte_array_new();
			g_byte_array_append(loc->v3_root, out->data, out->len);
		}
		g_mutex_unlock(&loc->node_lock);
	}
	return rc;
}

/* The server called the root's filehandle stale (it restarted with another export). */
static void forget_root(struct nfs_loc *loc)
{
	g_mutex_lock(&loc->node_lock);
	if (loc->v3_root)
		g_byte_array_free(g_steal_pointer(&loc->v3_root), TRUE);
	g_mutex_unlock(&loc->node_lock);
}

/* LOOKUP3 of `name` in directory `dir`: the object's filehandle into `out`, its attributes into
 * `st` where the server sent them (*have_st). Given up at `deadline`. */
static int lookup1(struct nfs_context *nfs, const GByteArray *dir, const char *name,
		   GByteArray *out, struct stat *st, bool *have_st, gint64 deadline)
{
	struct v3_call *c = g_new0(struct v3_call, 1);
	LOOKUP3args args;
	int rc;

	c->fh = g_byte_array_new();
	c->st = st;
	memset(&args, 0, sizeof(args));
	args.what.dir.data.data_len = dir->len;
	args.what.dir.data.data_val = (char *)dir->data;
	args.what.name = (char *)name;
	if (rpc_nfs3_lookup_async(nfs_get_rpc_context(nfs), lookup_cb, &args, c) != 0) {
		g_byte_array_free(c->fh, TRUE);
		g_free(c);
		return -ENOMEM;
	}
	rc = v3_wait_until(nfs, c, deadline);
	if (rc && !c->done)
		return rc; /* abandoned: its callback frees it */
	*have_st = c->have_st;
	g_byte_array_set_size(out, 0);
	g_byte_array_append(out, c->fh->data, c->fh->len);
	g_byte_array_free(c->fh, TRUE);
	g_free(c);
	return rc;
}

int nfs3_getattr(struct nfs_context *nfs, const GByteArray *fh, struct stat *st)
{
	struct v3_call *c = g_new0(struct v3_call, 1);
	GETATTR3args args;

	c->st = st;
	memset(&args, 0, sizeof(args));
	args.object.data.data_len = fh->len;
	args.object.data.data_val = (char *)fh->data;
	return call_wait(nfs, c,
			 rpc_nfs3_getattr_async(nfs_get_rpc_context(nfs), getattr_cb, &args, c));
}

/*
 * The filehandle of `path` (below the mount) into `fh`, and with `st` its attributes. The walk
 * starts at the nearest kept directory (with `st`, the nearest above the object: its LOOKUP3
 * brings the attributes), else at the root, and keeps the directories it meets, trusted no
 * longer than the one it started from. A kept filehandle the server calls stale is forgotten
 * and the walk made once more: a stale filehandle never reaches the caller for a path that
 * exists.
 *
 * nfs-ganesha at times does not answer at all a LOOKUP3 in a directory removed behind its back
 * (it drops the request, as an NFSv3 server may, for the client to send it again); waiting the
 * location's whole timeout for it would take the location down. So the first LOOKUP3 from a
 * kept filehandle is given STALE_PROBE_USEC, and without an answer the filehandle is taken as
 * stale: the walk is made from the root, each LOOKUP3 with the whole timeout.
 */
static int walk(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, GByteArray *fh,
		struct stat *st)
{
	char *copy = g_strdup(path), *save, *key = NULL;
	GPtrArray *names = g_ptr_array_new();
	GByteArray *next = g_byte_array_new();
	GString *at = g_string_new(NULL);
	bool cached, have, retried = false;
	gint64 expires;
	struct stat cur;
	guint depth;
	int rc;

	for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save))
		g_ptr_array_add(names, tok);
again:
	g_byte_array_set_size(fh, 0);
	g_clear_pointer(&key, g_free);
	depth = 0;
	expires = 0;
	have = false;
	cached = nfs_fhc_nearest(loc->fhc, names, st != NULL, &depth, fh, &key, &expires);
	rc = cached ? 0 : root_fh(loc, nfs, fh);
	g_string_assign(at, cached ? key : "");
	for (guint i = depth; rc == 0 && i < names->len; i++) {
		bool probe = cached && i == depth;

		rc = lookup1(nfs, fh, names->pdata[i], next, &cur, &have,
			     probe ? MIN(nfs_call_deadline(nfs),
					 g_get_monotonic_time() + STALE_PROBE_USEC)
				   : nfs_call_deadline(nfs));
		if (rc == -ETIMEDOUT && probe)
			rc = -ESTALE;
		if (rc)
			break;
		g_string_append_c(at, '/');
		g_string_append(at, names->pdata[i]);
		if (have && S_ISDIR(cur.st_mode))
			nfs_fhc_put(loc->fhc, at->str, next->data, next->len, expires);
		g_byte_array_set_size(fh, 0);
		g_byte_array_append(fh, next->data, next->len);
	}
	if (rc == -ESTALE && !retried) {
		retried = true;
		if (cached)
			nfs_fhc_drop(loc->fhc, key, false);
		else
			forget_root(loc);
		goto again;
	}
	if (rc == 0 && st) {
		if (have && depth < names->len)
			*st = cur;
		else
			rc = nfs3_getattr(nfs, fh, st);
	}
	g_free(key);
	g_string_free(at, TRUE);
	g_byte_array_free(next, TRUE);
	g_ptr_array_unref(names);
	g_free(copy);
	return rc;
}

int nfs3_lstat(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st)
{
	GByteArray *fh = g_byte_array_new();
	int rc = walk(loc, nfs, path, fh, st);

	g_byte_array_free(fh, TRUE);
	return rc;
}

GByteArray *nfs3_fh_of(struct nfsfh *fh)
{
	const struct libnfs_fh *lfh = (const struct libnfs_fh *)nfs_get_fh(fh);
	GByteArray *out = g_byte_array_new();

	g_byte_array_append(out, (const guint8 *)lfh->val, (guint)lfh->len);
	return out;
}

/* The filehandle of `path` (below the mount). */
static int resolve(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, GByteArray **out)
{
	GByteArray *fh = g_byte_array_new();
	int rc = walk(loc, nfs, path, fh, NULL);

	if (rc) {
		g_byte_array_free(fh, TRUE);
		return rc;
	}
	*out = fh;
	return 0;
}

int nfs3_link(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, const char *newdir,
	      const char *newname)
{
	GByteArray *fh, *dirfh;
	struct v3_call *c;
	LINK3args args;
	int rc;

	rc = resolve(loc, nfs, path, &fh);
	if (rc)
		return rc;
	rc = resolve(loc, nfs, newdir, &dirfh);
	if (rc)
		goto out_fh;
	memset(&args, 0, sizeof(args));
	args.file.data.data_len = fh->len;
	args.file.data.data_val = (char *)fh->data;
	args.link.dir.data.data_len = dirfh->len;
	args.link.dir.data.data_val = (char *)dirfh->data;
	args.link.name = (char *)newname;
	c = g_new0(struct v3_call, 1);
	rc = call_wait(nfs, c, rpc_nfs3_link_async(nfs_get_rpc_context(nfs), status_cb, &args, c));
	g_byte_array_free(dirfh, TRUE);
out_fh:
	g_byte_array_free(fh, TRUE);
	return rc;
}

/* What a CREATE3 or MKDIR3 says of the object it made, where the server said it. */
static void made(struct v3_call *c, const post_op_fh3 *fh, const post_op_attr *attr)
{
	if (fh->handle_follows)
		g_byte_array_append(c->fh, (guint8 *)fh->post_op_fh3_u.handle.data.data_val,
				    fh->post_op_fh3_u.handle.data.data_len);
	if (attr->attributes_follow) {
		stat_from_fattr3(&attr->post_op_attr_u.attributes, c->st);
		c->have_st = true;
	}
}

static void create_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	CREATE3res *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK)
		c->err = nfs3_status_errno(res->status);
	else
		made(c, &res->CREATE3res_u.resok.obj, &res->CREATE3res_u.resok.obj_attributes);
}

static void mkdir_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct v3_call *c = private_data;
	MKDIR3res *res = data;

	if (!v3_call_status(c, status, data))
		return;
	if (res->status != NFS3_OK)
		c->err = nfs3_status_errno(res->status);
	else
		made(c, &res->MKDIR3res_u.resok.obj, &res->MKDIR3res_u.resok.obj_attributes);
}

/* CREATE3 (GUARDED) or MKDIR3 of `path` with `mode`: its filehandle into *fhp, its attributes
 * into `st`. */
static int make(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, bool dir,
		mode_t mode, GByteArray **fhp, struct stat *st)
{
	char *dirpath = g_path_get_dirname(path), *name = g_path_get_basename(path);
	GByteArray *dirfh = g_byte_array_new(), *fh = NULL;
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	sattr3 attr = { .mode = { .set_it = 1, .set_mode3_u.mode = mode & 07777 } };
	struct v3_call *c;
	bool have_st = false;
	int rc, queued;

	rc = walk(loc, nfs, dirpath, dirfh, NULL);
	if (rc)
		goto out;
	c = g_new0(struct v3_call, 1);
	c->fh = g_byte_array_new();
	c->st = st;
	if (dir) {
		MKDIR3args args = {
			.where = { .dir = { .data = { dirfh->len, (char *)dirfh->data } },
				   .name = name },
			.attributes = attr
		};

		queued = rpc_nfs3_mkdir_async(rpc, mkdir_cb, &args, c);
	} else {
		CREATE3args args = {
			.where = { .dir = { .data = { dirfh->len, (char *)dirfh->data } },
				   .name = name },
			.how = { .mode = GUARDED, /* EEXIST for a name taken */
				 .createhow3_u.obj_attributes = attr }
		};

		queued = rpc_nfs3_create_async(rpc, create_cb, &args, c);
	}
	if (queued != 0) {
		g_byte_array_free(c->fh, TRUE);
		g_free(c);
		rc = -ENOMEM;
		goto out;
	}
	rc = v3_wait(nfs, c);
	if (rc && !c->done)
		goto out; /* abandoned: its callback frees it */
	fh = g_steal_pointer(&c->fh);
	have_st = c->have_st;
	g_free(c);
	if (rc)
		goto out;
	/* A server need not send the new object's handle and attributes: ask for what is missing */
	if (fh->len == 0)
		rc = lookup1(nfs, dirfh, name, fh, st, &have_st, nfs_call_deadline(nfs));
	if (rc == 0 && !have_st)
		rc = nfs3_getattr(nfs, fh, st);
out:
	if (rc == 0)
		*fhp = g_steal_pointer(&fh);
	if (fh)
		g_byte_array_free(fh, TRUE);
	g_byte_array_free(dirfh, TRUE);
	g_free(dirpath);
	g_free(name);
	return rc;
}

int nfs3_create(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
		GByteArray **fhp, struct stat *st)
{
	return make(loc, nfs, path, false, mode, fhp, st);
}

int nfs3_mkdir(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, mode_t mode,
	       struct stat *st)
{
	GByteArray *fh;
	int rc = make(loc, nfs, path, true, mode, &fh, st);

	if (rc == 0) {
		nfs_fhc_put(loc->fhc, path, fh->data, fh->len, 0);
		g_byte_array_free(fh, TRUE);
	}
	return rc;
}

int nfs3_remove(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, bool dir)
{
	char *dirpath = g_path_get_dirname(path), *name = g_path_get_basename(path);
	GByteArray *dirfh = g_byte_array_new();
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	diropargs3 what;
	int rc;

	rc = walk(loc, nfs, dirpath, dirfh, NULL);
	if (rc == 0) {
		struct v3_call *c = g_new0(struct v3_call, 1);

		what = (diropargs3){ .dir = { .data = { dirfh->len, (char *)dirfh->data } },
				     .name = name };
		if (dir) {
			RMDIR3args args = { .object = what };

			rc = call_wait(nfs, c, rpc_nfs3_rmdir_async(rpc, status_cb, &args, c));
		} else {
			REMOVE3args args = { .object = what };

			rc = call_wait(nfs, c, rpc_nfs3_remove_async(rpc, status_cb, &args, c));
		}
	}
	if (dir)
		nfs_fhc_drop(loc->fhc, path, true);
	g_byte_array_free(dirfh, TRUE);
	g_free(dirpath);
	g_free(name);
	return rc;
}

int nfs3_rename(struct nfs_loc *loc, struct nfs_context *nfs, const char *from, const char *to)
{
	char *fromdir = g_path_get_dirname(from), *fromname = g_path_get_basename(from);
	char *todir = g_path_get_dirname(to), *toname = g_path_get_basename(to);
	GByteArray *fromfh = g_byte_array_new(), *tofh = g_byte_array_new();
	int rc;

	rc = walk(loc, nfs, fromdir, fromfh, NULL);
	if (rc == 0)
		rc = walk(loc, nfs, todir, tofh, NULL);
	if (rc == 0) {
		struct v3_call *c = g_new0(struct v3_call, 1);
		RENAME3args args = {
			.from = { .dir = { .data = { fromfh->len, (char *)fromfh->data } },
				  .name = fromname },
			.to = { .dir = { .data = { tofh->len, (char *)tofh->data } },
				.name = toname },
		};

		rc = call_wait(nfs, c,
			       rpc_nfs3_rename_async(nfs_get_rpc_context(nfs), status_cb, &args,
						     c));
	}
	/* A directory renamed, or replaced by the rename, takes what is below it along (whether
	 * the RENAME3 worked or not: it may have, unanswered). */
	nfs_fhc_drop(loc->fhc, from, true);
	nfs_fhc_drop(loc->fhc, to, true);
	g_byte_array_free(fromfh, TRUE);
	g_byte_array_free(tofh, TRUE);
	g_free(fromdir);
	g_free(fromname);
	g_free(todir);
	g_free(toname);
	return rc;
}

/* NFSv3 times are unsigned 32-bit seconds (1970 to 2106): clamp what lies outside, as the
 * kernel does for a filesystem with a narrower range (timestamp_truncate()), rather than let
 * the seconds wrap to another date. */
void nfs3_time_clamp(struct timespec *ts)
{
	if (ts->tv_sec < 0) {
		ts->tv_sec = 0;
		ts->tv_nsec = 0;
	} else if ((uint64_t)ts->tv_sec > UINT32_MAX) {
		ts->tv_sec = UINT32_MAX;
		ts->tv_nsec = 0;
	}
}

static void set_time(time_how *how, nfstime3 *t, bool given, bool now, const struct timespec *ts)
{
	if (!given) {
		*how = DONT_CHANGE;
	} else if (now) {
		*how = SET_TO_SERVER_TIME;
	} else {
		struct timespec v = *ts;

		nfs3_time_clamp(&v);
		*how = SET_TO_CLIENT_TIME;
		t->seconds = (u_int)v.tv_sec;
		t->nseconds = (u_int)v.tv_nsec;
	}
}

int nfs3_setattr(struct nfs_loc *loc, struct nfs_context *nfs, const char *path,
		 const struct stat *attr, unsigned int to_set, struct stat *st, bool *have_st)
{
	struct v3_call *c;
	SETATTR3args args;
	GByteArray *fh;
	int rc;

	*have_st = false;
	rc = resolve(loc, nfs, path, &fh);
	if (rc)
		return rc;
	memset(&args, 0, sizeof(args));
	args.object.data.data_len = fh->len;
	args.object.data.data_val = (char *)fh->data;
	if (to_set & FF_SET_MODE) {
		args.new_attributes.mode.set_it = 1;
		args.new_attributes.mode.set_mode3_u.mode = attr->st_mode & 07777;
	}
	if (to_set & FF_SET_UID) {
		args.new_attributes.uid.set_it = 1;
		args.new_attributes.uid.set_uid3_u.uid = attr->st_uid;
	}
	if (to_set & FF_SET_GID) {
		args.new_attributes.gid.set_it = 1;
		args.new_attributes.gid.set_gid3_u.gid = attr->st_gid;
	}
	if (to_set & FF_SET_SIZE) {
		args.new_attributes.size.set_it = 1;
		args.new_attributes.size.set_size3_u.size = (uint64_t)attr->st_size;
	}
	set_time(&args.new_attributes.atime.set_it, &args.new_attributes.atime.set_atime_u.atime,
		 to_set & (FF_SET_ATIME | FF_SET_ATIME_NOW), to_set & FF_SET_ATIME_NOW,
		 &attr->st_atim);
	set_time(&args.new_attributes.mtime.set_it, &args.new_attributes.mtime.set_mtime_u.mtime,
		 to_set & (FF_SET_MTIME | FF_SET_MTIME_NOW), to_set & FF_SET_MTIME_NOW,
		 &attr->st_mtim);

	c = g_new0(struct v3_call, 1);
	c->st = st;
	if (rpc_nfs3_setattr_async(nfs_get_rpc_context(nfs), setattr_cb, &args, c) != 0) {
		g_free(c);
		rc = -ENOMEM;
		goto out_free;
	}
	rc = v3_wait(nfs, c);
	if (rc && !c->done) {
		c->st = NULL; /* abandoned: `st` is the caller's */
		goto out_free;
	}
	*have_st = c->have_st;
	g_free(c);
out_free:
	g_byte_array_free(fh, TRUE);
	return rc;
}

/* ---- WRITE3 and COMMIT3 ---------------------------------------------------------------------- */

/* The error of a WRITE3 or READ3 reply whose status is *res_status (NULL: no reply). */
static int reply_err(int status, const nfsstat3 *res_status)
{
	if (status == RPC_STATUS_TIMEOUT || status == RPC_STATUS_CANCEL)
		return -ETIMEDOUT;
	if (status != RPC_STATUS_SUCCESS || !res_status)
		return -ECONNRESET;
	return *res_status != NFS3_OK ? nfs3_status_errno(*res_status) : 0;
}

static void write_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	WRITE3res *res = data;
	const WRITE3resok *ok = NULL;
	int err = reply_err(status, res ? &res->status : NULL);

	if (err == 0)
		ok = &res->WRITE3res_u.resok;
	nfs_wchunk_done(private_data, err, ok ? ok->count : 0, ok && ok->committed == FILE_SYNC,
			ok ? ok->verf : NULL);
}

static int write_chunk(struct nfs_conn *conn, const struct nfs_wtarget *t, struct nfs_wbent *e,
		       uint64_t off, size_t len, const void *data)
{
	WRITE3args args;

	memset(&args, 0, sizeof(args));
	args.file.data.data_len = t->fhlen;
	args.file.data.data_val = (char *)t->fh;
	args.offset = off;
	args.count = (count3)len;
	args.stable = t->sync ? FILE_SYNC : UNSTABLE;
	args.data.data_len = (u_int)len;
	args.data.data_val = (char *)data;
	if (rpc_nfs3_write_async(nfs_get_rpc_context(conn->nfs), write_cb, &args, e) != 0)
		return -ENOMEM;
	return 0;
}

void nfs3_wtarget(struct nfs_conn *conn, const GByteArray *fh, bool sync, struct nfs_wtarget *t)
{
	*t = (struct nfs_wtarget){
		.send = write_chunk,
		.fh = (const char *)fh->data,
		.fhlen = fh->len,
		.sync = sync,
		.chunk = conn->writemax,
	};
}

/* ---- READ3 ---------------------------------------------------------------------------------- */

static void read_cb(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	READ3res *res = data;
	const READ3resok *ok = NULL;
	int err = reply_err(status, res ? &res->status : NULL);

	if (err == 0)
		ok = &res->READ3res_u.resok;
	nfs_rchunk_done(private_data, err, ok ? ok->data.data_val : NULL,
			ok ? ok->data.data_len : 0, ok && ok->eof);
}

static int read_chunk(struct nfs_conn *conn, const struct nfs_rtarget *t, struct nfs_raseg *s,
		      uint64_t off, size_t len)
{
	READ3args args;

	memset(&args, 0, sizeof(args));
	args.file.data.data_len = t->fhlen;
	args.file.data.data_val = (char *)t->fh;
	args.offset = off;
	args.count = (count3)len;
	if (rpc_nfs3_read_async(nfs_get_rpc_context(conn->nfs), read_cb, &args, s) != 0)
		return -ENOMEM;
	return 0;
}

void nfs3_rtarget(struct nfs_conn *conn, const GByteArray *fh, struct nfs_rtarget *t)
{
	*t = (struct nfs_rtarget){
		.send = read_chunk,
		.fh = (const char *)fh->data,
		.fhlen = fh->len,
		.chunk = conn->readmax,
	};
}

int nfs3_file_commit(struct nfs_context *nfs, const GByteArray *fh, char verf[NFS_VERF_SIZE])
{
	struct v3_call *c;
	COMMIT3args args;

	memset(&args, 0, sizeof(args));
	args.file.data.data_len = fh->len;
	args.file.data.data_val = (char *)fh->data;
	c = g_new0(struct v3_call, 1);
	c->verf = verf;
	return call_wait(nfs, c,
			 rpc_nfs3_commit_async(nfs_get_rpc_context(nfs), commit_cb, &args, c));
}
