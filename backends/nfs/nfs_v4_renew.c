/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4_renew.c - keeping NFSv4 leases alive. A server forgets the open state of a client that
 * has sent it nothing for its lease time (RFC 7530 9.6), and libnfs 4.0 never renews. Any
 * operation of a context renews its client's lease; a context with files open on it that has
 * been idle for a quarter of the lease sends RENEW. One thread per NFSv4 location, waking a few
 * times per lease; a context busy with an operation is left alone (that operation renews).
 * A RENEW the server refuses (the lease had expired already) retires the context, and its files
 * are opened again on another, as after a server restart (nfs_file.c).
 */
#include <nfsc/libnfs.h>

#include "backends/nfs/nfs.h"

#define RENEW_LEASE_DEFAULT 90 /* seconds, until the server says (ganesha's, the kernel's) */

struct nfs4_renewer {
	struct nfs_loc *loc;
	GThread *thread;
	GMutex lock;
	GCond cond;
	bool stop;
};

/* A quarter of the lease, at least one second: nfs-ganesha 4.3 has been seen expiring a client
 * idle for less than half the lease time it announces (RENEW after 5-7 s of a 15 s lease:
 * NFS4ERR_EXPIRED). */
static gint64 renew_interval(struct nfs_loc *loc)
{
	int lease = g_atomic_int_get(&loc->v4_lease_s);

	if (lease <= 0)
		lease = RENEW_LEASE_DEFAULT;
	return MAX((gint64)lease * G_USEC_PER_SEC / 4, G_USEC_PER_SEC);
}

static gpointer renew_thread(gpointer data)
{
	struct nfs4_renewer *r = data;
	struct nfs_loc *loc = r->loc;

	g_mutex_lock(&r->lock);
	while (!r->stop) {
		gint64 interval = renew_interval(loc);
		struct nfs_conn *conn;

		g_cond_wait_until(&r->cond, &r->lock, g_get_monotonic_time() + interval / 2);
		if (r->stop)
			break;
		g_mutex_unlock(&r->lock);
		while ((conn = nfs_pool_take_idle_v4(loc, g_get_monotonic_time() - interval))) {
			int rc = nfs_set_deadline(conn->nfs, nfs_deadline(loc));

			if (rc == 0)
				rc = nfs4_client_renew(conn);
			if (rc < 0)
				g_debug("%s: RENEW failed: %s", loc->uri,
					nfs_get_error(conn->nfs) ? nfs_get_error(conn->nfs)
								 : g_strerror(-rc));
			nfs_conn_put(conn, rc);
		}
		g_mutex_lock(&r->lock);
	}
	g_mutex_unlock(&r->lock);
	return NULL;
}

struct nfs4_renewer *nfs4_renewer_start(struct nfs_loc *loc)
{
	struct nfs4_renewer *r = g_new0(struct nfs4_renewer, 1);

	r->loc = loc;
	g_mutex_init(&r->lock);
	g_cond_init(&r->cond);
	r->thread = g_thread_new("nfs4-renew", renew_thread, r);
	return r;
}

void nfs4_renewer_stop(struct nfs4_renewer *r)
{
	if (!r)
		return;
	g_mutex_lock(&r->lock);
	r->stop = true;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
	g_thread_join(r->thread);
	g_cond_clear(&r->cond);
	g_mutex_clear(&r->lock);
	g_free(r);
}
