/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file.c - open files, from open to the last release: close-to-open consistency, data in and
 * out through the gateway (or spliced from a backend's descriptor), locks handed to lock.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fedfuse/control.h"
#include "fedfuse/dir.h"
#include "fedfuse/file.h"
#include "fedfuse/gateway.h"
#include "fedfuse/hidden.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/log.h"
#include "fedfuse/memory.h"
#include "fedfuse/notify.h"
#include "fedfuse/uring.h"

/* ---- files -------------------------------------------------------------------------------- */

/* A file's modification and change times in one number: a change of either changes it (two
 * different pairs giving the same number is a 1 in 2^64 chance). The inode has no room for
 * both whole (inode.c keeps it within one allocation size). */
static uint64_t times_of(const struct stat *st)
{
	uint64_t m = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
	uint64_t c = (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;

	return m ^ ((c << 32) | (c >> 32)) ^ (c * 0x9e3779b97f4a7c15u);
}

/* Under the inode's lock; `open` is set once the file was opened. */
static bool same_version(struct ff_inode *inode, const struct stat *st)
{
	const struct ff_inode_open *o = inode->open;

	return o->cache_valid && o->cache_size == st->st_size && o->cache_times == times_of(st);
}

static void remember_version(struct ff_inode *inode, const struct stat *st)
{
	g_mutex_lock(&inode->lock);
	inode->open->cache_valid = true;
	inode->open->cache_size = st->st_size;
	inode->open->cache_times = times_of(st);
	g_mutex_unlock(&inode->lock);
}

static struct ff_file *file_new(struct ff_request *op, ff_fh *fh)
{
	struct ff_file *f = g_new0(struct ff_file, 1);

	f->mnt = op->t.mnt;
	f->inode = op->inode;
	f->fh = fh;
	f->fd = ff_gw_handle_fd(f->mnt, fh);
	f->flock_fd = -1;
	g_atomic_int_inc(&f->mnt->open_files);
	g_mutex_lock(&op->inode->lock);
	if (!op->inode->open)
		op->inode->open = g_new0(struct ff_inode_open, 1);
	op->inode->open->opencount++;
	g_mutex_unlock(&op->inode->lock);
	ff_handle_track(op->s, f, false);
	return f;
}

static void open_control(fuse_req_t req, struct ff_request *op, struct fuse_file_info *fi)
{
	struct ff_file *f = g_new0(struct ff_file, 1);

	f->inode = op->inode;
	f->fd = -1;
	f->flock_fd = -1;
	f->text = ff_control_read(op->s, op->inode->ino, &f->len);
	ff_handle_track(op->s, f, false);
	fi->fh = (uintptr_t)f;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

/*
 * Which opens bypass the kernel's page cache (FOPEN_DIRECT_IO): O_DIRECT ones, and those for
 * writing only of a file on a descriptor of the daemon's own (a local location). Such a file
 * cannot be mmapped and reads nothing back through its descriptor, so the page cache gains it
 * nothing, and costs a copy into fresh pages and, before every write(), a GETXATTR of
 * security.capability (the kernel's check for privileges to drop, which it does not remember
 * for a FUSE file; on the direct path the write itself drops them, made with the caller's
 * credentials). Readers on other descriptors see the data at once, as natively (the kernel
 * drops the written range from the page cache). Measured on tmpfs, alternated 5 times, medians:
 * 1 GiB with dd conv=fsync 0.92 -> 0.64 s, tar x of /usr/include 6.5 -> 5.1 s. Network
 * locations keep the cache: there a write() from a buffer that is not page-aligned would reach
 * the daemon in two pieces (a request holds 256 pages), and write-behind would send two WRITEs
 * for it.
 */
static bool open_direct(int flags, int fd)
{
	return (flags & O_DIRECT) || ((flags & O_ACCMODE) == O_WRONLY && fd >= 0);
}

void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int flags = fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY);
	bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct ff_file *f;
	struct stat st;
	struct ff_request op;
	ff_fh *fh;
	int rc;

	rc = ff_req_begin(req, ino, write, &op);
	if (rc == 0 && ff_control_is_control(ino)) {
		open_control(req, &op, fi);
		ff_req_end(&op);
		return;
	}
	if (rc == 0 && !op.t.mnt)
		rc = -EISDIR;
	if (rc == 0)
		rc = ff_gw_open(op.t.mnt, &op.h.cred, op.t.bnode, flags, &fh);
	if (rc < 0) {
		ff_reply_err(req, rc);
		ff_req_end(&op);
		return;
	}
	f = file_new(&op, fh);
	/* Close-to-open consistency: keep the kernel's cached pages only if the file has not
	 * changed since they were read (its size, modification and change times); when another
	 * client changed it, the kernel's cached attributes (its size) go too. */
	if (!(flags & O_TRUNC) && ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &st) == 0) {
		bool known;

		g_mutex_lock(&op.inode->lock);
		known = op.inode->open->cache_valid;
		fi->keep_cache = same_version(op.inode, &st);
		g_mutex_unlock(&op.inode->lock);
		remember_version(op.inode, &st);
		if (known && !fi->keep_cache)
			ff_notify_attrs_stale(op.inode);
	}
	/* O_TRUNC by a caller without CAP_FSETID clears setid bits, as a truncate does; the
	 * kernel may hold the old mode (ff_inode_note_mode). */
	if ((flags & O_TRUNC) && op.h.cred.uid != 0 &&
	    __atomic_load_n(&op.inode->setid, __ATOMIC_RELAXED)) {
		if (ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &st) == 0 &&
		    ff_req_drop_setid(&op, fh, &st) < 0)
			ff_log_once(LOG_WARNING, op.t.mnt->loc.spec.uri, 60,
				    "cannot clear setid bits after a truncating open on %s",
				    op.t.mnt->loc.spec.uri);
		ff_notify_after_write(op.inode);
	}
	if (open_direct(flags, f->fd))
		fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	if (fuse_reply_open(req, fi) == -ENOENT) /* the opener was interrupted */
		ff_file_release(op.s, f);
	ff_req_end(&op);
}

