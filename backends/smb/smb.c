/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb.c - the smb:// backend: SMB2 and SMB3 shares through libsmbclient (Samba 4.17). Nodes are
 * paths (pathnode.c); each operation builds a URL and runs on a context lent by the pool
 * (smb_pool.c). What SMB has no room for without unix extensions (hard links, symlinks, special
 * files, POSIX owners and modes) is refused or mapped the way the Linux cifs client does.
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

#define SMB_CRED_MAX 4096 /* a credentials file is a few lines */
#define SMB_NAME_MAX 255  /* and libsmbclient's fstring buffers for user/password/domain */
#define SMB_XATTR_MAX (1 << 20)
#define SMB_BLKSIZE (1 << 20)

/*
 * An open file. It lives on the context that opened it (see struct smb_conn). `file` is NULL
 * after smb_flush() closed a written SMB handle (see there); the next operation on the handle
 * opens the file again on the same context, which keeps it counted (nfiles) until release.
 * `file` and `dirty` change only with the context checked out, or with the gate held for
 * writing (smb_rename_open()).
 */
struct smb_file {
	struct smb_conn *conn; /* NULL: lost across a rename, every operation is EIO */
	SMBCFILE *file;
	int flags;		  /* as the caller opened it */
	struct ff_pathnode *node; /* reference */
	bool no_fstat;		  /* a write-only SMB handle may not read its attributes */
	bool dirty;		  /* written through this SMB handle: its close moves mtime */
	gint64 t0;		  /* start of the running operation (its context is held) */
};

/*
 * The open handles of one node (loc->open, under loc->wlock).
 *
 * Explicit times set on a file while it is open for writing: Samba updates the write time of a
 * written file at close (its delayed write time), over a time set in between through another
 * handle when that came within two seconds of the first write, and libsmbclient can only set
 * times through another handle. So such times are set again after each close of an SMB handle
 * that wrote (in smb_flush() or smb_release()), until the last writer is released (cp -p, tar x
 * and touch -r on an open file keep their mtime). A write after them cancels that.
 *
 * The handles themselves: libsmbclient opens without FILE_SHARE_DELETE, so the server refuses to
 * rename an open file (or a directory with open files below). A rename that fails so while
 * handles of ours are open below its source closes them, renames, and opens them again at the
 * new path (smb_rename_open()); the core's silly rename of unlinked open files relies on it.
 */
struct smb_open_node {
	GPtrArray *fhs; /* struct smb_file * */
	unsigned int writers;
	bool times_pending;
	struct timeval tv[2];
};

static void smb_open_node_free(gpointer p)
{
	struct smb_open_node *o = p;

	g_ptr_array_free(o->fhs, TRUE);
	g_free(o);
}

struct smb_dirent {
	char *name;
	struct stat st;
};

/*
 * An open directory. libsmbclient fetches a whole listing at opendir anyway (one QUERY_DIRECTORY
 * round trip per batch, with attributes and file ids), so the listing is copied here and the
 * context goes back to the pool at once: an open directory pins no connection, and offsets
 * are plain indices (entry i resumes at i + 1), valid for the life of the handle.
 */
struct smb_dir {
	GMutex lock;
	struct ff_pathnode *node; /* reference: a rewind lists the directory again by path */
	GArray *ents;		  /* struct smb_dirent */
	bool served;		  /* entries were handed out: offset 0 means rewinddir() */
};

static inline struct ff_pathnode *pn(ff_node *node)
{
	return (struct ff_pathnode *)node;
}

/* ---- names, URLs, attributes --------------------------------------------------------------- */

/* SMB reserves these in names ('\\' is its separator, ':' names a stream, the rest are
 * wildcards or invalid); control characters are invalid too. */
static int smb_check_name(const char *name)
{
	if (strlen(name) > SMB_NAME_MAX)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20 || strchr("\\:*?\"<>|", *p))
			return -EINVAL;
	}
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
static char *smb_url(struct smb_loc *loc, struct ff_pathnode *node, const char *child)
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
static bool smb_raw_readonly(const struct stat *st)
{
	return !(st->st_mode & S_IWUSR);
}

/* Ownership and modes as mount.cifs shows them without unix extensions: the location's
 * uid/gid and file_mode/dir_mode, read-only files without write bits. st_ino is the server's
 * file id (Samba: the inode number); st_dev is the location's. */
static void smb_fix_stat(struct smb_loc *loc, struct stat *st)
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
static int smb_stat_raw(SMBCCTX *ctx, const char *url, struct stat *st)
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
static SMBCFILE *smb_open_raw(SMBCCTX *ctx, const char *url, int flags, mode_t mode, bool regain,
			      int *rc)
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

typedef int (*smb_op_fn)(struct smb_loc *loc, struct smb_conn *conn, void *arg);

/*
 * What a failed operation really meant. libsmbclient turns every failure to resolve a path on a
 * DFS share (one extra query per operation there) into ENOENT, a timeout and a dead connection
 * included:
 *  - a failure that took (nearly) the whole timeout is a timeout;
 *  - on a DFS share, ENOENT is checked against the location's root on the same context: when
 *    that fails too, the connection is dead.
 */
static int smb_classify(struct smb_loc *loc, struct smb_conn *conn, int rc, gint64 t0)
{
	struct stat st;

	if (rc >= 0 || rc == -ETIMEDOUT)
		return rc;
	if (g_get_monotonic_time() - t0 >= (gint64)loc->timeout_ms * 900)
		return -ETIMEDOUT;
	if (rc == -ENOENT && loc->dfs && smb_stat_raw(conn->ctx, loc->url, &st) != 0)
		return -ECONNRESET;
	return rc;
}

/*
 * Run fn on a context of the pool. When the context's connection turns out to be dead (the
 * server restarted or dropped it), the pool retires it and fn runs once more on a fresh one.
 * A timeout is not retried: it has used the time already (the pool retires that context too).
 */
static int smb_run(struct smb_loc *loc, bool for_open, smb_op_fn fn, void *arg)
{
	int rc = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		struct smb_conn *conn;
		gint64 t0;

		rc = smb_pool_get(&loc->pool, for_open, &conn);
		if (rc)
			return rc;
		t0 = g_get_monotonic_time();
		rc = smb_classify(loc, conn, fn(loc, conn, arg), t0);
		smb_pool_put(&loc->pool, conn, rc);
		if (!smb_err_is_disconnect(rc))
			break;
	}
	return rc;
}

/* open(2) flags for libsmbclient (cli_open: access mode, create disposition, O_SYNC as
 * write-through). Not O_APPEND: libsmbclient would seek to the end once, with an attribute
 * query a write-only handle may not make; smb_write() appends by itself. */
static int smb_open_flags(int flags)
{
	int out = flags & (O_ACCMODE | O_TRUNC | O_CREAT | O_EXCL);

	if ((flags & O_SYNC) == O_SYNC)
		out |= O_SYNC;
	return out;
}

