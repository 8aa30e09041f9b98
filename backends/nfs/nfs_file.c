/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_file.c - open files of the NFS backend: open, create, read, write (pipelined WRITEs of
 * nfs_write.c), flush (COMMIT, checking the write verifier), fsync and release.
 *
 * An NFSv3 file is its filehandle (libnfs opens it: the walk and ACCESS3); an NFSv4 file has
 * OPEN state of our own (nfs_v4_file.c). Reads go through nfs_read.c, writes through
 * nfs_write.c.
 *
 * File handles: an open file belongs to the context that opened it, so a handle remembers its
 * context, holds a reference on it, and leases that context for each operation (its own mutex
 * serialises the handle). When the context is retired (connection broken, NFSv4 state lost), the
 * handle moves to a fresh context: an NFSv3 filehandle is good on any, and an NFSv4 file is
 * opened again by path (an open whose lease expired must be reopened anyway).
 *
 * NFSv4 locks (nfs_server_lock()): each lock owner's locks on a file are held through one handle,
 * the one its first lock came through, whichever handle later requests come through (a process
 * may lock through one descriptor and unlock through another): loc->locks finds it. That
 * handle's release gives them back before its CLOSE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

struct nfs_handle {
	GMutex lock;		  /* serialises every use of the handle */
	struct nfs_conn *conn;	  /* owns f4; a reference; NULL after a failed reopen */
	GByteArray *fh3;	  /* NFSv3: the file's filehandle */
	struct nfs4_file *f4;	  /* NFSv4 */
	struct nfs_ra *ra;	  /* its READs (nfs_read.c), on conn */
	struct ff_pathnode *node; /* a reference: the path to reopen */
	struct nfs_ident ident;	  /* who opened it */
	int flags;		  /* O_ACCMODE | O_SYNC, for reopening */
	bool append;
	struct nfs_wb *wb; /* opened for writing: its WRITEs not yet on stable storage */
	gint nlocks;	   /* lock owners whose locks it carries (loc->locks) */
};

/* One lock owner's locks on one file, and the handle they are held through. */
struct nfs_lockref {
	struct ff_pathnode *node; /* the file */
	uint64_t owner;
	bool flock;
	struct nfs_handle *h;
	struct nfs4_lock *lk;
};

/* ---- file handles ---------------------------------------------------------------------------- */

static int open_flags(int flags)
{
	/* O_NOFOLLOW: opening a symlink fails ELOOP. O_APPEND is handled here, not by libnfs. */
	return (flags & (O_ACCMODE | O_SYNC | O_DSYNC)) | O_NOFOLLOW;
}

/* Open `path` (NFSv3) through libnfs, which walks it and asks ACCESS3: its filehandle into
 * *fh3. With O_TRUNC the file is emptied: libnfs 4.0 truncates only when opening for writing,
 * Linux also for O_RDONLY (the kernel has checked that the caller may write). */
static int open_v3(struct nfs_op *op, const char *path, int flags, GByteArray **fh3)
{
	struct stat attr = { .st_size = 0 }, st;
	struct nfsfh *fh;
	int rc;

	rc = nfs_sync_open(op->nfs, path, open_flags(flags) | (flags & O_TRUNC), &fh);
	if (rc)
		return rc;
	*fh3 = nfs3_fh_of(fh);
	nfs_free_nfsfh(fh); /* no state on the server */
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) == O_RDONLY)
		rc = nfs_setattr_path(op, path, &attr, FF_SET_SIZE, &st);
	if (rc)
		g_clear_pointer(fh3, g_byte_array_unref);
	return rc;
}

/* Lease the handle's context, reopening the file on a fresh one if its context was retired.
 * Called with h->lock held. */
