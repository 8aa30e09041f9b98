/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_watch.c - changes made on a share by others, told to the core (DESIGN §6). One thread per
 * location keeps a change notify on the location's directory and everything below it (SMB2
 * CHANGE_NOTIFY with WATCH_TREE), on a context of its own. Each change names a path below that
 * directory; the nodes the core holds are found in the path tree, without asking the server,
 * and the kernel is told to forget the entry (a name added, removed or renamed) or the
 * object's attributes and pages (modified). Where nothing of a path is held, nothing is sent.
 *
 * A server that could not say what changed (its list overflowed) or a watch that was lost and
 * set up again may have missed changes: then everything the core holds of the location is
 * invalidated once.
 *
 * The daemon's own changes come back too: the server does not say whose a change is. The kernel
 * knows of those already, and telling it again would cost it what it has cached (a `tar x`
 * through the mount sent four invalidations per file). So each operation that changes a path
 * says so before it starts and again when it is done (smb_watch_expect()), and a change to that
 * path is taken for the daemon's own until WATCH_OWN_US after the operation ended. What another
 * client does to the same path in that moment is missed (it shows after attr-timeout).
 */
#include <errno.h>
#include <string.h>

#include "backends/smb/smb.h"

#define WATCH_POLL_MS 250			/* how often the thread looks whether to stop */
#define WATCH_RETRY_MIN_US (G_USEC_PER_SEC / 2) /* the first wait before watching again */
#define WATCH_RETRY_MAX_US (30 * G_USEC_PER_SEC)
#define WATCH_OWN_US (G_USEC_PER_SEC / 2) /* how late the daemon's own changes are reported */
#define WATCH_OWN_PRUNE 1024		  /* paths expected before the ended ones are dropped */
/* watch_once(): the server had more changes than its answer could hold (libsmbclient asks
 * for 1000 bytes; one long path fills that) and said only "enumerate the directory again" */
#define WATCH_OVERFLOW 1
/* What is watched: names, attributes, sizes, write times, extended attributes and security;
 * not access times (every read would be a change). */
#define WATCH_FILTER                                                                               \
	(SMBC_NOTIFY_CHANGE_FILE_NAME | SMBC_NOTIFY_CHANGE_DIR_NAME |                              \
	 SMBC_NOTIFY_CHANGE_ATTRIBUTES | SMBC_NOTIFY_CHANGE_SIZE | SMBC_NOTIFY_CHANGE_LAST_WRITE | \
	 SMBC_NOTIFY_CHANGE_CREATION | SMBC_NOTIFY_CHANGE_EA | SMBC_NOTIFY_CHANGE_SECURITY)

struct smb_watch {
	struct smb_loc *loc;
	struct ff_notify notify;
	struct smb_pool pool; /* one context, the watcher's own */
	GThread *thread;
	GMutex lock;
	GCond cond;	  /* stop was asked */
	bool stop;	  /* lock */
	gint armed;	  /* a notify is outstanding on the server */
	gint missed;	  /* changes may have been missed: invalidate everything */
	GMutex own_lock;  /* a leaf */
	GHashTable *own;  /* path below the location ("/a/b") -> gint64 *: until when (monotonic
			   * µs) its changes are the daemon's own */
	gint64 own_until; /* the latest of those; own_lock */
};

void smb_watch_expect(struct smb_loc *loc, struct ff_pathnode *node, const char *child, bool done)
{
	struct smb_watch *w = loc->watch;
	gint64 now, *until;
	char *path;

	if (!w)
		return;
	path = ff_pathtree_path(loc->tree, NULL, node, child);
	if (!path)
		return;
	now = g_get_monotonic_time();
	until = g_new(gint64, 1);
	/* before: for as long as the operation may take */
	*until = now + WATCH_OWN_US + (done ? 0 : (gint64)loc->timeout_ms * 1000);
	g_mutex_lock(&w->own_lock);
	if (g_hash_table_size(w->own) >= WATCH_OWN_PRUNE) {
		GHashTableIter it;
		gpointer value;

		g_hash_table_iter_init(&it, w->own);
		while (g_hash_table_iter_next(&it, NULL, &value)) {
			if (*(gint64 *)value < now)
				g_hash_table_iter_remove(&it);
		}
	}
	g_hash_table_insert(w->own, path, until);
	w->own_until = MAX(w->own_until, *until);
	g_mutex_unlock(&w->own_lock);
}

/* Is a change to `path` ("/a/b") the daemon's own? */
static bool watch_own(struct smb_watch *w, const char *path)
{
	gint64 now = g_get_monotonic_time();
	const gint64 *until;
	bool own = false;

	g_mutex_lock(&w->own_lock);
	if (w->own_until >= now) { /* else nothing is expected: no lookup */
		until = g_hash_table_lookup(w->own, path);
		own = until && *until >= now;
	}
	g_mutex_unlock(&w->own_lock);
	return own;
}