/* open(2) flags for opening a handle's file again: what it was opened with, less what only
 * the first open may do. */
static int smb_reopen_flags(int flags)
{
	return smb_open_flags(flags) & ~(O_CREAT | O_EXCL | O_TRUNC);
}

/* Open fh's file again on its own context (checked out), after smb_flush() closed it. */
static int smb_fh_reopen(struct smb_loc *loc, struct smb_file *fh)
{
	char *url = smb_url(loc, fh->node, NULL);
	SMBCFILE *f;
	int rc = 0;

	if (!url)
		return -ESTALE;
	f = smb_open_raw(fh->conn->ctx, url, smb_reopen_flags(fh->flags), 0, true, &rc);
	g_free(url);
	if (f)
		fh->file = f;
	return rc;
}

/*
 * A handle's operations run on its own context, inside the gate (see struct smb_open_node);
 * a lost connection loses the file: EIO. With `need_file`, a handle that smb_flush() closed
 * is opened again first; a file that went away meanwhile is ESTALE, as NFS clients say.
 */
static int smb_fh_begin(struct smb_loc *loc, struct smb_file *fh, bool need_file)
{
	int rc = -EIO; /* no context: the file could not be opened again after a rename */

	g_rw_lock_reader_lock(&loc->gate);
	if (fh->conn)
		rc = smb_pool_get_conn(&loc->pool, fh->conn, false);
	fh->t0 = g_get_monotonic_time();
	if (rc == 0 && need_file && !fh->file) {
		rc = smb_classify(loc, fh->conn, smb_fh_reopen(loc, fh), fh->t0);
		if (rc) {
			smb_pool_put(&loc->pool, fh->conn, rc);
			if (smb_err_is_disconnect(rc))
				rc = -EIO;
			else if (rc == -ENOENT)
				rc = -ESTALE;
		}
	}
	if (rc)
		g_rw_lock_reader_unlock(&loc->gate);
	return rc;
}

static int smb_fh_end(struct smb_loc *loc, struct smb_file *fh, int rc)
{
	rc = smb_classify(loc, fh->conn, rc, fh->t0);
	smb_pool_put(&loc->pool, fh->conn, rc);
	g_rw_lock_reader_unlock(&loc->gate);
	return smb_err_is_disconnect(rc) ? -EIO : rc;
}

struct smb_stat_arg {
	const char *url;
	struct stat *st;
};

static int smb_stat_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_stat_arg *a = arg;
	int rc = smb_stat_raw(conn->ctx, a->url, a->st);

	if (rc == 0)
		smb_fix_stat(loc, a->st);
	return rc;
}

static int smb_stat_url(struct smb_loc *loc, const char *url, struct stat *st)
{
	struct smb_stat_arg a = { .url = url, .st = st };

	return smb_run(loc, false, smb_stat_fn, &a);
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
			*msg = g_strdup_printf("connections= in smb URI must be 1 to %d",
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
	return rc;
}

static bool smb_key_is(const char *key, const char *const *names)
{
	for (; *names; names++) {
		if (g_ascii_strcasecmp(key, *names) == 0)
			return true;
	}
	return false;
}

/*
 * The mount.cifs credentials format, strictly: "username=", "password=", "domain=" lines (also
 * user=, pass=, dom=, workgroup=), blank lines and '#' comments; the value is the rest of the
 * line, verbatim for the password. Unknown keys, repeated keys and lines without '=' are
 * errors. Messages name the line, never its text (it might be a password).
 */
static int smb_parse_credentials(char *buf, size_t len, const char *path, struct smb_loc *loc,
				 char **msg)
{
	static const char *const user_keys[] = { "username", "user", NULL };
	static const char *const pass_keys[] = { "password", "pass", NULL };
	static const char *const dom_keys[] = { "domain", "dom", "workgroup", NULL };
	char *user = NULL, *pass = NULL, *dom = NULL, *sep;
	char *line = buf, *end = buf + len;
	int lineno = 0;

	if (memchr(buf, '\0', len)) {
		*msg = g_strdup_printf("credentials file %s contains a NUL byte", path);
		return -EINVAL;
	}
	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		char *eol = nl ? nl : end;
		char *p = line, *eq, *k;
		char **slot;

		lineno++;
		*eol = '\0'; /* buf has room for one more byte */
		if (eol > line && eol[-1] == '\r')
			eol[-1] = '\0';
		line = eol + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		eq = strchr(p, '=');
		if (!eq) {
			*msg = g_strdup_printf("%s:%d: expected key=value", path, lineno);
			return -EINVAL;
		}
		for (k = eq; k > p && (k[-1] == ' ' || k[-1] == '\t'); k--)
			;
		*k = '\0';
		if (smb_key_is(p, user_keys)) {
			slot = &user;
		} else if (smb_key_is(p, pass_keys)) {
			slot = &pass;
		} else if (smb_key_is(p, dom_keys)) {
			slot = &dom;
		} else {
			*msg = g_strdup_printf("%s:%d: unknown key (username=, password=, domain=)",
					       path, lineno);
			return -EINVAL;
		}
		if (*slot) {
			const char *what = slot == &user ? "username" : "domain";

			if (slot == &pass)
				what = "password";
			*msg = g_strdup_printf("%s:%d: %s given twice", path, lineno, what);
			return -EINVAL;
		}
		*slot = eq + 1;
	}
	if (user)
		user = g_strstrip(user);
	if (dom)
		dom = g_strstrip(dom);
	if (!user || !*user) {
		*msg = g_strdup_printf("credentials file %s has no username=", path);
		return -EINVAL;
	}
	/* "DOMAIN\user" and "DOMAIN/user", as mount.cifs accepts them. */
	sep = strpbrk(user, "\\/");
	if (sep) {
		if (dom && *dom) {
			*msg = g_strdup_printf("credentials file %s: domain given twice (username= "
					       "DOMAIN\\user and domain=)",
					       path);
			return -EINVAL;
		}
		*sep = '\0';
		dom = user;
		user = sep + 1;
		if (!*user || !*dom) {
			*msg = g_strdup_printf("credentials file %s: malformed DOMAIN\\user", path);
			return -EINVAL;
		}
	}
	if (strlen(user) > SMB_NAME_MAX || (dom && strlen(dom) > SMB_NAME_MAX) ||
	    (pass && strlen(pass) > SMB_NAME_MAX)) {
		*msg = g_strdup_printf("credentials file %s: a value is longer than %d bytes "
				       "(libsmbclient's limit)",
				       path, SMB_NAME_MAX);
		return -EINVAL;
	}
	loc->user = g_strdup(user);
	loc->domain = dom && *dom ? g_strdup(dom) : NULL;
	loc->password_len = pass ? strlen(pass) : 0;
	loc->password = g_malloc(loc->password_len + 1);
	memcpy(loc->password, pass ? pass : "", loc->password_len + 1);
	return 0;
}

/* Read the credentials file, re-checking what the core checked at load time: a regular file
 * of ours that neither group nor others may access. Every copy of its text is wiped. */
