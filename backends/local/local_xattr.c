/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local_xattr.c - extended attributes of the file:// backend, through the node's /proc path.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/local/local.h"

/* Through /proc/self/fd/N the *xattr() calls reach the node (the l*xattr() ones would reach the
 * magic link). That cannot reach a symlink node's own attributes, so symlinks answer as Linux
 * does for user.* on a symlink: nothing there, and no setting it. */
static bool is_user_xattr(const char *name)
{
	return strncmp(name, "user.", 5) == 0;
}

int local_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		   const void *value, size_t size, int flags)
{
	char proc[PROC_FD_LEN];
	int fd, rc;

	if (node_type(node) == S_IFLNK)
		return is_user_xattr(name) ? -EPERM : -EOPNOTSUPP;
	rc = local_pin_by_proc(cred, node, &fd, proc);
	if (rc)
		return rc;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, false);
	rc = setxattr(proc, name, value, size, flags) < 0 ? -errno : 0;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, true);
	local_node_unpin(node);
	return rc;
}

ssize_t local_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		       void *buf, size_t size)
{
	char proc[PROC_FD_LEN];
	ssize_t len;
	int fd, rc;

	if (node_type(node) == S_IFLNK)
		return -ENODATA;
	rc = local_pin_by_proc(cred, node, &fd, proc);
	if (rc)
		return rc;
	len = getxattr(proc, name, buf, size);
	if (len < 0)
		len = -errno;
	local_node_unpin(node);
	return len;
}

ssize_t local_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			size_t size)
{
	char proc[PROC_FD_LEN];
	ssize_t len;
	int fd, rc;

	if (node_type(node) == S_IFLNK)
		return 0;
	rc = local_pin_by_proc(cred, node, &fd, proc);
	if (rc)
		return rc;
	len = listxattr(proc, buf, size);
	if (len < 0)
		len = -errno;
	local_node_unpin(node);
	return len;
}

int local_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name)
{
	char proc[PROC_FD_LEN];
	int fd, rc;

	if (node_type(node) == S_IFLNK)
		return is_user_xattr(name) ? -EPERM : -EOPNOTSUPP;
	rc = local_pin_by_proc(cred, node, &fd, proc);
	if (rc)
		return rc;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, false);
	rc = removexattr(proc, name) < 0 ? -errno : 0;
	local_inotify_expect_object(((struct local_loc *)loc)->inotify, fd, true);
	local_node_unpin(node);
	return rc;
}
