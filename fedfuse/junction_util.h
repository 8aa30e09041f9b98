/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_util.h - what the junction parsers and writers (junction.c, junction_fedfs.c)
 * share: bounds, quoting of untrusted text in messages, and building location URIs.
 */
#ifndef FEDFUSE_JUNCTION_UTIL_H
#define FEDFUSE_JUNCTION_UTIL_H

#include "fedfuse/junction.h"

#define QUOTE_MAX 80	  /* bytes of untrusted text quoted inside a message */
#define COMPONENT_MAX 255 /* bytes in a path component, as NAME_MAX */
#define HOST_MAX 253	  /* bytes in a DNS name */
#define MODE_TEXT_MAX 32  /* bytes of trusted.junction.mode */
#define XML_DEPTH_MAX 32  /* nesting of XML elements, ignored ones included */
#define INT32_TEXT_MAX 11 /* digits worth reading before a number is surely out of range */

/* Untrusted text quoted inside a message (printable UTF-8, at most QUOTE_MAX bytes). */
char *fj_quote(const char *s, size_t len);
char *fj_quote_str(const char *s);
char *fj_errf(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* The end of every failing public function: hand out `err` made safe and set errno last.
 * Takes ownership of `err`; returns NULL. */
void *fj_failed(int code, char *err, char **msg);
struct ff_junction *fj_new(enum ff_junction_format format);
/* Parse `uri` and add it to `locs` (`what` names it in a message). */
bool fj_add_location(GPtrArray *locs, const char *uri, const char *what, char **err);
bool fj_host_name_ok(const char *host);
void fj_append_host(GString *uri, const char *host);
void fj_append_component(GString *uri, const char *comp);
/* NULL when the `n` bytes at `c` may be a path component, else what is wrong. */
const char *fj_component_problem(const char *c, size_t n);
/* `len` less a trailing NUL (some writers store one). */
size_t fj_without_nul(const char *s, size_t len);

#endif /* FEDFUSE_JUNCTION_UTIL_H */
