/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namespace_tree.h - what the namespace file's parser (namespace.c) uses of the tree's
 * construction (namespace_tree.c).
 */
#ifndef FEDFUSE_NAMESPACE_TREE_H
#define FEDFUSE_NAMESPACE_TREE_H

#include "fedfuse/namespace.h"

#define NS_NAME_MAX 255 /* bytes in one path component, as NAME_MAX */

/* A new node `name` below `parent` (NULL: the root), owned by ns->nodes. */
struct ff_ns_node *ff_ns_node_add(struct ff_namespace *ns, struct ff_ns_node *parent,
				  const char *name);
void ff_ns_node_free(gpointer node);
/* Make a node for every referral and every ancestor of one (virtual directories). */
void ff_namespace_build_tree(struct ff_namespace *ns);

#endif /* FEDFUSE_NAMESPACE_TREE_H */
