/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xattr.c - extended attributes (xattr.h): junction values are the namespace's business, not
 * its users'; security labels are not carried; "no ACL" is ENODATA where a location has none.
 */
#include <errno.h>
#include <string.h>

#include "fedfuse/gateway.h"
#include "fedfuse/xattr.h"

#define LOCATION_XATTR "user.fedfuse.location"

/* Junction values are the namespace's business, not its users'. */
static bool xattr_hidden(const char *name)
{
	return g_str_has_prefix(name, "user.fedfuse.") ||
	       g_str_has_prefix(name, "trusted.junction.");
}

/*
 * Security labels (SELinux's, Smack's) are not carried, as the kernel's NFS and CIFS clients
 * carry none (without labeled NFS): a host that enforces such a policy labels a FUSE mount by
 * its own rules and answers for the label itself, without asking the daemon; elsewhere a
 * backend's label means nothing on this host. So getting or setting one is EOPNOTSUPP, and
 * listings leave them out. It also saves a request per file for `ls -l`, which asks for
 * security.selinux of every file until it is told the mount has no labels (coreutils then
 * remembers it for the device).
 */
static bool xattr_is_label(const char *name)
{
	return strcmp(name, "security.selinux") == 0 || g_str_has_prefix(name, "security.SMACK64");
}

/* The kernel reads these for its permission checks: "no ACL" is ENODATA, where any other error
 * would fail the check. */
static bool xattr_is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/*
 * -o noxattr: every call is answered ENOSYS, after which the kernel sends none of its kind again
 * (it answers EOPNOTSUPP itself). What that saves is a request per file for `ls -l` (coreutils
 * asks for system.posix_acl_access, which the kernel then keeps) and one per write (the kernel
 * asks for security.capability before each write, to know whether to drop it).
 */
static bool xattr_off(fuse_req_t req)
{
	if (!ff_req_state(req)->noxattr)
		return false;
	fuse_reply_err(req, ENOSYS);
	return true;
}

static int xattr_begin(fuse_req_t req, fuse_ino_t ino, bool write, struct ff_request *op)
{
	int rc = ff_req_begin(req, ino, write, op);

	if (rc == 0 && !op->t.mnt)
		rc = write ? -EROFS : -ENODATA;
	return rc;
}

void ff_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		 int flags)
{
	struct ff_request op;
	int rc;

	if (xattr_off(req))
		return;

	rc = xattr_begin(req, ino, true, &op);
	if (rc == 0 && xattr_hidden(name))
		rc = -EPERM;
	if (rc == 0 && xattr_is_label(name))
		rc = -EOPNOTSUPP;
	if (rc == 0)
		rc = ff_gw_setxattr(op.t.mnt, &op.h.cred, op.t.bnode, name, value, size, flags);
	if (rc == 0) /* a directory may have become a junction */
		ff_absent_changed(op.s->absent);
	ff_reply_err(req, rc);
	ff_req_end(&op);
}

/* Reply with a value of `len` bytes to a request for `size` bytes (0: the length). */
static void reply_xattr_value(fuse_req_t req, const char *value, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	g_autofree char *buf = size ? g_malloc(size) : NULL;
	struct ff_request op;
	ssize_t n = 0;
	int rc;

	if (xattr_off(req))
		return;
	if (xattr_is_label(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}

	rc = ff_req_begin(req, ino, false, &op);
	if (rc == 0 && strcmp(name, LOCATION_XATTR) == 0) {
		if (op.t.mnt)
			reply_xattr_value(req, op.t.mnt->loc.spec.uri,
					  strlen(op.t.mnt->loc.spec.uri), size);
		else
			fuse_reply_err(req, ENODATA);
		ff_req_end(&op);
		return;
	}
	if (rc == 0 && !op.t.mnt)
		rc = -ENODATA;
	if (rc == 0 && xattr_hidden(name))
		rc = -ENODATA;
	if (rc == 0) {
		n = ff_gw_getxattr(op.t.mnt, &op.h.cred, op.t.bnode, name, buf, size);
		rc = n < 0 ? (int)n : 0;
	}
	if (rc == -EOPNOTSUPP && xattr_is_acl(name))
		rc = -ENODATA; /* a location without ACLs: none */
	if (rc < 0)
		ff_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else
		fuse_reply_buf(req, buf, n);
	ff_req_end(&op);
}

/* The backend's attribute names without the hidden ones and the labels. */
static ssize_t list_visible(struct ff_request *op, char **out)
{
	ssize_t n, used = 0;
	char *list = NULL;

	for (int tries = 0; tries < 5; tries++) {
		n = ff_gw_listxattr(op->t.mnt, &op->h.cred, op->t.bnode, NULL, 0);
		if (n <= 0)
			break;
		list = g_realloc(list, n);
		n = ff_gw_listxattr(op->t.mnt, &op->h.cred, op->t.bnode, list, n);
		if (n != -ERANGE)
			break;
	}
	if (n < 0) {
		g_free(list);
		return n;
	}
	for (ssize_t i = 0; i < n; i += strlen(list + i) + 1) {
		size_t len = strlen(list + i) + 1;

		if (!xattr_hidden(list + i) && !xattr_is_label(list + i)) {
			memmove(list + used, list + i, len);
			used += len;
		}
	}
	*out = list;
	return used;
}

void ff_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	g_autofree char *list = NULL;
	struct ff_request op;
	ssize_t n = 0;
	int rc;

	if (xattr_off(req))
		return;

	rc = xattr_begin(req, ino, false, &op);
	if (rc == -ENODATA)
		rc = 0; /* nothing to list */
	else if (rc == 0)
		n = list_visible(&op, &list);
	if (rc == 0 && n == -EOPNOTSUPP) /* a location without xattrs */
		n = 0;
	if (rc == 0 && n < 0)
		rc = (int)n;
	if (rc < 0)
		ff_reply_err(req, rc);
	else
		reply_xattr_value(req, list, n, size);
	ff_req_end(&op);
}

void ff_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct ff_request op;
	int rc;

	if (xattr_off(req))
		return;

	rc = xattr_begin(req, ino, true, &op);
	if (rc == 0 && xattr_hidden(name))
		rc = -EPERM;
	if (rc == 0 && xattr_is_label(name))
		rc = -EOPNOTSUPP;
	if (rc == 0)
		rc = ff_gw_removexattr(op.t.mnt, &op.h.cred, op.t.bnode, name);
	if (rc == 0)
		ff_absent_changed(op.s->absent);
	ff_reply_err(req, rc);
	ff_req_end(&op);
}