static bool watch_stopping(struct smb_watch *w)
{
	bool stop;

	g_mutex_lock(&w->lock);
	stop = w->stop;
	g_mutex_unlock(&w->lock);
	return stop;
}

/* The node of the directory that holds the last component of `parts` (n components); NULL
 * when the core holds no node on the way. A reference. */
static struct ff_pathnode *watch_parent(struct smb_loc *loc, char **parts, guint n)
{
	struct ff_pathnode *node = ff_pathtree_root(loc->tree);

	for (guint i = 0; node && i + 1 < n; i++) {
		struct ff_pathnode *next = ff_pathtree_find(loc->tree, node, parts[i]);

		ff_pathtree_unref(loc->tree, node);
		node = next;
	}
	return node;
}

static void watch_inval_node(struct smb_watch *w, struct ff_pathnode *node)
{
	ino_t ino = smb_node_ino(w->loc, node);

	if (ino)
		w->notify.inval_inode(w->notify.data, w->loc->dev, ino);
}

/* One change, `path` relative to the location's directory, '\\' between components. */
static void watch_change(struct smb_watch *w, uint32_t action, const char *path)
{
	struct smb_loc *loc = w->loc;
	g_auto(GStrv) parts = g_strsplit(path, "\\", -1);
	guint n = g_strv_length(parts);
	struct ff_pathnode *dir, *node;
	const char *name;
	ino_t dir_ino;

	if (n == 0 || !*parts[n - 1])
		return;
	{
		g_autofree char *joined = g_strjoinv("/", parts);
		g_autofree char *rel = g_strconcat("/", joined, NULL);

		if (watch_own(w, rel))
			return;
	}
	name = parts[n - 1];
	dir = watch_parent(loc, parts, n);
	if (!dir)
		return; /* the kernel holds nothing there */
	node = ff_pathtree_find(loc->tree, dir, name);
	switch (action) {
	case SMBC_NOTIFY_ACTION_ADDED:
	case SMBC_NOTIFY_ACTION_REMOVED:
	case SMBC_NOTIFY_ACTION_OLD_NAME:
	case SMBC_NOTIFY_ACTION_NEW_NAME: {
		bool present = action == SMBC_NOTIFY_ACTION_ADDED ||
			       action == SMBC_NOTIFY_ACTION_NEW_NAME;

		smb_names_update(loc, dir, name, present);
		dir_ino = smb_node_ino(loc, dir);
		/* the entry, and the directory's attributes and listing (the kernel drops those
		 * with an entry only when it had one) */
		if (dir_ino) {
			w->notify.inval_entry(w->notify.data, loc->dev, dir_ino, name);
			w->notify.inval_inode(w->notify.data, loc->dev, dir_ino);
		}
		if (node && !present) /* what it named lost a link */
			watch_inval_node(w, node);
		break;
	}
	default: /* modified: attributes, size, data, streams */
		if (node) {
			smb_data_changed(loc, node);
			watch_inval_node(w, node);
		}
		break;
	}
	if (node)
		ff_pathtree_unref(loc->tree, node);
	ff_pathtree_unref(loc->tree, dir);
}

/* Changes may have been missed: every entry and object the core holds is invalidated. */
static void watch_inval_all(struct smb_watch *w)
{
	struct smb_loc *loc = w->loc;
	GArray *entries = ff_pathtree_entries(loc->tree);
	struct ff_pathnode *root = ff_pathtree_root(loc->tree);

	watch_inval_node(w, root);
	ff_pathtree_unref(loc->tree, root);
	for (guint i = 0; i < entries->len; i++) {
		const struct ff_pathtree_entry *e =
			&g_array_index(entries, struct ff_pathtree_entry, i);
		ino_t dir_ino = smb_node_ino(loc, e->parent);

		if (dir_ino)
			w->notify.inval_entry(w->notify.data, loc->dev, dir_ino, e->name);
		smb_data_changed(loc, e->node);
		watch_inval_node(w, e->node);
	}
	ff_pathtree_entries_free(loc->tree, entries);
}

