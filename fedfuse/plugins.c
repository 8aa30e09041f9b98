/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plugins.c - backend modules are loaded lazily, once, and checked for ABI compatibility; a
 * scheme whose backend was not built gets a message that says so.
 */
#include "config.h"

#include <errno.h>
#include <gmodule.h>
#include <string.h>

#include "fedfuse/gateway.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/location.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"

/* The core's services to backends (backend.h). */
static const struct ff_host host = {
	.interrupted = ff_intr_requested,
	.interrupt_hook = ff_intr_hook,
};

static GMutex plugins_lock;
static GHashTable *plugins; /* scheme -> const struct ff_backend * */

/* Why a scheme has no module, when configure knew it would not. */
static const char *missing_reason(const char *scheme)
{
#ifdef NFS_MISSING_REASON
	if (strcmp(scheme, "nfs") == 0)
		return NFS_MISSING_REASON;
#endif
#ifdef SMB_MISSING_REASON
	if (strcmp(scheme, "smb") == 0)
		return SMB_MISSING_REASON;
#endif
	return NULL;
}

static const struct ff_backend *load(const char *scheme, char **msg)
{
	const char *env = g_getenv("FEDFUSE_BACKEND_DIR");
	g_auto(GStrv) dirs = g_strsplit(env && *env ? env : FF_BACKEND_DIR, ":", -1);
	g_autofree char *file = g_strconcat(scheme, ".so", NULL);
	const struct ff_backend *be;
	const struct ff_backend_ops *ops;
	struct ff_backend *copy;
	const char *lacks;
	gpointer sym;
	GModule *mod;

	for (char **dir = dirs; *dir; dir++) {
		g_autofree char *path = g_build_filename(*dir, file, NULL);

		if (!g_file_test(path, G_FILE_TEST_EXISTS))
			continue;
		mod = g_module_open(path, G_MODULE_BIND_LOCAL);
		if (!mod) {
			*msg = g_strdup_printf("backend '%s': cannot load %s: %s", scheme, path,
					       g_module_error());
			return NULL;
		}
		if (!g_module_symbol(mod, FF_BACKEND_SYMBOL, &sym) || !sym) {
			*msg = g_strdup_printf("backend '%s': %s has no symbol %s", scheme, path,
					       FF_BACKEND_SYMBOL);
			g_module_close(mod);
			return NULL;
		}
		be = sym;
		if (be->abi_major != FF_BACKEND_ABI_MAJOR || be->abi_minor > FF_BACKEND_ABI_MINOR ||
		    !be->ops || !be->scheme || strcmp(be->scheme, scheme) != 0) {
			*msg = g_strdup_printf("backend '%s': %s is incompatible (ABI %u.%u, this "
					       "fedfuse has %u.%u)",
					       scheme, path, be->abi_major, be->abi_minor,
					       FF_BACKEND_ABI_MAJOR, FF_BACKEND_ABI_MINOR);
			g_module_close(mod);
			return NULL;
		}
		ops = ff_gw_complete_ops(be->ops, be->abi_minor, &lacks);
		if (!ops) {
			*msg = g_strdup_printf("backend '%s': %s has no %s operation", scheme, path,
					       lacks);
			g_module_close(mod);
			return NULL;
		}
		g_module_make_resident(mod);
		ff_gw_attach(ops, &host);
		/* The core's copy, whose operations are all there (gateway.h). */
		copy = g_memdup2(be, sizeof(*be));
		copy->ops = ops;
		return copy;
	}
	if (missing_reason(scheme))
		*msg = g_strdup_printf("backend '%s' is not available (%s)", scheme,
				       missing_reason(scheme));
	else
		*msg = g_strdup_printf("backend '%s' is not available (no %s in %s)", scheme, file,
				       env && *env ? env : FF_BACKEND_DIR);
	return NULL;
}

const struct ff_backend *ff_plugin_find(const char *scheme, char **msg)
{
	const struct ff_backend *be;

	g_mutex_lock(&plugins_lock);
	if (!plugins)
		plugins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	be = g_hash_table_lookup(plugins, scheme);
	if (!be) {
		be = load(scheme, msg);
		if (be)
			g_hash_table_insert(plugins, g_strdup(scheme), (gpointer)be);
	}
	g_mutex_unlock(&plugins_lock);
	return be;
}

int ff_plugin_check_location(const struct ff_location_spec *spec, void *data, char **msg)
{
	const struct ff_backend *be;

	if (ff_nsdb_is_fsn(spec)) /* the core's own: an FSN in an NSDB */
		return ff_nsdb_fsn_parse(spec, NULL, NULL, msg);
	be = ff_plugin_find(spec->scheme, msg);
	if (!be)
		return -ENOENT;
	return ff_gw_check(be, spec, msg);
}

int ff_plugin_server_port(const struct ff_location_spec *spec, void *data, char **msg)
{
	const struct ff_backend *be = ff_plugin_find(spec->scheme, msg);

	int rc;

	if (!be)
		return -ENOENT;
	rc = ff_gw_check(be, spec, msg); /* a location the backend refuses has no port */
	return rc < 0 ? rc : ff_gw_server_port(be, spec, msg);
}

bool ff_plugin_check_junction(const struct ff_junction *j, char **msg)
{
	for (guint i = 0; i < j->locations->len; i++) {
		const struct ff_location *loc = g_ptr_array_index(j->locations, i);
		g_autofree char *why = NULL;
		const struct ff_backend *be = NULL;

		if (ff_nsdb_is_fsn(&loc->spec)) {
			if (ff_nsdb_fsn_parse(&loc->spec, NULL, NULL, &why) < 0) {
				*msg = g_steal_pointer(&why);
				return false;
			}
			continue;
		}
		be = ff_plugin_find(loc->spec.scheme, &why);
		if (!be) /* a replica this machine cannot reach: the others still serve */
			continue;
		g_clear_pointer(&why, g_free);
		if (ff_gw_check(be, &loc->spec, &why) < 0) {
			g_autofree char *u = ff_shown(loc->spec.uri);

			*msg = g_strdup_printf("location '%s': %s", u,
					       why ? why : "refused by its backend");
			return false;
		}
	}
	return true;
}
