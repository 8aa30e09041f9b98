/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.c - the threads that take the session's requests (in place of fuse_session_loop_mt()).
 *
 * libfuse's loop keeps up to ten threads waiting in read() on /dev/fuse, and the kernel hands
 * each request to the one that has waited longest. A program that asks one thing at a time
 * (fio's 4 KiB random reads, O_DIRECT) is then served by ten threads in turn, each woken where
 * the scheduler last left it: 61-81k IOPS, against 87-104k with two threads (mergerfs, which
 * keeps two, 86-101k; tmpfs, 2 CPUs, alternated). Two threads alone would let two requests to a
 * server that does not answer hold up the whole mount until its timeout. With this loop: 77-86k
 * against libfuse's 59-64k (mergerfs tuned 83-88k).
 *
 * So `waiting` threads wait for requests, and a supervisor adds more: when a request waits in
 * the kernel's queue while every thread is busy, one of them for FF_GROW_USEC or more (a slow
 * server, a long fsync, a FIFO's open), it wakes or starts another thread, up to `max` serving
 * at once. Extra threads rest again, on a condition variable rather than in read(), once none
 * has been added for REST_AFTER_USEC. The supervisor looks every FF_TICK_USEC while a request
 * is held up, every FF_CALM_TICK_USEC while requests come and none is, and not at all once
 * none has come for FF_QUIET_USEC and none is being served, until the next one. It has to look
 * seldom: ticking every 2 ms cost the random reads above a tenth of their rate, every 10 ms
 * still a twentieth.
 *
 * Locking: `lock` guards every field of the loop and the workers' `busy_since`. A worker can be
 * cancelled only while it waits in fuse_session_receive_buf(), holding nothing.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <glib.h>

#include "fedfuse/log.h"
#include "fedfuse/loop.h"

#define REST_AFTER_USEC (5 * G_USEC_PER_SEC) /* none added this long: extra threads rest */
#define WAITING_MIN 2u
#define WAITING_MAX 8u

struct ff_loop;

struct worker {
	struct ff_loop *l;
	pthread_t thread;
	struct fuse_buf buf; /* libfuse allocates it at the first request */
	gint64 busy_since;   /* when its request began; 0: not serving one */
};

struct ff_loop {
	struct fuse_session *se;
	pthread_mutex_t lock;
	pthread_cond_t rest; /* resting workers wait here for a wake-up */
	pthread_cond_t tick; /* the supervisor waits here */
	sem_t ended;	     /* posted by a worker that saw the session end */
	GPtrArray *workers;  /* struct worker, every one started */
	unsigned waiting, max;
	unsigned reading; /* workers waiting for a request, or on their way to */
	unsigned resting;
	unsigned wakeups; /* resting workers told to take requests again */
	guint64 requests;
	gint64 last_added;
	bool quiet; /* the supervisor sleeps until a request comes */
	bool stop;
	int error;
};

static void *serve(void *arg);

int ff_start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

/* One more thread takes requests: a resting one, else a new one. Under the lock. */
static void add_worker(struct ff_loop *l, gint64 now)
{
	struct worker *w;
	int rc;

	l->last_added = now;
	if (l->resting > 0) {
		l->resting--;
		l->wakeups++;
		l->reading++;
		pthread_cond_signal(&l->rest);
		return;
	}
	w = g_new0(struct worker, 1);
	w->l = l;
	rc = ff_start_thread(&w->thread, serve, w);
	if (rc < 0) {
		ff_warn("cannot start a worker thread: %s", g_strerror(-rc));
		g_free(w);
		return;
	}
	g_ptr_array_add(l->workers, w);
	l->reading++;
}

/* The session has ended (res 0: unmounted or told to exit; < 0: the error that ended it). */
static void end(struct ff_loop *l, int res)
{
	pthread_mutex_lock(&l->lock);
	if (!l->stop) {
		l->stop = true;
		l->error = res < 0 ? res : 0;
	}
	pthread_cond_broadcast(&l->rest);
	pthread_cond_broadcast(&l->tick);
	pthread_mutex_unlock(&l->lock);
	sem_post(&l->ended);
}

/* After a request: take the next one, or rest if enough threads wait for it. False: stop. */
static bool next(struct ff_loop *l, struct worker *w)
{
	bool go;

	pthread_mutex_lock(&l->lock);
	w->busy_since = 0;
	if (!l->stop && l->reading >= l->waiting &&
	    g_get_monotonic_time() - l->last_added >= REST_AFTER_USEC) {
		l->resting++;
		while (!l->wakeups && !l->stop)
			pthread_cond_wait(&l->rest, &l->lock);
		if (l->wakeups > 0)
			l->wakeups--; /* add_worker() counted it as reading */
		else
			l->resting--;
	} else {
		l->reading++;
	}
	go = !l->stop;
	pthread_mutex_unlock(&l->lock);
	return go;
}

static void *serve(void *arg)
{
	struct worker *w = arg;
	struct ff_loop *l = w->l;
	int res;

	for (;;) {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(l->se, &w->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0 || fuse_session_exited(l->se)) {
			end(l, res);
			return NULL;
		}
		pthread_mutex_lock(&l->lock);
		l->reading--;
		l->requests++;
		w->busy_since = g_get_monotonic_time();
		if (l->quiet) {
			l->quiet = false;
			pthread_cond_signal(&l->tick);
		}
		pthread_mutex_unlock(&l->lock);
		fuse_session_process_buf(l->se, &w->buf);
		if (!next(l, w))
			return NULL;
	}
}

void ff_tick_init(pthread_cond_t *tick)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(tick, &attr);
	pthread_condattr_destroy(&attr);
}