static int handle_begin(struct nfs_loc *loc, struct nfs_handle *h, gint64 deadline)
{
	struct nfs_conn *conn;
	char *path;
	int rc;

	if (h->conn) {
		rc = nfs_conn_lease(h->conn, deadline);
		if (rc != -ENOTCONN)
			return rc;
		/* retired: its open goes with it (closing it would only wait on a dead server) */
		nfs_ra_drop(h->ra);
		nfs_conn_opened(h->conn, h->node, false);
		nfs4_file_free(h->f4);
		nfs_conn_unref(h->conn);
		h->conn = NULL;
		h->f4 = NULL;
	}
	if (h->fh3) { /* NFSv3: the filehandle is good on any context */
		rc = nfs_conn_get(loc, &h->ident, deadline, NULL, &conn);
		if (rc == 0) {
			nfs_conn_ref(conn);
			nfs_conn_opened(conn, h->node, true);
			h->conn = conn;
		}
		return rc;
	}
	path = nfs_pnode_path(loc, h->node, NULL);
	if (!path)
		return -ESTALE;
	/* A second try when the context's NFSv4 state is gone (it is retired): see
	 * nfs_open_file(). */
	for (int attempt = 0; attempt < 2; attempt++) {
		char *full;
		bool lost;

		rc = nfs_conn_get(loc, &h->ident, deadline, h->node, &conn);
		if (rc)
			break;
		full = nfs_v4_path(loc, path);
		rc = nfs4_file_open(conn, full, h->flags, false, 0, &h->f4, NULL);
		g_free(full);
		if (rc == 0) {
			nfs_conn_ref(conn);
			nfs_conn_opened(conn, h->node, true);
			h->conn = conn;
			break;
		}
		lost = nfs_error_lost_state(conn->nfs);
		nfs_conn_put(conn, rc);
		h->f4 = NULL;
		if (!lost)
			break;
	}
	g_free(path);
	return rc;
}

/* End the lease. Returns true when the error says the open state was lost and a retry after
 * reopening may succeed. */
static bool handle_end(struct nfs_handle *h, int rc)
{
	bool lost = rc < 0 && nfs_error_lost_state(h->conn->nfs);

	nfs_conn_put(h->conn, rc);
	return lost;
}

/* A handle on the filehandle `fh3` (NFSv3; consumed), or on `f4`. */
static struct nfs_handle *handle_new(struct nfs_loc *loc, struct nfs_conn *conn, GByteArray *fh3,
				     struct nfs4_file *f4, ff_node *node,
				     const struct ff_cred *cred, int flags)
{
	struct nfs_handle *h = g_new0(struct nfs_handle, 1);

	g_mutex_init(&h->lock);
	h->conn = conn;
	nfs_conn_ref(conn);
	h->fh3 = fh3;
	h->f4 = f4;
	h->ra = nfs_ra_new();
	h->node = nfs_pnode(node);
	ff_pathtree_ref(loc->tree, h->node);
	nfs_conn_opened(conn, h->node, true);
	nfs_ident_from_cred(&h->ident, cred);
	h->flags = flags & (O_ACCMODE | O_SYNC | O_DSYNC);
	h->append = flags & O_APPEND;
	if ((flags & O_ACCMODE) != O_RDONLY)
		h->wb = nfs_wb_new(loc, h->node);
	return h;
}

int nfs_open_file(void *l, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fhp)
{
	struct nfs_loc *loc = l;
	char *path = nfs_node_path(loc, node, NULL);
	struct nfs4_file *f4 = NULL;
	GByteArray *fh3 = NULL;
	struct nfs_op op;
	int rc;

	if (!path)
		return -ESTALE;
	/* A second try on a fresh context when NFSv4 state was lost (lease expired, server
	 * restarted): libnfs 4.0 never renews its lease. */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool lost;

		rc = nfs_op_begin_avoid(&op, loc, cred, nfs_pnode(node));
		if (rc)
			break;
		if (loc->version == 4) {
			char *full = nfs_v4_path(loc, path);

			rc = nfs4_file_open(op.conn, full, flags, false, 0, &f4, NULL);
			g_free(full);
		} else {
			rc = open_v3(&op, path, flags, &fh3);
		}
		if (rc == 0) {
			if (flags & O_TRUNC) /* what was read of it is gone */
				nfs_ra_changed(loc);
			*fhp = (ff_fh *)handle_new(loc, op.conn, fh3, f4, node, cred, flags);
			nfs_op_end(&op, 0);
			break;
		}
		lost = nfs_error_lost_state(op.nfs);
		nfs_op_end(&op, rc);
		if (!lost)
			break;
	}
	g_free(path);
	return rc;
}

