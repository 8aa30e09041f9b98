/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_write.c - write-behind: WRITEs answered later, their data kept until the server holds it
 * on stable storage; the write verifier.
 *
 * A write() is answered once its data is copied here and its WRITEs are sent. The WRITEs stay
 * in flight on the context they went out on, which goes back to the pool: whoever leases it
 * next serves their replies along with its own (nfs_event_step()), and whoever must know the
 * outcome (the file's next write when its window is full, flush, fsync, a read or getattr of
 * the file) leases it and serves it until they are answered. A WRITE's data is kept until the
 * server has it on stable storage: answered FILE_SYNC, or answered UNSTABLE and then covered by
 * a COMMIT that gave the same write verifier. So a WRITE lost with its connection (the server
 * restarted) is sent again, and so is everything a COMMIT shows the server may have dropped (its
 * verifier changed: it restarted since), as the kernel's NFS client does. A COMMIT covers the
 * WRITEs answered before it was sent, not those still in flight (the server may carry them out
 * after it), so it need not wait for them: a file being written COMMITs what it keeps while it
 * goes on writing (nfs_wb_commit_begin()).
 *
 * Errors: a WRITE's own status (NFS3ERR_NOSPC as ENOSPC, DQUOT, STALE...), a server that answers
 * nothing within the location's timeout (ETIMEDOUT), or a WRITE lost with its connection three
 * times, becomes the file's error: its next write, flush and fsync fail with it, and so does
 * every later one. libnfs 4.0's nfs_pwrite() would have reported a full disk as a broken
 * connection, and neither it nor its COMMIT looks at the write verifier.
 *
 * Joining writes: a program that writes in pieces smaller than a WRITE (tar, cp and git
 * write 10-128 KiB at a time, a log a line) would send a WRITE per write(), and then a COMMIT at
 * close. So the tail of a write() that does not fill a WRITE is held, not sent: the next write()
 * that starts where it ends joins it, and it goes once it holds a whole WRITE. Anything else
 * sends it first: a write() elsewhere in the file, and whoever waits for the file's WRITEs
 * (flush, fsync, the release, a read or getattr or setattr of the file: nfs_wb_wait()), and
 * else about NFS_WB_HOLD after it was made (the flusher thread), so that a program that writes
 * a line and sleeps with the file open does not keep it from other clients for long.
 * Sent by a waiter while it is all the file keeps, it goes FILE_SYNC: nothing is left to COMMIT,
 * and a small file written whole costs one WRITE and no COMMIT, as with the kernel's client
 * (which sends a flush that fits one WRITE stable). On NFSv4 a held piece goes with the
 * stateid of the open it was written through as that is when sent (the target points to it):
 * that open lives until the release, which sends or drops the piece first; an open lost with
 * its context (it is retired) cannot be leased, so the piece is then sent again by the writer,
 * through the open made anew.
 *
 * WRITEs in flight have no timeout of libnfs' own: libnfs expires RPCs before it reads the
 * socket, so replies that arrived while nobody served the context would count as lost. Each
 * WRITE's age is checked here instead, against the location's timeout, by whoever waits for it.
 *
 * Locks: nfs_wb.lock guards a file's entries and counters and is taken last of all (WRITE
 * callbacks take it, in whatever thread serves the context); loc->wb_lock guards the table of
 * files being written and is taken before an nfs_wb.lock.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

#define WB_TRIES 3 /* sends of one WRITE lost with its connection before it is an error */
#define NFS_WB_HOLD (200 * G_TIME_SPAN_MILLISECOND) /* a held piece is sent by then */

enum wb_state {
	WB_HELD,     /* the tail of a write, not sent yet: wb->held (see the top) */
	WB_INFLIGHT, /* sent, not answered */
	WB_UNSTABLE, /* answered UNSTABLE: kept until a COMMIT with the same verifier */
	WB_RESEND,   /* lost with its connection, or dropped by a restarted server */
};

/* One WRITE's data. In flight it is its RPC's private data; its context then holds a reference
 * for it, so a retired context runs its callback only after it was detached (wb NULL). */
struct nfs_wbent {
	struct nfs_wb *wb; /* NULL once detached: the callback just frees it */
	struct nfs_conn *conn;
	GList link; /* in wb->ents */
	uint64_t off;
	size_t len;
	enum wb_state state;
	bool covered; /* UNSTABLE when the COMMIT being sent went out: it covers this one */
	int tries;
	size_t cap;  /* held: bytes allocated for data */
	gint64 sent; /* monotonic µs; held: when it was made */
	char verf[NFS_VERF_SIZE];
	char *data;
};

