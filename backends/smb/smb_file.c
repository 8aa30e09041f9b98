/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_file.c - open files of the SMB backend: open, create, read, write, flush, fsync, release,
 * the bookkeeping of each node's open handles (times set while open for writing), and closing
 * and opening again the handles below a rename that their open files would refuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backends/smb/smb.h"

/* ---- files ---------------------------------------------------------------------------------- */

/*
 * The open handles of one node (loc->open, under loc->wlock).
 *
 * Explicit times set on a file while it is open for writing: Samba updates the write time of a
 * written file at close (its delayed write time), over a time set in between through another
 * handle when that came within two seconds of the first write, and libsmbclient can only set
 * times through another handle. So such times are set again after each close of an SMB handle
 * that wrote (in smb_flush() or smb_release()), until the last writer is released (cp -p, tar x
 * and touch -r on an open file keep their mtime). A write after them cancels that.
 *
 * The handles themselves: libsmbclient opens without FILE_SHARE_DELETE, so the server refuses to
 * rename an open file (or a directory with open files below). A rename that fails so while
 * handles of ours are open below its source closes them, renames, and opens them again at the
 * new path (smb_rename_open()); the core's silly rename of unlinked open files relies on it.
 */
struct smb_open_node {
	GPtrArray *fhs; /* struct smb_file * */
	unsigned int writers;
	uint64_t wb_queued; /* bytes its files have queued (write-behind) */
	uint64_t wb_end;    /* while any: the end of the furthest */
	bool times_pending;
	struct timeval tv[2];
};

void smb_open_node_free(gpointer p)
{
	struct smb_open_node *o = p;

	g_ptr_array_free(o->fhs, TRUE);
	g_free(o);
}

/* open(2) flags for libsmbclient (cli_open: access mode, create disposition, O_SYNC as
 * write-through). Not O_APPEND: libsmbclient would seek to the end once, with an attribute
 * query a write-only handle may not make; smb_write() appends by itself. */
static int smb_open_flags(int flags)
{
	int out = flags & (O_ACCMODE | O_TRUNC | O_CREAT | O_EXCL);

	if ((flags & O_SYNC) == O_SYNC)
		out |= O_SYNC;
	return out;
}

/* open(2) flags for opening a handle's file again: what it was opened with, less what only
 * the first open may do. */
static int smb_reopen_flags(int flags)
{
	return smb_open_flags(flags) & ~(O_CREAT | O_EXCL | O_TRUNC);
}

/* Is `f`, just opened again at fh's path, still the file fh had open (the server's file id)? A
 * file put in its place while the connection was gone (a restore, another client) is not. */
static bool smb_fh_same_file(struct smb_loc *loc, struct smb_file *fh, SMBCFILE *f, const char *url)
{
	SMBCCTX *ctx = fh->conn->ctx;
	ino_t want = smb_node_ino(loc, fh->node);
	struct stat st;

	if (want == 0)
		return true; /* never seen: nothing to compare */
	memset(&st, 0, sizeof(st));
	if (smbc_getFunctionFstat(ctx)(ctx, f, &st) != 0 && smb_stat_raw(ctx, url, &st) != 0)
		return true; /* cannot tell; the next operation will */
	return st.st_ino == 0 || st.st_ino == want;
}

/* Open fh's file again on its context (checked out): after smb_flush() closed it, or on a new
 * context after its own died (then it must be the same file: ESTALE otherwise, for good). */
static int smb_fh_reopen(struct smb_loc *loc, struct smb_file *fh)
{
	SMBCCTX *ctx = fh->conn->ctx;
	char *url = smb_url(loc, fh->node, NULL);
	SMBCFILE *f;
	int rc = 0;

	if (!url)
		return -ESTALE;
	f = smb_open_raw(ctx, url, smb_reopen_flags(fh->flags), 0, true, &rc);
	if (f && fh->rebound) {
		if (smb_fh_same_file(loc, fh, f, url)) {
			g_message("%s: %s opened again after the connection was lost", loc->display,
				  url);
		} else {
			g_warning("%s: %s is another file since the connection was lost: its "
				  "open handles are stale",
				  loc->display, url);
			smbc_getFunctionClose(ctx)(ctx, f);
			f = NULL;
			fh->stale = true;
			rc = -ESTALE;
		}
		fh->rebound = false;
	}
	g_free(url);
	if (f)
		fh->file = f;
	return rc;
}

