/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * control.c - /.fedfuse/{stats,namespace,locations,metrics}: the state of the daemon as text,
 * made afresh at each open, so `cat` always shows the present.
 */
#include <errno.h>
#include <string.h>

#include "fedfuse/control.h"
#include "fedfuse/metrics.h"
#include "fedfuse/notify.h"
#include "fedfuse/uring.h"

static const char *const files[] = { "stats", "namespace", "locations", "metrics", NULL };
#define NFILES (G_N_ELEMENTS(files) - 1)

bool ff_control_is_control(uint64_t ino)
{
	return ino >= FF_INO_CONTROL && ino < FF_INO_CONTROL_FIRST + NFILES;
}

static void control_stat(struct ff_state *s, uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_blksize = 4096;
	g_mutex_lock(&s->ns_lock);
	st->st_atim = st->st_mtim = st->st_ctim = s->ns_time;
	g_mutex_unlock(&s->ns_lock);
	if (ino == FF_INO_CONTROL) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
	}
}

int ff_control_lookup(struct ff_state *s, uint64_t parent, const char *name,
		      struct fuse_entry_param *e)
{
	uint64_t ino = 0;

	if (parent == FF_INO_ROOT) {
		ino = FF_INO_CONTROL;
	} else if (parent == FF_INO_CONTROL) {
		for (guint i = 0; i < NFILES; i++)
			if (strcmp(name, files[i]) == 0)
				ino = FF_INO_CONTROL_FIRST + i;
	}
	if (!ino)
		return parent == FF_INO_CONTROL ? -ENOENT : -ENOTDIR;
	ff_itab_intern_virtual(s->itab, ino, NULL);
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	control_stat(s, ino, &e->attr);
	return 0;
}

int ff_control_getattr(struct ff_state *s, uint64_t ino, struct stat *st, double *timeout)
{
	control_stat(s, ino, st);
	*timeout = 0;
	return 0;
}

/* Open files and directories. */
static void count_handles(struct ff_state *s, guint *nfiles, guint *ndirs)
{
	GHashTableIter it;
	gpointer is_dir;

	*nfiles = *ndirs = 0;
	g_mutex_lock(&s->handles_lock);
	g_hash_table_iter_init(&it, s->handles);
	while (g_hash_table_iter_next(&it, NULL, &is_dir))
		(*(is_dir ? ndirs : nfiles))++;
	g_mutex_unlock(&s->handles_lock);
}

static void describe_metrics(struct ff_state *s, GString *out)
{
	guint nfiles, ndirs;

	ff_mounts_describe_metrics(s->mounts, out);
	ff_jcache_describe_metrics(s->jcache, out);
	ff_metrics_append_value(out, "fedfuse_inodes", "gauge",
				"Inodes the kernel holds a reference to.", ff_itab_count(s->itab));
	count_handles(s, &nfiles, &ndirs);
	ff_metrics_append_value(out, "fedfuse_open_files", "gauge", "Open files.", nfiles);
	ff_metrics_append_value(out, "fedfuse_open_directories", "gauge", "Open directories.",
				ndirs);
	ff_notify_describe_metrics(out);
	ff_metrics_append_process(out);
}

char *ff_control_read(struct ff_state *s, uint64_t ino, size_t *len)
{
	GString *out;
	struct ff_namespace *ns;

	if (ino < FF_INO_CONTROL_FIRST || ino >= FF_INO_CONTROL_FIRST + NFILES)
		return NULL;
	out = g_string_new(NULL);
	switch (ino - FF_INO_CONTROL_FIRST) {
	case 0:
		g_string_append_printf(out, "inodes %zu\n", ff_itab_count(s->itab));
		ff_jcache_describe(s->jcache, out);
		ff_absent_describe(s->absent, out);
		g_string_append_printf(out, "nsdb-searches %" G_GUINT64_FORMAT "\n",
				       ff_nsdb_searches());
		ff_notify_describe(out);
		ff_uring_describe(out);
		ff_mounts_describe_stats(s->mounts, out);
		break;
	case 1: {
		char *text;

		ns = ff_state_ns(s);
		text = ff_namespace_describe(ns);
		g_string_append(out, text);
		g_free(text);
		ff_namespace_unref(ns);
		break;
	}
	case 2:
		ns = ff_state_ns(s);
		ff_mounts_describe_locations(s->mounts, ns, out);
		ff_namespace_unref(ns);
		ff_nsdb_describe(s->nsdb, out);
		break;
	case 3:
		describe_metrics(s, out);
		break;
	}
	*len = out->len;
	return g_string_free(out, FALSE);
}

const char *const *ff_control_names(void)
{
	return files;
}
