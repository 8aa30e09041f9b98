/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_readahead.c - read-ahead of the SMB backend. libsmbclient has no asynchronous calls, and
 * a handle's requests run one at a time on its context: a file read sequentially through FUSE
 * costs a round trip per kernel request (at most a mebibyte), with the server, the network and
 * the copy to the kernel taking turns. So once a handle's reads follow each other, a reader
 * thread (loc->readers) reads the next block of the file, up to SMB_RA_BLOCK_MAX in one READ,
 * while the kernel's requests are served from the block before it, without a copy
 * (smb_read_held()). A reader thread that has read a block asks for the next one itself.
 *
 * Each handle has two blocks: the one being read by the kernel, and the one being filled. A
 * block serves only reads that come after it was asked for: any change to the file's data that
 * the daemon makes or hears of (a write through any handle of the node, a truncation, a change
 * notification from the server) moves the handle's generation on, and blocks of an older
 * generation are dropped, as is a block older than SMB_RA_AGE_US (another client's writes
 * without notification show no later than the kernel's own caching would let them). A
 * handle's reads that do not follow each other are read as they come, and nothing is kept.
 */
#include <errno.h>
#include <string.h>

#include "backends/smb/smb.h"

#define SMB_RA_BLOCK_MIN (2 << 20)
#define SMB_RA_BLOCK_MAX (4 << 20)   /* 2, 4 and 8 MiB read alike on loopback; 4 holds less */
#define SMB_RA_SEQUENTIAL 2	     /* reads in a row that follow each other start it */
#define SMB_RA_TOTAL_MAX (256 << 20) /* blocks held by every handle of the daemon */
#define SMB_RA_AGE_US (G_USEC_PER_SEC)
#define SMB_RA_WAKE_US (G_USEC_PER_SEC / 10) /* a wait looks for Ctrl-C this often */
/* The kernel sends a file's read-ahead requests at once, and they may arrive out of order: a
 * read this close to where the last one ended still follows it. */
#define SMB_RA_NEAR (4 << 20)

enum { RA_EMPTY, RA_FILLING, RA_READY };

struct smb_rablock {
	char *data;
	size_t cap;   /* bytes allocated */
	off_t off;    /* where in the file */
	size_t asked; /* bytes asked for */
	size_t len;   /* bytes read: fewer than asked where the file ended */
	int state;
	guint gen;	   /* the handle's generation when it was asked for */
	gint64 at;	   /* when it was read (monotonic µs) */
	bool taken;	   /* its reader thread has it: not to be reused */
	unsigned int refs; /* replies being sent from it (smb_ra_held()): not to be reused */
};

struct smb_ra {
	GMutex lock;
	GCond cond; /* a block was read */
	struct smb_rablock b[2];
	off_t next;	  /* where a read that follows the last one starts */
	unsigned int seq; /* reads in a row that followed the one before */
	size_t block;	  /* the size of the next block */
	bool eof;	  /* a read ended at the end of the file: nothing beyond to read ahead */
	bool busy;	  /* a reader thread was given the handle */
	bool closing;	  /* released: nothing more is read ahead */
	guint gen;	  /* moved on by changes to the data (atomic) */
};

/* Bytes of blocks held by every handle of the daemon, against SMB_RA_TOTAL_MAX. */
static int64_t smb_ra_total;

struct smb_ra *smb_ra_new(void)
{
	struct smb_ra *ra = g_new0(struct smb_ra, 1);

	g_mutex_init(&ra->lock);
	g_cond_init(&ra->cond);
	ra->block = SMB_RA_BLOCK_MIN;
	return ra;
}

void smb_ra_close(struct smb_ra *ra)
{
	if (!ra)
		return;
	g_mutex_lock(&ra->lock);
	ra->closing = true;
	/* the reader thread uses the handle; a reply still being sent uses a block (the kernel
	 * may send RELEASE as soon as it has the reply) */
	while (ra->busy || ra->b[0].refs || ra->b[1].refs)
		g_cond_wait(&ra->cond, &ra->lock);
	g_mutex_unlock(&ra->lock);
}

void smb_ra_free(struct smb_ra *ra)
{
	if (!ra)
		return;
	smb_ra_close(ra);
	for (int i = 0; i < 2; i++) {
		__atomic_sub_fetch(&smb_ra_total, (int64_t)ra->b[i].cap, __ATOMIC_RELAXED);
		g_free(ra->b[i].data);
	}
	g_mutex_clear(&ra->lock);
	g_cond_clear(&ra->cond);
	g_free(ra);
}

void smb_ra_stale(struct smb_ra *ra)
{
	g_atomic_int_inc(&ra->gen);
}

/* Wait for a block being read (ra->lock): its READ has the location's timeout, but the caller
 * may be interrupted before that. 0 or -EINTR. */
static int ra_wait(struct smb_ra *ra)
{
	if (smb_interrupted())
		return -EINTR;
	g_cond_wait_until(&ra->cond, &ra->lock, g_get_monotonic_time() + SMB_RA_WAKE_US);
	return 0;
}

/* Does `b` hold (or will it hold) data of generation `gen` that may still be served? */
static bool ra_block_valid(const struct smb_rablock *b, guint gen, gint64 now)
{
	if (b->state == RA_EMPTY || b->gen != gen)
		return false;
	return b->state == RA_FILLING || now - b->at < SMB_RA_AGE_US;
}

/* The block of generation `gen` that holds `pos`, or NULL (ra->lock). */
static struct smb_rablock *ra_find(struct smb_ra *ra, off_t pos, guint gen, gint64 now)
{
	for (int i = 0; i < 2; i++) {
		struct smb_rablock *b = &ra->b[i];

		if (ra_block_valid(b, gen, now) && pos >= b->off &&
		    pos < b->off + (off_t)MAX(b->asked, 1))
			return b;
	}
	return NULL;
}

/*
 * Ask a reader thread for the next block while the reader has less than two blocks ahead of it
 * (ra->lock): at the end of the valid blocks, into a block that is free or consumed. One block
 * is filled at a time: the handle's requests run one at a time anyway.
 */
static void ra_ahead(struct smb_loc *loc, struct smb_file *fh, struct smb_ra *ra, guint gen,
		     gint64 now)
{
	struct smb_rablock *free_b = NULL;
	off_t end = ra->next;
	size_t want;

	if (ra->busy || ra->eof || ra->closing || ra->seq < SMB_RA_SEQUENTIAL)
		return;
	for (int i = 0; i < 2; i++) {
		struct smb_rablock *b = &ra->b[i];

		if (ra_block_valid(b, gen, now) && b->off + (off_t)b->asked > ra->next) {
			if (b->state == RA_READY && b->len < b->asked)
				return; /* it holds the end of the file */
			end = MAX(end, b->off + (off_t)b->asked);
		} else if (!b->taken && !b->refs) {
			free_b = b;
		}
	}
	if (!free_b || end - ra->next >= 2 * (off_t)ra->block)
		return;
	want = ra->block;
	if (want > free_b->cap) {
		if ((uint64_t)__atomic_load_n(&smb_ra_total, __ATOMIC_RELAXED) + want -
			    free_b->cap >
		    SMB_RA_TOTAL_MAX)
			return; /* read as the kernel asks, as without read-ahead */
		__atomic_add_fetch(&smb_ra_total, (int64_t)(want - free_b->cap), __ATOMIC_RELAXED);
		g_free(free_b->data);
		free_b->data = g_malloc(want);
		free_b->cap = want;
	}
	free_b->off = end;
	free_b->asked = want;
	free_b->len = 0;
	free_b->gen = gen;
	free_b->state = RA_FILLING;
	free_b->taken = true;
	ra->block = MIN(ra->block * 2, (size_t)SMB_RA_BLOCK_MAX);
	ra->busy = true;
	g_thread_pool_push(loc->readers, fh, NULL);
}

void smb_ra_run(gpointer fh_, gpointer loc_)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	struct smb_ra *ra = fh->ra;
	struct smb_rablock *b = NULL;
	ssize_t n;

	g_mutex_lock(&ra->lock);
	for (int i = 0; i < 2; i++) {
		if (ra->b[i].taken && ra->b[i].state == RA_FILLING)
			b = &ra->b[i];
	}
	g_mutex_unlock(&ra->lock);
	/* Writes queued before the block was asked for are on the server first; later ones
	 * moved the generation on. */
	smb_wb_node_wait(loc, fh->node);
	n = smb_read_direct(loc, fh, b->data, b->asked, b->off);
	g_mutex_lock(&ra->lock);
	if (n >= 0) {
		b->len = (size_t)n;
		b->at = g_get_monotonic_time();
		b->state = RA_READY;
	} else {
		b->state = RA_EMPTY; /* the kernel's own request tries again, and says why */
	}
	b->taken = false;
	ra->busy = false;
	if (n > 0 && b->gen == (guint)g_atomic_int_get(&ra->gen))
		/* the next block at once, not when the reader comes to this one */
		ra_ahead(loc, fh, ra, b->gen, g_get_monotonic_time());
	g_cond_broadcast(&ra->cond);
	g_mutex_unlock(&ra->lock);
}