/* fh's context died (the server restarted, the connection broke): bind the handle to a live
 * context, its file to be opened again by path when next needed, as NFS clients carry on with
 * a file handle. Returns with the new context checked out, as smb_pool_get_conn() does. Only a
 * context that is connected already will do (-EIO while there is none): a handle does not wait
 * out a logon to a server that may still be down; the prober's next success makes one. */
static int smb_fh_rebind(struct smb_loc *loc, struct smb_file *fh)
{
	struct smb_conn *conn;
	int rc;

	if (fh->conn) {
		smb_pool_file_closed(fh->pool, fh->conn); /* its SMB file goes with it */
		fh->conn = NULL;
		fh->file = NULL;
		fh->rebound = true;
	}
	rc = smb_pool_get_live(fh->pool, &conn);
	if (rc)
		return rc;
	fh->conn = conn;
	smb_pool_file_opened(fh->pool, conn);
	return 0;
}

/*
 * A handle's operations run on its own context, inside the gate (see struct smb_open_node).
 * With `need_file`, a handle that smb_flush() closed is opened again first; a file that went
 * away meanwhile is ESTALE, as NFS clients say. A handle whose context died is bound to
 * another (smb_fh_rebind()) and opened again by path, so that open files outlive a server
 * restart; the operation that was running when the connection broke failed with EIO, unless
 * it could simply run again (smb_fh_end_again()).
 */
int smb_fh_begin(struct smb_loc *loc, struct smb_file *fh, bool need_file)
{
	int rc;

	if (fh->stale)
		return -ESTALE;
	g_rw_lock_reader_lock(&loc->gate);
	rc = fh->conn ? smb_pool_get_conn(fh->pool, fh->conn, false) : -EIO;
	if (rc == -EIO) /* no context, or a dead one */
		rc = smb_fh_rebind(loc, fh);
	fh->t0 = g_get_monotonic_time();
	if (rc == 0 && need_file && !fh->file) {
		rc = smb_classify(loc, fh->conn, smb_fh_reopen(loc, fh), fh->t0);
		if (rc) {
			smb_pool_put(fh->pool, fh->conn, rc);
			if (smb_err_is_disconnect(rc))
				rc = -EIO;
			else if (rc == -ENOENT)
				rc = -ESTALE;
		}
	}
	if (rc)
		g_rw_lock_reader_unlock(&loc->gate);
	return rc;
}

int smb_fh_end_again(struct smb_loc *loc, struct smb_file *fh, int rc, bool *again)
{
	rc = smb_classify(loc, fh->conn, rc, fh->t0);
	*again = smb_err_is_disconnect(rc);
	smb_pool_put(fh->pool, fh->conn, rc);
	g_rw_lock_reader_unlock(&loc->gate);
	return smb_err_is_disconnect(rc) ? -EIO : rc;
}

int smb_fh_end(struct smb_loc *loc, struct smb_file *fh, int rc)
{
	bool again;

	return smb_fh_end_again(loc, fh, rc, &again);
}

/* A handle of fh->node opened. */
static void smb_opened(struct smb_loc *loc, struct smb_file *fh)
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, fh->node);
	if (!o) {
		o = g_new0(struct smb_open_node, 1);
		o->fhs = g_ptr_array_new();
		g_hash_table_insert(loc->open, fh->node, o);
	}
	g_ptr_array_add(o->fhs, fh);
	if ((fh->flags & O_ACCMODE) != O_RDONLY)
		o->writers++;
	if ((fh->flags & O_ACCMODE) != O_WRONLY && loc->read_ahead)
		fh->ra = smb_ra_new();
	g_mutex_unlock(&loc->wlock);
}

/* The data of the open node `o` changes (loc->wlock): what its handles read ahead is history. */
static void smb_ra_stale_all(struct smb_open_node *o)
{
	for (guint i = 0; o && i < o->fhs->len; i++) {
		struct smb_file *fh = o->fhs->pdata[i];

		if (fh->ra)
			smb_ra_stale(fh->ra);
	}
}

void smb_data_changed(struct smb_loc *loc, struct ff_pathnode *node)
{
	g_mutex_lock(&loc->wlock);
	smb_ra_stale_all(g_hash_table_lookup(loc->open, node));
	g_mutex_unlock(&loc->wlock);
}

/* Explicit times are pending on `node`: true, and the times. */
static bool smb_times_pending(struct smb_loc *loc, struct ff_pathnode *node, struct timeval tv[2])
{
	struct smb_open_node *o;
	bool pending = false;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o && o->times_pending) {
		pending = true;
		tv[0] = o->tv[0];
		tv[1] = o->tv[1];
	}
	g_mutex_unlock(&loc->wlock);
	return pending;
}