/* Attributes of an open file, through its handle: no path walk, and it works for an unlinked
 * file. */
int nfs_handle_getattr(struct nfs_loc *loc, struct nfs_handle *h, struct stat *st)
{
	gint64 deadline = nfs_deadline(loc);
	int rc;

	g_mutex_lock(&h->lock);
	rc = nfs_wb_node_wait(loc, h->node, NULL, deadline); /* the size the kernel was told */
	if (rc == 0)
		rc = handle_begin(loc, h, deadline);
	if (rc)
		goto out_unlock;
	if (h->f4)
		rc = nfs4_file_getattr(h->conn, h->f4, st);
	else
		rc = nfs3_getattr(h->conn->nfs, h->fh3, st);
	handle_end(h, rc);
out_unlock:
	g_mutex_unlock(&h->lock);
	return rc;
}

int nfs_create_file(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
		    mode_t mode, int flags, ff_node **nodep, struct stat *st, ff_fh **fhp)
{
	struct nfs_loc *loc = l;
	char *path = nfs_node_path(loc, parent, name);
	struct nfs4_file *f4 = NULL;
	GByteArray *fh3 = NULL;
	struct ff_pathnode *pn;
	bool existed = false;
	ff_node *node;
	struct nfs_op op;
	int rc;

	if (!path)
		return -ESTALE;
	pn = ff_pathtree_child(loc->tree, nfs_pnode(parent), name); /* becomes the node */
	rc = nfs_op_begin_avoid(&op, loc, cred, pn);
	if (rc)
		goto out_free;
	/* Exclusive first: the kernel calls create() for names it believes absent. Without O_EXCL
	 * an existing file is then opened as it is (NFSv3 UNCHECKED would apply our mode to it). */
	if (loc->version == 4) {
		char *full = nfs_v4_path(loc, path);

		rc = nfs4_file_open(op.conn, full, flags, true, mode, &f4, st);
		if (rc < 0 && nfs_error_lost_state(op.nfs)) { /* see nfs_open_file() */
			nfs_op_end(&op, rc);
			rc = nfs_op_begin_avoid(&op, loc, cred, pn);
			if (rc == 0)
				rc = nfs4_file_open(op.conn, full, flags, true, mode, &f4, st);
			else
				op.conn = NULL;
		}
		if (rc == -EEXIST && !(flags & O_EXCL)) {
			existed = true;
			rc = nfs4_file_open(op.conn, full, flags, false, 0, &f4, st);
		}
		g_free(full);
		if (!op.conn)
			goto out_free;
		if (rc) {
			nfs_op_end(&op, rc);
			goto out_free;
		}
		goto out_made;
	}
	rc = nfs3_create(loc, op.nfs, path, mode, &fh3, st);
	if (rc == -EEXIST && !(flags & O_EXCL)) {
		existed = true;
		rc = open_v3(&op, path, flags, &fh3);
		if (rc == 0) {
			rc = nfs3_getattr(op.nfs, fh3, st);
			if (rc)
				g_clear_pointer(&fh3, g_byte_array_unref);
		}
	}
	if (rc < 0) {
		nfs_op_end(&op, rc);
		goto out_free;
	}
out_made:
	node = nfs_node_new(g_steal_pointer(&pn));
	if (existed && (flags & O_TRUNC)) /* emptied: what was read of it is gone */
		nfs_ra_changed(loc);
	*fhp = (ff_fh *)handle_new(loc, op.conn, fh3, f4, node, cred, flags);
	*nodep = node;
	nfs_op_end(&op, 0);
out_free:
	if (pn)
		ff_pathtree_unref(loc->tree, pn);
	g_free(path);
	return rc;
}

