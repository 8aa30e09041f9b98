/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_v4_attr.c - NFSv4 attributes (fattr4) in XDR, both ways: the values of a GETATTR or
 * READDIR reply read into a struct stat, and the values a SETATTR or CREATE carries written.
 * The COMPOUNDs that use them: nfs_v4.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "backends/nfs/nfs_v4.h"

/* ---- reading ------------------------------------------------------------------------------- */

struct xdr_in {
	const unsigned char *p, *end;
};

static int get_u32(struct xdr_in *x, uint32_t *v)
{
	if (x->end - x->p < 4)
		return -EPROTO;
	*v = (uint32_t)x->p[0] << 24 | (uint32_t)x->p[1] << 16 | (uint32_t)x->p[2] << 8 | x->p[3];
	x->p += 4;
	return 0;
}

static int get_u64(struct xdr_in *x, uint64_t *v)
{
	uint32_t hi, lo;

	if (get_u32(x, &hi) || get_u32(x, &lo))
		return -EPROTO;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* An owner or group: a number with Only_Numeric_Owners; anything else becomes nobody. */
static int get_owner(struct xdr_in *x, uint32_t *id)
{
	uint32_t len, padded;
	char buf[16];

	if (get_u32(x, &len))
		return -EPROTO;
	padded = (len + 3) & ~3u;
	if (len > 1024 || (size_t)(x->end - x->p) < padded)
		return -EPROTO;
	*id = 65534;
	if (len > 0 && len < sizeof(buf)) {
		char *end;
		unsigned long v;

		memcpy(buf, x->p, len);
		buf[len] = '\0';
		v = strtoul(buf, &end, 10);
		if (*end == '\0' && buf[0] >= '0' && buf[0] <= '9' && v <= UINT32_MAX)
			*id = (uint32_t)v;
	}
	x->p += padded;
	return 0;
}

static int get_time(struct xdr_in *x, struct timespec *ts)
{
	uint64_t sec;
	uint32_t nsec;

	if (get_u64(x, &sec) || get_u32(x, &nsec))
		return -EPROTO;
	ts->tv_sec = (time_t)(int64_t)sec;
	ts->tv_nsec = nsec < 1000000000 ? nsec : 0;
	return 0;
}

static mode_t v4_type_mode(uint32_t type)
{
	switch (type) {
	case NF4REG:
		return S_IFREG;
	case NF4DIR:
		return S_IFDIR;
	case NF4BLK:
		return S_IFBLK;
	case NF4CHR:
		return S_IFCHR;
	case NF4LNK:
		return S_IFLNK;
	case NF4SOCK:
		return S_IFSOCK;
	case NF4FIFO:
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

int nfs4_decode_fattr(const fattr4 *fa, struct stat *st, bool *full)
{
	struct xdr_in x = { (const unsigned char *)fa->attr_vals.attrlist4_val,
			    (const unsigned char *)fa->attr_vals.attrlist4_val +
				    fa->attr_vals.attrlist4_len };
	uint32_t type = NF4REG, mode = 0, rderr = NFS4_OK;
	bool have_type = false;

	memset(st, 0, sizeof(*st));
	st->st_blksize = NFS_XFER_MAX;
	for (unsigned int bit = 0; bit < 32 * fa->attrmask.bitmap4_len && bit < 64; bit++) {
		uint64_t u64 = 0, minor = 0;
		uint32_t u32 = 0, u32b = 0;
		int rc = 0;

		if (!(fa->attrmask.bitmap4_val[bit / 32] & (1u << (bit % 32))))
			continue;
		switch (bit) {
		case FATTR4_TYPE:
			rc = get_u32(&x, &type);
			have_type = true;
			break;
		case FATTR4_SIZE:
			rc = get_u64(&x, &u64);
			st->st_size = (off_t)u64;
			break;
		case FATTR4_FSID:
			rc = get_u64(&x, &u64) ?: get_u64(&x, &minor);
			st->st_dev = (dev_t)(u64 ^ (minor << 32 | minor >> 32));
			break;
		case FATTR4_RDATTR_ERROR:
			rc = get_u32(&x, &rderr);
			break;
		case FATTR4_FILEID:
			rc = get_u64(&x, &u64);
			st->st_ino = (ino_t)u64;
			break;
		case FATTR4_MODE:
			rc = get_u32(&x, &mode);
			break;
		case FATTR4_NUMLINKS:
			rc = get_u32(&x, &u32);
			st->st_nlink = u32;
			break;
		case FATTR4_OWNER:
			rc = get_owner(&x, &u32);
			st->st_uid = u32;
			break;
		case FATTR4_OWNER_GROUP:
			rc = get_owner(&x, &u32);
			st->st_gid = u32;
			break;
		case FATTR4_RAWDEV:
			rc = get_u32(&x, &u32) ?: get_u32(&x, &u32b);
			st->st_rdev = makedev(u32, u32b);
			break;
		case FATTR4_SPACE_USED:
			rc = get_u64(&x, &u64);
			st->st_blocks = (blkcnt_t)((u64 + 511) / 512);
			break;
		case FATTR4_TIME_ACCESS:
			rc = get_time(&x, &st->st_atim);
			break;
		case FATTR4_TIME_METADATA:
			rc = get_time(&x, &st->st_ctim);
			break;
		case FATTR4_TIME_MODIFY:
			rc = get_time(&x, &st->st_mtim);
			break;
		case FATTR4_MOUNTED_ON_FILEID: /* after FATTR4_FILEID, which it never replaces */
			rc = get_u64(&x, &u64);
			if (st->st_ino == 0)
				st->st_ino = (ino_t)u64;
			break;
		default:
			return -EPROTO; /* not asked for: its size is unknown */
		}
		if (rc)
			return rc;
	}
	if (!full) { /* GETATTR, which asks for no rdattr_error */
		if (rderr != NFS4_OK)
			return nfs4_status_errno((int)rderr);
		st->st_mode = v4_type_mode(type) | (mode & 07777);
		return 0;
	}
	*full = rderr == NFS4_OK && have_type;
	st->st_mode = have_type ? v4_type_mode(type) : 0;
	if (*full)
		st->st_mode |= mode & 07777;
	return 0;
}

int nfs4_decode_server(const fattr4 *fa, uint32_t *lease, uint64_t *maxread, uint64_t *maxwrite)
{
	struct xdr_in x = { (const unsigned char *)fa->attr_vals.attrlist4_val,
			    (const unsigned char *)fa->attr_vals.attrlist4_val +
				    fa->attr_vals.attrlist4_len };
	uint32_t have = fa->attrmask.bitmap4_len >= 1 ? fa->attrmask.bitmap4_val[0] : 0;

	/* in bit order; a server may leave any out */
	if ((have & (1u << FATTR4_LEASE_TIME)) && get_u32(&x, lease))
		return -EPROTO;
	if ((have & (1u << FATTR4_MAXREAD)) && get_u64(&x, maxread))
		return -EPROTO;
	if ((have & (1u << FATTR4_MAXWRITE)) && get_u64(&x, maxwrite))
		return -EPROTO;
	return 0;
}

/* ---- writing ------------------------------------------------------------------------------- */

void nfs4_put_u32(GByteArray *b, uint32_t v)
{
	unsigned char c[4] = { v >> 24, v >> 16, v >> 8, v };

	g_byte_array_append(b, c, 4);
}

void nfs4_put_u64(GByteArray *b, uint64_t v)
{
	nfs4_put_u32(b, (uint32_t)(v >> 32));
	nfs4_put_u32(b, (uint32_t)v);
}

void nfs4_put_string(GByteArray *b, const char *s)
{
	static const unsigned char zero[3];
	size_t len = strlen(s);

	nfs4_put_u32(b, (uint32_t)len);
	g_byte_array_append(b, (const unsigned char *)s, (guint)len);
	if (len % 4)
		g_byte_array_append(b, zero, (guint)(4 - len % 4));
}

void nfs4_put_settime(GByteArray *b, bool now, const struct timespec *ts)
{
	if (now) {
		nfs4_put_u32(b, SET_TO_SERVER_TIME4);
		return;
	}
	nfs4_put_u32(b, SET_TO_CLIENT_TIME4);
	nfs4_put_u64(b, (uint64_t)(int64_t)ts->tv_sec);
	nfs4_put_u32(b, (uint32_t)ts->tv_nsec);
}