/* A handle was released; `dirty` when its SMB handle, closed just now, had written. True (and
 * the times) when pending times must be set again; the last writer forgets them. */
static bool smb_closed(struct smb_loc *loc, struct smb_file *fh, bool dirty, struct timeval tv[2])
{
	struct smb_open_node *o;
	bool pending = false;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, fh->node);
	if (o) {
		g_ptr_array_remove_fast(o->fhs, fh);
		if (dirty && o->times_pending) {
			pending = true;
			tv[0] = o->tv[0];
			tv[1] = o->tv[1];
		}
		if ((fh->flags & O_ACCMODE) != O_RDONLY && --o->writers == 0)
			o->times_pending = false;
		if (o->fhs->len == 0)
			g_hash_table_remove(loc->open, fh->node);
	}
	g_mutex_unlock(&loc->wlock);
	return pending;
}

/* Times were set on `node`: remember them while it has writers. */
void smb_times_set(struct smb_loc *loc, struct ff_pathnode *node, const struct timeval tv[2])
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o && o->writers > 0) {
		o->times_pending = true;
		o->tv[0] = tv[0];
		o->tv[1] = tv[1];
	}
	g_mutex_unlock(&loc->wlock);
}

/* A write through `node`: it moves mtime, so earlier explicit times are history. */
void smb_times_written(struct smb_loc *loc, struct ff_pathnode *node)
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o)
		o->times_pending = false;
	g_mutex_unlock(&loc->wlock);
}

/* The open handles at `path` or below it (path as ff_pathtree_path() gives it). */
static GPtrArray *smb_open_below(struct smb_loc *loc, const char *path)
{
	GPtrArray *out = g_ptr_array_new();
	size_t len = strlen(path);
	GHashTableIter it;
	gpointer key, value;

	g_mutex_lock(&loc->wlock);
	g_hash_table_iter_init(&it, loc->open);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		struct smb_open_node *o = value;
		char *p = ff_pathtree_path(loc->tree, NULL, key, NULL);

		if (p && strncmp(p, path, len) == 0 && (p[len] == '\0' || p[len] == '/')) {
			for (guint i = 0; i < o->fhs->len; i++)
				g_ptr_array_add(out, o->fhs->pdata[i]);
		}
		g_free(p);
	}
	g_mutex_unlock(&loc->wlock);
	return out;
}

struct smb_open_arg {
	const char *url;
	int flags;
	mode_t mode;
	bool reopen; /* the handle had this access before (smb_rename_open()) */
	struct smb_file *fh;
	struct stat *st; /* create: attributes of the new file */
};

static int smb_open_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_open_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *f;
	int rc = 0;

	f = smb_open_raw(ctx, a->url, a->flags, a->mode, a->reopen, &rc);
	if (!f)
		return rc;
	a->fh->conn = conn;
	a->fh->file = f;
	a->fh->dirty = false;
	if (a->st) {
		memset(a->st, 0, sizeof(*a->st));
		if (smbc_getFunctionFstat(ctx)(ctx, f, a->st) == 0) {
			smb_fix_stat(loc, a->st);
		} else {
			rc = smb_stat_raw(ctx, a->url, a->st); /* write-only handle */
			if (rc) {
				smbc_getFunctionClose(ctx)(ctx, f);
				return rc;
			}
			a->fh->no_fstat = true;
			smb_fix_stat(loc, a->st);
		}
	}
	a->fh->pool = conn->pool;
	smb_pool_file_opened(conn->pool, conn);
	return 0;
}

