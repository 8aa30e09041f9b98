/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_smb_credentials.c - libFuzzer harness: the input is the text of an SMB location's
 * credentials file (mount.cifs' format), parsed as backends/smb/smb_cred.c parses it.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backends/smb/smb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb_ident id;
	char *buf, *msg = NULL;

	if (size > SMB_CRED_MAX)
		return 0; /* the reader refuses larger files before parsing */
	memset(&id, 0, sizeof(id));
	buf = g_malloc(size + 1);
	memcpy(buf, data, size);
	if (smb_parse_credentials(buf, size, "credentials", &id, &msg) == 0)
		smb_ident_clear(&id);
	g_free(msg);
	g_free(buf);
	return 0;
}
