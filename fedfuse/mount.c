/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount.c - mounts: connecting locations lazily, tracking whether each is reachable, and counting
 * what is done to it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fedfuse/gateway.h"
#include "fedfuse/inode.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/log.h"
#include "fedfuse/memory.h"
#include "fedfuse/metrics.h"
#include "fedfuse/mount.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/notify.h"
#include "fedfuse/plugins.h"

#define BACKOFF_MIN 1.0
#define BACKOFF_MAX 60.0

#define CONNECTORS 4

struct ff_mounts {
	GMutex lock; /* guards the fields up to `connect_queue` and every mount's refs == 0 */
	GHashTable *by_key;   /* key -> struct ff_mount * */
	GQueue list;	      /* of ff_mount.link, in order of creation */
	GArray *free_indexes; /* of uint16_t: indexes of freed mounts, to reuse */
	uint16_t next_index;
	uint64_t next_id;
	gint64 linger; /* usec */
	/* Backends connect on threads made at start-up, which act as the daemon itself: FUSE
	 * workers may be acting as some user (the local backend switches a thread's fsuid), and
	 * a connection must not read a credentials file or create state as that user. */
	GAsyncQueue *connect_queue;
	GThread *connectors[CONNECTORS];
	/* Brings down locations back: probes each when its back-off expires. */
	GThread *prober;
	GMutex prober_lock;
	GCond prober_cond;
	bool stopping;
};

static void set_down(struct ff_mount *m, int err, const char *msg);
static void set_up(struct ff_mount *m, enum ff_op op);
static void count_op(struct ff_mount *m, enum ff_op op, int rc, gint64 start_usec);

/* The connector threads: each runs a backend's mount() for a mount whose `connecting` is set
 * (the queue holds a reference to it) and publishes the outcome in the mount itself, so that a
 * thread waiting for it may leave (interrupted) without losing the connection made. */
static gpointer connector(gpointer data)
{
	GAsyncQueue *queue = data;
	struct ff_mount *m;

	while ((m = g_async_queue_pop(queue)) != (gpointer)queue) { /* the queue: stop */
		const struct ff_backend *be = m->be;
		const struct ff_notify *notify = NULL;
		gint64 start = g_get_monotonic_time();
		void *ctx = NULL;
		char *msg = NULL;
		int rc;

		if ((be->caps & FF_CAP_NOTIFY) && m->loc.spec.watch) {
			ff_notify_init(&m->notify, m);
			notify = &m->notify;
		}
		if (m->loc.spec.per_user && be->abi_minor < (m->loc.spec.krb5		    ? 6u
							     : m->loc.spec.user_credentials ? 5u
											    : 4u)) {
			/* it would not know to act for each caller (or where to find their
			 * credentials), and act for all as one */
			rc = -EOPNOTSUPP;
			msg = g_strdup_printf("%s: its backend module predates identity=per-user%s "
					      "(ABI minor %u)",
					      m->loc.spec.uri,
					      m->loc.spec.krb5 ? " with sec=krb5"
					      : m->loc.spec.user_credentials
						      ? " with user-credentials"
						      : "",
					      be->abi_minor);
		} else if ((m->loc.spec.write_behind >= 0 && be->abi_minor < 7u) ||
			   (m->loc.spec.read_ahead >= 0 && be->abi_minor < 9u)) {
			/* it would not know the namespace's bound, and hold back what it
			 * pleases (or nothing where write-behind=0 asked for nothing) */
			rc = -EOPNOTSUPP;
			msg = g_strdup_printf("%s: its backend module predates %s= (ABI minor %u)",
					      m->loc.spec.uri,
					      be->abi_minor < 7u ? "write-behind" : "read-ahead",
					      be->abi_minor);
		} else {
			rc = ff_gw_mount(m, notify, &ctx, &msg);
		}
		count_op(m, FF_OP_CONNECT, rc, start);
		g_mutex_lock(&m->lock);
		if (rc == 0) {
			m->ctx = ctx;
			m->watched = notify && ff_gw_watched(m, ctx);
			m->server_locks = ff_gw_server_locks(m, ctx);
			set_up(m, FF_OP_CONNECT);
		} else {
			set_down(m, rc, msg);
		}
		m->connecting = false;
		g_cond_broadcast(&m->connected);
		g_mutex_unlock(&m->lock);
		g_free(msg);
		ff_mount_unref(m);
	}
	return NULL;
}

