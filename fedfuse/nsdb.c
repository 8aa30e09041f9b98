/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nsdb.c - the daemon's answers from NSDBs: each FSN location resolved to its FSLs' locations,
 * kept for the FSN's TTL, refreshed by one request at a time while others use what is known,
 * and served stale for a grace while no NSDB server answers.
 *
 * Lock order: db->lock is a leaf; no LDAP call is made while it is held.
 */
#include <errno.h>
#include <string.h>

#include "fedfuse/log.h"
#include "fedfuse/namespace.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"

/* After an attempt that failed, the answer (stale, or the error) stands this long. */
#define NSDB_RETRY (2 * G_USEC_PER_SEC)

enum fsn_state { FSN_NEW, FSN_FRESH, FSN_STALE, FSN_DOWN, FSN_ERROR };

/* What is known of one FSN (by its location URI, "fedfs://host:port/uuid"). */
struct fsn_entry {
	char *uri;
	GPtrArray *uris; /* char *, the FSLs' URIs in order of preference; NULL until known */
	char *server;	 /* the NSDB server that answered last */
	gint64 fetched;	 /* monotonic usec of the last answer */
	gint64 expires;	 /* fetched + TTL */
	gint64 retry_at; /* after a failed attempt: no new one before this */
	bool busy;	 /* a request is asking the directory */
	enum fsn_state state;
	char *last_error;
	int error; /* of the last failed attempt */
	guint64 queries;
};

struct ff_nsdb {
	GMutex lock;
	GCond done;	  /* a busy entry is no longer busy */
	GHashTable *fsns; /* uri -> struct fsn_entry * */
	GHashTable *nces; /* "host:port" -> the NCE's DN it gave, so that a refresh is one search */
};

static void entry_free(gpointer p)
{
	struct fsn_entry *e = p;

	g_free(e->uri);
	if (e->uris)
		g_ptr_array_unref(e->uris);
	g_free(e->server);
	g_free(e->last_error);
	g_free(e);
}

struct ff_nsdb *ff_nsdb_new(void)
{
	struct ff_nsdb *db = g_new0(struct ff_nsdb, 1);

	g_mutex_init(&db->lock);
	g_cond_init(&db->done);
	db->fsns = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
	db->nces = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	return db;
}

void ff_nsdb_free(struct ff_nsdb *db)
{
	if (!db)
		return;
	g_hash_table_destroy(db->fsns);
	g_hash_table_destroy(db->nces);
	g_cond_clear(&db->done);
	g_mutex_clear(&db->lock);
	g_free(db);
}

static const struct ff_nsdb_conf *conf_of(const struct ff_namespace *ns, const char *server)
{
	return ns->nsdbs ? g_hash_table_lookup(ns->nsdbs, server) : NULL;
}

/* An FSL's URI as a location: RFC 7532 (2.8.1) writes the path as "/" followed by "/COMPONENT"
 * for each component, so nfs://host//export/a is the export's /export/a; one '/' goes. */
