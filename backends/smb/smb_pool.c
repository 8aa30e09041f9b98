/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_pool.c - libsmbclient contexts for the SMB backend. A context is not thread safe, so each
 * location keeps a pool of them and lends each to one thread at a time; parallel requests get
 * parallel connections and no lock is held across network I/O. This file also owns what
 * libsmbclient keeps per process (thread hooks, logging) and the life of a connection: creation,
 * the first logon, the hold-off after a failed one, and retirement when the connection dies.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/smb/smb.h"

/*
 * Process-wide libsmbclient state. smbc_new_context()/smbc_init_context() and the option
 * setters write Samba's global configuration (lp_set_cmdline), so context creation is
 * serialized by smb_global_lock, and so is every connection until one has logged on (the
 * first logon initialises more globals: gensec, charsets). An anchor context lives as long as
 * the process: freeing the last context would tear the library's globals down
 * (SMBC_module_terminate) under the feet of a thread creating the next one.
 */
static GMutex smb_global_lock;
static SMBCCTX *smb_anchor;
static bool smb_warm; /* a logon has succeeded in this process; smb_global_lock */

/*
 * Threads. Every libsmbclient call pushes and pops talloc stack frames on a stack that is
 * process-global unless Samba's thread hooks are installed: two threads using two different
 * contexts at once then free each other's memory (seen here: "Freed frame ..., expected ...",
 * then "Bad talloc magic value - access after free"). libsmbclient.h declares
 * smbc_thread_posix() for this, but Samba no longer builds it (not exported by Debian 12's
 * libsmbclient.so.0). The hook underneath, smb_thread_set_functions(), is exported by
 * libsamba-util.so.0 (version SAMBA_UTIL_0.0.1), which libsmbclient loads: we install the
 * pthread implementation through it, before any other libsmbclient call. Without it, a
 * process-wide lock serializes all libsmbclient use (correct, not parallel).
 *
 * struct smb_thread_functions mirrors Samba's lib/util/smb_threads.h (unchanged since 2009).
 */
struct smb_thread_functions {
	int (*create_mutex)(const char *lockname, void **pplock, const char *location);
	void (*destroy_mutex)(void *plock, const char *location);
	int (*lock_mutex)(void *plock, int lock_type, const char *location);
	int (*create_tls)(const char *keyname, void **ppkey, const char *location);
	void (*destroy_tls)(void **pkey, const char *location);
	int (*set_tls)(void *pkey, const void *pval, const char *location);
	void *(*get_tls)(void *pkey, const char *location);
};

#define SMB_THREAD_UNLOCK_TYPE 2 /* enum smb_thread_lock_type: SMB_THREAD_UNLOCK */

static int smb_thr_create_mutex(const char *name, void **pplock, const char *location)
{
	pthread_mutex_t *m = malloc(sizeof(*m));

	if (!m)
		return ENOMEM;
	pthread_mutex_init(m, NULL);
	*pplock = m;
	return 0;
}

static void smb_thr_destroy_mutex(void *plock, const char *location)
{
	pthread_mutex_destroy(plock);
	free(plock);
}

static int smb_thr_lock(void *plock, int lock_type, const char *location)
{
	if (lock_type == SMB_THREAD_UNLOCK_TYPE)
		return pthread_mutex_unlock(plock);
	return pthread_mutex_lock(plock);
}

static int smb_thr_create_tls(const char *name, void **ppkey, const char *location)
{
	pthread_key_t *key = malloc(sizeof(*key));
	int rc;

	if (!key)
		return ENOMEM;
	rc = pthread_key_create(key, NULL);
	if (rc) {
		free(key);
		return rc;
	}
	*ppkey = key;
	return 0;
}

static void smb_thr_destroy_tls(void **ppkey, const char *location)
{
	if (*ppkey) {
		pthread_key_delete(*(pthread_key_t *)*ppkey);
		free(*ppkey);
		*ppkey = NULL;
	}
}

static int smb_thr_set_tls(void *pkey, const void *val, const char *location)
{
	return pthread_setspecific(*(pthread_key_t *)pkey, val);
}

