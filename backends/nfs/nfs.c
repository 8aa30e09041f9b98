/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs.c - the NFS backend: nfs://host[:port]/path?version=3|4 locations through libnfs' high-level
 * path API (NFSv3 and NFSv4), with path-named nodes (pathnode.c), pooled contexts per caller
 * identity (nfs_pool.c) and hand-built NFSv4 COMPOUNDs where libnfs 4.0 is wrong (nfs_v4.c).
 *
 * File handles: a struct nfsfh belongs to the context that opened it, so a handle remembers its
 * context, holds a reference on it, and leases that context for each operation (its own mutex
 * serialises the handle). When the context is retired (connection broken, NFSv4 state lost), the
 * handle reopens its file by path on a fresh context: NFSv3 handles are stateless, and NFSv4 opens
 * whose lease expired must be reopened anyway. Directory handles hold a snapshot of the listing,
 * read in one go by READDIRPLUS (v3) or READDIR with attributes (v4), and need no context.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

#include "backends/nfs/nfs.h"

struct nfs_handle {
	GMutex lock;	       /* serialises every use of the handle */
	struct nfs_conn *conn; /* owns fh; a reference; NULL after a failed reopen */
	struct nfsfh *fh;
	struct ff_pathnode *node; /* a reference: the path to reopen */
	struct nfs_ident ident;	  /* who opened it */
	int flags;		  /* O_ACCMODE | O_SYNC, for reopening */
	bool append;
	bool dirty; /* written since the last COMMIT */
	int error;  /* a write error not yet reported by flush */
};

struct nfs_dent {
	char *name;
	struct stat st;
	bool full; /* st is complete (else the core looks the name up itself) */
};

struct nfs_dir {
	GMutex lock;
	GPtrArray *ents; /* struct nfs_dent *, server order */
	bool read_from;	 /* a readdir() has used this listing */
};

/* ---- location parsing ------------------------------------------------------------------------ */

struct nfs_params {
	int version;
	int nfsport, mountport;
};

static bool parse_port(const char *val, int *port)
{
	char *end;
	long v;

	if (!*val || !g_ascii_isdigit(*val))
		return false;
	v = strtol(val, &end, 10);
	if (*end || v < 1 || v > 65535)
		return false;
	*port = (int)v;
	return true;
}

static int parse_location(const struct ff_location_spec *spec, struct nfs_params *p, char **msg)
{
	bool seen_version = false, seen_nfsport = false, seen_mountport = false;
	char **pairs = NULL;
	int rc = -EINVAL;

	memset(p, 0, sizeof(*p));
	p->version = NFS_DEFAULT_VERSION;
	if (!spec->host || !*spec->host) {
		*msg = g_strdup_printf("nfs location '%s' names no server", spec->uri);
		return -EINVAL;
	}
	if (!spec->path || spec->path[0] != '/') {
		*msg = g_strdup_printf("nfs location '%s' has no absolute path", spec->uri);
		return -EINVAL;
	}
	if (spec->query && *spec->query) {
		pairs = g_strsplit(spec->query, "&", -1);
		for (char **kv = pairs; *kv; kv++) {
			char *eq = strchr(*kv, '=');
			const char *key = *kv, *val = eq ? eq + 1 : NULL;
			bool *seen;

			if (eq)
				*eq = '\0';
			if (strcmp(key, "version") == 0)
				seen = &seen_version;
			else if (strcmp(key, "nfsport") == 0)
				seen = &seen_nfsport;
			else if (strcmp(key, "mountport") == 0)
				seen = &seen_mountport;
			else {
				*msg = g_strdup_printf("unknown key '%s' in nfs location '%s' "
						       "(known: "
						       "version, nfsport, mountport)",
						       key, spec->uri);
				goto out_free;
			}
			if (*seen) {
				*msg = g_strdup_printf("key '%s' given twice in nfs location '%s'",
						       key, spec->uri);
				goto out_free;
			}
			*seen = true;
			if (!val) {
				*msg = g_strdup_printf("key '%s' has no value in nfs location '%s'",
						       key, spec->uri);
				goto out_free;
			}
			if (seen == &seen_version) {
				if (strcmp(val, "3") == 0)
					p->version = 3;
				else if (strcmp(val, "4") == 0)
					p->version = 4;
				else {
					*msg = g_strdup_printf("version=%s: nfs locations take "
							       "version=3 or "
							       "version=4",
							       val);
					goto out_free;
				}
			} else if (!parse_port(val, seen == &seen_nfsport ? &p->nfsport
									  : &p->mountport)) {
				*msg = g_strdup_printf("%s=%s: not a port number (1-65535)", key,
						       val);
				goto out_free;
			}
		}
	}
	if (spec->port) {
		if (spec->port < 1 || spec->port > 65535) {
			*msg = g_strdup_printf("port %d in nfs location '%s' is out of range",
					       spec->port, spec->uri);
			goto out_free;
		}
		if (p->nfsport && p->nfsport != spec->port) {
			*msg = g_strdup_printf("nfs location '%s' gives port %d and nfsport=%d",
					       spec->uri, spec->port, p->nfsport);
			goto out_free;
		}
		p->nfsport = spec->port;
	}
	if (p->version == 4 && p->mountport) {
		*msg = g_strdup_printf("mountport=%d: NFSv4 has no MOUNT protocol (nfs location "
				       "'%s')",
				       p->mountport, spec->uri);
		goto out_free;
	}
	rc = 0;
out_free:
	g_strfreev(pairs);
	return rc;
}

static int nfs_check(const struct ff_location_spec *spec, char **msg)
{
	struct nfs_params p;

	return parse_location(spec, &p, msg);
}

/* ---- helpers --------------------------------------------------------------------------------- */

static char *pnode_path(struct nfs_loc *loc, struct ff_pathnode *pn, const char *child)
{
	return ff_pathtree_path(loc->tree, *loc->prefix ? loc->prefix : NULL, pn, child);
}

static char *node_path(struct nfs_loc *loc, ff_node *node, const char *child)
{
	return pnode_path(loc, nfs_pnode(node), child);
}

/* A new node reference for the core, taking over the path node reference `pn`. */
static ff_node *node_new(struct ff_pathnode *pn)
{
	return (ff_node *)pn;
}

