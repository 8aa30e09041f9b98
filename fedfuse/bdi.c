/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bdi.c - the mount's backing device in the kernel (see bdi.h).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "fedfuse/bdi.h"
#include "fedfuse/log.h"

/* Undo mountinfo's octal escapes (\040 for a space, \011, \012, \134) in place. */
static void unescape(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* The "MAJOR:MINOR" device of the filesystem mounted last on `mountpoint` (absolute and
 * canonical), from /proc/self/mountinfo; NULL when there is none. */
static char *mount_device(const char *mountpoint)
{
	g_autofree char *text = NULL;
	char *found = NULL, *save = NULL;

	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE ... */
		g_auto(GStrv) f = g_strsplit(line, " ", 0);
		const char *sep = strstr(line, " - ");

		if (g_strv_length(f) < 5 || !sep || strncmp(sep + 3, "fuse", 4) != 0)
			continue;
		unescape(f[4]);
		if (strcmp(f[4], mountpoint) == 0) {
			g_free(found);
			found = g_strdup(f[2]); /* the last one is on top */
		}
	}
	return found;
}

void ff_bdi_set_readahead(const char *mountpoint, unsigned int kib)
{
	g_autofree char *dev = NULL;
	g_autofree char *path = NULL;
	FILE *f;
	bool ok;

	if (kib == 0)
		return;
	dev = mount_device(mountpoint);
	if (!dev) {
		ff_debug("read-ahead: %s is not in /proc/self/mountinfo", mountpoint);
		return;
	}
	path = g_strdup_printf("/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (!f) {
		ff_debug("read-ahead: cannot open %s: %s", path, g_strerror(errno));
		return;
	}
	errno = 0;
	ok = fprintf(f, "%u\n", kib) > 0;
	if (fclose(f) != 0 || !ok) {
		ff_debug("read-ahead: cannot write %s: %s", path, g_strerror(errno ? errno : EIO));
		return;
	}
	ff_debug("read-ahead of %s (device %s): %u KiB", mountpoint, dev, kib);
}