static void *smb_thr_get_tls(void *pkey, const char *location)
{
	return pkey ? pthread_getspecific(*(pthread_key_t *)pkey) : NULL;
}

static const struct smb_thread_functions smb_thread_fns = {
	.create_mutex = smb_thr_create_mutex,
	.destroy_mutex = smb_thr_destroy_mutex,
	.lock_mutex = smb_thr_lock,
	.create_tls = smb_thr_create_tls,
	.destroy_tls = smb_thr_destroy_tls,
	.set_tls = smb_thr_set_tls,
	.get_tls = smb_thr_get_tls,
};

static bool smb_threaded;      /* the hooks are in: contexts may be used in parallel */
static GMutex smb_serial_lock; /* otherwise this is held around every libsmbclient use */

static bool smb_threads_install(void)
{
	int (*set_functions)(const struct smb_thread_functions *tf);
	void (*display_set_stderr)(void);
	void *lib;
	bool ok = false;

	lib = dlopen("libsamba-util.so.0", RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		return false;
	set_functions = (int (*)(const struct smb_thread_functions *))dlvsym(
		lib, "smb_thread_set_functions", "SAMBA_UTIL_0.0.1");
	if (set_functions)
		ok = set_functions(&smb_thread_fns) == 0;
	/* libsmbclient also prints a few messages ("Couldn't resolve ...") with d_printf(), to
	 * stdout; a daemon's stdout is no place for them, its log (stderr) is. */
	display_set_stderr = (void (*)(void))dlvsym(lib, "display_set_stderr", "SAMBA_UTIL_0.0.1");
	if (display_set_stderr)
		display_set_stderr();
	dlclose(lib); /* libsmbclient keeps it loaded */
	return ok;
}

void smb_lib_lock(void)
{
	if (!smb_threaded)
		g_mutex_lock(&smb_serial_lock);
}

void smb_lib_unlock(void)
{
	if (!smb_threaded)
		g_mutex_unlock(&smb_serial_lock);
}

/* libsmbclient's debug level: 0 (errors only) unless FEDFUSE_SMB_DEBUG=N asks for more. */
static int smb_debug_level;

/* libsmbclient's DEBUG() output into our log instead of stdout. */
static void smb_debug_cb(void *priv, int level, const char *msg)
{
	size_t len = strlen(msg);

	if (level > smb_debug_level)
		return;
	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	if (len > 0)
		g_message("libsmbclient: %.*s", (int)len, msg);
}

/* The credentials of a location, for every connection its contexts make (DFS ones too). */
static void smb_auth_cb(SMBCCTX *c, const char *srv, const char *shr, char *wg, int wglen, char *un,
			int unlen, char *pw, int pwlen)
{
	const struct smb_pool *pool = smbc_getOptionUserData(c);

	if (!pool)
		return;
	if (smb_krb5_outside(pool->id)) {
		/* A logon libsmbclient attempts by itself: another thread's window may be open,
		 * with another user's tickets where the library looks. A password makes it ask
		 * the KDC for a principal that does not exist instead, and fail. */
		g_strlcpy(un, "fedfuse-no-window", unlen);
		g_strlcpy(pw, "-", pwlen);
		return;
	}
	if (pool->id->domain && wglen > 0)
		g_strlcpy(wg, pool->id->domain, wglen);
	if (unlen > 0)
		g_strlcpy(un, pool->id->user, unlen);
	if (pwlen > 0)
		g_strlcpy(pw, pool->id->password, pwlen);
}

static void smb_noauth_cb(SMBCCTX *c, const char *srv, const char *shr, char *wg, int wglen,
			  char *un, int unlen, char *pw, int pwlen)
{
}

/*
 * libsmbclient's own check sends an SMB echo before an operation whenever the last one is older
 * than the timeout; against a stopped server that echo, the reconnect after it and the tree
 * disconnect of the old connection each wait a full timeout. We declare cached connections
 * good instead: an operation on a dead one fails at once (disconnect) and the pool retires the
 * context; one on a hung one fails after one timeout.
 */
static int smb_check_server(SMBCCTX *c, SMBCSRV *srv)
{
	return 0;
}

static gpointer smb_global_init(gpointer unused)
{
	const char *dbg = getenv("FEDFUSE_SMB_DEBUG");
	struct sigaction sa;

	smb_krb5_global_init();
	if (dbg)
		smb_debug_level = CLAMP(atoi(dbg), 0, 10);

	/* Samba's socket code writes without MSG_NOSIGNAL; a reset connection must not kill the
	 * daemon. Only when nobody chose a disposition (libfuse's handlers ignore it anyway). */
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
		sa.sa_handler = SIG_IGN;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = 0;
		sigaction(SIGPIPE, &sa, NULL);
	}
	/* Thread-local talloc stack frames and real mutexes inside libsmbclient. */
	smb_threaded = smb_threads_install();
	if (!smb_threaded)
		g_warning("libsmbclient thread hooks not found (libsamba-util.so.0); SMB requests "
			  "will run one at a time");

	g_mutex_lock(&smb_global_lock);
	smb_anchor = smbc_new_context();
	if (smb_anchor) {
		smbc_setLogCallback(smb_anchor, NULL, smb_debug_cb);
		smbc_setDebug(smb_anchor, smb_debug_level);
		smbc_setFunctionAuthDataWithContext(smb_anchor, smb_noauth_cb);
		if (!smbc_init_context(smb_anchor)) {
			smbc_free_context(smb_anchor, 0);
			smb_anchor = NULL;
		}
	}
	g_mutex_unlock(&smb_global_lock);
	return smb_anchor;
}