static int smb_read_credentials(const char *path, struct smb_loc *loc, char **msg)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		*msg = g_strdup_printf("credentials file %s: %s", path, g_strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		*msg = g_strdup_printf("credentials file %s: %s", path, g_strerror(-rc));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		*msg = g_strdup_printf("credentials file %s is not a regular file", path);
		rc = -EINVAL;
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		*msg = g_strdup_printf("credentials file %s is owned by uid %u, not by the user "
				       "running fedfuse (%u)",
				       path, (unsigned int)st.st_uid, (unsigned int)geteuid());
		rc = -EACCES;
		goto out_close;
	}
	if (st.st_mode & 077) {
		*msg = g_strdup_printf("credentials file %s may be accessed by group or others "
				       "(mode %04o); chmod 600 it",
				       path, (unsigned int)(st.st_mode & 07777));
		rc = -EACCES;
		goto out_close;
	}
	buf = g_malloc0(SMB_CRED_MAX + 2);
	for (;;) {
		ssize_t n = read(fd, buf + len, SMB_CRED_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			*msg = g_strdup_printf("credentials file %s: %s", path, g_strerror(-rc));
			goto out_wipe;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > SMB_CRED_MAX) {
			*msg = g_strdup_printf("credentials file %s is larger than %d bytes", path,
					       SMB_CRED_MAX);
			rc = -EINVAL;
			goto out_wipe;
		}
	}
	rc = smb_parse_credentials(buf, len, path, loc, msg);
out_wipe:
	explicit_bzero(buf, SMB_CRED_MAX + 2);
	g_free(buf);
out_close:
	close(fd);
	return rc;
}

static void smb_loc_free(struct smb_loc *loc)
{
	if (!loc)
		return;
	smb_pool_destroy(&loc->pool);
	ff_pathtree_free(loc->tree);
	if (loc->open) {
		g_hash_table_destroy(loc->open);
		g_mutex_clear(&loc->wlock);
		g_rw_lock_clear(&loc->gate);
	}
	if (loc->password) {
		explicit_bzero(loc->password, loc->password_len);
		g_free(loc->password);
	}
	g_free(loc->host);
	g_free(loc->share);
	g_free(loc->url);
	g_free(loc->display);
	g_free(loc->user);
	g_free(loc->domain);
	g_free(loc);
}

static char *smb_mount_msg(struct smb_loc *loc, int rc)
{
	switch (rc) {
	case -EACCES:
		if (loc->guest)
			return g_strdup_printf("%s: guest access refused by the server",
					       loc->display);
		return g_strdup_printf("%s: access denied for user '%s%s%s' (wrong user name or "
				       "password, or no access to the share)",
				       loc->display, loc->domain ? loc->domain : "",
				       loc->domain ? "\\" : "", loc->user);
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
		loc->file_mode = 0644;
		loc->dir_mode = 0755;
	}
	loc->dev = (dev_t)(((guint64)0x534d42 << 32) | g_str_hash(loc->display));
	if (spec->credentials) {
		rc = smb_read_credentials(spec->credentials, loc, msg);
		if (rc)
			goto out_free;
	} else {
		/* Guest: an anonymous logon, which servers map to their guest account. (A "guest"
		 * user with an empty password never gets that far: libsmbclient's NTLMSSP client
		 * refuses it, NT_STATUS_WRONG_CREDENTIAL_HANDLE.) */
		loc->guest = true;
		loc->user = g_strdup("");
		loc->password = g_strdup("");
	}
	loc->tree = ff_pathtree_new();
	g_mutex_init(&loc->wlock);
	g_rw_lock_init(&loc->gate);
	loc->open = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, smb_open_node_free);
	rc = smb_pool_init(&loc->pool, loc, t.connections);
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

/* ---- nodes ---------------------------------------------------------------------------------- */

static int smb_root(void *loc_, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	int rc = smb_stat_url(loc, loc->url, st);

	if (rc == 0)
		*node = (ff_node *)ff_pathtree_root(loc->tree);
	return rc;
}

static int smb_lookup(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	char *url;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc == -EINVAL ? -ENOENT : rc; /* such a name cannot exist on SMB */
	url = smb_url(loc, pn(parent), name);
	if (!url)
		return -ENOENT;
	rc = smb_stat_url(loc, url, st);
	if (rc == 0)
		*node = (ff_node *)ff_pathtree_child(loc->tree, pn(parent), name);
	g_free(url);
	return rc;
}

static void smb_forget(void *loc_, ff_node *node)
{
	struct smb_loc *loc = loc_;

	ff_pathtree_unref(loc->tree, pn(node));
}

static void smb_relink(void *loc_, ff_node *keep, ff_node *fresh)
{
	struct smb_loc *loc = loc_;

	ff_pathtree_relink(loc->tree, pn(keep), pn(fresh));
}

/* Attributes through the handle; a write-only SMB handle has no FILE_READ_ATTRIBUTES, so those
 * go by path on the same context, as they do for a handle smb_flush() closed. Called with the
 * handle's context checked out. */
static int smb_fh_stat(struct smb_loc *loc, struct smb_file *fh, struct stat *st)
{
	SMBCCTX *ctx = fh->conn->ctx;
	char *url;
	int rc;

	if (!fh->no_fstat && fh->file) {
		memset(st, 0, sizeof(*st));
		if (smbc_getFunctionFstat(ctx)(ctx, fh->file, st) == 0) {
			smb_fix_stat(loc, st);
			return 0;
		}
		rc = smb_err(errno);
		if (smb_err_is_disconnect(rc) || rc == -ETIMEDOUT)
			return rc;
		fh->no_fstat = true;
	}
	url = smb_url(loc, fh->node, NULL);
	if (!url)
		return -ESTALE;
	rc = smb_stat_raw(ctx, url, st);
	if (rc == 0)
		smb_fix_stat(loc, st);
	g_free(url);
	return rc;
}

static int smb_getattr(void *loc_, const struct ff_cred *cred, ff_node *node, void *fh_,
		       struct stat *st)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	char *url;
	int rc;

	if (fh) {
		rc = smb_fh_begin(loc, fh, false);
		if (rc)
			return rc;
		rc = smb_fh_stat(loc, fh, st);
		return smb_fh_end(loc, fh, rc);
	}
	url = smb_url(loc, pn(node), NULL);
	if (!url)
		return -ESTALE;
	rc = smb_stat_url(loc, url, st);
	g_free(url);
	return rc;
}

struct smb_path_arg {
	const char *url;
	const char *url2;
	off_t size;
	mode_t mode;
	struct timeval tv[2];
	struct stat *st;
	struct statvfs *sv;
	unsigned int flags;
};

static int smb_truncate_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *f;
	int rc = 0;

	f = smb_open_raw(ctx, a->url, O_WRONLY, 0, false, &rc);
	if (!f)
		return rc;
	if (smbc_getFunctionFtruncate(ctx)(ctx, f, a->size) < 0)
		rc = smb_err(errno);
	if (smbc_getFunctionClose(ctx)(ctx, f) < 0 && rc == 0)
		rc = smb_err(errno);
	return rc;
}