struct nfs_wb {
	gint refs;
	struct nfs_loc *loc;
	struct ff_pathnode *node; /* not a reference: the handle holds one */
	GMutex lock;
	GQueue ents;		 /* struct nfs_wbent, in the order sent */
	uint64_t lo, hi;	 /* every entry lies in [lo, hi); none: lo == hi == 0 */
	uint64_t inflight;	 /* bytes in flight */
	uint64_t kept;		 /* bytes kept, in flight or not */
	uint64_t writes;	 /* nfs_wb_write() calls (atomic) */
	int err;		 /* the file's first write error */
	struct nfs_conn *retire; /* a context that lost the file's NFSv4 open (not a reference) */
	bool orphan;		 /* unreferenced: the last reply frees it */
	/* The piece held (see the top), or NULL; its conn is a reference to the context its
	 * write came on, on which it is sent by others than the writer, to `target`. */
	struct nfs_wbent *held;
	struct nfs_wtarget target; /* its fh is `fh` */
	char *fh;
	bool flushing; /* in the flusher's queue (flush_lock) */
};

/* Bytes kept by every file of the daemon, against NFS_WB_TOTAL_MAX. */
static int64_t total_kept;

uint64_t nfs_wb_total_kept(void)
{
	return (uint64_t)__atomic_load_n(&total_kept, __ATOMIC_RELAXED);
}

/* Count bytes kept by a file of `loc` (and the daemon). */
static void kept_add(struct nfs_loc *loc, int64_t delta)
{
	__atomic_add_fetch(&total_kept, delta, __ATOMIC_RELAXED);
	__atomic_add_fetch(&loc->wb_kept, delta, __ATOMIC_RELAXED);
}

uint64_t nfs_write_behind_bytes(void *l)
{
	struct nfs_loc *loc = l;

	return (uint64_t)__atomic_load_n(&loc->wb_kept, __ATOMIC_RELAXED);
}

/* ---- entries ---------------------------------------------------------------------------------- */

/* A new entry of `len` bytes at `off`. wb->lock held. */
static void span_add_locked(struct nfs_wb *wb, uint64_t off, size_t len)
{
	if (wb->lo == wb->hi)
		wb->lo = off, wb->hi = off;
	wb->lo = MIN(wb->lo, off);
	wb->hi = MAX(wb->hi, off + len);
}

static void ent_free_locked(struct nfs_wb *wb, struct nfs_wbent *e)
{
	g_queue_unlink(&wb->ents, &e->link);
	if (!wb->ents.head)
		wb->lo = wb->hi = 0;
	wb->kept -= e->len;
	kept_add(wb->loc, -(int64_t)e->len);
	g_free(e->data);
	g_free(e);
}

/* Kept again for sending, with the data of `e` (in flight on a retired context, whose callback
 * will only free it). Called with wb->lock held. */
static void ent_lost_locked(struct nfs_wb *wb, struct nfs_wbent *e)
{
	struct nfs_wbent *n = g_new0(struct nfs_wbent, 1);

	*n = *e;
	n->link = (GList){ .data = n };
	n->conn = NULL;
	n->state = WB_RESEND;
	n->covered = false;
	g_queue_insert_before_link(&wb->ents, &e->link, &n->link);
	g_queue_unlink(&wb->ents, &e->link);
	wb->inflight -= e->len;
	e->wb = NULL;
	e->data = NULL;
}

/* The piece held (see the top), or NULL, no longer held; the reference to the context its write
 * came on goes to *old, for the caller to drop once wb->lock is let go. wb->lock held. */
static struct nfs_wbent *held_detach_locked(struct nfs_wb *wb, struct nfs_conn **old)
{
	struct nfs_wbent *e = wb->held;

	if (e) {
		wb->held = NULL;
		*old = e->conn;
		e->conn = NULL;
	}
	return e;
}

static void wb_destroy(struct nfs_wb *wb);