static const char *const op_names[FF_OP_COUNT] = {
	[FF_OP_LOOKUP] = "lookup",     [FF_OP_GETATTR] = "getattr", [FF_OP_SETATTR] = "setattr",
	[FF_OP_READLINK] = "readlink", [FF_OP_CREATE] = "create",   [FF_OP_REMOVE] = "remove",
	[FF_OP_RENAME] = "rename",     [FF_OP_OPEN] = "open",	    [FF_OP_READ] = "read",
	[FF_OP_WRITE] = "write",       [FF_OP_SYNC] = "sync",	    [FF_OP_READDIR] = "readdir",
	[FF_OP_STATFS] = "statfs",     [FF_OP_XATTR] = "xattr",	    [FF_OP_OTHER] = "other",
	[FF_OP_CONNECT] = "connect",
};

const char *ff_op_name(enum ff_op op)
{
	return op < FF_OP_COUNT ? op_names[op] : "?";
}

/* Counts one operation in the statistics and the metrics. */
static void count_op(struct ff_mount *m, enum ff_op op, int rc, gint64 start_usec)
{
	struct ff_op_stats *s = &m->stats[op];
	gint64 usec = start_usec ? g_get_monotonic_time() - start_usec : 0;

	__atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
	if (rc < 0)
		__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->usec, usec, __ATOMIC_RELAXED);
	ff_metrics_op(m->metrics, op, rc, usec);
}

/* Ask the root of `m`, as the daemon; on success its attributes become the known ones. */
static int probe(struct ff_mount *m)
{
	struct ff_cred self = { .uid = geteuid(), .gid = getegid(), .pid = getpid() };
	gint64 start = g_get_monotonic_time();
	ff_node *node;
	struct stat st;
	int rc = ff_gw_root(m, &self, &node, &st); /* accounted: marks the location up */

	if (rc == 0) {
		g_mutex_lock(&m->lock);
		if (m->root_known) { /* else the kernel holds no root inode that they are for */
			m->root_st = st;
			m->root_time = start;
		}
		g_mutex_unlock(&m->lock);
		ff_gw_forget(m, node);
	}
	return rc;
}

static int mount_connect(struct ff_mount *m, bool background);

/* Take `m` out of the table (its index free for another); called with the table's lock held. */
static void unlink_locked(struct ff_mounts *mounts, struct ff_mount *m)
{
	g_hash_table_remove(mounts->by_key, m->key);
	g_queue_unlink(&mounts->list, &m->link);
	if (m->index != FF_MOUNT_INDEX_NONE)
		g_array_append_val(mounts->free_indexes, m->index);
}

/* Unmount and free `m`, out of the table. No core lock held: backend calls. */
static void mount_free(struct ff_mount *m)
{
	if (m->ctx && m->root_node)
		ff_gw_forget(m, m->root_node);
	if (m->ctx)
		ff_gw_unmount(m);
	if (m->parent)
		ff_mount_unref(m->parent);
	g_free((char *)m->loc.spec.credentials); /* our copies; the namespace owns its own */
	g_free((char *)m->loc.spec.credentials_dir);
	g_free((char *)m->loc.spec.user_credentials);
	g_free((char *)m->loc.spec.krb5_ccache);
	ff_location_clear(&m->loc);
	g_free(m->key);
	g_free(m->ns_path);
	g_free(m->last_error);
	if (m->own_metrics)
		ff_metrics_free(m->metrics);
	g_mutex_clear(&m->lock);
	g_cond_clear(&m->connected);
	g_free(m);
}

