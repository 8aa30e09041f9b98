/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inode.h - the inode table: FUSE inode numbers <-> (location, backend object).
 *
 * An inode number is stable for the life of the mount: an object seen again gets the number it
 * had, computed from its location and its backend identity (st_dev, st_ino), so st_ino does not
 * change when the kernel forgets and re-learns an inode. Hard links share one inode.
 *
 * Numbers: 1 is the root; other namespace-only inodes (virtual directories, the control
 * directory and its files) have small numbers (mount index 0); an object of the location with
 * mount index M (1..0xfffe) and backend inode B has (M << 48) | B, unless B does not fit in 48
 * bits or that number is taken by another object, in which case it gets a number from a
 * counter in the 0xffff range.
 *
 * Locking: the table's mutex guards both maps, every nlookup and the table's membership. An
 * inode's `lock` guards its mutable cache fields. Order: table mutex before an inode's lock.
 */
#ifndef FEDFUSE_INODE_H
#define FEDFUSE_INODE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/backend.h"

#define FF_INO_ROOT 1
#define FF_INO_CONTROL 2       /* the hidden /.fedfuse directory */
#define FF_INO_CONTROL_FIRST 3 /* its files */
#define FF_INO_VIRTUAL_FIRST 16
#define FF_MOUNT_INDEX_MAX 0xfffe
#define FF_MOUNT_INDEX_NONE 0xffff /* a mount whose objects are numbered from the counter */

struct ff_inode;
struct ff_mount;
struct ff_namespace;
struct ff_ns_node;

/* Where an inode stands in the namespace tree: a node of the namespace it was last found in,
 * which the reference keeps alive (after a reload, the new namespace is searched by the node's
 * path: ff_resolve_ns_node()). */
struct ff_ns_ref {
	struct ff_namespace *ns;
	const struct ff_ns_node *node;
};

/* Set (node NULL: clear) where `inode` stands in the namespace tree; takes its lock. */
void ff_inode_set_ns(struct ff_inode *inode, struct ff_namespace *ns,
		     const struct ff_ns_node *node);

/* Close-to-open consistency for a file opened through the mount: the data version the
 * kernel's page cache holds. Made at the file's first open, kept until the inode goes. */
struct ff_inode_open {
	bool cache_valid;
	int opencount;
	uint64_t cache_times; /* st_mtim and st_ctim folded (file.c: times_of()) */
	off_t cache_size;
};

/* Kept small, 88 bytes (one 96-byte malloc chunk): the daemon holds one per inode the kernel
 * caches (DESIGN §10), most of them never opened (find, ls, du, make's stats), so what only an
 * opened file needs is kept apart (`open`). */
struct ff_inode {
	uint64_t ino;	  /* first: the table's number index hashes the inode by it */
	uint64_t nlookup; /* the kernel's references; under the table mutex */

	/* Identity: which object (dev, bino) of which location (mnt, which numbers its objects
	 * with mnt_index). mnt is NULL for namespace-only inodes. */
	dev_t dev;
	ino_t bino;
	uint16_t mnt_index;
	uint16_t type; /* S_IFMT bits */
	bool pinned;   /* never freed (root, virtual and control inodes) */
	/* The kernel may hold a mode with setuid or setgid bits for this file: a write by a caller
	 * without CAP_FSETID may clear them, which the kernel does not learn from the reply.
	 * Read and written with __atomic builtins (see ff_inode_note_mode). */
	bool setid;
	/* It no longer names its object: the object was removed, and the backend gave its
	 * identity to a new one, of another type or after a removal through the mount (a server
	 * reusing a file id). The kernel may still use its number; lookups never find it. */
	bool retired;

	struct ff_mount *mnt;
	ff_node *bnode;

	/* For inodes that are part of the namespace tree (virtual directories, referral roots,
	 * directories with nested referrals below them): their node, else NULL. Under `lock`. */
	struct ff_ns_ref *ns_ref;

	GMutex lock;
	struct ff_inode_gone *gone; /* NULL unless removed through the mount (below) */
	struct ff_inode_open *open; /* NULL until first opened; under `lock` */
};

/* What an inode keeps once its name was removed through the mount (path-named backends). */
struct ff_inode_gone {
	/* An open file unlinked and renamed to a hidden name: the hidden name is removed at last
	 * close (hidden_name NULL once it is). */
	struct ff_inode *hidden_parent;
	char *hidden_name;
	/* A removed directory: it has no name to be reached by any more, so it answers with its
	 * last attributes (st_nlink 0) and an empty listing, as one does on a local filesystem. */
	bool removed;
	struct stat removed_st;
};

