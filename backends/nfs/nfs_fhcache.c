/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfs_fhcache.c - the filehandles of an NFS location's directories, by server path, kept for
 * the location's attr-timeout, so that a walk to a path starts at the nearest one instead of
 * at the server's root: NFSv4's COMPOUND with a PUTFH (nfs4_ops_walk(), nfs_v4.c), NFSv3's
 * LOOKUP3s (nfs3_lstat(), nfs_v3.c). What may make one wrong is bounded as the kernel's own
 * caches are: another client's rename or removal shows once attr-timeout has passed, as it
 * does in the kernel's entry cache; a filehandle the server calls stale is forgotten and the
 * walk made again from the root; our own renames and removals forget what they move at once.
 */
#include <string.h>

#include "backends/nfs/nfs_v4.h"

/* Keys are server paths as "/a/b" (components joined by one '/'); the root is never kept
 * (PUTROOTFH costs no more than PUTFH; NFSv3 keeps it in the location). With `compound`, only
 * paths whose own walk fits the tail of one COMPOUND are kept, so that a walk from the root can
 * always replace their PUTFH. */
#define FHC_MAX 16384

struct nfs_fhcache {
	GMutex lock;
	GHashTable *map; /* key -> struct fhc_entry * */
	gint64 ttl_us;
	bool compound;
};

struct fhc_entry {
	gint64 expires;
	guint len;
	unsigned char fh[];
};

struct nfs_fhcache *nfs_fhcache_new(double ttl, bool compound)
{
	struct nfs_fhcache *c;

	if (ttl <= 0)
		return NULL;
	c = g_new0(struct nfs_fhcache, 1);
	g_mutex_init(&c->lock);
	c->map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	c->ttl_us = (gint64)(ttl * G_USEC_PER_SEC);
	c->compound = compound;
	return c;
}

void nfs_fhcache_free(struct nfs_fhcache *c)
{
	if (!c)
		return;
	g_hash_table_destroy(c->map);
	g_mutex_clear(&c->lock);
	g_free(c);
}

/* `full` as a key: NULL for the root and for paths too long to keep. */
static char *fhc_key(const struct nfs_fhcache *c, const char *full)
{
	char **parts = g_strsplit(full, "/", -1);
	GString *key = g_string_new(NULL);
	size_t bytes = 0;
	guint n = 0;

	for (char **p = parts; *p; p++) {
		if (!**p)
			continue;
		g_string_append_c(key, '/');
		g_string_append(key, *p);
		if (c->compound)
			bytes += nfs4_lookup_bytes(*p);
		n++;
	}
	g_strfreev(parts);
	if (n == 0 || (c->compound && (n > V4_TAIL_OPS || bytes > V4_TAIL_BYTES)))
		return g_string_free(key, TRUE), NULL;
	return g_string_free(key, FALSE);
}

void nfs_fhc_put(struct nfs_fhcache *c, const char *full, const void *fh, guint len,
		 gint64 not_after)
{
	struct fhc_entry *e;
	char *key;

	if (!c || len == 0 || len > NFS4_FHSIZE || !(key = fhc_key(c, full)))
		return;
	e = g_malloc(sizeof(*e) + len);
	e->expires = g_get_monotonic_time() + c->ttl_us;
	if (not_after > 0 && not_after < e->expires)
		e->expires = not_after;
	e->len = len;
	memcpy(e->fh, fh, len);
	g_mutex_lock(&c->lock);
	if (g_hash_table_size(c->map) >= FHC_MAX)
		g_hash_table_remove_all(c->map); /* a walk over more directories than that */
	g_hash_table_replace(c->map, key, e);
	g_mutex_unlock(&c->lock);
}

void nfs_fhc_drop(struct nfs_fhcache *c, const char *full, bool below)
{
	GHashTableIter it;
	gpointer k;
	char *key;
	size_t len;

	if (!c || !(key = fhc_key(c, full)))
		return;
	len = strlen(key);
	g_mutex_lock(&c->lock);
	if (!below) {
		g_hash_table_remove(c->map, key);
	} else {
		g_hash_table_iter_init(&it, c->map);
		while (g_hash_table_iter_next(&it, &k, NULL)) {
			const char *s = k;

			if (strncmp(s, key, len) == 0 && (s[len] == '\0' || s[len] == '/'))
				g_hash_table_iter_remove(&it);
		}
	}
	g_mutex_unlock(&c->lock);
	g_free(key);
}

bool nfs_fhc_nearest(struct nfs_fhcache *c, GPtrArray *names, bool above, guint *depth,
		     GByteArray *fh, char **keyp, gint64 *expires)
{
	gint64 now = g_get_monotonic_time();
	GString *key;
	bool found = false;

	if (!c || names->len == 0)
		return false;
	key = g_string_new(NULL);
	for (guint i = 0; i < names->len; i++) {
		g_string_append_c(key, '/');
		g_string_append(key, names->pdata[i]);
	}
	g_mutex_lock(&c->lock);
	for (guint d = names->len; d > 0 && !found; d--) {
		struct fhc_entry *e = g_hash_table_lookup(c->map, key->str);

		if (e && e->expires > now && !(above && d == names->len)) {
			g_byte_array_set_size(fh, 0);
			g_byte_array_append(fh, e->fh, e->len);
			*depth = d;
			*keyp = g_strdup(key->str);
			*expires = e->expires;
			found = true;
		}
		g_string_truncate(key, key->len - strlen(names->pdata[d - 1]) - 1);
	}
	g_mutex_unlock(&c->lock);
	g_string_free(key, TRUE);
	return found;
}