void nfs_wchunk_done(struct nfs_wbent *e, int err, size_t count, bool stable,
		     const char verf[NFS_VERF_SIZE])
{
	struct nfs_wb *wb = e->wb;
	struct nfs_conn *conn;
	bool orphan;

	if (!wb) { /* detached: its data lives on in another entry */
		g_free(e);
		return;
	}
	g_mutex_lock(&wb->lock);
	conn = e->conn;
	e->conn = NULL;
	wb->inflight -= e->len;
	if (err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE) {
		/* the connection broke, or (-ENOTCONN) the server forgot the open: again */
		e->state = WB_RESEND;
		if (err == -ENOTCONN)
			wb->retire = conn;
	} else if (err) {
		if (!wb->err)
			wb->err = err;
		ent_free_locked(wb, e);
	} else if (count < e->len) {
		/* A short WRITE: the rest is sent again; the piece written is kept like any
		 * UNSTABLE WRITE, in an entry of its own. */
		if (!stable) {
			struct nfs_wbent *piece = g_new0(struct nfs_wbent, 1);

			piece->wb = wb;
			piece->link.data = piece;
			piece->off = e->off;
			piece->len = count;
			piece->state = WB_UNSTABLE;
			memcpy(piece->verf, verf, NFS_VERF_SIZE);
			piece->data = g_memdup2(e->data, count);
			g_queue_insert_before_link(&wb->ents, &e->link, &piece->link);
		} else {
			wb->kept -= count;
			kept_add(wb->loc, -(int64_t)count);
		}
		memmove(e->data, e->data + count, e->len - count);
		e->off += count;
		e->len -= count;
		e->state = WB_RESEND;
	} else if (stable) {
		ent_free_locked(wb, e);
	} else {
		e->state = WB_UNSTABLE;
		memcpy(e->verf, verf, NFS_VERF_SIZE);
	}
	orphan = wb->orphan && wb->inflight == 0;
	g_mutex_unlock(&wb->lock);
	if (orphan)
		wb_destroy(wb);
	/* Never the last reference: it is being served, so leased (or destroyed, and then every
	 * entry in flight on it was detached). */
	nfs_conn_unref(conn);
}

/* ---- files ------------------------------------------------------------------------------------ */

struct nfs_wb *nfs_wb_new(struct nfs_loc *loc, struct ff_pathnode *node)
{
	struct nfs_wb *wb = g_new0(struct nfs_wb, 1);
	GPtrArray *list;

	wb->refs = 1;
	wb->loc = loc;
	wb->node = node;
	g_mutex_init(&wb->lock);
	g_queue_init(&wb->ents);
	g_mutex_lock(&loc->wb_lock);
	list = g_hash_table_lookup(loc->wb_files, node);
	if (!list) {
		list = g_ptr_array_new();
		g_hash_table_insert(loc->wb_files, node, list);
	}
	g_ptr_array_add(list, wb);
	g_mutex_unlock(&loc->wb_lock);
	return wb;
}

/* Free `wb` and what it keeps; nothing of it may be in flight or held. */
static void wb_destroy(struct nfs_wb *wb)
{
	while (wb->ents.head)
		ent_free_locked(wb, wb->ents.head->data);
	g_mutex_clear(&wb->lock);
	g_free(wb->fh);
	g_free(wb);
}

static void wb_unref(struct nfs_wb *wb)
{
	bool inflight;

	if (!g_atomic_int_dec_and_test(&wb->refs))
		return;
	/* Only when its release could not wait: the last reply frees it (nfs_wchunk_done()). */
	g_mutex_lock(&wb->lock);
	inflight = wb->inflight > 0;
	wb->orphan = inflight;
	g_mutex_unlock(&wb->lock);
	if (!inflight)
		wb_destroy(wb);
}

static void flusher_forget(struct nfs_wb *wb);

void nfs_wb_free(struct nfs_loc *loc, struct nfs_wb *wb)
{
	struct nfs_conn *conn = NULL;
	struct nfs_wbent *e;
	GPtrArray *list;

	flusher_forget(wb);
	/* A piece still held: the file's close() failed (its data may be lost, and it said so). */
	g_mutex_lock(&wb->lock);
	e = held_detach_locked(wb, &conn);
	if (e)
		ent_free_locked(wb, e);
	g_mutex_unlock(&wb->lock);
	if (conn)
		nfs_conn_unref(conn);

	g_mutex_lock(&loc->wb_lock);
	list = g_hash_table_lookup(loc->wb_files, wb->node);
	g_ptr_array_remove_fast(list, wb);
	if (list->len == 0)
		g_hash_table_remove(loc->wb_files, wb->node);
	/* Its writes leave the node's sum (nfs_wb_node_gen()): a change all the same. */
	if (__atomic_load_n(&wb->writes, __ATOMIC_RELAXED) > 0)
		nfs_ra_changed(loc);
	g_mutex_unlock(&loc->wb_lock);
	wb_unref(wb);
}

int nfs_wb_error(struct nfs_wb *wb)
{
	int err;

	g_mutex_lock(&wb->lock);
	err = wb->err;
	g_mutex_unlock(&wb->lock);
	return err;
}

void nfs_wb_fail(struct nfs_wb *wb, int err)
{
	g_mutex_lock(&wb->lock);
	if (!wb->err)
		wb->err = err;
	g_mutex_unlock(&wb->lock);
}