int smb_open(void *loc_, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fhp)
{
	struct smb_loc *loc = loc_;
	struct smb_open_arg a = { 0 };
	int rc;

	a.url = smb_url(loc, smb_pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	a.flags = smb_open_flags(flags) & ~(O_CREAT | O_EXCL);
	a.fh = g_new0(struct smb_file, 1);
	a.fh->flags = flags;
	if (flags & O_TRUNC)
		smb_watch_expect(loc, smb_pn(node), NULL, false);
	rc = smb_run(loc, cred, true, smb_open_fn, &a);
	if (flags & O_TRUNC)
		smb_watch_expect(loc, smb_pn(node), NULL, true);
	if (rc) {
		g_free(a.fh);
	} else {
		ff_pathtree_ref(loc->tree, smb_pn(node));
		a.fh->node = smb_pn(node);
		smb_opened(loc, a.fh);
		*fhp = (ff_fh *)a.fh;
	}
	g_free((char *)a.url);
	return rc;
}

int smb_create(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
	       mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fhp)
{
	struct smb_loc *loc = loc_;
	struct smb_open_arg a = { 0 };
	bool ro;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc;
	a.url = smb_url(loc, smb_pn(parent), name);
	if (!a.url)
		return -ENOENT;
	a.flags = smb_open_flags(flags) | O_CREAT;
	a.mode = mode;
	a.st = st;
	a.fh = g_new0(struct smb_file, 1);
	a.fh->flags = flags;
	/* Exclusive first, always: the server may match the name without case, and opening
	 * "foo.h" must not open (and truncate) "Foo.h". When a file is there, open it only if
	 * its name is spelled exactly so (made since the kernel's lookup); else the name is
	 * taken: EEXIST. And a mode without write bits makes a new file read-only (the DOS
	 * attribute), as cifs does at create, while a file that existed keeps its attributes. */
	ro = !(mode & 0222);
	smb_watch_expect(loc, smb_pn(parent), name, false);
	if (!(a.flags & O_EXCL)) {
		a.flags |= O_EXCL;
		rc = smb_run(loc, cred, true, smb_open_fn, &a);
		a.flags &= ~O_EXCL;
		if (rc == -EEXIST) {
			ro = false;
			rc = smb_name_exact_in(loc, cred, smb_pn(parent), name);
			if (rc == 1)
				rc = smb_run(loc, cred, true, smb_open_fn, &a);
			else if (rc == 0)
				rc = -EEXIST;
		}
	} else {
		rc = smb_run(loc, cred, true, smb_open_fn, &a);
	}
	if (rc == 0)
		smb_names_update(loc, smb_pn(parent), name, true);
	if (rc == 0 && ro) {
		/* Our handle keeps the write access it was opened with. Best effort: the file
		 * exists and is open now. */
		struct smb_path_arg c = { .url = a.url, .mode = 0444 | S_IXUSR };

		if (smb_run(loc, cred, false, smb_chmod_fn, &c) == 0)
			st->st_mode &= ~(mode_t)0222;
	}
	smb_watch_expect(loc, smb_pn(parent), name, true);
	if (rc) {
		g_free(a.fh);
	} else {
		*node = (ff_node *)ff_pathtree_child(loc->tree, smb_pn(parent), name);
		smb_node_seen(loc, smb_pn(*node), st);
		ff_pathtree_ref(loc->tree, smb_pn(*node));
		a.fh->node = smb_pn(*node);
		smb_opened(loc, a.fh);
		*fhp = (ff_fh *)a.fh;
	}
	g_free((char *)a.url);
	return rc;
}

/* A read on the handle's context, as asked (a lost connection: once more on a new one). */
ssize_t smb_read_direct(struct smb_loc *loc, struct smb_file *fh, void *buf, size_t size, off_t off)
{
	size_t done = 0;
	bool again = false;
	int rc;

	for (int attempt = 0; attempt < 2 && done == 0; attempt++) {
		SMBCCTX *ctx;

		rc = smb_fh_begin(loc, fh, true);
		if (rc)
			return rc;
		ctx = fh->conn->ctx;
		if (smbc_getFunctionLseek(ctx)(ctx, fh->file, off, SEEK_SET) < 0)
			rc = smb_err(errno);
		while (rc == 0 && done < size) {
			ssize_t n = smbc_getFunctionRead(ctx)(ctx, fh->file, (char *)buf + done,
							      size - done);

			if (n < 0)
				rc = smb_err(errno);
			else if (n == 0)
				break;
			else
				done += (size_t)n;
		}
		rc = smb_fh_end_again(loc, fh, rc, &again);
		if (!again)
			break;
	}
	if (rc && done == 0)
		return rc;
	return (ssize_t)done;
}

ssize_t smb_read(void *loc_, ff_fh *fh_, void *buf, size_t size, off_t off)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;

	smb_wb_node_wait(loc, fh->node); /* a read sees what was written */
	if (fh->ra)
		return smb_ra_read(loc, fh, buf, size, off);
	return smb_read_direct(loc, fh, buf, size, off);
}

/* One write of the whole buffer at `off` (with O_APPEND at the file's end now: SMB has no
 * append mode), on the handle's context (checked out). */