/* Remember a directory's attributes, for when it is gone (see node_gone()). */
static void node_seen(struct nfs_loc *loc, ff_node *node, const struct stat *st)
{
	struct ff_pathnode *pn = nfs_pnode(node);

	if (!S_ISDIR(st->st_mode))
		return;
	g_mutex_lock(&loc->node_lock);
	if (!pn->priv)
		pn->priv = g_new(struct stat, 1);
	*(struct stat *)pn->priv = *st;
	g_mutex_unlock(&loc->node_lock);
}

/* Attributes of a node whose name was removed through this mount (no path reaches it): a
 * directory removed while open (or some process's cwd) still answers fstat(), with st_nlink 0,
 * as on a local filesystem. Anything else is stale. (Files removed while open are renamed to a
 * hidden name by the core instead.) */
static int node_gone(struct nfs_loc *loc, ff_node *node, struct stat *st)
{
	int rc = -ESTALE;

	g_mutex_lock(&loc->node_lock);
	if (nfs_pnode(node)->priv) {
		*st = *(struct stat *)nfs_pnode(node)->priv;
		st->st_nlink = 0;
		rc = 0;
	}
	g_mutex_unlock(&loc->node_lock);
	return rc;
}

/* A new node reference for `name` in `parent`. */
static ff_node *child_node(struct nfs_loc *loc, ff_node *parent, const char *name)
{
	return node_new(ff_pathtree_child(loc->tree, nfs_pnode(parent), name));
}

/* The path from the server's (pseudo) root, for our own NFSv4 COMPOUNDs. */
static char *v4_path(struct nfs_loc *loc, const char *path)
{
	if (strcmp(loc->mount_path, "/") == 0)
		return g_strdup(path);
	if (strcmp(path, "/") == 0)
		return g_strdup(loc->mount_path);
	return g_strconcat(loc->mount_path, path, NULL);
}

static void stat_from_libnfs(const struct nfs_stat_64 *in, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = (dev_t)in->nfs_dev;
	st->st_ino = (ino_t)in->nfs_ino;
	st->st_mode = (mode_t)in->nfs_mode;
	st->st_nlink = (nlink_t)in->nfs_nlink;
	st->st_uid = (uid_t)in->nfs_uid;
	st->st_gid = (gid_t)in->nfs_gid;
	st->st_rdev = (dev_t)in->nfs_rdev;
	st->st_size = (off_t)in->nfs_size;
	st->st_blksize = NFS_XFER_MAX;
	st->st_blocks = (blkcnt_t)in->nfs_blocks;
	st->st_atim.tv_sec = (time_t)in->nfs_atime;
	st->st_atim.tv_nsec = (long)in->nfs_atime_nsec;
	st->st_mtim.tv_sec = (time_t)in->nfs_mtime;
	st->st_mtim.tv_nsec = (long)in->nfs_mtime_nsec;
	st->st_ctim.tv_sec = (time_t)in->nfs_ctime;
	st->st_ctim.tv_nsec = (long)in->nfs_ctime_nsec;
}

/* lstat of `path` (below the mount) on a leased context. */
static int do_lstat(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st)
{
	struct nfs_stat_64 s;
	char *full;
	int rc;

	if (loc->version == 4) {
		full = v4_path(loc, path);
		rc = nfs4_getattr(loc, nfs, full, st);
		g_free(full);
		return rc;
	}
	rc = nfs_lstat64(nfs, path, &s);
	if (rc < 0)
		return nfs_map_error(nfs, rc);
	stat_from_libnfs(&s, st);
	return 0;
}

/* An operation on a path with a context of the caller. */
struct op {
	struct nfs_loc *loc;
	struct nfs_conn *conn;
	struct nfs_context *nfs;
	gint64 deadline;
};

/* Lease a context of the caller; `avoid`: see nfs_conn_get(). */
static int op_begin_avoid(struct op *op, struct nfs_loc *loc, const struct ff_cred *cred,
			  const void *avoid)
{
	struct nfs_ident id;
	int rc;

	op->loc = loc;
	op->deadline = nfs_deadline(loc);
	nfs_ident_from_cred(&id, cred);
	rc = nfs_conn_get(loc, &id, op->deadline, avoid, &op->conn);
	op->nfs = rc ? NULL : op->conn->nfs;
	return rc;
}

static int op_begin(struct op *op, struct nfs_loc *loc, const struct ff_cred *cred)
{
	return op_begin_avoid(op, loc, cred, NULL);
}

/* Begin an operation on `child` of `node` (NULL: on `node` itself): a leased context, and the
 * path in *path, which the caller frees after op_end(). Nothing to undo when it fails. */
static int op_begin_at(struct op *op, struct nfs_loc *loc, const struct ff_cred *cred,
		       ff_node *node, const char *child, char **path)
{
	int rc;

	*path = node_path(loc, node, child);
	if (!*path)
		return -ESTALE;
	rc = op_begin(op, loc, cred);
	if (rc) {
		g_free(*path);
		*path = NULL;
	}
	return rc;
}

static int op_end(struct op *op, int rc)
{
	nfs_conn_put(op->conn, rc);
	return rc;
}

static int setattr_path(struct op *op, const char *path, const struct stat *attr,
			unsigned int to_set, struct stat *st);

/* After opening `path` with O_TRUNC: libnfs 4.0 truncates only when opening for writing, Linux
 * also for O_RDONLY (the kernel has checked that the caller may write). */
static int open_truncate(struct op *op, const char *path, int flags)
{
	struct stat attr = { .st_size = 0 }, st;

	if (!(flags & O_TRUNC) || (flags & O_ACCMODE) != O_RDONLY)
		return 0;
	return setattr_path(op, path, &attr, FF_SET_SIZE, &st);
}

/* ---- mount ----------------------------------------------------------------------------------- */

static void loc_free(struct nfs_loc *loc)
{
	if (!loc)
		return;
	g_free(loc->uri);
	g_free(loc->host);
	g_free(loc->mount_path);
	g_free(loc->prefix);
	if (loc->tree)
		ff_pathtree_free(loc->tree);
	g_mutex_clear(&loc->node_lock);
	g_free(loc);
}