bool smb_global_ready(void)
{
	static GOnce once = G_ONCE_INIT;

	return g_once(&once, smb_global_init, NULL) != NULL;
}

bool smb_lib_parallel(void)
{
	return smb_global_ready() && smb_threaded;
}

/*
 * A TCP connect to the server, bounded by the timeout. libsmbclient's own connect waits 20 s
 * whatever the timeout says; this probe makes an unreachable server fail in time and with a
 * precise errno (name resolution is still getaddrinfo's business). *peer: the address reached.
 */
static int smb_probe_port(const char *host, int port, int timeout_ms, struct sockaddr_storage *peer)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	char portstr[16];
	int rc = -EHOSTUNREACH;

	snprintf(portstr, sizeof(portstr), "%d", port);
	if (getaddrinfo(host, portstr, &hints, &res) != 0)
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		socklen_t len = sizeof(int);
		int fd, err = 0, left;

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			goto out_connected;
		if (errno != EINPROGRESS) {
			rc = -errno;
			close(fd);
			continue;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		left = (int)((deadline - g_get_monotonic_time()) / 1000);
		if (left <= 0 || poll(&pfd, 1, left) <= 0) {
			rc = -ETIMEDOUT;
			close(fd);
			break; /* the time is used up */
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
			goto out_connected;
		rc = err ? -err : -ECONNREFUSED;
		close(fd);
		continue;
out_connected:
		close(fd);
		memset(peer, 0, sizeof(*peer));
		memcpy(peer, ai->ai_addr, MIN(ai->ai_addrlen, sizeof(*peer)));
		rc = 0;
		break;
	}
	freeaddrinfo(res);
	return rc;
}

static int smb_probe(struct smb_loc *loc, struct sockaddr_storage *peer)
{
	int rc;

	if (loc->port)
		return smb_probe_port(loc->host, loc->port, loc->timeout_ms, peer);
	rc = smb_probe_port(loc->host, SMB_PORT, loc->timeout_ms, peer);
	if (rc == -ECONNREFUSED)
		rc = smb_probe_port(loc->host, SMB_NETBIOS_PORT, loc->timeout_ms, peer);
	return rc;
}

int smb_pool_probe(struct smb_loc *loc)
{
	struct sockaddr_storage peer;

	return smb_probe(loc, &peer);
}