void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	ff_node *node = NULL;
	struct ff_file *f;
	struct stat st;
	struct ff_request op;
	ff_fh *fh;
	int rc;

	rc = ff_req_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_create(op.t.mnt, &op.h.cred, op.t.bnode, name, ff_create_mode(&op, mode),
				  fi->flags & ~O_NOCTTY, &node, &st, &fh);
	ff_absent_changed(op.s->absent); /* a name made, or one found there (EEXIST) */
	if (rc < 0) {
		ff_reply_err(req, rc);
		ff_req_end(&op);
		return;
	}
	ff_resolve_entry(op.s, op.t.mnt, node, &st, &e);
	op.inode = ff_itab_get(op.s->itab, e.ino);
	f = file_new(&op, fh);
	remember_version(op.inode, &st);
	if (open_direct(fi->flags, f->fd))
		fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	fuse_reply_create(req, &e, fi);
	ff_req_end(&op);
}

/*
 * A read from a descriptor of the daemon's own (a local location's file) is spliced to the
 * kernel only between these sizes; otherwise the backend reads it into the thread's buffer and
 * it is sent with writev(). Below, a splice's extra syscalls cost more than the copy it saves.
 * Above, libfuse cannot splice (its pipe, at most /proc/sys/fs/pipe-max-size, 1 MiB by
 * default, does not hold a 1 MiB reply and its header) and falls back to a fresh buffer for
 * every request.
 * Measured on tmpfs (dd iflag=direct): 4 KiB reads 58k -> 66k IOPS; 256 KiB 3.2 GB/s read,
 * 3.9 spliced; 1 MiB 3.2 read, 1.9 through libfuse's fallback.
 */
#define SPLICE_MIN (64 * 1024)
#define SPLICE_MAX (512 * 1024)

/* A per-thread buffer for backends that cannot splice, freed when the thread ends. */
struct io_buf {
	size_t cap;
	char data[];
};

static GPrivate io_buf_key = G_PRIVATE_INIT(g_free);

static char *io_buffer(size_t size)
{
	struct io_buf *b = g_private_get(&io_buf_key);

	if (!b || size > b->cap) {
		size_t cap = MAX(size, (size_t)FF_MAX_IO);

		b = g_malloc(sizeof(*b) + cap);
		b->cap = cap;
		g_private_replace(&io_buf_key, b);
	}
	return b->data;
}

