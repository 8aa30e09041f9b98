/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_lock.c - unit tests of the lock table without a mount: record locks between owners
 * (conflicts, F_GETLK naming the holder, merging and splitting), a waiting request answered
 * when the lock it waits for goes, an interrupted one answered EINTR, flock() between open
 * files, and what closing a descriptor or the last close drops.
 *
 * The table answers FUSE requests; here a request is a struct of the test, and the few libfuse
 * functions the table calls are defined below, recording each answer (they take precedence over
 * libfuse's own, which the test is linked with for the rest of the daemon library).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/file.h>

#include "fedfuse/file.h"
#include "fedfuse/lock.h"

struct fuse_req {
	GMutex lock;
	GCond cond;
	bool answered;
	int err;	 /* 0 or an errno */
	bool has_lock;	 /* answered with fuse_reply_lock */
	struct flock fl; /* then this */
	pid_t pid;
	fuse_interrupt_func_t intr;
	void *intr_data;
};

static struct fuse_ctx test_ctx;

static void answer(fuse_req_t req, int err, const struct flock *fl)
{
	g_mutex_lock(&req->lock);
	g_assert_false(req->answered); /* one answer per request */
	req->answered = true;
	req->err = err;
	if (fl) {
		req->has_lock = true;
		req->fl = *fl;
	}
	g_cond_broadcast(&req->cond);
	g_mutex_unlock(&req->lock);
}

int fuse_reply_err(fuse_req_t req, int err)
{
	answer(req, err, NULL);
	return 0;
}

int fuse_reply_lock(fuse_req_t req, const struct flock *lock)
{
	answer(req, 0, lock);
	return 0;
}

const struct fuse_ctx *fuse_req_ctx(fuse_req_t req)
{
	test_ctx.pid = req->pid;
	return &test_ctx;
}

void fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func, void *data)
{
	g_mutex_lock(&req->lock);
	req->intr = func;
	req->intr_data = data;
	g_mutex_unlock(&req->lock);
}

static fuse_req_t req_new(pid_t pid)
{
	fuse_req_t req = g_new0(struct fuse_req, 1);

	g_mutex_init(&req->lock);
	g_cond_init(&req->cond);
	req->pid = pid;
	return req;
}

/* The answer's errno, waiting up to 5 s for one (a request that waits is answered later). */
static int req_wait(fuse_req_t req)
{
	gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	int err;

	g_mutex_lock(&req->lock);
	while (!req->answered)
		if (!g_cond_wait_until(&req->cond, &req->lock, deadline))
			g_error("no answer within 5 s");
	err = req->err;
	g_mutex_unlock(&req->lock);
	return err;
}

static bool req_answered(fuse_req_t req)
{
	bool answered;

	g_mutex_lock(&req->lock);
	answered = req->answered;
	g_mutex_unlock(&req->lock);
	return answered;
}

static void req_free(fuse_req_t req)
{
	g_mutex_clear(&req->lock);
	g_cond_clear(&req->cond);
	g_free(req);
}

static struct flock range(short type, off_t start, off_t len)
{
	return (struct flock){
		.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len
	};
}

/* An open file of `inode` on no location (the table keeps its locks alone). */
static struct ff_file open_file(struct ff_inode *inode)
{
	return (struct ff_file){ .inode = inode, .fd = -1, .flock_fd = -1 };
}

/* setlk by `owner`; the errno of the answer (waiting for it). */
static int setlk(struct ff_locks *l, struct ff_inode *inode, uint64_t owner, struct flock fl)
{
	struct ff_file file = open_file(inode);
	fuse_req_t req = req_new((pid_t)owner);
	int err;

	ff_locks_setlk(l, req, &file, owner, &fl, false);
	err = req_wait(req);
	req_free(req);
	return err;
}

/* getlk by `owner` for `fl`: what it answers (l_type F_UNLCK when nothing conflicts). */
static struct flock getlk(struct ff_locks *l, struct ff_inode *inode, uint64_t owner,
			  struct flock fl)
{
	struct ff_file file = open_file(inode);
	fuse_req_t req = req_new((pid_t)owner);

	ff_locks_getlk(l, req, &file, owner, &fl);
	g_assert_cmpint(req_wait(req), ==, 0);
	g_assert_true(req->has_lock);
	fl = req->fl;
	req_free(req);
	return fl;
}

static struct ff_inode *file_inode(struct ff_itab *itab, ino_t ino)
{
	bool created;

	return ff_itab_intern(itab, NULL, 1, 1, ino, NULL, S_IFREG, false, &created);
}

