/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.c - one place that decides where messages go and how often a repeated failure is said.
 */
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fedfuse/log.h"

static bool to_stderr = true;
static bool to_journal; /* stderr is the journal's stream: "<N>" prefixes give priorities */
static bool debug_on;
static int threshold = LOG_DEBUG;
static GMutex once_lock;
static GHashTable *once_seen; /* key -> gint64 monotonic time of the last message */

static void glib_handler(const gchar *domain, GLogLevelFlags level, const gchar *message,
			 gpointer data);

/* systemd sets JOURNAL_STREAM to the device and inode of the stream it connected to stderr
 * (systemd.exec(5)); a program that passed stderr on to another no longer matches. */
static bool stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return env && sscanf(env, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       st.st_dev == dev && st.st_ino == ino;
}

void ff_log_set_threshold(int prio)
{
	threshold = prio;
}

void ff_log_init(bool foreground, bool debug)
{
	to_stderr = foreground;
	to_journal = foreground && stderr_is_journal();
	debug_on = debug;
	if (!foreground)
		openlog("fedfuse", LOG_PID, LOG_DAEMON);
	/* Backends (and GLib) report through GLib's log functions: their lines go where ours
	 * go, to syslog too once the daemon has left its terminal. */
	g_log_set_default_handler(glib_handler, NULL);
}

bool ff_log_debug_enabled(void)
{
	return debug_on;
}

__attribute__((format(printf, 2, 0))) static void vlog(int prio, const char *fmt, va_list ap)
{
	static const char *const names[] = { "emergency", "alert",  "critical", "error",
					     "warning",	  "notice", "info",	"debug" };

	if ((prio == LOG_DEBUG && !debug_on) || prio > threshold)
		return;
	if (!to_stderr) {
		vsyslog(prio, fmt, ap);
		return;
	}
	/* One fprintf per line keeps lines from different threads whole. */
	char *msg = g_strdup_vprintf(fmt, ap);

	if (to_journal)
		fprintf(stderr, "<%d>%s\n", prio & 7, msg);
	else
		fprintf(stderr, "fedfuse: %s: %s\n", names[prio & 7], msg);
	g_free(msg);
}

void ff_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
}

static void glib_handler(const gchar *domain, GLogLevelFlags level, const gchar *message,
			 gpointer data)
{
	int prio = (level & G_LOG_LEVEL_ERROR)	    ? LOG_ERR
		   : (level & G_LOG_LEVEL_CRITICAL) ? LOG_CRIT
		   : (level & G_LOG_LEVEL_WARNING)  ? LOG_WARNING
		   : (level & G_LOG_LEVEL_MESSAGE)  ? LOG_NOTICE
		   : (level & G_LOG_LEVEL_INFO)	    ? LOG_INFO
						    : LOG_DEBUG;

	ff_log(prio, "%s%s%s", domain ? domain : "", domain ? ": " : "", message);
}

void ff_log_once(int prio, const char *key, double interval, const char *fmt, ...)
{
	gint64 now = g_get_monotonic_time();
	gpointer last;
	bool say;
	va_list ap;

	g_mutex_lock(&once_lock);
	if (!once_seen)
		once_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	last = g_hash_table_lookup(once_seen, key);
	say = !last || now - *(gint64 *)last >= (gint64)(interval * G_USEC_PER_SEC);
	if (say)
		g_hash_table_insert(once_seen, g_strdup(key), g_memdup2(&now, sizeof(now)));
	g_mutex_unlock(&once_lock);
	if (!say)
		return;
	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
}