/*
 * Copy what the blocks hold of [off, off + size) from `off` on (ra->lock), waiting for a block
 * being read. Returns the bytes copied, or -EINTR; *eof when they end where the file ended.
 */
static ssize_t ra_copy(struct smb_ra *ra, char *buf, size_t size, off_t off, guint gen, bool *eof)
{
	size_t done = 0;

	*eof = false;
	while (done < size) {
		gint64 now = g_get_monotonic_time();
		off_t pos = off + (off_t)done;
		struct smb_rablock *b = ra_find(ra, pos, gen, now);
		size_t n;

		if (!b)
			break;
		if (b->state == RA_FILLING) {
			if (ra_wait(ra) != 0)
				return -EINTR;
			continue;
		}
		if (pos >= b->off + (off_t)b->len) {
			*eof = b->len < b->asked;
			break;
		}
		n = MIN(size - done, b->len - (size_t)(pos - b->off));
		memcpy(buf + done, b->data + (pos - b->off), n);
		done += n;
	}
	return (ssize_t)done;
}

/* A read of [off, off + done) was answered, ending at the end of the file when `eof`
 * (ra->lock): follow the reader, and read ahead of it. */
static void ra_served(struct smb_loc *loc, struct smb_file *fh, struct smb_ra *ra, guint gen,
		      off_t off, size_t done, bool eof)
{
	if (off == 0 || (off + SMB_RA_NEAR >= ra->next && off <= ra->next + SMB_RA_NEAR)) {
		ra->seq++;
		ra->next = MAX(ra->next, off + (off_t)done);
	} else {
		ra->seq = 0;
		ra->block = SMB_RA_BLOCK_MIN;
		ra->next = off + (off_t)done;
	}
	ra->eof = eof;
	ra_ahead(loc, fh, ra, gen, g_get_monotonic_time());
}

