/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_errno.c - the one table from NFS status codes (NFSv3, NFSv4 and MOUNTv3) to errno.
 * libnfs 4.0 maps some statuses loosely (NFS3ERR_DQUOT -> ERANGE, NFS3ERR_NOTSUPP -> EINVAL)
 * and sends every NFSv4 status through its NFSv3 table, but it always names the status in its
 * error string; we read the name back and answer from this table instead.
 */
#include <errno.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "backends/nfs/nfs.h"

struct nfs_status {
	const char *name; /* as libnfs prints it, without the NFS3ERR_/NFS4ERR_ prefix */
	int v3;		  /* NFS3ERR_* value, or 0 when NFSv3 has none */
	int v4;		  /* NFS4ERR_* value, or 0 */
	int err;	  /* positive errno */
	bool lost_state;  /* NFSv4: the client's or an open's state is gone */
};

static const struct nfs_status nfs_statuses[] = {
	{ "PERM", NFS3ERR_PERM, NFS4ERR_PERM, EPERM },
	{ "NOENT", NFS3ERR_NOENT, NFS4ERR_NOENT, ENOENT },
	{ "IO", NFS3ERR_IO, NFS4ERR_IO, EIO },
	{ "NXIO", NFS3ERR_NXIO, NFS4ERR_NXIO, ENXIO },
	{ "ACCES", NFS3ERR_ACCES, 0, EACCES },
	{ "ACCESS", 0, NFS4ERR_ACCESS, EACCES },
	{ "EXIST", NFS3ERR_EXIST, NFS4ERR_EXIST, EEXIST },
	{ "XDEV", NFS3ERR_XDEV, NFS4ERR_XDEV, EXDEV },
	{ "NODEV", NFS3ERR_NODEV, 0, ENODEV },
	{ "NOTDIR", NFS3ERR_NOTDIR, NFS4ERR_NOTDIR, ENOTDIR },
	{ "ISDIR", NFS3ERR_ISDIR, NFS4ERR_ISDIR, EISDIR },
	{ "INVAL", NFS3ERR_INVAL, NFS4ERR_INVAL, EINVAL },
	{ "FBIG", NFS3ERR_FBIG, NFS4ERR_FBIG, EFBIG },
	{ "NOSPC", NFS3ERR_NOSPC, NFS4ERR_NOSPC, ENOSPC },
	{ "ROFS", NFS3ERR_ROFS, NFS4ERR_ROFS, EROFS },
	{ "MLINK", NFS3ERR_MLINK, NFS4ERR_MLINK, EMLINK },
	{ "NAMETOOLONG", NFS3ERR_NAMETOOLONG, NFS4ERR_NAMETOOLONG, ENAMETOOLONG },
	{ "NOTEMPTY", NFS3ERR_NOTEMPTY, NFS4ERR_NOTEMPTY, ENOTEMPTY },
	{ "DQUOT", NFS3ERR_DQUOT, NFS4ERR_DQUOT, EDQUOT },
	{ "STALE", NFS3ERR_STALE, NFS4ERR_STALE, ESTALE },
	{ "REMOTE", NFS3ERR_REMOTE, 0, EREMOTE },
	{ "BADHANDLE", NFS3ERR_BADHANDLE, NFS4ERR_BADHANDLE, ESTALE },
	{ "NOT_SYNC", NFS3ERR_NOT_SYNC, 0, EIO },
	{ "BAD_COOKIE", NFS3ERR_BAD_COOKIE, NFS4ERR_BAD_COOKIE, ESTALE },
	{ "NOTSUPP", NFS3ERR_NOTSUPP, NFS4ERR_NOTSUPP, EOPNOTSUPP },
	{ "TOOSMALL", NFS3ERR_TOOSMALL, NFS4ERR_TOOSMALL, EIO },
	{ "SERVERFAULT", NFS3ERR_SERVERFAULT, NFS4ERR_SERVERFAULT, EREMOTEIO },
	{ "BADTYPE", NFS3ERR_BADTYPE, NFS4ERR_BADTYPE, EOPNOTSUPP },
	{ "JUKEBOX", NFS3ERR_JUKEBOX, 0, EAGAIN },
	{ "DELAY", 0, NFS4ERR_DELAY, EAGAIN },
	{ "SAME", 0, NFS4ERR_SAME, EINVAL },
	{ "DENIED", 0, NFS4ERR_DENIED, EAGAIN },
	{ "EXPIRED", 0, NFS4ERR_EXPIRED, EIO, true },
	{ "LOCKED", 0, NFS4ERR_LOCKED, EAGAIN },
	{ "GRACE", 0, NFS4ERR_GRACE, EAGAIN },
	{ "FHEXPIRED", 0, NFS4ERR_FHEXPIRED, ESTALE },
	{ "SHARE_DENIED", 0, NFS4ERR_SHARE_DENIED, EACCES },
	{ "WRONGSEC", 0, NFS4ERR_WRONGSEC, EPERM },
	{ "CLID_INUSE", 0, NFS4ERR_CLID_INUSE, EACCES },
	{ "RESOURCE", 0, NFS4ERR_RESOURCE, EREMOTEIO },
	{ "MOVED", 0, NFS4ERR_MOVED, EREMOTE },
	{ "NOFILEHANDLE", 0, NFS4ERR_NOFILEHANDLE, EBADF },
	{ "MINOR_VERS_MISMATCH", 0, NFS4ERR_MINOR_VERS_MISMATCH, EPROTONOSUPPORT },
	{ "STALE_CLIENTID", 0, NFS4ERR_STALE_CLIENTID, EIO, true },
	{ "STALE_STATEID", 0, NFS4ERR_STALE_STATEID, EIO, true },
	{ "OLD_STATEID", 0, NFS4ERR_OLD_STATEID, EIO, true },
	{ "BAD_STATEID", 0, NFS4ERR_BAD_STATEID, EIO, true },
	{ "BAD_SEQID", 0, NFS4ERR_BAD_SEQID, EIO, true },
	{ "NOT_SAME", 0, NFS4ERR_NOT_SAME, EINVAL },
	{ "LOCK_RANGE", 0, NFS4ERR_LOCK_RANGE, EINVAL },
	{ "SYMLINK", 0, NFS4ERR_SYMLINK, ELOOP },
	{ "RESTOREFH", 0, NFS4ERR_RESTOREFH, EIO },
	{ "LEASE_MOVED", 0, NFS4ERR_LEASE_MOVED, EIO, true },
	{ "ATTRNOTSUPP", 0, NFS4ERR_ATTRNOTSUPP, EOPNOTSUPP },
	{ "NO_GRACE", 0, NFS4ERR_NO_GRACE, EIO },
	{ "RECLAIM_BAD", 0, NFS4ERR_RECLAIM_BAD, EIO },
	{ "RECLAIM_CONFLICT", 0, NFS4ERR_RECLAIM_CONFLICT, EIO },
	{ "BADZDR", 0, NFS4ERR_BADZDR, EPROTO },
	{ "LOCKS_HELD", 0, NFS4ERR_LOCKS_HELD, EBUSY },
	{ "OPENMODE", 0, NFS4ERR_OPENMODE, EBADF },
	{ "BADOWNER", 0, NFS4ERR_BADOWNER, EINVAL },
	{ "BADCHAR", 0, NFS4ERR_BADCHAR, EINVAL },
	{ "BADNAME", 0, NFS4ERR_BADNAME, EINVAL },
	{ "BAD_RANGE", 0, NFS4ERR_BAD_RANGE, EINVAL },
	{ "LOCK_NOTSUPP", 0, NFS4ERR_LOCK_NOTSUPP, EOPNOTSUPP },
	{ "OP_ILLEGAL", 0, NFS4ERR_OP_ILLEGAL, EOPNOTSUPP },
	{ "DEADLOCK", 0, NFS4ERR_DEADLOCK, EDEADLK },
	{ "FILE_OPEN", 0, NFS4ERR_FILE_OPEN, EBUSY },
	{ "ADMIN_REVOKED", 0, NFS4ERR_ADMIN_REVOKED, EIO, true },
	{ "CB_PATH_DOWN", 0, NFS4ERR_CB_PATH_DOWN, EIO },
};

