/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * interrupt.c - which requests were interrupted (interrupt.h). Each thread that serves
 * requests has a slot, taken from a pool the first time and given back when the thread ends
 * (slots are never freed: an interrupt callback may still look at one). The slot names the
 * request the thread serves; FUSE_INTERRUPT for that very request marks the slot, which the
 * backend's wait loop sees at its next wake (every 100 ms at most).
 *
 * A callback for a request that was answered meanwhile finds the slot serving another request,
 * or none: libfuse holds a reference to the interrupted request during the callback, so a
 * later request cannot have its address.
 */
#include <glib.h>

#include "fedfuse/interrupt.h"

struct slot {
	GMutex lock;
	fuse_req_t req; /* the request the thread serves, or NULL */
	gint interrupted;
	int depth;
	void (*hook)(void *arg); /* ff_intr_hook(); slot lock */
	void *hook_arg;
};

static GMutex pool_lock;
static GSList *pool; /* slots of threads that ended */
static struct fuse_session *session;

static void slot_release(gpointer data)
{
	g_mutex_lock(&pool_lock);
	pool = g_slist_prepend(pool, data);
	g_mutex_unlock(&pool_lock);
}

static GPrivate thread_slot = G_PRIVATE_INIT(slot_release);

static struct slot *my_slot(void)
{
	struct slot *s = g_private_get(&thread_slot);

	if (s)
		return s;
	g_mutex_lock(&pool_lock);
	if (pool) {
		s = pool->data;
		pool = g_slist_delete_link(pool, pool);
	}
	g_mutex_unlock(&pool_lock);
	if (!s) {
		s = g_new0(struct slot, 1);
		g_mutex_init(&s->lock);
	}
	g_private_set(&thread_slot, s);
	return s;
}

/* From libfuse's thread that read FUSE_INTERRUPT. */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct slot *s = data;

	g_mutex_lock(&s->lock);
	if (s->req == req) {
		g_atomic_int_set(&s->interrupted, 1);
		if (s->hook)
			s->hook(s->hook_arg);
		s->hook = NULL;
	}
	g_mutex_unlock(&s->lock);
}

void ff_intr_begin(fuse_req_t req)
{
	struct slot *s = my_slot();

	if (s->depth++ > 0)
		return;
	g_mutex_lock(&s->lock);
	s->req = req;
	s->hook = NULL;
	g_atomic_int_set(&s->interrupted, 0);
	g_mutex_unlock(&s->lock);
	fuse_req_interrupt_func(req, on_interrupt, s);
}

void ff_intr_end(void)
{
	struct slot *s = g_private_get(&thread_slot);

	if (!s || --s->depth > 0)
		return;
	g_mutex_lock(&s->lock);
	s->req = NULL;
	s->hook = NULL;
	g_atomic_int_set(&s->interrupted, 0);
	g_mutex_unlock(&s->lock);
}

void ff_intr_hook(void (*fn)(void *arg), void *arg)
{
	struct slot *s = g_private_get(&thread_slot);

	if (!s || s->depth == 0)
		return;
	g_mutex_lock(&s->lock);
	if (fn && g_atomic_int_get(&s->interrupted)) {
		fn(arg);
		fn = NULL;
	}
	s->hook = fn;
	s->hook_arg = arg;
	g_mutex_unlock(&s->lock);
}

void ff_intr_watch_session(struct fuse_session *se)
{
	__atomic_store_n(&session, se, __ATOMIC_RELEASE);
}

bool ff_intr_requested(void)
{
	struct fuse_session *se = __atomic_load_n(&session, __ATOMIC_ACQUIRE);
	struct slot *s = g_private_get(&thread_slot);

	if (!s || s->depth == 0)
		return false;
	/* Unmounted or stopping: no caller waits any more, and the session loop waits for its
	 * workers before it returns. */
	if (se && fuse_session_exited(se))
		return true;
	return g_atomic_int_get(&s->interrupted) != 0;
}