static int smb_write_once(struct smb_loc *loc, struct smb_file *fh, const void *buf, size_t size,
			  off_t off)
{
	SMBCCTX *ctx = fh->conn->ctx;
	ssize_t n;
	int rc;

	smb_times_written(loc, fh->node);
	__atomic_store_n(&fh->dirty, true, __ATOMIC_RELAXED);
	if (fh->flags & O_APPEND) {
		struct stat st;

		rc = smb_fh_stat(loc, fh, &st);
		if (rc)
			return rc;
		off = st.st_size;
	}
	if (smbc_getFunctionLseek(ctx)(ctx, fh->file, off, SEEK_SET) < 0)
		return smb_err(errno);
	n = smbc_getFunctionWrite(ctx)(ctx, fh->file, buf, size);
	if (n < 0) {
		rc = smb_err(errno); /* NT_STATUS_DISK_FULL is ENOSPC, _QUOTA_EXCEEDED EDQUOT */
		return rc == -EINVAL ? -EFBIG : rc; /* past the largest file the server takes */
	}
	return (size_t)n == size ? 0 : -EIO; /* cli_writeall writes all or fails */
}

/* A write at an offset that its broken connection failed runs once more on a new one (writing
 * the same bytes twice at one place is harmless); an append does not (it could append twice). */
static int smb_write_now(struct smb_loc *loc, struct smb_file *fh, const void *buf, size_t size,
			 off_t off)
{
	bool again = false;
	int rc;

	smb_watch_expect(loc, fh->node, NULL, false);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = smb_fh_begin(loc, fh, true);
		if (rc)
			break;
		rc = smb_fh_end_again(loc, fh, smb_write_once(loc, fh, buf, size, off), &again);
		if (!again || (fh->flags & O_APPEND))
			break;
	}
	smb_watch_expect(loc, fh->node, NULL, true);
	return rc;
}

/*
 * Write-behind: a write() is answered once its data is queued; a writer thread (loc->writers)
 * writes a file's queue in order, joining adjacent writes into one of up to SMB_WB_WRITE_MAX
 * (libsmbclient has no asynchronous calls, and one large write costs a round trip where a
 * megabyte each cost one each). Up to loc->wb_window bytes per file wait. Whatever looks at the
 * file waits for its queue: a read, a stat, a truncation, flush, fsync and release; lookups and
 * listings show at least the size queued. The first error sticks to the file: its next write,
 * flush and fsync fail with it.
 */
struct smb_wbuf {
	off_t off;
	size_t len, cap;
	char *data;
};

/* Bytes queued by every SMB location of the daemon, against SMB_WB_TOTAL_MAX. */
static int64_t smb_wb_total;

/* The file's queue drained (loc->wlock held): its error, or 0. */
static int smb_wb_wait_locked(struct smb_loc *loc, struct smb_file *fh)
{
	while (fh->wb_busy || fh->wb_queued > 0)
		g_cond_wait(&loc->wb_done, &loc->wlock);
	return fh->wb_err;
}

static int smb_wb_wait(struct smb_loc *loc, struct smb_file *fh)
{
	int rc;

	g_mutex_lock(&loc->wlock);
	rc = smb_wb_wait_locked(loc, fh);
	g_mutex_unlock(&loc->wlock);
	return rc;
}

static struct smb_open_node *smb_wb_node(struct smb_loc *loc, struct smb_file *fh)
{
	return g_hash_table_lookup(loc->open, fh->node);
}

void smb_wb_run(gpointer fh_, gpointer loc_)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;

	g_mutex_lock(&loc->wlock);
	for (;;) {
		struct smb_wbuf *b = g_queue_pop_head(&fh->wb);
		struct smb_open_node *o;
		int rc = 0;

		if (!b) {
			fh->wb_busy = false;
			g_cond_broadcast(&loc->wb_done);
			break;
		}
		g_mutex_unlock(&loc->wlock);
		if (!fh->wb_err) /* read without the lock: only this thread sets it now */
			rc = smb_write_now(loc, fh, b->data, b->len, b->off);
		g_mutex_lock(&loc->wlock);
		if (rc && !fh->wb_err)
			fh->wb_err = rc;
		fh->wb_queued -= b->len;
		__atomic_sub_fetch(&loc->wb_queued, b->len, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&smb_wb_total, (int64_t)b->len, __ATOMIC_RELAXED);
		o = smb_wb_node(loc, fh);
		if (o) {
			o->wb_queued -= b->len;
			if (o->wb_queued == 0)
				o->wb_end = 0;
		}
		g_cond_broadcast(&loc->wb_done);
		g_free(b->data);
		g_free(b);
	}
	g_mutex_unlock(&loc->wlock);
}

