/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * interrupt.h - interrupted requests. When a caller blocked in a request gets a signal, the
 * kernel sends FUSE_INTERRUPT and waits for the request's answer, even for Ctrl-C (a request
 * the daemon has read is never dropped). A handler that may wait for a server brackets its
 * work with ff_intr_begin()/ff_intr_end(); an interrupt marks the request, and a backend that
 * waits for its server asks ff_intr_requested() (through struct ff_host) at each wake and
 * gives up with -EINTR: the caller sees EINTR within a second, the worker is free again, and
 * the server's late answer is discarded by the backend.
 */
#ifndef FEDFUSE_INTERRUPT_H
#define FEDFUSE_INTERRUPT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>

/* The calling thread serves `req` until ff_intr_end(); nested pairs count as one. */
void ff_intr_begin(fuse_req_t req);
void ff_intr_end(void);
/* True when the request the calling thread serves was interrupted, or the session `se` given
 * here has ended (unmounted, or the daemon is stopping). Lock-free when neither. */
bool ff_intr_requested(void);
void ff_intr_watch_session(struct fuse_session *se);
/* struct ff_host's interrupt_hook(): fn(arg) runs when the request the calling thread serves
 * is interrupted; fn NULL clears it. */
void ff_intr_hook(void (*fn)(void *arg), void *arg);

#endif /* FEDFUSE_INTERRUPT_H */