/* MOUNTv3 statuses (nfs_mount() of an NFSv3 location). */
static const struct {
	const char *name;
	int err;
} mnt3_statuses[] = {
	{ "PERM", EPERM },
	{ "NOENT", ENOENT },
	{ "IO", EIO },
	{ "ACCES", EACCES },
	{ "NOTDIR", ENOTDIR },
	{ "INVAL", EINVAL },
	{ "NAMETOOLONG", ENAMETOOLONG },
	{ "NOTSUPP", EOPNOTSUPP },
	{ "SERVERFAULT", EREMOTEIO },
};

int nfs3_status_errno(int status)
{
	if (status == 0)
		return 0;
	for (size_t i = 0; i < G_N_ELEMENTS(nfs_statuses); i++)
		if (nfs_statuses[i].v3 == status)
			return -nfs_statuses[i].err;
	return -EIO;
}

int nfs4_status_errno(int status)
{
	if (status == 0)
		return 0;
	for (size_t i = 0; i < G_N_ELEMENTS(nfs_statuses); i++)
		if (nfs_statuses[i].v4 == status)
			return -nfs_statuses[i].err;
	return -EIO;
}

bool nfs4_status_lost_state(int status)
{
	for (size_t i = 0; i < G_N_ELEMENTS(nfs_statuses); i++)
		if (nfs_statuses[i].v4 == status)
			return nfs_statuses[i].lost_state;
	return false;
}

