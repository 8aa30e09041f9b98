/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lock.h - POSIX record locks and flock() (DESIGN §6). Every lock is an open file description
 * (OFD) lock, which the kernel keeps for us: each lock owner of an inode (a process, as FUSE
 * names it) gets an open file description of its own, so owners exclude each other and one
 * owner's locks merge and split as POSIX says; flock() uses one description per open file.
 *
 * Those descriptions are of the object itself on a backend that can open it on this machine
 * (ops->lock_fd: a local location's file), so locks taken through the mount also exclude the
 * programs that lock the backing file directly. Elsewhere they are of an anonymous memory file
 * per inode (memfd), which makes a lock table shared by the processes of this machine.
 *
 * Where the location's server keeps locks (NFSv4: ff_mount.server_locks), a lock is taken there
 * too, after this machine's table allows it, so that it excludes other machines; a request the
 * server refuses waits in the queue and asks again, ever less often up to once a second.
 *
 * A blocking request does not hold a worker thread: it waits in a queue that one thread retries,
 * woken by every unlock made through the mount and every few milliseconds for the others; an
 * interrupted request (Ctrl-C, a killed process) leaves the queue with EINTR.
 */
#ifndef FEDFUSE_LOCK_H
#define FEDFUSE_LOCK_H

#define FUSE_USE_VERSION 314
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <glib.h>

#include "fedfuse/inode.h"
#include "fedfuse/mount.h"

struct ff_file;

struct ff_locks;

/* Starts the thread that retries waiting requests. */
struct ff_locks *ff_locks_new(void);
/* Stops that thread and answers every waiting request (EINTR): when the session loop has
 * ended, before the session goes away. */
void ff_locks_stop(struct ff_locks *locks);
/* Drops every lock. */
void ff_locks_free(struct ff_locks *locks);

/* F_GETLK, F_SETLK, F_SETLKW for `owner` on the open file `f` (its inode: of mount f->mnt,
 * NULL for namespace-only inodes). Each replies to `req`, setlk with sleep perhaps later. */
void ff_locks_getlk(struct ff_locks *locks, fuse_req_t req, struct ff_file *f, uint64_t owner,
		    struct flock *lock);
void ff_locks_setlk(struct ff_locks *locks, fuse_req_t req, struct ff_file *f, uint64_t owner,
		    const struct flock *lock, bool sleep);

/* flock(2) `op` (LOCK_SH, LOCK_EX, LOCK_UN, maybe | LOCK_NB) on the open file `f`, whose
 * flock descriptor is f->flock_fd (-1 until its first flock). */
void ff_locks_flock(struct ff_locks *locks, fuse_req_t req, struct ff_file *f, int op);

/* A descriptor of `f` was closed by `owner`: its record locks on the inode are gone. */
void ff_locks_owner_closed(struct ff_locks *locks, struct ff_file *f, uint64_t owner);
/* The open file's last close: its flock goes with its descriptor (on the server, with the
 * handle's release()). */
void ff_locks_file_closed(struct ff_locks *locks, struct ff_file *f);

#endif /* FEDFUSE_LOCK_H */
