/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.c - `fedfuse --check NAMESPACE_FILE [MOUNTPOINT]`: a dry run. Validates the file as a
 * mount would, connects to every location at once and asks each for its root, within the
 * timeouts the file gives, and prints one line per location. With MOUNTPOINT, also what a
 * reload (SIGHUP) of that running mount would change, from the namespace it describes in
 * /.fedfuse/namespace. Nothing is mounted, nothing running is changed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "fedfuse/check.h"
#include "fedfuse/cred.h"
#include "fedfuse/log.h"
#include "fedfuse/mount.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"
#include "fedfuse/readfile.h"

#define CONTROL_NAMESPACE "/.fedfuse/namespace"
#define CONTROL_MAX (16 << 20)
#define GRACE_USEC (2 * G_USEC_PER_SEC) /* beyond the longest timeout, before giving up */

/* One location being probed. */
struct probe {
	const struct ff_referral *r;
	const struct ff_location *loc;
	struct ff_mount *m;
	/* Set by the probing thread, then `done` under the lock. */
	int rc;
	char *why;
	gint64 usec;
	bool done;
};

struct probes {
	GMutex lock;
	GCond cond;
	guint pending;
};

struct probe_job {
	struct probe *p;
	struct probes *all;
};

static gpointer probe_thread(gpointer data)
{
	struct probe_job *job = data;
	struct probe *p = job->p;
	gint64 start = g_get_monotonic_time();
	struct ff_cred_hold self;
	ff_node *root = NULL;
	int rc;

	ff_cred_self(&self);
	rc = ff_mount_connect(p->m);
	if (rc == 0)
		rc = ff_mount_root_node(p->m, &self.cred, &root);
	ff_cred_put(&self);
	g_mutex_lock(&p->m->lock);
	p->why = rc < 0 && p->m->last_error ? g_strdup(p->m->last_error) : NULL;
	g_mutex_unlock(&p->m->lock);
	if (rc < 0 && !p->why)
		p->why = g_strdup(g_strerror(-rc));
	g_mutex_lock(&job->all->lock);
	p->rc = rc;
	p->usec = g_get_monotonic_time() - start;
	p->done = true;
	job->all->pending--;
	g_cond_broadcast(&job->all->cond);
	g_mutex_unlock(&job->all->lock);
	g_free(job);
	return NULL;
}

static void add_probe(GArray *list, struct ff_mounts *mounts, const struct ff_referral *r,
		      const struct ff_location *loc)
{
	struct probe p = { .r = r, .loc = loc };

	p.m = ff_mounts_get(mounts, r->path, loc, r->attr_timeout, NULL);
	g_array_append_val(list, p);
}

/* Probe every location of `ns` at once (those of an FSN as its NSDB gives them); print one line each, in file order. Returns true when
 * every one answered; false, with *stuck set, when one did not answer even within its timeout
 * (its thread is still in the backend). */