static gpointer prober(gpointer data)
{
	struct ff_mounts *mounts = data;

	g_mutex_lock(&mounts->prober_lock);
	while (!mounts->stopping) {
		gint64 now = g_get_monotonic_time();
		GPtrArray *due = g_ptr_array_new();

		g_mutex_unlock(&mounts->prober_lock);
		GPtrArray *done = g_ptr_array_new();

		g_mutex_lock(&mounts->lock);
		for (GList *l = mounts->list.head, *next; l; l = next) {
			struct ff_mount *m = l->data;
			bool down = g_atomic_int_get(&m->state) == FF_MOUNT_DOWN;
			gint64 linger =
				down ? MAX(mounts->linger, (gint64)(BACKOFF_MAX * G_USEC_PER_SEC))
				     : mounts->linger;

			next = l->next; /* read before m may be unlinked */

			if (g_atomic_int_get(&m->refs) == 0 &&
			    now - __atomic_load_n(&m->idle_since, __ATOMIC_RELAXED) >= linger) {
				unlink_locked(mounts, m);
				g_ptr_array_add(done, m);
			} else if ((down && now >= m->retry_at) ||
				   (!down && __atomic_exchange_n(&m->root_refresh, false,
								 __ATOMIC_RELAXED))) {
				g_atomic_int_inc(&m->refs);
				g_ptr_array_add(due, m);
			}
		}
		g_mutex_unlock(&mounts->lock);
		for (guint i = 0; i < due->len; i++) {
			struct ff_mount *m = due->pdata[i];

			/* Never connected: try to (the back-off has expired); else ask its root (to
			 * find it back, or for fresh attributes of it: ff_mount_root_attr()). */
			if (!m->ctx)
				mount_connect(m, true);
			else
				probe(m);
			ff_mount_unref(m);
		}
		g_ptr_array_free(due, TRUE);
		for (guint i = 0; i < done->len; i++)
			mount_free(done->pdata[i]);
		ff_memory_freed(done->len);
		g_ptr_array_free(done, TRUE);
		ff_memory_trim_if_due();
		g_mutex_lock(&mounts->prober_lock);
		if (!mounts->stopping)
			g_cond_wait_until(&mounts->prober_cond, &mounts->prober_lock,
					  g_get_monotonic_time() + G_USEC_PER_SEC / 2);
	}
	g_mutex_unlock(&mounts->prober_lock);
	return NULL;
}

struct ff_mounts *ff_mounts_new(void)
{
	struct ff_mounts *mounts = g_new0(struct ff_mounts, 1);

	g_mutex_init(&mounts->lock);
	mounts->by_key = g_hash_table_new(g_str_hash, g_str_equal);
	g_queue_init(&mounts->list);
	mounts->free_indexes = g_array_new(FALSE, FALSE, sizeof(uint16_t));
	mounts->next_index = 1;
	mounts->next_id = 1;
	mounts->linger = (gint64)(FF_MOUNT_LINGER * G_USEC_PER_SEC);
	mounts->connect_queue = g_async_queue_new();
	for (int i = 0; i < CONNECTORS; i++)
		mounts->connectors[i] = g_thread_new("connect", connector, mounts->connect_queue);
	g_mutex_init(&mounts->prober_lock);
	g_cond_init(&mounts->prober_cond);
	mounts->prober = g_thread_new("probe", prober, mounts);
	return mounts;
}

void ff_mounts_free(struct ff_mounts *mounts)
{
	if (!mounts)
		return;
	g_mutex_lock(&mounts->prober_lock);
	mounts->stopping = true;
	g_cond_signal(&mounts->prober_cond);
	g_mutex_unlock(&mounts->prober_lock);
	g_thread_join(mounts->prober);
	g_cond_clear(&mounts->prober_cond);
	g_mutex_clear(&mounts->prober_lock);
	for (int i = 0; i < CONNECTORS; i++)
		g_async_queue_push(mounts->connect_queue, mounts->connect_queue);
	for (int i = 0; i < CONNECTORS; i++)
		g_thread_join(mounts->connectors[i]);
	g_async_queue_unref(mounts->connect_queue);
	/* Children first (a junction's mount refers to its parent): newest first. */
	while (mounts->list.tail) {
		struct ff_mount *m = mounts->list.tail->data;

		g_queue_unlink(&mounts->list, &m->link);
		m->parent = NULL;
		mount_free(m);
	}
	g_array_free(mounts->free_indexes, TRUE);
	g_hash_table_destroy(mounts->by_key);
	g_mutex_clear(&mounts->lock);
	g_free(mounts);
}

