/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * readfile.h - a whole file read with read(2), for files whose st_size says nothing (the
 * control files report 0) or that must not be swallowed whole whatever they are (/dev/zero).
 */
#ifndef FEDFUSE_READFILE_H
#define FEDFUSE_READFILE_H

#include <stddef.h>

/* The contents of `path` (NUL-terminated, *len bytes when len is not NULL), or NULL with errno
 * set: EFBIG when it holds more than `max` bytes. */
char *ff_read_file(const char *path, size_t max, size_t *len);

#endif /* FEDFUSE_READFILE_H */
