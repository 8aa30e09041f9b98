/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics.h - what each referral's backend did (operations, errors by errno, latency
 * histograms, bytes), counted as it happens, and the text of /.fedfuse/metrics in the
 * Prometheus text exposition format (version 0.0.4), which a node exporter's textfile
 * collector or any scraper reads.
 *
 * A referral's series count the operations on its locations and on every location reached
 * through junctions below it (a junction's location that two referrals reach counts to the
 * one it was first reached through): one set of series per location of the namespace file, so
 * the number of series does not grow with the junctions a walk crosses.
 */
#ifndef FEDFUSE_METRICS_H
#define FEDFUSE_METRICS_H

#include <glib.h>

#include "fedfuse/mount.h"

struct ff_metrics;

struct ff_metrics *ff_metrics_new(void);
void ff_metrics_free(struct ff_metrics *mx);

/* One operation that took `usec` and ended in `rc` (0 or -errno). Lock-free unless it failed. */
void ff_metrics_op(struct ff_metrics *mx, enum ff_op op, int rc, gint64 usec);
/* Bytes a read returned or a write wrote. */
void ff_metrics_bytes(struct ff_metrics *mx, enum ff_op op, gint64 n);

/* The series of one location: for ff_metrics_append_locations(). */
struct ff_metrics_location {
	const char *ns_path; /* the referral */
	const char *uri;     /* its location */
	int state;	     /* enum ff_mount_state */
	const struct ff_metrics *mx;
	uint64_t write_behind; /* bytes the backend holds, not yet on the server's stable storage */
};

/* Every per-location family, each with all its locations' samples. */
void ff_metrics_append_locations(const struct ff_metrics_location *locs, guint n, GString *out);

/* One gauge or counter family with a single sample and no labels. */
void ff_metrics_append_value(GString *out, const char *name, const char *type, const char *help,
			     double value);

/* process_resident_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds: the names every Prometheus client library uses. */
void ff_metrics_append_process(GString *out);

#endif /* FEDFUSE_METRICS_H */
