/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inode.c - the inode table (see inode.h for the numbering and the locking rules).
 */
#include "fedfuse/inode.h"
#include "fedfuse/namespace.h"

#define INO_BITS 48
#define INO_MASK ((UINT64_C(1) << INO_BITS) - 1)
#define FALLBACK_INDEX UINT64_C(0xffff)

struct ff_itab {
	GMutex lock;
	/* Both indexes are sets of inodes (a GHashTable whose keys are its values costs no value
	 * array): by_ino hashes an inode by `ino`, its first member, so a pointer to a number
	 * finds it. An object is found by the number it would have, (mnt_index << 48) | bino;
	 * only the few that could not have that number (counter-numbered) are also in by_obj,
	 * which hashes an inode by (mnt_index, dev, bino) and is searched with a probe inode. */
	GHashTable *by_ino;
	GHashTable *by_obj;
	GHashTable *virtual_ino; /* namespace path -> number, never shrinks (few entries) */
	uint64_t next_virtual;
	uint64_t next_fallback;
	ff_inode_release_fn release;
	void *release_data;
};

G_STATIC_ASSERT(G_STRUCT_OFFSET(struct ff_inode, ino) == 0);
#if GLIB_SIZEOF_VOID_P == 8
G_STATIC_ASSERT(sizeof(struct ff_inode) <= 88); /* one 96-byte malloc chunk */
#endif

static guint obj_hash(gconstpointer p)
{
	const struct ff_inode *k = p;
	uint64_t h = (uint64_t)k->bino * UINT64_C(0x9e3779b97f4a7c15);

	h ^= (uint64_t)k->dev * UINT64_C(0xc2b2ae3d27d4eb4f) + k->mnt_index;
	h ^= (uint64_t)(uintptr_t)k->mnt >> 4;
	return (guint)(h ^ (h >> 32));
}

static gboolean obj_equal(gconstpointer a, gconstpointer b)
{
	const struct ff_inode *x = a, *y = b;

	return x->mnt == y->mnt && x->mnt_index == y->mnt_index && x->dev == y->dev &&
	       x->bino == y->bino;
}

/* The number an object gets unless it is taken (0: bino does not fit). */
static uint64_t compose(uint16_t mnt_index, ino_t bino)
{
	if ((uint64_t)bino > INO_MASK || bino == 0 || mnt_index == FF_MOUNT_INDEX_NONE)
		return 0;
	return ((uint64_t)mnt_index << INO_BITS) | (uint64_t)bino;
}

/* Whether an inode is in by_obj: it does not have the number its identity composes. */
static bool counter_numbered(const struct ff_inode *inode)
{
	return inode->ino != compose(inode->mnt_index, inode->bino);
}

/* The inode of an object, or NULL; called with the table mutex held. */
static struct ff_inode *find_locked(struct ff_itab *itab, const struct ff_mount *mnt,
				    uint16_t mnt_index, dev_t dev, ino_t bino)
{
	struct ff_inode probe = {
		.dev = dev, .bino = bino, .mnt_index = mnt_index, .mnt = (struct ff_mount *)mnt
	};
	uint64_t ino = compose(mnt_index, bino);

	if (ino) {
		struct ff_inode *inode = g_hash_table_lookup(itab->by_ino, &ino);

		if (inode && obj_equal(inode, &probe) && !inode->retired)
			return inode;
	}
	if (g_hash_table_size(itab->by_obj) == 0)
		return NULL;
	return g_hash_table_lookup(itab->by_obj, &probe);
}

struct ff_itab *ff_itab_new(ff_inode_release_fn release, void *data)
{
	struct ff_itab *itab = g_new0(struct ff_itab, 1);

	g_mutex_init(&itab->lock);
	itab->by_ino = g_hash_table_new(g_int64_hash, g_int64_equal);
	itab->by_obj = g_hash_table_new(obj_hash, obj_equal);
	itab->virtual_ino = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	itab->next_virtual = FF_INO_VIRTUAL_FIRST;
	itab->next_fallback = FALLBACK_INDEX << INO_BITS;
	itab->release = release;
	itab->release_data = data;
	return itab;
}

