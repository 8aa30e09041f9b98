/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lock.c - record locks and flock() as open file description locks (see lock.h).
 *
 * Locking: one mutex guards the owner table, the memfd anchors and the wait queue; only
 * non-blocking calls (F_OFD_SETLK, flock with LOCK_NB) are made under it. Replies to queued
 * requests are sent without it, after the request's interrupt callback is unhooked.
 *
 * A file whose server keeps locks too (ff_mount.server_locks) is claimed by one request at a
 * time (the `busy` set): the request checks this machine's table, asks the server with the
 * mutex released, and changes the table only when the server agreed, so that both say the same.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fedfuse/file.h"
#include "fedfuse/gateway.h"
#include "fedfuse/lock.h"
#include "fedfuse/log.h"

#define RETRY_USEC 10000 /* how often waiting requests are retried without a wake-up */
/* How often a request the server refused is asked again: from the first to the longest wait,
 * doubling (the server tells nobody when a lock is free; NFSv4.0 has no such callback). */
#define SERVER_RETRY_FIRST_USEC 50000
#define SERVER_RETRY_MAX_USEC 1000000
#define PROC_FD_LEN 32
#define OFF_MAX INT64_MAX /* off_t is 64 bits (_FILE_OFFSET_BITS=64) */

/* A range one owner holds, for F_GETLK's answer of who holds a conflicting lock: the kernel
 * reports -1 for the holder of an OFD lock. `end` is inclusive; OFF_MAX: to end of file. */
struct range {
	off_t start, end;
	short type;
};

struct owner_key {
	uint64_t ino;
	uint64_t owner;
};

/* One lock owner's open file description of one inode. */
struct lock_owner {
	struct owner_key key; /* first: the table hashes an entry by it */
	int fd;
	pid_t pid;	/* of the process that locked last */
	GArray *ranges; /* struct range, disjoint */
	bool on_server; /* the server may hold some of them */
};

/* An anonymous file whose descriptions carry the locks of an inode no backend can open here. */
struct anchor {
	int fd;
	int refs; /* descriptions opened from it and still open */
};

enum { WAIT_POSIX, WAIT_FLOCK };

struct waiter {
	struct ff_locks *locks;
	fuse_req_t req;
	int kind;
	bool cancelled; /* interrupted: answered EINTR */
	int fd; /* the description to lock; once queued, a dup of it (its owner may close its own) */
	struct owner_key key;
	pid_t pid;
	struct flock fl; /* WAIT_POSIX */
	int op;		 /* WAIT_FLOCK: LOCK_SH or LOCK_EX */
	int rc;
	/* A file whose server keeps its locks too: the open file the request came through (its
	 * handle and mount), else NULL. */
	struct ff_file *file;
	bool server_refused; /* the last attempt's -EAGAIN was the server's */
	gint64 retry_at;     /* then, when to ask it again (monotonic µs), and the wait after */
	gint64 backoff;
};

struct ff_locks {
	GMutex lock;
	GCond cond;
	GHashTable *owners; /* struct lock_owner (by its key) */
	/* ino (uint64_t *) -> struct anchor. An inode's descriptions all come from its anchor,
	 * or none do (a regular file of a backend with lock_fd): an inode with an anchor owns a
	 * reference to it for each description it has open. */
	GHashTable *anchors;
	gint nowners; /* owners' size, read without the mutex on every close */
	GQueue waiters;
	GHashTable *busy; /* inos (uint64_t *) claimed by a request that goes to the server */
	GCond idle;	  /* one was unclaimed */
	GThread *thread;
	bool stopping;
};

static guint key_hash(gconstpointer p)
{
	const struct owner_key *k = p;

	return g_int64_hash(&k->ino) ^ (guint)(k->owner * UINT64_C(0x9e3779b97f4a7c15) >> 32);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(struct owner_key)) == 0;
}

/* ---- shadow ranges -------------------------------------------------------------------------- */

static off_t range_end(const struct flock *fl)
{
	return fl->l_len == 0 ? OFF_MAX : fl->l_start + fl->l_len - 1;
}

