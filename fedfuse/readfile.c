/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * readfile.c - a whole file read with read(2) (see readfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <unistd.h>

#include "fedfuse/readfile.h"

char *ff_read_file(const char *path, size_t max, size_t *len)
{
	char chunk[65536];
	GString *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int e = 0;

	if (fd < 0)
		return NULL;
	buf = g_string_new(NULL);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || buf->len + (size_t)MAX(n, 0) > max) {
			e = n < 0 ? errno : EFBIG;
			break;
		}
		if (n == 0)
			break;
		g_string_append_len(buf, chunk, n);
	}
	close(fd);
	if (e) {
		g_string_free(buf, TRUE);
		errno = e;
		return NULL;
	}
	if (len)
		*len = buf->len;
	return g_string_free(buf, FALSE);
}