void ff_inode_set_ns(struct ff_inode *inode, struct ff_namespace *ns, const struct ff_ns_node *node)
{
	struct ff_namespace *old = NULL;

	g_mutex_lock(&inode->lock);
	if (inode->ns_ref && inode->ns_ref->ns == ns && inode->ns_ref->node == node) {
		g_mutex_unlock(&inode->lock);
		return;
	}
	if (inode->ns_ref)
		old = inode->ns_ref->ns;
	if (node) {
		if (!inode->ns_ref)
			inode->ns_ref = g_new(struct ff_ns_ref, 1);
		inode->ns_ref->ns = ff_namespace_ref(ns);
		inode->ns_ref->node = node;
	} else {
		g_clear_pointer(&inode->ns_ref, g_free);
	}
	g_mutex_unlock(&inode->lock);
	if (old)
		ff_namespace_unref(old);
}

struct ff_inode_gone *ff_inode_gone(struct ff_inode *inode)
{
	if (!inode->gone)
		inode->gone = g_new0(struct ff_inode_gone, 1);
	return inode->gone;
}

static void inode_free(struct ff_itab *itab, struct ff_inode *inode)
{
	if (itab->release)
		itab->release(inode, itab->release_data);
	ff_inode_set_ns(inode, NULL, NULL);
	if (inode->gone)
		g_free(inode->gone->hidden_name);
	g_free(inode->gone);
	g_free(inode->open);
	g_mutex_clear(&inode->lock);
	g_free(inode);
}

void ff_itab_free(struct ff_itab *itab)
{
	GHashTableIter it;
	gpointer value;

	if (!itab)
		return;
	g_hash_table_iter_init(&it, itab->by_ino);
	while (g_hash_table_iter_next(&it, NULL, &value))
		inode_free(itab, value);
	g_hash_table_destroy(itab->by_ino);
	g_hash_table_destroy(itab->by_obj);
	g_hash_table_destroy(itab->virtual_ino);
	g_mutex_clear(&itab->lock);
	g_free(itab);
}

struct ff_inode *ff_itab_get(struct ff_itab *itab, uint64_t ino)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	inode = g_hash_table_lookup(itab->by_ino, &ino);
	g_mutex_unlock(&itab->lock);
	return inode;
}

uint64_t ff_itab_predict(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			 dev_t dev, ino_t bino)
{
	struct ff_inode *inode;
	uint64_t ino;

	g_mutex_lock(&itab->lock);
	inode = find_locked(itab, mnt, mnt_index, dev, bino);
	ino = inode ? inode->ino : compose(mnt_index, bino);
	g_mutex_unlock(&itab->lock);
	return ino ? ino : FALLBACK_INDEX << INO_BITS;
}

struct ff_inode *ff_itab_find(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			      dev_t dev, ino_t bino)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	inode = find_locked(itab, mnt, mnt_index, dev, bino);
	g_mutex_unlock(&itab->lock);
	return inode;
}

uint64_t ff_itab_find_number(struct ff_itab *itab, const struct ff_mount *mnt, uint16_t mnt_index,
			     dev_t dev, ino_t bino)
{
	struct ff_inode *inode;
	uint64_t ino;

	g_mutex_lock(&itab->lock);
	inode = find_locked(itab, mnt, mnt_index, dev, bino);
	ino = inode ? inode->ino : 0;
	g_mutex_unlock(&itab->lock);
	return ino;
}

struct ff_inode *ff_itab_find_ref(struct ff_itab *itab, const struct ff_mount *mnt,
				  uint16_t mnt_index, dev_t dev, ino_t bino)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	inode = find_locked(itab, mnt, mnt_index, dev, bino);
	if (inode)
		inode->nlookup++;
	g_mutex_unlock(&itab->lock);
	return inode;
}

void ff_itab_ref(struct ff_itab *itab, struct ff_inode *inode)
{
	g_mutex_lock(&itab->lock);
	inode->nlookup++;
	g_mutex_unlock(&itab->lock);
}

/* Whether `inode`, found by identity, is the object a backend reports again with `type`: not if
 * the type changed, nor once it was removed through the mount (a removed directory answers with
 * its last attributes). Called with the table mutex held. */
static bool still_names(struct ff_inode *inode, mode_t type)
{
	bool removed;

	if (inode->type != (type & S_IFMT))
		return false;
	g_mutex_lock(&inode->lock);
	removed = inode->gone && inode->gone->removed;
	g_mutex_unlock(&inode->lock);
	return !removed;
}

/* Take `inode` out of the identity index for good; it lives on by number until the kernel
 * forgets it. Called with the table mutex held. */