/* Where to put a reply of `size` bytes: on an io_uring ring, the buffer it goes out of. */
static char *reply_buffer(size_t size)
{
	char *ring = ff_uring_buffer(size);

	return ring ? ring : io_buffer(size);
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	gint64 start = g_get_monotonic_time();
	const void *held;
	void *ref;
	struct stat st;
	ssize_t n;

	if (!f->mnt) { /* a control file */
		size_t from = MIN((size_t)off, f->len), len = MIN(size, f->len - from);
		char *buf = reply_buffer(len);

		/* From the thread's buffer: once the kernel has the reply, the reader may close the
		 * file and another thread free its text, while this one's writev returns. */
		memcpy(buf, f->text + from, len);
		fuse_reply_buf(req, buf, len);
		return;
	}
	if (ff_file_usable(f) < 0) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (f->fd >= 0 && size >= SPLICE_MIN && size <= SPLICE_MAX && !ff_uring_active()) {
		struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

		buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		buf.buf[0].fd = f->fd;
		buf.buf[0].pos = off;
		ff_mount_account(f->mnt, FF_OP_READ, 0, start);
		/* The splice's length is not returned: what the file holds from `off` on. */
		if (fstat(f->fd, &st) == 0 && st.st_size > off)
			ff_mount_account_bytes(f->mnt, FF_OP_READ,
					       MIN((off_t)size, st.st_size - off));
		fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	/* a local file is never held: read() below */
	n = f->fd >= 0 ? -EAGAIN : ff_gw_read_held(f->mnt, f->fh, size, off, &held, &ref);
	if (n >= 0) { /* read ahead by the backend: sent from where it is */
		struct ff_mount *m = f->mnt;
		ff_fh *fh = f->fh;

		/* Once the kernel has the reply, the reader may close the file and another thread
		 * free `f` (not the backend's handle: its release waits for read_done() or the
		 * held data outlives it) while this one's writev returns. */
		fuse_reply_buf(req, held, n);
		ff_gw_read_done(m, fh, ref);
		return;
	}
	if (n == -EAGAIN)
		n = ff_gw_read(f->mnt, f->fh, reply_buffer(size), size, off);
	if (n < 0)
		ff_reply_err(req, (int)n);
	else
		fuse_reply_buf(req, reply_buffer(size), n);
}

static void do_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	size_t size = fuse_buf_size(in);
	struct ff_cred_hold h;
	const void *data;
	ssize_t n;

	if (!f->mnt) {
		fuse_reply_err(req, EBADF);
		return;
	}
	f->wrote = true;
	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		data = (const char *)in->buf[0].mem + in->off;
	} else {
		struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);

		mem.buf[0].mem = io_buffer(size);
		n = fuse_buf_copy(&mem, in, 0);
		if (n < 0) {
			ff_reply_err(req, (int)n);
			return;
		}
		size = n;
		data = mem.buf[0].mem;
	}
	/* As the writer: whether setid bits survive depends on who writes (backend.h). */
	ff_cred_get(req, &h);
	n = ff_gw_write(f->mnt, &h.cred, f->fh, data, size, off);
	if (n > 0 && h.cred.uid != 0)
		ff_notify_after_write(f->inode);
	ff_cred_put(&h);
	if (n < 0)
		ff_reply_err(req, (int)n);
	else
		fuse_reply_write(req, n);
}

/*
 * The kernel sends RELEASE after close(2) has returned, asynchronously: `close(fd); unlink(f)`
 * can reach the daemon as FLUSH, UNLINK, RELEASE, and the unlink would find the file still
 * open (hidden.c renames it away rather than remove it). So an open file counts as "flushed"
 * from its FLUSH until it is used again, and an unlink that finds only flushed files open
 * gives their RELEASE a moment to arrive (ff_hide_if_open()).
 */
void ff_file_used(struct ff_file *f)
{
	if (__atomic_load_n(&f->flushed, __ATOMIC_RELAXED))
		__atomic_store_n(&f->flushed, false, __ATOMIC_RELAXED);
}

bool ff_files_closing(struct ff_state *s, struct ff_inode *inode)
{
	GHashTableIter it;
	gpointer handle, is_dir;
	bool closing = true;

	g_mutex_lock(&s->handles_lock);
	g_hash_table_iter_init(&it, s->handles);
	while (closing && g_hash_table_iter_next(&it, &handle, &is_dir)) {
		const struct ff_file *f = handle;

		if (!GPOINTER_TO_INT(is_dir) && f->inode == inode)
			closing = __atomic_load_n(&f->flushed, __ATOMIC_RELAXED);
	}
	g_mutex_unlock(&s->handles_lock);
	return closing;
}

void ff_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	int rc = 0;
	/* close(2): the closing process's record locks on the file are gone (POSIX) */
	ff_locks_owner_closed(ff_req_state(req)->locks, f, fi->lock_owner);

	if (f->mnt)
		rc = ff_gw_flush(f->mnt, f->fh);
	__atomic_store_n(&f->flushed, true, __ATOMIC_RELAXED);
	ff_reply_err(req, rc);
}

void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	int rc = 0;

	if (f->mnt)
		rc = ff_gw_fsync(f->mnt, f->fh, datasync);
	ff_reply_err(req, rc);
}

