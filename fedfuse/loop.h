/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.h - the threads that take the session's requests: a few wait for them, and more are
 * added only while all of those are held up (see loop.c).
 */
#ifndef FEDFUSE_LOOP_H
#define FEDFUSE_LOOP_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

/* Serve `se` until it ends (unmounted, or fuse_session_exit() from a signal handler; the
 * signals must reach the calling thread). `waiting`: how many threads wait for requests when
 * none is held up, 0: the number of CPUs, from 2 to 8; `max`: how many may serve at once.
 * Returns 0, or the negative errno that ended the session. */
int ff_loop_run(struct fuse_session *se, unsigned waiting, unsigned max);

#endif
