/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h - the daemon's log: stderr in the foreground (with the journal's priority prefixes when
 * stderr is systemd's journal stream), syslog otherwise. ff_log_once() says a recurring failure
 * once per interval instead of once per request.
 */
#ifndef FEDFUSE_LOG_H
#define FEDFUSE_LOG_H

#include <stdbool.h>
#include <syslog.h>

void ff_log_init(bool foreground, bool debug);
/* Drop messages less severe than `prio` (LOG_ERR: errors only). */
void ff_log_set_threshold(int prio);
void ff_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Log unless a message with the same `key` was logged less than `interval` seconds ago. */
void ff_log_once(int prio, const char *key, double interval, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool ff_log_debug_enabled(void);

#define ff_err(...) ff_log(LOG_ERR, __VA_ARGS__)
#define ff_warn(...) ff_log(LOG_WARNING, __VA_ARGS__)
#define ff_info(...) ff_log(LOG_INFO, __VA_ARGS__)
#define ff_debug(...) ff_log(LOG_DEBUG, __VA_ARGS__)

#endif /* FEDFUSE_LOG_H */