void ff_file_release(struct ff_state *s, struct ff_file *f)
{
	struct ff_cred_hold h;
	struct stat st;
	int rc;

	ff_handle_untrack(s, f);
	ff_locks_file_closed(s->locks, f);
	if (!f->mnt)
		goto out_free;
	ff_cred_self(&h);
	/* Our own writes changed mtime: remember the new version, so the next open keeps the
	 * pages this one wrote. */
	if (f->wrote && ff_gw_getattr(f->mnt, &h.cred, f->inode->bnode, f->fh, &st) == 0)
		remember_version(f->inode, &st);
	ff_cred_put(&h);
	rc = ff_gw_release(f->mnt, f->fh);
	if (rc < 0)
		ff_log_once(LOG_WARNING, f->mnt->loc.spec.uri, 60, "close on %s failed: %s",
			    f->mnt->loc.spec.uri, g_strerror(-rc));
	g_atomic_int_dec_and_test(&f->mnt->open_files);
	g_mutex_lock(&f->inode->lock);
	f->inode->open->opencount--;
	g_mutex_unlock(&f->inode->lock);
	ff_remove_hidden(s, f->inode);
	/* A written file may leave its backend's write buffers free in the heap (main.c's
	 * keep_big_buffers()): they go back to the system once the writing stops. */
	if (f->wrote)
		ff_memory_freed(1);
out_free:
	g_free(f->text);
	g_free(f);
}

void ff_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	ff_file_release(ff_req_state(req), ff_file_of(fi));
	fuse_reply_err(req, 0);
}

void ff_release_all(struct ff_state *s)
{
	GHashTableIter it;
	gpointer handle, is_dir;

	for (;;) {
		g_mutex_lock(&s->handles_lock);
		g_hash_table_iter_init(&it, s->handles);
		if (!g_hash_table_iter_next(&it, &handle, &is_dir)) {
			g_mutex_unlock(&s->handles_lock);
			return;
		}
		g_hash_table_iter_remove(&it);
		g_mutex_unlock(&s->handles_lock);
		if (is_dir)
			ff_dir_release(s, handle);
		else
			ff_file_release(s, handle);
	}
}

/* ---- locks (lock.h) ------------------------------------------------------------------------ */

void ff_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct ff_file *f = ff_file_of(fi);

	ff_locks_getlk(ff_req_state(req)->locks, req, f, fi->lock_owner, lock);
}

void ff_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
	      int sleep)
{
	struct ff_file *f = ff_file_of(fi);

	ff_locks_setlk(ff_req_state(req)->locks, req, f, fi->lock_owner, lock, sleep);
}

void ff_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct ff_file *f = ff_file_of(fi);

	ff_locks_flock(ff_req_state(req)->locks, req, f, op);
}

static void do_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	struct ff_cred_hold h;
	int rc = -EOPNOTSUPP;

	if (f->mnt && f->mnt->loc.spec.read_only) {
		rc = -EROFS;
	} else if (f->mnt) {
		ff_cred_get(req, &h);
		rc = ff_gw_fallocate(f->mnt, &h.cred, f->fh, mode, off, len);
		if (rc == 0 && h.cred.uid != 0)
			ff_notify_after_write(f->inode);
		ff_cred_put(&h);
	}
	ff_reply_err(req, rc);
}

static void do_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct ff_file *f = ff_file_of(fi);
	off_t res;

	if (!f->mnt) {
		fuse_reply_err(req, ENOSYS); /* the kernel then handles SEEK_DATA/HOLE itself */
		return;
	}
	res = ff_gw_lseek(f->mnt, f->fh, off, whence);
	if (res < 0)
		ff_reply_err(req, (int)res);
	else
		fuse_reply_lseek(req, res);
}

static void do_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct ff_file *in = ff_file_of(fi_in), *out = ff_file_of(fi_out);
	struct ff_cred_hold h;
	ssize_t n;

	if (!in->mnt || in->mnt != out->mnt) {
		fuse_reply_err(req, EXDEV); /* the kernel falls back to read and write */
		return;
	}
	out->wrote = true;
	ff_cred_get(req, &h);
	n = ff_gw_copy_file_range(in->mnt, &h.cred, in->fh, off_in, out->fh, off_out, len, flags);
	if (n > 0 && h.cred.uid != 0)
		ff_notify_after_write(out->inode);
	ff_cred_put(&h);
	if (n < 0)
		ff_reply_err(req, (int)n);
	else
		fuse_reply_write(req, n);
}

/* ---- interruptible: a wait for the server ends with EINTR when the caller is interrupted --- */

void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	ff_file_used(ff_file_of(fi));
	ff_intr_begin(req);
	do_read(req, ino, size, off, fi);
	ff_intr_end();
}

void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		  struct fuse_file_info *fi)
{
	ff_file_used(ff_file_of(fi));
	ff_intr_begin(req);
	do_write_buf(req, ino, in, off, fi);
	ff_intr_end();
}

void ff_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi)
{
	ff_intr_begin(req);
	do_fallocate(req, ino, mode, off, len, fi);
	ff_intr_end();
}

void ff_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	ff_intr_begin(req);
	do_lseek(req, ino, off, whence, fi);
	ff_intr_end();
}

void ff_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags)
{
	ff_intr_begin(req);
	do_copy_file_range(req, ino_in, off_in, fi_in, ino_out, off_out, fi_out, len, flags);
	ff_intr_end();
}