/* Mount the location's path, or (NFSv3 servers that only allow whole exports) the longest
 * ancestor the server lets us mount, keeping the rest as a prefix. */
static int mount_probe(struct nfs_loc *loc, const char *path, char **msg)
{
	struct nfs_ident id = { .uid = getuid(), .gid = getgid() };
	gint64 deadline = nfs_deadline(loc);
	struct nfs_context *nfs = NULL;
	char *try = g_strdup(path), *first_msg = NULL;
	int rc = -ENOENT, first_rc = 0;
	struct stat st;

	for (;;) {
		char *slash;

		g_free(loc->mount_path);
		loc->mount_path = g_strdup(try);
		g_free(loc->prefix);
		loc->prefix = g_strdup(path + (strcmp(try, "/") == 0 ? 0 : strlen(try)));
		if (strcmp(loc->prefix, "/") == 0)
			loc->prefix[0] = '\0';
		nfs = nfs_context_new(loc, &id, deadline, &rc, &first_msg);
		if (nfs)
			break;
		if (!first_rc)
			first_rc = rc;
		if (loc->version != 3 || (rc != -EACCES && rc != -ENOENT && rc != -EPERM) ||
		    strcmp(try, "/") == 0)
			break;
		slash = strrchr(try, '/');
		if (slash == try)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	g_free(try);
	if (!nfs) { /* report why the path itself could not be mounted */
		*msg = first_msg;
		return first_rc;
	}
	g_free(first_msg);
	/* the location's root must be a directory we can reach */
	nfs_set_deadline(nfs, deadline);
	rc = do_lstat(loc, nfs, *loc->prefix ? loc->prefix : "/", &st);
	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc)
		*msg = g_strdup_printf("%s: %s: %s", loc->uri, path, g_strerror(-rc));
	else
		loc->root_dev = st.st_dev;
	nfs_destroy_context(nfs);
	return rc;
}

static int nfs_mount_loc(const struct ff_location_spec *spec, const struct ff_notify *notify,
			 void **locp, char **msg)
{
	struct nfs_loc *loc;
	struct nfs_params p;
	int rc;

	rc = parse_location(spec, &p, msg);
	if (rc)
		return rc;
	loc = g_new0(struct nfs_loc, 1);
	loc->uri = g_strdup(spec->uri);
	loc->host = g_strdup(spec->host);
	loc->version = p.version;
	loc->nfsport = p.nfsport;
	loc->mountport = p.mountport;
	loc->timeout_ms = spec->timeout > 0 ? (int)(spec->timeout * 1000) : 15000;
	if (loc->timeout_ms < 100)
		loc->timeout_ms = 100;
	loc->read_only = spec->read_only;
	g_mutex_init(&loc->node_lock);
	nfs_pool_init(loc);
	rc = mount_probe(loc, spec->path, msg);
	if (rc)
		goto out_free;
	loc->tree = ff_pathtree_new();
	*locp = loc;
	return 0;

out_free:
	nfs_pool_destroy(loc);
	loc_free(loc);
	return rc;
}

static void nfs_unmount_loc(void *l)
{
	struct nfs_loc *loc = l;

	nfs_pool_destroy(loc);
	loc_free(loc);
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static int nfs_root(void *l, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	struct ff_pathnode *root = ff_pathtree_root(loc->tree);
	char *path = pnode_path(loc, root, NULL);
	struct op op;
	int rc;

	rc = op_begin(&op, loc, cred);
	if (rc)
		goto out;
	rc = op_end(&op, do_lstat(loc, op.nfs, path, st));
out:
	g_free(path);
	if (rc) {
		ff_pathtree_unref(loc->tree, root);
	} else {
		*node = node_new(root);
		node_seen(loc, *node, st);
	}
	return rc;
}

static int nfs_lookup(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	rc = op_end(&op, do_lstat(loc, op.nfs, path, st));
	if (rc == 0) {
		*node = child_node(loc, parent, name);
		node_seen(loc, *node, st);
	}
	g_free(path);
	return rc;
}

static void nfs_forget(void *l, ff_node *node)
{
	struct nfs_loc *loc = l;

	ff_pathtree_unref(loc->tree, nfs_pnode(node));
}

static void nfs_relink(void *l, ff_node *keep, ff_node *fresh)
{
	struct nfs_loc *loc = l;

	ff_pathtree_relink(loc->tree, nfs_pnode(keep), nfs_pnode(fresh));
}

/* ---- file handles ---------------------------------------------------------------------------- */

static int open_flags(int flags)
{
	/* O_NOFOLLOW: opening a symlink fails ELOOP. O_APPEND is handled here, not by libnfs. */
	return (flags & (O_ACCMODE | O_SYNC | O_DSYNC)) | O_NOFOLLOW;
}

/* Lease the handle's context, reopening the file on a fresh one if its context was retired.
 * Called with h->lock held. */
static int handle_begin(struct nfs_loc *loc, struct nfs_handle *h, gint64 deadline)
{
	struct nfs_conn *conn;
	char *path;
	int rc;

	if (h->conn) {
		rc = nfs_conn_lease(h->conn, deadline);
		if (rc != -ENOTCONN)
			return rc;
		/* retired: its fh goes with it (closing it would only wait on a dead server) */
		nfs_conn_opened(h->conn, h->node, false);
		nfs_conn_orphan(h->conn, h->fh);
		nfs_conn_unref(h->conn);
		h->conn = NULL;
		h->fh = NULL;
	}
	path = pnode_path(loc, h->node, NULL);
	if (!path)
		return -ESTALE;
	/* A second try when the context's NFSv4 state is gone (it is retired): see
	 * nfs_open_file(). */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool lost;

		rc = nfs_conn_get(loc, &h->ident, deadline, h->node, &conn);
		if (rc)
			break;
		rc = nfs_open(conn->nfs, path, open_flags(h->flags), &h->fh);
		if (rc == 0) {
			nfs_conn_ref(conn);
			nfs_conn_opened(conn, h->node, true);
			h->conn = conn;
			break;
		}
		rc = nfs_map_error(conn->nfs, rc);
		lost = nfs_error_lost_state(conn->nfs);
		nfs_conn_put(conn, rc);
		h->fh = NULL;
		if (!lost)
			break;
	}
	g_free(path);
	return rc;
}