/* Everything that changes how a location is reached makes it a different mount. */
static char *mount_key(const char *ns_path, const struct ff_location_spec *s, double attr_timeout)
{
	return g_strdup_printf("%s|%s|%g|%g|%d|%d|%s|%d:%u|%d:%u|%o|%o|%d|%s|%s|%d|%s|%d|%d",
			       ns_path ? ns_path : "junction", s->uri, attr_timeout, s->timeout,
			       s->read_only, s->watch, s->credentials ? s->credentials : "",
			       s->uid_set, (unsigned)s->uid, s->gid_set, (unsigned)s->gid,
			       (unsigned)s->file_mode, (unsigned)s->dir_mode, s->per_user,
			       s->credentials_dir ? s->credentials_dir : "",
			       s->user_credentials ? s->user_credentials : "", s->krb5,
			       s->krb5_ccache ? s->krb5_ccache : "", s->write_behind,
			       s->read_ahead);
}

/* Deep copy of a location: the namespace that owns the original may be freed by a reload. */
static void location_copy(struct ff_location *dst, const struct ff_location *src)
{
	*dst = *src;
	dst->spec.uri = g_strdup(src->spec.uri);
	dst->spec.scheme = g_strdup(src->spec.scheme);
	dst->spec.host = g_strdup(src->spec.host);
	dst->spec.path = g_strdup(src->spec.path);
	dst->spec.query = g_strdup(src->spec.query);
	dst->spec.credentials = g_strdup(src->spec.credentials);
	dst->spec.credentials_dir = g_strdup(src->spec.credentials_dir);
	dst->spec.user_credentials = g_strdup(src->spec.user_credentials);
	dst->spec.krb5_ccache = g_strdup(src->spec.krb5_ccache);
}

/* An index for a new mount; called with the table's lock held. */
static uint16_t index_locked(struct ff_mounts *mounts)
{
	GArray *free = mounts->free_indexes;
	uint16_t index;

	if (free->len) {
		index = g_array_index(free, uint16_t, free->len - 1);
		g_array_set_size(free, free->len - 1);
		return index;
	}
	if (mounts->next_index > FF_MOUNT_INDEX_MAX)
		return FF_MOUNT_INDEX_NONE;
	return mounts->next_index++;
}

struct ff_mount *ff_mounts_get(struct ff_mounts *mounts, const char *ns_path,
			       const struct ff_location *loc, double attr_timeout,
			       struct ff_mount *parent)
{
	struct ff_location_spec spec = loc->spec;
	g_autofree char *key = NULL;
	struct ff_mount *m;

	/* A junction's locations say nothing of time: operations through one may take what
	 * the referral (or junction) holding it allows, not the built-in default. */
	if (parent) {
		spec.timeout = parent->loc.spec.timeout;
		/* and through a junction of an identity=per-user referral, each user still acts
		 * as themself (as a DFS client follows a referral with the user's credentials) */
		spec.per_user = parent->loc.spec.per_user;
		spec.credentials_dir = parent->loc.spec.credentials_dir;
		spec.user_credentials = parent->loc.spec.user_credentials;
		spec.krb5 = parent->loc.spec.krb5;
		spec.krb5_ccache = parent->loc.spec.krb5_ccache;
		/* and its writes are held back as the referral's are */
		spec.write_behind = parent->loc.spec.write_behind;
		spec.read_ahead = parent->loc.spec.read_ahead;
	}
	key = mount_key(ns_path, &spec, attr_timeout);

