/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smb_case.c - exact names on servers that match names without case. Samba (with its defaults)
 * and Windows find "Foo.h" when asked for "foo.h": a lookup of "foo.h" would succeed and the
 * create that follows would open and truncate Foo.h, a rename onto "foo.h" would replace it. So
 * a name the server says exists is checked against the directory's listing, spelled exactly.
 * Listings (those opendir() makes too) are kept for SMB_NAMES_TTL to answer yes; a no is always
 * asked of the server again. What the mount changes in a directory, it changes in its listing.
 */
#include <errno.h>
#include <string.h>

#include "backends/smb/smb.h"

#define SMB_NAMES_TTL (1 * G_USEC_PER_SEC)
#define SMB_NAMES_DIRS 64	/* listings kept; all are dropped beyond */
#define SMB_NAMES_MAX (1 << 18) /* names in them together; a larger listing is not kept */

struct smb_names {
	gint64 at;	 /* monotonic µs of the listing */
	GHashTable *set; /* exact names */
};

static void names_free(gpointer p)
{
	struct smb_names *n = p;

	g_hash_table_destroy(n->set);
	g_free(n);
}

void smb_names_init(struct smb_loc *loc)
{
	g_mutex_init(&loc->names_lock);
	loc->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, names_free);
}

void smb_names_clear(struct smb_loc *loc)
{
	if (!loc->names)
		return;
	g_hash_table_destroy(loc->names);
	g_mutex_clear(&loc->names_lock);
	loc->names = NULL;
}

void smb_names_note(struct smb_loc *loc, const char *dir_url, GHashTable *set)
{
	struct smb_names *n = g_new(struct smb_names, 1), *old;

	n->at = g_get_monotonic_time();
	n->set = set;
	if (g_hash_table_size(set) > SMB_NAMES_MAX) { /* a huge directory is asked every time */
		names_free(n);
		return;
	}
	g_mutex_lock(&loc->names_lock);
	if (g_hash_table_size(loc->names) >= SMB_NAMES_DIRS ||
	    loc->names_total + g_hash_table_size(set) > SMB_NAMES_MAX) {
		g_hash_table_remove_all(loc->names);
		loc->names_total = 0;
	}
	old = g_hash_table_lookup(loc->names, dir_url);
	if (old)
		loc->names_total -= g_hash_table_size(old->set);
	loc->names_total += g_hash_table_size(set);
	g_hash_table_replace(loc->names, g_strdup(dir_url), n);
	g_mutex_unlock(&loc->names_lock);
}

/* Whether a recent listing holds `name`. One that does not is no proof: the server says the
 * name exists (in some case), and another client may have made it since the listing. */
static bool known(struct smb_loc *loc, const char *dir_url, const char *name)
{
	struct smb_names *n;
	bool r = false;

	g_mutex_lock(&loc->names_lock);
	n = g_hash_table_lookup(loc->names, dir_url);
	if (n && g_get_monotonic_time() - n->at < SMB_NAMES_TTL)
		r = g_hash_table_contains(n->set, name);
	g_mutex_unlock(&loc->names_lock);
	return r;
}

int smb_name_exact(struct smb_loc *loc, SMBCCTX *ctx, const char *dir_url, const char *name)
{
	const struct smbc_dirent *d;
	GHashTable *set;
	SMBCFILE *dir;
	int r;

	if (known(loc, dir_url, name))
		return 1;
	dir = smbc_getFunctionOpendir(ctx)(ctx, dir_url);
	if (!dir)
		return smb_err(errno);
	set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	while ((d = smbc_getFunctionReaddir(ctx)(ctx, dir)) != NULL)
		g_hash_table_add(set, g_strdup(d->name));
	smbc_getFunctionClosedir(ctx)(ctx, dir);
	r = g_hash_table_contains(set, name);
	smb_names_note(loc, dir_url, set);
	return r;
}

struct exact_arg {
	const char *dir_url;
	const char *name;
	int result;
};

static int exact_fn(struct smb_loc *loc, struct smb_conn *conn, void *arg)
{
	struct exact_arg *a = arg;

	a->result = smb_name_exact(loc, conn->ctx, a->dir_url, a->name);
	return a->result < 0 ? a->result : 0;
}

int smb_name_exact_in(struct smb_loc *loc, const struct ff_cred *cred, struct ff_pathnode *dir,
		      const char *name)
{
	struct exact_arg a = { .name = name };
	char *url = smb_url(loc, dir, NULL);
	int rc;

	if (!url)
		return -ESTALE;
	a.dir_url = url;
	a.result = 1;
	rc = known(loc, url, name) ? 0 : smb_run(loc, cred, false, exact_fn, &a);
	g_free(url);
	return rc ? rc : a.result;
}

void smb_names_update(struct smb_loc *loc, struct ff_pathnode *dir, const char *name, bool present)
{
	char *url = smb_url(loc, dir, NULL);
	struct smb_names *n;

	if (!url)
		return;
	g_mutex_lock(&loc->names_lock);
	n = g_hash_table_lookup(loc->names, url);
	if (n && present && g_hash_table_add(n->set, g_strdup(name)))
		loc->names_total++;
	else if (n && !present && g_hash_table_remove(n->set, name))
		loc->names_total--;
	g_mutex_unlock(&loc->names_lock);
	g_free(url);
}