uint64_t nfs_wb_kept(struct nfs_wb *wb)
{
	uint64_t n;

	g_mutex_lock(&wb->lock);
	n = wb->kept;
	g_mutex_unlock(&wb->lock);
	return n;
}

bool nfs_wb_overlaps(struct nfs_wb *wb, uint64_t off, size_t size)
{
	bool any = false;

	g_mutex_lock(&wb->lock);
	/* A sequential writer starts where every entry ends: no walk. */
	for (GList *l = off < wb->hi && wb->lo < off + size ? wb->ents.head : NULL; l && !any;
	     l = l->next) {
		const struct nfs_wbent *e = l->data;

		any = e->state != WB_UNSTABLE && e->off < off + size && off < e->off + e->len;
	}
	g_mutex_unlock(&wb->lock);
	return any;
}

bool nfs_wb_pending(struct nfs_wb *wb, bool unstable_too)
{
	bool any = false;

	g_mutex_lock(&wb->lock);
	for (GList *l = wb->ents.head; l && !any; l = l->next) {
		const struct nfs_wbent *e = l->data;

		any = e->state == WB_RESEND || (unstable_too && e->state == WB_UNSTABLE);
	}
	g_mutex_unlock(&wb->lock);
	return any;
}

/* ---- sending ---------------------------------------------------------------------------------- */

/* `e` is in flight on `conn` (leased) from now. wb->lock held. */
static void ent_inflight_locked(struct nfs_wb *wb, struct nfs_conn *conn, struct nfs_wbent *e)
{
	e->sent = g_get_monotonic_time();
	e->conn = conn;
	nfs_conn_ref(conn);
	e->state = WB_INFLIGHT;
	wb->inflight += e->len;
}

/* Send `e`, in flight on `conn` (leased) by ent_inflight_locked(), with no libnfs timeout (see
 * the top). wb->lock not held. */
static int ent_send_marked(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t,
			   struct nfs_wbent *e)
{
	int rc = t->send(conn, t, e, e->off, e->len, e->data);

	if (rc) {
		g_mutex_lock(&wb->lock);
		wb->inflight -= e->len;
		e->state = WB_RESEND;
		e->conn = NULL;
		g_mutex_unlock(&wb->lock);
		nfs_conn_unref(conn);
	}
	return rc;
}

/* Put the WRITEs queued on `conn` (leased) on the wire now: libnfs writes to the socket only
 * when the context is served, which nobody may do for long (a program that writes and then
 * sleeps with the file open). What the socket does not take now goes when it is served. A
 * failure shows to whoever serves it next. */
static void conn_push(struct nfs_conn *conn)
{
	if (nfs_which_events(conn->nfs) & POLLOUT)
		nfs_service(conn->nfs, POLLOUT);
}

static int ent_send(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t,
		    struct nfs_wbent *e)
{
	g_mutex_lock(&wb->lock);
	ent_inflight_locked(wb, conn, e);
	g_mutex_unlock(&wb->lock);
	return ent_send_marked(wb, conn, t, e);
}

/* ---- held pieces (see the top) ------------------------------------------------------------------ */

/* The flusher: a thread that sends each piece about NFS_WB_HOLD after it was made, unless
 * someone did before. The queue holds a reference to each file with a piece held (a file
 * stays in it while its writer sends full pieces and makes new ones); the flusher sends those
 * that are due and sleeps until the earliest of the rest is. */
static GMutex flush_lock;
static GCond flush_cond;
static GQueue flush_queue;
static struct nfs_wb *flush_current; /* whose piece the flusher sends now */

static int held_push(struct nfs_wb *wb, bool stable_alone, gint64 deadline);

/* The first file of the queue whose piece is due at `now` (or gone), out of the queue; else
 * NULL, and `*next` is when the earliest is due (G_MAXINT64: none). flush_lock held. */
static struct nfs_wb *flush_due_locked(gint64 now, gint64 *due, gint64 *next)
{
	*next = G_MAXINT64;
	for (GList *l = flush_queue.head; l; l = l->next) {
		struct nfs_wb *wb = l->data;
		gint64 d = 0;

		g_mutex_lock(&wb->lock);
		if (wb->held)
			d = wb->held->sent + NFS_WB_HOLD;
		g_mutex_unlock(&wb->lock);
		if (d <= now) {
			g_queue_delete_link(&flush_queue, l);
			wb->flushing = false;
			*due = d;
			return wb;
		}
		*next = MIN(*next, d);
	}
	return NULL;
}