	g_mutex_lock(&mounts->lock);
	m = g_hash_table_lookup(mounts->by_key, key);
	if (m) {
		g_atomic_int_inc(&m->refs);
		goto out_unlock;
	}
	m = g_new0(struct ff_mount, 1);
	m->index = index_locked(mounts);
	m->id = mounts->next_id++;
	m->mounts = mounts;
	m->key = g_steal_pointer(&key);
	m->ns_path = g_strdup(ns_path);
	/* The caller's reference, and for a referral's mount the table's own. */
	m->refs = ns_path ? 2 : 1;
	m->link.data = m;
	m->attr_timeout = attr_timeout;
	if (parent)
		ff_mount_ref(parent);
	m->parent = parent;
	m->depth = parent ? parent->depth + 1 : 0;
	m->own_metrics = !parent;
	m->metrics = parent ? parent->metrics : ff_metrics_new();
	location_copy(&m->loc, loc);
	m->loc.spec.timeout = spec.timeout;
	m->loc.spec.per_user = spec.per_user;
	if (spec.credentials_dir != loc->spec.credentials_dir) {
		g_free((char *)m->loc.spec.credentials_dir);
		m->loc.spec.credentials_dir = g_strdup(spec.credentials_dir);
	}
	if (spec.user_credentials != loc->spec.user_credentials) {
		g_free((char *)m->loc.spec.user_credentials);
		m->loc.spec.user_credentials = g_strdup(spec.user_credentials);
	}
	m->loc.spec.krb5 = spec.krb5;
	if (spec.krb5_ccache != loc->spec.krb5_ccache) {
		g_free((char *)m->loc.spec.krb5_ccache);
		m->loc.spec.krb5_ccache = g_strdup(spec.krb5_ccache);
	}
	m->loc.spec.write_behind = spec.write_behind;
	m->loc.spec.read_ahead = spec.read_ahead;
	m->loc.spec.attr_timeout = attr_timeout;
	g_mutex_init(&m->lock);
	g_cond_init(&m->connected);
	m->state = FF_MOUNT_IDLE;
	m->since = g_get_monotonic_time();
	m->backoff = BACKOFF_MIN;
	g_queue_push_tail_link(&mounts->list, &m->link);
	g_hash_table_insert(mounts->by_key, m->key, m);
out_unlock:
	g_mutex_unlock(&mounts->lock);
	return m;
}

void ff_mount_ref(struct ff_mount *m)
{
	g_atomic_int_inc(&m->refs);
}

void ff_mount_unref(struct ff_mount *m)
{
	/* Noted before the reference goes: once refs is 0 the prober may free m. */
	__atomic_store_n(&m->idle_since, g_get_monotonic_time(), __ATOMIC_RELAXED);
	g_atomic_int_dec_and_test(&m->refs);
}

void ff_mounts_set_linger(struct ff_mounts *mounts, double seconds)
{
	g_mutex_lock(&mounts->lock);
	mounts->linger = (gint64)(seconds * G_USEC_PER_SEC);
	g_mutex_unlock(&mounts->lock);
}

guint ff_mounts_count(struct ff_mounts *mounts)
{
	guint n;

	g_mutex_lock(&mounts->lock);
	n = mounts->list.length;
	g_mutex_unlock(&mounts->lock);
	return n;
}

int ff_mount_root_node(struct ff_mount *m, const struct ff_cred *cred, ff_node **node)
{
	ff_node *fresh = NULL;
	struct stat st;
	int rc;

	g_mutex_lock(&m->lock);
	*node = m->root_node;
	g_mutex_unlock(&m->lock);
	if (*node)
		return 0;
	rc = ff_gw_root(m, cred, &fresh, &st); /* not under the lock: a backend call */
	if (rc < 0)
		return rc;
	g_mutex_lock(&m->lock);
	if (!m->root_node) { /* else another thread was first: keep its node */
		m->root_node = fresh;
		fresh = NULL;
	}
	*node = m->root_node;
	g_mutex_unlock(&m->lock);
	if (fresh)
		ff_gw_forget(m, fresh);
	return 0;
}

bool ff_mount_root_attr(struct ff_mount *m, const ino_t *ino, dev_t dev, struct stat *st)
{
	gint64 now = g_get_monotonic_time();
	bool known, ask = false;

	g_mutex_lock(&m->lock);
	known = m->root_known && m->state == FF_MOUNT_UP &&
		(!ino || (m->root_st.st_dev == dev && m->root_st.st_ino == *ino));
	if (known) {
		*st = m->root_st;
		ask = now - m->root_time >= (gint64)(ff_mount_cache_timeout(m) * G_USEC_PER_SEC);
	}
	g_mutex_unlock(&m->lock);
	/* The prober's next round (every 0.5 s) asks: not woken here, as each wake walks every
	 * mount (a walk through 100,000 junctions would make that quadratic). */
	if (ask)
		__atomic_store_n(&m->root_refresh, true, __ATOMIC_RELAXED);
	return known;
}