static int smb_chmod_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionChmod(conn->ctx)(conn->ctx, a->url, a->mode) < 0)
		return smb_err(errno);
	return 0;
}

static int smb_utimes_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionUtimes(conn->ctx)(conn->ctx, a->url, a->tv) < 0)
		return smb_err(errno);
	return 0;
}

static int smb_fh_truncate(struct smb_loc *loc, struct smb_file *fh, off_t size)
{
	int rc = smb_fh_begin(loc, fh, true);

	if (rc)
		return rc;
	if (smbc_getFunctionFtruncate(fh->conn->ctx)(fh->conn->ctx, fh->file, size) < 0)
		rc = smb_err(errno);
	return smb_fh_end(loc, fh, rc);
}

/* A handle of fh->node opened. */
static void smb_opened(struct smb_loc *loc, struct smb_file *fh)
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, fh->node);
	if (!o) {
		o = g_new0(struct smb_open_node, 1);
		o->fhs = g_ptr_array_new();
		g_hash_table_insert(loc->open, fh->node, o);
	}
	g_ptr_array_add(o->fhs, fh);
	if ((fh->flags & O_ACCMODE) != O_RDONLY)
		o->writers++;
	g_mutex_unlock(&loc->wlock);
}

/* Explicit times are pending on `node`: true, and the times. */
static bool smb_times_pending(struct smb_loc *loc, struct ff_pathnode *node, struct timeval tv[2])
{
	struct smb_open_node *o;
	bool pending = false;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o && o->times_pending) {
		pending = true;
		tv[0] = o->tv[0];
		tv[1] = o->tv[1];
	}
	g_mutex_unlock(&loc->wlock);
	return pending;
}

/* A handle was released; `dirty` when its SMB handle, closed just now, had written. True (and
 * the times) when pending times must be set again; the last writer forgets them. */
static bool smb_closed(struct smb_loc *loc, struct smb_file *fh, bool dirty, struct timeval tv[2])
{
	struct smb_open_node *o;
	bool pending = false;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, fh->node);
	if (o) {
		g_ptr_array_remove_fast(o->fhs, fh);
		if (dirty && o->times_pending) {
			pending = true;
			tv[0] = o->tv[0];
			tv[1] = o->tv[1];
		}
		if ((fh->flags & O_ACCMODE) != O_RDONLY && --o->writers == 0)
			o->times_pending = false;
		if (o->fhs->len == 0)
			g_hash_table_remove(loc->open, fh->node);
	}
	g_mutex_unlock(&loc->wlock);
	return pending;
}

/* Times were set on `node`: remember them while it has writers. */
static void smb_times_set(struct smb_loc *loc, struct ff_pathnode *node, const struct timeval tv[2])
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o && o->writers > 0) {
		o->times_pending = true;
		o->tv[0] = tv[0];
		o->tv[1] = tv[1];
	}
	g_mutex_unlock(&loc->wlock);
}

/* A write through `node`: it moves mtime, so earlier explicit times are history. */
static void smb_times_written(struct smb_loc *loc, struct ff_pathnode *node)
{
	struct smb_open_node *o;

	g_mutex_lock(&loc->wlock);
	o = g_hash_table_lookup(loc->open, node);
	if (o)
		o->times_pending = false;
	g_mutex_unlock(&loc->wlock);
}

/* The open handles at `path` or below it (path as ff_pathtree_path() gives it). */
static GPtrArray *smb_open_below(struct smb_loc *loc, const char *path)
{
	GPtrArray *out = g_ptr_array_new();
	size_t len = strlen(path);
	GHashTableIter it;
	gpointer key, value;

	g_mutex_lock(&loc->wlock);
	g_hash_table_iter_init(&it, loc->open);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		struct smb_open_node *o = value;
		char *p = ff_pathtree_path(loc->tree, NULL, key, NULL);

		if (p && strncmp(p, path, len) == 0 && (p[len] == '\0' || p[len] == '/')) {
			for (guint i = 0; i < o->fhs->len; i++)
				g_ptr_array_add(out, o->fhs->pdata[i]);
		}
		g_free(p);
	}
	g_mutex_unlock(&loc->wlock);
	return out;
}

static void smb_pick_time(struct timeval *tv, unsigned int to_set, unsigned int bit,
			  unsigned int now_bit, const struct timespec *given,
			  const struct timespec *cur)
{
	const struct timespec *ts = (to_set & bit) ? given : cur;

	if (to_set & now_bit) {
		gint64 now = g_get_real_time();

		tv->tv_sec = (time_t)(now / G_USEC_PER_SEC);
		tv->tv_usec = (suseconds_t)(now % G_USEC_PER_SEC);
		return;
	}
	tv->tv_sec = ts->tv_sec;
	tv->tv_usec = (suseconds_t)(ts->tv_nsec / 1000);
}

/*
 * Size through ftruncate (on the caller's handle when it can write, else on a handle of our
 * own); times through utimes. Modes, like mount.cifs without unix extensions: only "may anybody
 * write" is kept, as the DOS read-only attribute of files (chmod a-w sets it, chmod u+w clears
 * it); other bits and directories' modes are accepted and not stored. Owners cannot be stored:
 * chown is accepted and ignored, as cifs does.
 */
static int smb_setattr(void *loc_, const struct ff_cred *cred, ff_node *node, void *fh_,
		       const struct stat *attr, unsigned int to_set, struct stat *st)
{
	const int times = FF_SET_ATIME | FF_SET_MTIME | FF_SET_ATIME_NOW | FF_SET_MTIME_NOW;
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	struct smb_path_arg a = { 0 };
	struct stat cur;
	char *url;
	int rc = 0;

	url = smb_url(loc, pn(node), NULL);
	if (!url)
		return -ESTALE;
	a.url = url;
	if (to_set & FF_SET_SIZE) {
		if (attr->st_size < 0) {
			rc = -EINVAL;
			goto out;
		}
		if (fh && (fh->flags & O_ACCMODE) != O_RDONLY) {
			rc = smb_fh_truncate(loc, fh, attr->st_size);
		} else {
			a.size = attr->st_size;
			rc = smb_run(loc, false, smb_truncate_fn, &a);
		}
		if (rc == -EINVAL)
			rc = -EFBIG; /* the server's EFBIG comes back so (the size is >= 0) */
		if (rc)
			goto out;
		smb_times_written(loc, pn(node)); /* it moved mtime, as a write does */
	}
	if (to_set & (FF_SET_MODE | times)) {
		rc = smb_getattr(loc, cred, node, fh, &cur);
		if (rc)
			goto out;
	}
	if ((to_set & FF_SET_MODE) && S_ISREG(cur.st_mode)) {
		bool want_ro = !(attr->st_mode & 0222);
		/* Unknown when file_mode has no write bit itself: then always tell the server. */
		bool is_ro = (loc->file_mode & 0222) ? !(cur.st_mode & 0222) : !want_ro;

		if (want_ro != is_ro) {
			/* libsmbclient maps S_IXUSR to ARCHIVE ("needs backup", as any write
			 * leaves it) and clears SYSTEM/HIDDEN. */
			a.mode = (want_ro ? 0444 : 0644) | S_IXUSR;
			rc = smb_run(loc, false, smb_chmod_fn, &a);
			if (rc)
				goto out;
		}
	}
	if (to_set & times) {
		smb_pick_time(&a.tv[0], to_set, FF_SET_ATIME, FF_SET_ATIME_NOW, &attr->st_atim,
			      &cur.st_atim);
		smb_pick_time(&a.tv[1], to_set, FF_SET_MTIME, FF_SET_MTIME_NOW, &attr->st_mtim,
			      &cur.st_mtim);
		rc = smb_run(loc, false, smb_utimes_fn, &a);
		if (rc)
			goto out;
		smb_times_set(loc, pn(node), a.tv);
	}
	rc = smb_getattr(loc, cred, node, fh, st);
out:
	g_free(url);
	return rc;
}