/* End the lease. Returns true when the error says the open state was lost and a retry after
 * reopening may succeed. */
static bool handle_end(struct nfs_handle *h, int rc)
{
	bool lost = rc < 0 && nfs_error_lost_state(h->conn->nfs);

	nfs_conn_put(h->conn, rc);
	return lost;
}

static struct nfs_handle *handle_new(struct nfs_loc *loc, struct nfs_conn *conn, struct nfsfh *fh,
				     ff_node *node, const struct ff_cred *cred, int flags)
{
	struct nfs_handle *h = g_new0(struct nfs_handle, 1);

	g_mutex_init(&h->lock);
	h->conn = conn;
	nfs_conn_ref(conn);
	h->fh = fh;
	h->node = nfs_pnode(node);
	ff_pathtree_ref(loc->tree, h->node);
	nfs_conn_opened(conn, h->node, true);
	nfs_ident_from_cred(&h->ident, cred);
	h->flags = flags & (O_ACCMODE | O_SYNC | O_DSYNC);
	h->append = flags & O_APPEND;
	return h;
}

static int nfs_open_file(void *l, const struct ff_cred *cred, ff_node *node, int flags, void **fhp)
{
	struct nfs_loc *loc = l;
	char *path = node_path(loc, node, NULL);
	struct nfsfh *fh;
	struct op op;
	int rc;

	if (!path)
		return -ESTALE;
	/* A second try on a fresh context when NFSv4 state was lost (lease expired, server
	 * restarted): libnfs 4.0 never renews its lease. */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool lost;

		rc = op_begin_avoid(&op, loc, cred, nfs_pnode(node));
		if (rc)
			break;
		rc = nfs_open(op.nfs, path, open_flags(flags) | (flags & O_TRUNC), &fh);
		if (rc == 0) {
			rc = open_truncate(&op, path, flags);
			if (rc) {
				nfs_close(op.nfs, fh);
				op_end(&op, rc);
				break;
			}
			*fhp = handle_new(loc, op.conn, fh, node, cred, flags);
			op_end(&op, 0);
			break;
		}
		rc = nfs_map_error(op.nfs, rc);
		lost = nfs_error_lost_state(op.nfs);
		op_end(&op, rc);
		if (!lost)
			break;
	}
	g_free(path);
	return rc;
}

/* Attributes of an open file: through its handle on NFSv3 (no path walk, and it works for an
 * unlinked file); by path on NFSv4, whose libnfs attributes lack fsid. */
static int handle_getattr(struct nfs_loc *loc, struct nfs_handle *h, struct stat *st)
{
	gint64 deadline = nfs_deadline(loc);
	struct nfs_stat_64 s;
	int rc;

	g_mutex_lock(&h->lock);
	rc = handle_begin(loc, h, deadline);
	if (rc)
		goto out_unlock;
	rc = nfs_fstat64(h->conn->nfs, h->fh, &s);
	rc = rc < 0 ? nfs_map_error(h->conn->nfs, rc) : 0;
	if (rc == 0)
		stat_from_libnfs(&s, st);
	handle_end(h, rc);
out_unlock:
	g_mutex_unlock(&h->lock);
	return rc;
}

static int nfs_create_file(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
			   mode_t mode, int flags, ff_node **nodep, struct stat *st, void **fhp)
{
	struct nfs_loc *loc = l;
	char *path = node_path(loc, parent, name);
	struct nfsfh *fh = NULL;
	struct ff_pathnode *pn;
	bool made = true;
	ff_node *node;
	struct op op;
	int rc;

	if (!path)
		return -ESTALE;
	pn = ff_pathtree_child(loc->tree, nfs_pnode(parent), name); /* becomes the node */
	rc = op_begin_avoid(&op, loc, cred, pn);
	if (rc)
		goto out_free;
	/* Exclusive first: the kernel calls create() for names it believes absent. Without O_EXCL
	 * an existing file is then opened as it is (libnfs 4.0's NFSv4 create fails EEXIST on it,
	 * and NFSv3 UNCHECKED would apply our mode to it). */
	rc = nfs_create(op.nfs, path, open_flags(flags) | O_CREAT | O_EXCL, mode & 07777, &fh);
	if (rc < 0 && nfs_error_lost_state(op.nfs)) { /* see nfs_open_file() */
		op_end(&op, nfs_map_error(op.nfs, rc));
		rc = op_begin_avoid(&op, loc, cred, pn);
		if (rc)
			goto out_free;
		rc = nfs_create(op.nfs, path, open_flags(flags) | O_CREAT | O_EXCL, mode & 07777,
				&fh);
	}
	if (rc == -EEXIST && !(flags & O_EXCL)) {
		made = false;
		rc = nfs_open(op.nfs, path, open_flags(flags) | (flags & O_TRUNC), &fh);
		if (rc == 0) {
			rc = open_truncate(&op, path, flags);
			if (rc) {
				nfs_close(op.nfs, fh);
				op_end(&op, rc);
				goto out_free;
			}
		}
	}
	if (rc < 0) {
		rc = op_end(&op, nfs_map_error(op.nfs, rc));
		goto out_free;
	}
	if (made && loc->version == 4) {
		/* libnfs 4.0 always creates NFSv4 files EXCLUSIVE4 (it tests `flags | O_EXCL`): no
		 * mode is applied and the verifier is left in atime/mtime (dates in 2106). */
		struct stat attr = { .st_mode = mode & 07777 };
		char *full = v4_path(loc, path);

		rc = nfs4_setattr(loc, op.nfs, full, &attr,
				  FF_SET_MODE | FF_SET_ATIME | FF_SET_ATIME_NOW | FF_SET_MTIME |
					  FF_SET_MTIME_NOW,
				  st);
		g_free(full);
	} else {
		rc = do_lstat(loc, op.nfs, path, st);
	}
	if (rc) {
		nfs_close(op.nfs, fh);
		op_end(&op, rc);
		goto out_free;
	}
	node = node_new(g_steal_pointer(&pn));
	*fhp = handle_new(loc, op.conn, fh, node, cred, flags);
	*nodep = node;
	op_end(&op, 0);
out_free:
	if (pn)
		ff_pathtree_unref(loc->tree, pn);
	g_free(path);
	return rc;
}