double ff_mount_cache_timeout(const struct ff_mount *m)
{
	/* A watch over the network can be lost for a while (and is made up for when it is back):
	 * there, notification makes changes show early, attr-timeout still bounds how late. */
	if (m->watched && (m->be->caps & FF_CAP_LOCAL))
		return FF_WATCHED_TIMEOUT;
	return m->attr_timeout;
}

/* Called with m->lock held. */
static void set_down(struct ff_mount *m, int err, const char *msg)
{
	gint64 now = g_get_monotonic_time();

	if (m->state != FF_MOUNT_DOWN) {
		m->since = now;
		m->backoff = BACKOFF_MIN;
		ff_warn("location %s is unreachable: %s", m->loc.spec.uri,
			msg ? msg : g_strerror(-err));
	} else {
		m->backoff = MIN(m->backoff * 2, BACKOFF_MAX);
	}
	g_atomic_int_set(&m->state, FF_MOUNT_DOWN);
	m->last_errno = err < 0 ? -err : err;
	m->retry_at = now + (gint64)(m->backoff * G_USEC_PER_SEC);
	g_free(m->last_error);
	m->last_error = g_strdup(msg ? msg : g_strerror(-err));
}

/* Called with m->lock held; `op` is what answered. */
static void set_up(struct ff_mount *m, enum ff_op op)
{
	if (m->state == FF_MOUNT_DOWN)
		ff_info("location %s is reachable again (%s answered)", m->loc.spec.uri,
			ff_op_name(op));
	if (m->state != FF_MOUNT_UP)
		m->since = g_get_monotonic_time();
	g_atomic_int_set(&m->state, FF_MOUNT_UP);
	m->backoff = BACKOFF_MIN;
}

/* Connect `m`, from a request or (`background`) from the prober. */
/* Wait, with m->lock held, until no connection attempt of `m` is under way. A request whose
 * caller is interrupted stops waiting (-EINTR); the attempt goes on and its outcome stays. */
static int wait_connected_locked(struct ff_mount *m, bool background)
{
	while (m->connecting) {
		g_cond_wait_until(&m->connected, &m->lock,
				  g_get_monotonic_time() + G_USEC_PER_SEC / 10);
		if (!background && m->connecting && ff_intr_requested())
			return -EINTR;
	}
	return 0;
}

static int mount_connect(struct ff_mount *m, bool background)
{
	g_autofree char *msg = NULL;
	int rc = 0;

	g_mutex_lock(&m->lock);
	if (!background && m->state == FF_MOUNT_DOWN && !m->ctx &&
	    (g_get_monotonic_time() < m->retry_at || m->last_errno == ETIMEDOUT)) {
		/* In its back-off, or a server that took the whole timeout to fail: a request
		 * does not wait for it (the prober alone tries it again then). */
		rc = -m->last_errno;
		goto out_unlock;
	}
	/* One connection attempt at a time, whoever asks: the others wait for its outcome. */
	rc = wait_connected_locked(m, background);
	if (rc < 0)
		goto out_unlock;
	if (m->ctx && m->state != FF_MOUNT_DOWN)
		goto out_unlock;
	if (m->ctx) { /* connected but down: the prober brings it back */
		rc = -m->last_errno;
		goto out_unlock;
	}
	if (m->state == FF_MOUNT_DOWN && g_get_monotonic_time() < m->retry_at) {
		rc = -m->last_errno; /* failed to connect: not again before the back-off ends */
		goto out_unlock;
	}
	if (!m->be) {
		m->be = ff_plugin_find(m->loc.spec.scheme, &msg);
		if (!m->be) {
			rc = -ENOSYS;
			set_down(m, rc, msg);
			goto out_unlock;
		}
	}
	/* The backend's mount() runs on a connector thread, without the mount's lock (no core
	 * lock is held across a backend call: gateway.h), and publishes its outcome in `m`. */
	m->connecting = true;
	ff_mount_ref(m);
	g_async_queue_push(m->mounts->connect_queue, m);
	rc = wait_connected_locked(m, background);
	if (rc == 0 && !m->ctx)
		rc = m->last_errno ? -m->last_errno : -EIO;
out_unlock:
	g_mutex_unlock(&m->lock);
	return rc;
}

