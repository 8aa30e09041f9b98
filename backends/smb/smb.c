/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb.c - the smb:// backend: SMB2 and SMB3 shares through libsmbclient (Samba 4.17). Nodes are
 * paths (backends/pathtree); each operation builds a URL and runs on a context lent by the pool
 * (smb_pool.c). What SMB has no room for without unix extensions (hard links, symlinks, special
 * files, POSIX owners and modes) is refused or mapped the way the Linux cifs client does.
 * This file holds the locations (URI, credentials, mount), what every operation uses (names,
 * URLs, attributes, smb_run()), statfs and the ops table; the operations are in smb_node.c,
 * smb_file.c, smb_dir.c and smb_xattr.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "backends/smb/smb.h"

#define SMB_BLKSIZE (1 << 20)

/* ---- names, URLs, attributes --------------------------------------------------------------- */

/* SMB reserves these in names ('\\' is its separator, ':' names a stream, the rest are
 * wildcards or invalid); control characters are invalid too. A name ending in '.' or ' ' is
 * made, but Windows semantics drop the ending, so the server lists it under a mangled name
 * ("notes." shows as "NVTVKN~E"): refused as well. */
int smb_check_name(const char *name)
{
	size_t len = strlen(name);

	if (len > SMB_NAME_MAX)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20 || strchr("\\:*?\"<>|", *p))
			return -EINVAL;
	}
	if (name[len - 1] == '.' || name[len - 1] == ' ')
		return -EINVAL;
	if (!g_utf8_validate(name, (gssize)len, NULL))
		return -EINVAL; /* SMB names are Unicode: bytes that are not UTF-8 have no name there */
	return 0;
}

/* libsmbclient decodes %XX in URLs and treats '?' as the start of options and '@' (before the
 * first '/') as user information: encode all but unreserved characters and '/'. */
static void smb_url_encode(GString *out, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (g_ascii_isalnum(*p) || strchr("/-._~", *p)) {
			g_string_append_c(out, (char)*p);
		} else {
			g_string_append_c(out, '%');
			g_string_append_c(out, hex[*p >> 4]);
			g_string_append_c(out, hex[*p & 15]);
		}
	}
}

/*
 * The URL of `node` (plus "/child"), or NULL when the node was unlinked or child is no valid SMB
 * name. The check matters: a '\\' in a name would be a separator to the server, and "..\\x"
 * would leave the location's directory.
 */
char *smb_url(struct smb_loc *loc, struct ff_pathnode *node, const char *child)
{
	GString *url;
	char *path;

	if (child && smb_check_name(child))
		return NULL;
	path = ff_pathtree_path(loc->tree, NULL, node, child);
	if (!path)
		return NULL;
	url = g_string_new(loc->url);
	if (strcmp(path, "/") != 0)
		smb_url_encode(url, path);
	g_free(path);
	return g_string_free(url, FALSE);
}

/* libsmbclient's stat (setup_stat()) encodes the DOS read-only attribute as a missing S_IWUSR. */
bool smb_raw_readonly(const struct stat *st)
{
	return !(st->st_mode & S_IWUSR);
}

/* Ownership and modes as mount.cifs shows them without unix extensions: the location's
 * uid/gid and file_mode/dir_mode, read-only files without write bits. st_ino is the server's
 * file id (Samba: the inode number); st_dev is the location's. */
void smb_fix_stat(struct smb_loc *loc, struct stat *st)
{
	bool dir = S_ISDIR(st->st_mode);
	bool ro = smb_raw_readonly(st);

	st->st_mode = dir ? (S_IFDIR | loc->dir_mode) : (S_IFREG | loc->file_mode);
	if (!dir && ro)
		st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
	st->st_uid = loc->uid;
	st->st_gid = loc->gid;
	st->st_dev = loc->dev;
	st->st_rdev = 0;
	st->st_nlink = dir ? 2 : 1;
	st->st_blksize = SMB_BLKSIZE;
}

/* ---- running operations on pooled contexts -------------------------------------------------- */

/* Raw libsmbclient stat on a context: 0 or -errno; st as libsmbclient fills it. */
int smb_stat_raw(SMBCCTX *ctx, const char *url, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	if (smbc_getFunctionStat(ctx)(ctx, url, st) < 0)
		return smb_err(errno);
	return 0;
}