void ff_tick_wait(pthread_cond_t *tick, pthread_mutex_t *lock, bool held)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (held ? FF_TICK_USEC : FF_CALM_TICK_USEC) * 1000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(tick, lock, &ts);
}

/* When the oldest request being served began, 0: none is. Under the lock. */
static gint64 oldest_request(struct ff_loop *l)
{
	gint64 oldest = 0;

	for (guint i = 0; i < l->workers->len; i++) {
		struct worker *w = g_ptr_array_index(l->workers, i);

		if (w->busy_since && (!oldest || w->busy_since < oldest))
			oldest = w->busy_since;
	}
	return oldest;
}

/* Whether a request waits in the kernel's queue. */
static bool requests_waiting(struct ff_loop *l)
{
	struct pollfd p = { .fd = fuse_session_fd(l->se), .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void *supervise(void *arg)
{
	struct ff_loop *l = arg;
	gint64 now = g_get_monotonic_time(), last_request = now, oldest;
	guint64 seen = 0;
	bool held;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		now = g_get_monotonic_time();
		if (l->requests != seen) {
			seen = l->requests;
			last_request = now;
		}
		oldest = oldest_request(l);
		held = oldest && now - oldest >= FF_GROW_USEC;
		if (held && l->reading == 0 && l->workers->len - l->resting < l->max &&
		    requests_waiting(l))
			add_worker(l, now);
		/* Asleep, it hears of the next request that a thread takes: with none busy, one is
		 * free to take it. */
		if (!oldest && now - last_request >= FF_QUIET_USEC) {
			l->quiet = true;
			while (l->quiet && !l->stop)
				pthread_cond_wait(&l->tick, &l->lock);
			continue;
		}
		ff_tick_wait(&l->tick, &l->lock, held);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static unsigned default_waiting(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return CLAMP(cpus > 0 ? (unsigned)cpus : WAITING_MIN, WAITING_MIN, WAITING_MAX);
}

int ff_loop_run(struct fuse_session *se, unsigned waiting, unsigned max)
{
	struct ff_loop l = { .se = se, .max = MAX(max, 1u) };
	pthread_t supervisor;
	int rc;

	l.waiting = MIN(waiting ? waiting : default_waiting(), l.max);
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.rest, NULL);
	ff_tick_init(&l.tick);
	sem_init(&l.ended, 0, 0);
	l.workers = g_ptr_array_new();

	pthread_mutex_lock(&l.lock);
	while (l.workers->len < l.waiting) {
		guint before = l.workers->len;

		add_worker(&l, 0);
		if (l.workers->len == before)
			break;
	}
	pthread_mutex_unlock(&l.lock);
	rc = l.workers->len ? ff_start_thread(&supervisor, supervise, &l) : -EAGAIN;
	if (rc < 0) {
		end(&l, rc);
	} else {
		/* A signal's handler only marks the session as exiting: sem_wait() returns EINTR. */
		while (!fuse_session_exited(se) && sem_wait(&l.ended) != 0 && errno == EINTR)
			;
		end(&l, 0);
		pthread_join(supervisor, NULL);
	}

	/* No thread is added once `stop` is set. Those waiting in read() are cancelled there;
	 * the others end at their next request. */
	for (guint i = 0; i < l.workers->len; i++)
		pthread_cancel(((struct worker *)g_ptr_array_index(l.workers, i))->thread);
	for (guint i = 0; i < l.workers->len; i++) {
		struct worker *w = g_ptr_array_index(l.workers, i);

		pthread_join(w->thread, NULL);
		free(w->buf.mem);
		g_free(w);
	}
	g_ptr_array_free(l.workers, true);
	sem_destroy(&l.ended);
	pthread_cond_destroy(&l.tick);
	pthread_cond_destroy(&l.rest);
	pthread_mutex_destroy(&l.lock);
	return l.error;
}