int ff_mount_connect(struct ff_mount *m)
{
	return mount_connect(m, false);
}

int ff_mount_usable(struct ff_mount *m)
{
	int rc;

	if (g_atomic_int_get(&m->state) != FF_MOUNT_DOWN)
		return 0;
	g_mutex_lock(&m->lock);
	rc = m->state == FF_MOUNT_DOWN ? -m->last_errno : 0;
	g_mutex_unlock(&m->lock);
	return rc;
}

int ff_mount_account(struct ff_mount *m, enum ff_op op, int rc, gint64 start_usec)
{
	/* only a -errno is an error: 110 may be a descriptor (lock_fd), not ETIMEDOUT */
	bool conn = rc < 0 && ff_errno_is_connection(rc);
	/* A flush or fsync succeeds without the server when there is nothing to send (a file
	 * only read, or one whose connection died with the server's handle): no proof that the
	 * location answers. */
	bool answered = rc >= 0 && op != FF_OP_SYNC;

	count_op(m, op, rc, start_usec);
	if (conn || (answered && g_atomic_int_get(&m->state) == FF_MOUNT_DOWN)) {
		g_mutex_lock(&m->lock);
		if (conn)
			set_down(m, rc, NULL);
		else
			set_up(m, op);
		g_mutex_unlock(&m->lock);
	}
	return rc;
}

void ff_mount_account_bytes(struct ff_mount *m, enum ff_op op, gint64 n)
{
	ff_metrics_bytes(m->metrics, op, n);
}

static const char *state_name(enum ff_mount_state s)
{
	return s == FF_MOUNT_UP ? "up" : s == FF_MOUNT_DOWN ? "down" : "idle";
}

static void describe_mount(struct ff_mount *m, gint64 now, GString *out)
{
	g_mutex_lock(&m->lock);
	g_string_append_printf(out, "%s\t%s\tstate=%s\tsince=%.0fs\topen=%d", m->ns_path,
			       m->loc.spec.uri, state_name(m->state), (now - m->since) / 1e6,
			       g_atomic_int_get(&m->open_files));
	if (m->ctx)
		g_string_append_printf(out, "\twatched=%s", m->watched ? "yes" : "no");
	/* How far its locks reach: the server's (every client of it: NFSv4), the backing files'
	 * own (every program on this machine), or this mount's processes only (NFSv3 and SMB). */
	if (m->be)
		g_string_append_printf(out, "\tlocks=%s",
				       m->ctx && m->server_locks  ? "server"
				       : ff_gw_has_lock_fd(m->be) ? "backing-file"
								  : "this-mount");
	if (m->last_error)
		g_string_append_printf(out, "\tlast-error=%s", m->last_error);
	g_string_append_c(out, '\n');
	g_mutex_unlock(&m->lock);
}

/* The mounts of a referral's locations that an NSDB named (the FSN's lines are nsdb.c's): those
 * of the referral that its file does not list. */
static void describe_fsn_mounts(struct ff_mounts *mounts, const struct ff_referral *ref, gint64 now,
				GString *out)
{
	for (GList *l = mounts->list.head; l; l = l->next) {
		struct ff_mount *m = l->data;
		bool listed = false;

		if (m->parent || !m->ns_path || strcmp(m->ns_path, ref->path) != 0)
			continue;
		for (guint j = 0; j < ref->locations->len && !listed; j++) {
			const struct ff_location *loc = ref->locations->pdata[j];

			listed = strcmp(loc->spec.uri, m->loc.spec.uri) == 0;
		}
		if (!listed)
			describe_mount(m, now, out);
	}
}

