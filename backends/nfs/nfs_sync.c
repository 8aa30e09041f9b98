/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_sync.c - libnfs' path and file calls, made through their async form and waited for on
 * our own event loop (nfs_event_step()), so that they end when the caller is interrupted
 * (Ctrl-C) as NFSv4 COMPOUNDs and WRITEs do. libnfs 4.0's sync wrappers wait in a loop of
 * their own that only a timeout ends, and a call made of several RPCs (an open walks the path)
 * could take that timeout once per RPC; here the whole call has one deadline.
 *
 * A call the caller leaves (interrupted, timed out, connection failed) is abandoned: its
 * callback, when libnfs runs it later (a late reply, or the context's destruction), frees the
 * call and what its reply made (an open file, an open directory), and never touches the
 * caller's buffers.
 */
#include <errno.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

#include "backends/nfs/nfs.h"

/* What a call's reply carries to the caller. */
enum sync_kind {
	SYNC_NONE,
	SYNC_STRUCT, /* a struct of `size` bytes, copied to `out` */
	SYNC_FH,     /* a struct nfsfh *, stored in *(struct nfsfh **)out */
	SYNC_DIR,    /* a struct nfsdir *, stored in *(struct nfsdir **)out */
	SYNC_STRING, /* a string, g_strdup'd into *(char **)out */
};

struct sync_call {
	int done;
	int status;
	bool abandoned;
	enum sync_kind kind;
	void *out;
	size_t size;
	char *msg; /* libnfs' message for a failure */
};

static struct sync_call *call_new(enum sync_kind kind, void *out, size_t size)
{
	struct sync_call *c = g_new0(struct sync_call, 1);

	c->kind = kind;
	c->out = out;
	c->size = size;
	return c;
}

static void call_free(struct sync_call *c)
{
	g_free(c->msg);
	g_free(c);
}

/* What a reply made, when nobody waits for it any more. */
static void drop_result(struct sync_call *c, struct nfs_context *nfs, void *data)
{
	if (!data)
		return;
	if (c->kind == SYNC_FH)
		nfs_free_nfsfh(data); /* NFSv3: no state on the server */
	else if (c->kind == SYNC_DIR)
		nfs_closedir(nfs, data); /* frees the listing, no I/O */
}

static void call_cb(int status, struct nfs_context *nfs, void *data, void *private_data)
{
	struct sync_call *c = private_data;

	if (c->abandoned) {
		if (status >= 0)
			drop_result(c, nfs, data);
		call_free(c);
		return;
	}
	c->status = status;
	c->done = 1;
	if (status < 0) {
		c->msg = g_strdup(data ? (const char *)data : "");
		return;
	}
	switch (c->kind) {
	case SYNC_NONE:
		break;
	case SYNC_STRUCT:
		memcpy(c->out, data, c->size);
		break;
	case SYNC_FH:
	case SYNC_DIR:
		*(void **)c->out = data;
		break;
	case SYNC_STRING:
		*(char **)c->out = g_strdup(data ? (const char *)data : "");
		break;
	}
}

/* Wait for the call that `queued` (the *_async call's return) started. Returns 0 or -errno; -EINTR when the caller was interrupted, -ETIMEDOUT a second after the
 * context's timeout (libnfs expires each RPC at it; the call as a whole ends here). Frees `c`,
 * or leaves it to its callback. */
static int call_wait(struct nfs_context *nfs, struct sync_call *c, int queued)
{
	gint64 deadline = nfs_call_deadline(nfs);
	int rc = 0;

	if (queued != 0) { /* not sent: libnfs said why in its error string */
		call_free(c);
		return nfs_map_error(nfs, -1);
	}
	while (rc == 0 && !c->done)
		rc = nfs_event_step(nfs, deadline);
	if (!c->done) {
		c->abandoned = true; /* its callback frees it */
		/* Later readers of the context's error (nfs_conn_put()) must not take an older
		 * message for this call's. */
		rpc_set_error(nfs_get_rpc_context(nfs), "%s",
			      rc == -EINTR ? "call interrupted" : "call timed out");
		return rc;
	}
	rc = MIN(c->status, 0);
	if (rc < 0) {
		/* what nfs_map_error() reads, as libnfs' sync wrappers leave it */
		rpc_set_error(nfs_get_rpc_context(nfs), "%s", c->msg);
		rc = nfs_map_error(nfs, rc);
	}
	call_free(c);
	return rc;
}

int nfs_sync_statvfs(struct nfs_context *nfs, const char *path, struct statvfs *st)
{
	struct sync_call *c = call_new(SYNC_STRUCT, st, sizeof(*st));

	return call_wait(nfs, c, nfs_statvfs_async(nfs, path, call_cb, c));
}

int nfs_sync_open(struct nfs_context *nfs, const char *path, int flags, struct nfsfh **fh)
{
	struct sync_call *c = call_new(SYNC_FH, fh, 0);

	return call_wait(nfs, c, nfs_open_async(nfs, path, flags, call_cb, c));
}

int nfs_sync_create(struct nfs_context *nfs, const char *path, int flags, int mode,
		    struct nfsfh **fh)
{
	struct sync_call *c = call_new(SYNC_FH, fh, 0);

	return call_wait(nfs, c, nfs_create_async(nfs, path, flags, mode, call_cb, c));
}

int nfs_sync_opendir(struct nfs_context *nfs, const char *path, struct nfsdir **dir)
{
	struct sync_call *c = call_new(SYNC_DIR, dir, 0);

	return call_wait(nfs, c, nfs_opendir_async(nfs, path, call_cb, c));
}

int nfs_sync_readlink(struct nfs_context *nfs, const char *path, char **target)
{
	struct sync_call *c = call_new(SYNC_STRING, target, 0);

	return call_wait(nfs, c, nfs_readlink_async(nfs, path, call_cb, c));
}

int nfs_sync_mknod(struct nfs_context *nfs, const char *path, int mode, int dev)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_mknod_async(nfs, path, mode, dev, call_cb, c));
}

int nfs_sync_symlink(struct nfs_context *nfs, const char *target, const char *path)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_symlink_async(nfs, target, path, call_cb, c));
}

int nfs_sync_link(struct nfs_context *nfs, const char *oldpath, const char *newpath)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_link_async(nfs, oldpath, newpath, call_cb, c));
}

int nfs_sync_lchmod(struct nfs_context *nfs, const char *path, int mode)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_lchmod_async(nfs, path, mode, call_cb, c));
}

int nfs_sync_lchown(struct nfs_context *nfs, const char *path, int uid, int gid)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_lchown_async(nfs, path, uid, gid, call_cb, c));
}

int nfs_sync_truncate(struct nfs_context *nfs, const char *path, uint64_t length)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_truncate_async(nfs, path, length, call_cb, c));
}

int nfs_sync_lutimes(struct nfs_context *nfs, const char *path, struct timeval *times)
{
	struct sync_call *c = call_new(SYNC_NONE, NULL, 0);

	return call_wait(nfs, c, nfs_lutimes_async(nfs, path, times, call_cb, c));
}
