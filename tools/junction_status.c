/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_status.c - `fedfuse-junction status`: a mount's control files for a person: its
 * locations, what each referral's backends did (from /.fedfuse/metrics), the daemon's own
 * figures, per-mount statistics and the namespace in force.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "fedfuse/readfile.h"
#include "tools/fedfuse-junction.h"

/* A control file, read to its end (they report st_size 0). NULL with errno set on failure. */
static char *read_control(const char *dir, const char *name)
{
	char *path = g_build_filename(dir, name, NULL);
	char *text = ff_read_file(path, CONTROL_FILE_MAX, NULL);
	int e = errno;

	g_free(path);
	errno = e;
	return text;
}

/* One row of a table: cells padded to `width`, "-" for a missing one. */
static void print_row(char **cells, guint n, GArray *width)
{
	for (guint k = 0; k < n; k++) {
		const char *cell = cells[k] ? cells[k] : "-";
		int pad = g_array_index(width, int, k) - (int)g_utf8_strlen(cell, -1);

		printf("  %s%*s", cell, k + 1 < n ? pad : 0, "");
	}
	fputs("\n", stdout);
}

#define ROW_MAX 64 /* columns of a table */

static void row_free(gpointer p)
{
	char **row = p;

	for (int k = 0; k < ROW_MAX; k++)
		g_free(row[k]);
	g_free(row);
}

/* A titled table: a header of `n` columns, then `rows` (each ROW_MAX cells), lined up. */
static void print_table(const char *title, char **header, guint n, GPtrArray *rows)
{
	GArray *width = g_array_new(FALSE, TRUE, sizeof(int));

	g_array_set_size(width, n);
	for (guint k = 0; k < n; k++)
		g_array_index(width, int, k) = (int)g_utf8_strlen(header[k], -1);
	for (guint r = 0; r < rows->len; r++) {
		char **row = rows->pdata[r];

		for (guint k = 0; k < n; k++) {
			int w = row[k] ? (int)g_utf8_strlen(row[k], -1) : 1;

			if (w > g_array_index(width, int, k))
				g_array_index(width, int, k) = w;
		}
	}
	printf("%s\n", title);
	if (rows->len == 0)
		printf("  (none)\n");
	else
		print_row(header, n, width);
	for (guint r = 0; r < rows->len; r++)
		print_row(rows->pdata[r], n, width);
	g_array_unref(width);
}

/* /.fedfuse/locations: "REFERRAL\tURI\tkey=value..." per line, as a table whose columns are the
 * keys in the order first met (so new keys the daemon adds show up by themselves). */
static void print_locations(const char *text)
{
	char **lines = g_strsplit(text, "\n", -1);
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);

	g_ptr_array_add(keys, g_strdup("REFERRAL"));
	g_ptr_array_add(keys, g_strdup("LOCATION"));
	for (char **l = lines; *l; l++) {
		char **fields;
		char **row;

		if (!**l)
			continue;
		fields = g_strsplit(*l, "\t", -1);
		if (g_strv_length(fields) < 2) {
			g_strfreev(fields);
			continue;
		}
		row = g_new0(char *, ROW_MAX);
		row[0] = g_strdup(fields[0]);
		row[1] = g_strdup(fields[1]);
		for (char **f = fields + 2; *f; f++) {
			char *eq = strchr(*f, '=');
			char *key = eq ? g_ascii_strup(*f, eq - *f) : g_strdup("");
			guint k;

			for (k = 0; k < keys->len; k++)
				if (strcmp(keys->pdata[k], key) == 0)
					break;
			if (k == keys->len && k < ROW_MAX)
				g_ptr_array_add(keys, g_strdup(key));
			if (k < ROW_MAX && !row[k])
				row[k] = g_strdup(eq ? eq + 1 : *f);
			g_free(key);
		}
		g_ptr_array_add(rows, row);
		g_strfreev(fields);
	}
	print_table("Locations", (char **)keys->pdata, keys->len, rows);
	g_ptr_array_unref(rows);
	g_ptr_array_unref(keys);
	g_strfreev(lines);
}