const char *nfs4_status_name(int status)
{
	for (size_t i = 0; i < G_N_ELEMENTS(nfs_statuses); i++)
		if (nfs_statuses[i].v4 == status)
			return nfs_statuses[i].name;
	return "SERVERFAULT";
}

static const char *last_of(const char *msg, const char *prefix)
{
	const char *p = NULL, *q = msg;

	while (q && (q = strstr(q, prefix)) != NULL)
		p = q++;
	return p;
}

/* Copy the status name after the last `prefix` in `msg` (e.g. "DQUOT" in "... NFS3ERR_DQUOT(-34)").
 * The last: libnfs puts the path first, and a file may be named "NFS3ERR_ROFS". */
static bool find_status(const char *msg, const char *prefix, char *name, size_t size)
{
	const char *p = last_of(msg, prefix);
	size_t n = 0;

	if (!p)
		return false;
	p += strlen(prefix);
	while (n + 1 < size && ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
		name[n++] = *p++;
	name[n] = '\0';
	return n > 0;
}

static const struct nfs_status *status_in(const char *msg, bool *v4)
{
	const char *p3 = last_of(msg, "NFS3ERR_"), *p4 = last_of(msg, "NFS4ERR_");
	char name[32];

	*v4 = p4 && (!p3 || p4 > p3);
	if (!find_status(msg, *v4 ? "NFS4ERR_" : "NFS3ERR_", name, sizeof(name)))
		return NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(nfs_statuses); i++) {
		int code = *v4 ? nfs_statuses[i].v4 : nfs_statuses[i].v3;

		if (code && strcmp(nfs_statuses[i].name, name) == 0)
			return &nfs_statuses[i];
	}
	return NULL;
}

static int map_error(struct nfs_context *nfs, int rc);

int nfs_map_error(struct nfs_context *nfs, int rc)
{
	int err = map_error(nfs, rc);

	if (rc < 0)
		g_debug("nfs: %d (%s) -> %s", rc, nfs ? nfs_get_error(nfs) : "", g_strerror(-err));
	return err;
}

static int map_error(struct nfs_context *nfs, int rc)
{
	const char *msg = nfs ? nfs_get_error(nfs) : NULL;
	const struct nfs_status *st;
	char name[32];
	bool v4;

	if (rc >= 0)
		return rc;
	st = status_in(msg, &v4);
	if (st)
		return -st->err;
	if (find_status(msg, "MNT3ERR_", name, sizeof(name))) {
		for (size_t i = 0; i < G_N_ELEMENTS(mnt3_statuses); i++)
			if (strcmp(mnt3_statuses[i].name, name) == 0)
				return -mnt3_statuses[i].err;
		return -EIO;
	}
	/* No protocol status: a transport failure, a timeout, or a call libnfs could not queue. */
	if (msg && (strstr(msg, "timed out") || strstr(msg, "Command was cancelled")))
		return -ETIMEDOUT;
	switch (rc) {
	case -EINTR:
		return -ETIMEDOUT;
	case -EFAULT: /* RPC_STATUS_ERROR: the connection failed under the call */
		return -ECONNRESET;
	case -EIO:
		if (msg && (strstr(msg, "nfs_service failed") || strstr(msg, "Socket") ||
			    strstr(msg, "socket") || strstr(msg, "reconnect") ||
			    strstr(msg, "Poll failed")))
			return -ECONNRESET;
		return -EIO;
	case -1: /* a sync wrapper whose async call could not be queued (no errno) */
		if (msg && strstr(msg, "Out of memory"))
			return -ENOMEM;
		if (msg && (strstr(msg, "connect") || strstr(msg, "Connect")))
			return -ECONNREFUSED;
		return -EIO;
	default:
		return rc;
	}
}

bool nfs_error_lost_state(struct nfs_context *nfs)
{
	const struct nfs_status *st;
	bool v4;

	st = status_in(nfs ? nfs_get_error(nfs) : NULL, &v4);
	return st && v4 && st->lost_state;
}