/* ---- files ---------------------------------------------------------------------------------- */

struct smb_open_arg {
	const char *url;
	int flags;
	mode_t mode;
	bool reopen; /* the handle had this access before (smb_rename_open()) */
	struct smb_file *fh;
	struct stat *st; /* create: attributes of the new file */
};

static int smb_open_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_open_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *f;
	int rc = 0;

	f = smb_open_raw(ctx, a->url, a->flags, a->mode, a->reopen, &rc);
	if (!f)
		return rc;
	a->fh->conn = conn;
	a->fh->file = f;
	a->fh->dirty = false;
	if (a->st) {
		memset(a->st, 0, sizeof(*a->st));
		if (smbc_getFunctionFstat(ctx)(ctx, f, a->st) == 0) {
			smb_fix_stat(loc, a->st);
		} else {
			rc = smb_stat_raw(ctx, a->url, a->st); /* write-only handle */
			if (rc) {
				smbc_getFunctionClose(ctx)(ctx, f);
				return rc;
			}
			a->fh->no_fstat = true;
			smb_fix_stat(loc, a->st);
		}
	}
	smb_pool_file_opened(&loc->pool, conn);
	return 0;
}

static int smb_open(void *loc_, const struct ff_cred *cred, ff_node *node, int flags, void **fhp)
{
	struct smb_loc *loc = loc_;
	struct smb_open_arg a = { 0 };
	int rc;

	a.url = smb_url(loc, pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	a.flags = smb_open_flags(flags) & ~(O_CREAT | O_EXCL);
	a.fh = g_new0(struct smb_file, 1);
	a.fh->flags = flags;
	rc = smb_run(loc, true, smb_open_fn, &a);
	if (rc) {
		g_free(a.fh);
	} else {
		ff_pathtree_ref(loc->tree, pn(node));
		a.fh->node = pn(node);
		smb_opened(loc, a.fh);
		*fhp = a.fh;
	}
	g_free((char *)a.url);
	return rc;
}

static int smb_create(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
		      mode_t mode, int flags, ff_node **node, struct stat *st, void **fhp)
{
	struct smb_loc *loc = loc_;
	struct smb_open_arg a = { 0 };
	bool ro;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc;
	a.url = smb_url(loc, pn(parent), name);
	if (!a.url)
		return -ENOENT;
	a.flags = smb_open_flags(flags) | O_CREAT;
	a.mode = mode;
	a.st = st;
	a.fh = g_new0(struct smb_file, 1);
	a.fh->flags = flags;
	/* A mode without write bits makes the new file read-only (the DOS attribute), as cifs
	 * does at create; a file that existed keeps its attributes, so find out which it is. */
	ro = !(mode & 0222);
	if (ro && !(a.flags & O_EXCL)) {
		a.flags |= O_EXCL;
		rc = smb_run(loc, true, smb_open_fn, &a);
		a.flags &= ~O_EXCL;
		if (rc == -EEXIST) {
			ro = false;
			rc = smb_run(loc, true, smb_open_fn, &a);
		}
	} else {
		rc = smb_run(loc, true, smb_open_fn, &a);
	}
	if (rc == 0 && ro) {
		/* Our handle keeps the write access it was opened with. Best effort: the file
		 * exists and is open now. */
		struct smb_path_arg c = { .url = a.url, .mode = 0444 | S_IXUSR };

		if (smb_run(loc, false, smb_chmod_fn, &c) == 0)
			st->st_mode &= ~(mode_t)0222;
	}
	if (rc) {
		g_free(a.fh);
	} else {
		*node = (ff_node *)ff_pathtree_child(loc->tree, pn(parent), name);
		ff_pathtree_ref(loc->tree, pn(*node));
		a.fh->node = pn(*node);
		smb_opened(loc, a.fh);
		*fhp = a.fh;
	}
	g_free((char *)a.url);
	return rc;
}

static ssize_t smb_read(void *loc_, void *fh_, void *buf, size_t size, off_t off)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	size_t done = 0;
	SMBCCTX *ctx;
	int rc;

	rc = smb_fh_begin(loc, fh, true);
	if (rc)
		return rc;
	ctx = fh->conn->ctx;
	if (smbc_getFunctionLseek(ctx)(ctx, fh->file, off, SEEK_SET) < 0) {
		rc = smb_err(errno);
		goto out;
	}
	while (done < size) {
		ssize_t n =
			smbc_getFunctionRead(ctx)(ctx, fh->file, (char *)buf + done, size - done);

		if (n < 0) {
			rc = smb_err(errno);
			break;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
out:
	rc = smb_fh_end(loc, fh, rc);
	if (rc && done == 0)
		return rc;
	return (ssize_t)done;
}

/* SMB has no append mode: with O_APPEND, each write goes where the file ends now. */
static ssize_t smb_write(void *loc_, const struct ff_cred *cred, void *fh_, const void *buf,
			 size_t size, off_t off)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	SMBCCTX *ctx;
	ssize_t n;
	int rc;

	rc = smb_fh_begin(loc, fh, true);
	if (rc)
		return rc;
	ctx = fh->conn->ctx;
	smb_times_written(loc, fh->node);
	fh->dirty = true;
	if (fh->flags & O_APPEND) {
		struct stat st;

		rc = smb_fh_stat(loc, fh, &st);
		if (rc)
			goto out;
		off = st.st_size;
	}
	if (smbc_getFunctionLseek(ctx)(ctx, fh->file, off, SEEK_SET) < 0) {
		rc = smb_err(errno);
		goto out;
	}
	n = smbc_getFunctionWrite(ctx)(ctx, fh->file, buf, size);
	if (n < 0)
		rc = smb_err(errno);
	if (rc == -EINVAL)
		rc = -EFBIG; /* past the largest file the server takes (its EFBIG comes back so) */
	else if ((size_t)n != size)
		rc = -EIO; /* cli_writeall writes all or fails */
out:
	rc = smb_fh_end(loc, fh, rc);
	return rc ? rc : (ssize_t)size;
}

/* Explicit times of fh's node set again after an SMB handle that wrote was closed: the
 * server's close moved mtime over them (see struct smb_open_node). Best effort, like close. */
static void smb_times_reapply(struct smb_loc *loc, struct smb_file *fh, const struct timeval tv[2])
{
	struct smb_path_arg a = { .tv = { tv[0], tv[1] } };

	a.url = smb_url(loc, fh->node, NULL);
	if (a.url)
		smb_run(loc, false, smb_utimes_fn, &a);
	g_free((char *)a.url);
}

/*
 * close(2). SMB writes are acknowledged by the server before write() returns here, so there is
 * nothing deferred to report but a lost connection. But the server's view of mtime is: Samba
 * updates the write time of a written file lazily (its "delayed write time", as Windows does):
 * when the handle is closed, or two seconds after the first write; until then every stat,
 * through any handle, shows mtime as it was when the file was opened. FUSE sends RELEASE, where
 * the handle would be closed, asynchronously after close(2) returns, so `write; close; stat`
 * showed the old mtime. So a handle that wrote is closed here, in close(2), and opened again on
 * its own context only if it is used after that (a dup'd descriptor, mmap write-back): the
 * CLOSE round trip moves from RELEASE into close(2), and nothing is added unless the handle
 * is used again (one CREATE then). Setting the write time explicitly instead needs this very
 * handle: a time set by path (all libsmbclient offers) goes through another handle, and the
 * writer's own close moves mtime once more; setting end-of-file to the current size through
 * the handle makes Samba update mtime at once, but needs the size first (a stat: two round
 * trips in all) and would cut what another writer appended in between.
 *
 * fsync: libsmbclient 4.17 has no SMB2 FLUSH call, so the data is where the server's own
 * policy ("strict sync") puts acknowledged writes; it reports a lost connection, as flush, and
 * settles mtime the same way (a stat after fsync, the file still open, shows the write);
 * fdatasync leaves mtime alone.
 */
static int smb_fh_settle(struct smb_loc *loc, struct smb_file *fh)
{
	struct timeval tv[2];
	SMBCCTX *ctx;
	bool closed = false;
	int rc = smb_fh_begin(loc, fh, false);

	if (rc)
		return rc;
	if (fh->file && fh->dirty) {
		ctx = fh->conn->ctx;
		/* libsmbclient forgets the handle even when the close fails. */
		if (smbc_getFunctionClose(ctx)(ctx, fh->file) < 0)
			rc = smb_err(errno);
		fh->file = NULL;
		fh->dirty = false;
		closed = true;
	}
	rc = smb_fh_end(loc, fh, rc);
	if (closed && smb_times_pending(loc, fh->node, tv))
		smb_times_reapply(loc, fh, tv);
	return rc;
}

static int smb_flush(void *loc, void *fh)
{
	return smb_fh_settle(loc, fh);
}

static int smb_fsync(void *loc_, void *fh_, int datasync)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	int rc;

	if (!datasync)
		return smb_fh_settle(loc, fh);
	rc = smb_fh_begin(loc, fh, false);
	if (rc)
		return rc;
	return smb_fh_end(loc, fh, 0);
}

