/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugins.h - finding and loading backend modules (one per URI scheme) with GModule.
 */
#ifndef FEDFUSE_PLUGINS_H
#define FEDFUSE_PLUGINS_H

#include "backends/backend.h"
#include "fedfuse/junction.h"

/* The backend for `scheme`, loading its module on first use from the folders in
 * $FEDFUSE_BACKEND_DIR (colon-separated) or the installed backend folder. On failure returns
 * NULL and sets *msg (g_malloc'd), e.g. "backend 'smb' is not available (built without
 * libsmbclient)". Thread safe. */
const struct ff_backend *ff_plugin_find(const char *scheme, char **msg);

/* An ff_location_check_fn for ff_namespace_load(): the scheme must have a backend, and the
 * backend's check() must accept the location. */
int ff_plugin_check_location(const struct ff_location_spec *spec, void *data, char **msg);

/* The TCP port the location's server answers on, as its backend reads the location (its port,
 * an option, or the scheme's default); 0 when it has no server; -errno with *msg set when the
 * scheme has no backend or the backend refuses the location. */
int ff_plugin_server_port(const struct ff_location_spec *spec, void *data, char **msg);

/* Whether every location of a junction just parsed is one its backend accepts (check()): the
 * junction parsers know URIs, the backends what their schemes need. A location whose scheme
 * has no backend here passes (its replicas may serve). False with *msg naming the location. */
bool ff_plugin_check_junction(const struct ff_junction *j, char **msg);

#endif /* FEDFUSE_PLUGINS_H */
