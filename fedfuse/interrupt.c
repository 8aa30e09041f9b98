/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * interrupt.c - which requests were interrupted (interrupt.h): a serial number per request,
 * the calling thread's in thread-local storage, and the set of interrupted serials.
 */
#include <glib.h>

#include "fedfuse/interrupt.h"

#define STALE_AFTER 1000000 /* requests */

static __thread guint64 current; /* the serial of the request this thread serves, or 0 */
static __thread int depth;
static guint64 next_serial = 1;
static gint pending; /* serials in `interrupted`: ff_intr_requested() skips the lock at 0 */
static GMutex lock;
static GHashTable *interrupted; /* serials (as pointers: 64-bit) of interrupted requests */
static struct fuse_session *session;

/* From libfuse's thread that read FUSE_INTERRUPT; the request may be answered meanwhile, so
 * only the serial is used. */
static void on_interrupt(fuse_req_t req, void *data)
{
	g_mutex_lock(&lock);
	if (!interrupted)
		interrupted = g_hash_table_new(g_direct_hash, g_direct_equal);
	if (g_hash_table_add(interrupted, data))
		g_atomic_int_inc(&pending);
	g_mutex_unlock(&lock);
}

void ff_intr_begin(fuse_req_t req)
{
	if (depth++ > 0)
		return;
	current = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
	fuse_req_interrupt_func(req, on_interrupt, GSIZE_TO_POINTER(current));
}

/* Serials far older than `now`: interrupts that came after their request ended. */
static gboolean is_stale(gpointer key, gpointer value, gpointer now)
{
	return GPOINTER_TO_SIZE(key) + STALE_AFTER < GPOINTER_TO_SIZE(now);
}

void ff_intr_end(void)
{
	if (--depth > 0)
		return;
	if (g_atomic_int_get(&pending) > 0) {
		g_mutex_lock(&lock);
		if (g_hash_table_remove(interrupted, GSIZE_TO_POINTER(current)))
			g_atomic_int_add(&pending, -1);
		/* An interrupt that came after its request ended left a serial never used
		 * again: dropped once a million requests have begun since. */
		if (g_hash_table_size(interrupted) > 16)
			g_atomic_int_add(&pending,
					 -(gint)g_hash_table_foreach_remove(
						 interrupted, is_stale, GSIZE_TO_POINTER(current)));
		g_mutex_unlock(&lock);
	}
	current = 0;
}

void ff_intr_watch_session(struct fuse_session *se)
{
	__atomic_store_n(&session, se, __ATOMIC_RELEASE);
}

bool ff_intr_requested(void)
{
	struct fuse_session *se = __atomic_load_n(&session, __ATOMIC_ACQUIRE);
	bool yes;

	if (!current)
		return false;
	/* Unmounted or stopping: no caller waits any more, and the session loop waits for its
	 * workers before it returns. */
	if (se && fuse_session_exited(se))
		return true;
	if (g_atomic_int_get(&pending) == 0)
		return false;
	g_mutex_lock(&lock);
	yes = g_hash_table_contains(interrupted, GSIZE_TO_POINTER(current));
	g_mutex_unlock(&lock);
	return yes;
}