/*
 * Open (or create) a file on a context: the SMB handle, or NULL and *rc. The DOS read-only
 * attribute refuses every open for writing, root's too (as with mount.cifs). But a handle that
 * had write access and was closed by us (smb_flush(), a rename) must get it back: with
 * `regain`, clear the attribute, open, and set it again, as unlink does; the handle keeps its
 * write access.
 */
SMBCFILE *smb_open_raw(SMBCCTX *ctx, const char *url, int flags, mode_t mode, bool regain, int *rc)
{
	struct stat st;
	SMBCFILE *f;

	f = smbc_getFunctionOpen(ctx)(ctx, url, flags, mode);
	if (f)
		return f;
	*rc = smb_err(errno);
	if (!regain || *rc != -EACCES || (flags & O_ACCMODE) == O_RDONLY)
		return NULL;
	if (smb_stat_raw(ctx, url, &st) != 0 || !S_ISREG(st.st_mode) || !smb_raw_readonly(&st))
		return NULL;
	if (smbc_getFunctionChmod(ctx)(ctx, url, 0644 | S_IXUSR) < 0)
		return NULL;
	f = smbc_getFunctionOpen(ctx)(ctx, url, flags, mode);
	if (!f)
		*rc = smb_err(errno);
	smbc_getFunctionChmod(ctx)(ctx, url, 0444 | S_IXUSR);
	return f;
}

/*
 * What a failed operation really meant. libsmbclient turns every failure to resolve a path on a
 * DFS share (one extra query per operation there) into ENOENT, a timeout and a dead connection
 * included:
 *  - a failure that took (nearly) the whole timeout is a timeout;
 *  - on a DFS share, ENOENT is checked against the location's root on the same context: when
 *    that fails too, the connection is dead;
 *  - with sec=krb5, EINVAL and EACCES are checked the same way: an expired session.
 */
int smb_classify(struct smb_loc *loc, struct smb_conn *conn, int rc, gint64 t0)
{
	gint64 took = g_get_monotonic_time() - t0;
	struct stat st;

	if (rc < 0 && g_atomic_int_get(&conn->interrupted))
		return -EINTR; /* the caller's Ctrl-C ended it (smb_sock.c) */
	if (rc >= 0 || rc == -ETIMEDOUT)
		return rc;
	if (took >= (gint64)loc->timeout_ms * 900)
		return -ETIMEDOUT;
	if (rc == -ENOENT && loc->dfs) {
		/* A name a server does not have is answered at once: one that took half the
		 * timeout is a server that stopped answering, and asking the root on the same
		 * connection would only wait out another timeout. */
		if (took >= (gint64)loc->timeout_ms * 500)
			return -ETIMEDOUT;
		if (smb_stat_raw(conn->ctx, loc->url, &st) != 0)
			return -ECONNRESET;
	}
	if ((rc == -EINVAL || rc == -EACCES) && conn->pool->id->krb5 &&
	    smb_stat_raw(conn->ctx, loc->url, &st) != 0) {
		/* A Kerberos session ends when its ticket does: the server answers every request
		 * NT_STATUS_NETWORK_SESSION_EXPIRED, and libsmbclient cannot log on again by
		 * itself (see smb_krb5.c). Its location's directory, which the logon reached,
		 * fails too: the context goes, and the next logon takes the user's new ticket. */
		return -ECONNRESET;
	}
	return rc;
}

/*
 * Run fn on a context of the pool. When the context's connection turns out to be dead (the
 * server restarted or dropped it), the pool retires it and fn runs once more on a fresh one.
 * A timeout is not retried: it has used the time already (the pool retires that context too).
 */
int smb_run_in(struct smb_pool *pool, bool for_open, smb_op_fn fn, void *arg)
{
	struct smb_loc *loc = pool->loc;
	int rc = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		struct smb_conn *conn;
		gint64 t0;

		rc = smb_pool_get(pool, for_open, &conn);
		if (rc)
			return rc;
		t0 = g_get_monotonic_time();
		rc = smb_classify(loc, conn, fn(loc, conn, arg), t0);
		smb_pool_put(pool, conn, rc);
		if (!smb_err_is_disconnect(rc))
			break;
	}
	return rc;
}

