/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devio.h - the session's own reads and writes of /dev/fuse, to ask the kernel for what
 * libfuse 3.14 does not pass on (see devio.c).
 */
#ifndef FEDFUSE_DEVIO_H
#define FEDFUSE_DEVIO_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>

/* Take over the reads and writes of the mounted session `se`, before its loop starts: its INIT
 * reply then asks for parallel lookups and readdirs where the kernel offers them, and, with
 * `uring`, for FUSE over io_uring. Returns 0 or a negative errno (the session then goes on as
 * libfuse has it). */
int ff_devio_install(struct fuse_session *se, bool uring);
/* Whether the INIT reply being made asks for io_uring (for the init callback: replies on a
 * ring cannot be spliced). */
bool ff_devio_uring_coming(void);

#endif
