/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_namespace.c - libFuzzer harness: the input is a namespace file, loaded as the daemon
 * loads one (ff_namespace_load, with the default scheme check), from a memory file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fedfuse/namespace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct ff_namespace *ns;
	GError *err = NULL;
	char path[64];

	if (fd < 0)
		fd = memfd_create("namespace.conf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ns = ff_namespace_load(path, NULL, NULL, &err);
	if (ns) {
		/* what the daemon does with a loaded namespace: look paths up */
		ff_namespace_find(ns, "/");
		ff_namespace_resolve(ns, "/a/b/c", NULL);
		ff_namespace_unref(ns);
	}
	g_clear_error(&err);
	return 0;
}