static int smb_release(void *loc_, void *fh_)
{
	struct smb_loc *loc = loc_;
	struct smb_file *fh = fh_;
	struct smb_conn *conn;
	struct timeval tv[2];
	bool dirty = false, times;
	int rc = 0;

	/* Inside the gate until it has left loc->open: smb_rename_open() must not see it after.
	 * No other operation of this handle runs any more: its fields may be read. */
	g_rw_lock_reader_lock(&loc->gate);
	conn = fh->conn;
	if (!conn) {
		rc = -EIO; /* lost across a rename */
	} else if (fh->file) {
		rc = smb_pool_get_conn(&loc->pool, conn, true);
		if (rc == 0) {
			dirty = fh->dirty;
			/* libsmbclient forgets the handle even when the close fails. */
			if (smbc_getFunctionClose(conn->ctx)(conn->ctx, fh->file) < 0)
				rc = smb_err(errno);
			smb_pool_file_closed(&loc->pool, conn);
			smb_pool_put(&loc->pool, conn, rc);
		} else {
			/* The connection is gone; freeing the context closes what is left. */
			smb_pool_file_closed(&loc->pool, conn);
		}
	} else {
		smb_pool_file_closed(&loc->pool, conn); /* smb_flush() closed it */
	}
	times = smb_closed(loc, fh, dirty, tv);
	g_rw_lock_reader_unlock(&loc->gate);
	if (times)
		smb_times_reapply(loc, fh, tv);
	ff_pathtree_unref(loc->tree, fh->node);
	g_free(fh);
	return rc;
}

/* ---- namespace operations ------------------------------------------------------------------- */

static int smb_mkdir_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	int rc;

	if (smbc_getFunctionMkdir(conn->ctx)(conn->ctx, a->url, a->mode) < 0)
		return smb_err(errno);
	rc = smb_stat_raw(conn->ctx, a->url, a->st);
	if (rc == 0)
		smb_fix_stat(loc, a->st);
	return rc;
}

static int smb_mkdir(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, ff_node **node, struct stat *st)
{
	struct smb_loc *loc = loc_;
	struct smb_path_arg a = { .mode = mode, .st = st };
	char *url;
	int rc;

	rc = smb_check_name(name);
	if (rc)
		return rc;
	url = smb_url(loc, pn(parent), name);
	if (!url)
		return -ENOENT;
	a.url = url;
	rc = smb_run(loc, false, smb_mkdir_fn, &a);
	if (rc == 0)
		*node = (ff_node *)ff_pathtree_child(loc->tree, pn(parent), name);
	g_free(url);
	return rc;
}

/* Regular files only (FUSE uses mknod for them when create is not used); SMB has no fifos,
 * sockets or devices without unix extensions: EPERM, as vfat answers. */
static int smb_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	void *fh;
	int rc;

	if (!S_ISREG(mode))
		return -EPERM;
	rc = smb_create(loc, cred, parent, name, mode, O_WRONLY | O_CREAT | O_EXCL, node, st, &fh);
	if (rc == 0)
		smb_release(loc, fh);
	return rc;
}

/* No symlinks and no hard links on SMB without unix extensions: left out, so EPERM, as vfat
 * answers (fedfuse/gateway.h). */

/*
 * libsmbclient's unlink opens with DELETE_ON_CLOSE but without FILE_NON_DIRECTORY_FILE: given a
 * directory, it removes it when empty and reports success without removing it otherwise. So
 * look first (EISDIR, as Linux answers). And POSIX lets anybody who may write the directory
 * remove a file, while SMB refuses to delete a file with the DOS read-only attribute: like
 * cifs, clear the attribute and try once more (and put it back when that fails too).
 */