static gpointer flusher(gpointer unused)
{
	(void)unused;
	g_mutex_lock(&flush_lock);
	for (;;) {
		gint64 due, next;
		struct nfs_wb *wb = flush_due_locked(g_get_monotonic_time(), &due, &next);

		if (!wb) {
			if (next == G_MAXINT64)
				g_cond_wait(&flush_cond, &flush_lock);
			else
				g_cond_wait_until(&flush_cond, &flush_lock, next);
			continue;
		}
		flush_current = wb; /* nfs_wb_free() waits: this reference is never the last */
		g_mutex_unlock(&flush_lock);
		if (due) /* in the background: UNSTABLE, the writer may go on */
			held_push(wb, false, nfs_deadline(wb->loc));
		wb_unref(wb);
		g_mutex_lock(&flush_lock);
		flush_current = NULL;
		g_cond_broadcast(&flush_cond);
	}
	return NULL;
}

/* `wb` has a piece held now: into the flusher's queue unless it is there. */
static void flusher_add(struct nfs_wb *wb)
{
	static gsize started;

	if (g_once_init_enter(&started)) {
		g_thread_unref(g_thread_new("nfs-flusher", flusher, NULL));
		g_once_init_leave(&started, 1);
	}
	g_mutex_lock(&flush_lock);
	if (!wb->flushing) {
		wb->flushing = true;
		g_atomic_int_inc(&wb->refs);
		g_queue_push_tail(&flush_queue, wb);
		g_cond_broadcast(&flush_cond);
	}
	g_mutex_unlock(&flush_lock);
}

/* Out of the flusher's queue, and not being sent by it. */
static void flusher_forget(struct nfs_wb *wb)
{
	bool queued;

	g_mutex_lock(&flush_lock);
	queued = wb->flushing;
	if (queued) {
		g_queue_remove(&flush_queue, wb);
		wb->flushing = false;
	}
	while (flush_current == wb)
		g_cond_wait(&flush_cond, &flush_lock);
	g_mutex_unlock(&flush_lock);
	if (queued)
		wb_unref(wb); /* not the last: the caller's */
}

/* The piece held, or NULL, with its context's reference (for the caller to drop) taken, and
 * in flight on `conn` (leased) from now. wb->lock held. */
static struct nfs_wbent *held_take_locked(struct nfs_wb *wb, struct nfs_conn *conn,
					  struct nfs_conn **old)
{
	struct nfs_wbent *e = held_detach_locked(wb, old);

	if (e)
		ent_inflight_locked(wb, conn, e);
	return e;
}

/* Send the piece held, if any, on the context its write came on; with `stable_alone`
 * FILE_SYNC when it is all the file keeps (nothing to COMMIT then). The context is leased
 * before the piece is taken, so that whoever waits for the file's WRITEs finds it held or in
 * flight, never between. 0, or -EINTR or -ETIMEDOUT at `deadline` (then it is held still). */
static int held_push(struct nfs_wb *wb, bool stable_alone, gint64 deadline)
{
	struct nfs_wbent *e;
	struct nfs_conn *conn, *old = NULL;
	struct nfs_wtarget t;
	bool send = false, leased;
	int rc;

	g_mutex_lock(&wb->lock);
	e = wb->held;
	conn = e ? e->conn : NULL;
	if (conn)
		nfs_conn_ref(conn);
	g_mutex_unlock(&wb->lock);
	if (!conn)
		return 0;
	rc = nfs_conn_lease(conn, deadline);
	leased = rc == 0;
	g_mutex_lock(&wb->lock);
	if (wb->held != e) {
		rc = rc == -ENOTCONN ? 0 : rc; /* sent by another meanwhile */
	} else if (rc == 0) {
		t = wb->target;
		t.sync = t.sync || (stable_alone && wb->ents.length == 1);
		held_take_locked(wb, conn, &old);
		send = true;
	} else if (rc == -ENOTCONN) { /* its context is gone: the writer sends it again */
		held_detach_locked(wb, &old)->state = WB_RESEND;
	}
	g_mutex_unlock(&wb->lock);
	if (send) {
		int timeout = nfs_get_timeout(conn->nfs);

		nfs_set_timeout(conn->nfs, 0);
		ent_send_marked(wb, conn, &t, e);
		conn_push(conn);
		nfs_set_timeout(conn->nfs, timeout);
	}
	if (leased)
		nfs_conn_put(conn, 0);
	if (old)
		nfs_conn_unref(old);
	nfs_conn_unref(conn);
	return rc == -ENOTCONN ? 0 : rc;
}

/* Join `len` bytes to the piece held. wb->lock held. */
static void held_join_locked(struct nfs_wb *wb, const void *buf, size_t len, size_t chunk)
{
	struct nfs_wbent *e = wb->held;

	if (e->len + len > e->cap) {
		e->cap = MIN(MAX(e->len + len, 2 * e->cap), chunk);
		e->data = g_realloc(e->data, e->cap);
	}
	memcpy(e->data + e->len, buf, len);
	e->len += len;
	wb->hi = MAX(wb->hi, e->off + e->len);
	wb->kept += len;
	kept_add(wb->loc, (int64_t)len);
}

