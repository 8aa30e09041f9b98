/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_cred.c - per-thread credential switching for the local backend (DESIGN §6).
 *
 * The raw setfsuid/setfsgid/setgroups/capset syscalls change only the calling thread, whereas
 * glibc's setgroups() changes every thread of the process. What a thread currently acts as is
 * cached in thread-local storage, so a run of operations by one user costs no syscall at all.
 */
#include <errno.h>
#include <glib.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/local/local_cred.h"

/* 32-bit ABIs have 16-bit legacy calls under the plain names; use the 32-bit-id ones there. */
#ifdef SYS_setfsuid32
#define LC_SYS_SETFSUID SYS_setfsuid32
#define LC_SYS_SETFSGID SYS_setfsgid32
#define LC_SYS_SETGROUPS SYS_setgroups32
#else
#define LC_SYS_SETFSUID SYS_setfsuid
#define LC_SYS_SETFSGID SYS_setfsgid
#define LC_SYS_SETGROUPS SYS_setgroups
#endif

/* Supplementary groups a thread caches without a heap allocation. */
#define LC_INLINE_GROUPS 32

/* The daemon's own identity, recorded once by local_cred_init() and read-only afterwards. */
static struct {
	bool switching; /* the daemon runs as root: act for each caller */
	bool have_caps; /* caps[] and user_caps[] are valid */
	gid_t gid;
	int ngroups;
	gid_t *groups;
	/* Root's capabilities, and what a thread keeps while acting for a user: nothing in effect
	 * but CAP_SETUID/CAP_SETGID, which it needs to switch again. Dropping the rest keeps the
	 * capabilities that setfsuid() leaves alone (CAP_SYS_ADMIN for trusted.* xattrs,
	 * CAP_SETFCAP for security.capability, CAP_SYS_RESOURCE for quotas and reserved blocks)
	 * out of a user's reach. */
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	struct __user_cap_data_struct user_caps[_LINUX_CAPABILITY_U32S_3];
} daemon_ident;

/* What the calling thread acts as. When `known` is false (a new thread, which inherits whatever
 * its creator carried, or a switch that failed half-way) the next switch sets every part. */
static __thread struct {
	bool known;
	bool privileged; /* root's capabilities in effect */
	uid_t uid;	 /* fsuid */
	gid_t gid;	 /* fsgid */
	int ngroups;
	gid_t *groups; /* inline_groups, or the heap buffer in thread_groups */
	gid_t inline_groups[LC_INLINE_GROUPS];
} cur;

/* A thread's heap buffer for long group lists, freed when the thread exits. */
static GPrivate thread_groups = G_PRIVATE_INIT(g_free);

void local_cred_init(void)
{
	static gsize done;
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	int n;

	if (!g_once_init_enter(&done))
		return;

	daemon_ident.switching = geteuid() == 0;
	if (daemon_ident.switching) {
		daemon_ident.gid = getegid();
		n = getgroups(0, NULL);
		if (n > 0) {
			daemon_ident.groups = g_new(gid_t, n);
			n = getgroups(n, daemon_ident.groups);
		}
		daemon_ident.ngroups = n > 0 ? n : 0;

		if (syscall(SYS_capget, &hdr, daemon_ident.caps) == 0) {
			memcpy(daemon_ident.user_caps, daemon_ident.caps,
			       sizeof(daemon_ident.caps));
			for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
				daemon_ident.user_caps[i].effective = 0;
			daemon_ident.user_caps[CAP_TO_INDEX(CAP_SETUID)].effective |=
				daemon_ident.caps[CAP_TO_INDEX(CAP_SETUID)].permitted &
				CAP_TO_MASK(CAP_SETUID);
			daemon_ident.user_caps[CAP_TO_INDEX(CAP_SETGID)].effective |=
				daemon_ident.caps[CAP_TO_INDEX(CAP_SETGID)].permitted &
				CAP_TO_MASK(CAP_SETGID);
			daemon_ident.have_caps = true;
		} else {
			/* Then users keep e.g. CAP_SYS_ADMIN: say so. */
			g_warning("capget: %s; capabilities not dropped", g_strerror(errno));
		}
	}
	g_once_init_leave(&done, 1);
}

static bool groups_equal(int n, const gid_t *groups)
{
	return n == cur.ngroups && (n == 0 || memcmp(groups, cur.groups, n * sizeof(*groups)) == 0);
}