static void test_record_locks(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *f = file_inode(itab, 10), *other = file_inode(itab, 11);
	struct ff_locks *l = ff_locks_new();
	struct ff_file closed;
	struct flock got;

	/* owner 1 write-locks [0, 100); owner 2 conflicts there, not beyond, nor on another file */
	g_assert_cmpint(setlk(l, f, 1, range(F_WRLCK, 0, 100)), ==, 0);
	g_assert_cmpint(setlk(l, f, 2, range(F_RDLCK, 50, 10)), ==, EAGAIN);
	g_assert_cmpint(setlk(l, f, 2, range(F_WRLCK, 100, 10)), ==, 0);
	g_assert_cmpint(setlk(l, other, 2, range(F_WRLCK, 0, 100)), ==, 0);
	/* F_GETLK names the holder: its range, type and process */
	got = getlk(l, f, 2, range(F_WRLCK, 10, 1));
	g_assert_cmpint(got.l_type, ==, F_WRLCK);
	g_assert_cmpint(got.l_start, ==, 0);
	g_assert_cmpint(got.l_len, ==, 100);
	g_assert_cmpint(got.l_pid, ==, 1);
	/* an owner's own locks never conflict with it: they merge and split */
	got = getlk(l, f, 1, range(F_WRLCK, 10, 1));
	g_assert_cmpint(got.l_type, ==, F_UNLCK);
	g_assert_cmpint(setlk(l, f, 1, range(F_UNLCK, 40, 20)), ==, 0); /* a hole in the middle */
	g_assert_cmpint(setlk(l, f, 2, range(F_WRLCK, 45, 10)), ==, 0);
	g_assert_cmpint(setlk(l, f, 2, range(F_WRLCK, 30, 5)), ==, EAGAIN);
	g_assert_cmpint(setlk(l, f, 2, range(F_WRLCK, 70, 5)), ==, EAGAIN);
	/* closing a descriptor drops all of the owner's record locks on the file */
	closed = open_file(f);
	ff_locks_owner_closed(l, &closed, 1);
	g_assert_cmpint(setlk(l, f, 2, range(F_WRLCK, 0, 40)), ==, 0);
	got = getlk(l, f, 3, range(F_RDLCK, 0, 0));
	g_assert_cmpint(got.l_type, ==, F_WRLCK);
	g_assert_cmpint(got.l_pid, ==, 2);
	ff_locks_free(l);
	ff_itab_free(itab);
}

static void test_waiting(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *f = file_inode(itab, 20);
	struct ff_locks *l = ff_locks_new();
	struct flock fl = range(F_WRLCK, 0, 0);
	struct ff_file file = open_file(f);
	fuse_req_t waiter = req_new(2), interrupted = req_new(3);

	g_assert_cmpint(setlk(l, f, 1, range(F_WRLCK, 0, 0)), ==, 0);
	/* F_SETLKW: no answer while the lock is held, and no worker thread held either */
	ff_locks_setlk(l, waiter, &file, 2, &fl, true);
	ff_locks_setlk(l, interrupted, &file, 3, &fl, true);
	g_usleep(100000);
	g_assert_false(req_answered(waiter));
	g_assert_false(req_answered(interrupted));
	/* an interrupt (Ctrl-C) answers EINTR */
	g_assert_nonnull(interrupted->intr);
	interrupted->intr(interrupted, interrupted->intr_data);
	g_assert_cmpint(req_wait(interrupted), ==, EINTR);
	g_assert_false(req_answered(waiter));
	/* the unlock answers the waiter, which then holds the lock */
	g_assert_cmpint(setlk(l, f, 1, range(F_UNLCK, 0, 0)), ==, 0);
	g_assert_cmpint(req_wait(waiter), ==, 0);
	g_assert_cmpint(setlk(l, f, 1, range(F_RDLCK, 0, 1)), ==, EAGAIN);
	req_free(waiter);
	req_free(interrupted);
	ff_locks_free(l);
	ff_itab_free(itab);
}

static int do_flock(struct ff_locks *l, struct ff_file *file, int op)
{
	fuse_req_t req = req_new(1);
	int err;

	ff_locks_flock(l, req, file, op);
	err = req_wait(req);
	req_free(req);
	return err;
}

static void test_flock(void)
{
	struct ff_itab *itab = ff_itab_new(NULL, NULL);
	struct ff_inode *f = file_inode(itab, 30);
	struct ff_locks *l = ff_locks_new();
	struct ff_file a = open_file(f), b = open_file(f);

	/* two open files of one inode: shared together, exclusive alone */
	g_assert_cmpint(do_flock(l, &a, LOCK_SH), ==, 0);
	g_assert_cmpint(do_flock(l, &b, LOCK_SH | LOCK_NB), ==, 0);
	g_assert_cmpint(do_flock(l, &b, LOCK_EX | LOCK_NB), ==, EWOULDBLOCK);
	g_assert_cmpint(do_flock(l, &a, LOCK_UN), ==, 0);
	g_assert_cmpint(do_flock(l, &b, LOCK_EX | LOCK_NB), ==, 0);
	g_assert_cmpint(do_flock(l, &a, LOCK_SH | LOCK_NB), ==, EWOULDBLOCK);
	/* the last close of b's file drops its flock */
	ff_locks_file_closed(l, &b);
	g_assert_cmpint(b.flock_fd, ==, -1);
	g_assert_cmpint(do_flock(l, &a, LOCK_EX | LOCK_NB), ==, 0);
	ff_locks_file_closed(l, &a);
	/* flock and record locks are separate (as on Linux) */
	g_assert_cmpint(do_flock(l, &a, LOCK_EX | LOCK_NB), ==, 0);
	g_assert_cmpint(setlk(l, f, 7, range(F_WRLCK, 0, 0)), ==, 0);
	ff_locks_file_closed(l, &a);
	ff_locks_free(l);
	ff_itab_free(itab);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/lock/record-locks", test_record_locks);
	g_test_add_func("/lock/waiting", test_waiting);
	g_test_add_func("/lock/flock", test_flock);
	return g_test_run();
}
