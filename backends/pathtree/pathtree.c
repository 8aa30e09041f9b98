/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pathtree.c - path-named nodes shared by the nfs and smb backends (see pathtree.h).
 */
#include <string.h>

#include "backends/pathtree/pathtree.h"

struct ff_pathtree {
	GMutex lock;
	GHashTable *index; /* struct ff_pathnode * (by parent, name) -> itself */
	struct ff_pathnode *root;
	GDestroyNotify free_priv;
};

static guint node_hash(gconstpointer p)
{
	const struct ff_pathnode *n = p;

	return g_direct_hash(n->parent) ^ g_str_hash(n->name);
}

static gboolean node_equal(gconstpointer a, gconstpointer b)
{
	const struct ff_pathnode *x = a, *y = b;

	return x->parent == y->parent && strcmp(x->name, y->name) == 0;
}

/* Name `node`: in its own room when the name fits, else in a copy of its own. */
static void set_name(struct ff_pathnode *node, const char *name)
{
	size_t len = strlen(name) + 1;

	if (node->name != node->own)
		g_free(node->name);
	if (len <= node->room)
		node->name = memcpy(node->own, name, len);
	else
		node->name = g_strdup(name);
}

/* A node named `name`, with room for the name in the same allocation. The room takes what
 * malloc's chunk would waste anyway (chunks grow by 16 bytes, 8 of them its header), so a
 * rename to a slightly longer name still fits. */
static struct ff_pathnode *node_new(const char *name)
{
	size_t len = strlen(name) + 1;
	size_t size = ((sizeof(struct ff_pathnode) + len + 8 + 15) & ~(size_t)15) - 8;
	struct ff_pathnode *node = g_malloc0(size);

	node->room = (guint16)MIN(size - sizeof(struct ff_pathnode), G_MAXUINT16);
	set_name(node, name);
	return node;
}

static void node_free(struct ff_pathtree *tree, struct ff_pathnode *node)
{
	if (node->name != node->own)
		g_free(node->name);
	if (node->priv && tree->free_priv)
		tree->free_priv(node->priv);
	g_free(node);
}

struct ff_pathtree *ff_pathtree_new(GDestroyNotify free_priv)
{
	struct ff_pathtree *tree = g_new0(struct ff_pathtree, 1);

	g_mutex_init(&tree->lock);
	tree->free_priv = free_priv;
	tree->index = g_hash_table_new(node_hash, node_equal);
	tree->root = node_new("");
	tree->root->refcount = 1; /* the tree's own */
	return tree;
}

void ff_pathtree_free(struct ff_pathtree *tree)
{
	if (!tree)
		return;
	g_hash_table_destroy(tree->index);
	node_free(tree, tree->root);
	g_mutex_clear(&tree->lock);
	g_free(tree);
}

struct ff_pathnode *ff_pathtree_root(struct ff_pathtree *tree)
{
	g_atomic_int_inc(&tree->root->refcount);
	return tree->root;
}

void ff_pathtree_ref(struct ff_pathtree *tree, struct ff_pathnode *node)
{
	g_atomic_int_inc(&node->refcount);
}

/* Drop one reference; called with the lock held. Releasing a node releases its parent's
 * reference too, iteratively, so a deep chain does not recurse. */
static void unref_locked(struct ff_pathtree *tree, struct ff_pathnode *node)
{
	while (node && g_atomic_int_dec_and_test(&node->refcount)) {
		struct ff_pathnode *parent = node->parent;

		if (node == tree->root) /* never freed before the tree */
			return;
		if (node->indexed)
			g_hash_table_remove(tree->index, node);
		node_free(tree, node);
		node = parent;
	}
}

void ff_pathtree_unref(struct ff_pathtree *tree, struct ff_pathnode *node)
{
	g_mutex_lock(&tree->lock);
	unref_locked(tree, node);
	g_mutex_unlock(&tree->lock);
}

struct ff_pathnode *ff_pathtree_child(struct ff_pathtree *tree, struct ff_pathnode *parent,
				      const char *name)
{
	struct ff_pathnode key = { .parent = parent, .name = (char *)name };
	struct ff_pathnode *node;

	g_mutex_lock(&tree->lock);
	node = g_hash_table_lookup(tree->index, &key);
	if (node) {
		g_atomic_int_inc(&node->refcount);
	} else {
		node = node_new(name);
		node->refcount = 1;
		node->parent = parent;
		g_atomic_int_inc(&parent->refcount);
		node->indexed = true;
		g_hash_table_add(tree->index, node);
	}
	g_mutex_unlock(&tree->lock);
	return node;
}

struct ff_pathnode *ff_pathtree_find(struct ff_pathtree *tree, struct ff_pathnode *parent,
				     const char *name)
{
	struct ff_pathnode key = { .parent = parent, .name = (char *)name };
	struct ff_pathnode *node;

	g_mutex_lock(&tree->lock);
	node = g_hash_table_lookup(tree->index, &key);
	if (node)
		g_atomic_int_inc(&node->refcount);
	g_mutex_unlock(&tree->lock);
	return node;
}