/* Forget [start, end] from an owner's ranges. */
static void ranges_cut(GArray *ranges, off_t start, off_t end)
{
	for (guint i = 0; i < ranges->len;) {
		struct range *r = &g_array_index(ranges, struct range, i);

		if (r->end < start || r->start > end) {
			i++;
		} else if (r->start < start && r->end > end) { /* split in two */
			struct range tail = { end + 1, r->end, r->type };

			r->end = start - 1;
			g_array_insert_val(ranges, i + 1, tail);
			i += 2;
		} else if (r->start < start) {
			r->end = start - 1;
			i++;
		} else if (r->end > end) {
			r->start = end + 1;
			i++;
		} else {
			g_array_remove_index(ranges, i);
		}
	}
}

static void ranges_note(struct lock_owner *lo, const struct flock *fl)
{
	off_t end = range_end(fl);

	ranges_cut(lo->ranges, fl->l_start, end);
	if (fl->l_type != F_UNLCK) {
		struct range r = { fl->l_start, end, fl->l_type };

		g_array_append_val(lo->ranges, r);
	}
}

/* The process of another owner of `ino` holding a range that conflicts with `fl`, or 0. */
static pid_t holder(struct ff_locks *l, const struct owner_key *me, const struct flock *fl)
{
	off_t end = range_end(fl);
	GHashTableIter it;
	gpointer p;

	g_hash_table_iter_init(&it, l->owners);
	while (g_hash_table_iter_next(&it, &p, NULL)) {
		struct lock_owner *lo = p;

		if (lo->key.ino != me->ino || lo->key.owner == me->owner)
			continue;
		for (guint i = 0; i < lo->ranges->len; i++) {
			const struct range *r = &g_array_index(lo->ranges, struct range, i);

			if (r->start <= end && r->end >= fl->l_start &&
			    (r->type == F_WRLCK || fl->l_type == F_WRLCK))
				return lo->pid;
		}
	}
	return 0;
}

/* ---- descriptions ------------------------------------------------------------------------- */

