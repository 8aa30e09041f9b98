/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bdi.h - the mount's backing device in the kernel: its read-ahead window.
 */
#ifndef FEDFUSE_BDI_H
#define FEDFUSE_BDI_H

/* The "MAJOR:MINOR" device of the filesystem mounted last on `mountpoint` (an absolute,
 * canonical path), from /proc/self/mountinfo; NULL when there is none. */
char *ff_bdi_device(const char *mountpoint);

/* Set the read-ahead window of the FUSE filesystem just mounted on `mountpoint` to `kib` KiB.
 * The kernel gives a FUSE mount 128 KiB whatever the daemon asks for at INIT, which keeps
 * sequential reads to 128 KiB requests; a window as large as the largest read lets a network
 * backend move a whole megabyte per round trip. Needs root (it writes to sysfs); 0 or a
 * failure leaves the kernel's window (logged at debug level). */
void ff_bdi_set_readahead(const char *mountpoint, unsigned int kib);

#endif /* FEDFUSE_BDI_H */
