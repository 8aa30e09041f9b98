/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_krb5.c - sec=krb5: each caller logs on to the server with their own Kerberos tickets,
 * from their ticket cache (krb5-ccache=, /tmp/krb5cc_%U by default), as the cifs client's
 * multiuser mounts do through cifs.upcall.
 *
 * libsmbclient takes the ticket cache from KRB5CCNAME when it sets up a session, and that
 * variable is the process's. So the daemon points it, once, at a file of its own in a private
 * directory, and a logon runs in a window (smb_krb5_begin() .. smb_krb5_end()): under one lock
 * for the whole daemon, the caller's cache is copied into that file, the session is set up, and
 * the file is removed. Outside a window there is no ticket to take; a connection libsmbclient
 * would make by itself (it should make none: see smb_check_server()) gets a logon that cannot
 * work instead (see smb_krb5_outside()), never the ticket of a window another thread holds.
 *
 * A caller's cache is read as their own file: a regular file, theirs, private (0600), not
 * reached through a symlink at its last component. A session, once set up, lives on without
 * the cache (as the kernel's keeps it): what a later kdestroy or an expired ticket changes is
 * the next logon.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/smb/smb.h"

#define SMB_KRB5_MAX (1 << 20) /* a ticket cache holds a few tickets */
/* KRB5CCNAME when no window is open and none was ever needed: no such file. */
#define SMB_KRB5_NONE "FILE:/nonexistent/fedfuse-no-ticket"

static struct {
	GMutex lock;	    /* the window; held across a logon */
	char *dir;	    /* our private directory, made at the first sec=krb5 location */
	char *file;	    /* dir/ccache: KRB5CCNAME */
	unsigned int users; /* sec=krb5 locations open */
} krb;

/* The identity whose window this thread holds, if any. */
static __thread const struct smb_ident *krb_window;

void smb_krb5_global_init(void)
{
	/* In place before any context exists: later values replace this one where it stands,
	 * so a thread reading the environment meanwhile never sees it grow. */
	setenv("KRB5CCNAME", SMB_KRB5_NONE, 1);
}

bool smb_krb5_host_ok(const char *host)
{
	unsigned char addr[sizeof(struct in6_addr)];

	if (!host || !host[0] || host[0] == '[')
		return false;
	if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
		return false;
	return g_ascii_strcasecmp(host, "localhost") != 0 && !g_str_has_prefix(host, "localhost.");
}

int smb_krb5_open(char **msg)
{
	int rc = 0;

	g_mutex_lock(&krb.lock);
	if (!krb.dir) {
		g_autofree char *tmpl =
			g_build_filename(g_get_tmp_dir(), "fedfuse-krb5-XXXXXX", NULL);
		g_autofree char *name = NULL;

		if (!g_mkdtemp_full(tmpl, 0700)) {
			rc = -errno;
			*msg = g_strdup_printf(
				"sec=krb5: cannot make a private directory in %s: %s",
				g_get_tmp_dir(), g_strerror(-rc));
			goto out;
		}
		krb.dir = g_steal_pointer(&tmpl);
		krb.file = g_build_filename(krb.dir, "ccache", NULL);
		name = g_strconcat("FILE:", krb.file, NULL);
		setenv("KRB5CCNAME", name, 1);
	}
	krb.users++;
out:
	g_mutex_unlock(&krb.lock);
	return rc;
}

void smb_krb5_close(void)
{
	g_mutex_lock(&krb.lock);
	if (--krb.users == 0) {
		setenv("KRB5CCNAME", SMB_KRB5_NONE, 1);
		unlink(krb.file);
		rmdir(krb.dir);
		g_clear_pointer(&krb.file, g_free);
		g_clear_pointer(&krb.dir, g_free);
	}
	g_mutex_unlock(&krb.lock);
}

/* The pattern with %U (uid), %u (user name, or the uid when it has none) and %% expanded. */
static char *expand(const char *pattern, uid_t uid, const char *name)
{
	GString *s = g_string_new(NULL);

	for (const char *p = pattern; *p; p++) {
		if (*p != '%' || !p[1]) {
			g_string_append_c(s, *p);
			continue;
		}
		p++;
		if (*p == 'U' || (*p == 'u' && !name))
			g_string_append_printf(s, "%u", (unsigned int)uid);
		else if (*p == 'u')
			g_string_append(s, name);
		else
			g_string_append_c(s, *p);
	}
	return g_string_free(s, FALSE);
}

/* Open uid's cache at `path` as their own file. An fd, or -EACCES (or -errno) with *msg set. */
static int open_cache(const char *path, uid_t uid, char **msg)
{
	int fd = smb_open_private(AT_FDCWD, path, uid, "Kerberos ticket cache", msg);

	if (fd == -ENOENT) {
		g_free(*msg);
		*msg = g_strdup_printf("no Kerberos ticket cache at %s (kinit)", path);
	}
	return fd == -ENOENT || fd == -ELOOP || fd == -EINVAL ? -EACCES : fd;
}

int smb_krb5_user(struct smb_loc *loc, uid_t uid, struct smb_ident *id, char **msg)
{
	struct passwd pw, *found = NULL;
	const char *name = NULL;
	char buf[1024];
	int fd;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found && found->pw_name[0] &&
	    !strchr(found->pw_name, '/'))
		name = found->pw_name;
	id->krb5_ccache = expand(loc->krb5_ccache, uid, name);
	fd = open_cache(id->krb5_ccache, uid, msg);
	if (fd < 0) {
		g_clear_pointer(&id->krb5_ccache, g_free);
		return fd;
	}
	close(fd);
	id->krb5 = true;
	id->krb5_uid = uid;
	/* The user name is what libsmbclient keys its connections by; the ticket's principal is
	 * whom the server sees. */
	id->user = name ? g_strdup(name) : g_strdup_printf("%u", (unsigned int)uid);
	id->password = g_strdup("");
	return 0;
}

/* Copy fd's content into our file, made afresh (0600, never through a symlink). */
static int copy_cache(int fd, const char *to, char **msg)
{
	char *buf = g_malloc(SMB_KRB5_MAX);
	size_t len = 0;
	int out, rc = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, SMB_KRB5_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == SMB_KRB5_MAX) {
			rc = -EFBIG;
			break;
		}
	}
	if (rc == 0) {
		unlink(to);
		out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0) {
			rc = -errno;
		} else {
			ssize_t n = write(out, buf, len);

			if (n != (ssize_t)len)
				rc = n < 0 ? -errno : -EIO;
			if (close(out) < 0 && rc == 0)
				rc = -errno;
		}
	}
	if (rc)
		*msg = g_strdup_printf("cannot take the Kerberos ticket cache: %s",
				       g_strerror(-rc));
	explicit_bzero(buf, len);
	g_free(buf);
	return rc;
}

int smb_krb5_begin(const struct smb_ident *id, char **msg)
{
	int fd, rc;

	g_mutex_lock(&krb.lock);
	fd = open_cache(id->krb5_ccache, id->krb5_uid, msg);
	if (fd < 0) {
		g_mutex_unlock(&krb.lock);
		return -EACCES;
	}
	rc = copy_cache(fd, krb.file, msg);
	close(fd);
	if (rc) {
		unlink(krb.file);
		g_mutex_unlock(&krb.lock);
		return -EACCES;
	}
	krb_window = id;
	return 0;
}

void smb_krb5_end(void)
{
	unlink(krb.file);
	krb_window = NULL;
	g_mutex_unlock(&krb.lock);
}

bool smb_krb5_outside(const struct smb_ident *id)
{
	return id->krb5 && krb_window != id;
}
