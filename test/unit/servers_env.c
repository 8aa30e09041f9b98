/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * servers_env.c - the test servers' addresses for unit tests (servers_env.h).
 */
#include <glib.h>
#include <string.h>

#include "test/unit/servers_env.h"

char *servers_env(const char *key)
{
	const char *state = g_getenv("FEDFUSE_TEST_STATE");
	g_autofree char *path =
		g_build_filename(state ? state : "/tmp/fedfuse-servers", "servers.env", NULL);
	g_autofree char *text = NULL;
	g_autofree char *prefix = g_strconcat(key, "=", NULL);
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++)
		if (g_str_has_prefix(*l, prefix))
			return g_strdup(*l + strlen(prefix));
	return NULL;
}