/* The opens of `inode` not released yet; under its lock. */
static inline int ff_inode_opencount(const struct ff_inode *inode)
{
	return inode->open ? inode->open->opencount : 0;
}

/* Attributes with `mode` go to the kernel for `inode`: note whether they carry setid bits. */
static inline void ff_inode_note_mode(struct ff_inode *inode, mode_t mode)
{
	bool setid = S_ISREG(mode) && (mode & (S_ISUID | S_ISGID));

	if (__atomic_load_n(&inode->setid, __ATOMIC_RELAXED) != setid)
		__atomic_store_n(&inode->setid, setid, __ATOMIC_RELAXED);
}

/* The inode's `gone` record, made on first use; called with inode->lock held. */
struct ff_inode_gone *ff_inode_gone(struct ff_inode *inode);

/* Called when an inode leaves the table (its last lookup was forgotten), without the table
 * mutex held: release the backend node and the inode's strings, but not the inode itself. */
typedef void (*ff_inode_release_fn)(struct ff_inode *inode, void *data);

struct ff_itab;

struct ff_itab *ff_itab_new(ff_inode_release_fn release, void *data);
/* Releases every inode still in the table. */
void ff_itab_free(struct ff_itab *itab);

/* The inode with this number, or NULL. The pointer stays valid while the kernel holds a
 * reference, i.e. for the duration of any request that names it. */
struct ff_inode *ff_itab_get(struct ff_itab *itab, uint64_t ino);

/* The inode for object (mnt, dev, bino), counting one lookup. If it exists, *created is
 * false and the caller still owns `bnode` (to forget or relink); otherwise a new inode takes
 * `mnt`, `bnode` and `type`. With `one_node`, an inode that holds a node other than `bnode` is
 * not that object (a directory of a path-named backend has one name: its identity at another
 * path is another directory, which the server gave the number of one removed behind the
 * mount's back); it is retired like one whose object was removed. */
struct ff_inode *ff_itab_intern(struct ff_itab *itab, struct ff_mount *mnt, uint16_t mnt_index,
				dev_t dev, ino_t bino, ff_node *bnode, mode_t type, bool one_node,
				bool *created);

/* A pinned namespace-only inode: `ino` FF_INO_ROOT or a control inode, or 0 to number it by
 * `ns_path` (the same path always gets the same number). Counts one lookup. Its place in the
 * namespace tree is the caller's to set (ff_inode_set_ns). */
struct ff_inode *ff_itab_intern_virtual(struct ff_itab *itab, uint64_t ino, const char *ns_path);

/* The inode of object (mnt, dev, bino) if the table has it, counting nothing: the pointer
 * may be freed by a concurrent forget at once, so use it only under the table's own rules (the
 * unit tests), or take ff_itab_find_ref() instead. */
struct ff_inode *ff_itab_find(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			      dev_t dev, ino_t bino);

/* The number of object (mnt, dev, bino) if the table has it, else 0. */
uint64_t ff_itab_find_number(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			     dev_t dev, ino_t bino);

/* As ff_itab_find(), counting one lookup when found (atomically with finding it). */
struct ff_inode *ff_itab_find_ref(struct ff_itab *itab, const struct ff_mount *mnt,
				  uint16_t mnt_index, dev_t dev, ino_t bino);

/* Count one more lookup of an inode the caller holds (a new hard link, an internal hold). */
void ff_itab_ref(struct ff_itab *itab, struct ff_inode *inode);

/* The number an object would get if it were interned now (readdir's d_ino). */
uint64_t ff_itab_predict(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			 dev_t dev, ino_t bino);

/* Undo `n` lookups; the inode is released when none remain (unless pinned). */
void ff_itab_forget(struct ff_itab *itab, uint64_t ino, uint64_t n);

/* Inodes currently in the table. */
size_t ff_itab_count(struct ff_itab *itab);

/* Call fn on every inode (under the table mutex: fn must
 * not call back into the table). */
void ff_itab_foreach(struct ff_itab *itab, void (*fn)(struct ff_inode *inode, void *data),
		     void *data);

#endif /* FEDFUSE_INODE_H */
