/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_watch.c - fanotify for a local location (see local_watch.h).
 *
 * One group per location marks the location's whole filesystem (directory entry events need a
 * filesystem mark) and reports objects by file handle (FAN_REPORT_DFID_NAME | FAN_REPORT_FID).
 * A handle becomes the (st_dev, st_ino) the core keys its inodes on through open_by_handle_at()
 * and fstat(); those answers are kept in a bounded table, because a handle's object never
 * changes and a deleted object can no longer be opened. Objects the core does not hold cost
 * nothing further: it finds no inode and sends the kernel nothing.
 *
 * This needs CAP_SYS_ADMIN (a filesystem mark, an unlimited queue) and CAP_DAC_READ_SEARCH
 * (open_by_handle_at), i.e. a daemon run by root, and a filesystem on this machine whose file
 * handles can be opened: changes to a network or FUSE filesystem made elsewhere never reach
 * fanotify, so those are not watched.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "backends/local/local_watch.h"

#define IDS_MAX 16384	/* handles remembered; the table starts again when full */
#define EVENT_BUF 65536 /* bytes of events read at once */
#define PROC_FD_LEN 32

#ifndef FAN_REPORT_TARGET_FID
#define FAN_REPORT_TARGET_FID 0x00001000 /* Linux 5.17 */
#endif

/* A file handle as fanotify reports it, copied out of the event buffer (which does not align
 * it) with room for the longest. */
union handle_buf {
	struct file_handle fh;
	unsigned char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
};

struct obj_id {
	dev_t dev;
	ino_t ino;
};

struct local_watch {
	int fan_fd;
	int stop_fd;  /* an eventfd: written to stop the thread */
	int mount_fd; /* the location's root, opened for open_by_handle_at() (not O_PATH) */
	pid_t self;
	struct ff_notify notify;
	/* handle (struct file_handle + its bytes, g_malloc'd) -> struct obj_id; only the thread
	 * uses it */
	GHashTable *ids;
	GThread *thread;
	bool overflow_told; /* only the thread uses it */
};

static size_t handle_len(const struct file_handle *fh)
{
	return sizeof(*fh) + fh->handle_bytes;
}