/* Hold `e`, the tail of a write that came on `conn`, to be sent to `t`. wb->lock held. */
static void held_make_locked(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t,
			     struct nfs_wbent *e)
{
	e->state = WB_HELD;
	e->sent = g_get_monotonic_time();
	e->conn = conn;
	nfs_conn_ref(conn);
	wb->held = e;
	if (!wb->fh || wb->target.fhlen != t->fhlen || memcmp(wb->fh, t->fh, t->fhlen) != 0) {
		g_free(wb->fh);
		wb->fh = g_memdup2(t->fh, t->fhlen);
	}
	wb->target = *t;
	wb->target.fh = wb->fh;
}

int nfs_wb_write(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t,
		 uint64_t off, size_t size, const void *buf, bool hold)
{
	int timeout = nfs_get_timeout(conn->nfs);
	struct nfs_conn *old = NULL;
	struct nfs_wbent *e = NULL;
	size_t done = 0;
	int rc = 0;

	__atomic_add_fetch(&wb->writes, 1, __ATOMIC_RELAXED); /* before: see nfs_wb_node_gen() */
	nfs_set_timeout(conn->nfs, 0);
	/* The piece held: joined by a write that starts where it ends, sent once full; sent first
	 * when this write is elsewhere. */
	g_mutex_lock(&wb->lock);
	if (wb->held && hold && wb->held->off + wb->held->len == off && wb->held->len < t->chunk) {
		done = MIN(size, t->chunk - wb->held->len);
		held_join_locked(wb, buf, done, t->chunk);
		if (wb->held->len == t->chunk)
			e = held_take_locked(wb, conn, &old);
	} else {
		e = held_take_locked(wb, conn, &old);
	}
	g_mutex_unlock(&wb->lock);
	if (old)
		nfs_conn_unref(old);
	if (e)
		rc = ent_send_marked(wb, conn, t, e);
	while (done < size && rc == 0) {
		bool tail;

		e = g_new0(struct nfs_wbent, 1);
		e->wb = wb;
		e->link.data = e;
		e->off = off + done;
		e->len = MIN(t->chunk, size - done);
		e->cap = e->len;
		e->data = g_memdup2((const char *)buf + done, e->len);
		tail = hold && e->len < t->chunk;
		g_mutex_lock(&wb->lock);
		g_queue_push_tail_link(&wb->ents, &e->link);
		span_add_locked(wb, e->off, e->len);
		wb->kept += e->len;
		if (tail)
			held_make_locked(wb, conn, t, e);
		else
			ent_inflight_locked(wb, conn, e);
		g_mutex_unlock(&wb->lock);
		kept_add(wb->loc, (int64_t)e->len);
		done += e->len;
		if (tail)
			flusher_add(wb);
		else
			rc = ent_send_marked(wb, conn, t, e);
	}
	conn_push(conn);
	nfs_set_timeout(conn->nfs, timeout);
	return rc;
}

/* Before `e` goes again: the bytes of it that newer entries of the file (later in the list)
 * hold too become theirs, so that it cannot undo them whichever lands last. WRITEs sent again
 * go back to back, and a newer one of the same bytes may be in flight or answered UNSTABLE
 * already; the server carries out WRITEs in flight at once in any order. wb->lock held. */
static void ent_patch_locked(struct nfs_wbent *e)
{
	for (GList *l = e->link.next; l; l = l->next) {
		const struct nfs_wbent *y = l->data;
		uint64_t lo = MAX(e->off, y->off), hi = MIN(e->off + e->len, y->off + y->len);

		if (lo < hi)
			memcpy(e->data + (lo - e->off), y->data + (lo - y->off), hi - lo);
	}
}

int nfs_wb_resend(struct nfs_wb *wb, struct nfs_conn *conn, const struct nfs_wtarget *t)
{
	int timeout = nfs_get_timeout(conn->nfs);
	int rc = 0;

	nfs_set_timeout(conn->nfs, 0);
	for (;;) {
		struct nfs_wbent *e = NULL;

		g_mutex_lock(&wb->lock);
		for (GList *l = wb->ents.head; l && !e && !wb->err; l = l->next) {
			struct nfs_wbent *x = l->data;

			if (x->state == WB_RESEND) {
				e = x;
				if (++e->tries >= WB_TRIES) {
					wb->err = -EIO;
					e = NULL;
				} else {
					ent_patch_locked(e);
				}
			}
		}
		if (!e)
			rc = wb->err;
		g_mutex_unlock(&wb->lock);
		if (!e)
			break;
		rc = ent_send(wb, conn, t, e);
		if (rc)
			break;
	}
	conn_push(conn);
	nfs_set_timeout(conn->nfs, timeout);
	return rc;
}