int smb_run(struct smb_loc *loc, const struct ff_cred *cred, bool for_open, smb_op_fn fn, void *arg)
{
	struct smb_pool *pool;
	int rc = smb_pool_of(loc, cred, &pool);

	return rc ? rc : smb_run_in(pool, for_open, fn, arg);
}

/* ---- locations ------------------------------------------------------------------------------ */

struct smb_target {
	char *host;
	int port;
	char *share;
	char *subpath; /* "" or "/a/b" */
	unsigned int connections;
};

static void smb_target_clear(struct smb_target *t)
{
	g_free(t->host);
	g_free(t->share);
	g_free(t->subpath);
	memset(t, 0, sizeof(*t));
}

static int smb_parse_query(const char *query, struct smb_target *t, char **msg)
{
	char **opts;
	int rc = 0;

	t->connections = SMB_DEFAULT_CONNECTIONS;
	if (!query || !*query)
		return 0;
	opts = g_strsplit(query, "&", -1);
	for (char **o = opts; *o; o++) {
		char *end = NULL;
		unsigned long n;

		if (!g_str_has_prefix(*o, "connections=")) {
			*msg = g_strdup_printf("smb URI option '%s' unknown (known: connections)",
					       *o);
			rc = -EINVAL;
			break;
		}
		errno = 0;
		n = strtoul(*o + strlen("connections="), &end, 10);
		if (errno || !end || *end || end == *o + strlen("connections=") || n < 1 ||
		    n > SMB_MAX_CONNECTIONS) {
			*msg = g_strdup_printf("'%s' in smb URI: connections must be 1 to %d", *o,
					       SMB_MAX_CONNECTIONS);
			rc = -EINVAL;
			break;
		}
		t->connections = (unsigned int)n;
	}
	g_strfreev(opts);
	return rc;
}

/* spec -> host, port, share, path below the share; strict, with a message naming the fault. */
static int smb_parse_spec(const struct ff_location_spec *spec, struct smb_target *t, char **msg)
{
	const char *path, *slash;
	char **comps = NULL;
	int rc = -EINVAL;

	memset(t, 0, sizeof(*t));
	if (!spec->scheme || strcmp(spec->scheme, "smb") != 0) {
		*msg = g_strdup_printf("scheme '%s' is not smb", spec->scheme ? spec->scheme : "");
		return -EINVAL;
	}
	if (!spec->host || !*spec->host) {
		*msg = g_strdup("smb URI without a host (smb://host[:port]/share[/path])");
		return -EINVAL;
	}
	for (const char *p = spec->host; *p; p++) {
		if (!g_ascii_isalnum(*p) && *p != '.' && *p != '-' && *p != '_') {
			*msg = g_strdup_printf("smb host '%s': only names and IPv4 addresses are "
					       "supported (libsmbclient URLs take no IPv6 literal)",
					       spec->host);
			return -EINVAL;
		}
	}
	if (spec->port < 0 || spec->port > 65535) {
		*msg = g_strdup_printf("smb port %d out of range", spec->port);
		return -EINVAL;
	}
	if (spec->timeout < 0) {
		*msg = g_strdup("timeout must not be negative");
		return -EINVAL;
	}
	path = spec->path ? spec->path : "/";
	while (*path == '/')
		path++;
	if (!*path) {
		*msg = g_strdup_printf("smb URI '%s' names no share (smb://host/share[/path])",
				       spec->uri ? spec->uri : "");
		return -EINVAL;
	}
	comps = g_strsplit(path, "/", -1);
	for (char **c = comps; *c; c++) {
		if (!**c || smb_check_name(*c)) {
			*msg = g_strdup_printf("smb path component '%s' is not a valid SMB name",
					       *c);
			goto out;
		}
	}
	slash = strchr(path, '/');
	t->host = g_strdup(spec->host);
	t->port = spec->port;
	t->share = slash ? g_strndup(path, (gsize)(slash - path)) : g_strdup(path);
	t->subpath = g_strdup(slash ? slash : "");
	if (strlen(t->subpath) == 1) /* a trailing '/' only */
		t->subpath[0] = '\0';
	rc = smb_parse_query(spec->query, t, msg);
out:
	g_strfreev(comps);
	if (rc)
		smb_target_clear(t);
	return rc;
}

