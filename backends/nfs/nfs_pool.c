/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_pool.c - pooled libnfs contexts. A libnfs context is not thread safe and carries one
 * AUTH_SYS identity, so each location keeps, per identity (uid, gid, groups), up to
 * NFS_CONNS_PER_CRED mounted contexts; a request leases one for the length of one operation.
 * A context whose connection broke (timeout, reset, lost NFSv4 state) is retired and replaced
 * on demand, so a location recovers by itself when its server comes back.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-zdr.h>

#include "backends/nfs/nfs.h"

/* rpc_set_autoreconnect() (nfs.h): nfs_mount() of NFSv4 leaves the RPC
 * context with reconnection turned off (rpc_connect_async() clears it and only the NFSv3 mount
 * path sets it again); without it a context whose connection drops fails its calls with the
 * callbacks of pending RPCs still registered. With the default (-1, forever) a call on a killed
 * server spins reconnecting until its timeout; a few attempts let it fail at once instead
 * (ECONNRESET), while a connection the server closed for idleness is still reopened quietly. */
#define NFS_RECONNECT_TRIES 2

struct nfs_credset {
	struct nfs_ident id;
	GQueue idle;	    /* struct nfs_conn *, most recently used first */
	unsigned int count; /* contexts of this identity alive or being created */
};

static guint ident_hash(gconstpointer p)
{
	const struct nfs_ident *id = p;
	guint h = id->uid * 2654435761u ^ id->gid;

	for (uint32_t i = 0; i < id->ngroups; i++)
		h = h * 31 + id->groups[i];
	return h;
}

static gboolean ident_equal(gconstpointer a, gconstpointer b)
{
	const struct nfs_ident *x = a, *y = b;

	return x->uid == y->uid && x->gid == y->gid && x->ngroups == y->ngroups &&
	       memcmp(x->groups, y->groups, x->ngroups * sizeof(x->groups[0])) == 0;
}

void nfs_ident_from_cred(struct nfs_ident *id, const struct ff_cred *cred)
{
	memset(id, 0, sizeof(*id));
	id->uid = cred ? cred->uid : 0;
	id->gid = cred ? cred->gid : 0;
	if (cred && cred->groups) {
		for (int i = 0; i < cred->ngroups && id->ngroups < NFS_MAX_GROUPS; i++)
			id->groups[id->ngroups++] = cred->groups[i];
	}
}

gint64 nfs_deadline(const struct nfs_loc *loc)
{
	return g_get_monotonic_time() + (gint64)loc->timeout_ms * 1000;
}

int nfs_set_deadline(struct nfs_context *nfs, gint64 deadline)
{
	gint64 left = (deadline - g_get_monotonic_time()) / 1000;

	if (left <= 0)
		return -ETIMEDOUT;
	nfs_set_timeout(nfs, (int)MIN(left, G_MAXINT));
	return 0;
}

/* The core's services (attach()), or NULL. */
static const struct ff_host *host;

void nfs_attach(const struct ff_host *h)
{
	host = h;
}

gint64 nfs_call_deadline(struct nfs_context *nfs)
{
	return g_get_monotonic_time() + ((gint64)MAX(nfs_get_timeout(nfs), 0) + 1000) * 1000;
}

int nfs_event_step(struct nfs_context *nfs, gint64 deadline)
{
	struct pollfd pfd = { .fd = nfs_get_fd(nfs), .events = nfs_which_events(nfs) };
	gint64 left = deadline - g_get_monotonic_time();
	int n;

	if (left <= 0)
		return -ETIMEDOUT;
	if (host && host->interrupted && host->interrupted())
		return -EINTR; /* the caller abandons the call; its late reply is dropped */
	/* Wake at least every 100 ms: libnfs expires RPCs inside nfs_service(), and an interrupted
	 * caller is let go. */
	n = poll(&pfd, 1, (int)MIN(left / 1000 + 1, 100));
	if (n < 0 && errno == EINTR)
		return 0; /* never pass -1 to libnfs: it would drop the connection */
	if (nfs_service(nfs, n < 0 ? POLLERR : pfd.revents) < 0)
		return -ECONNRESET;
	return 0;
}

/* Wait, with the pool's lock held, for a context to come free: 0 when woken (look again),
 * -ETIMEDOUT at `deadline`, -EINTR once the caller was interrupted (looked at every 100 ms, as
 * nfs_event_step() does: another call may hold the context as long as the server is silent). */
