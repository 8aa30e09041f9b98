/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_node.c - nodes of local locations and the cache of their descriptors (local_node.h).
 *
 * The cache is one ring of the nodes whose descriptor may be closed, swept by a clock hand: a
 * node used since the hand last passed gets another round, a pinned one is skipped, and the
 * others are closed until the ring is back under its budget. One mutex guards the ring and every
 * node's `fd`, `slot`, `used` and `pins` increments; a node's handle and mount id never change
 * once set (before its descriptor is first closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backends/local/local_cred.h"
#include "backends/local/local_node.h"

#define BUDGET_MIN 64

/* 24 bytes, from slabs (a malloc chunk would take 32): the daemon holds one per inode of a local
 * location that the kernel caches (DESIGN §10). */
struct local_node {
	int fd;	       /* O_PATH|O_NOFOLLOW, or -1 while closed */
	int slot;      /* its index in the ring while open and closable, else -1 */
	int mnt_id;    /* the object's mount, once fh is set */
	uint16_t pins; /* calls using fd: incremented under the lock, decremented atomically */
	uint8_t type;  /* S_IFMT >> 12 */
	uint8_t used;  /* used since the clock hand last passed */
	union {
		struct file_handle *fh;	 /* set before fd is first closed */
		struct local_node *next; /* free in its slab */
	};
};

#define SLAB_NODES 4096

G_STATIC_ASSERT(sizeof(struct local_node) <= 24);

static struct {
	GMutex lock;
	GPtrArray *ring;	 /* the nodes whose descriptor may be closed */
	guint hand;		 /* the clock hand: an index in ring */
	guint budget;		 /* descriptors the ring may hold */
	gint reopen;		 /* open_by_handle_at() works: descriptors may be closed */
	GHashTable *anchors;	 /* mount id -> a descriptor (O_RDONLY|O_DIRECTORY), never closed */
	struct local_node *free; /* free nodes, in slabs of SLAB_NODES that are never freed */
} cache;

/* A zeroed node; called with the lock held. Under AddressSanitizer each node is its own
 * allocation, so that a use after free is caught. */
static struct local_node *alloc_locked(void)
{
#ifdef __SANITIZE_ADDRESS__
	return g_new0(struct local_node, 1);
#else
	struct local_node *n = cache.free;

	if (!n) {
		struct local_node *slab = g_new(struct local_node, SLAB_NODES);

		for (int i = 0; i < SLAB_NODES - 1; i++)
			slab[i].next = &slab[i + 1];
		slab[SLAB_NODES - 1].next = NULL;
		n = slab;
	}
	cache.free = n->next;
	memset(n, 0, sizeof(*n));
	return n;
#endif
}

static void free_locked(struct local_node *n)
{
#ifdef __SANITIZE_ADDRESS__
	g_free(n);
#else
	n->next = cache.free;
	cache.free = n;
#endif
}

static void proc_path(char buf[32], int fd)
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* The anchor for mount `mnt_id`, made from the directory `dir_fd` (an O_PATH descriptor on it)
 * when there is none yet; -1 when none can be had. Called with the lock held. */
static int anchor_locked(int mnt_id, int dir_fd)
{
	gpointer known;
	char proc[32];
	int fd;

	if (g_hash_table_lookup_extended(cache.anchors, GINT_TO_POINTER(mnt_id), NULL, &known))
		return GPOINTER_TO_INT(known);
	if (dir_fd < 0)
		return -1;
	/* open_by_handle_at() refuses an O_PATH descriptor as its mount: a real one. */
	proc_path(proc, dir_fd);
	fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	g_hash_table_insert(cache.anchors, GINT_TO_POINTER(mnt_id), GINT_TO_POINTER(fd));
	return fd;
}

/* A handle for `fd`, and the mount it belongs to; NULL when the filesystem has none. */
static struct file_handle *handle_of(int fd, int *mnt_id)
{
	union {
		struct file_handle fh;
		char room[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} buf;

	buf.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &buf.fh, mnt_id, AT_EMPTY_PATH) < 0)
		return NULL;
	return g_memdup2(&buf, sizeof(buf.fh) + buf.fh.handle_bytes);
}

void local_nodes_init(int root_fd)
{
	static gsize done;
	static bool told; /* under the lock */
	struct file_handle *fh;
	struct rlimit rl;
	int mnt_id, anchor, fd;

	if (g_once_init_enter(&done)) {
		cache.anchors = g_hash_table_new(NULL, NULL);
		cache.ring = g_ptr_array_new();
		cache.budget = BUDGET_MIN;
		/* Three quarters of the limit; the rest for open files, sockets and the like. */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur / 4 * 3 > BUDGET_MIN)
			cache.budget = rl.rlim_cur / 4 * 3;
		g_once_init_leave(&done, 1);
	}
	fh = handle_of(root_fd, &mnt_id);
	if (!fh)
		return;
	g_mutex_lock(&cache.lock);
	anchor = anchor_locked(mnt_id, root_fd);
	if (anchor >= 0 && !g_atomic_int_get(&cache.reopen)) {
		fd = open_by_handle_at(anchor, fh, O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			g_atomic_int_set(&cache.reopen, 1);
		} else if (!told) {
			told = true;
			g_message("descriptors of local nodes are kept open (at most %u cached "
				  "otherwise): reopening by file handle fails: %s",
				  cache.budget, g_strerror(errno));
		}
	}
	g_mutex_unlock(&cache.lock);
	g_free(fh);
}