static int smb_check(const struct ff_location_spec *spec, char **msg)
{
	struct smb_target t;
	int rc = smb_parse_spec(spec, &t, msg);

	smb_target_clear(&t);
	if (rc == 0 && spec->krb5 && !smb_krb5_host_ok(spec->host)) {
		/* libsmbclient asks no ticket for an address or localhost: a service principal
		 * is cifs/<name> */
		*msg = g_strdup_printf("%s: sec=krb5 needs the server's host name (as in its "
				       "Kerberos principal), not '%s'",
				       spec->uri, spec->host);
		rc = -EINVAL;
	}
	return rc;
}

static int smb_server_port(const struct ff_location_spec *spec, char **msg)
{
	struct smb_target t;
	int rc = smb_parse_spec(spec, &t, msg);

	if (rc == 0)
		rc = t.port ? t.port : SMB_PORT;
	smb_target_clear(&t);
	return rc;
}

static void smb_loc_free(struct smb_loc *loc)
{
	if (!loc)
		return;
	smb_watch_stop(loc->watch);
	loc->watch = NULL;
	smb_users_free(loc);
	if (loc->krb5)
		smb_krb5_close();
	g_free(loc->krb5_ccache);
	smb_pool_destroy(&loc->pool);
	smb_names_clear(loc);
	ff_pathtree_free(loc->tree);
	if (loc->writers)
		g_thread_pool_free(loc->writers, FALSE, TRUE); /* idle: every file was released */
	if (loc->readers)
		g_thread_pool_free(loc->readers, FALSE, TRUE); /* idle, as the writers */
	if (loc->open) {
		g_cond_clear(&loc->wb_done);
		g_hash_table_destroy(loc->open);
		g_mutex_clear(&loc->wlock);
		g_rw_lock_clear(&loc->gate);
	}
	smb_ident_clear(&loc->id);
	g_free(loc->cred_dir);
	g_free(loc->user_cred);
	g_free(loc->host);
	g_free(loc->share);
	g_free(loc->url);
	g_free(loc->display);
	g_free(loc);
}

static char *smb_mount_msg(struct smb_loc *loc, int rc)
{
	switch (rc) {
	case -EACCES:
		if (loc->id.guest)
			return g_strdup_printf("%s: guest access refused by the server",
					       loc->display);
		return g_strdup_printf("%s: access denied for user '%s%s%s' (wrong user name or "
				       "password, or no access to the share)",
				       loc->display, loc->id.domain ? loc->id.domain : "",
				       loc->id.domain ? "\\" : "", loc->id.user);
	case -ENOENT:
		return g_strdup_printf("%s: no such share or directory", loc->display);
	case -ENOTDIR:
		return g_strdup_printf("%s: not a directory", loc->display);
	case -ETIMEDOUT:
		return g_strdup_printf("%s: no answer within %d ms", loc->display, loc->timeout_ms);
	case -EHOSTUNREACH:
		return g_strdup_printf("%s: host unreachable or unknown", loc->display);
	default:
		return g_strdup_printf("%s: %s", loc->display, g_strerror(-rc));
	}
}

