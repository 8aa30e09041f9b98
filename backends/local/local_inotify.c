/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_inotify.c - inotify for a local location, for a daemon that does not run as root (see
 * local_inotify.h); root uses fanotify (local_watch.c).
 *
 * inotify watches directories one by one: each directory the core holds is watched while it is
 * held (a reference count per object, as the core may hold several nodes of one), which covers
 * every entry the kernel can have cached: an entry lives in a directory it holds. A change of
 * a name in a watched directory invalidates that entry and the directory; a change of a
 * child's data or attributes invalidates the child, whose identity is found by its name in the
 * directory, through a node of it the core holds.
 *
 * Whose change it was, inotify does not say. The daemon's own operations mark what they are
 * about to change (an entry: directory and name; an object: its identity) before they act and
 * again when they are done; an event about something marked is dropped until WATCH_OWN_US after
 * the operation ended. A change by another program to the very same entry or object in that
 * moment is missed too, and shows after attr-timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "backends/local/local_inotify.h"
#include "backends/local/local_node.h"
#include "backends/local/local_watch.h"

#define EVENT_BUF 65536				  /* bytes of events read at once */
#define WATCH_OWN_US (G_USEC_PER_SEC / 2)	  /* how late the daemon's own events may come */
#define WATCH_OWN_BEFORE_US (10 * G_USEC_PER_SEC) /* a mark set before an operation */
#define WATCH_OWN_PRUNE 4096			  /* marks kept before the ended ones are dropped */
#define WATCH_MASK                                                                                 \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB |             \
	 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)

/* A watched directory. */
struct inot_dir {
	dev_t dev;
	ino_t ino;
	int wd;		  /* -1 once the kernel dropped the watch (the directory is gone) */
	GPtrArray *nodes; /* ff_node *: the nodes of it the core holds (one at least) */
};

/* What a mark is about: an entry (dev, ino of its directory, and its name) or an object (dev,
 * ino, and no name). */
struct inot_key {
	dev_t dev;
	ino_t ino;
	char name[]; /* "" for an object */
};

struct local_inotify {
	int ifd;
	int stop_fd; /* an eventfd: written to stop the thread */
	struct ff_notify notify;
	GThread *thread;
	GMutex lock;	    /* a leaf: guards everything below */
	GHashTable *dirs;   /* struct inot_dir * by (dev, ino), owned */
	GHashTable *wds;    /* wd -> struct inot_dir * */
	GHashTable *nodes;  /* ff_node * -> struct inot_dir * (the core's nodes of directories) */
	bool add_told;	    /* a directory could not be watched, and the log was told */
	bool overflow_told; /* only the thread uses it */
	GHashTable *marks;  /* struct inot_key * -> gint64 *: until when (monotonic µs) */
	gint64 marks_until; /* the latest of those */
};

static guint dir_hash(gconstpointer p)
{
	const struct inot_dir *d = p;

	return (guint)(d->ino ^ (d->ino >> 32) ^ d->dev);
}

static gboolean dir_equal(gconstpointer a, gconstpointer b)
{
	const struct inot_dir *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino;
}

static guint key_hash(gconstpointer p)
{
	const struct inot_key *k = p;

	return (guint)(k->ino ^ (k->ino >> 32) ^ k->dev) ^ g_str_hash(k->name);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct inot_key *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino && strcmp(x->name, y->name) == 0;
}

static struct inot_key *key_new(dev_t dev, ino_t ino, const char *name)
{
	size_t len = strlen(name);
	struct inot_key *k = g_malloc(sizeof(*k) + len + 1);

	k->dev = dev;
	k->ino = ino;
	memcpy(k->name, name, len + 1);
	return k;
}

static void dir_free(gpointer p)
{
	struct inot_dir *d = p;

	g_ptr_array_free(d->nodes, TRUE);
	g_free(d);
}

/* ---- marks of the daemon's own changes -------------------------------------------------- */

static void mark(struct local_inotify *w, dev_t dev, ino_t ino, const char *name, bool done)
{
	gint64 now = g_get_monotonic_time();
	gint64 *until = g_new(gint64, 1);

	*until = now + (done ? WATCH_OWN_US : WATCH_OWN_BEFORE_US);
	g_mutex_lock(&w->lock);
	if (g_hash_table_size(w->marks) >= WATCH_OWN_PRUNE) {
		GHashTableIter it;
		gpointer value;

		g_hash_table_iter_init(&it, w->marks);
		while (g_hash_table_iter_next(&it, NULL, &value)) {
			if (*(gint64 *)value < now)
				g_hash_table_iter_remove(&it);
		}
	}
	g_hash_table_insert(w->marks, key_new(dev, ino, name), until);
	w->marks_until = MAX(w->marks_until, *until);
	g_mutex_unlock(&w->lock);
}

