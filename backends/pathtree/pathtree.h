/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pathtree.h - nodes that name objects by path, for backends whose libraries speak paths
 * (libnfs' high-level API, libsmbclient). Each node holds its parent and its name, so a rename
 * of a directory moves every node below it at once; an index keyed by (parent, name) hands out
 * the same node for the same name, so a rename done through the mount can update it in place.
 *
 * Locking: one mutex per tree guards the index, every parent pointer and every name. Path
 * building takes it briefly; no I/O is ever done under it.
 */
#ifndef FEDFUSE_PATHTREE_H
#define FEDFUSE_PATHTREE_H

#include <glib.h>
#include <stdbool.h>

struct ff_pathnode {
	gint refcount;		    /* core references + one per child that names it as parent */
	bool indexed;		    /* reachable through the index */
	guint16 room;		    /* bytes of `own` */
	struct ff_pathnode *parent; /* NULL for the root and for a detached (unlinked) node */
	char *name;		    /* "" for the root; `own` when the name fits there */
	void *priv; /* the backend's, freed with the node by the tree's free_priv; the backend
		     * locks it */
	char own[]; /* the name, in the node's own allocation: one malloc per node, not two */
};

struct ff_pathtree;

/* A tree whose nodes' priv goes to `free_priv` (NULL: nothing to free) with the node. */
struct ff_pathtree *ff_pathtree_new(GDestroyNotify free_priv);
/* Frees the tree; every node must have been released. */
void ff_pathtree_free(struct ff_pathtree *tree);

/* A new reference to the root node. */
struct ff_pathnode *ff_pathtree_root(struct ff_pathtree *tree);
/* A reference to the node for `name` in `parent`: the existing one or a new one. */
struct ff_pathnode *ff_pathtree_child(struct ff_pathtree *tree, struct ff_pathnode *parent,
				      const char *name);
void ff_pathtree_ref(struct ff_pathtree *tree, struct ff_pathnode *node);
void ff_pathtree_unref(struct ff_pathtree *tree, struct ff_pathnode *node);
/* A new reference to the node for `name` in `parent` when the tree has one; NULL otherwise. */
struct ff_pathnode *ff_pathtree_find(struct ff_pathtree *tree, struct ff_pathnode *parent,
				     const char *name);

/* A node and where it is, as ff_pathtree_entries() saw it: references to both, the name a copy. */
struct ff_pathtree_entry {
	struct ff_pathnode *node;
	struct ff_pathnode *parent;
	char *name;
};

/* Every node reachable by name (the root is not among them): a GArray of struct
 * ff_pathtree_entry, given back with ff_pathtree_entries_free(). */
GArray *ff_pathtree_entries(struct ff_pathtree *tree);
void ff_pathtree_entries_free(struct ff_pathtree *tree, GArray *entries);

/* The path of `node` (plus "/child" when child is non-NULL) below the tree's root: "/" for the
 * root, "/a/b" otherwise; prefixed with `prefix` (e.g. a share's directory, no trailing '/',
 * may be NULL). Returns NULL with -ESTALE semantics when the node was unlinked. g_free it. */
char *ff_pathtree_path(struct ff_pathtree *tree, const char *prefix, struct ff_pathnode *node,
		       const char *child);

/* Bookkeeping after a successful operation on the server. */
void ff_pathtree_rename(struct ff_pathtree *tree, struct ff_pathnode *oldparent,
			const char *oldname, struct ff_pathnode *newparent, const char *newname,
			bool exchange);
void ff_pathtree_unlink(struct ff_pathtree *tree, struct ff_pathnode *parent, const char *name);
/* `keep` takes the parent and name of `fresh` (another path of the same object). */
void ff_pathtree_relink(struct ff_pathtree *tree, struct ff_pathnode *keep,
			struct ff_pathnode *fresh);

#endif /* FEDFUSE_PATHTREE_H */