static int smb_mount(const struct ff_location_spec *spec, const struct ff_notify *notify,
		     void **locp, char **msg)
{
	struct smb_target t;
	struct smb_loc *loc;
	struct smb_conn *conn;
	GString *url;
	int rc;

	rc = smb_parse_spec(spec, &t, msg);
	if (rc)
		return rc;
	loc = g_new0(struct smb_loc, 1);
	loc->host = g_steal_pointer(&t.host);
	loc->port = t.port;
	loc->share = g_steal_pointer(&t.share);
	url = g_string_new("smb://");
	g_string_append(url, loc->host);
	if (loc->port)
		g_string_append_printf(url, ":%d", loc->port);
	g_string_append_c(url, '/');
	smb_url_encode(url, loc->share);
	smb_url_encode(url, t.subpath);
	loc->url = g_string_free(url, FALSE);
	loc->display = loc->port ? g_strdup_printf("//%s:%d/%s%s", loc->host, loc->port, loc->share,
						   t.subpath)
				 : g_strdup_printf("//%s/%s%s", loc->host, loc->share, t.subpath);
	loc->timeout_ms = spec->timeout > 0 ? (int)(spec->timeout * 1000) : 15000;
	if (loc->timeout_ms < 100)
		loc->timeout_ms = 100;
	loc->uid = spec->uid_set ? spec->uid : geteuid();
	loc->gid = spec->gid_set ? spec->gid : getegid();
	loc->file_mode = spec->file_mode & 07777;
	loc->dir_mode = spec->dir_mode & 07777;
	if (!loc->file_mode && !loc->dir_mode) { /* spec without modes: the documented defaults */
		loc->file_mode = 0755;
		loc->dir_mode = 0755;
	}
	loc->dev = (dev_t)(((guint64)0x534d42 << 32) | g_str_hash(loc->display));
	loc->connections = t.connections;
	loc->per_user = spec->per_user &&
			(spec->krb5 || spec->credentials_dir || spec->user_credentials);
	if (loc->per_user) {
		/* The server judges every access as its caller; the kernel's own check
		 * (default_permissions), against one set of attributes for all users, must not
		 * refuse first what the server would allow: everybody may read and write, by the
		 * modes shown. */
		loc->file_mode |= 0666;
		loc->dir_mode |= 0777;
	}
	if (loc->per_user && spec->krb5) {
		loc->krb5_ccache = g_strdup(spec->krb5_ccache ? spec->krb5_ccache : FF_KRB5_CCACHE);
	} else if (loc->per_user) {
		loc->cred_dir = g_strdup(spec->credentials_dir);
		loc->user_cred = g_strdup(spec->user_credentials);
	} else if (spec->credentials) {
		rc = smb_read_credentials(AT_FDCWD, spec->credentials, geteuid(), &loc->id, msg);
		if (rc)
			goto out_free;
	} else {
		/* Guest: an anonymous logon, which servers map to their guest account. (A "guest"
		 * user with an empty password never gets that far: libsmbclient's NTLMSSP client
		 * refuses it, NT_STATUS_WRONG_CREDENTIAL_HANDLE.) */
		loc->id.guest = true;
		loc->id.user = g_strdup("");
		loc->id.password = g_strdup("");
	}
	loc->tree = ff_pathtree_new(SMB_NODE_PRIV_FREE);
	loc->read_ahead = spec->read_ahead != 0;
	loc->wb_window =
		(uint64_t)(spec->write_behind < 0 ? FF_WRITE_BEHIND_DEFAULT : spec->write_behind)
		<< 20;
	loc->writers = g_thread_pool_new(smb_wb_run, loc, SMB_WRITERS, FALSE, NULL);
	loc->readers = g_thread_pool_new(smb_ra_run, loc, SMB_READERS, FALSE, NULL);
	g_cond_init(&loc->wb_done);
	g_mutex_init(&loc->wlock);
	g_rw_lock_init(&loc->gate);
	loc->open = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, smb_open_node_free);
	smb_names_init(loc);
	smb_users_init(loc);
	if (!smb_global_ready()) {
		rc = -ENOMEM;
		*msg = g_strdup("libsmbclient could not be initialised");
		goto out_free;
	}
	if (loc->krb5_ccache) { /* after the library's initialisation, which sets KRB5CCNAME */
		rc = smb_krb5_open(msg);
		if (rc)
			goto out_free;
		loc->krb5 = true;
	}
	if (loc->per_user) {
		/* No identity of the location's own to log on with (nor a pool: each caller has
		 * theirs): that the server answers is all there is to know before a caller comes
		 * (whose logon then says the rest). */
		rc = smb_pool_probe(loc);
		if (rc) {
			*msg = smb_mount_msg(loc, rc);
			goto out_free;
		}
		smb_target_clear(&t);
		*locp = loc;
		return 0;
	}
	rc = smb_pool_init(&loc->pool, loc, &loc->id, t.connections);
	if (rc) {
		*msg = g_strdup("libsmbclient could not be initialised");
		goto out_free;
	}
	/* A failed logon here is told through *msg (the core logs it), not logged twice. */
	loc->pool.auth_logged = true;
	rc = smb_pool_get(&loc->pool, false, &conn);
	if (rc) {
		*msg = smb_mount_msg(loc, rc);
		goto out_free;
	}
	/* Is the share a DFS root (see smb_classify())? */
	{
		struct statvfs sv;

		memset(&sv, 0, sizeof(sv));
		if (smbc_getFunctionStatVFS(conn->ctx)(conn->ctx, loc->url, &sv) == 0)
			loc->dfs = (sv.f_flag & SMBC_VFS_FEATURE_DFS) != 0;
	}
	smb_pool_put(&loc->pool, conn, 0);
	if (notify && !loc->per_user)
		loc->watch = smb_watch_start(loc, notify);
	smb_target_clear(&t);
	*locp = loc;
	return 0;

