/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_location.c - libFuzzer harness: the input is a `locations=` value (a ';'-separated list
 * of location URIs of any scheme), parsed as a namespace file's or a fedfuse junction's is, and
 * each location's port options read as the backends read them.
 */
#include <stddef.h>
#include <stdint.h>

#include "fedfuse/location.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GPtrArray *locs = NULL;
	char *msg = NULL;

	if (ff_location_list_parse((const char *)data, size, 256, &locs, &msg)) {
		for (guint i = 0; i < locs->len; i++) {
			struct ff_location *loc = locs->pdata[i];

			ff_location_port_option(&loc->spec, "nfsport");
			ff_location_port_option(&loc->spec, "mountport");
		}
		g_ptr_array_unref(locs);
	}
	g_free(msg);
	return 0;
}