static char *fsl_uri(const char *uri)
{
	const char *auth = strstr(uri, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;

	if (!path || path[1] != '/')
		return g_strdup(uri);
	return g_strdup_printf("%.*s%s", (int)(path - uri), uri, path + 1);
}

char *ff_nsdb_fsl_location(const char *uri, char **msg)
{
	g_autofree char *norm = fsl_uri(uri);
	struct ff_location loc;
	char *why = NULL;
	bool ok = false;

	if (!ff_location_parse(norm, &loc, msg))
		return NULL;
	if (strcmp(loc.spec.scheme, "nfs") != 0 && strcmp(loc.spec.scheme, "smb") != 0)
		*msg = g_strdup_printf("scheme '%s' is not nfs or smb", loc.spec.scheme);
	else if (ff_plugin_check_location(&loc.spec, NULL, &why) != 0)
		*msg = why ? why : g_strdup("refused by its backend");
	else
		ok = true;
	ff_location_clear(&loc);
	return ok ? g_steal_pointer(&norm) : NULL;
}

/* Read FSN `uuid` through `conn`, with the NCE this server gave before (asked again when the FSN
 * is not found under it: the NCE may have moved). */
static int read_fsn(struct ff_nsdb *db, struct ff_nsdb_conn *conn, const char *uuid,
		    gint64 deadline, struct ff_nsdb_fsn **fsn, GPtrArray *bad, char **msg)
{
	const char *server = ff_nsdb_conn_server(conn), *nce;
	bool primed;
	int rc;

	g_mutex_lock(&db->lock);
	nce = g_hash_table_lookup(db->nces, server);
	primed = nce != NULL;
	ff_nsdb_conn_set_nce(conn, nce);
	g_mutex_unlock(&db->lock);
	rc = ff_nsdb_read_fsn(conn, uuid, deadline, fsn, bad, msg);
	if (rc == -ENOENT && primed) {
		g_clear_pointer(msg, g_free);
		ff_nsdb_conn_set_nce(conn, NULL);
		rc = ff_nsdb_read_fsn(conn, uuid, deadline, fsn, bad, msg);
	}
	nce = ff_nsdb_conn_nce(conn);
	if (nce) {
		g_mutex_lock(&db->lock);
		g_hash_table_replace(db->nces, g_strdup(server), g_strdup(nce));
		g_mutex_unlock(&db->lock);
	}
	return rc;
}

/*
 * Ask the NSDB servers of `server` in turn (the NSDB, then its replicas) for FSN `uuid`. On
 * success *uris holds the usable FSLs' URIs in order and *ttl the FSN's TTL. Returns 0, a
 * connection-level error when none answered, or the answer's error.
 */
static int ask(struct ff_nsdb *db, const struct ff_namespace *ns, const char *fsn_uri,
	       const char *server, const char *uuid, gint64 deadline, GPtrArray **uris, double *ttl,
	       char **answered, char **msg)
{
	const struct ff_nsdb_conf *conf = conf_of(ns, server);
	g_autoptr(GPtrArray) single = NULL;
	GPtrArray *servers;
	int rc = -EHOSTDOWN;

	if (conf) {
		servers = conf->servers;
	} else {
		single = g_ptr_array_new();
		g_ptr_array_add(single, (char *)server);
		servers = single;
	}
	for (guint i = 0; i < servers->len; i++) {
		const char *name = servers->pdata[i];
		g_autoptr(GPtrArray) bad = g_ptr_array_new_with_free_func(g_free);
		struct ff_nsdb_conn *conn = NULL;
		struct ff_nsdb_fsn *fsn = NULL;
		char *m = NULL;

		/* a server that does not answer leaves the others their share of the time */
		gint64 now = g_get_monotonic_time();
		gint64 until = now + MAX(0, deadline - now) / (gint64)(servers->len - i);

		rc = ff_nsdb_connect(name, conf, until, NULL, NULL, &conn, &m);
		if (rc == 0)
			rc = read_fsn(db, conn, uuid, until, &fsn, bad, &m);
		ff_nsdb_close(conn);
		for (guint b = 0; b < bad->len; b++) {
			g_autofree char *key =
				g_strdup_printf("nsdb %s %s", fsn_uri, (char *)bad->pdata[b]);

			ff_log_once(LOG_WARNING, key, 3600, "%s: NSDB %s: %s, left out", fsn_uri,
				    name, (char *)bad->pdata[b]);
		}
		if (rc == -EHOSTDOWN || rc == -ETIMEDOUT || rc == -ECONNREFUSED) {
			/* the next replica; what each said, when none answers */
			char *all = *msg ? g_strdup_printf("%s; %s", *msg, m) : g_strdup(m);

			g_free(*msg);
			g_free(m);
			*msg = all;
			continue;
		}
		if (rc < 0) {
			g_free(*msg);
			*msg = m;
			return rc;
		}
		g_free(m);
		g_clear_pointer(msg, g_free); /* what a replica before said */
		*uris = g_ptr_array_new_with_free_func(g_free);
		*ttl = (double)fsn->ttl;
		for (guint f = 0; f < fsn->fsls->len; f++) {
			const struct ff_nsdb_fsl *fsl = fsn->fsls->pdata[f];
			g_autofree char *why = NULL, *uri = NULL;

			if (fsl->going)
				continue;
			uri = ff_nsdb_fsl_location(fsl->uri, &why);
			if (!uri) {
				g_autofree char *key =
					g_strdup_printf("nsdb %s %s", fsn_uri, fsl->dn);
				g_autofree char *dn = ff_shown(fsl->dn);

				ff_log_once(LOG_WARNING, key, 3600,
					    "%s: NSDB %s: FSL %s: %s, left out", fsn_uri, name, dn,
					    why);
				continue;
			}
			if (fsl->validfor > 0 && fsl->validfor < *ttl)
				*ttl = (double)fsl->validfor;
			g_ptr_array_add(*uris, g_steal_pointer(&uri));
		}
		ff_nsdb_fsn_free(fsn);
		if ((*uris)->len == 0) {
			g_clear_pointer(uris, g_ptr_array_unref);
			*msg = g_strdup_printf("FSN %s on NSDB %s has no usable FSL", uuid, name);
			return -ENOENT;
		}
		*answered = g_strdup(name);
		return 0;
	}
	if (servers->len > 1) {
		char *all = g_strdup_printf("no NSDB server answers (%s)", *msg);

		g_free(*msg);
		*msg = all;
	}
	return rc == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTDOWN;
}

/* The locations of `uris`, each with the options of `fsn`'s spec. */
static GPtrArray *locations_of(GPtrArray *uris, const struct ff_location *fsn)
{
	GPtrArray *locs = g_ptr_array_new_with_free_func(ff_location_free);

	for (guint i = 0; i < uris->len; i++) {
		struct ff_location *loc = g_new0(struct ff_location, 1);
		struct ff_location_spec *spec = &loc->spec;

		if (!ff_location_parse(uris->pdata[i], loc, NULL)) {
			g_free(loc); /* checked when it was stored */
			continue;
		}
		spec->timeout = fsn->spec.timeout;
		spec->read_only = fsn->spec.read_only;
		spec->watch = fsn->spec.watch;
		spec->credentials = fsn->spec.credentials;
		spec->per_user = fsn->spec.per_user;
		spec->credentials_dir = fsn->spec.credentials_dir;
		spec->user_credentials = fsn->spec.user_credentials;
		spec->krb5 = fsn->spec.krb5;
		spec->krb5_ccache = fsn->spec.krb5_ccache;
		spec->write_behind = fsn->spec.write_behind;
		spec->read_ahead = fsn->spec.read_ahead;
		spec->uid_set = fsn->spec.uid_set;
		spec->uid = fsn->spec.uid;
		spec->gid_set = fsn->spec.gid_set;
		spec->gid = fsn->spec.gid;
		spec->file_mode = fsn->spec.file_mode;
		spec->dir_mode = fsn->spec.dir_mode;
		spec->attr_timeout = fsn->spec.attr_timeout;
		loc->line = fsn->line;
		g_ptr_array_add(locs, loc);
	}
	return locs;
}

static void set_error(struct fsn_entry *e, enum fsn_state state, const char *msg)
{
	e->state = state;
	g_free(e->last_error);
	e->last_error = g_strdup(msg);
}

int ff_nsdb_resolve(struct ff_nsdb *db, const struct ff_namespace *ns,
		    const struct ff_location *fsn, double timeout, GPtrArray **out, char **msg)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)(timeout * G_USEC_PER_SEC);
	gint64 grace = (gint64)(ns->nsdb_stale_grace * G_USEC_PER_SEC);
	g_autofree char *server = NULL, *uuid = NULL, *answered = NULL;
	GPtrArray *uris = NULL, *fresh = NULL;
	struct fsn_entry *e;
	double ttl = 0;
	gint64 now;
	int rc;

	rc = ff_nsdb_fsn_parse(&fsn->spec, &server, &uuid, msg);
	if (rc < 0)
		return rc;
	g_mutex_lock(&db->lock);
	e = g_hash_table_lookup(db->fsns, fsn->spec.uri);
	if (!e) {
		e = g_new0(struct fsn_entry, 1);
		e->uri = g_strdup(fsn->spec.uri);
		g_hash_table_insert(db->fsns, e->uri, e);
	}
	for (;;) {
		now = g_get_monotonic_time();
		if (e->uris && now < e->expires)
			goto out_use; /* fresh */
		if (now < e->retry_at) {
			/* The last attempt failed a moment ago: no request waits on it again. */
			if (e->uris && now < e->expires + grace)
				goto out_use;
			if (e->state == FSN_STALE)
				e->state = FSN_DOWN; /* its grace is over */
			*msg = g_strdup_printf("%s: %s", e->uri, e->last_error);
			rc = e->state == FSN_ERROR ? e->error : -EHOSTDOWN;
			g_mutex_unlock(&db->lock);
			return rc;
		}
		if (!e->busy)
			break;
		/* Another request asks the directory: what is known serves meanwhile. */
		if (e->uris && now < e->expires + grace)
			goto out_use;
		if (!g_cond_wait_until(&db->done, &db->lock, deadline)) {
			g_mutex_unlock(&db->lock);
			*msg = g_strdup_printf("%s: the NSDB did not answer in time", e->uri);
			return -EHOSTDOWN;
		}
	}
	e->busy = true;
	e->queries++;
	g_mutex_unlock(&db->lock);

	rc = ask(db, ns, fsn->spec.uri, server, uuid, deadline, &fresh, &ttl, &answered, msg);

	g_mutex_lock(&db->lock);
	e->busy = false;
	g_cond_broadcast(&db->done);
	now = g_get_monotonic_time();
	if (rc == 0) {
		if (ns->junction_cache_ttl < ttl)
			ttl = ns->junction_cache_ttl;
		if (e->uris)
			g_ptr_array_unref(e->uris);
		e->uris = fresh;
		e->fetched = now;
		e->expires = now + (gint64)(ttl * G_USEC_PER_SEC);
		g_free(e->server);
		e->server = g_steal_pointer(&answered);
		set_error(e, FSN_FRESH, NULL);
		e->retry_at = 0;
		goto out_use;
	}
	e->retry_at = now + NSDB_RETRY;
	e->error = rc == -ETIMEDOUT ? -EHOSTDOWN : rc;
	if ((rc == -EHOSTDOWN || rc == -ETIMEDOUT) && e->uris && now < e->expires + grace) {
		g_autofree char *key = g_strdup_printf("nsdb stale %s", e->uri);

		ff_log_once(LOG_WARNING, key, 60,
			    "%s: %s; serving the answer of %.0f s ago for %.0f s more", e->uri,
			    *msg, (now - e->fetched) / 1e6, (e->expires + grace - now) / 1e6);
		set_error(e, FSN_STALE, *msg);
		g_clear_pointer(msg, g_free);
		goto out_use;
	}
	set_error(e, rc == -EHOSTDOWN || rc == -ETIMEDOUT ? FSN_DOWN : FSN_ERROR, *msg);
	if (e->uris && rc != -EHOSTDOWN && rc != -ETIMEDOUT)
		g_clear_pointer(&e->uris, g_ptr_array_unref); /* the directory said otherwise */
	g_mutex_unlock(&db->lock);
	return rc == -ETIMEDOUT ? -EHOSTDOWN : rc;