/* A read through the handle: copied into `buf`, or with `data` answered from what is held. */
static ssize_t read_through(struct nfs_loc *loc, struct nfs_handle *h, void *buf, size_t size,
			    off_t off, const void **data, void **ref)
{
	gint64 deadline = nfs_deadline(loc);
	ssize_t rc;

	g_mutex_lock(&h->lock);
	rc = nfs_wb_node_wait(loc, h->node, NULL, deadline); /* a read sees what was written */
	for (int attempt = 0; attempt < 2 && rc == 0; attempt++) {
		struct nfs_rtarget t;
		struct nfs_gen gen;
		bool lost;

		nfs_wb_node_gen(loc, h->node, &gen); /* before any READ is sent */
		rc = handle_begin(loc, h, deadline);
		if (rc)
			break;
		if (h->f4)
			nfs4_rtarget(h->conn, h->f4, &t);
		else
			nfs3_rtarget(h->conn, h->fh3, &t);
		if (data)
			rc = nfs_ra_held(loc, h->ra, h->conn, &t, &gen, size, (uint64_t)off,
					 deadline, data, ref);
		else
			rc = nfs_ra_read(loc, h->ra, h->conn, &t, &gen, buf, size, (uint64_t)off,
					 deadline);
		/* -ENOTCONN: the server forgot the NFSv4 open (the context is retired) */
		lost = handle_end(h, rc < 0 && rc != -EAGAIN ? (int)rc : 0) || rc == -ENOTCONN;
		if (!lost)
			break;
		rc = attempt == 0 ? 0 : -EIO;
	}
	g_mutex_unlock(&h->lock);
	return rc;
}

ssize_t nfs_read_file(void *l, ff_fh *fhv, void *buf, size_t size, off_t off)
{
	return read_through(l, (struct nfs_handle *)fhv, buf, size, off, NULL, NULL);
}

ssize_t nfs_read_held(void *l, ff_fh *fhv, size_t size, off_t off, const void **data, void **ref)
{
	return read_through(l, (struct nfs_handle *)fhv, NULL, size, off, data, ref);
}

void nfs_read_done(void *l, ff_fh *fhv, void *ref)
{
	nfs_ra_done(ref);
}

static void handle_target(struct nfs_handle *h, struct nfs_wtarget *t)
{
	bool sync = h->flags & (O_SYNC | O_DSYNC);

	if (h->f4)
		nfs4_wtarget(h->conn, h->f4, sync, t);
	else
		nfs3_wtarget(h->conn, h->fh3, sync, t);
}

/* COMMIT on the handle's context (leased) what the server answered UNSTABLE so far, WRITEs in
 * flight or not: a changed write verifier makes those it covers to be sent again (-EAGAIN). */
static int commit_kept(struct nfs_loc *loc, struct nfs_handle *h)
{
	char verf[NFS_VERF_SIZE];
	int rc;

	if (nfs_wb_commit_begin(h->wb) == 0)
		return 0;
	if (h->f4)
		rc = nfs4_file_commit(h->conn, h->f4, verf);
	else
		rc = nfs3_file_commit(h->conn->nfs, h->fh3, verf);
	if (rc)
		nfs_wb_committed(loc, h->wb, NULL);
	else
		rc = nfs_wb_committed(loc, h->wb, verf);
	return rc;
}

static int settle_once(struct nfs_loc *loc, struct nfs_handle *h, bool commit, gint64 deadline);

/* Wait for every WRITE of the file in flight, send again what was lost, and with `commit`
 * COMMIT until the server holds it all on stable storage. The file's error, or 0; a failure
 * (but an interruption) becomes the file's error: its data may not be on the server. Called
 * with h->lock held. */
static int settle(struct nfs_loc *loc, struct nfs_handle *h, bool commit, gint64 deadline)
{
	int rc = settle_once(loc, h, commit, deadline);

	if (rc && rc != -EINTR)
		nfs_wb_fail(h->wb, rc);
	return rc;
}