static int smb_unlink_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	struct stat st;
	int rc, rc2;

	rc = smb_stat_raw(ctx, a->url, &st);
	if (rc)
		return rc;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url) == 0)
		return 0;
	rc = smb_err(errno);
	if ((rc != -EACCES && rc != -EINVAL && rc != -EPERM) || !smb_raw_readonly(&st))
		return rc;
	if (smbc_getFunctionChmod(ctx)(ctx, a->url, 0644 | S_IXUSR) < 0)
		return rc;
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url) == 0)
		return 0;
	rc2 = smb_err(errno);
	smbc_getFunctionChmod(ctx)(ctx, a->url, 0444 | S_IXUSR);
	return smb_err_is_disconnect(rc2) ? rc2 : rc;
}

/* Remove `name` from `parent` with `fn` (unlink or rmdir). A sharing violation (EBUSY) may
 * come from a file still open on a retired connection: once those are freed, try again. */
static int remove_name(struct smb_loc *loc, ff_node *parent, const char *name,
		       int (*fn)(struct smb_loc *, struct smb_conn *, void *))
{
	struct smb_path_arg a = { 0 };
	int rc;

	a.url = smb_url(loc, pn(parent), name);
	if (!a.url)
		return -ENOENT;
	rc = smb_run(loc, false, fn, &a);
	if (rc == -EBUSY && smb_pool_wait_reaped(&loc->pool))
		rc = smb_run(loc, false, fn, &a);
	if (rc == 0)
		ff_pathtree_unlink(loc->tree, pn(parent), name);
	g_free((char *)a.url);
	return rc;
}

static int smb_unlink(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(loc_, parent, name, smb_unlink_fn);
}

static int smb_rmdir_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;

	if (smbc_getFunctionRmdir(conn->ctx)(conn->ctx, a->url) < 0)
		return smb_err(errno);
	return 0;
}

static int smb_rmdir(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(loc_, parent, name, smb_rmdir_fn);
}

/*
 * libsmbclient renames without replacing and, when the target exists, deletes it and renames
 * again (not atomic: there is a moment without the target). When that fails it reports EEXIST
 * whatever the reason; work out the POSIX answer from the two objects: a directory replaces only
 * an empty directory, a file only a file.
 */
static int smb_rename_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_path_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	struct stat src, dst;
	bool dir_removed = false;
	int rc;

	rc = smb_stat_raw(ctx, a->url, &src);
	if (rc)
		return rc;
	rc = smb_stat_raw(ctx, a->url2, &dst);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == 0 && src.st_ino == dst.st_ino && src.st_ino != 0) {
		/* The same object: a change of case only (or no change at all). */
		if (strcmp(a->url, a->url2) == 0)
			return 0;
	} else if (rc == 0 && (a->flags & RENAME_NOREPLACE)) {
		return -EEXIST;
	} else if (rc == 0 && S_ISDIR(dst.st_mode) && !S_ISDIR(src.st_mode)) {
		return -EISDIR;
	} else if (rc == 0 && !S_ISDIR(dst.st_mode) && S_ISDIR(src.st_mode)) {
		return -ENOTDIR;
	} else if (rc == 0 && S_ISDIR(dst.st_mode)) {
		/* SMB deletes only files on rename: take the (empty) directory away first. */
		if (smbc_getFunctionRmdir(ctx)(ctx, a->url2) < 0)
			return smb_err(errno);
		dir_removed = true;
	}
	if (smbc_getFunctionRename(ctx)(ctx, a->url, ctx, a->url2) == 0)
		return 0;
	rc = smb_err(errno);
	if (dir_removed) { /* put the empty directory back, as far as we can */
		smbc_getFunctionMkdir(ctx)(ctx, a->url2, 0755);
		return rc;
	}
	if (rc != -EEXIST || (a->flags & RENAME_NOREPLACE))
		return rc;
	/* libsmbclient could not delete the target file: find out why. */
	if (smbc_getFunctionUnlink(ctx)(ctx, a->url2) < 0)
		return smb_err(errno);
	if (smbc_getFunctionRename(ctx)(ctx, a->url, ctx, a->url2) < 0)
		return smb_err(errno);
	return 0;
}

/*
 * The rename failed because files are open at or below its source (no FILE_SHARE_DELETE, see
 * struct smb_open_node). When they are ours: close them, rename, open them again where they
 * are now. Handle operations wait at the gate meanwhile; a handle that cannot be opened again
 * answers EIO from then on.
 */
static int smb_rename_open(struct smb_loc *loc, struct smb_path_arg *a, int rc,
			   struct ff_pathnode *parent, const char *name,
			   struct ff_pathnode *newparent, const char *newname)
{
	char *path = ff_pathtree_path(loc->tree, NULL, parent, name);
	GPtrArray *fhs;

	if (!path)
		return rc;
	g_rw_lock_writer_lock(&loc->gate);
	fhs = smb_open_below(loc, path);
	if (fhs->len == 0)
		goto out_unlock; /* not ours */
	for (guint i = 0; i < fhs->len; i++) {
		struct smb_file *fh = fhs->pdata[i];

		if (!fh->conn)
			continue;
		if (fh->file && smb_pool_get_conn(&loc->pool, fh->conn, true) == 0) {
			smbc_getFunctionClose(fh->conn->ctx)(fh->conn->ctx, fh->file);
			smb_pool_file_closed(&loc->pool, fh->conn);
			smb_pool_put(&loc->pool, fh->conn, 0);
		} else {
			/* Closed by smb_flush() already, or its connection is gone. */
			smb_pool_file_closed(&loc->pool, fh->conn);
		}
		fh->file = NULL;
		fh->conn = NULL;
	}
	rc = smb_run(loc, false, smb_rename_fn, a);
	if (rc == 0)
		ff_pathtree_rename(loc->tree, parent, name, newparent, newname, false);
	for (guint i = 0; i < fhs->len; i++) {
		struct smb_file *fh = fhs->pdata[i];
		struct smb_open_arg o = { .fh = fh, .reopen = true };

		if (fh->file)
			continue;
		o.url = smb_url(loc, fh->node, NULL);
		o.flags = smb_reopen_flags(fh->flags);
		if (o.url && smb_run(loc, true, smb_open_fn, &o) != 0)
			g_warning("%s: a file open across a rename could not be opened again",
				  loc->display);
		g_free((char *)o.url);
	}
out_unlock:
	g_rw_lock_writer_unlock(&loc->gate);
	g_ptr_array_free(fhs, TRUE);
	g_free(path);
	return rc;
}