/* A new context for the pool's location and identity; the caller holds smb_global_lock. */
static SMBCCTX *smb_ctx_new(struct smb_pool *pool)
{
	const struct smb_loc *loc = pool->loc;
	const struct smb_ident *id = pool->id;
	SMBCCTX *ctx;

	ctx = smbc_new_context();
	if (!ctx)
		return NULL;
	smbc_setDebug(ctx, smb_debug_level);
	smbc_setOptionUserData(ctx, pool);
	smbc_setFunctionAuthDataWithContext(ctx, smb_auth_cb);
	smbc_setUser(ctx, id->user); /* else libsmbclient reads $USER */
	if (id->domain)
		smbc_setWorkgroup(ctx, id->domain);
	smbc_setTimeout(ctx, loc->timeout_ms);
	smbc_setOptionUseKerberos(ctx, id->krb5);
	smbc_setOptionFallbackAfterKerberos(ctx, false);
	smbc_setOptionUseCCache(ctx, false);
	/* With credentials, a failed logon must fail, not fall back to an anonymous session. */
	smbc_setOptionNoAutoAnonymousLogin(ctx, !id->guest);
	smbc_setOptionFullTimeNames(ctx, true);
	smbc_setOptionUrlEncodeReaddirEntries(ctx, false);
	smbc_setFunctionCheckServer(ctx, smb_check_server);
	if (!smbc_setOptionProtocols(ctx, "SMB2_02", "SMB3") || !smbc_init_context(ctx)) {
		smbc_free_context(ctx, 0);
		ctx = NULL;
	}
	return ctx;
}

/* Hand a context to the reaper thread, which frees it (closing what is still open on it). */
static void smb_pool_reap(struct smb_pool *pool, struct smb_conn *conn)
{
	g_mutex_lock(&pool->lock);
	pool->reaping++;
	g_mutex_unlock(&pool->lock);
	g_async_queue_push(pool->reap, conn);
}

static void smb_auth_failed(struct smb_pool *pool, const char *why);

/* A new context with an established, logged-on connection to the location's share. Called
 * with the library lock held (smb_lib_lock). */
static int smb_conn_new(struct smb_pool *pool, struct smb_conn **out)
{
	struct smb_loc *loc = pool->loc;
	struct smb_connecting *connecting;
	struct sockaddr_storage peer;
	struct smb_conn *conn;
	struct stat st;
	gint64 t0;
	bool warm;
	int rc;

	rc = smb_probe(loc, &peer);
	if (rc)
		return rc;
	if (pool->id->krb5) {
		g_autofree char *msg = NULL;

		/* The logon's window: held until the session is set up (lock order: before
		 * smb_global_lock) */
		rc = smb_krb5_begin(pool->id, &msg);
		if (rc) {
			smb_auth_failed(pool, msg);
			return rc;
		}
	}
	conn = g_new0(struct smb_conn, 1);
	conn->pool = pool;
	g_mutex_lock(&smb_global_lock);
	conn->ctx = smb_ctx_new(pool);
	warm = smb_warm;
	if (warm || !conn->ctx)
		g_mutex_unlock(&smb_global_lock);
	if (!conn->ctx) {
		rc = -ENOMEM;
		if (pool->id->krb5)
			smb_krb5_end();
		goto out_free;
	}
	/* Connect, log on and reach the location's directory now, so that a logon failure is
	 * told apart from a file's permissions. */
	memset(&st, 0, sizeof(st));
	rc = 0;
	connecting = smb_sock_connect_begin(&peer);
	t0 = g_get_monotonic_time();
	if (smbc_getFunctionStat(conn->ctx)(conn->ctx, loc->url, &st) < 0) {
		rc = smb_err(errno);
		/* SPNEGO without a usable ticket: NT_STATUS_INVALID_PARAMETER */
		if (pool->id->krb5 && rc == -EINVAL)
			rc = -EACCES;
		/* On a DFS share a timeout comes back as ENOENT (see smb_classify()). */
		if (g_get_monotonic_time() - t0 >= (gint64)loc->timeout_ms * 900)
			rc = -ETIMEDOUT;
	}
	smb_sock_connect_end(connecting, rc ? NULL : conn);
	if (!warm) {
		smb_warm = rc == 0;
		g_mutex_unlock(&smb_global_lock);
	}
	if (pool->id->krb5)
		smb_krb5_end();
	if (rc)
		goto out_free_ctx;
	if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		goto out_free_ctx;
	}
	*out = conn;
	return 0;

