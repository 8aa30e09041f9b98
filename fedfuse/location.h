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

/* Parse one location URI strictly into `loc`. Returns false with *msg set on error. Shared with
 * the junction parsers, which read the same URI lists. `loc` is overwritten (on failure it is
 * left cleared). Only file, nfs, smb and mem (the tests' in-memory reference backend, which is
 * not installed: elsewhere its backend is "not available") are accepted; URIs longer than FF_LOCATION_URI_MAX bytes, with a user name or password, a fragment,
 * characters RFC 3986 does not allow, or a path (after %-decoding) that holds NUL or control
 * characters or is not absolute and normalised are refused. On success the spec's options hold
 * defaults (timeout 15 s, read-write, no credentials, uid/gid unset, modes 0644/0755) for the
 * caller to override, and loc->line is 0. */
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

/* The value of option `key` (as in "nfsport=2049") in a location's query as a TCP port:
 * 1..65535, 0 when the query does not name it, -1 when it names it badly (not a number in that
 * range, or twice). The one reader of port options outside the backends. */
int ff_location_port_option(const struct ff_location_spec *spec, const char *key);

/* Whether `s` (`n` bytes) holds a control character (< 0x20 or 0x7f). */
bool ff_has_control_char(const char *s, size_t n);
/* `s` as it may appear in a message, which must be printable UTF-8 (g_malloc'd): control
 * characters escaped, and every byte >= 0x80 when `s` is not valid UTF-8. */
char *ff_shown(const char *s);
/* Whether absolute `path` (`len` bytes) has no ".", ".." or empty component and no trailing
 * '/', "/" excepted. */
bool ff_path_is_normalised(const char *path, size_t len);

#endif /* FEDFUSE_LOCATION_H */
