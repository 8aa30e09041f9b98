/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * resolve.h - from a name in a directory to what the kernel sees: a referral's location root,
 * a virtual directory, a directory overlaid by nested referrals, or a plain backend entry.
 */
#ifndef FEDFUSE_RESOLVE_H
#define FEDFUSE_RESOLVE_H

#include "fedfuse/fedfuse.h"

/* The backend side of an inode, for one operation. For most inodes it is the inode's own mount
 * and node; for the root when "/" is a referral it is the root node of that referral's current
 * location, which its mount keeps. `mnt` is NULL for namespace-only inodes. ff_target_put()
 * ends the use, which holds nothing of its own: the inode the request names holds its mount
 * (a referral's mount is the table's until the daemon stops). */
struct ff_target {
	struct ff_mount *mnt;
	ff_node *bnode;
};

/* What a request carries through resolution: the state, the caller, and the namespace in force
 * when it began, taken once (referenced), so that one request sees one namespace whatever a
 * reload does meanwhile. */
struct ff_ctx {
	struct ff_state *s;
	struct ff_namespace *ns;
	const struct ff_cred *cred;
	gint64 start; /* monotonic usec */
};

void ff_ctx_begin(struct ff_ctx *c, struct ff_state *s, const struct ff_cred *cred);
void ff_ctx_end(struct ff_ctx *c);

int ff_target_get(const struct ff_ctx *c, struct ff_inode *inode, struct ff_target *t);
void ff_target_put(struct ff_state *s, struct ff_target *t);

/* Look up `name` in `parent`; on success fills `e` (and counts one kernel lookup). On -ENOENT,
 * e->entry_timeout tells how long the kernel may keep the name as absent (0: not at all). */
int ff_resolve_lookup(const struct ff_ctx *c, struct ff_inode *parent, const char *name,
		      struct fuse_entry_param *e);

/* Turn a new backend node (from a create-style op or a readdirplus entry) into an entry,
 * counting one kernel lookup. Consumes `bnode`. */
void ff_resolve_entry(struct ff_state *s, struct ff_mount *mnt, ff_node *bnode,
		      const struct stat *st, struct fuse_entry_param *e);

/* The entry for an inode of `mnt` the caller holds one lookup of, which passes to the kernel
 * with the entry (a readdirplus entry given as FF_NODE_BY_NAME). */
void ff_resolve_entry_held(struct ff_mount *mnt, struct ff_inode *inode, const struct stat *st,
			   struct fuse_entry_param *e);

/* Whether a referral with on-unreachable=skip is hidden now: every location is down. */
bool ff_resolve_referral_hidden(struct ff_state *s, const struct ff_referral *ref);

/* The entry for the object `bnode` (attributes `st`) just found in `mnt`, consumed: the root of
 * the location it leads to when it is a junction (cached), else the object itself (with
 * `off_tree`, its inode leaves the namespace tree). *junction (if not NULL) says which. */
int ff_resolve_found(const struct ff_ctx *c, struct ff_mount *mnt, ff_node *bnode,
		     const struct stat *st, bool off_tree, struct fuse_entry_param *e,
		     bool *junction);

/* Attributes of an inode: from its backend, or made up for namespace-only inodes. */
/* Attributes as the namespace shows them: a file unlinked while open (kept under a hidden
 * name) has st_nlink 0. Every reply that carries attributes of a backend object applies it. */
void ff_resolve_fix_attr(struct ff_inode *inode, struct stat *st);

int ff_resolve_getattr(const struct ff_ctx *c, struct ff_inode *inode, ff_fh *fh, struct stat *st,
		       double *timeout);

/* Attributes of a virtual directory (the kernel may cache them for the namespace's
 * attr-timeout; a location's objects: ff_mount_cache_timeout()). */
void ff_virtual_stat(const struct ff_ctx *c, struct ff_inode *inode, struct stat *st);

/* Where `inode` stands in the request's namespace tree (a node of c->ns), or NULL. */
const struct ff_ns_node *ff_resolve_ns_node(const struct ff_ctx *c, struct ff_inode *inode);

/* The namespace child `name` of directory `parent`, if any (names that nested referrals or
 * virtual directories hide in a backend directory). */
bool ff_resolve_is_ns_child(const struct ff_ctx *c, struct ff_inode *parent, const char *name);

#endif /* FEDFUSE_RESOLVE_H */
