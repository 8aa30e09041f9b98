/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fixture.h - what the unit tests that run the core on the reference backend (mem://) share:
 * a temporary folder, mounts of their own to make trees through, and the daemon's state loaded
 * from a namespace text. One test program at a time uses it (file-level state).
 */
#ifndef FEDFUSE_TEST_FIXTURE_H
#define FEDFUSE_TEST_FIXTURE_H

#include <stdbool.h>

#include "fedfuse/fedfuse.h"
#include "fedfuse/mount.h"

/* Root, umask 022: the caller of every operation. */
extern const struct ff_cred *const fx_cred;

/* g_test_init(), backends from FEDFUSE_BUILDDIR (mem, and local when `local`), a temporary
 * folder named after `name`. */
void fx_init(int *argc, char ***argv, const char *name, bool local);
/* The temporary folder. */
const char *fx_tmp(void);
/* Undo fx_init(); returns `rc`. */
int fx_finish(int rc);

/* A mount of `uri` for setting trees up (the table keeps it), and its root node. */
struct ff_mount *fx_setup_mount(const char *uri, ff_node **root);
/* A directory `name` in the root of `uri`; a fedfuse junction to `target` unless NULL. */
void fx_make_dir(const char *uri, const char *name, const char *target);
/* An empty file `name` in the root of `uri`. */
void fx_make_file(const char *uri, const char *name);
/* Remove the file `name` from the root of `uri`. */
void fx_unlink_file(const char *uri, const char *name);

/* The daemon's state with the namespace `ns_text`, as it is after loading. */
struct ff_state *fx_state_new(const char *ns_text);
void fx_state_free(struct ff_state *s);

#endif /* FEDFUSE_TEST_FIXTURE_H */