static bool probe_all(const struct ff_namespace *ns, struct ff_mounts *mounts, bool *stuck)
{
	struct probes all = { .pending = 0 };
	GArray *list = g_array_new(FALSE, TRUE, sizeof(struct probe));
	double longest = ns->timeout;
	gint64 deadline;
	bool ok = true;

	/* the locations FSNs stand for, kept until the process exits (threads may use them) */
	GPtrArray *fsns = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
	struct ff_nsdb *nsdb = ff_nsdb_new();

	g_mutex_init(&all.lock);
	g_cond_init(&all.cond);
	for (guint i = 0; i < ns->referrals->len; i++) {
		const struct ff_referral *r = g_ptr_array_index(ns->referrals, i);

		longest = MAX(longest, r->timeout);
		for (guint k = 0; k < r->locations->len; k++) {
			const struct ff_location *loc = g_ptr_array_index(r->locations, k);
			GPtrArray *got = NULL;
			char *msg = NULL;

			if (!ff_nsdb_is_fsn(&loc->spec)) {
				add_probe(list, mounts, r, loc);
				continue;
			}
			if (ff_nsdb_resolve(nsdb, ns, loc, r->timeout, &got, &msg) < 0) {
				printf("down  %s  %s  %s\n", r->path, loc->spec.uri, msg);
				g_free(msg);
				ok = false;
				continue;
			}
			printf("fsn   %s  %s  %u location%s\n", r->path, loc->spec.uri, got->len,
			       got->len == 1 ? "" : "s");
			g_ptr_array_add(fsns, got);
			for (guint f = 0; f < got->len; f++)
				add_probe(list, mounts, r, got->pdata[f]);
		}
	}
	ff_nsdb_free(nsdb);
	all.pending = list->len;
	for (guint i = 0; i < list->len; i++) {
		struct probe_job *job = g_new(struct probe_job, 1);

		job->p = &g_array_index(list, struct probe, i);
		job->all = &all;
		g_thread_unref(g_thread_new("probe", probe_thread, job));
	}
	deadline = g_get_monotonic_time() + (gint64)(longest * G_USEC_PER_SEC) + GRACE_USEC;
	g_mutex_lock(&all.lock);
	while (all.pending > 0)
		if (!g_cond_wait_until(&all.cond, &all.lock, deadline))
			break;
	*stuck = all.pending > 0;
	for (guint i = 0; i < list->len; i++) {
		struct probe *p = &g_array_index(list, struct probe, i);

		if (!p->done) {
			printf("down  %s  %s  no answer within %g s\n", p->r->path,
			       p->loc->spec.uri, p->r->timeout);
			ok = false;
		} else if (p->rc < 0) {
			printf("down  %s  %s  %s\n", p->r->path, p->loc->spec.uri, p->why);
			ok = false;
		} else {
			printf("up    %s  %s  %.1f ms\n", p->r->path, p->loc->spec.uri,
			       p->usec / 1000.0);
		}
	}
	g_mutex_unlock(&all.lock);
	if (*stuck)
		return false; /* the threads still use `list` and `all`: the process exits now */
	for (guint i = 0; i < list->len; i++) {
		struct probe *p = &g_array_index(list, struct probe, i);

		g_free(p->why);
		ff_mount_unref(p->m);
	}
	g_array_free(list, TRUE);
	g_ptr_array_unref(fsns);
	g_mutex_clear(&all.lock);
	g_cond_clear(&all.cond);
	return ok;
}

/* ---- what a reload would change ------------------------------------------------------------- */

/* The described namespace (ff_namespace_describe) as path -> line for referrals, and
 * key -> value for the namespace's own settings. */
static void split_description(const char *text, GHashTable *referrals, GHashTable *settings)
{
	char **lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		char *sp = strchr(*l, ' ');
		char *eq = strchr(*l, '=');

		if (**l == '/' && sp && g_str_has_prefix(sp, " referral "))
			g_hash_table_replace(referrals, g_strndup(*l, sp - *l), g_strdup(sp + 10));
		else if (**l != '/' && eq)
			g_hash_table_replace(settings, g_strndup(*l, eq - *l), g_strdup(eq + 1));
	}
	g_strfreev(lines);
}

/* "key=value" words of a referral line, in order. A URI list holds no space. */
static GHashTable *words(const char *line, GPtrArray *order)
{
	GHashTable *w = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	char **parts = g_strsplit(line, " ", -1);

	for (char **p = parts; *p; p++) {
		char *eq = strchr(*p, '=');
		char *key = eq ? g_strndup(*p, eq - *p) : g_strdup(*p);

		if (order)
			g_ptr_array_add(order, g_strdup(key));
		g_hash_table_replace(w, key, g_strdup(eq ? eq + 1 : ""));
	}
	g_strfreev(parts);
	return w;
}

static void print_change(const char *path, const char *before, const char *after)
{
	GPtrArray *order = g_ptr_array_new_with_free_func(g_free);
	GHashTable *a = words(before, NULL), *b = words(after, order);

	printf("  change  %s:", path);
	for (guint i = 0; i < order->len; i++) {
		const char *key = order->pdata[i];
		const char *old = g_hash_table_lookup(a, key), *new = g_hash_table_lookup(b, key);

		if (!old)
			printf(" %s=%s (new)", key, new);
		else if (strcmp(old, new) != 0)
			printf(" %s: %s -> %s", key, old, new);
	}
	printf("\n");
	g_hash_table_unref(a);
	g_hash_table_unref(b);
	g_ptr_array_unref(order);
}