static int settle_once(struct nfs_loc *loc, struct nfs_handle *h, bool commit, gint64 deadline)
{
	for (int round = 0;; round++) {
		struct nfs_wtarget t;
		bool resend;
		int rc;

		rc = nfs_wb_wait(loc, h->wb, 0, deadline);
		if (rc == 0)
			rc = nfs_wb_error(h->wb);
		if (rc)
			return rc;
		resend = nfs_wb_pending(h->wb, false);
		if (!resend && !(commit && nfs_wb_pending(h->wb, true)))
			return 0;
		if (round > 2 * 3) /* each WRITE is sent at most three times (nfs_write.c) */
			return -EIO;
		rc = handle_begin(loc, h, deadline);
		if (rc)
			return rc;
		handle_target(h, &t);
		if (resend) {
			rc = nfs_wb_resend(h->wb, h->conn, &t);
		} else {
			rc = commit_kept(loc, h);
			if (rc == -EAGAIN)
				rc = 0; /* what a changed verifier dropped is sent next round */
		}
		if (handle_end(h, rc) || ff_errno_is_connection(rc))
			continue; /* reopened on a fresh context next round */
		if (rc)
			return rc;
	}
}

/* Let go of what the file keeps without waiting for its WRITEs in flight: COMMIT those the
 * server answered. With WRITEs to send again (lost with a connection, or dropped by a server
 * that restarted), or a connection lost meanwhile, the whole file is settled instead. A failure
 * (but an interruption) becomes the file's error. Called with h->lock held. */
static int commit_answered(struct nfs_loc *loc, struct nfs_handle *h, gint64 deadline)
{
	int rc;

	if (nfs_wb_pending(h->wb, false))
		return settle(loc, h, true, deadline);
	rc = handle_begin(loc, h, deadline);
	if (rc == 0) {
		rc = commit_kept(loc, h);
		if (handle_end(h, rc == -EAGAIN ? 0 : rc) || rc == -EAGAIN ||
		    ff_errno_is_connection(rc))
			return settle(loc, h, true, deadline);
	}
	if (rc && rc != -EINTR)
		nfs_wb_fail(h->wb, rc);
	return rc;
}

ssize_t nfs_write_file(void *l, const struct ff_cred *cred, ff_fh *fhv, const void *buf,
		       size_t size, off_t off)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = (struct nfs_handle *)fhv;
	gint64 deadline = nfs_deadline(loc);
	uint64_t window = (h->flags & (O_SYNC | O_DSYNC)) ? 0 : (uint64_t)loc->wb_bytes;
	uint64_t keep = MAX(4 * window, NFS_WB_KEPT_MIN);
	ssize_t rc;

	if (size > INT_MAX)
		size = INT_MAX & ~4095;
	if (h->append)
		window = 0; /* an append must know where the file ends */
	g_mutex_lock(&h->lock);
	/* After what other opens of the file wrote (held or in flight): the server may carry out
	 * WRITEs of several contexts in any order. */
	rc = nfs_wb_node_wait(loc, h->node, h->wb, deadline);
	/* After its own WRITEs of the same bytes: in the same order, for the same reason. */
	if (rc == 0 && nfs_wb_overlaps(h->wb, (uint64_t)off, size))
		rc = settle(loc, h, false, deadline);
	/* Room in the window: at most `window` bytes in flight once these are sent. */
	if (rc == 0)
		rc = nfs_wb_wait(loc, h->wb, window > size ? window - size : 0, deadline);
	if (rc == 0)
		rc = nfs_wb_error(h->wb);
	/* Room for keeping them: COMMIT what the server has, and let it go; all of it, WRITEs in
	 * flight too, when the daemon keeps too much in all. */
	if (rc == 0 && nfs_wb_kept(h->wb) + size > keep)
		rc = commit_answered(loc, h, deadline);
	if (rc == 0 && nfs_wb_total_kept() + size > NFS_WB_TOTAL_MAX)
		rc = settle(loc, h, true, deadline);
	for (int attempt = 0; attempt < 2 && rc == 0; attempt++) {
		struct nfs_wtarget t;

		rc = handle_begin(loc, h, deadline);
		if (rc)
			break;
		if (h->append) {
			struct stat st = { .st_size = 0 };

			if (h->f4)
				rc = nfs4_file_getattr(h->conn, h->f4, &st);
			else
				rc = nfs3_getattr(h->conn->nfs, h->fh3, &st);
			off = st.st_size;
		}
		if (rc == 0) {
			handle_target(h, &t);
			rc = nfs_wb_write(h->wb, h->conn, &t, (uint64_t)off, size, buf, window > 0);
		}
		if (!handle_end(h, (int)rc))
			break;
	}
	/* Without a window, the write is answered by the server first. */
	if (rc == 0 && window == 0)
		rc = settle(loc, h, false, deadline);
	if (rc == 0)
		rc = nfs_wb_error(h->wb);
	g_mutex_unlock(&h->lock);
	return rc < 0 ? rc : (ssize_t)size;
}