/* ---- waiting ----------------------------------------------------------------------------------- */

/* The context of the oldest WRITE in flight (a reference) and when it was sent; NULL when
 * nothing is in flight. */
static struct nfs_conn *oldest_locked(struct nfs_wb *wb, gint64 *sent)
{
	for (GList *l = wb->ents.head; l; l = l->next) {
		const struct nfs_wbent *e = l->data;

		if (e->state == WB_INFLIGHT) {
			nfs_conn_ref(e->conn);
			*sent = e->sent;
			return e->conn;
		}
	}
	return NULL;
}

/* The WRITEs of `wb` still in flight on `conn` (retired) are lost: kept for sending again. */
static void conn_lost(struct nfs_wb *wb, struct nfs_conn *conn)
{
	int refs = 0;

	g_mutex_lock(&wb->lock);
	for (GList *l = wb->ents.head, *next; l; l = next) {
		struct nfs_wbent *e = l->data;

		next = l->next;
		if (e->state == WB_INFLIGHT && e->conn == conn) {
			ent_lost_locked(wb, e);
			refs++;
		}
	}
	g_mutex_unlock(&wb->lock);
	while (refs-- > 0)
		nfs_conn_unref(conn);
}

/* Serve `conn` (leased) while the oldest WRITE of `wb` in flight is there and more than `limit`
 * bytes are in flight. *retire: the context is to go (the oldest WRITE had no answer within the
 * location's timeout, or the server forgot the NFSv4 open). */
static int serve(struct nfs_loc *loc, struct nfs_wb *wb, struct nfs_conn *conn, uint64_t limit,
		 gint64 deadline, bool *retire)
{
	for (;;) {
		struct nfs_conn *c;
		gint64 sent = 0;
		bool expired;
		int rc;

		g_mutex_lock(&wb->lock);
		if (wb->retire == conn) {
			wb->retire = NULL;
			*retire = true;
			g_mutex_unlock(&wb->lock);
			return 0;
		}
		c = wb->inflight > limit ? oldest_locked(wb, &sent) : NULL;
		g_mutex_unlock(&wb->lock);
		if (c)
			nfs_conn_unref(c);
		if (c != conn)
			return 0;
		rc = nfs_rpc_step(loc, conn, sent, deadline, "WRITE", &expired);
		if (expired) {
			g_mutex_lock(&wb->lock);
			if (!wb->err)
				wb->err = -ETIMEDOUT;
			g_mutex_unlock(&wb->lock);
			*retire = true;
		}
		if (rc)
			return rc;
	}
}

int nfs_wb_wait(struct nfs_loc *loc, struct nfs_wb *wb, uint64_t limit, gint64 deadline)
{
	if (limit == 0) {
		int rc = held_push(wb, true, deadline);

		if (rc)
			return rc;
	}
	for (;;) {
		struct nfs_conn *conn;
		bool retire = false;
		gint64 sent;
		int rc;

		g_mutex_lock(&wb->lock);
		conn = wb->inflight > limit ? oldest_locked(wb, &sent) : NULL;
		g_mutex_unlock(&wb->lock);
		if (!conn)
			return 0;
		rc = nfs_conn_lease(conn, deadline);
		if (rc == 0) {
			rc = serve(loc, wb, conn, limit, deadline, &retire);
			/* a connection that failed, a server that answers nothing, or lost NFSv4
			 * state: the context is retired */
			nfs_conn_put(conn, retire || rc == -ECONNRESET ? -ECONNRESET : 0);
		}
		if (rc == -ENOTCONN || rc == -ECONNRESET || retire)
			conn_lost(wb, conn);
		nfs_conn_unref(conn);
		if (rc && rc != -ENOTCONN && rc != -ECONNRESET)
			return rc; /* -EINTR, -ETIMEDOUT */
	}
}

int nfs_wb_commit_begin(struct nfs_wb *wb)
{
	int n = 0;

	g_mutex_lock(&wb->lock);
	for (GList *l = wb->ents.head; l; l = l->next) {
		struct nfs_wbent *e = l->data;

		e->covered = e->state == WB_UNSTABLE;
		n += e->covered;
	}
	g_mutex_unlock(&wb->lock);
	return n;
}

/* The COMMIT begun by nfs_wb_commit_begin() answered `verf`: the WRITEs it covers with the same
 * verifier are on stable storage; those with another one were dropped by a server that
 * restarted since, and are sent again. `verf` NULL: the COMMIT failed, they stay as they were. */