static guint handle_hash(gconstpointer p)
{
	const unsigned char *b = p;
	size_t len = handle_len(p);
	guint h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static gboolean handle_equal(gconstpointer a, gconstpointer b)
{
	size_t len = handle_len(a);

	return len == handle_len(b) && memcmp(a, b, len) == 0;
}

/* Copy the handle at `p` (inside an event of `avail` bytes from p) into `out`; false when it
 * does not fit. */
static bool handle_copy(const unsigned char *p, size_t avail, union handle_buf *out)
{
	if (avail < sizeof(out->fh))
		return false;
	memcpy(&out->fh, p, sizeof(out->fh));
	if (out->fh.handle_bytes > MAX_HANDLE_SZ || avail < handle_len(&out->fh))
		return false;
	memcpy(out->bytes, p, handle_len(&out->fh));
	return true;
}

/* The identity of the object a handle names, if it can be known. */
static bool handle_id(struct local_watch *w, const union handle_buf *h, struct obj_id *id)
{
	const struct obj_id *known = g_hash_table_lookup(w->ids, h->bytes);
	struct stat st;
	int fd, rc;

	if (known) {
		*id = *known;
		return true;
	}
	fd = open_by_handle_at(w->mount_fd, (struct file_handle *)&h->fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return false; /* gone, and never seen: nothing can hold it */
	rc = fstat(fd, &st);
	close(fd);
	if (rc < 0)
		return false;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	if (g_hash_table_size(w->ids) >= IDS_MAX)
		g_hash_table_remove_all(w->ids);
	g_hash_table_insert(w->ids, g_memdup2(h->bytes, handle_len(&h->fh)),
			    g_memdup2(id, sizeof(*id)));
	return true;
}

/* A directory changed itself (its mode, owner or extended attributes: a junction may have
 * appeared or gone): the kernel's entry for it in its parent is stale too. */
static void report_dir_entry(struct local_watch *w, const union handle_buf *h)
{
	char proc[PROC_FD_LEN], path[PATH_MAX];
	const char *name;
	struct stat st;
	ssize_t n;
	int fd, pfd;

	fd = open_by_handle_at(w->mount_fd, (struct file_handle *)&h->fh,
			       O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, sizeof(path) - 1);
	pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (n <= 0 || pfd < 0)
		goto out;
	path[n] = '\0';
	name = strrchr(path, '/');
	if (!name || !name[1] || g_str_has_suffix(path, " (deleted)"))
		goto out;
	if (fstat(pfd, &st) == 0)
		w->notify.inval_entry(w->notify.data, st.st_dev, st.st_ino, name + 1);
out:
	if (pfd >= 0)
		close(pfd);
}

static void handle_event(struct local_watch *w, const struct fanotify_event_metadata *meta,
			 const unsigned char *ev)
{
	const uint64_t entry_events = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO;
	union handle_buf dir, obj;
	const char *name = NULL;
	bool have_dir = false, have_obj = false;
	struct obj_id did, oid;
	size_t off = meta->metadata_len;

	if (meta->pid == w->self)
		return; /* ours: the kernel saw it happen through the mount */
	while (off + sizeof(struct fanotify_event_info_header) <= meta->event_len) {
		struct fanotify_event_info_header hdr;
		size_t hoff = off + offsetof(struct fanotify_event_info_fid, handle);

		memcpy(&hdr, ev + off, sizeof(hdr));
		if (hdr.len < sizeof(hdr) || off + hdr.len > meta->event_len)
			break;
		if (hoff < off + hdr.len) {
			size_t avail = off + hdr.len - hoff;

			if (hdr.info_type == FAN_EVENT_INFO_TYPE_FID) {
				have_obj = handle_copy(ev + hoff, avail, &obj);
			} else if (hdr.info_type == FAN_EVENT_INFO_TYPE_DFID ||
				   hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
				have_dir = handle_copy(ev + hoff, avail, &dir);
				if (have_dir && hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
					size_t noff = hoff + handle_len(&dir.fh);

					/* the name is NUL-terminated within the record */
					if (noff < off + hdr.len &&
					    memchr(ev + noff, '\0', off + hdr.len - noff))
						name = (const char *)ev + noff;
				}
			}
		}
		off += hdr.len;
	}

	if (have_obj && handle_id(w, &obj, &oid))
		w->notify.inval_inode(w->notify.data, oid.dev, oid.ino);
	if (!have_dir || !handle_id(w, &dir, &did))
		return;
	if (name && strcmp(name, ".") != 0) {
		if (meta->mask & entry_events) {
			w->notify.inval_entry(w->notify.data, did.dev, did.ino, name);
			w->notify.inval_inode(w->notify.data, did.dev, did.ino);
		}
		return;
	}
	/* an event on the directory itself */
	if (!have_obj || oid.dev != did.dev || oid.ino != did.ino)
		w->notify.inval_inode(w->notify.data, did.dev, did.ino);
	if (meta->mask & FAN_ATTRIB)
		report_dir_entry(w, &dir);
}

void local_watch_read_loop(int fd, int stop_fd, size_t size,
			   void (*batch)(void *data, unsigned char *buf, size_t n), void *data)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = stop_fd, .events = POLLIN } };
	unsigned char *buf = g_malloc(size);

	for (;;) {
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		n = read(fd, buf, size);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			g_warning("reading change events: %s; changes are no longer watched",
				  g_strerror(errno));
			break;
		}
		batch(data, buf, (size_t)n);
	}
	g_free(buf);
}

static void fanotify_batch(void *data, unsigned char *buf, size_t n)
{
	struct local_watch *w = data;
	struct fanotify_event_metadata meta;

	for (size_t off = 0; off + sizeof(meta) <= n; off += meta.event_len) {
		memcpy(&meta, buf + off, sizeof(meta)); /* events are 4-byte aligned only */
		if (meta.vers != FANOTIFY_METADATA_VERSION || meta.event_len < sizeof(meta) ||
		    off + meta.event_len > n)
			break;
		if ((meta.mask & FAN_Q_OVERFLOW) && !w->overflow_told) {
			g_warning("change events were lost (queue overflow)");
			w->overflow_told = true;
		}
		handle_event(w, &meta, buf + off);
	}
}

