/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_cred.c - the credentials file of an SMB location (mount.cifs' format): read with the
 * checks a file holding a password deserves, parsed strictly, every copy of its text wiped.
 * A parser of text other people may write, kept apart so that the fuzzer reaches it alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/smb/smb.h"

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
int smb_parse_credentials(char *buf, size_t len, const char *path, struct smb_ident *id, char **msg)
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
	id->user = g_strdup(user);
	id->domain = dom && *dom ? g_strdup(dom) : NULL;
	id->password_len = pass ? strlen(pass) : 0;
	id->password = g_malloc(id->password_len + 1);
	memcpy(id->password, pass ? pass : "", id->password_len + 1);
	return 0;
}

void smb_ident_clear(struct smb_ident *id)
{
	if (id->password) {
		explicit_bzero(id->password, id->password_len);
		g_free(id->password);
	}
	g_free(id->user);
	g_free(id->domain);
	g_free(id->krb5_ccache);
	memset(id, 0, sizeof(*id));
}

int smb_open_private(int dirfd, const char *path, uid_t owner, const char *what, char **msg)
{
	struct stat st;
	int fd, rc;

	fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		*msg = rc == -ELOOP ? g_strdup_printf("%s %s is a symlink", what, path)
				    : g_strdup_printf("%s %s: %s", what, path, g_strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		*msg = g_strdup_printf("%s %s: %s", what, path, g_strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		*msg = g_strdup_printf("%s %s is not a regular file", what, path);
		rc = -EINVAL;
	} else if (st.st_uid != owner) {
		*msg = g_strdup_printf("%s %s is owned by uid %u, not by uid %u%s", what, path,
				       (unsigned int)st.st_uid, (unsigned int)owner,
				       owner == geteuid() ? " which runs fedfuse" : "");
		rc = -EACCES;
	} else if (st.st_mode & 077) {
		*msg = g_strdup_printf("%s %s may be accessed by group or others (mode %04o); "
				       "chmod 600 it",
				       what, path, (unsigned int)(st.st_mode & 07777));
		rc = -EACCES;
	} else {
		return fd;
	}
	close(fd);
	return rc;
}

/* Read the credentials file, re-checking what the core checked at load time: a regular file
 * of `owner` that neither group nor others may access. Every copy of its text is wiped. */
int smb_read_credentials(int dirfd, const char *path, uid_t owner, struct smb_ident *id, char **msg)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	fd = smb_open_private(dirfd, path, owner, "credentials file", msg);
	if (fd < 0)
		return fd;
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
	rc = smb_parse_credentials(buf, len, path, id, msg);
out_wipe:
	explicit_bzero(buf, SMB_CRED_MAX + 2);
	g_free(buf);
	close(fd);
	return rc;
}
