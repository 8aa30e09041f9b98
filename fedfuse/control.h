/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * control.h - the hidden /.fedfuse directory: read-only text files that show the daemon's
 * state (stats, namespace, locations). It is reachable by name but not listed in /.
 */
#ifndef FEDFUSE_CONTROL_H
#define FEDFUSE_CONTROL_H

#include "fedfuse/fedfuse.h"

#define FF_CONTROL_NAME ".fedfuse"

bool ff_control_is_control(uint64_t ino);
int ff_control_lookup(struct ff_state *s, uint64_t parent, const char *name,
		      struct fuse_entry_param *e);
int ff_control_getattr(struct ff_state *s, uint64_t ino, struct stat *st, double *timeout);
/* The current text of a control file (g_free it), or NULL when ino is not a file. */
char *ff_control_read(struct ff_state *s, uint64_t ino, size_t *len);
/* The names in the control directory, NULL-terminated. */
const char *const *ff_control_names(void);

#endif /* FEDFUSE_CONTROL_H */