/* ---- /.fedfuse/metrics ---------------------------------------------------------------------- */

/* One sample of the Prometheus text format: name{label="value",...} value. */
struct sample {
	char *name;
	GHashTable *labels; /* name -> value, unescaped */
	double value;
};

static void sample_clear(struct sample *sm)
{
	g_free(sm->name);
	if (sm->labels)
		g_hash_table_unref(sm->labels);
}

/* A sample line into `sm`: false for a comment, a blank or a line it cannot read. */
static bool parse_sample(const char *line, struct sample *sm)
{
	const char *p = line + strcspn(line, "{ ");
	char *end;

	memset(sm, 0, sizeof(*sm));
	if (!*line || *line == '#' || p == line)
		return false;
	sm->name = g_strndup(line, p - line);
	sm->labels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	if (*p == '{') {
		p++;
		while (*p && *p != '}') {
			const char *eq = strchr(p, '=');
			GString *v = g_string_new(NULL);
			char *key;

			if (!eq || eq[1] != '"') {
				g_string_free(v, TRUE);
				goto bad;
			}
			key = g_strndup(p, eq - p);
			for (p = eq + 2; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				g_string_append_c(v, *p == 'n' && p[-1] == '\\' ? '\n' : *p);
			}
			g_hash_table_replace(sm->labels, key, g_string_free(v, FALSE));
			if (*p != '"')
				goto bad;
			p++;
			if (*p == ',')
				p++;
		}
		if (*p != '}')
			goto bad;
		p++;
	}
	sm->value = g_ascii_strtod(p, &end);
	if (end == p)
		goto bad;
	return true;
bad:
	sample_clear(sm);
	return false;
}

/* What one referral's location did, summed over operations. */
struct traffic {
	char *location, *uri;
	double ops, errors, read, written, seconds, up;
	GArray *le, *cumulative; /* latency buckets (double), summed over operations */
	GPtrArray *error_rows;	 /* rows of the errors table */
};

static void traffic_free(gpointer p)
{
	struct traffic *t = p;

	g_free(t->location);
	g_free(t->uri);
	g_array_unref(t->le);
	g_array_unref(t->cumulative);
	g_ptr_array_unref(t->error_rows);
	g_free(t);
}

static struct traffic *traffic_of(GPtrArray *all, const struct sample *sm)
{
	const char *location = g_hash_table_lookup(sm->labels, "location");
	const char *uri = g_hash_table_lookup(sm->labels, "uri");
	struct traffic *t;

	if (!location || !uri)
		return NULL;
	for (guint i = 0; i < all->len; i++) {
		t = all->pdata[i];
		if (strcmp(t->location, location) == 0 && strcmp(t->uri, uri) == 0)
			return t;
	}
	t = g_new0(struct traffic, 1);
	t->location = g_strdup(location);
	t->uri = g_strdup(uri);
	t->up = -1;
	t->le = g_array_new(FALSE, FALSE, sizeof(double));
	t->cumulative = g_array_new(FALSE, FALSE, sizeof(double));
	t->error_rows = g_ptr_array_new_with_free_func(row_free);
	g_ptr_array_add(all, t);
	return t;
}

static void add_bucket(struct traffic *t, const char *le, double count)
{
	double bound = strcmp(le, "+Inf") == 0 ? INFINITY : g_ascii_strtod(le, NULL);
	guint i;

	for (i = 0; i < t->le->len; i++)
		if (g_array_index(t->le, double, i) == bound)
			break;
	if (i == t->le->len) {
		double zero = 0;

		g_array_append_val(t->le, bound);
		g_array_append_val(t->cumulative, zero);
	}
	g_array_index(t->cumulative, double, i) += count;
}

/* "12 us", "3.4 ms", "1.2 s" */
static char *duration(double seconds)
{
	if (isinf(seconds))
		return g_strdup("> 10 s");
	if (seconds < 1e-3)
		return g_strdup_printf("%.0f us", seconds * 1e6);
	if (seconds < 1)
		return g_strdup_printf("%.3g ms", seconds * 1e3);
	return g_strdup_printf("%.3g s", seconds);
}