/* A new open file description of the inode for locks; called with the mutex held. */
static int open_description(struct ff_locks *l, struct ff_inode *inode, struct ff_mount *mnt)
{
	char proc[PROC_FD_LEN];
	struct anchor *a;
	int fd;

	if (mnt && S_ISREG(inode->type)) {
		fd = ff_gw_lock_fd(mnt, inode->bnode);
		if (fd != -EOPNOTSUPP)
			return fd;
	}
	a = g_hash_table_lookup(l->anchors, &inode->ino);
	if (!a) {
		int afd = memfd_create("fedfuse-lock", MFD_CLOEXEC);

		if (afd < 0)
			return -errno;
		a = g_new0(struct anchor, 1);
		a->fd = afd;
		g_hash_table_insert(l->anchors, g_memdup2(&inode->ino, sizeof(inode->ino)), a);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", a->fd);
	fd = open(proc, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		if (a->refs == 0)
			g_hash_table_remove(l->anchors, &inode->ino);
		return fd;
	}
	a->refs++;
	return fd;
}

/* Close a description of inode `ino` made by open_description(); called with the mutex held. */
static void close_description(struct ff_locks *l, uint64_t ino, int fd)
{
	struct anchor *a = g_hash_table_lookup(l->anchors, &ino);

	close(fd);
	if (a && --a->refs == 0)
		g_hash_table_remove(l->anchors, &ino);
}

static void anchor_free(gpointer p)
{
	struct anchor *a = p;

	close(a->fd);
	g_free(a);
}

/* The owner's entry, made on first use; called with the mutex held. */
static int owner_get(struct ff_locks *l, struct ff_inode *inode, struct ff_mount *mnt,
		     uint64_t owner, struct lock_owner **out)
{
	struct owner_key key = { inode->ino, owner };
	struct lock_owner *lo = g_hash_table_lookup(l->owners, &key);
	int fd;

	if (!lo) {
		fd = open_description(l, inode, mnt);
		if (fd < 0)
			return fd;
		lo = g_new0(struct lock_owner, 1);
		lo->key = key;
		lo->fd = fd;
		lo->ranges = g_array_new(FALSE, FALSE, sizeof(struct range));
		g_hash_table_add(l->owners, lo);
		g_atomic_int_set(&l->nowners, g_hash_table_size(l->owners));
	}
	*out = lo;
	return 0;
}

static void owner_free(struct ff_locks *l, struct lock_owner *lo)
{
	close_description(l, lo->key.ino, lo->fd); /* drops every lock it holds */
	g_array_free(lo->ranges, TRUE);
	g_free(lo);
}

/* ---- the wait queue ----------------------------------------------------------------------- */

/* Something was unlocked: waiting requests may go now. Mutex held. */
static void wake_locked(struct ff_locks *l)
{
	if (!g_queue_is_empty(&l->waiters))
		g_cond_signal(&l->cond);
}

/* One non-blocking attempt of a request, first or queued; 0, -EAGAIN (held by another), or
 * -errno. An unlock wakes the queue. Mutex held. */
static int try_lock(struct ff_locks *l, struct waiter *w)
{
	struct lock_owner *lo;

	if (w->kind == WAIT_FLOCK) {
		if (flock(w->fd, w->op | LOCK_NB) < 0)
			return -errno; /* EWOULDBLOCK is EAGAIN */
		if (w->op == LOCK_UN)
			wake_locked(l);
		return 0;
	}
	if (fcntl(w->fd, F_OFD_SETLK, &w->fl) < 0)
		return errno == EACCES ? -EAGAIN : -errno;
	lo = g_hash_table_lookup(l->owners, &w->key);
	if (lo) {
		lo->pid = w->pid;
		ranges_note(lo, &w->fl);
	}
	if (w->fl.l_type == F_UNLCK)
		wake_locked(l);
	return 0;
}

/* ---- locks the server keeps too -------------------------------------------------------------- */

static bool on_server(const struct ff_file *f)
{
	return f->mnt && f->mnt->server_locks && S_ISREG(f->inode->type);
}

/* Claim the file of a request that goes to the server, waiting for the request that has it.
 * Mutex held. */
static void claim(struct ff_locks *l, const struct ff_file *f)
{
	while (g_hash_table_contains(l->busy, &f->inode->ino))
		g_cond_wait(&l->idle, &l->lock);
	g_hash_table_add(l->busy, g_memdup2(&f->inode->ino, sizeof(f->inode->ino)));
}

static void unclaim(struct ff_locks *l, const struct ff_file *f)
{
	g_hash_table_remove(l->busy, &f->inode->ino);
	g_cond_broadcast(&l->idle);
}

/* Ask the server about `fl` for the request's owner; the mutex is released meanwhile. */
static int server_call(struct ff_locks *l, struct ff_file *f, uint64_t owner, unsigned int how,
		       struct flock *fl)
{
	int rc;

	g_mutex_unlock(&l->lock);
	rc = ff_gw_server_lock(f->mnt, f->fh, owner, how, fl);
	g_mutex_lock(&l->lock);
	return rc;
}

/* try_lock() of a request on a file the server keeps locks of: a lock is granted by this
 * machine's table (asked first: its conflicts need no round trip), then by the server, and only
 * then entered in the table; an unlock leaves the table first. The file is claimed. */
static int try_lock_server(struct ff_locks *l, struct waiter *w)
{
	bool flocks = w->kind == WAIT_FLOCK;
	uint64_t owner = flocks ? (uint64_t)(uintptr_t)w->file : w->key.owner;
	unsigned int how = FF_LOCK_SET | (flocks ? FF_LOCK_FLOCK : 0);
	struct flock fl = w->fl;
	int held, rc;

	w->server_refused = false;
	if (flocks) {
		fl = (struct flock){ .l_type = w->op == LOCK_SH	  ? F_RDLCK
					       : w->op == LOCK_EX ? F_WRLCK
								  : F_UNLCK,
				     .l_whence = SEEK_SET };
	}
	if (fl.l_type == F_UNLCK) {
		rc = try_lock(l, w);
		if (rc == 0)
			rc = server_call(l, w->file, owner, how, &fl);
		if (rc == 0 && flocks)
			w->file->flock_held = 0;
		return rc;
	}
	if (!flocks) {
		struct lock_owner *lo;

		if (fcntl(w->fd, F_OFD_GETLK, &fl) < 0)
			return errno == EACCES ? -EAGAIN : -errno;
		if (fl.l_type != F_UNLCK)
			return -EAGAIN;
		fl = w->fl;
		rc = server_call(l, w->file, owner, how, &fl);
		w->server_refused = rc == -EAGAIN;
		lo = g_hash_table_lookup(l->owners, &w->key);
		if (lo)
			lo->on_server = true;
		return rc ?: try_lock(l, w);
	}
	/* flock() cannot be asked without taking it: take it here, and give it back (to what the
	 * description held before) when the server refuses */
	held = w->file->flock_held;
	rc = try_lock(l, w);
	if (rc == -EAGAIN && held) {
		/* Linux drops the lock a conversion replaces before it tries the new one: gone
		 * here, so on the server too */
		struct flock none = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

		w->file->flock_held = 0;
		server_call(l, w->file, owner, how, &none);
		wake_locked(l);
	}
	if (rc)
		return rc;
	rc = server_call(l, w->file, owner, how, &fl);
	if (rc == 0) {
		w->file->flock_held = w->op;
		return 0;
	}
	w->server_refused = rc == -EAGAIN;
	if (flock(w->fd, held ? held | LOCK_NB : LOCK_UN) < 0 || !held)
		wake_locked(l);
	return rc;
}

/* One attempt of a request, whose file is claimed when the server keeps its locks. Mutex
 * held. */
static int attempt(struct ff_locks *l, struct waiter *w)
{
	return w->file ? try_lock_server(l, w) : try_lock(l, w);
}

/* Answer a request that left the queue; without the mutex. */
static void waiter_finish(struct waiter *w)
{
	fuse_req_interrupt_func(w->req, NULL, NULL); /* waits out a running callback */
	fuse_reply_err(w->req, w->rc < 0 ? -w->rc : 0);
	close(w->fd);
	g_free(w);
}

static void on_interrupt(fuse_req_t req, void *data)
{
	struct waiter *w = data;
	struct ff_locks *l = w->locks;

	g_mutex_lock(&l->lock);
	w->cancelled = true;
	g_cond_signal(&l->cond);
	g_mutex_unlock(&l->lock);
}

/* A queued request on a file the server keeps locks of, whose turn has come: tried with its
 * file claimed, out of the queue (the mutex is released meanwhile). Returns true when it is
 * answered (then it is on *done), false when it waits again. */
static bool retry_server(struct ff_locks *l, struct waiter *w, GSList **done)
{
	claim(l, w->file);
	w->rc = try_lock_server(l, w);
	unclaim(l, w->file);
	if (w->rc != -EAGAIN || w->cancelled) {
		if (w->rc == -EAGAIN)
			w->rc = -EINTR;
		*done = g_slist_prepend(*done, w);
		return true;
	}
	if (w->server_refused) {
		w->retry_at = g_get_monotonic_time() + w->backoff;
		w->backoff = MIN(w->backoff * 2, SERVER_RETRY_MAX_USEC);
	} else {
		/* this machine's owner holds it: its unlock wakes the queue */
		w->retry_at = g_get_monotonic_time() + RETRY_USEC;
	}
	g_queue_push_tail(&l->waiters, w);
	return false;
}

static gpointer wait_thread(gpointer data)
{
	struct ff_locks *l = data;

	g_mutex_lock(&l->lock);
	while (!l->stopping) {
		gint64 now = g_get_monotonic_time();
		bool changed = false;
		GSList *done = NULL;

		for (GList *it = l->waiters.head; it;) {
			struct waiter *w = it->data;
			GList *next = it->next;

			if (w->file && !w->cancelled) {
				if (now < w->retry_at ||
				    g_hash_table_contains(l->busy, &w->file->inode->ino)) {
					it = next;
					continue;
				}
				g_queue_delete_link(&l->waiters, it);
				retry_server(l, w, &done);
				changed = true; /* the queue may have changed meanwhile */
				break;
			}
			w->rc = w->cancelled ? -EINTR : try_lock(l, w);
			if (w->rc != -EAGAIN) {
				g_queue_delete_link(&l->waiters, it);
				done = g_slist_prepend(done, w);
			}
			it = next;
		}
		if (changed && !done)
			continue;
		if (done) {
			g_mutex_unlock(&l->lock);
			g_slist_free_full(done, (GDestroyNotify)waiter_finish);
			g_mutex_lock(&l->lock);
			continue;
		}
		if (g_queue_is_empty(&l->waiters))
			g_cond_wait(&l->cond, &l->lock);
		else
			g_cond_wait_until(&l->cond, &l->lock, g_get_monotonic_time() + RETRY_USEC);
	}
	g_mutex_unlock(&l->lock);
	return NULL;
}

/* Queue a blocking request that could not be granted at once, with `fd`, a duplicate of the
 * description to lock (the queue's from now on). Called without the mutex. */
static void enqueue(struct ff_locks *l, fuse_req_t req, struct waiter *proto, int fd)
{
	struct waiter *w = g_new(struct waiter, 1);

	*w = *proto;
	w->locks = l;
	w->req = req;
	w->cancelled = false;
	w->fd = fd;
	w->backoff = SERVER_RETRY_FIRST_USEC;
	w->retry_at = w->server_refused ? g_get_monotonic_time() + w->backoff : 0;
	/* Hooked before it is queued: an interrupt that came already marks it at once. */
	fuse_req_interrupt_func(req, on_interrupt, w);
	g_mutex_lock(&l->lock);
	g_queue_push_tail(&l->waiters, w);
	g_cond_signal(&l->cond);
	g_mutex_unlock(&l->lock);
}

/* The first attempt `rc` of `w` (made under the mutex, which this releases): answer it, or
 * queue it when it would block and may wait. */
static void answer_or_wait(struct ff_locks *l, fuse_req_t req, struct waiter *w, int rc, bool wait)
{
	int dup = -1;

	if (rc == -EAGAIN && wait) {
		dup = fcntl(w->fd, F_DUPFD_CLOEXEC, 0);
		rc = dup < 0 ? -errno : rc;
	}
	g_mutex_unlock(&l->lock);
	if (dup >= 0)
		enqueue(l, req, w, dup);
	else
		fuse_reply_err(req, -rc);
}

/* ---- the operations --------------------------------------------------------------------- */

struct ff_locks *ff_locks_new(void)
{
	struct ff_locks *l = g_new0(struct ff_locks, 1);

	g_mutex_init(&l->lock);
	g_cond_init(&l->cond);
	l->owners = g_hash_table_new(key_hash, key_equal);
	l->anchors = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, anchor_free);
	g_queue_init(&l->waiters);
	l->busy = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	g_cond_init(&l->idle);
	l->thread = g_thread_new("locks", wait_thread, l);
	return l;
}

