/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nsdb_conf.c - what the namespace file says of NSDBs: the [nsdb HOST[:PORT]] groups (security,
 * CA file, replicas) and the syntax of a location that names an FSN. Pure code, shared by the
 * daemon, the admin tool and the unit tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fedfuse/nsdb.h"

#define NSDB_REPLICAS_MAX 16

bool ff_nsdb_uuid_valid(const char *uuid)
{
	static const int dash[] = { 8, 13, 18, 23 };

	if (strlen(uuid) != FF_NSDB_UUID_LEN)
		return false;
	for (int i = 0, d = 0; i < FF_NSDB_UUID_LEN; i++) {
		if (d < 4 && i == dash[d]) {
			if (uuid[i] != '-')
				return false;
			d++;
		} else if (!g_ascii_isxdigit(uuid[i])) {
			return false;
		}
	}
	return true;
}

/* "host:port" in lower case, an IPv6 address in brackets. */
static char *server_key(const char *host, size_t hlen, long port)
{
	g_autofree char *h = g_ascii_strdown(host, (gssize)hlen);

	if (strchr(h, ':'))
		return g_strdup_printf("[%s]:%ld", h, port);
	return g_strdup_printf("%s:%ld", h, port);
}

/* A host as a location URI may hold one: an IPv6 address, or letters, digits, '-', '_', '.'. */
static bool host_valid(const char *host, size_t n)
{
	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(host[i]) && !strchr("-_.:", host[i]))
			return false;
	return true;
}

char *ff_nsdb_server_name(const char *text, char **msg)
{
	g_autofree char *shown = ff_shown(text);
	const char *host = text, *colon, *end;
	size_t hlen;
	long port = FF_NSDB_PORT;

	if (text[0] == '[') {
		end = strchr(text, ']');
		if (!end || (end[1] != '\0' && end[1] != ':'))
			goto out_bad;
		host = text + 1;
		hlen = (size_t)(end - host);
		colon = end[1] == ':' ? end + 1 : NULL;
		if (!memchr(host, ':', hlen))
			goto out_bad;
	} else {
		colon = strchr(text, ':');
		if (colon && strchr(colon + 1, ':'))
			goto out_bad; /* an IPv6 address needs its brackets */
		hlen = colon ? (size_t)(colon - text) : strlen(text);
	}
	if (!host_valid(host, hlen))
		goto out_bad;
	if (colon) {
		char *e;

		errno = 0;
		port = strtol(colon + 1, &e, 10);
		if (colon[1] == '\0' || *e != '\0' || errno || port < 1 || port > 65535 ||
		    !g_ascii_isdigit(colon[1])) {
			*msg = g_strdup_printf("NSDB '%s': port is not a number from 1 to 65535",
					       shown);
			return NULL;
		}
	}
	return server_key(host, hlen, port);

out_bad:
	*msg = g_strdup_printf("NSDB '%s' is not HOST, HOST:PORT or [IPV6]:PORT", shown);
	return NULL;
}

struct ff_nsdb_conf *ff_nsdb_conf_new(const char *text, int line, char **msg)
{
	char *name = ff_nsdb_server_name(text, msg);
	struct ff_nsdb_conf *conf;

	if (!name)
		return NULL;
	conf = g_new0(struct ff_nsdb_conf, 1);
	conf->name = name;
	conf->line = line;
	conf->servers = g_ptr_array_new_with_free_func(g_free);
	g_ptr_array_add(conf->servers, g_strdup(name));
	return conf;
}

void ff_nsdb_conf_free(gpointer p)
{
	struct ff_nsdb_conf *conf = p;

	if (!conf)
		return;
	g_free(conf->name);
	g_free(conf->ca_file);
	g_ptr_array_unref(conf->servers);
	g_free(conf);
}

static bool set_replicas(struct ff_nsdb_conf *conf, const char *value, char **msg)
{
	g_auto(GStrv) list = g_strsplit_set(value, ";,", -1);

	g_ptr_array_set_size(conf->servers, 1);
	for (char **p = list; *p; p++) {
		char *one = g_strstrip(*p), *name;

		if (*one == '\0' && p[1] == NULL && p != list)
			break; /* one trailing separator */
		if (*one == '\0') {
			*msg = g_strdup("replicas: empty entry");
			return false;
		}
		name = ff_nsdb_server_name(one, msg);
		if (!name)
			return false;
		for (guint i = 0; i < conf->servers->len; i++) {
			if (strcmp(conf->servers->pdata[i], name) == 0) {
				*msg = g_strdup_printf("replicas: %s is listed twice (or is the "
						       "NSDB itself)",
						       name);
				g_free(name);
				return false;
			}
		}
		if (conf->servers->len > NSDB_REPLICAS_MAX) {
			*msg = g_strdup_printf("replicas: more than %d", NSDB_REPLICAS_MAX);
			g_free(name);
			return false;
		}
		g_ptr_array_add(conf->servers, name);
	}
	return true;
}

bool ff_nsdb_conf_set(struct ff_nsdb_conf *conf, const char *key, const char *value, char **msg)
{
	g_autofree char *shown = ff_shown(value);

	if (strcmp(key, "security") == 0) {
		if (strcmp(value, "none") == 0)
			conf->security = FF_NSDB_SEC_NONE;
		else if (strcmp(value, "starttls") == 0)
			conf->security = FF_NSDB_SEC_STARTTLS;
		else if (strcmp(value, "ldaps") == 0)
			conf->security = FF_NSDB_SEC_LDAPS;
		else {
			*msg = g_strdup_printf("security: '%s' is not none, starttls or ldaps",
					       shown);
			return false;
		}
		return true;
	}
	if (strcmp(key, "ca-file") == 0) {
		if (value[0] != '/') {
			*msg = g_strdup_printf("ca-file: '%s' is not an absolute path", shown);
			return false;
		}
		if (access(value, R_OK) != 0) {
			*msg = g_strdup_printf("ca-file: cannot read '%s': %s", shown,
					       g_strerror(errno));
			return false;
		}
		g_free(conf->ca_file);
		conf->ca_file = g_strdup(value);
		return true;
	}
	if (strcmp(key, "replicas") == 0)
		return set_replicas(conf, value, msg);
	*msg = g_strdup_printf("unknown key '%s' in an [nsdb] group", key);
	return false;
}

bool ff_nsdb_is_fsn(const struct ff_location_spec *spec)
{
	return spec->scheme && strcmp(spec->scheme, FF_NSDB_SCHEME) == 0;
}

int ff_nsdb_fsn_parse(const struct ff_location_spec *spec, char **server, char **uuid, char **msg)
{
	g_autofree char *shown = ff_shown(spec->uri);

	if (!spec->host) {
		*msg = g_strdup_printf("location '%s': an FSN location names its NSDB: "
				       "fedfs://NSDBHOST[:PORT]/FSN-UUID",
				       shown);
		return -EINVAL;
	}
	if (spec->query) {
		*msg = g_strdup_printf("location '%s': an FSN location takes no options", shown);
		return -EINVAL;
	}
	if (!ff_nsdb_uuid_valid(spec->path + 1)) {
		*msg = g_strdup_printf("location '%s': the path is not one FSN UUID "
				       "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
				       shown);
		return -EINVAL;
	}
	if (server)
		*server = server_key(spec->host, strlen(spec->host),
				     spec->port ? spec->port : FF_NSDB_PORT);
	if (uuid)
		*uuid = g_ascii_strdown(spec->path + 1, -1);
	return 0;
}