/* The upper bound of the bucket in which the q-quantile falls. */
static char *quantile(const struct traffic *t, double q)
{
	double total = 0;

	for (guint i = 0; i < t->le->len; i++)
		if (isinf(g_array_index(t->le, double, i)))
			total = g_array_index(t->cumulative, double, i);
	if (total == 0)
		return NULL;
	for (guint i = 0; i < t->le->len; i++) {
		double bound = g_array_index(t->le, double, i);

		if (g_array_index(t->cumulative, double, i) >= q * total) {
			char *d = duration(bound),
			     *r = g_strconcat(isinf(bound) ? "" : "<= ", d, NULL);

			g_free(d);
			return r;
		}
	}
	return NULL;
}

/* "512 bytes", "2.0 KiB": g_format_size() with a plain space, for a table. */
static char *size_text(double v)
{
	char *text = g_format_size_full((guint64)v, G_FORMAT_SIZE_IEC_UNITS);
	char *nbsp = strstr(text, "\u00a0");

	if (nbsp) {
		*nbsp = ' ';
		memmove(nbsp + 1, nbsp + 2, strlen(nbsp + 2) + 1);
	}
	return text;
}

static char *count_text(double v)
{
	return g_strdup_printf("%.0f", v);
}

/* The traffic table, the errors table and the daemon's figures, from /.fedfuse/metrics. */
static void print_metrics(const char *text)
{
	static const char *const traffic_header[] = { "REFERRAL", "LOCATION", "UP",
						      "OPS",	  "ERRORS",   "READ",
						      "WRITTEN",  "MEAN",     "P99" };
	static const char *const error_header[] = { "REFERRAL", "LOCATION", "OP", "ERRNO",
						    "COUNT" };
	GPtrArray *all = g_ptr_array_new_with_free_func(traffic_free);
	GPtrArray *rows = g_ptr_array_new_with_free_func(row_free);
	GPtrArray *errors = g_ptr_array_new_with_free_func(row_free);
	GHashTable *daemon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	char **lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		struct sample sm;
		struct traffic *t;

		if (!parse_sample(*l, &sm))
			continue;
		t = traffic_of(all, &sm);
		if (!t) {
			g_hash_table_replace(daemon, g_strdup(sm.name),
					     g_memdup2(&sm.value, sizeof(sm.value)));
		} else if (strcmp(sm.name, "fedfuse_backend_ops_total") == 0) {
			t->ops += sm.value;
		} else if (strcmp(sm.name, "fedfuse_backend_errors_total") == 0) {
			char **row = g_new0(char *, ROW_MAX);

			t->errors += sm.value;
			row[0] = g_strdup(t->location);
			row[1] = g_strdup(t->uri);
			row[2] = g_strdup(g_hash_table_lookup(sm.labels, "op"));
			row[3] = g_strdup(g_hash_table_lookup(sm.labels, "errno"));
			row[4] = count_text(sm.value);
			g_ptr_array_add(errors, row);
		} else if (strcmp(sm.name, "fedfuse_backend_read_bytes_total") == 0) {
			t->read = sm.value;
		} else if (strcmp(sm.name, "fedfuse_backend_written_bytes_total") == 0) {
			t->written = sm.value;
		} else if (strcmp(sm.name, "fedfuse_backend_op_duration_seconds_sum") == 0) {
			t->seconds += sm.value;
		} else if (strcmp(sm.name, "fedfuse_backend_op_duration_seconds_bucket") == 0 &&
			   g_hash_table_lookup(sm.labels, "le")) {
			add_bucket(t, g_hash_table_lookup(sm.labels, "le"), sm.value);
		} else if (strcmp(sm.name, "fedfuse_location_up") == 0) {
			t->up = sm.value;
		}
		sample_clear(&sm);
	}
	for (guint i = 0; i < all->len; i++) {
		struct traffic *t = all->pdata[i];
		char **row = g_new0(char *, ROW_MAX);

		row[0] = g_strdup(t->location);
		row[1] = g_strdup(t->uri);
		row[2] = g_strdup(t->up < 0 ? "-" : t->up > 0 ? "yes" : "no");
		row[3] = count_text(t->ops);
		row[4] = count_text(t->errors);
		row[5] = size_text(t->read);
		row[6] = size_text(t->written);
		row[7] = t->ops > 0 ? duration(t->seconds / t->ops) : NULL;
		row[8] = quantile(t, 0.99);
		g_ptr_array_add(rows, row);
	}
	printf("\n");
	print_table("Traffic (operations sent to each referral's locations)",
		    (char **)traffic_header, G_N_ELEMENTS(traffic_header), rows);
	if (errors->len) {
		printf("\n");
		print_table("Errors", (char **)error_header, G_N_ELEMENTS(error_header), errors);
	}
	printf("\nDaemon\n");
	{
		static const struct {
			const char *metric, *label;
			bool bytes;
		} figures[] = {
			{ "fedfuse_mounts", "locations in use", false },
			{ "fedfuse_inodes", "inodes held by the kernel", false },
			{ "fedfuse_open_files", "open files", false },
			{ "fedfuse_open_directories", "open directories", false },
			{ "fedfuse_junction_cache_entries", "junction cache entries", false },
			{ "fedfuse_junction_cache_hits_total", "junction cache hits", false },
			{ "fedfuse_junction_cache_misses_total", "junction cache misses", false },
			{ "fedfuse_kernel_invalidations_total", "kernel invalidations sent",
			  false },
			{ "process_resident_memory_bytes", "resident memory", true },
			{ "process_open_fds", "open descriptors", false },
			{ "process_max_fds", "descriptor limit", false },
		};

		for (guint i = 0; i < G_N_ELEMENTS(figures); i++) {
			double *v = g_hash_table_lookup(daemon, figures[i].metric);
			char *shown;

			if (!v)
				continue;
			shown = figures[i].bytes ? size_text(*v) : count_text(*v);
			printf("  %-27s %s\n", figures[i].label, shown);
			g_free(shown);
		}
	}
	g_strfreev(lines);
	g_hash_table_unref(daemon);
	g_ptr_array_unref(errors);
	g_ptr_array_unref(rows);
	g_ptr_array_unref(all);
}