void ff_locks_stop(struct ff_locks *l)
{
	struct waiter *w;

	if (!l || !l->thread)
		return;
	g_mutex_lock(&l->lock);
	l->stopping = true;
	g_cond_signal(&l->cond);
	g_mutex_unlock(&l->lock);
	g_thread_join(l->thread);
	l->thread = NULL;
	while ((w = g_queue_pop_head(&l->waiters))) {
		w->rc = -EINTR;
		waiter_finish(w);
	}
}

void ff_locks_free(struct ff_locks *l)
{
	GHashTableIter it;
	gpointer p;

	if (!l)
		return;
	ff_locks_stop(l);
	g_hash_table_iter_init(&it, l->owners);
	while (g_hash_table_iter_next(&it, &p, NULL)) {
		g_hash_table_iter_steal(&it);
		owner_free(l, p);
	}
	g_hash_table_destroy(l->owners);
	g_hash_table_destroy(l->anchors);
	g_hash_table_destroy(l->busy);
	g_cond_clear(&l->idle);
	g_cond_clear(&l->cond);
	g_mutex_clear(&l->lock);
	g_free(l);
}

void ff_locks_getlk(struct ff_locks *l, fuse_req_t req, struct ff_file *f, uint64_t owner,
		    struct flock *lock)
{
	struct lock_owner *lo;
	struct flock fl = *lock;
	int rc;