static ssize_t nfs_read_file(void *l, void *fhv, void *buf, size_t size, off_t off)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = fhv;
	gint64 deadline = nfs_deadline(loc);
	size_t done = 0;
	ssize_t rc = 0;

	g_mutex_lock(&h->lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = handle_begin(loc, h, deadline);
		if (rc)
			break;
		while (done < size) {
			size_t chunk = MIN(size - done, h->conn->readmax);
			int n = nfs_pread(h->conn->nfs, h->fh, (uint64_t)off + done, chunk,
					  (char *)buf + done);

			if (n < 0) {
				rc = nfs_map_error(h->conn->nfs, n);
				break;
			}
			if (n == 0)
				break;
			done += (size_t)n;
		}
		if (!handle_end(h, (int)rc) || done)
			break;
	}
	g_mutex_unlock(&h->lock);
	return rc < 0 && done == 0 ? rc : (ssize_t)done;
}

static ssize_t write_locked(struct nfs_loc *loc, struct nfs_handle *h, const void *buf, size_t size,
			    off_t off, gint64 deadline)
{
	struct nfs_context *nfs = h->conn->nfs;
	int rc;

	if (h->append) {
		struct nfs_stat_64 s;

		rc = nfs_fstat64(nfs, h->fh, &s);
		if (rc < 0)
			return nfs_map_error(nfs, rc);
		off = (off_t)s.nfs_size;
	}
	if (loc->version == 4)
		return nfs4_pwrite_chunked(nfs, h->fh, (uint64_t)off, size, buf, deadline);
	/* libnfs splits an NFSv3 write by the server's wsize and keeps the pieces in flight. */
	rc = nfs_pwrite(nfs, h->fh, (uint64_t)off, size, buf);
	if (rc < 0)
		return nfs_map_error(nfs, rc);
	return rc == (int)size ? rc : -EIO;
}

static ssize_t nfs_write_file(void *l, const struct ff_cred *cred, void *fhv, const void *buf,
			      size_t size, off_t off)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = fhv;
	gint64 deadline = nfs_deadline(loc);
	ssize_t rc = 0;

	if (size > INT_MAX)
		size = INT_MAX & ~4095;
	g_mutex_lock(&h->lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = handle_begin(loc, h, deadline);
		if (rc)
			break;
		rc = write_locked(loc, h, buf, size, off, deadline);
		if (rc >= 0)
			h->dirty = true;
		if (!handle_end(h, rc < 0 ? (int)rc : 0))
			break;
	}
	g_mutex_unlock(&h->lock);
	return rc;
}

static int commit_locked(struct nfs_loc *loc, struct nfs_handle *h)
{
	int rc = handle_begin(loc, h, nfs_deadline(loc));

	if (rc)
		return rc;
	rc = nfs_fsync(h->conn->nfs, h->fh);
	rc = rc < 0 ? nfs_map_error(h->conn->nfs, rc) : 0;
	handle_end(h, rc);
	if (rc == 0)
		h->dirty = false;
	return rc;
}

/* close(2): make written data stable on the server (COMMIT), as the kernel's NFS client does,
 * so that close() reports what a server restart would lose. */
static int nfs_flush_file(void *l, void *fhv)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = fhv;
	int rc = 0;

	g_mutex_lock(&h->lock);
	if (h->dirty)
		rc = commit_locked(loc, h);
	if (h->error) {
		rc = h->error;
		h->error = 0;
	}
	g_mutex_unlock(&h->lock);
	return rc;
}

static int nfs_fsync_file(void *l, void *fhv, int datasync)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = fhv;
	int rc;

	g_mutex_lock(&h->lock);
	rc = commit_locked(loc, h);
	g_mutex_unlock(&h->lock);
	return rc;
}

static int nfs_release_file(void *l, void *fhv)
{
	struct nfs_loc *loc = l;
	struct nfs_handle *h = fhv;
	int rc = 0;

	if (h->conn) {
		/* Close on the context that opened it, unless that one is retired. */
		rc = nfs_conn_lease(h->conn, nfs_deadline(loc));
		if (rc == 0) {
			rc = nfs_close(h->conn->nfs, h->fh);
			rc = rc < 0 ? nfs_map_error(h->conn->nfs, rc) : 0;
			nfs_conn_put(h->conn, rc);
			/* NFSv4 state already gone (lease expired; or the same file opened twice on
			 * one context, whose one open-owner then shares one stateid): nothing to
			 * close. */
			if (rc < 0 && nfs_error_lost_state(h->conn->nfs))
				rc = 0;
			nfs_conn_opened(h->conn, h->node, false);
		} else {
			/* not closed: freed with its context (the server forgets the open when
			 * its lease expires) */
			nfs_conn_opened(h->conn, h->node, false);
			nfs_conn_orphan(h->conn, h->fh);
			if (rc == -ENOTCONN)
				rc = 0;
		}
		nfs_conn_unref(h->conn);
	}
	ff_pathtree_unref(loc->tree, h->node);
	g_mutex_clear(&h->lock);
	g_free(h);
	return rc;
}

/* ---- attributes ------------------------------------------------------------------------------ */

static int nfs_getattr(void *l, const struct ff_cred *cred, ff_node *node, void *fh,
		       struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	if (fh && loc->version == 3)
		return handle_getattr(loc, fh, st);
	path = node_path(loc, node, NULL);
	if (!path && fh) {
		/* An open NFSv4 file whose name is gone: libnfs' GETATTR has no fsid, so take the
		 * location root's (one export, one filesystem, in all but odd setups). */
		rc = handle_getattr(loc, fh, st);
		if (rc == 0)
			st->st_dev = loc->root_dev;
		return rc;
	}
	if (!path)
		return node_gone(loc, node, st);
	rc = op_begin(&op, loc, cred);
	if (rc == 0)
		rc = op_end(&op, do_lstat(loc, op.nfs, path, st));
	if (rc == 0)
		node_seen(loc, node, st);
	g_free(path);
	return rc;
}