out_free:
	smb_target_clear(&t);
	smb_loc_free(loc);
	return rc;
}

static void smb_unmount(void *loc)
{
	smb_loc_free(loc);
}

/* ---- whole location ------------------------------------------------------------------------- */

static int smb_statfs_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	if (smbc_getFunctionStatVFS(conn->ctx)(conn->ctx, (char *)a->url, &sv) < 0)
		return smb_err(errno);
	*a->sv = sv;
	/* libsmbclient 4.17 puts bytes per sector in f_bsize and sectors per allocation unit in
	 * f_frsize; the counts are in allocation units. */
	if (sv.f_frsize > 0 && sv.f_bsize > 0)
		a->sv->f_bsize = a->sv->f_frsize = sv.f_bsize * sv.f_frsize;
	else if (sv.f_bsize > 0)
		a->sv->f_frsize = sv.f_bsize;
	/* libsmbclient puts its own feature bits (DFS, case-insensitive...) in f_flag. */
	a->sv->f_flag = sv.f_flag & ST_RDONLY;
	a->sv->f_namemax = SMB_NAME_MAX;
	return 0;
}

static int smb_statfs(void *loc_, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	struct smb_loc *loc = loc_;
	struct smb_path_arg a = { 0 };
	int rc;

	a.url = smb_url(loc, smb_pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	a.sv = st;
	rc = smb_run(loc, cred, false, smb_statfs_fn, &a);
	g_free((char *)a.url);
	return rc;
}

/* Watched: changes by others are told as they come; the kernel still keeps what it learnt of
 * the location only for attr-timeout (a watch can be lost on the way). */
static bool smb_watched(void *loc_)
{
	struct smb_loc *loc = loc_;

	return loc->watch != NULL;
}

/* ---- the descriptor ------------------------------------------------------------------------- */

static const struct ff_backend_ops smb_ops = {
	.check = smb_check,
	.mount = smb_mount,
	.unmount = smb_unmount,
	.root = smb_root,
	.lookup = smb_lookup,
	.forget = smb_forget,
	.relink = smb_relink,
	.getattr = smb_getattr,
	.setattr = smb_setattr,
	.mknod = smb_mknod,
	.mkdir = smb_mkdir,
	.unlink = smb_unlink,
	.rmdir = smb_rmdir,
	.rename = smb_rename,
	.open = smb_open,
	.create = smb_create,
	.read = smb_read,
	.write = smb_write,
	.flush = smb_flush,
	.fsync = smb_fsync,
	.release = smb_release,
	.write_behind_bytes = smb_write_behind_bytes,
	.read_held = smb_read_held,
	.read_done = smb_read_done,
	.opendir = smb_opendir,
	.readdir = smb_readdir,
	.releasedir = smb_releasedir,
	.statfs = smb_statfs,
	.setxattr = smb_setxattr,
	.getxattr = smb_getxattr,
	.listxattr = smb_listxattr,
	.removexattr = smb_removexattr,
	.watched = smb_watched,
	.attach = smb_attach,
	.server_port = smb_server_port,
};

extern const struct ff_backend fedfuse_backend;

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "smb",
	.description = "SMB2/SMB3 shares (libsmbclient)",
	.caps = FF_CAP_PATH_NODES | FF_CAP_NOTIFY,
	.ops = &smb_ops,
};
