/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devio.h - the session's own reads and writes of /dev/fuse, to ask the kernel for what
 * libfuse 3.14 does not pass on (see devio.c).
 */
#ifndef FEDFUSE_DEVIO_H
#define FEDFUSE_DEVIO_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

/* Take over the reads and writes of the mounted session `se`, before its loop starts: its INIT
 * reply then asks for parallel lookups and readdirs where the kernel offers them. Returns 0 or
 * a negative errno (the session then goes on as libfuse has it). */
int ff_devio_install(struct fuse_session *se);

#endif
