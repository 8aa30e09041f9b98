/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics.c - per-referral counters and latency histograms, and their text in the Prometheus
 * exposition format. Counting is atomic adds on the request's path; only a failed operation
 * takes a lock (errors are kept by operation and errno, in a small table).
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fedfuse/metrics.h"

/* Upper bounds of the latency buckets, in microseconds: 10 us to 10 s, three per decade. */
static const gint64 bucket_usec[] = { 10,     25,      50,	100,	 250,	  500,	  1000,
				      2500,   5000,    10000,	25000,	 50000,	  100000, 250000,
				      500000, 1000000, 2500000, 5000000, 10000000 };
#define NBUCKETS G_N_ELEMENTS(bucket_usec)

struct op_counts {
	gint64 usec;
	gint64 bucket[NBUCKETS + 1]; /* not cumulative; the last one is above 10 s */
};

struct ff_metrics {
	struct op_counts op[FF_OP_COUNT];
	gint64 bytes_read;
	gint64 bytes_written;
	GMutex errors_lock;
	GHashTable *errors; /* op << 16 | errno -> count */
};

struct ff_metrics *ff_metrics_new(void)
{
	struct ff_metrics *mx = g_new0(struct ff_metrics, 1);

	g_mutex_init(&mx->errors_lock);
	mx->errors = g_hash_table_new(g_direct_hash, g_direct_equal);
	return mx;
}

void ff_metrics_free(struct ff_metrics *mx)
{
	if (!mx)
		return;
	g_hash_table_unref(mx->errors);
	g_mutex_clear(&mx->errors_lock);
	g_free(mx);
}

void ff_metrics_op(struct ff_metrics *mx, enum ff_op op, int rc, gint64 usec)
{
	struct op_counts *c = &mx->op[op];
	guint b = 0;

	while (b < NBUCKETS && usec > bucket_usec[b])
		b++;
	__atomic_fetch_add(&c->bucket[b], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->usec, usec, __ATOMIC_RELAXED);
	if (rc < 0 && -rc < 0xffff) {
		gpointer key = GUINT_TO_POINTER((guint)op << 16 | (guint)-rc);

		g_mutex_lock(&mx->errors_lock);
		g_hash_table_insert(
			mx->errors, key,
			GSIZE_TO_POINTER(GPOINTER_TO_SIZE(g_hash_table_lookup(mx->errors, key)) +
					 1));
		g_mutex_unlock(&mx->errors_lock);
	}
}

void ff_metrics_bytes(struct ff_metrics *mx, enum ff_op op, gint64 n)
{
	if (n <= 0)
		return;
	if (op == FF_OP_READ)
		__atomic_fetch_add(&mx->bytes_read, n, __ATOMIC_RELAXED);
	else if (op == FF_OP_WRITE)
		__atomic_fetch_add(&mx->bytes_written, n, __ATOMIC_RELAXED);
}

/* ---- text ---------------------------------------------------------------------------------- */

