/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memory.c - giving freed memory back to the system (memory.h).
 */
#include <glib.h>
#include <malloc.h>
#include <stdbool.h>

#include "fedfuse/memory.h"

static gint freed;	/* objects freed since the last trim */
static gint seen_freed; /* `freed` at the last pass */

void ff_memory_freed(unsigned int n)
{
	g_atomic_int_add(&freed, (gint)n);
}

void ff_memory_trim_if_due(void)
{
	gint now = g_atomic_int_get(&freed);
	bool burst_ended = now > 0 && now == g_atomic_int_get(&seen_freed);

	if (burst_ended || now >= FF_TRIM_AFTER) {
		g_atomic_int_add(&freed, -now);
		g_atomic_int_set(&seen_freed, g_atomic_int_get(&freed));
		malloc_trim(0);
		return;
	}
	g_atomic_int_set(&seen_freed, now);
}