/* close(2): every WRITE answered and on the server's stable storage (COMMIT), as the kernel's
 * NFS client does, so that close() reports an error and what a server restart would lose. */
int nfs_flush_file(void *l, ff_fh *fhv)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = (struct nfs_handle *)fhv;
	int rc = 0;

	if (!h->wb)
		return 0;
	g_mutex_lock(&h->lock);
	rc = settle(loc, h, true, nfs_deadline(loc));
	g_mutex_unlock(&h->lock);
	return rc;
}

int nfs_fsync_file(void *l, ff_fh *fhv, int datasync)
{
	(void)datasync;
	return nfs_flush_file(l, fhv);
}

/* ---- locks kept by the server (NFSv4) ---------------------------------------------------------- */

guint nfs_lockref_hash(gconstpointer p)
{
	const struct nfs_lockref *r = p;

	return g_direct_hash(r->node) ^ (guint)(r->owner * UINT64_C(0x9e3779b97f4a7c15) >> 32) ^
	       r->flock;
}

gboolean nfs_lockref_equal(gconstpointer a, gconstpointer b)
{
	const struct nfs_lockref *x = a, *y = b;

	return x->node == y->node && x->owner == y->owner && x->flock == y->flock;
}

void nfs_lockref_free(gpointer p)
{
	struct nfs_lockref *r = p;

	nfs4_lock_free(r->lk);
	g_free(r);
}

/* A request for the locks carried by `h`, on its context (reopening the file if that was
 * retired: locks held through the old open are gone with the server's state of it). */
static int lock_through(struct nfs_loc *loc, struct nfs_handle *h, struct nfs4_lock *lk,
			unsigned int how, struct flock *fl)
{
	gint64 deadline = nfs_deadline(loc);
	int rc;

	g_mutex_lock(&h->lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = handle_begin(loc, h, deadline);
		if (rc)
			break;
		if (nfs4_lock_has_state(lk) && !nfs4_lock_held_through(lk, h->f4))
			g_warning(
				"%s: locks were lost with the server's state of an open file (the "
				"server restarted, or the lease expired)",
				loc->uri);
		if ((how & ~FF_LOCK_FLOCK) == FF_LOCK_TEST)
			rc = nfs4_lock_test(h->conn, h->f4, lk, fl);
		else
			rc = nfs4_lock_set(h->conn, h->f4, lk, fl);
		if (!handle_end(h, rc))
			break;
	}
	g_mutex_unlock(&h->lock);
	return rc;
}

int nfs_server_lock(void *l, ff_fh *fhv, uint64_t owner, unsigned int how, struct flock *fl)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = (struct nfs_handle *)fhv;
	struct nfs_lockref key, *ref;
	int rc;

	if (loc->version != 4)
		return -EOPNOTSUPP; /* NFSv3 locks are NLM's, which libnfs 4.0 does not speak */
	if (how == FF_LOCK_PROBE)
		return 0;
	key = (struct nfs_lockref){ .node = h->node, .owner = owner, .flock = how & FF_LOCK_FLOCK };
	g_mutex_lock(&loc->locks_lock);
	ref = g_hash_table_lookup(loc->locks, &key);
	if (!ref && (how & ~FF_LOCK_FLOCK) == FF_LOCK_SET && fl->l_type == F_UNLCK) {
		g_mutex_unlock(&loc->locks_lock); /* never locked on the server */
		return 0;
	}
	if (!ref) {
		ref = g_memdup2(&key, sizeof(key));
		ref->h = h;
		ref->lk = nfs4_lock_new(owner, key.flock, h->node);
		g_hash_table_add(loc->locks, ref);
		g_atomic_int_inc(&h->nlocks);
	}
	rc = lock_through(loc, ref->h, ref->lk, how, fl);
	g_mutex_unlock(&loc->locks_lock);
	return rc;
}

