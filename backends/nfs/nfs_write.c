/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_write.c - WRITE in pipelined chunks for both protocol versions, and the write verifier.
 *
 * libnfs 4.0's nfs_pwrite() reports a failed NFSv3 WRITE as a broken connection: its status is
 * -EFAULT and its message is garbage, so a full disk looked like a dead server. Neither it nor
 * its COMMIT looks at the write verifier, so a server that restarted between an UNSTABLE WRITE
 * and the COMMIT lost that data silently. Here each chunk's status reaches the writer
 * (NFS3ERR_NOSPC as ENOSPC, NFS4ERR_DQUOT as EDQUOT...), and the verifier of every UNSTABLE
 * WRITE is compared with the next COMMIT's. A changed verifier means the server restarted and may
 * have dropped what it had not made stable; fsync() or close() then fails with EIO.
 *
 * The encoding of a chunk is the version's own (nfs3_write_chunk(), nfs4_write_chunk()); its
 * reply comes back through nfs_wchunk_done().
 */
#include <errno.h>
#include <string.h>

#include "backends/nfs/nfs.h"

struct nfs_wpipe {
	int inflight;
	int err;	   /* the first error of any chunk */
	uint64_t short_at; /* the lowest offset a short WRITE stopped at, or UINT64_MAX */
	bool abandoned;	   /* the writer left: the last chunk's reply frees the pipe */
	struct nfs_wverf verf;
};

void nfs_wverf_add(struct nfs_wverf *w, const char verf[NFS_VERF_SIZE])
{
	if (!w->set) {
		memcpy(w->verf, verf, NFS_VERF_SIZE);
		w->set = true;
	} else if (memcmp(w->verf, verf, NFS_VERF_SIZE) != 0) {
		w->changed = true;
	}
}

static void wverf_merge(struct nfs_wverf *into, const struct nfs_wverf *from)
{
	if (from->set)
		nfs_wverf_add(into, from->verf);
	into->changed |= from->changed;
}

int nfs_wverf_commit(struct nfs_wverf *w, const char verf[NFS_VERF_SIZE], const char *uri)
{
	bool lost = w->changed || (w->set && memcmp(w->verf, verf, NFS_VERF_SIZE) != 0);

	memset(w, 0, sizeof(*w));
	if (!lost)
		return 0;
	g_warning("%s: the server restarted before COMMIT (its write verifier changed): data "
		  "written since the last fsync may be lost",
		  uri);
	return -EIO;
}

void nfs_wchunk_done(struct nfs_wchunk *ch, int err, size_t count, bool stable,
		     const char verf[NFS_VERF_SIZE])
{
	struct nfs_wpipe *p = ch->pipe;

	p->inflight--;
	if (err == 0) {
		if (count < ch->len && ch->off + count < p->short_at)
			p->short_at = ch->off + count;
		if (!stable)
			nfs_wverf_add(&p->verf, verf);
	} else if (!p->err) {
		p->err = err;
	}
	g_free(ch);
	if (p->abandoned && p->inflight == 0)
		g_free(p);
}

/* Keep `depth` chunks of at most `chunk` bytes in flight until [pos, end) is sent and answered.
 * Returns 0, the first chunk's error, or the event loop's; the pipe is then abandoned if chunks
 * are still in flight (their replies free it). */
static int pipe_run(struct nfs_conn *conn, const struct nfs_wtarget *t, struct nfs_wpipe *p,
		    uint64_t off, uint64_t pos, uint64_t end, const void *buf, gint64 deadline)
{
	uint64_t next = pos;

	for (;;) {
		int rc;

		while (next < end && !p->err && p->inflight < t->depth) {
			struct nfs_wchunk *ch = g_new(struct nfs_wchunk, 1);

			ch->pipe = p;
			ch->off = next;
			ch->len = (size_t)MIN((uint64_t)t->chunk, end - next);
			/* encoded at once: nothing of `buf` is kept */
			rc = t->send(conn, t, ch, (const char *)buf + (next - off));
			if (rc) {
				g_free(ch);
				p->err = rc;
				break;
			}
			p->inflight++;
			next += ch->len;
		}
		if (p->inflight == 0)
			return p->err;
		rc = nfs_event_step(conn->nfs, deadline);
		if (rc) {
			/* the failure may have run every callback already: then nothing frees p */
			p->abandoned = p->inflight > 0;
			return rc;
		}
	}
}

ssize_t nfs_write_chunks(struct nfs_conn *conn, const struct nfs_wtarget *t, uint64_t off,
			 size_t size, const void *buf, struct nfs_wverf *verf, gint64 deadline)
{
	uint64_t pos = off, end = off + size;

	while (pos < end) {
		struct nfs_wpipe *p = g_new0(struct nfs_wpipe, 1);
		int rc;

		p->short_at = UINT64_MAX;
		rc = pipe_run(conn, t, p, off, pos, end, buf, deadline);
		if (p->abandoned)
			return rc; /* still pointed at by chunks in flight */
		wverf_merge(verf, &p->verf);
		if (rc == 0 && p->short_at != UINT64_MAX && p->short_at <= pos)
			rc = -EIO; /* the server took nothing: no progress to make */
		pos = p->short_at; /* rewrite from the first short WRITE on: writes are idempotent */
		g_free(p);
		if (rc)
			return rc;
	}
	return (ssize_t)size;
}
