/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.h - the threads that take the session's requests: a few wait for them, and more are
 * added only while all of those are held up (see loop.c).
 */
#ifndef FEDFUSE_LOOP_H
#define FEDFUSE_LOOP_H

#include <pthread.h>
#include <stdbool.h>

#include <glib.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

/* Serve `se` until it ends (unmounted, or fuse_session_exit() from a signal handler; the
 * signals must reach the calling thread). `waiting`: how many threads wait for requests when
 * none is held up, 0: the number of CPUs, from 2 to 8; `max`: how many may serve at once.
 * Returns 0, or the negative errno that ended the session. */
int ff_loop_run(struct fuse_session *se, unsigned waiting, unsigned max);

/* The pace of the supervisors that add a thread where requests are held up (this loop's, and
 * uring.c's for each ring): a request this old holds its thread up; they look every
 * FF_TICK_USEC while one is held up, every FF_CALM_TICK_USEC while requests come, and not at
 * all once none has come for FF_QUIET_USEC, until the next one. */
#define FF_GROW_USEC 2000
#define FF_TICK_USEC 10000
#define FF_CALM_TICK_USEC 100000
#define FF_QUIET_USEC G_USEC_PER_SEC

/* Make `tick`, which a supervisor waits on in ff_tick_wait() (it times on CLOCK_MONOTONIC). */
void ff_tick_init(pthread_cond_t *tick);
/* Wait on `tick`, holding `lock`, for the next look: soon while a request is `held` up. */
void ff_tick_wait(pthread_cond_t *tick, pthread_mutex_t *lock, bool held);

/* Start a thread with every signal blocked: they are for the thread that runs the loop.
 * Returns 0 or a negative errno. */
int ff_start_thread(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