/* Queue a write; 0 or the file's error. */
static int smb_wb_queue(struct smb_loc *loc, struct smb_file *fh, const void *buf, size_t size,
			off_t off)
{
	struct smb_open_node *o;
	struct smb_wbuf *b;
	int rc;

	g_mutex_lock(&loc->wlock);
	/* Room in the file's window, and in the daemon's: a file with nothing queued may always
	 * queue one write. (Other locations' writers do not wake this one: look again often.) */
	while (!fh->wb_err && fh->wb_queued > 0 &&
	       (fh->wb_queued + size > loc->wb_window ||
		(uint64_t)__atomic_load_n(&smb_wb_total, __ATOMIC_RELAXED) + size >
			SMB_WB_TOTAL_MAX))
		g_cond_wait_until(&loc->wb_done, &loc->wlock,
				  g_get_monotonic_time() + 10 * G_TIME_SPAN_MILLISECOND);
	rc = fh->wb_err;
	if (rc)
		goto out;
	b = g_queue_peek_tail(&fh->wb); /* not being written: the writer pops what it writes */
	if (b && b->off + (off_t)b->len == off && b->len + size <= SMB_WB_WRITE_MAX) {
		if (b->len + size > b->cap) {
			b->cap = MIN(MAX(2 * b->cap, b->len + size), SMB_WB_WRITE_MAX);
			b->data = g_realloc(b->data, b->cap);
		}
	} else {
		b = g_new0(struct smb_wbuf, 1);
		b->off = off;
		b->cap = size;
		b->data = g_malloc(size);
		g_queue_push_tail(&fh->wb, b);
	}
	memcpy(b->data + b->len, buf, size);
	b->len += size;
	fh->wb_queued += size;
	__atomic_add_fetch(&loc->wb_queued, size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&smb_wb_total, (int64_t)size, __ATOMIC_RELAXED);
	o = smb_wb_node(loc, fh);
	if (o) {
		o->wb_queued += size;
		o->wb_end = MAX(o->wb_end, (uint64_t)off + size);
	}
	smb_ra_stale_all(o);
	if (!fh->wb_busy) {
		fh->wb_busy = true;
		g_thread_pool_push(loc->writers, fh, NULL);
	}
out:
	g_mutex_unlock(&loc->wlock);
	return rc;
}

/* Nothing queued anywhere in the location: reads, stats and listings need not look (what this
 * thread queued itself is counted already). */
static bool smb_wb_idle(struct smb_loc *loc)
{
	return __atomic_load_n(&loc->wb_queued, __ATOMIC_RELAXED) == 0;
}

void smb_wb_node_wait(struct smb_loc *loc, struct ff_pathnode *node)
{
	struct smb_open_node *o;

	if (smb_wb_idle(loc))
		return;
	g_mutex_lock(&loc->wlock);
	while ((o = g_hash_table_lookup(loc->open, node)) && o->wb_queued > 0)
		g_cond_wait(&loc->wb_done, &loc->wlock);
	g_mutex_unlock(&loc->wlock);
}

void smb_wb_node_size(struct smb_loc *loc, struct ff_pathnode *node, struct stat *st)
{
	struct smb_open_node *o;

	if (smb_wb_idle(loc))
		return;
	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o && o->wb_queued > 0 && (off_t)o->wb_end > st->st_size)
		st->st_size = (off_t)o->wb_end;
	g_mutex_unlock(&loc->wlock);
}

uint64_t smb_write_behind_bytes(void *loc_)
{
	struct smb_loc *loc = loc_;

	return __atomic_load_n(&loc->wb_queued, __ATOMIC_RELAXED);
}

ssize_t smb_write(void *loc_, const struct ff_cred *cred, ff_fh *fh_, const void *buf, size_t size,
		  off_t off)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	int rc;

	if (loc->wb_window > 0 && !(fh->flags & (O_APPEND | O_SYNC | O_DSYNC)))
		rc = smb_wb_queue(loc, fh, buf, size, off);
	else if ((rc = smb_wb_wait(loc, fh)) == 0) { /* an append must know where the file
							ends now; O_SYNC waits */
		smb_data_changed(loc, fh->node);
		rc = smb_write_now(loc, fh, buf, size, off);
	}
	return rc ? rc : (ssize_t)size;
}

/* Explicit times of fh's node set again after an SMB handle that wrote was closed: the
 * server's close moved mtime over them (see struct smb_open_node). Best effort, like close. */
