/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs.c - the NFS backend: nfs://host[:port]/path?version=3|4 locations through libnfs' high-level
 * path API (NFSv3 and NFSv4), with path-named nodes (backends/pathtree), pooled contexts per caller
 * identity (nfs_pool.c) and hand-built NFSv4 COMPOUNDs where libnfs 4.0 is wrong (nfs_v4.c).
 * This file holds the locations (parsing, check, mount, unmount), what every operation uses
 * (paths, attributes, leased contexts), statfs and the ops table; the operations are in
 * nfs_node.c, nfs_file.c and nfs_dir.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

#include "backends/nfs/nfs.h"

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

	if (spec->krb5) {
		/* libnfs 4.0 has no RPCSEC_GSS */
		*msg = g_strdup_printf("%s: sec=krb5 is for smb:// locations; nfs:// sends each "
				       "caller's uid and groups (AUTH_SYS)",
				       spec->uri);
		return -EINVAL;
	}
	return parse_location(spec, &p, msg);
}

static int nfs_server_port(const struct ff_location_spec *spec, char **msg)
{
	struct nfs_params p;
	int rc = parse_location(spec, &p, msg);

	return rc ? rc : p.nfsport ? p.nfsport : NFS_PORT;
}

/* ---- helpers --------------------------------------------------------------------------------- */

char *nfs_pnode_path(struct nfs_loc *loc, struct ff_pathnode *pn, const char *child)
{
	return ff_pathtree_path(loc->tree, *loc->prefix ? loc->prefix : NULL, pn, child);
}

char *nfs_node_path(struct nfs_loc *loc, ff_node *node, const char *child)
{
	return nfs_pnode_path(loc, nfs_pnode(node), child);
}

/* A new node reference for the core, taking over the path node reference `pn`. */
ff_node *nfs_node_new(struct ff_pathnode *pn)
{
	return (ff_node *)pn;
}

/* Remember a directory's attributes, for when it is gone (see node_gone(), nfs_node.c). */
void nfs_node_seen(struct nfs_loc *loc, ff_node *node, const struct stat *st)
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

/* A new node reference for `name` in `parent`. */
ff_node *nfs_child_node(struct nfs_loc *loc, ff_node *parent, const char *name)
{
	return nfs_node_new(ff_pathtree_child(loc->tree, nfs_pnode(parent), name));
}

/* The path from the server's (pseudo) root, for our own NFSv4 COMPOUNDs. */
char *nfs_v4_path(struct nfs_loc *loc, const char *path)
{
	if (strcmp(loc->mount_path, "/") == 0)
		return g_strdup(path);
	if (strcmp(path, "/") == 0)
		return g_strdup(loc->mount_path);
	return g_strconcat(loc->mount_path, path, NULL);
}

/* lstat of `path` (below the mount) on a leased context. */
int nfs_do_lstat(struct nfs_loc *loc, struct nfs_context *nfs, const char *path, struct stat *st)
{
	char *full;
	int rc;

	if (loc->version == 3)
		return nfs3_lstat(loc, nfs, path, st);
	full = nfs_v4_path(loc, path);
	rc = nfs4_getattr(loc, nfs, full, st);
	g_free(full);
	return rc;
}

/* Lease a context of the caller; `avoid`: see nfs_conn_get(). */
int nfs_op_begin_avoid(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred,
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

int nfs_op_begin(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred)
{
	return nfs_op_begin_avoid(op, loc, cred, NULL);
}

/* Begin an operation on `child` of `node` (NULL: on `node` itself): a leased context, and the
 * path in *path, which the caller frees after nfs_op_end(). Nothing to undo when it fails. */
int nfs_op_begin_at(struct nfs_op *op, struct nfs_loc *loc, const struct ff_cred *cred,
		    ff_node *node, const char *child, char **path)
{
	int rc;

	*path = nfs_node_path(loc, node, child);
	if (!*path)
		return -ESTALE;
	rc = nfs_op_begin(op, loc, cred);
	if (rc) {
		g_free(*path);
		*path = NULL;
	}
	return rc;
}

int nfs_op_end(struct nfs_op *op, int rc)
{
	nfs_conn_put(op->conn, rc);
	return rc;
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
	nfs_fhcache_free(loc->fhc);
	if (loc->v3_root)
		g_byte_array_free(loc->v3_root, TRUE);
	if (loc->locks)
		g_hash_table_destroy(loc->locks);
	g_mutex_clear(&loc->locks_lock);
	g_hash_table_destroy(loc->wb_files);
	g_mutex_clear(&loc->wb_lock);
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
	rc = nfs_do_lstat(loc, nfs, *loc->prefix ? loc->prefix : "/", &st);
	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc)
		*msg = g_strdup_printf("%s: %s: %s", loc->uri, path, g_strerror(-rc));
	else
		loc->root_dev = st.st_dev;
	nfs_context_free(nfs);
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
	g_mutex_init(&loc->locks_lock);
	loc->locks =
		g_hash_table_new_full(nfs_lockref_hash, nfs_lockref_equal, nfs_lockref_free, NULL);
	loc->wb_bytes = (spec->write_behind < 0 ? FF_WRITE_BEHIND_DEFAULT : spec->write_behind)
			<< 20;
	loc->ra_bytes = (uint64_t)(spec->read_ahead < 0 ? FF_READ_AHEAD_DEFAULT : spec->read_ahead)
			<< 20;
	g_mutex_init(&loc->wb_lock);
	loc->wb_files = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
	nfs_pool_init(loc);
	rc = mount_probe(loc, spec->path, msg);
	if (rc)
		goto out_free;
	loc->tree = ff_pathtree_new(g_free);
	loc->fhc = nfs_fhcache_new(spec->attr_timeout, loc->version == 4);
	if (loc->version == 4)
		loc->renewer = nfs4_renewer_start(loc);
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

	nfs4_renewer_stop(loc->renewer);
	nfs_pool_destroy(loc);
	loc_free(loc);
}

/* ---- the whole location ---------------------------------------------------------------------- */

static int nfs_statfs_loc(void *l, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	struct nfs_loc *loc = l;
	char *path;
	struct nfs_op op;
	int rc;

	rc = nfs_op_begin_at(&op, loc, cred, node, NULL, &path);
	if (rc)
		return rc;
	rc = nfs_op_end(&op, nfs_sync_statvfs(op.nfs, path, st));
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
	.read_held = nfs_read_held,
	.read_done = nfs_read_done,
	.write = nfs_write_file,
	.flush = nfs_flush_file,
	.fsync = nfs_fsync_file,
	.release = nfs_release_file,
	.opendir = nfs_opendir_node,
	.readdir = nfs_readdir_node,
	.releasedir = nfs_releasedir_node,
	.statfs = nfs_statfs_loc,

	.attach = nfs_attach,
	.server_port = nfs_server_port,
	.server_lock = nfs_server_lock,
	.write_behind_bytes = nfs_write_behind_bytes,
};

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "nfs",
	.description = "NFSv3 and NFSv4 through libnfs",
	.caps = FF_CAP_PATH_NODES | FF_CAP_POSIX_OWNERS,
	.ops = &nfs_ops,
};
