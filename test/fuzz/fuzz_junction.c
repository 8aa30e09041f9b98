/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_junction.c - libFuzzer harnesses for the junction formats found inside backends, which
 * whoever can write on a server controls. Built three times, FUZZ_JUNCTION choosing the parser:
 * 1, user.fedfuse.locations values; 2, FedFS XML (trusted.junction.nfs, with the first line of
 * the input as trusted.junction.mode when it is short); 3, msdfs: symlink targets. A junction
 * that parses is written back as the admin tool writes it, and that must parse to as many
 * locations.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fedfuse/junction.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ff_junction *parse(const char *text, size_t size)
{
#if FUZZ_JUNCTION == 1
	return ff_junction_parse_fedfuse(text, size, NULL);
#elif FUZZ_JUNCTION == 2
	const char *nl = memchr(text, '\n', size);
	size_t mode_len = nl ? (size_t)(nl - text) : 0;

	if (nl && mode_len <= 8)
		return ff_junction_parse_fedfs(nl + 1, size - mode_len - 1, text, mode_len, NULL);
	return ff_junction_parse_fedfs(text, size, NULL, 0, NULL);
#else
	return ff_junction_is_msdfs(text, size) ? ff_junction_parse_msdfs(text, size, NULL) : NULL;
#endif
}

#if FUZZ_JUNCTION == 2
/* The FedFS parser writes nfs://HOST[:PORT]/PATH, no options: the nfs backend's port rule for
 * those (which a fuzzer does not load) is the URI's port or NFS's own. */
static int port_of(const struct ff_location_spec *spec, void *data, char **msg)
{
	return spec->port ? spec->port : FF_JUNCTION_NFS_PORT;
}
#endif

static char *format(struct ff_junction *j)
{
#if FUZZ_JUNCTION == 1
	return ff_junction_format_fedfuse(j->locations);
#elif FUZZ_JUNCTION == 2
	return ff_junction_format_fedfs(j->locations, j->mode, port_of, NULL, NULL);
#else
	return ff_junction_format_msdfs(j->locations, NULL);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ff_junction *j = parse((const char *)data, size), *k;
	char *again;

	if (!j)
		return 0;
	again = format(j);
	if (again) {
#if FUZZ_JUNCTION == 2
		/* the mode travels in the XML (savedmode) */
		k = ff_junction_parse_fedfs(again, strlen(again), NULL, 0, NULL);
#else
		k = parse(again, strlen(again));
#endif
		if (!k || k->locations->len != j->locations->len)
			abort();
		ff_junction_free(k);
		g_free(again);
	}
	ff_junction_free(j);
	return 0;
}