ssize_t smb_read_held(void *loc_, ff_fh *fh_, size_t size, off_t off, const void **data, void **ref)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = (struct smb_file *)fh_;
	struct smb_ra *ra = fh->ra;
	struct smb_rablock *b;
	guint gen;
	size_t n = 0;

	if (!ra)
		return -EAGAIN;
	smb_wb_node_wait(loc, fh->node); /* a read sees what was written */
	gen = (guint)g_atomic_int_get(&ra->gen);
	g_mutex_lock(&ra->lock);
	while ((b = ra_find(ra, off, gen, g_get_monotonic_time())) && b->state == RA_FILLING) {
		if (ra_wait(ra) != 0) {
			g_mutex_unlock(&ra->lock);
			return -EINTR;
		}
	}
	if (b && off + (off_t)size > b->off + (off_t)b->len && b->len == b->asked)
		b = NULL; /* the rest is in the next block: copied by smb_ra_read() */
	if (b) {
		n = MIN(size, (size_t)MAX(b->off + (off_t)b->len - off, 0));
		*data = b->data + (off - b->off);
		*ref = b;
		b->refs++;
		ra_served(loc, fh, ra, gen, off, n, n < size);
	}
	g_mutex_unlock(&ra->lock);
	return b ? (ssize_t)n : -EAGAIN;
}

void smb_read_done(void *loc, ff_fh *fh, void *ref)
{
	struct smb_ra *ra = ((struct smb_file *)fh)->ra;
	struct smb_rablock *b = ref;

	g_mutex_lock(&ra->lock);
	b->refs--;
	g_cond_broadcast(&ra->cond);
	g_mutex_unlock(&ra->lock);
}

ssize_t smb_ra_read(struct smb_loc *loc, struct smb_file *fh, void *buf, size_t size, off_t off)
{
	struct smb_ra *ra = fh->ra;
	guint gen = (guint)g_atomic_int_get(&ra->gen);
	ssize_t got, n = 0;
	size_t done;
	bool eof;

	g_mutex_lock(&ra->lock);
	got = ra_copy(ra, buf, size, off, gen, &eof);
	g_mutex_unlock(&ra->lock);
	if (got < 0)
		return got;
	done = (size_t)got;
	if (done < size && !eof) { /* the rest as the kernel asked for it */
		n = smb_read_direct(loc, fh, (char *)buf + done, size - done, off + (off_t)done);
		if (n < 0 && done == 0)
			return n;
		if (n < 0)
			n = 0; /* what was copied; the next read reports the error */
		eof = (size_t)n < size - done;
	}
	done += (size_t)n;
	g_mutex_lock(&ra->lock);
	ra_served(loc, fh, ra, gen, off, done, eof);
	g_mutex_unlock(&ra->lock);
	return (ssize_t)done;
}