static int setattr_v3(struct op *op, const char *path, const struct stat *attr, unsigned int to_set)
{
	struct nfs_context *nfs = op->nfs;
	int rc = 0;

	if (to_set & FF_SET_MODE)
		rc = nfs_lchmod(nfs, path, (int)(attr->st_mode & 07777));
	if (rc == 0 && (to_set & (FF_SET_UID | FF_SET_GID)))
		rc = nfs_lchown(nfs, path, (to_set & FF_SET_UID) ? (int)attr->st_uid : -1,
				(to_set & FF_SET_GID) ? (int)attr->st_gid : -1);
	if (rc == 0 && (to_set & FF_SET_SIZE))
		rc = nfs_truncate(nfs, path, (uint64_t)attr->st_size);
	if (rc == 0 &&
	    (to_set & (FF_SET_ATIME | FF_SET_MTIME | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW))) {
		bool a = to_set & (FF_SET_ATIME | FF_SET_ATIME_NOW),
		     m = to_set & (FF_SET_MTIME | FF_SET_MTIME_NOW);
		struct timeval tv[2];
		struct stat cur;

		if ((to_set & FF_SET_ATIME_NOW) && (to_set & FF_SET_MTIME_NOW)) {
			rc = nfs_lutimes(nfs, path, NULL); /* the server's clock */
		} else {
			/* libnfs sets both times, in microseconds: keep the one not asked for. */
			if (!a || !m) {
				rc = do_lstat(op->loc, nfs, path, &cur);
				if (rc)
					return rc;
			}
			for (int i = 0; i < 2; i++) {
				bool want = i == 0 ? a : m;
				bool now = to_set & (i == 0 ? FF_SET_ATIME_NOW : FF_SET_MTIME_NOW);
				const struct timespec *ts = i == 0 ? &attr->st_atim
								   : &attr->st_mtim;

				if (!want)
					ts = i == 0 ? &cur.st_atim : &cur.st_mtim;
				if (want && now) {
					gettimeofday(&tv[i], NULL);
				} else {
					struct timespec v = *ts;

					nfs3_time_clamp(&v);
					tv[i].tv_sec = v.tv_sec;
					tv[i].tv_usec = v.tv_nsec / 1000;
				}
			}
			rc = nfs_lutimes(nfs, path, tv);
		}
	}
	return rc < 0 ? nfs_map_error(nfs, rc) : 0;
}

static int setattr_path(struct op *op, const char *path, const struct stat *attr,
			unsigned int to_set, struct stat *st)
{
	struct nfs_loc *loc = op->loc;
	bool have_st = false;
	int rc;

	if (loc->version == 4) {
		char *full = v4_path(loc, path);

		rc = nfs4_setattr(loc, op->nfs, full, attr, to_set, st);
		g_free(full);
		return rc;
	}
	rc = nfs3_setattr(op->nfs, path, attr, to_set, st, &have_st);
	if (rc == -EACCES) /* e.g. the mount's root is not readable: libnfs' way */
		rc = setattr_v3(op, path, attr, to_set);
	if (rc == 0 && !have_st)
		rc = do_lstat(loc, op->nfs, path, st);
	return rc;
}

static int nfs_setattr(void *l, const struct ff_cred *cred, ff_node *node, void *fh,
		       const struct stat *attr, unsigned int to_set, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	rc = op_end(&op, setattr_path(&op, path, attr, to_set, st));
	if (rc == 0)
		node_seen(loc, node, st);
	g_free(path);
	return rc;
}

static ssize_t nfs_readlink_node(void *l, const struct ff_cred *cred, ff_node *node, char *buf,
				 size_t size)
{
	struct nfs_loc *loc = l;
	char *path, *target = NULL;
	struct op op;
	ssize_t rc;

	rc = op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		char *full = v4_path(loc, path);

		rc = nfs4_readlink(loc, op.nfs, full, buf, size);
		g_free(full);
		op_end(&op, rc < 0 ? (int)rc : 0);
		goto out_free;
	}
	rc = nfs_readlink2(op.nfs, path, &target);
	rc = rc < 0 ? nfs_map_error(op.nfs, (int)rc) : 0;
	op_end(&op, (int)rc);
	if (rc == 0) {
		size_t len = strlen(target);

		if (len > size) {
			rc = -ENAMETOOLONG;
		} else {
			memcpy(buf, target, len);
			rc = (ssize_t)len;
		}
	}
	free(target);
out_free:
	g_free(path);
	return rc;
}

/* ---- namespace changes ----------------------------------------------------------------------- */

/* Did the last call fail because its arguments did not fit? libnfs 4.0 encodes every call but
 * WRITE into a 4096-byte buffer, so a symlink target of more than about 3.9 KB (less the path)
 * cannot be sent: NFSv3 says "Failed to send SYMLINK call", NFSv4 "Failed to encode". */
static bool call_too_big(struct nfs_context *nfs)
{
	const char *msg = nfs_get_error(nfs);

	return msg && (strstr(msg, "Failed to encode") || strstr(msg, "Failed to send SYMLINK"));
}

/* After a create-style call: the new object's attributes and node. */
static int created(struct op *op, ff_node *parent, const char *name, const char *path,
		   ff_node **node, struct stat *st)
{
	int rc = do_lstat(op->loc, op->nfs, path, st);

	if (rc == 0 && node) {
		*node = child_node(op->loc, parent, name);
		node_seen(op->loc, *node, st);
	}
	return rc;
}