static int pool_wait(struct nfs_pool *pool, gint64 deadline)
{
	gint64 now = g_get_monotonic_time();

	if (now >= deadline)
		return -ETIMEDOUT;
	if (host && host->interrupted && host->interrupted())
		return -EINTR;
	g_cond_wait_until(&pool->cond, &pool->lock, MIN(deadline, now + G_USEC_PER_SEC / 10));
	return 0;
}

int nfs_rpc_step(struct nfs_loc *loc, struct nfs_conn *conn, gint64 sent, gint64 deadline,
		 const char *what, bool *expired)
{
	gint64 expire = sent + (gint64)loc->timeout_ms * 1000;
	int rc;

	*expired = false;
	if (g_get_monotonic_time() < expire) {
		rc = nfs_event_step(conn->nfs, MIN(deadline, expire));
		/* -ETIMEDOUT: the caller's deadline, unless the server's time came first */
		if (rc != -ETIMEDOUT || expire > deadline || g_get_monotonic_time() < expire)
			return rc;
	}
	g_warning("%s: the server answered no %s for %d ms", loc->uri, what, loc->timeout_ms);
	*expired = true;
	return -ETIMEDOUT;
}

int nfs_event_loop(struct nfs_context *nfs, const int *done, gint64 deadline)
{
	while (!*done) {
		int rc = nfs_event_step(nfs, deadline);

		if (rc)
			return rc;
	}
	return 0;
}

static gint context_serial;

struct mount_wait {
	int done;
	int status;
	char *msg;
};

static void mount_cb(int status, struct nfs_context *nfs, void *data, void *private_data)
{
	struct mount_wait *w = private_data;

	w->done = 1;
	w->status = status;
	if (status < 0 && data && !w->msg) /* the first reason; a cancellation may follow */
		w->msg = g_strdup(data);
}

struct nfs_context *nfs_context_new(struct nfs_loc *loc, const struct nfs_ident *id,
				    gint64 deadline, int *err, char **msg)
{
	struct mount_wait w = { 0 };
	struct nfs_context *nfs;
	struct nfs_url *url;
	struct AUTH *auth;
	GString *u;
	char *name;
	int rc;

	nfs = nfs_init_context();
	if (!nfs) {
		*err = -ENOMEM;
		return NULL;
	}
	/* libnfs 4.0 has no setters for the ports: its URL parser sets them on the context. */
	u = g_string_new("nfs://");
	g_string_append_printf(u, "%s/?version=%d", loc->host, loc->version);
	if (loc->nfsport)
		g_string_append_printf(u, "&nfsport=%d", loc->nfsport);
	if (loc->mountport)
		g_string_append_printf(u, "&mountport=%d", loc->mountport);
	url = nfs_parse_url_incomplete(nfs, u->str);
	g_string_free(u, TRUE);
	if (!url) {
		rc = -EINVAL;
		goto out_destroy;
	}
	nfs_destroy_url(url);

	auth = libnfs_authunix_create("fedfuse", id->uid, id->gid, id->ngroups,
				      (uint32_t *)id->groups);
	if (!auth) {
		rc = -ENOMEM;
		goto out_destroy;
	}
	nfs_set_auth(nfs, auth);
	/* libnfs names every context "Libnfs pid:P T" (T in seconds): a second NFSv4 context made in
	 * the same second would look like the first one rebooted, and the server expire its state.
	 * NFSv3 has no client identity. libnfs before 6.0 does not free the name it replaces (a
	 * leak of some 28 bytes per context, suppressed in test/lsan.supp). */
	if (loc->version == 4) {
		name = g_strdup_printf("fedfuse %s pid:%d ctx:%u t:%" G_GINT64_FORMAT,
				       g_get_host_name(), (int)getpid(),
				       (unsigned int)g_atomic_int_add(&context_serial, 1),
				       g_get_real_time());
		nfs4_set_client_name(nfs, name);
		g_free(name);
	}
	nfs_set_dircache(nfs, 0); /* its entries would carry stale attributes */
	nfs_umask(nfs, 0);	  /* the core has applied the caller's umask */
	nfs_set_autoreconnect(nfs, -1);
	rc = nfs_set_deadline(nfs, deadline);
	if (rc)
		goto out_destroy;

	if (nfs_mount_async(nfs, loc->host, loc->mount_path, mount_cb, &w) != 0) {
		rc = nfs_map_error(nfs, -1);
		goto out_destroy;
	}
	rc = nfs_event_loop(nfs, &w.done, deadline);
	if (rc == 0 && w.status < 0)
		rc = nfs_map_error(nfs, w.status);
	if (rc == -ECONNRESET || (rc == -EIO && w.msg && strstr(w.msg, "connect")))
		rc = -ECONNREFUSED; /* no connection was ever made */
	if (rc)
		goto out_destroy;
	rpc_set_autoreconnect(nfs_get_rpc_context(nfs), NFS_RECONNECT_TRIES);
	g_free(w.msg);
	return nfs;

out_destroy:
	if (msg && !*msg)
		*msg = g_strdup_printf("%s: %s", loc->uri,
				       w.msg ? w.msg
					     : (nfs_get_error(nfs) ? nfs_get_error(nfs)
								   : g_strerror(-rc)));
	/* Destroying cancels what is pending; mount_cb writes into `w` (a message for the
	 * cancelled call among others), still alive here, so free its message only after. */
	nfs_context_free(nfs);
	g_free(w.msg);
	*err = rc;
	return NULL;
}