	fl.l_pid = 0;
	g_mutex_lock(&l->lock);
	rc = owner_get(l, f->inode, f->mnt, owner, &lo);
	if (rc == 0 && fcntl(lo->fd, F_OFD_GETLK, &fl) < 0)
		rc = -errno;
	/* -1: an open file description lock, ours or another program's; ours have owners */
	if (rc == 0 && fl.l_type != F_UNLCK && fl.l_pid == -1)
		fl.l_pid = holder(l, &lo->key, &fl);
	g_mutex_unlock(&l->lock);
	if (rc == 0 && fl.l_type == F_UNLCK && on_server(f)) {
		/* none here: another machine's, perhaps */
		fl = *lock;
		fl.l_pid = 0;
		rc = ff_gw_server_lock(f->mnt, f->fh, owner, FF_LOCK_TEST, &fl);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lock(req, &fl);
}

/* Answer a first attempt (see answer_or_wait()), the file given back first if claimed. */
static void answer_claimed(struct ff_locks *l, fuse_req_t req, struct waiter *w, int rc, bool wait)
{
	if (w->file)
		unclaim(l, w->file);
	answer_or_wait(l, req, w, rc, wait);
}

void ff_locks_setlk(struct ff_locks *l, fuse_req_t req, struct ff_file *f, uint64_t owner,
		    const struct flock *lock, bool sleep)
{
	/* the kernel names the locking process (its tgid) in the lock; the request has a thread */
	struct waiter proto = { .kind = WAIT_POSIX,
				.pid = lock->l_pid > 0 ? lock->l_pid : fuse_req_ctx(req)->pid,
				.fl = *lock,
				.file = on_server(f) ? f : NULL };
	struct lock_owner *lo;
	int rc;

	proto.fl.l_pid = 0;
	proto.key = (struct owner_key){ f->inode->ino, owner };
	g_mutex_lock(&l->lock);
	if (proto.file)
		claim(l, f);
	if (proto.fl.l_type == F_UNLCK && !g_hash_table_lookup(l->owners, &proto.key)) {
		answer_claimed(l, req, &proto, 0, false); /* holds nothing: nothing to unlock */
		return;
	}
	rc = owner_get(l, f->inode, f->mnt, owner, &lo);
	if (rc == 0) {
		proto.fd = lo->fd;
		rc = attempt(l, &proto);
	}
	answer_claimed(l, req, &proto, rc, sleep);
}

void ff_locks_flock(struct ff_locks *l, fuse_req_t req, struct ff_file *f, int op)
{
	struct waiter proto = { .kind = WAIT_FLOCK,
				.op = op & ~LOCK_NB,
				.file = on_server(f) ? f : NULL };
	int rc = 0;

	g_mutex_lock(&l->lock);
	if (proto.file)
		claim(l, f);
	if (f->flock_fd < 0 && proto.op == LOCK_UN) {
		answer_claimed(l, req, &proto, 0, false); /* never locked: nothing to unlock */
		return;
	}
	if (f->flock_fd < 0) {
		rc = open_description(l, f->inode, f->mnt);
		if (rc >= 0) {
			f->flock_fd = rc;
			rc = 0;
		}
	}
	if (rc == 0) {
		proto.fd = f->flock_fd;
		rc = attempt(l, &proto);
	}
	answer_claimed(l, req, &proto, rc, !(op & LOCK_NB));
}

void ff_locks_owner_closed(struct ff_locks *l, struct ff_file *f, uint64_t owner)
{
	struct owner_key key = { f->inode->ino, owner };
	bool server = on_server(f);
	struct lock_owner *lo;

	if (g_atomic_int_get(&l->nowners) == 0)
		return; /* nobody has locked anything: every close comes here */
	g_mutex_lock(&l->lock);
	if (server)
		claim(l, f);
	lo = g_hash_table_lookup(l->owners, &key);
	if (lo) {
		struct flock all = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
		int rc = 0;

		server = server && lo->on_server;
		g_hash_table_remove(l->owners, lo);
		g_atomic_int_set(&l->nowners, g_hash_table_size(l->owners));
		owner_free(l, lo);
		wake_locked(l);
		if (server)
			rc = server_call(l, f, owner, FF_LOCK_SET, &all);
		if (rc < 0)
			ff_log_once(LOG_WARNING, f->mnt->loc.spec.uri, 60,
				    "releasing the locks of a closed file on %s failed: %s",
				    f->mnt->loc.spec.uri, g_strerror(-rc));
	}
	if (on_server(f))
		unclaim(l, f);
	g_mutex_unlock(&l->lock);
}

void ff_locks_file_closed(struct ff_locks *l, struct ff_file *f)
{
	/* a flock() the server holds goes with the handle's release() */
	if (f->flock_fd < 0)
		return;
	g_mutex_lock(&l->lock);
	close_description(l, f->inode->ino, f->flock_fd);
	f->flock_fd = -1;
	wake_locked(l);
	g_mutex_unlock(&l->lock);
}
