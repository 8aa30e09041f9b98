/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.h - the dry run of `fedfuse --check`: validate a namespace file, probe its locations,
 * and show what a reload of a running mount would change.
 */
#ifndef FEDFUSE_CHECK_H
#define FEDFUSE_CHECK_H

/* Prints one line per location ("up" or "down" and why) and, given a mount point, the
 * changes a reload of that mount would make. Returns the exit status: 0 when the file is
 * valid and every location answered, else 1. */
int ff_check(const char *namespace_file, const char *mountpoint);

#endif /* FEDFUSE_CHECK_H */