static void smb_times_reapply(struct smb_loc *loc, struct smb_file *fh, const struct timeval tv[2])
{
	struct smb_path_arg a = { .tv = { tv[0], tv[1] } };

	a.url = smb_url(loc, fh->node, NULL);
	if (a.url)
		smb_run_in(fh->pool, false, smb_utimes_fn, &a);
	g_free((char *)a.url);
}

/*
 * close(2). smb_flush() first waits for the file's queued writes (write-behind above) and
 * reports their error. Then the server's view of mtime is settled: Samba
 * updates the write time of a written file lazily (its "delayed write time", as Windows does):
 * when the handle is closed, or two seconds after the first write; until then every stat,
 * through any handle, shows mtime as it was when the file was opened. FUSE sends RELEASE, where
 * the handle would be closed, asynchronously after close(2) returns, so `write; close; stat`
 * showed the old mtime. So a handle that wrote is closed here, in close(2), and opened again on
 * its own context only if it is used after that (a dup'd descriptor, mmap write-back): the
 * CLOSE round trip moves from RELEASE into close(2), and nothing is added unless the handle
 * is used again (one CREATE then). Setting the write time explicitly instead needs this very
 * handle: a time set by path (all libsmbclient offers) goes through another handle, and the
 * writer's own close moves mtime once more; setting end-of-file to the current size through
 * the handle makes Samba update mtime at once, but needs the size first (a stat: two round
 * trips in all) and would cut what another writer appended in between.
 *
 * fsync: libsmbclient 4.17 has no SMB2 FLUSH call, so the data is where the server's own
 * policy ("strict sync") puts acknowledged writes; it reports a lost connection, as flush, and
 * settles mtime the same way (a stat after fsync, the file still open, shows the write);
 * fdatasync leaves mtime alone.
 */
static int smb_fh_settle(struct smb_loc *loc, struct smb_file *fh)
{
	struct timeval tv[2];
	SMBCCTX *ctx;
	bool closed = false;
	int rc = smb_fh_begin(loc, fh, false);
	bool again;

	if (rc == -EIO && !fh->conn)
		return 0; /* its connection died and no other is up: as `again` below */
	if (rc)
		return rc;
	if (fh->file && fh->dirty) {
		smb_watch_expect(loc, fh->node, NULL, false);
		ctx = fh->conn->ctx;
		/* libsmbclient forgets the handle even when the close fails. */
		if (smbc_getFunctionClose(ctx)(ctx, fh->file) < 0)
			rc = smb_err(errno);
		fh->file = NULL;
		__atomic_store_n(&fh->dirty, false, __ATOMIC_RELAXED);
		closed = true;
	}
	rc = smb_fh_end_again(loc, fh, rc, &again);
	if (again)
		rc = 0; /* the connection died: so did the server's handle, and every write it
			 * acknowledged is on the server (a write that failed said so) */
	if (closed && smb_times_pending(loc, fh->node, tv))
		smb_times_reapply(loc, fh, tv);
	if (closed)
		smb_watch_expect(loc, fh->node, NULL, true);
	return rc;
}

int smb_flush(void *loc, ff_fh *fh_)
{
	struct smb_file *fh = (struct smb_file *)fh_;
	int err = smb_wb_wait(loc, fh);
	int rc = 0;

	/* A handle that has not written since its last settling has nothing to tell the server:
	 * its close(2) does not wait for its context, which another call may hold for as long as
	 * the location's timeout (the prober's, on a server that stopped answering). */
	if (__atomic_load_n(&fh->dirty, __ATOMIC_RELAXED))
		rc = smb_fh_settle(loc, fh);
	return err ? err : rc;
}

int smb_fsync(void *loc_, ff_fh *fh_, int datasync)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	int rc;

	if (!datasync)
		return smb_flush(loc, fh_);
	rc = smb_wb_wait(loc, fh);
	if (rc)
		return rc;
	rc = smb_fh_begin(loc, fh, false);
	if (rc)
		return rc;
	return smb_fh_end(loc, fh, 0);
}