static int set_groups(int n, const gid_t *groups)
{
	gid_t *buf;

	if (syscall(LC_SYS_SETGROUPS, (size_t)n, groups) != 0)
		return -errno;

	if (n <= LC_INLINE_GROUPS) {
		buf = cur.inline_groups;
	} else {
		buf = g_new(gid_t, n);
		g_private_replace(&thread_groups, buf); /* frees the previous one */
	}
	if (n > 0)
		memcpy(buf, groups, n * sizeof(*groups));
	cur.groups = buf;
	cur.ngroups = n;
	return 0;
}

static int set_caps(bool privileged)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

	if (!daemon_ident.have_caps)
		return 0;
	if (syscall(SYS_capset, &hdr, privileged ? daemon_ident.caps : daemon_ident.user_caps) != 0)
		return -errno;
	return 0;
}

/* Bring the thread to (uid, gid, groups). Steps already right are skipped unless the thread's
 * state is unknown. The cache is marked unknown until every step has succeeded. Switching needs
 * CAP_SETUID and CAP_SETGID, which a thread keeps in effect while acting for a user. */
static int switch_thread(uid_t uid, gid_t gid, int ngroups, const gid_t *groups)
{
	bool all = !cur.known;
	bool privileged = uid == 0;
	int rc;

	cur.known = false;

	if (all || !groups_equal(ngroups, groups)) {
		rc = set_groups(ngroups, groups);
		if (rc)
			return rc;
	}
	/* setfsuid/setfsgid report no error; asking with an invalid id (-1) returns the current
	 * value, which tells whether the switch happened (it fails e.g. for ids unmapped in a
	 * user namespace). */
	if (all || gid != cur.gid) {
		syscall(LC_SYS_SETFSGID, gid);
		if ((gid_t)syscall(LC_SYS_SETFSGID, (gid_t)-1) != gid)
			return -EPERM;
		cur.gid = gid;
	}
	if (all || uid != cur.uid) {
		syscall(LC_SYS_SETFSUID, uid);
		if ((uid_t)syscall(LC_SYS_SETFSUID, (uid_t)-1) != uid)
			return -EPERM;
		cur.uid = uid;
	}
	/* After setfsuid: leaving fsuid 0 drops the filesystem capabilities and returning to it
	 * raises them; capset() handles the others. */
	if (all || privileged != cur.privileged) {
		rc = set_caps(privileged);
		if (rc)
			return rc;
		cur.privileged = privileged;
	}

	cur.known = true;
	return 0;
}

int local_become(const struct ff_cred *cred)
{
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;

	if (!daemon_ident.switching)
		return 0;

	if (cred) {
		uid = cred->uid;
		gid = cred->gid;
		groups = cred->groups;
		ngroups = cred->groups && cred->ngroups > 0 ? cred->ngroups : 0;
	} else {
		uid = 0;
		gid = daemon_ident.gid;
		groups = daemon_ident.groups;
		ngroups = daemon_ident.ngroups;
	}

	if (cur.known && uid == cur.uid && gid == cur.gid && groups_equal(ngroups, groups))
		return 0;
	return switch_thread(uid, gid, ngroups, groups);
}

/* Give the calling thread the umask `mask`; false when it has no umask of its own. */
static bool thread_umask(mode_t mask)
{
	static __thread int private_umask; /* 0: not tried, 1: yes, -1: no */
	static __thread mode_t current;
	static gint warned;
	int err;

	if (private_umask == 0) {
		/* A thread with its own fs_struct has its own umask (virtiofsd does the same).
		 * Threads this one creates share its fs_struct, and unshare again when they first
		 * get here. */
		if (unshare(CLONE_FS) == 0) {
			private_umask = 1;
			umask(mask);
			current = mask;
		} else {
			err = errno;
			private_umask = -1;
			if (g_atomic_int_compare_and_exchange(&warned, 0, 1))
				g_warning("unshare(CLONE_FS): %s; default ACLs do not override "
					  "the umask",
					  g_strerror(err));
		}
	}
	if (private_umask < 0)
		return false;
	if (current != mask) {
		umask(mask);
		current = mask;
	}
	return true;
}

mode_t local_create_mode(mode_t mode, mode_t mask)
{
	return thread_umask(mask) ? mode : mode & ~mask;
}