out_use:
	uris = g_ptr_array_ref(e->uris);
	g_mutex_unlock(&db->lock);
	*out = locations_of(uris, fsn);
	g_ptr_array_unref(uris);
	return 0;
}

GPtrArray *ff_nsdb_cached(struct ff_nsdb *db, const struct ff_location *fsn, bool *down)
{
	GPtrArray *uris = NULL, *locs = NULL;
	struct fsn_entry *e;

	g_mutex_lock(&db->lock);
	e = g_hash_table_lookup(db->fsns, fsn->spec.uri);
	*down = e && e->state == FSN_DOWN;
	if (e && e->uris && (e->state == FSN_FRESH || e->state == FSN_STALE))
		uris = g_ptr_array_ref(e->uris);
	g_mutex_unlock(&db->lock);
	if (uris) {
		locs = locations_of(uris, fsn);
		g_ptr_array_unref(uris);
	}
	return locs;
}

static const char *state_name(enum fsn_state s)
{
	static const char *const names[] = { "new", "fresh", "stale", "down", "error" };

	return names[s];
}

void ff_nsdb_describe(struct ff_nsdb *db, GString *out)
{
	gint64 now = g_get_monotonic_time();
	g_autoptr(GList) keys = NULL;

	g_mutex_lock(&db->lock);
	keys = g_list_sort(g_hash_table_get_keys(db->fsns), (GCompareFunc)strcmp);
	for (GList *k = keys; k; k = k->next) {
		struct fsn_entry *e = g_hash_table_lookup(db->fsns, k->data);

		g_string_append_printf(out, "fsn\t%s\tstate=%s\tqueries=%" G_GUINT64_FORMAT, e->uri,
				       state_name(e->state), e->queries);
		if (e->uris) {
			g_string_append_printf(out, "\tserver=%s\tage=%.0fs\texpires-in=%.0fs",
					       e->server, (now - e->fetched) / 1e6,
					       MAX(0, e->expires - now) / 1e6);
			g_string_append(out, "\tlocations=");
			for (guint i = 0; i < e->uris->len; i++)
				g_string_append_printf(out, "%s%s", i ? ";" : "",
						       (char *)e->uris->pdata[i]);
		}
		if (e->last_error)
			g_string_append_printf(out, "\tlast-error=%s", e->last_error);
		g_string_append_c(out, '\n');
	}
	g_mutex_unlock(&db->lock);
}