static int smb_rename(void *loc_, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node *newparent, const char *newname, unsigned int flags)
{
	struct smb_loc *loc = loc_;
	struct smb_path_arg a = { .flags = flags };
	int rc;

	if (flags & ~(unsigned int)RENAME_NOREPLACE)
		return -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
	rc = smb_check_name(newname);
	if (rc)
		return rc;
	a.url = smb_url(loc, pn(parent), name);
	a.url2 = smb_url(loc, pn(newparent), newname);
	if (!a.url || !a.url2) {
		rc = -ENOENT;
		goto out;
	}
	rc = smb_run(loc, false, smb_rename_fn, &a);
	if (rc == -EBUSY && smb_pool_wait_reaped(&loc->pool))
		rc = smb_run(loc, false, smb_rename_fn, &a);
	if (rc == 0)
		ff_pathtree_rename(loc->tree, pn(parent), name, pn(newparent), newname, false);
	else if (rc == -EBUSY || rc == -EACCES)
		rc = smb_rename_open(loc, &a, rc, pn(parent), name, pn(newparent), newname);
out:
	g_free((char *)a.url);
	g_free((char *)a.url2);
	return rc;
}

/* ---- directories ---------------------------------------------------------------------------- */

static void smb_dirent_clear(gpointer p)
{
	struct smb_dirent *e = p;

	g_free(e->name);
}

struct smb_list_arg {
	const char *url;
	GArray *ents;
};

static int smb_list_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct smb_list_arg *a = arg;
	SMBCCTX *ctx = conn->ctx;
	SMBCFILE *dir;
	int rc = 0;

	g_array_set_size(a->ents, 0);
	dir = smbc_getFunctionOpendir(ctx)(ctx, a->url);
	if (!dir)
		return smb_err(errno);
	for (;;) {
		const struct libsmb_file_info *fi;
		struct smb_dirent e;

		memset(&e, 0, sizeof(e));
		errno = 0;
		fi = smbc_getFunctionReaddirPlus2(ctx)(ctx, dir, &e.st);
		if (!fi) {
			if (errno)
				rc = smb_err(errno);
			break;
		}
		if (strcmp(fi->name, ".") == 0 || strcmp(fi->name, "..") == 0)
			continue;
		smb_fix_stat(loc, &e.st);
		e.name = g_strdup(fi->name);
		g_array_append_val(a->ents, e);
	}
	smbc_getFunctionClosedir(ctx)(ctx, dir);
	return rc;
}

static int smb_list(struct smb_loc *loc, struct smb_dir *dh)
{
	struct smb_list_arg a = { .ents = dh->ents };
	int rc;

	a.url = smb_url(loc, dh->node, NULL);
	if (!a.url)
		return -ESTALE;
	rc = smb_run(loc, false, smb_list_fn, &a);
	if (rc)
		g_array_set_size(dh->ents, 0);
	dh->served = false;
	g_free((char *)a.url);
	return rc;
}

static int smb_opendir(void *loc_, const struct ff_cred *cred, ff_node *node, void **dhp)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = g_new0(struct smb_dir, 1);
	int rc;

	g_mutex_init(&dh->lock);
	dh->ents = g_array_new(FALSE, FALSE, sizeof(struct smb_dirent));
	g_array_set_clear_func(dh->ents, smb_dirent_clear);
	ff_pathtree_ref(loc->tree, pn(node));
	dh->node = pn(node);
	rc = smb_list(loc, dh);
	if (rc) {
		ff_pathtree_unref(loc->tree, dh->node);
		g_array_free(dh->ents, TRUE);
		g_mutex_clear(&dh->lock);
		g_free(dh);
		return rc;
	}
	*dhp = dh;
	return 0;
}

static int smb_readdir(void *loc_, const struct ff_cred *cred, ff_node *node, void *dh_, off_t off,
		       bool plus, ff_fill_fn fill, void *buf)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = dh_;
	int rc = 0;

	if (off < 0)
		return -EINVAL;
	g_mutex_lock(&dh->lock);
	if (off == 0 && dh->served) { /* rewinddir(): show the directory as it is now */
		rc = smb_list(loc, dh);
		if (rc)
			goto out_unlock;
	}
	for (guint i = (guint)MIN((guint64)off, (guint64)dh->ents->len); i < dh->ents->len; i++) {
		struct smb_dirent *e = &g_array_index(dh->ents, struct smb_dirent, i);
		ff_node *child = NULL;
		int r;

		if (plus)
			child = (ff_node *)ff_pathtree_child(loc->tree, pn(node), e->name);
		dh->served = true;
		r = fill(buf, e->name, &e->st, (off_t)i + 1, child, false);
		if (r == FF_FILL_FULL)
			break;
		if (r < 0) {
			rc = r;
			break;
		}
	}
out_unlock:
	g_mutex_unlock(&dh->lock);
	return rc;
}

static int smb_releasedir(void *loc_, void *dh_)
{
	struct smb_loc *loc = loc_;
	struct smb_dir *dh = dh_;

	ff_pathtree_unref(loc->tree, dh->node);
	g_array_free(dh->ents, TRUE);
	g_mutex_clear(&dh->lock);
	g_free(dh);
	return 0;
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

	a.url = smb_url(loc, pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	a.sv = st;
	rc = smb_run(loc, false, smb_statfs_fn, &a);
	g_free((char *)a.url);
	return rc;
}

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
	int err;

	memset(a->buf, 0, a->cap);
	if (smbc_getFunctionGetxattr(conn->ctx)(conn->ctx, a->url, a->name, a->buf, a->cap) == 0)
		return 0;
	err = errno;
	if (err == EINVAL || err == ENODATA)
		return -ENODATA; /* a name of the family that does not exist */
	return smb_err(err);
}

static ssize_t smb_getxattr(void *loc_, const struct ff_cred *cred, ff_node *node, const char *name,
			    void *buf, size_t size)
{
	struct smb_loc *loc = loc_;
	struct smb_xattr_arg a = { .name = name };
	ssize_t rc;
	size_t len = 0;

	if (!smb_xattr_known(name))
		return -EOPNOTSUPP;
	a.url = smb_url(loc, pn(node), NULL);
	if (!a.url)
		return -ESTALE;
	/* libsmbclient 4.17 returns 0, not the length, and truncates silently: the value is
	 * text, so grow the buffer until it has room to spare. */
	for (a.cap = 4096;; a.cap *= 2) {
		a.buf = g_malloc(a.cap);
		rc = smb_run(loc, false, smb_getxattr_fn, &a);
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

static ssize_t smb_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			     size_t size)
{
	return 0;
}

static int smb_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			const void *value, size_t size, int flags)
{
	return smb_xattr_known(name) ? -EPERM : -EOPNOTSUPP;
}

static int smb_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name)
{
	return smb_xattr_known(name) ? -EPERM : -EOPNOTSUPP;
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
	.opendir = smb_opendir,
	.readdir = smb_readdir,
	.releasedir = smb_releasedir,
	.statfs = smb_statfs,
	.setxattr = smb_setxattr,
	.getxattr = smb_getxattr,
	.listxattr = smb_listxattr,
	.removexattr = smb_removexattr,
};

extern const struct ff_backend fedfuse_backend;

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "smb",
	.description = "SMB2/SMB3 shares (libsmbclient)",
	.caps = FF_CAP_PATH_NODES,
	.ops = &smb_ops,
};
