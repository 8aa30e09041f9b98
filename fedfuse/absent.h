/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * absent.h - names a network location was just found not to have. A program that looks for a
 * name before it makes it (git's checkout, make, an editor) has the kernel look it up twice:
 * once for its stat, and again for its open(O_CREAT | O_EXCL), which the kernel never answers
 * from its own cache. The second answer comes from here, not from the server. A name is kept
 * absent for as long as the kernel was told it may keep it so itself (resolve.c), and only
 * while nothing changed through the mount since its lookup began: a name made, renamed or
 * removed, an xattr set, a change notification or a new namespace forgets them all. A name
 * that another client made meanwhile is found by the create itself, which is exclusive on the
 * server (EEXIST), as it is after the kernel's own cache answered.
 */
#ifndef FEDFUSE_ABSENT_H
#define FEDFUSE_ABSENT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The most recent names kept; a program that looks for a name makes it soon after. */
#define FF_ABSENT_SLOTS 64

struct ff_absent;

struct ff_absent *ff_absent_new(void);
void ff_absent_free(struct ff_absent *a);

/* Read before a lookup, for ff_absent_note() after it. */
uint64_t ff_absent_gen(struct ff_absent *a);
/* A lookup that began at `gen` did not find `name` in directory `dir` (an inode number): it is
 * absent for `ttl` seconds, unless something changed since the lookup began. */
void ff_absent_note(struct ff_absent *a, uint64_t dir, const char *name, uint64_t gen, double ttl);
/* Whether `name` in `dir` is known to be absent now (a hit is counted). */
bool ff_absent_known(struct ff_absent *a, uint64_t dir, const char *name);
/* A name may have appeared through the mount or beside it: forget every one. */
void ff_absent_changed(struct ff_absent *a);

/* "absent-names hits=N kept=N\n" for /.fedfuse/stats. */
void ff_absent_describe(struct ff_absent *a, GString *out);

#endif /* FEDFUSE_ABSENT_H */
