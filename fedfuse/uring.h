/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uring.h - requests through FUSE over io_uring, where the kernel offers it (see uring.c).
 */
#ifndef FEDFUSE_URING_H
#define FEDFUSE_URING_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Before the INIT reply that asks for io_uring: make a ring, its buffers and its entries for
 * every queue the kernel will have. 0, or a negative errno (then ask for none). */
int ff_uring_prepare(struct fuse_session *se, int devfd);
/* After that reply (`answered`: it reached the kernel): register the entries and start
 * serving them; else forget what was prepared. */
void ff_uring_start(bool answered);
#define FF_URING_POLL_USEC 50 /* how long a ring's thread looks for the next request awake */

/* How long a ring's thread looks for the next request before it sleeps (µs, 0: not at all);
 * before ff_uring_start(). */
void ff_uring_set_poll(int usec);
/* Whether requests come through io_uring. */
bool ff_uring_active(void);
/* The reply `iov` (libfuse's, fuse_out_header first): true when it answered a request that
 * came on a ring, *len its bytes; false when it is for /dev/fuse. */
bool ff_uring_answer(const struct iovec *iov, int count, ssize_t *len);
/* The buffer the reply to this thread's request will go out of, when a reply of `size` bytes
 * fits: data read into it need not be copied again. NULL elsewhere. */
void *ff_uring_buffer(size_t size);
/* One line for /.fedfuse/stats, when active. */
void ff_uring_describe(GString *out);
/* Stop serving and free everything (after the session's loop has ended). */
void ff_uring_stop(void);

#endif