out_free_ctx:
	/* Freeing may wait for the server once more (tree disconnect): not in this request. */
	smb_pool_reap(pool, conn);
	return rc;
out_free:
	g_free(conn);
	return rc;
}

static gpointer smb_reaper(gpointer data)
{
	struct smb_pool *pool = data;

	for (;;) {
		struct smb_conn *conn = g_async_queue_pop(pool->reap);

		if (conn == (struct smb_conn *)pool) /* the stop mark */
			break;
		/* May wait for the server (closing files, tree disconnect): that is why it is
		 * done here and not in a request. */
		smb_lib_lock();
		smbc_free_context(conn->ctx, 1);
		smb_lib_unlock();
		smb_sock_free(conn);
		g_free(conn);
		g_mutex_lock(&pool->lock);
		pool->reaping--;
		g_cond_broadcast(&pool->cond);
		g_mutex_unlock(&pool->lock);
	}
	return NULL;
}

int smb_pool_init(struct smb_pool *pool, struct smb_loc *loc, const struct smb_ident *id,
		  unsigned int max)
{
	if (!smb_global_ready())
		return -ENOMEM;
	g_mutex_init(&pool->lock);
	g_cond_init(&pool->cond);
	pool->live = g_ptr_array_new();
	pool->max = max;
	pool->loc = loc;
	pool->id = id;
	pool->reap = g_async_queue_new();
	pool->reaper = g_thread_new("smb-reaper", smb_reaper, pool);
	return 0;
}

void smb_pool_destroy(struct smb_pool *pool)
{
	if (!pool->live)
		return;
	g_mutex_lock(&pool->lock);
	while (pool->creating >
	       0) /* creators left by interrupted callers: bounded by the timeout */
		g_cond_wait(&pool->cond, &pool->lock);
	g_mutex_unlock(&pool->lock);
	for (guint i = 0; i < pool->live->len; i++)
		smb_pool_reap(pool, pool->live->pdata[i]);
	g_ptr_array_set_size(pool->live, 0);
	g_async_queue_push(pool->reap, pool);
	g_thread_join(pool->reaper);
	g_async_queue_unref(pool->reap);
	g_ptr_array_free(pool->live, TRUE);
	pool->live = NULL;
	g_cond_clear(&pool->cond);
	g_mutex_clear(&pool->lock);
}

/* Tell the log, once per failure spell, that the server refused our logon (or, `why`, that we
 * could not try). No new logon for a while: a password tried again and again may lock its
 * account; a user's new Kerberos ticket is taken a moment later. */
static void smb_auth_failed(struct smb_pool *pool, const char *why)
{
	struct smb_loc *loc = pool->loc;
	const struct smb_ident *id = pool->id;
	gint64 holdoff = id->krb5 ? SMB_KRB5_HOLDOFF_US : SMB_AUTH_HOLDOFF_US;
	bool log;

	g_mutex_lock(&pool->lock);
	pool->auth_holdoff_until = g_get_monotonic_time() + holdoff;
	log = !pool->auth_logged;
	pool->auth_logged = true;
	g_mutex_unlock(&pool->lock);
	if (!log)
		return;
	if (id->krb5)
		g_message("%s: Kerberos logon for uid %u refused: %s; no new logon for %d s",
			  loc->display, (unsigned int)id->krb5_uid,
			  why ? why
			      : "the server or KDC refused the ticket (expired? run kinit again)",
			  (int)(holdoff / G_USEC_PER_SEC));
	else if (pool->id->guest)
		g_message("%s: guest access refused by the server; no new attempt for %d s",
			  loc->display, (int)(SMB_AUTH_HOLDOFF_US / G_USEC_PER_SEC));
	else
		g_message("%s: access denied for user '%s%s%s' (wrong user name or password, or no "
			  "access to the share); no new logon for %d s",
			  loc->display, pool->id->domain ? pool->id->domain : "",
			  pool->id->domain ? "\\" : "", pool->id->user,
			  (int)(SMB_AUTH_HOLDOFF_US / G_USEC_PER_SEC));
}