static void print_indented(const char *title, const char *text)
{
	char **lines = g_strsplit(text, "\n", -1);

	printf("\n%s\n", title);
	for (char **l = lines; *l; l++)
		if (**l)
			printf("  %s\n", *l);
	g_strfreev(lines);
}

int cmd_status(int argc, char **argv)
{
	static const char *const names[] = { "locations", "metrics", "stats", "namespace" };
	char *text[4] = { NULL, NULL, NULL, NULL };
	char *control, *p;
	struct stat st;
	int rc = 1;

	if (argc != 2)
		return tool_usage_error("status needs exactly one MOUNTPOINT");
	control = g_build_filename(argv[1], ".fedfuse", NULL);
	p = tool_shown(argv[1]);
	if (stat(control, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (stat(argv[1], &st) < 0)
			tool_complain("%s: %s", p, g_strerror(errno));
		else
			tool_complain("%s is not a fedfuse mount (it has no .fedfuse directory)",
				      p);
		goto out_free;
	}
	for (int i = 0; i < 4; i++) {
		text[i] = read_control(control, names[i]);
		if (!text[i]) {
			tool_complain("cannot read %s/.fedfuse/%s: %s", p, names[i],
				      g_strerror(errno));
			goto out_free;
		}
	}
	printf("fedfuse mount %s\n\n", p);
	print_locations(text[0]);
	print_metrics(text[1]);
	print_indented("Statistics (per location in use)", text[2]);
	print_indented("Namespace", text[3]);
	rc = 0;
out_free:
	for (int i = 0; i < 4; i++)
		g_free(text[i]);
	g_free(p);
	g_free(control);
	return rc;
}