void nfs_pool_init(struct nfs_loc *loc)
{
	g_mutex_init(&loc->pool.lock);
	g_cond_init(&loc->pool.cond);
	loc->pool.sets = g_hash_table_new(ident_hash, ident_equal);
	loc->pool.total = 0;
}

/*
 * Destroy a context without leaking its socket. libnfs 4.0 keeps the socket of a connection
 * it reconnects as old_fd until the new one is up (dup2()'d onto that number); when the
 * reconnection fails, or the context is destroyed before it succeeds, nothing closes old_fd:
 * a soak with one server restart leaked a socket per context that had been reconnecting.
 * nfs_get_fd() returns old_fd while it is set: if that descriptor is still the same socket
 * after the destruction, close it. (Another thread may have been given the number since: then
 * it is another file, with another inode, and is left alone.)
 */
void nfs_context_free(struct nfs_context *nfs)
{
	int fd = nfs_get_fd(nfs);
	struct stat before, after;
	bool check = fd > 2 && fstat(fd, &before) == 0 && S_ISSOCK(before.st_mode);

	nfs_destroy_context(nfs);
	if (check && fstat(fd, &after) == 0 && after.st_dev == before.st_dev &&
	    after.st_ino == before.st_ino)
		close(fd);
}

static void conn_free(struct nfs_conn *conn)
{
	/* libnfs' sync wrappers leave their wait loop when nfs_service() fails, possibly with RPCs
	 * still pending whose callbacks point into the returned call's stack frame; destroying the
	 * context would run them. With reconnection on, libnfs fails every pending RPC before its
	 * nfs_service() fails, so this should not happen; if it seems to, leak the context. (Its
	 * queue length alone cannot tell: libnfs 4.0 does not uncount RPCs that timed out.) */
	if (!conn->suspect || nfs_queue_length(conn->nfs) == 0) {
		nfs_context_free(conn->nfs);
	} else {
		g_warning("%s: leaking a context with %d RPCs pending", conn->loc->uri,
			  nfs_queue_length(conn->nfs));
	}
	if (conn->opens)
		g_hash_table_destroy(conn->opens);
	nfs4_client_free(conn->v4client);
	g_free(conn);
}

/* Take `conn` out of service; called with the pool lock held. True when it is to be freed. */
static bool retire_locked(struct nfs_pool *pool, struct nfs_conn *conn)
{
	if (!conn->broken) {
		conn->broken = true;
		g_queue_remove(&conn->set->idle, conn);
		conn->set->count--;
		pool->total--;
		conn->refs--; /* the pool's own */
		g_cond_broadcast(&pool->cond);
	}
	return conn->refs == 0 && !conn->busy;
}

/* Retire contexts idle for long that no handle uses; called with the pool lock held. Returns
 * them in `out` to be freed without the lock. */
static void reap_locked(struct nfs_pool *pool, struct nfs_credset *set, GSList **out, bool force)
{
	gint64 old = g_get_monotonic_time() - (gint64)NFS_IDLE_SECONDS * G_USEC_PER_SEC;
	GList *l = set->idle.tail;

	while (l) {
		struct nfs_conn *conn = l->data;
		GList *prev = l->prev;

		if (conn->refs == 1 && (force || conn->idle_since < old)) {
			if (retire_locked(pool, conn))
				*out = g_slist_prepend(*out, conn);
			if (force)
				return;
		}
		l = prev;
	}
}

static void free_list(GSList *list)
{
	g_slist_free_full(list, (GDestroyNotify)conn_free);
}