static int nfs_mknod_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
			  mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path, *full;
	struct nfsfh *fh;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (S_ISREG(mode)) {
		rc = nfs_create(op.nfs, path, O_CREAT | O_EXCL | O_WRONLY, mode & 07777, &fh);
		if (rc == 0)
			nfs_close(op.nfs, fh);
		if (rc == 0 && loc->version == 4) { /* as in nfs_create_file() */
			struct stat attr = { .st_mode = mode & 07777 };

			full = v4_path(loc, path);
			rc = nfs4_setattr(loc, op.nfs, full, &attr,
					  FF_SET_MODE | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW, st);
			g_free(full);
			if (rc == 0)
				*node = child_node(loc, parent, name);
			goto out_end;
		}
	} else if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode)) {
		rc = -EINVAL;
		goto out_end;
	} else if (loc->version == 4) {
		full = v4_path(loc, path);
		rc = nfs4_mknod(loc, op.nfs, full, mode, rdev, st);
		g_free(full);
		if (rc == 0)
			*node = child_node(loc, parent, name);
		goto out_end;
	} else {
		rc = nfs_mknod(op.nfs, path, (int)mode, (int)rdev);
		if (rc == 0 && (mode & 07000)) {
			/* libnfs 4.0 sends the permission bits only: set the others after */
			struct stat attr = { .st_mode = mode & 07777 };
			bool have_st;

			rc = nfs3_setattr(op.nfs, path, &attr, FF_SET_MODE, st, &have_st);
			if (rc)
				goto out_end;
		}
	}
	rc = rc < 0 ? nfs_map_error(op.nfs, rc) : created(&op, parent, name, path, node, st);
out_end:
	op_end(&op, rc);
	g_free(path);
	return rc;
}

static int nfs_mkdir_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
			  mode_t mode, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	rc = nfs_mkdir2(op.nfs, path, (int)(mode & 07777));
	rc = rc < 0 ? nfs_map_error(op.nfs, rc) : created(&op, parent, name, path, node, st);
	op_end(&op, rc);
	g_free(path);
	return rc;
}

static int nfs_symlink_node(void *l, const struct ff_cred *cred, const char *target,
			    ff_node *parent, const char *name, ff_node **node, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	rc = nfs_symlink(op.nfs, target, path);
	if (rc < 0)
		rc = call_too_big(op.nfs) ? -ENAMETOOLONG : nfs_map_error(op.nfs, rc);
	else
		rc = created(&op, parent, name, path, node, st);
	op_end(&op, rc);
	g_free(path);
	return rc;
}

static int nfs_link_node(void *l, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
			 const char *newname, struct stat *st)
{
	struct nfs_loc *loc = l;
	char *oldpath = node_path(loc, node, NULL), *newpath = node_path(loc, newparent, newname);
	struct op op;
	int rc = -ESTALE;

	if (!oldpath || !newpath)
		goto out_free;
	rc = op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	rc = do_lstat(loc, op.nfs, oldpath, st);
	if (rc == 0 && S_ISLNK(st->st_mode)) {
		/* libnfs resolves oldpath following a final symlink: link the symlink itself
		 * with a LINK of our own, as link(2) does. */
		char *dir = node_path(loc, newparent, NULL);

		if (!dir) {
			rc = -ESTALE;
		} else if (loc->version == 4) {
			char *from = v4_path(loc, oldpath), *to = v4_path(loc, dir);

			rc = nfs4_link(loc, op.nfs, from, to, newname);
			g_free(from);
			g_free(to);
		} else {
			rc = nfs3_link(op.nfs, oldpath, dir, newname);
		}
		g_free(dir);
		if (rc == 0)
			rc = do_lstat(loc, op.nfs, newpath, st);
	} else if (rc == 0) {
		rc = nfs_link(op.nfs, oldpath, newpath);
		rc = rc < 0 ? nfs_map_error(op.nfs, rc) : do_lstat(loc, op.nfs, newpath, st);
	}
	op_end(&op, rc);
out_free:
	g_free(oldpath);
	g_free(newpath);
	return rc;
}

static int remove_entry(struct nfs_loc *loc, const struct ff_cred *cred, ff_node *parent,
			const char *name, bool dir)
{
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, parent, name, &path);
	if (rc)
		return rc;
	if (loc->version == 4) {
		char *full = v4_path(loc, path);

		rc = op_end(&op, nfs4_remove(loc, op.nfs, full, dir));
		g_free(full);
	} else {
		rc = dir ? nfs_rmdir(op.nfs, path) : nfs_unlink(op.nfs, path);
		rc = op_end(&op, rc < 0 ? nfs_map_error(op.nfs, rc) : 0);
	}
	if (rc == 0)
		ff_pathtree_unlink(loc->tree, nfs_pnode(parent), name);
	g_free(path);
	return rc;
}

static int nfs_unlink_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_entry(l, cred, parent, name, false);
}

static int nfs_rmdir_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_entry(l, cred, parent, name, true);
}

static int nfs_rename_node(void *l, const struct ff_cred *cred, ff_node *parent, const char *name,
			   ff_node *newparent, const char *newname, unsigned int flags)
{
	struct nfs_loc *loc = l;
	char *oldpath, *newpath;
	struct op op;
	int rc = -ESTALE;

	if (flags)
		return -EINVAL; /* NFS has neither RENAME_NOREPLACE nor RENAME_EXCHANGE */
	oldpath = node_path(loc, parent, name);
	newpath = node_path(loc, newparent, newname);
	if (!oldpath || !newpath)
		goto out_free;
	rc = op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	rc = nfs_rename(op.nfs, oldpath, newpath);
	rc = op_end(&op, rc < 0 ? nfs_map_error(op.nfs, rc) : 0);
	if (rc == 0)
		ff_pathtree_rename(loc->tree, nfs_pnode(parent), name, nfs_pnode(newparent),
				   newname, false);
out_free:
	g_free(oldpath);
	g_free(newpath);
	return rc;
}

/* ---- directories ----------------------------------------------------------------------------- */

static void dent_free(gpointer p)
{
	struct nfs_dent *d = p;

	g_free(d->name);
	g_free(d);
}

static int add_dent(void *arg, const char *name, const struct stat *st, bool full)
{
	struct nfs_dent *d = g_new(struct nfs_dent, 1);

	d->name = g_strdup(name);
	d->st = *st;
	d->full = full;
	g_ptr_array_add(arg, d);
	return 0;
}