/* libsmbclient's callback: changes (none every WATCH_POLL_MS); nonzero ends the watch. */
static int watch_cb(const struct smbc_notify_callback_action *actions, size_t n, void *data)
{
	struct smb_watch *w = data;

	if (!g_atomic_int_get(&w->armed)) {
		g_atomic_int_set(&w->armed, 1);
		if (g_atomic_int_compare_and_exchange(&w->missed, 1, 0)) {
			g_message("%s: change notification set up again", w->loc->display);
			watch_inval_all(w); /* what changed while no notify was outstanding */
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (actions[i].filename)
			watch_change(w, actions[i].action, actions[i].filename);
	}
	return watch_stopping(w);
}

/* The server refused the watch itself (it does not offer change notification, or not to this
 * account), as opposed to failing, or going away, under it. */
static bool watch_refused(int rc)
{
	return rc == -ENOSYS || rc == -EOPNOTSUPP || rc == -EACCES || rc == -EPERM || rc == -EINVAL;
}

/* One watch, from connecting to its end: 0 when asked to stop, WATCH_OVERFLOW, or -errno;
 * *worked says that it was set up on the server, *refused that the server refused it. Only
 * the notify call's own failure can be a refusal: the connection and the listing before it
 * fail like any other operation when the server goes away (a listing cut short by a stopped
 * server says EINVAL). */
static int watch_once(struct smb_watch *w, bool *worked, bool *refused)
{
	struct smb_conn *conn;
	SMBCFILE *dir;
	int rc;

	rc = smb_pool_get(&w->pool, false, &conn);
	if (rc)
		return rc;
	dir = smbc_getFunctionOpendir(conn->ctx)(conn->ctx, w->loc->url);
	if (!dir) {
		rc = smb_err(errno);
		smb_pool_put(&w->pool, conn, rc);
		return rc;
	}
	errno = 0;
	if (smbc_getFunctionNotify(conn->ctx)(conn->ctx, dir, true, WATCH_FILTER, WATCH_POLL_MS,
					      watch_cb, w) < 0) {
		/* STATUS_NOTIFY_ENUM_DIR is no error status: libsmbclient's errno for it is 0 */
		rc = errno == 0 ? WATCH_OVERFLOW : smb_err(errno);
		*refused = watch_refused(rc);
	}
	*worked = g_atomic_int_get(&w->armed);
	g_atomic_int_set(&w->armed, 0);
	smbc_getFunctionClosedir(conn->ctx)(conn->ctx, dir);
	smb_pool_put(&w->pool, conn, rc == WATCH_OVERFLOW ? 0 : rc);
	return rc;
}

static gpointer watch_thread(gpointer data)
{
	struct smb_watch *w = data;
	gint64 wait = WATCH_RETRY_MIN_US;
	bool ever = false; /* a watch was set up once */
	int told = 0;	   /* the last failure the log was told of */

	while (!watch_stopping(w)) {
		bool worked = false, refused = false;
		int rc = watch_once(w, &worked, &refused);
		gint64 deadline;

		if (watch_stopping(w))
			break;
		if (worked) { /* a new spell */
			wait = WATCH_RETRY_MIN_US;
			told = 0;
			ever = true;
		}
		/* The watch ended without being asked to: changes from now until it is set up
		 * again go unseen, and are made up for then. */
		g_atomic_int_set(&w->missed, 1);
		if (rc == WATCH_OVERFLOW) /* nothing wrong: at once */
			continue;
		if (rc != told && (ever || !refused))
			/* The connection or the server failed under it (a stopped or restarted
			 * server fails the outstanding notify with EIO as well), which the
			 * location's own operations report. */
			g_message("%s: change notification ended (%s); set up again when the "
				  "server answers",
				  w->loc->display, rc ? g_strerror(-rc) : "by the server");
		else if (rc != told)
			/* It never worked, and the server said no: it may not offer it at all. */
			g_warning("%s: change notification could not be set up (%s); tried again "
				  "every %d s, meanwhile changes by others show after attr-timeout",
				  w->loc->display, rc ? g_strerror(-rc) : "by the server",
				  (int)(WATCH_RETRY_MAX_US / G_USEC_PER_SEC));
		told = rc;
		deadline = g_get_monotonic_time() + wait;
		g_mutex_lock(&w->lock);
		while (!w->stop && g_cond_wait_until(&w->cond, &w->lock, deadline))
			;
		g_mutex_unlock(&w->lock);
		wait = MIN(wait * 2, WATCH_RETRY_MAX_US);
	}
	return NULL;
}

struct smb_watch *smb_watch_start(struct smb_loc *loc, const struct ff_notify *notify)
{
	struct smb_watch *w;

	if (!smb_lib_parallel())
		return NULL; /* a watch would hold the one lock every call takes */
	w = g_new0(struct smb_watch, 1);
	w->loc = loc;
	w->notify = *notify;
	g_mutex_init(&w->lock);
	g_cond_init(&w->cond);
	if (smb_pool_init(&w->pool, loc, &loc->id, 1) != 0) {
		g_mutex_clear(&w->lock);
		g_cond_clear(&w->cond);
		g_free(w);
		return NULL;
	}
	g_mutex_init(&w->own_lock);
	w->own = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	w->pool.auth_logged = true; /* the location's own pool says so */
	w->thread = g_thread_new("smb-watch", watch_thread, w);
	return w;
}

void smb_watch_stop(struct smb_watch *w)
{
	if (!w)
		return;
	g_mutex_lock(&w->lock);
	w->stop = true;
	g_cond_broadcast(&w->cond);
	g_mutex_unlock(&w->lock);
	g_thread_join(w->thread);
	smb_pool_destroy(&w->pool);
	g_hash_table_destroy(w->own);
	g_mutex_clear(&w->own_lock);
	g_mutex_clear(&w->lock);
	g_cond_clear(&w->cond);
	g_free(w);
}
