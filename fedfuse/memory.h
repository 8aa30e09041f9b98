/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memory.h - giving memory back. When the kernel forgets a large tree, the daemon frees its
 * inodes, nodes and mounts; malloc keeps what it freed in its arenas unless asked to give it
 * back. Freeing code notes how much it freed; the prober's periodic pass trims at the end of a
 * burst (nothing freed for a pass) or every FF_TRIM_AFTER objects during a long one.
 */
#ifndef FEDFUSE_MEMORY_H
#define FEDFUSE_MEMORY_H

#define FF_TRIM_AFTER 8192

/* `n` objects were freed. Cheap: an atomic add. */
void ff_memory_freed(unsigned int n);

/* From a periodic pass: malloc_trim() when a burst of frees ended or grew long. */
void ff_memory_trim_if_due(void);

#endif /* FEDFUSE_MEMORY_H */
