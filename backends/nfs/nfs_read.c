/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_read.c - reads of an open file: READs of the server's rsize all in flight at once, and
 * READs sent ahead of a sequential reader.
 *
 * Once a file is read sequentially (a read that starts where the last one ended, or inside what
 * was sent for: the kernel's own read-ahead requests may come out of order), READs for the next
 * loc->ra_bytes (read-ahead=, default 4 MiB) go out with each read: by the time the kernel asks
 * for those bytes they have come or are on the way, and the server, the network and the daemon
 * work at once instead of in turn. A read anywhere else drops them, so random reads send
 * nothing ahead, and the first read of a file sends nothing ahead either (most files are read
 * whole by one read).
 *
 * Each READ in flight is a segment, its RPC's private data, on the context the handle leased;
 * its reply comes whenever that context is served, by whichever thread leases it next (as the
 * WRITEs of nfs_write.c do). A request that one segment holds is answered from the segment
 * itself (nfs_ra_held(): the core sends the reply from it, no copy); others are copied. A
 * segment dropped while in flight or while a reply is sent from it is detached: its callback,
 * or the end of the reply, frees it. ra_lock guards the link between segments and their handle,
 * and the replies sent from them.
 *
 * What was read ahead may have changed on the server since: it is used only while the caller's
 * generation (nfs_wb_node_gen(): no write through this mount to the file, no truncation, no
 * close of a file written on the location) is the one it was read at, and while it is younger
 * than NFS_RA_MAX_AGE (another client's write shows as the kernel's does: after an attribute
 * timeout). End of file is never taken from a segment read for an earlier call: a file that
 * grows is read again.
 */
#include <errno.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

#define NFS_RA_TOTAL_MAX (256u << 20) /* by every file of the daemon together */
#define NFS_RA_MAX_AGE G_USEC_PER_SEC

struct nfs_raseg {
	struct nfs_ra *ra; /* NULL once detached */
	GList link;	   /* in ra->segs */
	uint64_t off;
	size_t len;	     /* asked for */
	size_t got;	     /* came */
	size_t used;	     /* bytes of it read by the kernel: at `len` it goes */
	unsigned int refs;   /* replies being sent from it (nfs_ra_held()) */
	bool eof;	     /* the file ends at off + got */
	int done;	     /* the reply came, or the call ended without one */
	int err;	     /* the READ's error */
	unsigned int serial; /* the read that sent it */
	gint64 sent;	     /* monotonic µs */
	char *data;
};

struct nfs_ra {
	GQueue segs;	     /* by offset, contiguous */
	uint64_t end;	     /* where the last segment ends */
	uint64_t next;	     /* where the last read ended */
	struct nfs_gen gen;  /* what the segments were read at */
	unsigned int serial; /* of the current read */
	unsigned int seq;    /* reads in a row that followed the ones before */
};

static GMutex ra_lock;
static int64_t ra_total; /* bytes of every segment alive, detached ones too (atomic) */

struct nfs_ra *nfs_ra_new(void)
{
	return g_new0(struct nfs_ra, 1);
}

static void seg_free(struct nfs_raseg *s)
{
	__atomic_sub_fetch(&ra_total, (int64_t)s->len, __ATOMIC_RELAXED);
	g_free(s->data);
	g_free(s);
}

/* Unlink `s`; free it, or leave it to whoever still uses it. ra_lock held. */
static void seg_forget_locked(struct nfs_ra *ra, struct nfs_raseg *s)
{
	g_queue_unlink(&ra->segs, &s->link);
	if (s->done && s->refs == 0)
		seg_free(s);
	else
		s->ra = NULL;
}

static void seg_forget(struct nfs_ra *ra, struct nfs_raseg *s)
{
	g_mutex_lock(&ra_lock);
	seg_forget_locked(ra, s);
	g_mutex_unlock(&ra_lock);
}

void nfs_ra_drop(struct nfs_ra *ra)
{
	g_mutex_lock(&ra_lock);
	while (ra->segs.head)
		seg_forget_locked(ra, ra->segs.head->data);
	g_mutex_unlock(&ra_lock);
}

void nfs_ra_free(struct nfs_ra *ra)
{
	if (!ra)
		return;
	nfs_ra_drop(ra);
	g_free(ra);
}

void nfs_rchunk_done(struct nfs_raseg *s, int err, const void *data, size_t count, bool eof)
{
	bool gone;

	if (err == 0 && count > s->len)
		err = -EPROTO;
	g_mutex_lock(&ra_lock);
	gone = !s->ra;
	g_mutex_unlock(&ra_lock);
	if (!gone && err == 0) /* outside the lock: whoever drops it meanwhile leaves it here */
		memcpy(s->data, data, count);
	g_mutex_lock(&ra_lock);
	gone = !s->ra;
	s->err = err;
	s->got = err ? 0 : count;
	s->eof = err == 0 && eof;
	s->done = 1;
	g_mutex_unlock(&ra_lock);
	if (gone)
		seg_free(s);
}

void nfs_ra_done(void *ref)
{
	struct nfs_raseg *s = ref;
	bool gone;

	g_mutex_lock(&ra_lock);
	gone = --s->refs == 0 && !s->ra;
	g_mutex_unlock(&ra_lock);
	if (gone)
		seg_free(s);
}

/* Send a READ of the `len` bytes at the end of the segments on `conn` (leased), with no libnfs
 * timeout: its age is checked by whoever waits for it, as a WRITE's is (nfs_write.c). */
static int seg_send(struct nfs_ra *ra, struct nfs_conn *conn, const struct nfs_rtarget *t,
		    size_t len)
{
	struct nfs_raseg *s = g_new0(struct nfs_raseg, 1);
	int timeout = nfs_get_timeout(conn->nfs), rc;

	s->ra = ra;
	s->link.data = s;
	s->off = ra->end;
	s->len = len;
	s->serial = ra->serial;
	s->sent = g_get_monotonic_time();
	s->data = g_malloc(len);
	__atomic_add_fetch(&ra_total, (int64_t)len, __ATOMIC_RELAXED);
	g_mutex_lock(&ra_lock);
	g_queue_push_tail_link(&ra->segs, &s->link);
	g_mutex_unlock(&ra_lock);
	nfs_set_timeout(conn->nfs, 0);
	rc = t->send(conn, t, s, s->off, len);
	nfs_set_timeout(conn->nfs, timeout);
	if (rc) {
		g_mutex_lock(&ra_lock);
		g_queue_unlink(&ra->segs, &s->link);
		g_mutex_unlock(&ra_lock);
		seg_free(s);
		return rc;
	}
	ra->end += len;
	return 0;
}

/* Send READs up to `to`, unless a segment saw the end of the file before. */
static int fill(struct nfs_ra *ra, struct nfs_conn *conn, const struct nfs_rtarget *t, uint64_t to)
{
	GList *last = ra->segs.tail;

	if (last && ((struct nfs_raseg *)last->data)->eof)
		return 0;
	while (ra->end < to) {
		int rc = seg_send(ra, conn, t, (size_t)MIN(t->chunk, to - ra->end));

		if (rc)
			return rc;
	}
	return 0;
}

/* Forget every segment and send READs from `at` up to `to`. */
static int refill(struct nfs_ra *ra, struct nfs_conn *conn, const struct nfs_rtarget *t,
		  uint64_t at, uint64_t to)
{
	nfs_ra_drop(ra);
	ra->end = at;
	return fill(ra, conn, t, to);
}

/* Wait for segment `s` on `conn` (leased): 0, or the reason it cannot come. */
static int seg_wait(struct nfs_loc *loc, struct nfs_conn *conn, struct nfs_raseg *s,
		    gint64 deadline)
{
	while (!s->done) {
		bool expired;
		int rc = nfs_rpc_step(loc, conn, s->sent, deadline, "READ", &expired);

		if (rc)
			return rc;
	}
	return s->err;
}

/* The segment that holds `at`, or NULL. */
static struct nfs_raseg *seg_at(struct nfs_ra *ra, uint64_t at)
{
	for (GList *l = ra->segs.head; l; l = l->next) {
		struct nfs_raseg *s = l->data;

		if (at >= s->off && at < s->off + s->len)
			return s;
	}
	return NULL;
}

/* `n` bytes of `s` were read by the kernel; read all, it goes. */
static void seg_use(struct nfs_ra *ra, struct nfs_raseg *s, size_t n)
{
	s->used += n;
	if (s->used >= s->len)
		seg_forget(ra, s);
}

/* Nothing more in `s` from `at` on: the end of the file (true), or a short READ or a segment
 * read for an earlier read (to be asked again). */
static bool seg_ends_file(const struct nfs_ra *ra, const struct nfs_raseg *s, uint64_t at)
{
	return at >= s->off + s->got && s->serial == ra->serial && (s->eof || s->got == 0);
}

/* Before a read of `size` bytes at `off`: drop what is stale or lies elsewhere, send READs for
 * what is not held, and for a reader that follows, the next window. */
static int prepare(struct nfs_loc *loc, struct nfs_ra *ra, struct nfs_conn *conn,
		   const struct nfs_rtarget *t, const struct nfs_gen *gen, uint64_t off,
		   size_t size)
{
	struct nfs_raseg *head = ra->segs.head ? ra->segs.head->data : NULL;
	bool follows;
	int rc;

	if (memcmp(gen, &ra->gen, sizeof(*gen)) != 0 ||
	    (head && g_get_monotonic_time() - head->sent > NFS_RA_MAX_AGE))
		nfs_ra_drop(ra);
	ra->gen = *gen;
	/* The kernel sends its read-ahead requests at once, and they may come here out of order:
	 * a read inside what was sent for follows too. */
	follows = (off == ra->next && off > 0) || seg_at(ra, off);
	if (!follows)
		nfs_ra_drop(ra);
	ra->seq = follows ? ra->seq + 1 : 0;
	/* what was skipped (the segments in flight stay: dropping them would leave a hole) */
	while (ra->segs.head) {
		struct nfs_raseg *s = ra->segs.head->data;

		if (s->off + s->len + loc->ra_bytes > off || !s->done)
			break;
		seg_forget(ra, s);
	}
	if (!ra->segs.head)
		ra->end = off;
	ra->serial++;
	rc = fill(ra, conn, t, off + size);
	/* From the second read in a row that follows: the next window too. */
	if (rc == 0 && ra->seq > 0 && loc->ra_bytes > 0 &&
	    (uint64_t)__atomic_load_n(&ra_total, __ATOMIC_RELAXED) < NFS_RA_TOTAL_MAX)
		rc = fill(ra, conn, t, off + size + loc->ra_bytes);
	return rc;
}

/* After a read that got `done` bytes, or failed with `rc`. */
static ssize_t finish(struct nfs_ra *ra, uint64_t off, size_t done, int rc)
{
	if (rc) {
		nfs_ra_drop(ra);
		ra->next = 0;
		ra->seq = 0;
		return done ? (ssize_t)done : rc;
	}
	ra->next = off + done;
	return (ssize_t)done;
}

ssize_t nfs_ra_read(struct nfs_loc *loc, struct nfs_ra *ra, struct nfs_conn *conn,
		    const struct nfs_rtarget *t, const struct nfs_gen *gen, void *buf, size_t size,
		    uint64_t off, gint64 deadline)
{
	size_t done = 0;
	int rc;

	rc = prepare(loc, ra, conn, t, gen, off, size);
	while (rc == 0 && done < size) {
		uint64_t at = off + done;
		struct nfs_raseg *s = seg_at(ra, at);
		size_t n;

		if (!s) { /* past a segment that saw the end of the file */
			rc = refill(ra, conn, t, at, off + size);
			continue;
		}
		rc = seg_wait(loc, conn, s, deadline);
		if (rc)
			break;
		if (seg_ends_file(ra, s, at))
			break;
		if (at >= s->off + s->got) {
			rc = refill(ra, conn, t, at, off + size);
			continue;
		}
		n = MIN(size - done, (size_t)(s->off + s->got - at));
		memcpy((char *)buf + done, s->data + (at - s->off), n);
		done += n;
		seg_use(ra, s, n);
	}
	return finish(ra, off, done, rc);
}

ssize_t nfs_ra_held(struct nfs_loc *loc, struct nfs_ra *ra, struct nfs_conn *conn,
		    const struct nfs_rtarget *t, const struct nfs_gen *gen, size_t size,
		    uint64_t off, gint64 deadline, const void **data, void **ref)
{
	struct nfs_raseg *s;
	size_t n;
	int rc;

	rc = prepare(loc, ra, conn, t, gen, off, size);
	if (rc)
		return finish(ra, off, 0, rc);
	s = seg_at(ra, off);
	if (!s || off + size > s->off + s->len)
		return -EAGAIN; /* not one segment's: copied by nfs_ra_read() */
	rc = seg_wait(loc, conn, s, deadline);
	if (rc)
		return finish(ra, off, 0, rc);
	if (off + size > s->off + s->got && !seg_ends_file(ra, s, MAX(off, s->off + s->got)))
		return -EAGAIN; /* a short READ: nfs_ra_read() asks for the rest */
	n = off >= s->off + s->got ? 0 : MIN(size, (size_t)(s->off + s->got - off));
	g_mutex_lock(&ra_lock);
	s->refs++;
	g_mutex_unlock(&ra_lock);
	*data = s->data + (off - s->off);
	*ref = s;
	seg_use(ra, s, n);
	return finish(ra, off, n, 0);
}
