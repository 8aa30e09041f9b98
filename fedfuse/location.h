/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * location.h - location URIs: parsing one or a list of them strictly, and showing untrusted
 * text in messages.
 */
#ifndef FEDFUSE_LOCATION_H
#define FEDFUSE_LOCATION_H

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "backends/backend.h"

/* What a location has unless its namespace file says otherwise. */
#define FF_DEFAULT_TIMEOUT 15.0 /* seconds */
#define FF_DEFAULT_FILE_MODE 0755
#define FF_DEFAULT_DIR_MODE 0755

/* One location of a referral. `spec` strings point into this struct's own allocations. */
struct ff_location {
	struct ff_location_spec spec;
	int line; /* line of the `locations` key */
};

/* Parse one location URI strictly into `loc`, by the rules every scheme shares (RFC 3986); what
 * a scheme needs beyond them (a host, a share, its options) is its backend's check op to say.
 * Shared with the junction parsers, which read the same URI lists. `loc` is overwritten (on
 * failure it is left cleared). Refused: URIs longer than FF_LOCATION_URI_MAX bytes, a scheme
 * that is not RFC 3986's letters (it names the backend module), a user name or password, a
 * fragment, characters RFC 3986 does not allow, a host that is neither an IP address nor a
 * name of letters, digits, '-', '_' and '.', port 0, and a path (after %-decoding) that is
 * empty, holds NUL or control characters, or is not absolute and normalised. On success the
 * scheme is in lower case, an empty host or query is NULL, the spec's options hold defaults
 * (timeout 15 s, read-write, no credentials, uid/gid unset, modes 0755, write-behind not
 * given: -1) for the caller to override, and loc->line is 0. */
#define FF_LOCATION_URI_MAX 4096
bool ff_location_parse(const char *uri, struct ff_location *loc, char **msg);
void ff_location_clear(struct ff_location *loc);

/* Parse a `locations=` value held in `len` bytes (not NUL-terminated; a NUL among them is an
 * error): a ';'-separated list as GKeyFile reads one (escapes \s \n \t \r \\ and \; decoded,
 * one trailing ';' tolerated), white space around each entry ignored, each entry a URI for
 * ff_location_parse(), none listed twice. `max` > 0 bounds the number of entries. On success
 * *out is a new array of struct ff_location * (g_ptr_array_unref frees them) with at least one
 * entry; on failure returns false, *out is left alone and *msg (if non-NULL) is set to a
 * g_malloc'd sentence naming the value at fault (printable UTF-8, never a password). */
bool ff_location_list_parse(const char *value, size_t len, guint max, GPtrArray **out, char **msg);

void ff_location_free(gpointer loc); /* clear and free a g_malloc'd struct ff_location */

/* What a location's backend says of it without I/O: the TCP port its server answers on
 * (ff_plugin_server_port()), or -errno with *msg set. */
typedef int (*ff_location_port_fn)(const struct ff_location_spec *spec, void *data, char **msg);

/* Whether `s` (`n` bytes) holds a control character (< 0x20 or 0x7f). */
bool ff_has_control_char(const char *s, size_t n);
/* `s` as it may appear in a message, which must be printable UTF-8 (g_malloc'd): control
 * characters escaped, and every byte >= 0x80 when `s` is not valid UTF-8. */
char *ff_shown(const char *s);
/* Whether absolute `path` (`len` bytes) has no ".", ".." or empty component and no trailing
 * '/', "/" excepted. */
bool ff_path_is_normalised(const char *path, size_t len);

#endif /* FEDFUSE_LOCATION_H */