static gpointer watch_thread(gpointer data)
{
	struct local_watch *w = data;

	local_watch_read_loop(w->fan_fd, w->stop_fd, EVENT_BUF, fanotify_batch, w);
	return NULL;
}

/* Filesystems on this machine whose changes all pass through this kernel's VFS, and whose file
 * handles open again. */
bool local_watch_fs_ok(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return false;
	switch ((unsigned long)sfs.f_type) {
	case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case F2FS_SUPER_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

static bool handles_work(int fd)
{
	union handle_buf h = { .fh.handle_bytes = MAX_HANDLE_SZ };
	int mount_id, ofd;

	if (name_to_handle_at(fd, "", &h.fh, &mount_id, AT_EMPTY_PATH) < 0)
		return false;
	ofd = open_by_handle_at(fd, &h.fh, O_PATH | O_CLOEXEC);
	if (ofd < 0)
		return false;
	close(ofd);
	return true;
}

static int group_new(void)
{
	unsigned int flags = FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE |
			     FAN_REPORT_DFID_NAME | FAN_REPORT_FID;
	int fd = fanotify_init(flags | FAN_REPORT_TARGET_FID, O_RDONLY | O_LARGEFILE | O_CLOEXEC);

	/* Without the target's handle on entry events (before Linux 5.17), a hard link removed
	 * elsewhere leaves its other names' link count stale until it times out. */
	if (fd < 0 && errno == EINVAL)
		fd = fanotify_init(flags, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	return fd;
}

struct local_watch *local_watch_start(int root_fd, const char *path, const struct ff_notify *notify,
				      const char **why)
{
	const uint64_t mask = FAN_MODIFY | FAN_ATTRIB | FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM |
			      FAN_MOVED_TO | FAN_ONDIR;
	struct local_watch *w;
	int fan_fd, stop_fd, mount_fd;

	if (geteuid() != 0) {
		*why = "the daemon does not run as root";
		return NULL;
	}
	if (!local_watch_fs_ok(root_fd)) {
		*why = "its filesystem is not one whose changes this machine sees";
		return NULL;
	}
	/* open_by_handle_at() wants a descriptor that is not O_PATH */
	mount_fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mount_fd < 0) {
		*why = "its root cannot be opened";
		return NULL;
	}
	if (!handles_work(mount_fd)) {
		*why = "its filesystem has no file handles";
		goto out_mount_fd;
	}
	fan_fd = group_new();
	if (fan_fd < 0) {
		*why = "fanotify is not available";
		goto out_mount_fd;
	}
	if (fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask, AT_FDCWD, path) < 0) {
		*why = "its filesystem cannot be marked for fanotify";
		goto out_fan_fd;
	}
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0) {
		*why = "no eventfd";
		goto out_fan_fd;
	}
	w = g_new0(struct local_watch, 1);
	w->fan_fd = fan_fd;
	w->stop_fd = stop_fd;
	w->mount_fd = mount_fd;
	w->self = getpid();
	w->notify = *notify;
	w->ids = g_hash_table_new_full(handle_hash, handle_equal, g_free, g_free);
	w->thread = g_thread_new("watch", watch_thread, w);
	return w;

out_fan_fd:
	close(fan_fd);
out_mount_fd:
	close(mount_fd);
	return NULL;
}

void local_watch_join(GThread *thread, int stop_fd)
{
	uint64_t one = 1;

	if (write(stop_fd, &one, sizeof(one)) != sizeof(one))
		g_warning("cannot stop the change watcher: %s", g_strerror(errno));
	g_thread_join(thread);
	close(stop_fd);
}

void local_watch_stop(struct local_watch *w)
{
	if (!w)
		return;
	local_watch_join(w->thread, w->stop_fd);
	close(w->fan_fd);
	close(w->mount_fd);
	g_hash_table_destroy(w->ids);
	g_free(w);
}