/*
 * A context being made for a caller. The connection is made on a thread of its own, so that
 * the caller can leave when interrupted (libsmbclient's logon cannot be cut short: its
 * sockets are not known until it is done); the attempt goes on, and a context made for a
 * caller who left joins the pool idle. Pool lock.
 */
struct smb_creation {
	struct smb_pool *pool;
	int rc;
	bool done;
	bool abandoned;	       /* the caller left: the creator frees this */
	struct smb_conn *conn; /* checked out for the caller once done, or NULL */
};

static void creation_finish(struct smb_creation *cr, struct smb_conn *conn, int rc)
{
	struct smb_pool *pool = cr->pool;
	bool mine;

	if (rc == -EACCES || rc == -EPERM) {
		smb_auth_failed(pool, NULL);
		rc = -EACCES;
	}
	g_mutex_lock(&pool->lock);
	pool->creating--;
	mine = !cr->abandoned;
	if (rc == 0) {
		conn->busy = mine;
		g_ptr_array_add(pool->live, conn);
		pool->auth_logged = false;
		pool->auth_holdoff_until = 0;
	}
	if (mine) {
		cr->rc = rc;
		cr->conn = rc == 0 ? conn : NULL;
		cr->done = true;
	}
	g_cond_broadcast(&pool->cond); /* a new context, or a failed creation's free slot */
	g_mutex_unlock(&pool->lock);
	if (!mine)
		g_free(cr);
}

static gpointer creator(gpointer data)
{
	struct smb_creation *cr = data;
	struct smb_conn *conn = NULL;
	int rc;

	smb_lib_lock();
	rc = smb_conn_new(cr->pool, &conn);
	smb_lib_unlock();
	creation_finish(cr, conn, rc);
	return NULL;
}

/* The caller leaves before its creation is seen through (pool lock held). */
static void creation_abandon(struct smb_pool *pool, struct smb_creation *cr)
{
	if (!cr->done) {
		cr->abandoned = true; /* its context joins the pool idle */
		return;
	}
	if (cr->conn) {
		cr->conn->busy = false;
		g_cond_broadcast(&pool->cond);
	}
	g_free(cr);
}

/* Wait on the pool's condition with its lock held: false once `deadline` (0: none) has passed,
 * or when the caller was interrupted (*rc = -EINTR). */
static bool pool_wait(struct smb_pool *pool, gint64 deadline, int *rc)
{
	gint64 now = g_get_monotonic_time(), until = now + G_USEC_PER_SEC / 10;

	if (deadline && now >= deadline) {
		*rc = -ETIMEDOUT;
		return false;
	}
	g_cond_wait_until(&pool->cond, &pool->lock, deadline ? MIN(until, deadline) : until);
	if (smb_interrupted()) {
		*rc = -EINTR;
		return false;
	}
	return true;
}

/* Called with the pool lock held, which it drops: the context checked out. */
static int checked_out(struct smb_pool *pool, struct smb_conn *conn, struct smb_conn **out)
{
	g_mutex_unlock(&pool->lock);
	smb_lib_lock();
	smb_sock_watch(conn, true);
	*out = conn;
	return 0;
}

static int pool_get(struct smb_pool *pool, bool for_open, bool may_create, struct smb_conn **out)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)pool->loc->timeout_ms * 1000;
	struct smb_creation *cr = NULL;
	GThread *t;
	int rc = 0;

	*out = NULL;
	g_mutex_lock(&pool->lock);
	for (;;) {
		struct smb_conn *best = NULL;
		bool can_create = may_create && !cr && pool->live->len + pool->creating < pool->max;

		if (cr && cr->done) { /* ours: its context is checked out for us already */
			rc = cr->rc;
			if (rc == 0)
				rc = checked_out(pool, cr->conn, out);
			else
				g_mutex_unlock(&pool->lock);
			g_free(cr);
			return rc;
		}
		if (!may_create && pool->live->len == 0) {
			g_mutex_unlock(&pool->lock);
			return -EIO;
		}
		for (guint i = 0; i < pool->live->len; i++) {
			struct smb_conn *c = pool->live->pdata[i];

			if (!c->busy && (!best || c->nfiles < best->nfiles))
				best = c;
		}
		if (best && !(for_open && best->nfiles > 0 && (can_create || cr))) {
			best->busy = true;
			if (cr)
				creation_abandon(pool, cr);
			return checked_out(pool, best, out);
		}
		if (can_create) {
			if (g_get_monotonic_time() < pool->auth_holdoff_until) {
				g_mutex_unlock(&pool->lock);
				return -EACCES;
			}
			cr = g_new0(struct smb_creation, 1);
			cr->pool = pool;
			pool->creating++;
			t = g_thread_try_new("smb-connect", creator, cr, NULL);
			if (t) {
				g_thread_unref(t);
			} else {
				g_mutex_unlock(&pool->lock);
				creator(cr); /* no thread: made here, not interruptible */
				g_mutex_lock(&pool->lock);
			}
			continue;
		}
		/* A creation of ours is bounded by the timeout itself: it is waited for whole. */
		if (!pool_wait(pool, cr ? 0 : deadline, &rc))
			break;
	}
	if (cr)
		creation_abandon(pool, cr);
	g_mutex_unlock(&pool->lock);
	return rc;
}