static int compare_strings(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted keys of `h` (a GPtrArray of borrowed strings). */
static GPtrArray *sorted_keys(GHashTable *h)
{
	GPtrArray *keys = g_ptr_array_new();
	GHashTableIter it;
	gpointer key;

	g_hash_table_iter_init(&it, h);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_ptr_array_add(keys, key);
	g_ptr_array_sort(keys, compare_strings);
	return keys;
}

/* Print what reloading the mount at `mountpoint` with `ns` would change. 0, or 1 when
 * `mountpoint` is no fedfuse mount. */
static int print_reload_diff(const struct ff_namespace *ns, const char *mountpoint)
{
	g_autofree char *path = g_strconcat(mountpoint, CONTROL_NAMESPACE, NULL);
	g_autofree char *running = ff_read_file(path, CONTROL_MAX, NULL);
	g_autofree char *wanted = NULL;
	GHashTable *old_refs, *new_refs, *old_set, *new_set;
	GPtrArray *keys;
	const char *old_file;
	int changes = 0;

	if (!running) {
		fprintf(stderr, "fedfuse: %s is not a fedfuse mount (cannot read %s: %s)\n",
			mountpoint, path, g_strerror(errno));
		return 1;
	}
	wanted = ff_namespace_describe(ns);
	old_refs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	new_refs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	old_set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	new_set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	split_description(running, old_refs, old_set);
	split_description(wanted, new_refs, new_set);

	old_file = g_hash_table_lookup(old_set, "file");
	if (old_file && strcmp(old_file, ns->file) != 0)
		printf("note: %s serves %s; a reload re-reads that file, not %s\n", mountpoint,
		       old_file, ns->file);
	g_hash_table_remove(old_set, "file");
	g_hash_table_remove(new_set, "file");
	printf("a reload of %s would change:\n", mountpoint);
	keys = sorted_keys(new_set);
	for (guint i = 0; i < keys->len; i++) {
		const char *old = g_hash_table_lookup(old_set, keys->pdata[i]);
		const char *new = g_hash_table_lookup(new_set, keys->pdata[i]);

		if (!old || strcmp(old, new) != 0) {
			printf("  setting %s: %s -> %s\n", (char *)keys->pdata[i],
			       old ? old : "(none)", new);
			changes++;
		}
	}
	g_ptr_array_unref(keys);
	keys = sorted_keys(new_refs);
	for (guint i = 0; i < keys->len; i++) {
		const char *old = g_hash_table_lookup(old_refs, keys->pdata[i]);
		const char *new = g_hash_table_lookup(new_refs, keys->pdata[i]);

		if (!old) {
			printf("  add     %s: %s\n", (char *)keys->pdata[i], new);
			changes++;
		} else if (strcmp(old, new) != 0) {
			print_change(keys->pdata[i], old, new);
			changes++;
		}
	}
	g_ptr_array_unref(keys);
	keys = sorted_keys(old_refs);
	for (guint i = 0; i < keys->len; i++)
		if (!g_hash_table_contains(new_refs, keys->pdata[i])) {
			printf("  remove  %s\n", (char *)keys->pdata[i]);
			changes++;
		}
	g_ptr_array_unref(keys);
	if (!changes)
		printf("  nothing\n");
	g_hash_table_unref(old_refs);
	g_hash_table_unref(new_refs);
	g_hash_table_unref(old_set);
	g_hash_table_unref(new_set);
	return 0;
}

int ff_check(const char *namespace_file, const char *mountpoint)
{
	g_autoptr(GError) err = NULL;
	struct ff_namespace *ns;
	struct ff_mounts *mounts;
	bool ok, stuck = false;
	int rc = 0;

	/* Only errors of the daemon's own: each location's outcome is printed below. */
	ff_log_init(true, false);
	ff_log_set_threshold(LOG_ERR);
	ns = ff_namespace_load(namespace_file, ff_plugin_check_location, NULL, &err);
	if (!ns) {
		fprintf(stderr, "%s\n", err->message);
		return 1;
	}
	printf("%s: valid, %u referral%s\n", ns->file, ns->referrals->len,
	       ns->referrals->len == 1 ? "" : "s");
	mounts = ff_mounts_new();
	ok = probe_all(ns, mounts, &stuck);
	if (mountpoint)
		rc = print_reload_diff(ns, mountpoint);
	fflush(stdout);
	if (stuck)
		_exit(1); /* a backend call that ignores its timeout: do not wait for it */
	ff_mounts_free(mounts);
	ff_namespace_unref(ns);
	return ok && rc == 0 ? 0 : 1;
}