int smb_release(void *loc_, ff_fh *fh_)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	struct smb_ra *ra;
	struct smb_conn *conn;
	struct timeval tv[2];
	bool dirty = false, times;
	bool writer = (fh->flags & O_ACCMODE) != O_RDONLY;
	int rc = 0;

	if (writer && smb_wb_wait(loc, fh)) /* its flush said so already */
		g_message("%s: data written to a file closed since was lost", loc->display);
	/* Its reader thread done with it, then out of reach of smb_ra_stale_all() (wlock). */
	smb_ra_close(fh->ra);
	g_mutex_lock(&loc->wlock);
	ra = fh->ra;
	fh->ra = NULL;
	g_mutex_unlock(&loc->wlock);
	smb_ra_free(ra);
	if (writer) /* its close may move mtime */
		smb_watch_expect(loc, fh->node, NULL, false);
	/* Inside the gate until it has left loc->open: smb_rename_open() must not see it after.
	 * No other operation of this handle runs any more: its fields may be read. */
	g_rw_lock_reader_lock(&loc->gate);
	/* No conn: its context died and no new one could be had; the server's handle died with
	 * the connection. */
	conn = fh->conn;
	if (conn && fh->file) {
		rc = smb_pool_get_conn(conn->pool, conn, true);
		if (rc == 0) {
			dirty = fh->dirty;
			/* libsmbclient forgets the handle even when the close fails. */
			if (smbc_getFunctionClose(conn->ctx)(conn->ctx, fh->file) < 0)
				rc = smb_err(errno);
			smb_pool_file_closed(conn->pool, conn);
			smb_pool_put(conn->pool, conn, rc);
		} else {
			/* The connection is gone, and the file was closed with it (writes are
			 * written through: nothing is left to lose); freeing the context frees
			 * what is left of it here. */
			smb_pool_file_closed(conn->pool, conn);
			rc = 0;
		}
	} else if (conn) {
		smb_pool_file_closed(conn->pool, conn); /* smb_flush() closed it */
	}
	times = smb_closed(loc, fh, dirty, tv);
	g_rw_lock_reader_unlock(&loc->gate);
	if (times)
		smb_times_reapply(loc, fh, tv);
	if (writer)
		smb_watch_expect(loc, fh->node, NULL, true);
	ff_pathtree_unref(loc->tree, fh->node);
	g_free(fh);
	return rc;
}

/*
 * The rename failed because files are open at or below its source (no FILE_SHARE_DELETE, see
 * struct smb_open_node). When they are ours: close them, rename, open them again where they
 * are now. Handle operations wait at the gate meanwhile; a handle that cannot be opened again
 * answers EIO from then on.
 */
int smb_rename_open(struct smb_loc *loc, const struct ff_cred *cred, struct smb_path_arg *a, int rc,
		    struct ff_pathnode *parent, const char *name, struct ff_pathnode *newparent,
		    const char *newname)
{
	char *path = ff_pathtree_path(loc->tree, NULL, parent, name);
	GPtrArray *fhs;

	if (!path)
		return rc;
	g_rw_lock_writer_lock(&loc->gate);
	/* None of ours may mean one was being released during the first try, and is closed now
	 * (a release closes inside the gate): the rename is tried again either way. */
	fhs = smb_open_below(loc, path);
	for (guint i = 0; i < fhs->len; i++) {
		struct smb_file *fh = fhs->pdata[i];

		if (!fh->conn)
			continue;
		if (fh->file && smb_pool_get_conn(fh->pool, fh->conn, true) == 0) {
			smbc_getFunctionClose(fh->conn->ctx)(fh->conn->ctx, fh->file);
			smb_pool_file_closed(fh->pool, fh->conn);
			smb_pool_put(fh->pool, fh->conn, 0);
		} else {
			/* Closed by smb_flush() already, or its connection is gone. */
			smb_pool_file_closed(fh->pool, fh->conn);
		}
		fh->file = NULL;
		fh->conn = NULL;
	}
	rc = smb_run(loc, cred, false, smb_rename_fn, a);
	if (rc == 0)
		ff_pathtree_rename(loc->tree, parent, name, newparent, newname, false);
	for (guint i = 0; i < fhs->len; i++) {
		struct smb_file *fh = fhs->pdata[i];
		struct smb_open_arg o = { .fh = fh, .reopen = true };

		if (fh->file)
			continue;
		o.url = smb_url(loc, fh->node, NULL);
		o.flags = smb_reopen_flags(fh->flags);
		if (o.url && smb_run_in(fh->pool, true, smb_open_fn, &o) != 0)
			g_warning("%s: a file open across a rename could not be opened again",
				  loc->display);
		g_free((char *)o.url);
	}
	g_rw_lock_writer_unlock(&loc->gate);
	g_ptr_array_free(fhs, TRUE);
	g_free(path);
	return rc;
}