GArray *ff_pathtree_entries(struct ff_pathtree *tree)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(struct ff_pathtree_entry));
	GHashTableIter it;
	gpointer key;

	g_mutex_lock(&tree->lock);
	g_hash_table_iter_init(&it, tree->index);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		struct ff_pathnode *n = key;
		struct ff_pathtree_entry e = { n, n->parent, g_strdup(n->name) };

		g_atomic_int_inc(&n->refcount);
		g_atomic_int_inc(&n->parent->refcount);
		g_array_append_val(out, e);
	}
	g_mutex_unlock(&tree->lock);
	return out;
}

void ff_pathtree_entries_free(struct ff_pathtree *tree, GArray *entries)
{
	g_mutex_lock(&tree->lock);
	for (guint i = 0; i < entries->len; i++) {
		struct ff_pathtree_entry *e = &g_array_index(entries, struct ff_pathtree_entry, i);

		unref_locked(tree, e->node);
		unref_locked(tree, e->parent);
		g_free(e->name);
	}
	g_mutex_unlock(&tree->lock);
	g_array_free(entries, TRUE);
}

char *ff_pathtree_path(struct ff_pathtree *tree, const char *prefix, struct ff_pathnode *node,
		       const char *child)
{
	GPtrArray *parts = g_ptr_array_new();
	GString *path = g_string_new(prefix ? prefix : "");
	struct ff_pathnode *n;

	g_mutex_lock(&tree->lock);
	for (n = node; n && n != tree->root; n = n->parent) {
		if (!n->indexed) { /* unlinked, or below an unlinked directory */
			g_mutex_unlock(&tree->lock);
			g_ptr_array_free(parts, TRUE);
			g_string_free(path, TRUE);
			return NULL;
		}
		g_ptr_array_add(parts, n->name);
	}
	for (guint i = parts->len; i > 0; i--) {
		g_string_append_c(path, '/');
		g_string_append(path, parts->pdata[i - 1]);
	}
	g_mutex_unlock(&tree->lock);
	g_ptr_array_free(parts, TRUE);
	if (child) {
		g_string_append_c(path, '/');
		g_string_append(path, child);
	}
	if (path->len == 0)
		g_string_append_c(path, '/');
	return g_string_free(path, FALSE);
}

/* Move `node` to (parent, name) in the index; called with the lock held. */
static void move_locked(struct ff_pathtree *tree, struct ff_pathnode *node,
			struct ff_pathnode *parent, const char *name)
{
	struct ff_pathnode *oldparent = node->parent;

	if (node->indexed)
		g_hash_table_remove(tree->index, node);
	g_atomic_int_inc(&parent->refcount);
	node->parent = parent;
	set_name(node, name);
	node->indexed = true;
	g_hash_table_add(tree->index, node);
	unref_locked(tree, oldparent);
}

/* Detach whatever node has (parent, name); called with the lock held. */
static struct ff_pathnode *detach_locked(struct ff_pathtree *tree, struct ff_pathnode *parent,
					 const char *name)
{
	struct ff_pathnode key = { .parent = parent, .name = (char *)name };
	struct ff_pathnode *node = g_hash_table_lookup(tree->index, &key);

	if (node) {
		g_hash_table_remove(tree->index, node);
		node->indexed = false;
	}
	return node;
}

void ff_pathtree_rename(struct ff_pathtree *tree, struct ff_pathnode *oldparent,
			const char *oldname, struct ff_pathnode *newparent, const char *newname,
			bool exchange)
{
	struct ff_pathnode *moved, *target;

	g_mutex_lock(&tree->lock);
	moved = detach_locked(tree, oldparent, oldname);
	target = detach_locked(tree, newparent, newname);
	if (moved)
		move_locked(tree, moved, newparent, newname);
	if (target && exchange)
		move_locked(tree, target, oldparent, oldname);
	g_mutex_unlock(&tree->lock);
}

void ff_pathtree_unlink(struct ff_pathtree *tree, struct ff_pathnode *parent, const char *name)
{
	g_mutex_lock(&tree->lock);
	detach_locked(tree, parent, name);
	g_mutex_unlock(&tree->lock);
}

void ff_pathtree_relink(struct ff_pathtree *tree, struct ff_pathnode *keep,
			struct ff_pathnode *fresh)
{
	g_mutex_lock(&tree->lock);
	if (keep != fresh && fresh->parent) {
		struct ff_pathnode *parent = fresh->parent;
		char *name = g_strdup(fresh->name);

		/* fresh leaves the index so that keep can take its (parent, name). */
		if (fresh->indexed) {
			g_hash_table_remove(tree->index, fresh);
			fresh->indexed = false;
		}
		move_locked(tree, keep, parent, name);
		g_free(name);
	}
	g_mutex_unlock(&tree->lock);
}