void local_inotify_expect_entry(struct local_inotify *w, int dirfd, const char *name, bool done)
{
	struct stat st;

	if (w && fstat(dirfd, &st) == 0)
		mark(w, st.st_dev, st.st_ino, name, done);
}

void local_inotify_expect_object(struct local_inotify *w, int fd, bool done)
{
	struct stat st;

	if (w && fstat(fd, &st) == 0)
		mark(w, st.st_dev, st.st_ino, "", done);
}

/* Is an event about (dev, ino, name) the daemon's own? Called with the lock held. */
static bool marked(struct local_inotify *w, dev_t dev, ino_t ino, const char *name, gint64 now)
{
	struct inot_key *k;
	const gint64 *until;
	bool own;

	if (w->marks_until < now)
		return false; /* nothing is expected: no lookup */
	k = key_new(dev, ino, name);
	until = g_hash_table_lookup(w->marks, k);
	own = until && *until >= now;
	g_free(k);
	return own;
}

/* ---- the directories the core holds ---------------------------------------------------- */

void local_inotify_hold(struct local_inotify *w, ff_node *node, int fd, const struct stat *st)
{
	struct inot_dir key = { .dev = st->st_dev, .ino = st->st_ino }, *d;
	char proc[32];

	if (!w || !S_ISDIR(st->st_mode))
		return;
	g_mutex_lock(&w->lock);
	d = g_hash_table_lookup(w->dirs, &key);
	if (!d) {
		d = g_new0(struct inot_dir, 1);
		d->dev = st->st_dev;
		d->ino = st->st_ino;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		/* The descriptor is the object itself: the watch is on it, not on a path. */
		d->wd = inotify_add_watch(w->ifd, proc, WATCH_MASK);
		if (d->wd < 0 && !w->add_told) {
			g_warning("a directory (inode %lu) cannot be watched: %s%s; changes by "
				  "others in such directories show after attr-timeout",
				  (unsigned long)d->ino, g_strerror(errno),
				  errno == ENOSPC ? " (fs.inotify.max_user_watches)" : "");
			w->add_told = true;
		}
		d->nodes = g_ptr_array_new();
		g_hash_table_add(w->dirs, d);
		if (d->wd >= 0)
			g_hash_table_insert(w->wds, GINT_TO_POINTER(d->wd), d);
	}
	g_ptr_array_add(d->nodes, node);
	g_hash_table_insert(w->nodes, node, d);
	g_mutex_unlock(&w->lock);
}

void local_inotify_release(struct local_inotify *w, ff_node *node)
{
	struct inot_dir *d;

	if (!w)
		return;
	g_mutex_lock(&w->lock);
	d = g_hash_table_lookup(w->nodes, node);
	if (d) {
		g_hash_table_remove(w->nodes, node);
		g_ptr_array_remove_fast(d->nodes, node);
		if (d->nodes->len == 0) {
			if (d->wd >= 0) {
				g_hash_table_remove(w->wds, GINT_TO_POINTER(d->wd));
				inotify_rm_watch(w->ifd, d->wd);
			}
			g_hash_table_remove(w->dirs, d); /* frees it */
		}
	}
	g_mutex_unlock(&w->lock);
}

/* ---- events ----------------------------------------------------------------------------- */

/* What one event asks of the core, worked out under the lock and told after it. */
struct inval {
	dev_t dev;
	ino_t dir_ino;	/* the directory whose entry `name` goes, 0: none */
	ino_t node_ino; /* an object whose attributes and pages go, 0: none */
	ino_t dir_too;	/* the directory itself, 0: no */
	char name[NAME_MAX + 1];
};

static void tell(struct local_inotify *w, const struct inval *v)
{
	if (v->dir_ino)
		w->notify.inval_entry(w->notify.data, v->dev, v->dir_ino, v->name);
	if (v->dir_too)
		w->notify.inval_inode(w->notify.data, v->dev, v->dir_too);
	if (v->node_ino)
		w->notify.inval_inode(w->notify.data, v->dev, v->node_ino);
}