int nfs_wb_committed(struct nfs_loc *loc, struct nfs_wb *wb, const char verf[NFS_VERF_SIZE])
{
	unsigned int lost = 0;

	g_mutex_lock(&wb->lock);
	for (GList *l = wb->ents.head, *next; l; l = next) {
		struct nfs_wbent *e = l->data;

		next = l->next;
		if (!e->covered)
			continue;
		e->covered = false;
		if (!verf) {
			continue;
		} else if (memcmp(e->verf, verf, NFS_VERF_SIZE) == 0) {
			ent_free_locked(wb, e);
		} else {
			e->state = WB_RESEND;
			lost++;
		}
	}
	g_mutex_unlock(&wb->lock);
	if (lost)
		g_message("%s: the server restarted before COMMIT (its write verifier changed): "
			  "sending %u WRITEs again",
			  loc->uri, lost);
	return lost ? -EAGAIN : 0;
}

/* ---- other users of a file being written -------------------------------------------------------- */

/* References to the files of `node` but `except` with WRITEs in flight or held. */
static GPtrArray *node_files(struct nfs_loc *loc, struct ff_pathnode *node,
			     const struct nfs_wb *except)
{
	GPtrArray *out = NULL, *list;

	g_mutex_lock(&loc->wb_lock);
	list = g_hash_table_lookup(loc->wb_files, node);
	for (guint i = 0; list && i < list->len; i++) {
		struct nfs_wb *wb = list->pdata[i];
		bool inflight;

		if (wb == except)
			continue;
		g_mutex_lock(&wb->lock);
		inflight = wb->inflight > 0 || wb->held;
		g_mutex_unlock(&wb->lock);
		if (!inflight)
			continue;
		if (!out)
			out = g_ptr_array_new();
		g_atomic_int_inc(&wb->refs);
		g_ptr_array_add(out, wb);
	}
	g_mutex_unlock(&loc->wb_lock);
	return out;
}

int nfs_wb_node_wait(struct nfs_loc *loc, struct ff_pathnode *node, const struct nfs_wb *except,
		     gint64 deadline)
{
	GPtrArray *files;
	int rc = 0;

	if (nfs_write_behind_bytes(loc) == 0) /* nothing kept: nothing in flight */
		return 0;
	files = node_files(loc, node, except);
	for (guint i = 0; files && i < files->len; i++) {
		if (rc == 0)
			rc = nfs_wb_wait(loc, files->pdata[i], 0, deadline);
		wb_unref(files->pdata[i]);
	}
	if (files)
		g_ptr_array_free(files, TRUE);
	return rc == -EINTR ? rc : 0; /* the writer learns of its errors, not the reader */
}

void nfs_wb_node_size(struct nfs_loc *loc, struct ff_pathnode *node, struct stat *st)
{
	GPtrArray *list;

	if (nfs_write_behind_bytes(loc) == 0) /* nothing kept: nothing in flight */
		return;
	g_mutex_lock(&loc->wb_lock);
	list = g_hash_table_lookup(loc->wb_files, node);
	for (guint i = 0; list && i < list->len; i++) {
		struct nfs_wb *wb = list->pdata[i];

		g_mutex_lock(&wb->lock);
		for (GList *l = wb->ents.head; l; l = l->next) {
			const struct nfs_wbent *e = l->data;

			if (e->state != WB_UNSTABLE && (off_t)(e->off + e->len) > st->st_size)
				st->st_size = (off_t)(e->off + e->len);
		}
		g_mutex_unlock(&wb->lock);
	}
	g_mutex_unlock(&loc->wb_lock);
}

void nfs_ra_changed(struct nfs_loc *loc)
{
	__atomic_add_fetch(&loc->ra_gen, 1, __ATOMIC_RELAXED);
}

/* The node's part is the sum of its open files' writes: it only grows but when a written file
 * closes, which counts on the location's part. */
void nfs_wb_node_gen(struct nfs_loc *loc, struct ff_pathnode *node, struct nfs_gen *gen)
{
	GPtrArray *list;

	gen->node = 0;
	g_mutex_lock(&loc->wb_lock);
	gen->loc = __atomic_load_n(&loc->ra_gen, __ATOMIC_RELAXED);
	list = g_hash_table_lookup(loc->wb_files, node);
	for (guint i = 0; list && i < list->len; i++) {
		struct nfs_wb *wb = list->pdata[i];

		gen->node += __atomic_load_n(&wb->writes, __ATOMIC_RELAXED);
	}
	g_mutex_unlock(&loc->wb_lock);
}
