/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_location.c - libFuzzer harness: the input is a `locations=` value (a ';'-separated list
 * of location URIs of any scheme), parsed as a namespace file's or a fedfuse junction's is.
 */
#include <stddef.h>
#include <stdint.h>

#include "fedfuse/location.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	GPtrArray *locs = NULL;
	char *msg = NULL;

	if (ff_location_list_parse((const char *)data, size, 256, &locs, &msg))
		g_ptr_array_unref(locs);
	g_free(msg);
	return 0;
}
