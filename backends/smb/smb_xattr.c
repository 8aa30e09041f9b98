/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_xattr.c - extended attributes of the SMB backend: libsmbclient's read-only
 * pseudo-attributes system.nt_sec_desc.* and system.dos_attr.*, nothing else.
 */
#include <errno.h>
#include <string.h>

#include "backends/smb/smb.h"

#define SMB_XATTR_MAX (1 << 20)

/* ---- extended attributes -------------------------------------------------------------------- */

/*
 * libsmbclient exposes no SMB extended attributes (the EAs Samba keeps as user.*): its xattr
 * calls know only the pseudo-attributes system.nt_sec_desc.* (the NT security descriptor, e.g.
 * "system.nt_sec_desc.*+" for all of it with names) and system.dos_attr.* (DOS attributes,
 * times, inode), and answer EINVAL to any other name. So: those two families are readable,
 * read-only (EPERM), and not listed (like cifs's system.cifs_acl), so that cp -a, rsync -X
 * and tar --xattrs do not try to copy them; every other name is EOPNOTSUPP.
 */
static bool smb_xattr_known(const char *name)
{
	static const char nt[] = "system.nt_sec_desc.", dos[] = "system.dos_attr.";

	return g_str_has_prefix(name, nt) || g_str_has_prefix(name, dos);
}

struct smb_xattr_arg {
	const char *url;
	const char *name;
	char *buf;
	size_t cap;
};

static int smb_getxattr_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_xattr_arg *a = arg;
	const struct smb_ident *id = conn->pool->id;
	g_autofree char *msg = NULL;
	bool window;
	int err, rc;

	memset(a->buf, 0, a->cap);
	/* Security descriptors come through a second connection (IPC$), made at the first such
	 * call: with sec=krb5 its logon needs the caller's tickets (smb_krb5.c). Without them a
	 * connection made before still serves. */
	window = id->krb5 && smb_krb5_begin(id, &msg) == 0;
	rc = smbc_getFunctionGetxattr(conn->ctx)(conn->ctx, a->url, a->name, a->buf, a->cap);
	err = errno;
	if (window)
		smb_krb5_end();
	if (rc == 0)
		return 0;
	if (err == EINVAL || err == ENODATA)
		return -ENODATA; /* a name of the family that does not exist */
	return smb_err(err);
}

ssize_t smb_getxattr(void *loc_, const struct ff_cred *cred, ff_node *node, const char *name,
		     void *buf, size_t size)
{
	struct smb_loc *loc = loc_;
	struct smb_xattr_arg a = { .name = name };
	ssize_t rc;
	size_t len = 0;

	if (!smb_xattr_known(name))
		return -EOPNOTSUPP;
	a.url = smb_url(loc, smb_pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	/* libsmbclient 4.17 returns 0, not the length, and truncates silently: the value is
	 * text, so grow the buffer until it has room to spare. */
	for (a.cap = 4096;; a.cap *= 2) {
		a.buf = g_malloc(a.cap);
		rc = smb_run(loc, cred, false, smb_getxattr_fn, &a);
		if (rc == -ERANGE && a.cap < SMB_XATTR_MAX) {
			g_free(a.buf);
			continue;
		}
		if (rc)
			goto out;
		len = strnlen(a.buf, a.cap);
		if (len + 1 < a.cap || a.cap >= SMB_XATTR_MAX)
			break;
		g_free(a.buf);
	}
	if (len + 1 >= a.cap) {
		rc = -E2BIG;
	} else if (size == 0) {
		rc = (ssize_t)len;
	} else if (size < len) {
		rc = -ERANGE;
	} else {
		memcpy(buf, a.buf, len);
		rc = (ssize_t)len;
	}
out:
	g_free(a.buf);
	g_free((char *)a.url);
	return rc;
}

ssize_t smb_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf, size_t size)
{
	return 0;
}

int smb_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		 const void *value, size_t size, int flags)
{
	return smb_xattr_known(name) ? -EPERM : -EOPNOTSUPP;
}

int smb_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name)
{
	return smb_xattr_known(name) ? -EPERM : -EOPNOTSUPP;
}
