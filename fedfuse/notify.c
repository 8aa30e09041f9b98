/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * notify.c - turning a backend's change reports into kernel cache invalidations.
 *
 * Reports come on the backends' own threads. Each finds the inode number the kernel knows the
 * object by (one table search; nothing when the kernel holds no inode for it) and tells the
 * kernel to drop its cached attributes and pages, or its entry for a name. A directory entry
 * report also makes the directory's cached listing stale (the kernel drops a directory's
 * cached readdir with its pages).
 */
#include <string.h>

#include "fedfuse/metrics.h"
#include "fedfuse/mount.h"
#include "fedfuse/notify.h"

static struct {
	GRWLock lock; /* readers deliver; the writer starts and stops */
	struct fuse_session *se;
	struct ff_itab *itab;
	struct ff_absent *absent; /* forgets its names at every report */
	gint64 sent;
} hub;

void ff_notify_start(struct fuse_session *se, struct ff_itab *itab, struct ff_absent *absent)
{
	g_rw_lock_writer_lock(&hub.lock);
	hub.se = se;
	hub.itab = itab;
	hub.absent = absent;
	g_rw_lock_writer_unlock(&hub.lock);
}

void ff_notify_stop(void)
{
	g_rw_lock_writer_lock(&hub.lock);
	hub.se = NULL;
	hub.itab = NULL;
	hub.absent = NULL;
	g_rw_lock_writer_unlock(&hub.lock);
}

/* The location's root changed: what the mount remembers of it is stale. */
static void forget_root(struct ff_mount *m, dev_t dev, ino_t ino)
{
	g_mutex_lock(&m->lock);
	if (m->root_known && m->root_st.st_dev == dev && m->root_st.st_ino == ino)
		m->root_known = false;
	g_mutex_unlock(&m->lock);
}

static void inval_inode(void *data, dev_t dev, ino_t ino)
{
	struct ff_mount *m = data;
	uint64_t number;

	forget_root(m, dev, ino);
	g_rw_lock_reader_lock(&hub.lock);
	if (hub.absent)
		ff_absent_changed(hub.absent);
	number = hub.se ? ff_itab_find_number(hub.itab, m, m->index, dev, ino) : 0;
	/* offset 0, length 0: the attributes and every cached page */
	if (number && fuse_lowlevel_notify_inval_inode(hub.se, number, 0, 0) == 0)
		__atomic_fetch_add(&hub.sent, 1, __ATOMIC_RELAXED);
	g_rw_lock_reader_unlock(&hub.lock);
}

static void inval_entry(void *data, dev_t dev, ino_t dir_ino, const char *name)
{
	struct ff_mount *m = data;
	uint64_t number;

	g_rw_lock_reader_lock(&hub.lock);
	if (hub.absent)
		ff_absent_changed(hub.absent);
	number = hub.se ? ff_itab_find_number(hub.itab, m, m->index, dev, dir_ino) : 0;
	if (number && fuse_lowlevel_notify_inval_entry(hub.se, number, name, strlen(name)) == 0)
		__atomic_fetch_add(&hub.sent, 1, __ATOMIC_RELAXED);
	g_rw_lock_reader_unlock(&hub.lock);
}

void ff_notify_attrs_stale(struct ff_inode *inode)
{
	/* Offset -1: attributes only, no page is touched (the caller may hold the inode's lock
	 * in the kernel). */
	g_rw_lock_reader_lock(&hub.lock);
	if (hub.se)
		fuse_lowlevel_notify_inval_inode(hub.se, inode->ino, -1, 0);
	g_rw_lock_reader_unlock(&hub.lock);
}

void ff_notify_after_write(struct ff_inode *inode)
{
	if (!__atomic_load_n(&inode->setid, __ATOMIC_RELAXED))
		return;
	/* The next attributes the kernel gets say whether the bits are still set. */
	__atomic_store_n(&inode->setid, false, __ATOMIC_RELAXED);
	ff_notify_attrs_stale(inode);
}

void ff_notify_init(struct ff_notify *n, struct ff_mount *m)
{
	n->data = m;
	n->inval_inode = inval_inode;
	n->inval_entry = inval_entry;
}

void ff_notify_describe(GString *out)
{
	g_string_append_printf(out, "notify invalidations=%" G_GINT64_FORMAT "\n",
			       __atomic_load_n(&hub.sent, __ATOMIC_RELAXED));
}

void ff_notify_describe_metrics(GString *out)
{
	ff_metrics_append_value(
		out, "fedfuse_kernel_invalidations_total", "counter",
		"Entries and inodes the kernel was told to forget, for changes made "
		"by others.",
		__atomic_load_n(&hub.sent, __ATOMIC_RELAXED));
}
