/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devio.c - the session's own reads and writes of /dev/fuse (fuse_session_custom_io()).
 *
 * libfuse before 3.17.1 sets FUSE_CAP_PARALLEL_DIROPS in what a filesystem wants, but never
 * puts FUSE_PARALLEL_DIROPS into its INIT reply (libfuse #861, fixed in 3.17.1), so the kernel
 * takes the lookups and readdirs of one directory one at a time: git's parallel lstat()s of a
 * work tree wait for each other, and so does every name of a directory while its server is
 * slow to answer one. The reads here note the kernel's INIT request; the write of its answer
 * adds the flag where the kernel offered it. Everything else passes through unchanged: read(),
 * writev() and splice() of the descriptor libfuse names.
 *
 * Likewise FUSE over io_uring (uring.c), which libfuse 3.14 does not know: where the kernel
 * offers it and the mount may use it, the rings are made when INIT is read, the INIT reply
 * asks for them, and replies to requests that came on a ring go back on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fedfuse/devio.h"
#include "fedfuse/log.h"
#include "fedfuse/uring.h"

/* FUSE_OVER_IO_URING (protocol 7.42): a bit of flags2, the second word of the INIT flags */
#define OVER_IO_URING_FLAGS2 (1u << 9)

/* The INIT request, as read: the session's first, answered before any other comes. */
static _Atomic bool init_answered;
static uint64_t init_unique;
static uint32_t kernel_flags, kernel_flags2;
static struct fuse_session *session;
static bool uring_allowed, uring_ready;

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	const struct fuse_init_in *arg = (const void *)(in + 1);

	(void)userdata;
	if (!atomic_load_explicit(&init_answered, memory_order_acquire) &&
	    n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags2)) &&
	    in->opcode == FUSE_INIT) {
		int rc;

		init_unique = in->unique;
		kernel_flags = arg->flags;
		kernel_flags2 = (arg->flags & FUSE_INIT_EXT) ? arg->flags2 : 0;
		if (uring_allowed && (kernel_flags2 & OVER_IO_URING_FLAGS2)) {
			rc = ff_uring_prepare(session, fd);
			uring_ready = rc == 0;
			if (rc < 0)
				ff_warn("requests come through /dev/fuse, not io_uring: %s",
					g_strerror(-rc));
		}
	}
	return n;
}

bool ff_devio_uring_coming(void)
{
	return uring_ready;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	ssize_t n;

	(void)userdata;
	if (ff_uring_answer(iov, count, &n))
		return n;
	if (!atomic_load_explicit(&init_answered, memory_order_acquire) && count >= 2 &&
	    iov[0].iov_len >= sizeof(struct fuse_out_header)) {
		const struct fuse_out_header *out = iov[0].iov_base;

		if (out->unique == init_unique) {
			struct fuse_init_out *arg = iov[1].iov_base;

			if (out->error == 0 &&
			    iov[1].iov_len >= offsetof(struct fuse_init_out, max_background) &&
			    (kernel_flags & FUSE_PARALLEL_DIROPS))
				arg->flags |= FUSE_PARALLEL_DIROPS;
			if (uring_ready && (out->error != 0 || iov[1].iov_len < sizeof(*arg))) {
				ff_uring_start(false);
				uring_ready = false;
			}
			if (uring_ready) {
				arg->flags |= FUSE_INIT_EXT;
				arg->flags2 |= OVER_IO_URING_FLAGS2;
			}
			atomic_store_explicit(&init_answered, true, memory_order_release);
			n = writev(fd, iov, count);
			if (uring_ready) /* the kernel takes entries once it has the reply */
				ff_uring_start(n > 0);
			return n;
		}
	}
	return writev(fd, iov, count);
}

static ssize_t dev_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			  unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int ff_devio_install(struct fuse_session *se, bool uring)
{
	static const struct fuse_custom_io io = {
		.read = dev_read,
		.writev = dev_writev,
		/* Both given, or libfuse would not splice replies (nor requests) at all. */
		.splice_receive = dev_splice,
		.splice_send = dev_splice,
	};

	session = se;
	uring_allowed = uring;
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
