/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_errno.c - errors of the SMB backend in one place. libsmbclient never hands NT_STATUS codes
 * to its callers: it maps them to errno itself (Samba's libcli/util/errmap_unix.c, EINVAL for
 * every status it does not list). So this is a table from libsmbclient's errno to ours, for
 * the few values that would mislead a POSIX program; op-specific fix-ups live with the
 * operations (smb_node.c, smb_file.c, smb_xattr.c).
 */
#include <errno.h>

#include "backends/smb/smb.h"

static const struct {
	int from;
	int to;
} smb_errno_map[] = {
	/* NT_STATUS_NOT_SUPPORTED, NT_STATUS_NOT_IMPLEMENTED: the server lacks it. */
	{ ENOSYS, EOPNOTSUPP },
	/* The connection is gone (cli_errno() says EPIPE for "not connected";
	 * NT_STATUS_CONNECTION_DISCONNECTED, _RESET, NT_STATUS_REMOTE_DISCONNECT). */
	{ EPIPE, ECONNRESET },
	{ ECONNABORTED, ECONNRESET },
	{ ENETRESET, ECONNRESET },
	{ ESHUTDOWN, ECONNRESET },
	{ ENOTCONN, ECONNRESET },
	/* NT_STATUS_INVALID_HANDLE: the server forgot our handle (reconnect, durable handle
	 * lost). Not a bug of the caller's descriptor. */
	{ EBADF, EIO },
};

int smb_err(int err)
{
	if (err <= 0)
		return -EIO; /* failed without saying why */
	for (size_t i = 0; i < G_N_ELEMENTS(smb_errno_map); i++) {
		if (smb_errno_map[i].from == err)
			return -smb_errno_map[i].to;
	}
	return -err;
}

bool smb_err_is_disconnect(int neg_errno)
{
	return neg_errno == -ECONNRESET;
}
