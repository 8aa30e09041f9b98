/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_probe.c - `fedfuse-junction check`: each location probed over TCP within a timeout.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>

#include "fedfuse/junction.h"
#include "fedfuse/location.h"
#include "fedfuse/namespace.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"
#include "tools/fedfuse-junction.h"
#include "fedfuse/readfile.h"

/* ---- check --------------------------------------------------------------------------------- */

/* Connect to one address within `timeout_ms`. 0 or -errno. */
static int tcp_connect(const struct addrinfo *ai, int timeout_ms)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		close(fd);
		return 0;
	}
	if (errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do
		rc = poll(&pfd, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		rc = -ETIMEDOUT;
	else if (rc < 0)
		rc = -errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		rc = -errno;
	else
		rc = soerr ? -soerr : 0;
	close(fd);
	return rc;
}

/* Probe one location; print one line. Returns true when it answers. */
static bool probe(const struct ff_location_spec *spec, double timeout)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	gint64 start = g_get_monotonic_time();
	char port[16], *msg = NULL;
	int rc = -EHOSTUNREACH, gai, n;

	if (strcmp(spec->scheme, "file") == 0) {
		struct stat st;
		char *p = tool_shown(spec->path);
		bool ok = false;

		if (stat(spec->path, &st) < 0)
			printf("FAIL  %s: %s: %s\n", spec->uri, p, g_strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			printf("FAIL  %s: %s is not a directory\n", spec->uri, p);
		else
			ok = true;
		if (ok)
			printf("ok    %s (directory %s)\n", spec->uri, p);
		g_free(p);
		return ok;
	}
	n = ff_plugin_server_port(spec, NULL, &msg);
	if (n <= 0) {
		printf("FAIL  %s: %s\n", spec->uri, n < 0 ? msg : "no server to probe");
		g_free(msg);
		return false;
	}
	g_snprintf(port, sizeof(port), "%d", n);
	gai = getaddrinfo(spec->host, port, &hints, &res);
	if (gai != 0) {
		printf("FAIL  %s: cannot resolve %s: %s\n", spec->uri, spec->host,
		       gai == EAI_SYSTEM ? g_strerror(errno) : gai_strerror(gai));
		return false;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		gint64 left_ms = (gint64)(timeout * 1000) - (g_get_monotonic_time() - start) / 1000;

		if (left_ms <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		rc = tcp_connect(ai, (int)left_ms);
		if (rc == 0)
			break;
	}
	freeaddrinfo(res);
	if (rc == 0)
		printf("ok    %s (TCP %s port %s answered in %.0f ms)\n", spec->uri, spec->host,
		       port, (g_get_monotonic_time() - start) / 1000.0);
	else if (rc == -ETIMEDOUT)
		printf("FAIL  %s: TCP %s port %s: no answer within %g s\n", spec->uri, spec->host,
		       port, timeout);
	else
		printf("FAIL  %s: TCP %s port %s: %s\n", spec->uri, spec->host, port,
		       g_strerror(-rc));
	return rc == 0;
}

/* An FSN location: its locations as its NSDB gives them now, each probed; counted in *total. */
static guint probe_fsn(const struct ff_location *loc, double timeout, guint *total)
{
	struct ff_namespace ns = { .timeout = timeout }; /* no [nsdb] settings, nothing cached */
	struct ff_nsdb *db = ff_nsdb_new();
	GPtrArray *locs = NULL;
	char *msg = NULL;
	guint up = 0;

	if (ff_nsdb_resolve(db, &ns, loc, timeout, &locs, &msg) < 0) {
		printf("FAIL  %s: %s\n", loc->spec.uri, msg);
		(*total)++;
		goto out_free;
	}
	printf("fsn   %s: %u location%s\n", loc->spec.uri, locs->len, locs->len == 1 ? "" : "s");
	for (guint i = 0; i < locs->len; i++)
		up += probe(&((const struct ff_location *)locs->pdata[i])->spec, timeout);
	*total += locs->len;
	g_ptr_array_unref(locs);
out_free:
	g_free(msg);
	ff_nsdb_free(db);
	return up;
}

int cmd_check(int argc, char **argv)
{
	double timeout = DEFAULT_TIMEOUT;
	const char *path = NULL;
	struct found f;
	struct stat st;
	guint up = 0, total = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *t = NULL;
		char *end = NULL;

		if (strcmp(argv[i], "--timeout") == 0 || strcmp(argv[i], "-t") == 0) {
			if (i + 1 == argc)
				return tool_usage_error("%s needs a number of seconds", argv[i]);
			t = argv[++i];
		} else if (g_str_has_prefix(argv[i], "--timeout=")) {
			t = argv[i] + strlen("--timeout=");
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return tool_usage_error("check: unknown option '%s'", argv[i]);
		} else if (path) {
			return tool_usage_error("check takes one PATH");
		} else {
			path = argv[i];
		}
		if (t) {
			timeout = g_ascii_strtod(t, &end);
			if (!*t || *end || !(timeout > 0 && timeout <= 3600))
				return tool_usage_error(
					"--timeout: '%s' is not a number of seconds "
					"(0 < s <= 3600)",
					t);
		}
	}
	if (!path)
		return tool_usage_error("check needs a PATH");
	rc = tool_junction_arg(path, &st, &f);
	if (rc <= 0)
		return 1;
	if (!f.j) {
		tool_complain_bad(path, &f);
		tool_found_clear(&f);
		return 1;
	}
	for (guint i = 0; i < f.j->locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(f.j->locations, i);

		if (ff_nsdb_is_fsn(&loc->spec)) {
			up += probe_fsn(loc, timeout, &total);
			continue;
		}
		up += probe(&loc->spec, timeout);
		total++;
	}
	rc = up == total ? 0 : 1;
	if (rc)
		tool_complain("%u of %u locations of %s did not answer", total - up, total, path);
	tool_found_clear(&f);
	return rc;
}