static void retire_locked(struct ff_itab *itab, struct ff_inode *inode)
{
	if (counter_numbered(inode))
		g_hash_table_remove(itab->by_obj, inode);
	inode->retired = true;
}

/* Number a new object; called with the table mutex held. */
static uint64_t assign_locked(struct ff_itab *itab, uint16_t mnt_index, ino_t bino)
{
	uint64_t ino = compose(mnt_index, bino);

	while (ino == 0 || g_hash_table_contains(itab->by_ino, &ino))
		ino = ++itab->next_fallback;
	return ino;
}

static struct ff_inode *insert_locked(struct ff_itab *itab, uint64_t ino)
{
	struct ff_inode *inode = g_new0(struct ff_inode, 1);

	g_mutex_init(&inode->lock);
	inode->ino = ino;
	inode->nlookup = 1;
	g_hash_table_add(itab->by_ino, inode);
	return inode;
}

struct ff_inode *ff_itab_intern(struct ff_itab *itab, struct ff_mount *mnt, uint16_t mnt_index,
				dev_t dev, ino_t bino, ff_node *bnode, mode_t type, bool one_node,
				bool *created)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	inode = find_locked(itab, mnt, mnt_index, dev, bino);
	if (inode && (!still_names(inode, type) || (one_node && inode->bnode != bnode))) {
		retire_locked(itab, inode);
		inode = NULL;
	}
	if (inode) {
		inode->nlookup++;
		*created = false;
		goto out_unlock;
	}
	inode = insert_locked(itab, assign_locked(itab, mnt_index, bino));
	inode->mnt_index = mnt_index;
	inode->dev = dev;
	inode->bino = bino;
	inode->mnt = mnt;
	inode->bnode = bnode;
	inode->type = type & S_IFMT;
	if (counter_numbered(inode))
		g_hash_table_add(itab->by_obj, inode);
	*created = true;
out_unlock:
	g_mutex_unlock(&itab->lock);
	return inode;
}

struct ff_inode *ff_itab_intern_virtual(struct ff_itab *itab, uint64_t ino, const char *ns_path)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	if (ino == 0) {
		gpointer known = g_hash_table_lookup(itab->virtual_ino, ns_path);

		if (known) {
			ino = GPOINTER_TO_SIZE(known);
		} else {
			ino = itab->next_virtual++;
			g_hash_table_insert(itab->virtual_ino, g_strdup(ns_path),
					    GSIZE_TO_POINTER(ino));
		}
	}
	inode = g_hash_table_lookup(itab->by_ino, &ino);
	if (inode) {
		inode->nlookup++;
	} else {
		inode = insert_locked(itab, ino);
		inode->pinned = true;
		inode->type = S_IFDIR;
	}
	g_mutex_unlock(&itab->lock);
	return inode;
}

void ff_itab_forget(struct ff_itab *itab, uint64_t ino, uint64_t n)
{
	struct ff_inode *inode;

	g_mutex_lock(&itab->lock);
	inode = g_hash_table_lookup(itab->by_ino, &ino);
	if (!inode) {
		g_mutex_unlock(&itab->lock);
		return;
	}
	inode->nlookup = n >= inode->nlookup ? 0 : inode->nlookup - n;
	if (inode->nlookup > 0 || inode->pinned) {
		g_mutex_unlock(&itab->lock);
		return;
	}
	g_hash_table_remove(itab->by_ino, inode);
	if (counter_numbered(inode) && !inode->retired) /* a retired one's identity is another's */
		g_hash_table_remove(itab->by_obj, inode);
	g_mutex_unlock(&itab->lock);
	inode_free(itab, inode);
}

size_t ff_itab_count(struct ff_itab *itab)
{
	size_t n;

	g_mutex_lock(&itab->lock);
	n = g_hash_table_size(itab->by_ino);
	g_mutex_unlock(&itab->lock);
	return n;
}

void ff_itab_foreach(struct ff_itab *itab, void (*fn)(struct ff_inode *inode, void *data),
		     void *data)
{
	GHashTableIter it;
	gpointer value;

	g_mutex_lock(&itab->lock);
	g_hash_table_iter_init(&it, itab->by_ino);
	while (g_hash_table_iter_next(&it, NULL, &value))
		fn(value, data);
	g_mutex_unlock(&itab->lock);
}