/* Called with the lock held. False when there is nothing to tell. */
static bool event_inval(struct local_inotify *w, const struct inotify_event *ev, struct inval *v)
{
	const uint32_t entry_events = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
	struct inot_dir *d = g_hash_table_lookup(w->wds, GINT_TO_POINTER(ev->wd));
	gint64 now = g_get_monotonic_time();
	struct stat st;
	ff_node *node;
	int fd, rc;

	memset(v, 0, sizeof(*v));
	if (!d)
		return false;
	if (ev->mask & IN_IGNORED) { /* the directory is gone, and its watch with it */
		g_hash_table_remove(w->wds, GINT_TO_POINTER(ev->wd));
		d->wd = -1;
		return false;
	}
	v->dev = d->dev;
	if (ev->len == 0 || !ev->name[0]) { /* the directory itself */
		if (marked(w, d->dev, d->ino, "", now))
			return false;
		v->dir_too = d->ino;
		return true;
	}
	if (strlen(ev->name) > NAME_MAX)
		return false;
	if (marked(w, d->dev, d->ino, ev->name, now))
		return false; /* an entry the daemon changed, or a file it made and writes */
	g_strlcpy(v->name, ev->name, sizeof(v->name));
	if (ev->mask & entry_events) {
		v->dir_ino = d->ino;
		v->dir_too = d->ino;
		return true;
	}
	/* A child's data or attributes: which object is it? Asked through a node of the
	 * directory, which the lock keeps from being released meanwhile. */
	node = d->nodes->pdata[0];
	fd = local_node_pin(node);
	if (fd < 0)
		return false;
	rc = fstatat(fd, ev->name, &st, AT_SYMLINK_NOFOLLOW);
	local_node_unpin(node);
	if (rc < 0)
		return false; /* gone meanwhile: its removal comes as an event of its own */
	if (marked(w, st.st_dev, st.st_ino, "", now))
		return false;
	v->dev = st.st_dev;
	v->node_ino = st.st_ino;
	/* A directory's attributes or xattrs: a junction may have appeared or gone, which
	 * changes what its entry resolves to. */
	if ((ev->mask & IN_ISDIR) && st.st_dev == d->dev)
		v->dir_ino = d->ino;
	return true;
}

/* Events were lost: everything the kernel may hold of a watched directory goes. */
static void overflow(struct local_inotify *w)
{
	GArray *ids = g_array_new(FALSE, FALSE, sizeof(struct inval));
	GHashTableIter it;
	gpointer key;

	g_mutex_lock(&w->lock);
	g_hash_table_iter_init(&it, w->dirs);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		const struct inot_dir *d = key;
		struct inval v = { .dev = d->dev, .dir_too = d->ino };

		g_array_append_val(ids, v);
	}
	g_mutex_unlock(&w->lock);
	for (guint i = 0; i < ids->len; i++)
		tell(w, &g_array_index(ids, struct inval, i));
	g_array_free(ids, TRUE);
}

static void inotify_batch(void *data, unsigned char *buf, size_t n)
{
	struct local_inotify *w = data;

	for (size_t off = 0; off + sizeof(struct inotify_event) <= n;) {
		struct inotify_event *ev = (struct inotify_event *)(buf + off);
		struct inval v;
		bool any;

		if (off + sizeof(*ev) + ev->len > n)
			break;
		off += sizeof(*ev) + ev->len;
		if (ev->mask & IN_Q_OVERFLOW) {
			if (!w->overflow_told)
				g_warning(
					"change events were lost (queue overflow): what the kernel "
					"cached of watched directories is dropped");
			w->overflow_told = true;
			overflow(w);
			continue;
		}
		g_mutex_lock(&w->lock);
		any = event_inval(w, ev, &v);
		g_mutex_unlock(&w->lock);
		if (any)
			tell(w, &v);
	}
}

static gpointer watch_thread(gpointer data)
{
	struct local_inotify *w = data;

	local_watch_read_loop(w->ifd, w->stop_fd, EVENT_BUF, inotify_batch, w);
	return NULL;
}

struct local_inotify *local_inotify_start(int root_fd, const struct ff_notify *notify,
					  const char **why)
{
	struct local_inotify *w;
	int ifd, stop_fd;

	if (!local_watch_fs_ok(root_fd)) {
		*why = "its filesystem is not one whose changes this machine sees";
		return NULL;
	}
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ifd < 0) {
		*why = errno == EMFILE ? "no inotify instance left (fs.inotify.max_user_instances)"
				       : "inotify is not available";
		return NULL;
	}
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0) {
		close(ifd);
		*why = "no eventfd";
		return NULL;
	}
	w = g_new0(struct local_inotify, 1);
	w->ifd = ifd;
	w->stop_fd = stop_fd;
	w->notify = *notify;
	g_mutex_init(&w->lock);
	w->dirs = g_hash_table_new_full(dir_hash, dir_equal, dir_free, NULL);
	w->wds = g_hash_table_new(g_direct_hash, g_direct_equal);
	w->nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
	w->marks = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
	w->thread = g_thread_new("inotify", watch_thread, w);
	return w;
}

void local_inotify_stop(struct local_inotify *w)
{
	if (!w)
		return;
	local_watch_join(w->thread, w->stop_fd);
	close(w->ifd);
	g_hash_table_destroy(w->marks);
	g_hash_table_destroy(w->nodes);
	g_hash_table_destroy(w->wds);
	g_hash_table_destroy(w->dirs);
	g_mutex_clear(&w->lock);
	g_free(w);
}