void ff_mounts_describe_locations(struct ff_mounts *mounts, const struct ff_namespace *ns,
				  GString *out)
{
	gint64 now = g_get_monotonic_time();

	g_mutex_lock(&mounts->lock);
	for (guint i = 0; i < ns->referrals->len; i++) {
		const struct ff_referral *ref = ns->referrals->pdata[i];

		for (guint j = 0; j < ref->locations->len; j++) {
			const struct ff_location *loc = ref->locations->pdata[j];
			g_autofree char *key = NULL;
			struct ff_mount *m;

			if (ff_nsdb_is_fsn(&loc->spec)) {
				describe_fsn_mounts(mounts, ref, now, out);
				continue;
			}
			key = mount_key(ref->path, &loc->spec, ref->attr_timeout);
			m = g_hash_table_lookup(mounts->by_key, key);
			if (m)
				describe_mount(m, now, out);
			else
				g_string_append_printf(out, "%s\t%s\tstate=idle\n", ref->path,
						       loc->spec.uri);
		}
	}
	g_mutex_unlock(&mounts->lock);
}

void ff_mounts_describe_stats(struct ff_mounts *mounts, GString *out)
{
	g_mutex_lock(&mounts->lock);
	g_string_append_printf(out, "mounts %u\n", mounts->list.length);
	for (GList *l = mounts->list.head; l; l = l->next) {
		struct ff_mount *m = l->data;

		g_string_append_printf(out, "location %s %s\n",
				       m->ns_path ? m->ns_path : "(junction)", m->loc.spec.uri);
		for (int op = 0; op < FF_OP_COUNT; op++) {
			gint64 calls = __atomic_load_n(&m->stats[op].calls, __ATOMIC_RELAXED);

			if (!calls)
				continue;
			g_string_append_printf(
				out,
				"  %-9s calls=%" G_GINT64_FORMAT " errors=%" G_GINT64_FORMAT
				" avg_us=%.1f\n",
				op_names[op], calls,
				__atomic_load_n(&m->stats[op].errors, __ATOMIC_RELAXED),
				(double)__atomic_load_n(&m->stats[op].usec, __ATOMIC_RELAXED) /
					calls);
		}
	}
	g_mutex_unlock(&mounts->lock);
}

/* Bytes a mount holds for write-behind; 0 before its backend is connected. */
static uint64_t mount_write_behind(struct ff_mount *m)
{
	void *ctx;

	g_mutex_lock(&m->lock);
	ctx = m->ctx;
	g_mutex_unlock(&m->lock);
	return ctx && m->be ? ff_gw_write_behind_bytes(m, ctx) : 0;
}

void ff_mounts_describe_metrics(struct ff_mounts *mounts, GString *out)
{
	GArray *locs = g_array_new(FALSE, FALSE, sizeof(struct ff_metrics_location));
	/* a junction's location counts to the referral it was reached from, as its traffic does
	 * (they share their ff_metrics): metrics -> bytes */
	GHashTable *behind = g_hash_table_new_full(NULL, NULL, NULL, g_free);

	g_mutex_lock(&mounts->lock);
	for (GList *l = mounts->list.head; l; l = l->next) {
		struct ff_mount *m = l->data;
		uint64_t n = mount_write_behind(m), *sum;

		if (!n)
			continue;
		sum = g_hash_table_lookup(behind, m->metrics);
		if (!sum) {
			sum = g_new0(uint64_t, 1);
			g_hash_table_insert(behind, m->metrics, sum);
		}
		*sum += n;
	}
	for (GList *l = mounts->list.head; l; l = l->next) {
		struct ff_mount *m = l->data;
		struct ff_metrics_location loc = { m->ns_path, m->loc.spec.uri,
						   g_atomic_int_get(&m->state), m->metrics, 0 };
		const uint64_t *sum = g_hash_table_lookup(behind, m->metrics);

		if (!m->ns_path || !m->own_metrics)
			continue;
		loc.write_behind = sum ? *sum : 0;
		g_array_append_val(locs, loc);
	}
	g_hash_table_destroy(behind);
	ff_metrics_append_locations((struct ff_metrics_location *)locs->data, locs->len, out);
	ff_metrics_append_value(out, "fedfuse_mounts", "gauge",
				"Locations in use: the namespace's and those of junctions.",
				mounts->list.length);
	g_mutex_unlock(&mounts->lock);
	g_array_free(locs, TRUE);
}