/* Take the most recently used idle context of `set`: with `avoid`, one that does not have that
 * file open, unless `any`. Called with the pool lock held. */
static struct nfs_conn *take_idle_locked(struct nfs_credset *set, const void *avoid, bool any)
{
	for (GList *l = set->idle.head; l; l = l->next) {
		struct nfs_conn *conn = l->data;

		if (any || !avoid || !conn->opens || !g_hash_table_contains(conn->opens, avoid)) {
			g_queue_delete_link(&set->idle, l);
			return conn;
		}
	}
	return NULL;
}

int nfs_conn_get(struct nfs_loc *loc, const struct nfs_ident *id, gint64 deadline,
		 const void *avoid, struct nfs_conn **connp)
{
	struct nfs_pool *pool = &loc->pool;
	struct nfs_credset *set;
	struct nfs_conn *conn;
	GSList *dead = NULL;
	char *msg = NULL;
	int rc;

	g_mutex_lock(&pool->lock);
	set = g_hash_table_lookup(pool->sets, id);
	if (!set) {
		set = g_new0(struct nfs_credset, 1);
		set->id = *id;
		g_queue_init(&set->idle);
		g_hash_table_insert(pool->sets, &set->id, set);
	}
	reap_locked(pool, set, &dead, false);
	for (;;) {
		conn = take_idle_locked(set, avoid, false);
		if (!conn) {
			if (set->count < NFS_CONNS_PER_CRED && pool->total >= NFS_CONNS_PER_LOC) {
				/* Make room by closing an idle context of another identity. */
				GHashTableIter it;
				gpointer k, v;

				g_hash_table_iter_init(&it, pool->sets);
				while (pool->total >= NFS_CONNS_PER_LOC &&
				       g_hash_table_iter_next(&it, &k, &v))
					if (v != set)
						reap_locked(pool, v, &dead, true);
			}
			if (set->count < NFS_CONNS_PER_CRED && pool->total < NFS_CONNS_PER_LOC)
				break;
			/* No new one may be made: sharing an open file's state beats waiting. */
			conn = take_idle_locked(set, avoid, true);
		}
		if (conn) {
			conn->busy = true;
			g_mutex_unlock(&pool->lock);
			free_list(dead);
			rc = nfs_set_deadline(conn->nfs, deadline);
			if (rc) {
				nfs_conn_put(conn, 0);
				return rc;
			}
			*connp = conn;
			return 0;
		}
		rc = pool_wait(pool, deadline);
		if (rc) {
			g_mutex_unlock(&pool->lock);
			free_list(dead);
			return rc;
		}
	}
	set->count++;
	pool->total++;
	g_mutex_unlock(&pool->lock);
	free_list(dead);

	conn = g_new0(struct nfs_conn, 1);
	conn->loc = loc;
	conn->set = set;
	conn->refs = 1;
	conn->busy = true;
	if (loc->version == 4)
		conn->opens = g_hash_table_new(NULL, NULL);
	conn->nfs = nfs_context_new(loc, id, deadline, &rc, &msg);
	if (!conn->nfs) {
		g_debug("nfs: %s", msg ? msg : loc->uri);
		g_free(msg);
		if (conn->opens)
			g_hash_table_destroy(conn->opens);
		g_free(conn);
		g_mutex_lock(&pool->lock);
		set->count--;
		pool->total--;
		g_cond_broadcast(&pool->cond);
		g_mutex_unlock(&pool->lock);
		return rc;
	}
	conn->readmax = nfs_get_readmax(conn->nfs);
	conn->writemax = nfs_get_writemax(conn->nfs);
	if (loc->version == 4) { /* libnfs 4.0 asks only NFSv3 servers (FSINFO) */
		uint64_t rmax = 0, wmax = 0;
		uint32_t lease = 0;

		if (nfs4_server_attrs(conn->nfs, &lease, &rmax, &wmax) == 0) {
			conn->readmax = rmax;
			conn->writemax = wmax;
			if (lease > 0 && lease < 86400)
				g_atomic_int_set(&loc->v4_lease_s, (int)lease); /* nfs_v4_renew.c */
		}
	}
	if (conn->readmax == 0 || conn->readmax > NFS_XFER_MAX)
		conn->readmax = NFS_XFER_MAX;
	if (conn->writemax == 0 || conn->writemax > NFS_XFER_MAX)
		conn->writemax = NFS_XFER_MAX;
	rc = nfs_set_deadline(conn->nfs, deadline);
	if (rc) {
		nfs_conn_put(conn, 0);
		return rc;
	}
	*connp = conn;
	return 0;
}