int smb_pool_get(struct smb_pool *pool, bool for_open, struct smb_conn **out)
{
	return pool_get(pool, for_open, true, out);
}

int smb_pool_get_live(struct smb_pool *pool, struct smb_conn **out)
{
	return pool_get(pool, true, false, out);
}

int smb_pool_get_conn(struct smb_pool *pool, struct smb_conn *conn, bool patient)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)pool->loc->timeout_ms * 1000;
	int rc;

	g_mutex_lock(&pool->lock);
	while (conn->busy && !conn->broken) {
		if (patient) {
			g_cond_wait(&pool->cond, &pool->lock);
		} else if (!pool_wait(pool, deadline, &rc)) {
			g_mutex_unlock(&pool->lock);
			return rc;
		}
	}
	if (conn->broken) {
		g_mutex_unlock(&pool->lock);
		return -EIO; /* its connection, and with it the file, is gone */
	}
	conn->busy = true;
	g_mutex_unlock(&pool->lock);
	smb_lib_lock();
	smb_sock_watch(conn, true);
	return 0;
}

void smb_pool_put(struct smb_pool *pool, struct smb_conn *conn, int rc)
{
	bool reap;

	smb_sock_watch(conn, false);
	g_mutex_lock(&pool->lock);
	conn->busy = false;
	/* A dead connection, or a hung one: after a timeout the connection may be left waiting
	 * for answers (or, on a DFS share, fail every later path); a fresh context is safer. Its
	 * files are lost (EIO), as open files are when their server goes away. An interrupted
	 * one had its sockets shut down. */
	if ((smb_err_is_disconnect(rc) || rc == -ETIMEDOUT ||
	     g_atomic_int_get(&conn->interrupted)) &&
	    !conn->broken) {
		conn->broken = true;
		g_ptr_array_remove_fast(pool->live, conn);
	}
	reap = conn->broken && conn->nfiles == 0;
	g_cond_broadcast(&pool->cond);
	g_mutex_unlock(&pool->lock);
	smb_lib_unlock();
	if (reap)
		smb_pool_reap(pool, conn);
}

void smb_pool_file_opened(struct smb_pool *pool, struct smb_conn *conn)
{
	g_mutex_lock(&pool->lock);
	conn->nfiles++;
	g_mutex_unlock(&pool->lock);
}

void smb_pool_file_closed(struct smb_pool *pool, struct smb_conn *conn)
{
	bool reap;

	g_mutex_lock(&pool->lock);
	conn->nfiles--;
	reap = conn->broken && conn->nfiles == 0 && !conn->busy;
	g_mutex_unlock(&pool->lock);
	if (reap)
		smb_pool_reap(pool, conn);
}

bool smb_pool_wait_reaped(struct smb_pool *pool)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)pool->loc->timeout_ms * 1000;
	bool waited;
	int rc;

	g_mutex_lock(&pool->lock);
	waited = pool->reaping > 0;
	while (pool->reaping > 0 && pool_wait(pool, deadline, &rc))
		;
	g_mutex_unlock(&pool->lock);
	return waited;
}
