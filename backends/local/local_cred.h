/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_cred.h - acting for the caller on local locations (DESIGN §6 Credentials).
 *
 * A daemon running as root switches the filesystem identity (fsuid, fsgid, supplementary
 * groups) of the calling *thread* to the FUSE caller's before it touches a location, so that
 * the kernel checks permissions as that user and new objects belong to them. The identity a
 * thread carries is cached per thread: consecutive operations by the same user cost no syscall.
 * A daemon not running as root never switches.
 *
 * Rules for the rest of the process: nothing may call glibc's set*id()/setgroups() once worker
 * threads run (glibc would broadcast the change to every thread behind this cache), and code
 * running on a worker thread must not assume the thread's filesystem identity is the daemon's.
 */
#ifndef FEDFUSE_LOCAL_CRED_H
#define FEDFUSE_LOCAL_CRED_H

#include "backends/backend.h"

/* Record the daemon's own identity and whether switching is needed (effective uid 0). Call
 * before any other function here; calling it again is harmless. */
void local_cred_init(void);

/* Make the calling thread act for `cred`: its uid, gid and supplementary groups, with no
 * capability beyond what it takes to switch again. A cred with uid 0, or NULL (the daemon
 * itself), restores root's full capabilities. Returns 0, or -errno when the thread could not be
 * switched; the operation must then fail with that errno without touching the filesystem. */
int local_become(const struct ff_cred *cred);

/* The mode to create an object with, for a caller with umask `mask`: the calling thread gets
 * the umask `mask`, which the filesystem applies unless the object inherits a default ACL of
 * its parent (POSIX.1e), and `mode` is returned as it is. The thread gets a private umask once
 * (unshare(CLONE_FS)); if it cannot, `mode` comes back masked (default ACLs then do not
 * override the umask; a warning is logged once). */
mode_t local_create_mode(mode_t mode, mode_t mask);

#endif /* FEDFUSE_LOCAL_CRED_H */
