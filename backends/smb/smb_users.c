/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_users.c - identity=per-user: each caller acts on the server as themself, as the cifs
 * client's multiuser mounts do. A caller's first operation reads their credentials file and
 * makes a pool of their own, whose contexts log on with it; every later operation of theirs
 * runs there, so the server sees one session per user. The file is the one in the referral's
 * credentials-dir named after their user name, else their uid (the daemon's user's, private,
 * no symlink); failing that, the caller's own at user-credentials below their home directory
 * (theirs, private, reached without following a symlink below the home directory). A caller without a file gets EACCES, never another identity: root is a caller like
 * any other. Open files stay on the pool that opened them.
 *
 * A missing or unreadable file is looked for again after SMB_USER_RETRY_US; a file that was
 * read is kept for the life of the location (a changed password takes a remount or a reload
 * that changes the referral). With sec=krb5 the caller's Kerberos ticket cache takes the
 * place of the file (smb_krb5.c), looked for again after SMB_KRB5_HOLDOFF_US, and read at each
 * logon.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/smb/smb.h"

#define SMB_USER_RETRY_US (10 * G_USEC_PER_SEC)

struct smb_user {
	struct smb_ident id;
	struct smb_pool pool; /* initialised once id is known */
	bool ready;	      /* id read and pool made */
	gint64 retry_at;      /* not ready: no new look before this (monotonic µs) */
};

static void user_free(gpointer p)
{
	struct smb_user *u = p;

	if (u->ready)
		smb_pool_destroy(&u->pool);
	smb_ident_clear(&u->id);
	g_free(u);
}

void smb_users_init(struct smb_loc *loc)
{
	g_mutex_init(&loc->users_lock);
	loc->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_free);
}

void smb_users_free(struct smb_loc *loc)
{
	if (!loc->users)
		return;
	g_hash_table_destroy(loc->users);
	loc->users = NULL;
	g_mutex_clear(&loc->users_lock);
}

/* uid's file in credentials-dir: the one named after the user (`name`, may be NULL), else
 * after the uid. 0, or -errno with *msg set (never the file's text). */
static int read_from_dir(struct smb_loc *loc, uid_t uid, const char *name, struct smb_ident *id,
			 char **msg)
{
	char numeric[16];
	int dirfd, rc = -ENOENT;

	dirfd = open(loc->cred_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		rc = -errno;
		*msg = g_strdup_printf("credentials-dir %s: %s", loc->cred_dir, g_strerror(-rc));
		return rc;
	}
	if (name) {
		rc = smb_read_credentials(dirfd, name, geteuid(), id, msg);
		if (rc == -ENOENT)
			g_clear_pointer(msg, g_free);
	}
	if (rc == -ENOENT) {
		snprintf(numeric, sizeof(numeric), "%u", (unsigned int)uid);
		rc = smb_read_credentials(dirfd, numeric, geteuid(), id, msg);
	}
	close(dirfd);
	return rc;
}

/* The user's own file, user_cred below their home directory `home`: each directory below the
 * home opened without following a symlink (a user's link must not lead the daemon to a file
 * the user may not read), the file the user's own and private. */
static int read_from_home(struct smb_loc *loc, uid_t uid, const char *home, struct smb_ident *id,
			  char **msg)
{
	g_auto(GStrv) parts = g_strsplit(loc->user_cred, "/", -1);
	guint n = g_strv_length(parts);
	int dirfd, rc;

	dirfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the administrator's path */
	for (guint i = 0; dirfd >= 0 && i + 1 < n; i++) {
		int next = openat(dirfd, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(dirfd);
		dirfd = next;
	}
	if (dirfd < 0) {
		rc = -errno;
		*msg = g_strdup_printf("%s/%s: %s", home, loc->user_cred, g_strerror(-rc));
		return rc;
	}
	rc = smb_read_credentials(dirfd, parts[n - 1], uid, id, msg);
	close(dirfd);
	return rc;
}

/* Read uid's credentials: credentials-dir's file, else the user's own. 0, or -errno with
 * *msg set (never the file's text), naming where the file was looked for. */
static int read_user(struct smb_loc *loc, uid_t uid, struct smb_ident *id, char **msg)
{
	struct passwd pw, *found = NULL;
	const char *name = NULL, *where = loc->cred_dir;
	char buf[1024];
	int rc = -ENOENT;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found && found->pw_name[0] &&
	    !strchr(found->pw_name, '/') && found->pw_name[0] != '.')
		name = found->pw_name;
	if (loc->cred_dir)
		rc = read_from_dir(loc, uid, name, id, msg);
	if (rc == -ENOENT && loc->user_cred && found && found->pw_dir[0] == '/') {
		g_clear_pointer(msg, g_free);
		where = found->pw_dir;
		rc = read_from_home(loc, uid, found->pw_dir, id, msg);
	}
	if (rc == -ENOENT) {
		GString *m = g_string_new(NULL);

		g_string_printf(m, "no credentials for uid %u", (unsigned int)uid);
		if (name)
			g_string_append_printf(m, " (%s)", name);
		if (loc->cred_dir)
			g_string_append_printf(m, " in %s", loc->cred_dir);
		if (loc->user_cred)
			g_string_append_printf(m, "%s at ~/%s", loc->cred_dir ? " nor" : "",
					       loc->user_cred);
		g_free(*msg);
		*msg = g_string_free(m, FALSE);
	} else if (rc && *msg && where) {
		char *inner = *msg;

		*msg = g_strdup_printf("%s (in %s)", inner, where);
		g_free(inner);
	}
	return rc;
}

int smb_pool_of(struct smb_loc *loc, const struct ff_cred *cred, struct smb_pool **pool)
{
	g_autofree char *msg = NULL;
	struct smb_ident id = { 0 };
	struct smb_user *u;
	uid_t uid;
	gint64 now;
	int rc;

	if (!loc->per_user) {
		*pool = &loc->pool;
		return 0;
	}
	if (!cred)
		return -EACCES; /* no caller, no identity */
	uid = cred->uid;
	g_mutex_lock(&loc->users_lock);
	u = g_hash_table_lookup(loc->users, GUINT_TO_POINTER(uid));
	if (u && u->ready) {
		g_mutex_unlock(&loc->users_lock);
		*pool = &u->pool;
		return 0;
	}
	now = g_get_monotonic_time();
	if (u && now < u->retry_at) {
		g_mutex_unlock(&loc->users_lock);
		return -EACCES;
	}
	if (!u) {
		u = g_new0(struct smb_user, 1);
		g_hash_table_insert(loc->users, GUINT_TO_POINTER(uid), u);
	}
	/* A few small reads of a local file, under a leaf lock: another caller's first operation
	 * waits for them at most. */
	rc = loc->krb5 ? smb_krb5_user(loc, uid, &id, &msg) : read_user(loc, uid, &id, &msg);
	if (rc == 0)
		rc = smb_pool_init(&u->pool, loc, &u->id, loc->connections);
	if (rc) {
		smb_ident_clear(&id);
		/* a password file is rarely written; a ticket is got with kinit, and used soon */
		u->retry_at = now + (loc->krb5 ? SMB_KRB5_HOLDOFF_US : SMB_USER_RETRY_US);
		g_mutex_unlock(&loc->users_lock);
		g_message("%s: %s; uid %u is refused (EACCES)", loc->display,
			  msg ? msg : g_strerror(-rc), (unsigned int)uid);
		return -EACCES;
	}
	u->id = id;
	u->ready = true;
	g_mutex_unlock(&loc->users_lock);
	*pool = &u->pool;
	return 0;
}