int nfs_conn_lease(struct nfs_conn *conn, gint64 deadline)
{
	struct nfs_pool *pool = &conn->loc->pool;
	int rc;

	g_mutex_lock(&pool->lock);
	while (conn->busy && !conn->broken) {
		rc = pool_wait(pool, deadline);
		if (rc) {
			g_mutex_unlock(&pool->lock);
			return rc;
		}
	}
	if (conn->broken) {
		g_mutex_unlock(&pool->lock);
		return -ENOTCONN;
	}
	conn->busy = true;
	g_queue_remove(&conn->set->idle, conn);
	g_mutex_unlock(&pool->lock);
	if (nfs_set_deadline(conn->nfs, deadline)) {
		nfs_conn_put(conn, 0);
		return -ETIMEDOUT;
	}
	return 0;
}

void nfs_conn_put(struct nfs_conn *conn, int err)
{
	struct nfs_pool *pool = &conn->loc->pool;
	bool broken, free_it = false;

	broken = nfs_get_fd(conn->nfs) < 0 ||
		 (err < 0 && (ff_errno_is_connection(err) || nfs_error_lost_state(conn->nfs)));
	if (err < 0 && nfs_get_error(conn->nfs) &&
	    strstr(nfs_get_error(conn->nfs), "nfs_service failed"))
		conn->suspect = true;
	g_mutex_lock(&pool->lock);
	conn->busy = false;
	if (broken)
		free_it = retire_locked(pool, conn);
	else if (!conn->broken) {
		conn->idle_since = g_get_monotonic_time();
		g_queue_push_head(&conn->set->idle, conn);
	} else {
		free_it = conn->refs == 0;
	}
	g_cond_broadcast(&pool->cond);
	g_mutex_unlock(&pool->lock);
	if (free_it)
		conn_free(conn);
}

struct nfs_conn *nfs_pool_take_idle_v4(struct nfs_loc *loc, gint64 idle_before)
{
	struct nfs_pool *pool = &loc->pool;
	struct nfs_conn *found = NULL;
	GHashTableIter it;
	gpointer k, v;

	g_mutex_lock(&pool->lock);
	g_hash_table_iter_init(&it, pool->sets);
	while (!found && g_hash_table_iter_next(&it, &k, &v)) {
		struct nfs_credset *set = v;

		for (GList *l = set->idle.head; l; l = l->next) {
			struct nfs_conn *conn = l->data;

			if (conn->v4client && conn->opens && g_hash_table_size(conn->opens) > 0 &&
			    conn->idle_since < idle_before && !conn->broken) {
				found = conn;
				break;
			}
		}
	}
	if (found) {
		found->busy = true;
		g_queue_remove(&found->set->idle, found);
	}
	g_mutex_unlock(&pool->lock);
	return found;
}

void nfs_conn_ref(struct nfs_conn *conn)
{
	g_mutex_lock(&conn->loc->pool.lock);
	conn->refs++;
	g_mutex_unlock(&conn->loc->pool.lock);
}

void nfs_conn_unref(struct nfs_conn *conn)
{
	bool free_it;

	g_mutex_lock(&conn->loc->pool.lock);
	free_it = --conn->refs == 0 && !conn->busy;
	g_mutex_unlock(&conn->loc->pool.lock);
	if (free_it)
		conn_free(conn);
}

void nfs_conn_opened(struct nfs_conn *conn, const void *key, bool open)
{
	int n;

	if (!conn->opens)
		return;
	g_mutex_lock(&conn->loc->pool.lock);
	n = GPOINTER_TO_INT(g_hash_table_lookup(conn->opens, key)) + (open ? 1 : -1);
	if (n > 0)
		g_hash_table_insert(conn->opens, (gpointer)key, GINT_TO_POINTER(n));
	else
		g_hash_table_remove(conn->opens, key);
	g_mutex_unlock(&conn->loc->pool.lock);
}

void nfs_pool_destroy(struct nfs_loc *loc)
{
	struct nfs_pool *pool = &loc->pool;
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, pool->sets);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct nfs_credset *set = v;
		struct nfs_conn *conn;

		while ((conn = g_queue_pop_head(&set->idle)) != NULL)
			conn_free(conn);
		g_free(set);
	}
	g_hash_table_destroy(pool->sets);
	g_cond_clear(&pool->cond);
	g_mutex_clear(&pool->lock);
}