/* Before the CLOSE of `h` (its context leased, loc->locks_lock held): LOCKU of everything its
 * lock owners hold, and RELEASE_LOCKOWNER. */
static void locks_give_back(struct nfs_loc *loc, struct nfs_handle *h)
{
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, loc->locks);
	while (h->f4 && g_hash_table_iter_next(&it, &p, NULL)) {
		struct nfs_lockref *ref = p;
		int rc;

		if (ref->h != h)
			continue;
		rc = nfs4_lock_release(h->conn, h->f4, ref->lk);
		if (rc < 0 && !ff_errno_is_connection(rc))
			g_warning("%s: giving back the locks of a closed file failed: %s", loc->uri,
				  g_strerror(-rc));
	}
}

/* The lock owners of `h` forget it (loc->locks_lock held). */
static void locks_forget(struct nfs_loc *loc, struct nfs_handle *h)
{
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, loc->locks);
	while (g_hash_table_iter_next(&it, &p, NULL))
		if (((struct nfs_lockref *)p)->h == h)
			g_hash_table_iter_remove(&it);
}

int nfs_release_file(void *l, ff_fh *fhv)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = (struct nfs_handle *)fhv;
	bool locks = g_atomic_int_get(&h->nlocks) > 0;
	int rc = 0;

	if (h->wb && nfs_wb_error(h->wb) == 0) {
		/* after the last flush() there is nothing left, unless it was interrupted (an
		 * error, once the file has one, was reported already) */
		rc = settle(loc, h, true, nfs_deadline(loc));
		if (rc) /* its close() failed too (the location was down), so no warning */
			g_message("%s: data written to a file closed since may be lost: %s",
				  loc->uri, g_strerror(-rc));
		rc = 0;
	}
	if (h->wb)
		nfs_wb_free(loc, h->wb);
	if (locks)
		g_mutex_lock(&loc->locks_lock); /* before the lease: the lock order */
	if (h->conn) {
		/* Close on the context that opened it, unless that one is retired. */
		rc = nfs_conn_lease(h->conn, nfs_deadline(loc));
		if (rc == 0) {
			if (locks)
				locks_give_back(loc, h);
			nfs_ra_drop(h->ra);
			if (h->f4)
				rc = nfs4_file_close(h->conn, h->f4);
			nfs_conn_put(h->conn, rc);
			/* NFSv4 state already gone (lease expired; or the same file opened twice on
			 * one context, whose one open-owner then shares one stateid): nothing to
			 * close. The connection lost: the server forgets the open with the lease. */
			if (rc < 0 &&
			    (nfs_error_lost_state(h->conn->nfs) || ff_errno_is_connection(rc)))
				rc = 0;
			nfs_conn_opened(h->conn, h->node, false);
		} else {
			/* not closed: freed with its context (the server forgets the open when
			 * its lease expires) */
			nfs_conn_opened(h->conn, h->node, false);
			nfs4_file_free(h->f4);
			if (rc == -ENOTCONN)
				rc = 0;
		}
		nfs_conn_unref(h->conn);
	}
	if (locks) {
		locks_forget(loc, h);
		g_mutex_unlock(&loc->locks_lock);
	}
	nfs_ra_free(h->ra);
	ff_pathtree_unref(loc->tree, h->node);
	if (h->fh3)
		g_byte_array_free(h->fh3, TRUE);
	g_mutex_clear(&h->lock);
	g_free(h);
	return rc;
}