static void ring_add_locked(struct local_node *n)
{
	n->slot = cache.ring->len;
	g_ptr_array_add(cache.ring, n);
}

/* The last node takes n's place. */
static void ring_remove_locked(struct local_node *n)
{
	struct local_node *last = cache.ring->pdata[cache.ring->len - 1];

	g_ptr_array_remove_index_fast(cache.ring, n->slot);
	if (last != n)
		last->slot = n->slot;
	n->slot = -1;
}

/* Close the descriptors of up to `want` idle nodes. Called with the lock held. */
static guint evict_locked(guint want)
{
	guint closed = 0, scanned = 0, limit = 2 * cache.ring->len;

	while (closed < want && cache.ring->len && scanned++ < limit) {
		struct local_node *n;

		if (cache.hand >= cache.ring->len)
			cache.hand = 0;
		n = cache.ring->pdata[cache.hand];
		if (__atomic_load_n(&n->pins, __ATOMIC_RELAXED) || n->used) {
			n->used = 0;
			cache.hand++;
			continue;
		}
		if (!n->fh) {
			n->fh = handle_of(n->fd, &n->mnt_id);
			if (!n->fh) { /* no handles here: the descriptor stays */
				ring_remove_locked(n);
				continue;
			}
		}
		if (anchor_locked(n->mnt_id, S_ISDIR(n->type << 12) ? n->fd : -1) < 0) {
			/* A mount with no anchor yet: one is made from its first directory. */
			cache.hand++;
			continue;
		}
		ring_remove_locked(n); /* the hand now points at the node that took its place */
		close(n->fd);
		n->fd = -1;
		closed++;
	}
	return closed;
}

/* Past the budget: close a batch, so that the sweep is not paid at every new node. */
static void trim_locked(void)
{
	if (cache.ring->len > cache.budget)
		evict_locked(cache.ring->len - cache.budget + cache.budget / 16);
}

ff_node *local_node_new(int fd, mode_t type)
{
	struct local_node *n;

	g_mutex_lock(&cache.lock);
	n = alloc_locked();
	n->fd = fd;
	n->slot = -1;
	n->type = (type & S_IFMT) >> 12;
	if (g_atomic_int_get(&cache.reopen)) {
		ring_add_locked(n);
		trim_locked();
	}
	g_mutex_unlock(&cache.lock);
	return (ff_node *)n;
}

void local_node_free(ff_node *node)
{
	struct local_node *n = (struct local_node *)node;

	g_mutex_lock(&cache.lock);
	if (n->slot >= 0)
		ring_remove_locked(
			n); /* before its descriptor is closed: the hand may not meet it */
	if (n->fd >= 0)
		close(n->fd);
	g_free(n->fh);
	free_locked(n);
	g_mutex_unlock(&cache.lock);
}

mode_t local_node_type(const ff_node *node)
{
	return (mode_t)((const struct local_node *)node)->type << 12;
}

/* Reopen a node whose descriptor was closed, from `anchor`, as the daemon. */
static int reopen(struct local_node *n, int anchor)
{
	int rc = local_become(NULL);
	int fd;

	if (rc)
		return rc;
	fd = open_by_handle_at(anchor, n->fh, O_PATH | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && local_nodes_relieve())
		fd = open_by_handle_at(anchor, n->fh, O_PATH | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int local_node_pin(ff_node *node)
{
	struct local_node *n = (struct local_node *)node;
	int fd;

	g_mutex_lock(&cache.lock);
	if (n->fd < 0) {
		int anchor = anchor_locked(n->mnt_id, -1); /* there: n was closed with one */

		g_mutex_unlock(&cache.lock);
		fd = reopen(n, anchor);
		if (fd < 0)
			return fd;
		g_mutex_lock(&cache.lock);
		if (n->fd >= 0) { /* another call reopened it first */
			close(fd);
		} else {
			n->fd = fd;
			ring_add_locked(n);
		}
	}
	__atomic_add_fetch(&n->pins, 1, __ATOMIC_RELAXED);
	n->used = 1;
	fd = n->fd;
	trim_locked();
	g_mutex_unlock(&cache.lock);
	return fd;
}

void local_node_unpin(ff_node *node)
{
	__atomic_sub_fetch(&((struct local_node *)node)->pins, 1, __ATOMIC_RELEASE);
}

bool local_nodes_relieve(void)
{
	guint closed;

	g_mutex_lock(&cache.lock);
	closed = evict_locked(MAX(cache.ring->len / 2, 1));
	g_mutex_unlock(&cache.lock);
	if (closed)
		g_message("out of descriptors: closed %u cached ones", closed);
	return closed > 0;
}