static void stat_from_dirent(const struct nfsdirent *e, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)e->inode;
	st->st_dev = (dev_t)e->dev;
	st->st_mode = e->mode;
	st->st_nlink = e->nlink;
	st->st_uid = e->uid;
	st->st_gid = e->gid;
	st->st_rdev = (dev_t)e->rdev;
	st->st_size = (off_t)e->size;
	st->st_blksize = NFS_XFER_MAX;
	st->st_blocks = (blkcnt_t)e->blocks;
	st->st_atim.tv_sec = e->atime.tv_sec;
	st->st_atim.tv_nsec = e->atime_nsec;
	st->st_mtim.tv_sec = e->mtime.tv_sec;
	st->st_mtim.tv_nsec = e->mtime_nsec;
	st->st_ctim.tv_sec = e->ctime.tv_sec;
	st->st_ctim.tv_nsec = e->ctime_nsec;
}

/* Read the whole listing with attributes: READDIRPLUS batches (v3), READDIR batches (v4). */
static int list_dir(struct nfs_loc *loc, const struct ff_cred *cred, ff_node *node, GPtrArray **out)
{
	GPtrArray *ents = g_ptr_array_new_with_free_func(dent_free);
	char *path = node_path(loc, node, NULL), *full;
	struct nfsdir *dir;
	struct op op;
	int rc = 0;

	if (!path) /* removed through this mount (while open): it lists nothing */
		goto out_free;
	rc = op_begin(&op, loc, cred);
	if (rc)
		goto out_free;
	if (loc->version == 4) {
		full = v4_path(loc, path);
		rc = nfs4_readdir(loc, op.nfs, full, add_dent, ents);
		g_free(full);
		goto out_end;
	}
	rc = nfs_opendir(op.nfs, path, &dir);
	if (rc < 0) {
		rc = nfs_map_error(op.nfs, rc);
		goto out_end;
	}
	for (struct nfsdirent *e; (e = nfs_readdir(op.nfs, dir)) != NULL;) {
		struct stat st;

		if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
			continue;
		stat_from_dirent(e, &st);
		add_dent(ents, e->name, &st, true);
	}
	nfs_closedir(op.nfs, dir);
	/* libnfs 4.0 prepends each entry it receives: restore the server's order */
	for (guint i = 0, j = ents->len; i + 1 < j; i++, j--) {
		gpointer t = ents->pdata[i];

		ents->pdata[i] = ents->pdata[j - 1];
		ents->pdata[j - 1] = t;
	}
out_end:
	op_end(&op, rc);
out_free:
	g_free(path);
	if (rc) {
		g_ptr_array_free(ents, TRUE);
		return rc;
	}
	*out = ents;
	return 0;
}

static int nfs_opendir_node(void *l, const struct ff_cred *cred, ff_node *node, void **dhp)
{
	struct nfs_dir *d;
	GPtrArray *ents;
	int rc;

	rc = list_dir(l, cred, node, &ents);
	if (rc)
		return rc;
	d = g_new0(struct nfs_dir, 1);
	g_mutex_init(&d->lock);
	d->ents = ents;
	*dhp = d;
	return 0;
}

static int nfs_readdir_node(void *l, const struct ff_cred *cred, ff_node *node, void *dh, off_t off,
			    bool plus, ff_fill_fn fill, void *buf)
{
	struct nfs_loc *loc = l;
	struct nfs_dir *d = dh;
	int rc = 0;

	g_mutex_lock(&d->lock);
	if (off == 0 && d->read_from) { /* rewinddir(): a fresh listing */
		GPtrArray *ents;

		rc = list_dir(loc, cred, node, &ents);
		if (rc)
			goto out_unlock;
		g_ptr_array_free(d->ents, TRUE);
		d->ents = ents;
	}
	d->read_from = true;
	for (guint i = off < 0 ? 0 : (guint)off; i < d->ents->len; i++) {
		struct nfs_dent *e = d->ents->pdata[i];
		ff_node *child = NULL;
		int r;

		if (plus && e->full) {
			child = child_node(loc, node, e->name);
			node_seen(loc, child, &e->st);
		}
		r = fill(buf, e->name, &e->st, (off_t)i + 1, child, false);
		if (r == FF_FILL_FULL)
			break;
		if (r < 0) {
			rc = r;
			break;
		}
	}
out_unlock:
	g_mutex_unlock(&d->lock);
	return rc;
}

static int nfs_releasedir_node(void *l, void *dh)
{
	struct nfs_dir *d = dh;

	g_ptr_array_free(d->ents, TRUE);
	g_mutex_clear(&d->lock);
	g_free(d);
	return 0;
}

/* ---- the whole location ---------------------------------------------------------------------- */

static int nfs_statfs_loc(void *l, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct op op;
	int rc;

	rc = op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	rc = nfs_statvfs(op.nfs, path, st);
	rc = op_end(&op, rc < 0 ? nfs_map_error(op.nfs, rc) : 0);
	if (rc == 0) {
		if (st->f_namemax == 0 || st->f_namemax > NAME_MAX)
			st->f_namemax = NAME_MAX;
		if (loc->read_only)
			st->f_flag |= ST_RDONLY;
	}
	g_free(path);
	return rc;
}

static const struct ff_backend_ops nfs_ops = {
	.check = nfs_check,
	.mount = nfs_mount_loc,
	.unmount = nfs_unmount_loc,
	.root = nfs_root,
	.lookup = nfs_lookup,
	.forget = nfs_forget,
	.relink = nfs_relink,
	.getattr = nfs_getattr,
	.setattr = nfs_setattr,
	.readlink = nfs_readlink_node,
	.mknod = nfs_mknod_node,
	.mkdir = nfs_mkdir_node,
	.symlink = nfs_symlink_node,
	.link = nfs_link_node,
	.unlink = nfs_unlink_node,
	.rmdir = nfs_rmdir_node,
	.rename = nfs_rename_node,
	.open = nfs_open_file,
	.create = nfs_create_file,
	.read = nfs_read_file,
	.write = nfs_write_file,
	.flush = nfs_flush_file,
	.fsync = nfs_fsync_file,
	.release = nfs_release_file,
	.opendir = nfs_opendir_node,
	.readdir = nfs_readdir_node,
	.releasedir = nfs_releasedir_node,
	.statfs = nfs_statfs_loc,
};

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "nfs",
	.description = "NFSv3 and NFSv4 through libnfs",
	.caps = FF_CAP_PATH_NODES | FF_CAP_POSIX_OWNERS,
	.ops = &nfs_ops,
};
