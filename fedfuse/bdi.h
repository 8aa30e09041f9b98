/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bdi.h - the mount's backing device in the kernel: its read-ahead window.
 */
#ifndef FEDFUSE_BDI_H
#define FEDFUSE_BDI_H

/* Set the read-ahead window of the FUSE filesystem just mounted on `mountpoint` to `kib` KiB.
 * The kernel gives a FUSE mount 128 KiB whatever the daemon asks for at INIT, which keeps
 * sequential reads to 128 KiB requests; a window as large as the largest read lets a network
 * backend move a whole megabyte per round trip. Needs root (it writes to sysfs); 0 or a
 * failure leaves the kernel's window (logged at debug level). */
void ff_bdi_set_readahead(const char *mountpoint, unsigned int kib);

#endif /* FEDFUSE_BDI_H */
