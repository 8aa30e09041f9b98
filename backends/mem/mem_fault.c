/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem_fault.c - fault injection for tests: a mem:// location with ?faults=FILE reads FILE (when
 * it changed) before each operation and does what it says for that operation, as a server that
 * fails, stalls or hangs would:
 *
 *   # comments and blank lines
 *   OP errno NAME        fail with that errno (EIO, ENOSPC, EDQUOT, ESTALE, ... or a number)
 *   OP delay MS          answer after MS milliseconds
 *   OP hang              answer nothing until the location's timeout has passed: ETIMEDOUT,
 *                        as a backend that honours spec->timeout does
 * A delay or hang ends early with EINTR when the caller is interrupted (struct ff_host).
 *
 * OP is an operation's name in the contract (lookup, getattr, read, write, mkdir, readdir, ...)
 * or `*` for every operation the file does not name. A missing or empty file injects nothing;
 * a line the format does not allow is ignored with a warning, once per change of the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/mem/mem.h"

struct mem_rule {
	int err;      /* > 0: fail with -err */
	int delay_ms; /* > 0: wait first */
	bool hang;    /* wait for the timeout, then ETIMEDOUT */
};

struct mem_faults {
	char *file;
	int timeout_ms;
	GMutex lock;
	struct timespec mtime; /* of the rules read */
	off_t size;
	bool loaded;
	GHashTable *rules; /* op name -> struct mem_rule */
};

static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EPERM", EPERM },
	{ "ENOENT", ENOENT },
	{ "EIO", EIO },
	{ "ENXIO", ENXIO },
	{ "EBADF", EBADF },
	{ "EAGAIN", EAGAIN },
	{ "ENOMEM", ENOMEM },
	{ "EACCES", EACCES },
	{ "EBUSY", EBUSY },
	{ "EEXIST", EEXIST },
	{ "EXDEV", EXDEV },
	{ "ENOTDIR", ENOTDIR },
	{ "EISDIR", EISDIR },
	{ "EINVAL", EINVAL },
	{ "EFBIG", EFBIG },
	{ "ENOSPC", ENOSPC },
	{ "EROFS", EROFS },
	{ "EMLINK", EMLINK },
	{ "ENAMETOOLONG", ENAMETOOLONG },
	{ "ENOTEMPTY", ENOTEMPTY },
	{ "ELOOP", ELOOP },
	{ "ENODATA", ENODATA },
	{ "EOPNOTSUPP", EOPNOTSUPP },
	{ "ESTALE", ESTALE },
	{ "EDQUOT", EDQUOT },
	{ "ETIMEDOUT", ETIMEDOUT },
	{ "ECONNREFUSED", ECONNREFUSED },
	{ "ECONNRESET", ECONNRESET },
	{ "EHOSTUNREACH", EHOSTUNREACH },
	{ "EREMOTEIO", EREMOTEIO },
	{ "EOVERFLOW", EOVERFLOW },
	{ "ERANGE", ERANGE },
	{ "E2BIG", E2BIG },
};

static int errno_by_name(const char *s)
{
	char *end;
	long v;

	for (size_t i = 0; i < G_N_ELEMENTS(errnos); i++)
		if (strcmp(s, errnos[i].name) == 0)
			return errnos[i].err;
	v = strtol(s, &end, 10);
	return *s && !*end && v > 0 && v < 4096 ? (int)v : 0;
}

/* Read the rules again; called with the lock held. */
static void load_locked(struct mem_faults *f, const struct stat *st)
{
	char *text = NULL, **lines;

	g_hash_table_remove_all(f->rules);
	f->loaded = st != NULL;
	if (st) {
		f->mtime = st->st_mtim;
		f->size = st->st_size;
	}
	if (!st || !g_file_get_contents(f->file, &text, NULL, NULL))
		return;
	lines = g_strsplit(text, "\n", -1);
	for (int i = 0; lines[i]; i++) {
		char **w = g_strsplit_set(g_strstrip(lines[i]), " \t", -1);
		const char *word[3] = { NULL, NULL, NULL };
		guint n = 0;
		struct mem_rule r = { 0 };
		bool ok = false;

		for (guint j = 0; w[j];
		     j++) { /* the words, without the empty ones of repeated blanks */
			if (*w[j] && n < G_N_ELEMENTS(word))
				word[n] = w[j];
			if (*w[j])
				n++;
		}
		if (n == 0 || word[0][0] == '#') {
			g_strfreev(w);
			continue;
		}
		if (n == 3 && strcmp(word[1], "errno") == 0) {
			r.err = errno_by_name(word[2]);
			ok = r.err > 0;
		} else if (n == 3 && strcmp(word[1], "delay") == 0) {
			r.delay_ms = atoi(word[2]);
			ok = r.delay_ms > 0;
		} else if (n == 2 && strcmp(word[1], "hang") == 0) {
			r.hang = ok = true;
		}
		if (ok)
			g_hash_table_insert(f->rules, g_strdup(word[0]), g_memdup2(&r, sizeof(r)));
		else
			g_warning("%s:%d: not a fault (OP errno NAME, OP delay MS, OP hang)",
				  f->file, i + 1);
		g_strfreev(w);
	}
	g_strfreev(lines);
	g_free(text);
}

struct mem_faults *mem_faults_new(const char *file, double timeout)
{
	struct mem_faults *f = g_new0(struct mem_faults, 1);

	f->file = g_strdup(file);
	f->timeout_ms = (int)(timeout * 1000);
	g_mutex_init(&f->lock);
	f->rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	return f;
}

void mem_faults_free(struct mem_faults *f)
{
	if (!f)
		return;
	g_hash_table_destroy(f->rules);
	g_mutex_clear(&f->lock);
	g_free(f->file);
	g_free(f);
}

/* Wait `ms`, as a server that is slow to answer, unless the caller is interrupted: 0, or
 * -EINTR at most 20 ms after the interrupt. */
static int wait_ms(struct mem_faults *f, int ms)
{
	gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;

	for (;;) {
		gint64 left = end - g_get_monotonic_time();

		if (left <= 0)
			return 0;
		if (mem_host && mem_host->interrupted && mem_host->interrupted())
			return -EINTR;
		g_usleep((gulong)MIN(left, 20000));
	}
}

int mem_fault(struct mem_faults *f, const char *op)
{
	int rc;

	struct mem_rule r = { 0 }, *found;
	struct stat st;
	bool have;

	if (!f)
		return 0;
	have = stat(f->file, &st) == 0;
	g_mutex_lock(&f->lock);
	if (have != f->loaded ||
	    (have && (st.st_mtim.tv_sec != f->mtime.tv_sec ||
		      st.st_mtim.tv_nsec != f->mtime.tv_nsec || st.st_size != f->size)))
		load_locked(f, have ? &st : NULL);
	found = g_hash_table_lookup(f->rules, op);
	if (!found)
		found = g_hash_table_lookup(f->rules, "*");
	if (found)
		r = *found;
	g_mutex_unlock(&f->lock);
	if (r.hang) {
		rc = wait_ms(f, f->timeout_ms);
		return rc < 0 ? rc : -ETIMEDOUT;
	}
	if (r.delay_ms > 0) {
		rc = wait_ms(f, r.delay_ms);
		if (rc < 0)
			return rc;
	}
	return -r.err;
}