static void family(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: UTF-8, with backslash, double quote and newline escaped. */
static void append_label_value(GString *out, const char *value)
{
	g_autofree char *valid = g_utf8_make_valid(value, -1);

	for (const char *p = valid; *p; p++) {
		if (*p == '\\' || *p == '"')
			g_string_append_c(out, '\\');
		if (*p == '\n')
			g_string_append(out, "\\n");
		else
			g_string_append_c(out, *p);
	}
}

/* name{location="...",uri="..."[,extra] */
static void sample_start(GString *out, const char *name, const struct ff_metrics_location *l)
{
	g_string_append_printf(out, "%s{location=\"", name);
	append_label_value(out, l->ns_path);
	g_string_append(out, "\",uri=\"");
	append_label_value(out, l->uri);
	g_string_append_c(out, '"');
}

static gint64 load(const gint64 *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static int compare_keys(const void *a, const void *b)
{
	guint x = GPOINTER_TO_UINT(*(gpointer const *)a),
	      y = GPOINTER_TO_UINT(*(gpointer const *)b);

	return x < y ? -1 : x > y;
}

static void append_errors(GString *out, const struct ff_metrics_location *l)
{
	struct ff_metrics *mx = (struct ff_metrics *)l->mx;
	gpointer *keys;
	guint n;

	g_mutex_lock(&mx->errors_lock);
	keys = g_hash_table_get_keys_as_array(mx->errors, &n);
	qsort(keys, n, sizeof(*keys), compare_keys);
	for (guint i = 0; i < n; i++) {
		guint key = GPOINTER_TO_UINT(keys[i]);
		const char *name = strerrorname_np((int)(key & 0xffff));

		sample_start(out, "fedfuse_backend_errors_total", l);
		g_string_append_printf(out, ",op=\"%s\",errno=\"", ff_op_name(key >> 16));
		if (name)
			g_string_append(out, name);
		else
			g_string_append_printf(out, "E%u", key & 0xffff);
		g_string_append_printf(out, "\"} %zu\n",
				       GPOINTER_TO_SIZE(g_hash_table_lookup(mx->errors, keys[i])));
	}
	g_mutex_unlock(&mx->errors_lock);
	g_free(keys);
}

static void append_histogram(GString *out, const struct ff_metrics_location *l, enum ff_op op)
{
	const struct op_counts *c = &l->mx->op[op];
	const char *name = ff_op_name(op);
	gint64 cumulative = 0;

	for (guint b = 0; b <= NBUCKETS; b++) {
		cumulative += load(&c->bucket[b]);
		sample_start(out, "fedfuse_backend_op_duration_seconds_bucket", l);
		if (b < NBUCKETS)
			g_string_append_printf(out, ",op=\"%s\",le=\"%g\"} %" G_GINT64_FORMAT "\n",
					       name, bucket_usec[b] / 1e6, cumulative);
		else
			g_string_append_printf(out,
					       ",op=\"%s\",le=\"+Inf\"} %" G_GINT64_FORMAT "\n",
					       name, cumulative);
	}
	sample_start(out, "fedfuse_backend_op_duration_seconds_sum", l);
	g_string_append_printf(out, ",op=\"%s\"} %.6f\n", name, load(&c->usec) / 1e6);
	sample_start(out, "fedfuse_backend_op_duration_seconds_count", l);
	/* the buckets' total: a count read after them could be ahead of the +Inf bucket */
	g_string_append_printf(out, ",op=\"%s\"} %" G_GINT64_FORMAT "\n", name, cumulative);
}

/* A byte counter family: the gint64 at `field` of each location's metrics. */
static void append_bytes(GString *out, const char *name, const char *help,
			 const struct ff_metrics_location *locs, guint n, size_t field)
{
	family(out, name, "counter", help);
	for (guint i = 0; i < n; i++) {
		sample_start(out, name, &locs[i]);
		g_string_append_printf(out, "} %" G_GINT64_FORMAT "\n",
				       load((const gint64 *)((const char *)locs[i].mx + field)));
	}
}

void ff_metrics_append_locations(const struct ff_metrics_location *locs, guint n, GString *out)
{
	family(out, "fedfuse_backend_ops_total", "counter",
	       "Operations sent to a referral's locations (and to locations of junctions below it).");
	for (guint i = 0; i < n; i++)
		for (int op = 0; op < FF_OP_COUNT; op++) {
			gint64 count = 0;

			for (guint b = 0; b <= NBUCKETS; b++)
				count += load(&locs[i].mx->op[op].bucket[b]);
			sample_start(out, "fedfuse_backend_ops_total", &locs[i]);
			g_string_append_printf(out, ",op=\"%s\"} %" G_GINT64_FORMAT "\n",
					       ff_op_name(op), count);
		}
	family(out, "fedfuse_backend_errors_total", "counter",
	       "Operations that failed, by operation and errno name.");
	for (guint i = 0; i < n; i++)
		append_errors(out, &locs[i]);
	family(out, "fedfuse_backend_op_duration_seconds", "histogram",
	       "Time an operation took in the backend, by operation.");
	for (guint i = 0; i < n; i++)
		for (int op = 0; op < FF_OP_COUNT; op++)
			append_histogram(out, &locs[i], op);
	append_bytes(out, "fedfuse_backend_read_bytes_total",
		     "Bytes read from a referral's locations.", locs, n,
		     offsetof(struct ff_metrics, bytes_read));
	append_bytes(out, "fedfuse_backend_written_bytes_total",
		     "Bytes written to a referral's locations.", locs, n,
		     offsetof(struct ff_metrics, bytes_written));
	family(out, "fedfuse_location_up", "gauge",
	       "1 while a location answers, 0 while it is down (absent before its first use).");
	for (guint i = 0; i < n; i++) {
		if (locs[i].state == FF_MOUNT_IDLE)
			continue;
		sample_start(out, "fedfuse_location_up", &locs[i]);
		g_string_append_printf(out, "} %d\n", locs[i].state == FF_MOUNT_UP);
	}
	family(out, "fedfuse_location_write_behind_bytes", "gauge",
	       "Data written to a location that is not yet on its server's stable storage "
	       "(write-behind=): in flight, awaiting COMMIT, or to be sent again; a junction's "
	       "locations count to the referral it is reached through.");
	for (guint i = 0; i < n; i++) {
		sample_start(out, "fedfuse_location_write_behind_bytes", &locs[i]);
		g_string_append_printf(out, "} %" G_GUINT64_FORMAT "\n", locs[i].write_behind);
	}
}

void ff_metrics_append_value(GString *out, const char *name, const char *type, const char *help,
			     double value)
{
	family(out, name, type, help);
	g_string_append_printf(out, "%s %.17g\n", name, value);
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

void ff_metrics_append_process(GString *out)
{
	unsigned long pages_virt = 0, pages_res = 0;
	struct rusage ru;
	struct rlimit rl;
	FILE *f = fopen("/proc/self/statm", "r");
	long page = sysconf(_SC_PAGESIZE);
	int fds = count_open_fds();

	if (f) {
		if (fscanf(f, "%lu %lu", &pages_virt, &pages_res) != 2)
			pages_virt = pages_res = 0;
		fclose(f);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		ff_metrics_append_value(out, "process_cpu_seconds_total", "counter",
					"User and system CPU time spent, in seconds.",
					ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
						(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	if (pages_res)
		ff_metrics_append_value(out, "process_resident_memory_bytes", "gauge",
					"Resident memory size in bytes.", (double)pages_res * page);
	if (pages_virt)
		ff_metrics_append_value(out, "process_virtual_memory_bytes", "gauge",
					"Virtual memory size in bytes.", (double)pages_virt * page);
	if (fds >= 0)
		ff_metrics_append_value(out, "process_open_fds", "gauge",
					"Number of open file descriptors.", fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		ff_metrics_append_value(out, "process_max_fds", "gauge",
					"Maximum number of open file descriptors.",
					(double)rl.rlim_cur);
}
