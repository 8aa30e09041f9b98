/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem.c - the mem:// reference backend: trees of objects in memory that answer as a careful POSIX
 * filesystem does (ext4 on Linux, errno for errno), so that the contract's conformance suite can
 * hold the real backends to what it sees here, and fault-injection tests have a backend with no
 * server behind it. Not installed: the unit tests load it.
 *
 * mem://NAME/PATH serves the directory PATH (made, root-owned 0755, when missing) of the tree
 * NAME. Trees are kept by name for the life of the process, so that every location naming one
 * tree sees the same objects (replicas, failover).
 *
 * Where Linux depends on configuration or on the filesystem, this backend does what a default
 * system does with ext4:
 *  - hard links follow fs.protected_hardlinks = 1: someone else's file may be linked only by a
 *    caller who may read and write it, and never when it is setuid or setgid-executable;
 *  - xattrs live in the user., trusted. and security. namespaces; system.* (there are no ACLs)
 *    and unknown prefixes are EOPNOTSUPP. user.* follows the object's permission bits and exists
 *    on regular files and directories only; trusted.* is root's alone (EPERM to set, ENODATA to
 *    read, hidden from other callers' lists); security.* is set by root and read by anyone;
 *  - a write, truncation or fallocate by anyone but root clears S_ISUID, and S_ISGID when the
 *    group may execute or the writer is not in the file's group (backend.h: write);
 *  - a tree holds 4 GiB of data (ENOSPC beyond, EFBIG for one file larger than that) and 2^20
 *    objects, as statfs() says; data is one flat buffer per file, so holes take memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"

#define MEM_NAME_MAX 255
#define MEM_SYMLINK_MAX 4095 /* PATH_MAX less its NUL, as symlink(2) takes */
#define MEM_BLOCK 4096
#define MEM_BLOCKS (1u << 20)
#define MEM_CAPACITY ((guint64)MEM_BLOCKS * MEM_BLOCK)
#define MEM_FILES (1u << 20)

/*
 * Locking: one mutex per tree guards the tree and every field of every object in it. Each
 * operation takes it once, checks everything it must, changes everything it must, and lets go,
 * so no caller sees half an operation. The registry's mutex is taken alone. An open directory's
 * mutex serialises the listings of that handle and comes before the tree's; fill() is called
 * without the tree's, since the core may forget() nodes from inside it.
 */
struct mem_tree {
	GMutex lock;
	char *name;
	dev_t dev;
	ino_t next_ino;
	guint64 bytes;	 /* file data held, for statfs() and the capacity */
	guint64 objects; /* objects alive, names or not */
	struct mem_obj *root;
};

/* An object lives while it has a name (nlink > 0; a directory's nlink drops to 0 when it is
 * removed) or a reference: a node, an open file, an open directory. ff_node is this. */
struct mem_obj {
	struct mem_tree *tree;
	struct mem_obj *parent; /* directories: the one that names it; NULL at the tree's root and
				 * once removed. Not a reference: a name keeps a child alive, not
				 * the other way round */
	ino_t ino;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	nlink_t nlink;
	dev_t rdev;
	struct timespec atime, mtime, ctime;
	guint refs;
	GHashTable *xattrs;   /* name -> GBytes, NULL until the first */
	GHashTable *children; /* directories: name -> struct mem_obj (alive by its nlink) */
	char *data;	      /* regular files: `size` bytes in `alloc` */
	size_t size, alloc;
	char *target; /* symlinks */
};

/* One mounted location: a tree and the directory served, referenced. */
struct mem_loc {
	struct mem_tree *tree;
	struct mem_obj *root;
};

struct mem_fh {
	struct mem_obj *obj; /* referenced */
	int flags;	     /* open(2) flags: the access mode and O_APPEND matter */
};

/* An entry as opendir() saw it. */
struct mem_dirent {
	char *name;
	ino_t ino;
	mode_t type;
};

struct mem_dir {
	GMutex lock;	     /* serialises listings of this handle; before the tree's */
	struct mem_obj *dir; /* referenced */
	GArray *entries;     /* struct mem_dirent, sorted by name; offsets index it */
	bool fresh;	     /* nothing listed yet: a listing from 0 need not look again */
};

static GMutex registry_lock;
static GHashTable *registry; /* tree name -> struct mem_tree, never freed */
static dev_t registry_next_dev = 1;

/* ---- objects ---------------------------------------------------------------------------- */

static struct mem_obj *obj_of(ff_node *node)
{
	return (struct mem_obj *)node;
}

static struct timespec now_ts(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/* No credentials: the daemon itself, acting for no one. */
static bool is_root(const struct ff_cred *cred)
{
	return !cred || cred->uid == 0;
}

/* Is `gid` among the caller's groups? (Not for the daemon: no credentials.) */
static bool in_group(const struct ff_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (int i = 0; cred->groups && i < cred->ngroups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

static bool is_owner(const struct ff_cred *cred, const struct mem_obj *o)
{
	return is_root(cred) || cred->uid == o->uid;
}

/* The permission bits' answer for `mask` (R_OK, W_OK, X_OK). Root reads and writes anything,
 * searches any directory, and executes a file that someone may execute. */
static int obj_access(const struct ff_cred *cred, const struct mem_obj *o, int mask)
{
	mode_t bits;

	if (is_root(cred)) {
		if (!(mask & X_OK) || S_ISDIR(o->mode) || (o->mode & 0111))
			return 0;
		return -EACCES;
	}
	if (cred->uid == o->uid)
		bits = o->mode >> 6;
	else if (in_group(cred, o->gid))
		bits = o->mode >> 3;
	else
		bits = o->mode;
	return ((bits & 7 & mask) == (mode_t)mask) ? 0 : -EACCES;
}

/* A new object, no name yet, owned as inode_init_owner() owns it: the caller's, with the group
 * of a setgid parent (which new directories inherit, and which a new setgid-executable file of
 * someone outside that group loses). */
static struct mem_obj *obj_new(struct mem_tree *t, const struct ff_cred *cred,
			       const struct mem_obj *dir, mode_t mode)
{
	struct mem_obj *o = g_new0(struct mem_obj, 1);

	o->tree = t;
	o->ino = t->next_ino++;
	o->uid = cred ? cred->uid : 0;
	o->gid = cred ? cred->gid : 0;
	if (dir && (dir->mode & S_ISGID)) {
		o->gid = dir->gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
		else if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && !is_root(cred) &&
			 !in_group(cred, dir->gid))
			mode &= ~S_ISGID;
	}
	o->mode = mode;
	o->nlink = S_ISDIR(mode) ? 2 : 1;
	o->atime = o->mtime = o->ctime = now_ts();
	if (S_ISDIR(mode))
		o->children = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	t->objects++;
	return o;
}

static void obj_free(struct mem_obj *o)
{
	o->tree->bytes -= o->size;
	o->tree->objects--;
	if (o->children)
		g_hash_table_unref(o->children); /* empty: only empty directories are removed */
	if (o->xattrs)
		g_hash_table_unref(o->xattrs);
	g_free(o->data);
	g_free(o->target);
	g_free(o);
}

/* An object goes with its last name and its last reference, whichever is last. */
static void obj_release(struct mem_obj *o)
{
	if (o->nlink == 0 && o->refs == 0)
		obj_free(o);
}

static void obj_unref(struct mem_obj *o)
{
	o->refs--;
	obj_release(o);
}

static void obj_stat(const struct mem_obj *o, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = o->tree->dev;
	st->st_ino = o->ino;
	st->st_mode = o->mode;
	st->st_nlink = o->nlink;
	st->st_uid = o->uid;
	st->st_gid = o->gid;
	st->st_rdev = o->rdev;
	if (S_ISDIR(o->mode))
		st->st_size = MEM_BLOCK; /* what ext4 says of a small directory */
	else if (S_ISLNK(o->mode))
		st->st_size = strlen(o->target);
	else
		st->st_size = o->size;
	st->st_blksize = MEM_BLOCK;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_atim = o->atime;
	st->st_mtim = o->mtime;
	st->st_ctim = o->ctime;
}

/* A new node reference for `o`, and its attributes. */
static void give_node(struct mem_obj *o, ff_node **node, struct stat *st)
{
	o->refs++;
	*node = (ff_node *)o;
	obj_stat(o, st);
}

/* Resize a regular file's data, zero-filling what grows. The buffer doubles as it grows (up to
 * 16 MiB at a time) and shrinks when three quarters of it are unused. */
static int data_resize(struct mem_obj *o, guint64 size)
{
	struct mem_tree *t = o->tree;

	if (size > MEM_CAPACITY)
		return -EFBIG;
	if (size > o->size && t->bytes + (size - o->size) > MEM_CAPACITY)
		return -ENOSPC;
	if (size > o->alloc || size < o->alloc / 4) {
		size_t alloc = size;
		char *p;

		if (size > o->alloc)
			alloc = MAX(size, MIN(o->alloc * 2, size + (16u << 20)));
		p = g_try_realloc(o->data, alloc);
		if (!p && alloc)
			return -ENOMEM;
		o->data = p;
		o->alloc = alloc;
	}
	if (size > o->size)
		memset(o->data + o->size, 0, size - o->size);
	t->bytes = t->bytes - o->size + size;
	o->size = size;
	return 0;
}

/* What a data change by `cred` does to the setid bits (header comment). */
static void kill_setid(const struct ff_cred *cred, struct mem_obj *o)
{
	if (is_root(cred) || !S_ISREG(o->mode))
		return;
	o->mode &= ~S_ISUID;
	if ((o->mode & S_IXGRP) || !in_group(cred, o->gid))
		o->mode &= ~S_ISGID;
}

/* The data of `o` changed: times and setid bits as a write changes them. */
static void data_changed(const struct ff_cred *cred, struct mem_obj *o)
{
	kill_setid(cred, o);
	o->mtime = o->ctime = now_ts();
}

/* ---- directories' entries ------------------------------------------------------------------ */

static struct mem_obj *child_of(const struct mem_obj *dir, const char *name)
{
	return g_hash_table_lookup(dir->children, name);
}

static void dir_changed(struct mem_obj *dir, struct timespec now)
{
	dir->mtime = dir->ctime = now;
}

static void dir_add(struct mem_obj *dir, const char *name, struct mem_obj *o, struct timespec now)
{
	g_hash_table_insert(dir->children, g_strdup(name), o);
	if (S_ISDIR(o->mode)) {
		dir->nlink++;
		o->parent = dir;
	}
	dir_changed(dir, now);
}

/* Take `name` (naming `o`) out of `dir`; `o` loses that name, but is not freed here. */
static void dir_remove(struct mem_obj *dir, const char *name, struct mem_obj *o,
		       struct timespec now)
{
	g_hash_table_remove(dir->children, name);
	if (S_ISDIR(o->mode)) {
		dir->nlink--;
		o->nlink = 0;
		o->parent = NULL;
	} else {
		o->nlink--;
	}
	o->ctime = now;
	dir_changed(dir, now);
}

/* May `cred` look `name` up in `dir`? In the order a lookup fails on Linux. */
static int dir_search(const struct ff_cred *cred, const struct mem_obj *dir, const char *name)
{
	int rc;

	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	rc = obj_access(cred, dir, X_OK);
	if (rc)
		return rc;
	if (dir->nlink == 0)
		return -ENOENT; /* removed: nothing is found or made in it any more */
	if (strlen(name) > MEM_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* May `cred` make `name` in `dir`? */
static int may_create(const struct ff_cred *cred, const struct mem_obj *dir, const char *name)
{
	int rc = dir_search(cred, dir, name);

	if (rc)
		return rc;
	if (child_of(dir, name))
		return -EEXIST;
	rc = obj_access(cred, dir, W_OK | X_OK);
	if (rc)
		return rc;
	return dir->tree->objects >= MEM_FILES ? -ENOSPC : 0;
}

/* May `cred` take `victim`'s name out of `dir`? Write and search on `dir`, and in a sticky
 * directory, owning the victim or the directory. */
static int may_delete(const struct ff_cred *cred, const struct mem_obj *dir,
		      const struct mem_obj *victim)
{
	int rc = obj_access(cred, dir, W_OK | X_OK);

	if (rc)
		return rc;
	if ((dir->mode & S_ISVTX) && !is_root(cred) && cred->uid != victim->uid &&
	    cred->uid != dir->uid)
		return -EPERM;
	return 0;
}

/* Is the directory `a` the directory `d` or one of its ancestors? */
static bool is_ancestor(const struct mem_obj *a, const struct mem_obj *d)
{
	for (; d; d = d->parent)
		if (d == a)
			return true;
	return false;
}

/* ---- locations ---------------------------------------------------------------------------- */

static struct mem_tree *tree_get(const char *name)
{
	struct mem_tree *t;

	g_mutex_lock(&registry_lock);
	if (!registry)
		registry = g_hash_table_new(g_str_hash, g_str_equal);
	t = g_hash_table_lookup(registry, name);
	if (!t) {
		t = g_new0(struct mem_tree, 1);
		g_mutex_init(&t->lock);
		t->name = g_strdup(name);
		t->dev = registry_next_dev++;
		t->next_ino = 1; /* the root's, then 2... */
		t->root = obj_new(t, NULL, NULL, S_IFDIR | 0755);
		g_hash_table_insert(registry, t->name, t);
	}
	g_mutex_unlock(&registry_lock);
	return t;
}

/* mkdir -p `path` as root, with the tree locked; *dir is the last directory. */
static int make_path(struct mem_tree *t, const char *path, struct mem_obj **dir)
{
	gchar **parts = g_strsplit(path, "/", -1);
	struct mem_obj *d = t->root, *child;
	int rc = 0;

	for (gchar **p = parts; *p; p++) {
		if (!**p || strcmp(*p, ".") == 0)
			continue;
		if (strcmp(*p, "..") == 0) {
			rc = -EINVAL;
			break;
		}
		if (strlen(*p) > MEM_NAME_MAX) {
			rc = -ENAMETOOLONG;
			break;
		}
		child = child_of(d, *p);
		if (!child) {
			child = obj_new(t, NULL, d, S_IFDIR | 0755);
			dir_add(d, *p, child, child->ctime);
		} else if (!S_ISDIR(child->mode)) {
			rc = -ENOTDIR;
			break;
		}
		d = child;
	}
	g_strfreev(parts);
	*dir = d;
	return rc;
}

static int mem_check(const struct ff_location_spec *spec, char **msg)
{
	if (!spec->host || !spec->host[0]) {
		*msg = g_strdup_printf("mem:// location %s names no tree: write mem://NAME/path",
				       spec->uri);
		return -EINVAL;
	}
	if (spec->port) {
		*msg = g_strdup_printf("mem:// location %s has a port (%d); trees have none",
				       spec->uri, spec->port);
		return -EINVAL;
	}
	if (spec->query) {
		*msg = g_strdup_printf("mem:// location %s has a query (?%s); it takes no options",
				       spec->uri, spec->query);
		return -EINVAL;
	}
	if (!spec->path || spec->path[0] != '/') {
		*msg = g_strdup_printf("mem:// location %s: the path must be absolute", spec->uri);
		return -EINVAL;
	}
	return 0;
}

static int mem_mount(const struct ff_location_spec *spec, const struct ff_notify *notify,
		     void **loc, char **msg)
{
	char *why = NULL;
	struct mem_tree *t;
	struct mem_obj *root;
	struct mem_loc *l;
	int rc;

	rc = mem_check(spec, &why);
	if (rc)
		goto out_msg;
	t = tree_get(spec->host);
	g_mutex_lock(&t->lock);
	rc = make_path(t, spec->path, &root);
	if (rc == 0)
		root->refs++;
	g_mutex_unlock(&t->lock);
	if (rc) {
		why = g_strdup_printf("mem:// location %s: cannot make %s: %s", spec->uri,
				      spec->path, g_strerror(-rc));
		goto out_msg;
	}

	l = g_new0(struct mem_loc, 1);
	l->tree = t;
	l->root = root;
	*loc = l;
	return 0;

out_msg:
	if (msg)
		*msg = why;
	else
		g_free(why);
	return rc;
}

static void mem_unmount(void *loc)
{
	struct mem_loc *l = loc;

	g_mutex_lock(&l->tree->lock);
	obj_unref(l->root);
	g_mutex_unlock(&l->tree->lock);
	g_free(l);
}

/* ---- nodes ------------------------------------------------------------------------------ */

static int mem_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	struct mem_loc *l = loc;

	g_mutex_lock(&l->tree->lock);
	give_node(l->root, node, st);
	g_mutex_unlock(&l->tree->lock);
	return 0;
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static int mem_lookup(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node **node, struct stat *st)
{
	struct mem_obj *dir = obj_of(parent), *o = NULL;
	int rc;

	/* The core never passes these; refusing them keeps the location's root its root. */
	if (is_dot_or_dotdot(name) || strchr(name, '/'))
		return -EINVAL;
	g_mutex_lock(&dir->tree->lock);
	rc = dir_search(cred, dir, name);
	if (rc == 0) {
		o = child_of(dir, name);
		rc = o ? 0 : -ENOENT;
	}
	if (rc == 0)
		give_node(o, node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static void mem_forget(void *loc, ff_node *node)
{
	struct mem_obj *o = obj_of(node);
	struct mem_tree *t = o->tree;

	g_mutex_lock(&t->lock);
	obj_unref(o);
	g_mutex_unlock(&t->lock);
}

static int mem_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		       struct stat *st)
{
	struct mem_obj *o = fh ? ((struct mem_fh *)fh)->obj : obj_of(node);

	g_mutex_lock(&o->tree->lock);
	obj_stat(o, st);
	g_mutex_unlock(&o->tree->lock);
	return 0;
}

/* setattr's checks, all before any change, in the order Linux makes them. */
static int setattr_check(const struct ff_cred *cred, const struct mem_obj *o,
			 const struct mem_fh *f, const struct stat *attr, unsigned int to_set)
{
	unsigned int set_times = FF_SET_ATIME | FF_SET_MTIME;
	unsigned int now_times = FF_SET_ATIME_NOW | FF_SET_MTIME_NOW;
	int rc;

	if (to_set & FF_SET_SIZE) {
		if (S_ISDIR(o->mode))
			return -EISDIR;
		if (!S_ISREG(o->mode) || attr->st_size < 0)
			return -EINVAL;
		if (f && (f->flags & O_ACCMODE) == O_RDONLY)
			return -EINVAL; /* ftruncate(2) of a descriptor not open for writing */
		rc = f ? 0 : obj_access(cred, o, W_OK);
		if (rc)
			return rc;
	}
	if ((to_set & FF_SET_UID) && !is_root(cred) &&
	    (cred->uid != o->uid || attr->st_uid != o->uid))
		return -EPERM;
	if ((to_set & FF_SET_GID) && !is_root(cred) &&
	    (cred->uid != o->uid || (attr->st_gid != o->gid && !in_group(cred, attr->st_gid))))
		return -EPERM;
	if (to_set & FF_SET_MODE) {
		if (S_ISLNK(o->mode))
			return -EOPNOTSUPP; /* as fchmodat(AT_SYMLINK_NOFOLLOW), and local.c */
		if (!is_owner(cred, o))
			return -EPERM;
	}
	if ((to_set & set_times) && !is_owner(cred, o))
		return -EPERM;
	if ((to_set & now_times) && !is_owner(cred, o))
		return obj_access(cred, o, W_OK);
	return 0;
}

/* setattr's changes, checked: the size first, the one that can fail. */
static int setattr_apply(const struct ff_cred *cred, struct mem_obj *o, const struct stat *attr,
			 unsigned int to_set)
{
	struct timespec now = now_ts();
	int rc;

	if (to_set & FF_SET_SIZE) {
		rc = data_resize(o, attr->st_size);
		if (rc)
			return rc;
		kill_setid(cred, o);
		o->mtime = now;
	}
	if (to_set & (FF_SET_UID | FF_SET_GID)) {
		if (to_set & FF_SET_UID)
			o->uid = attr->st_uid;
		if (to_set & FF_SET_GID)
			o->gid = attr->st_gid;
		/* chown(2) clears these whoever calls it, root too (since Linux 2.2.13) */
		if (!S_ISDIR(o->mode)) {
			o->mode &= ~S_ISUID;
			if (o->mode & S_IXGRP)
				o->mode &= ~S_ISGID;
		}
	}
	if (to_set & FF_SET_MODE) {
		o->mode = (o->mode & S_IFMT) | (attr->st_mode & 07777);
		if (!is_root(cred) && !in_group(cred, o->gid))
			o->mode &= ~S_ISGID;
	}
	if (to_set & FF_SET_ATIME_NOW)
		o->atime = now;
	else if (to_set & FF_SET_ATIME)
		o->atime = attr->st_atim;
	if (to_set & FF_SET_MTIME_NOW)
		o->mtime = now;
	else if (to_set & FF_SET_MTIME)
		o->mtime = attr->st_mtim;
	o->ctime = now; /* FF_SET_CTIME asks for no more than this */
	return 0;
}

static int mem_setattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		       const struct stat *attr, unsigned int to_set, struct stat *st)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	struct mem_obj *o = f ? f->obj : obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = setattr_check(cred, o, f, attr, to_set);
	if (rc == 0)
		rc = setattr_apply(cred, o, attr, to_set);
	if (rc == 0)
		obj_stat(o, st);
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

static ssize_t mem_readlink(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			    size_t size)
{
	struct mem_obj *o = obj_of(node);
	ssize_t len;

	g_mutex_lock(&o->tree->lock);
	if (!S_ISLNK(o->mode))
		len = -EINVAL;
	else if ((len = strlen(o->target)) > (ssize_t)size)
		len = -ENAMETOOLONG;
	else
		memcpy(buf, o->target, len);
	g_mutex_unlock(&o->tree->lock);
	return len;
}

/* The end of every create-style op, checked by may_create(): the object named in `dir`. */
static struct mem_obj *make(const struct ff_cred *cred, struct mem_obj *dir, const char *name,
			    mode_t mode)
{
	struct mem_obj *o = obj_new(dir->tree, cred, dir, mode);

	dir_add(dir, name, o, o->ctime);
	return o;
}

static int mem_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, dev_t rdev, ff_node **node, struct stat *st)
{
	struct mem_obj *dir = obj_of(parent), *o;
	int rc;

	switch (mode & S_IFMT) {
	case 0:
		mode |= S_IFREG;
		break;
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}

	g_mutex_lock(&dir->tree->lock);
	rc = may_create(cred, dir, name);
	if (rc == 0 && (S_ISCHR(mode) || S_ISBLK(mode)) && !is_root(cred))
		rc = -EPERM; /* CAP_MKNOD */
	if (rc == 0) {
		o = make(cred, dir, name, mode & (S_IFMT | 07777));
		if (S_ISCHR(mode) || S_ISBLK(mode))
			o->rdev = rdev;
		give_node(o, node, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static int mem_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		     mode_t mode, ff_node **node, struct stat *st)
{
	struct mem_obj *dir = obj_of(parent);
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = may_create(cred, dir, name);
	/* mkdir(2) takes no setuid/setgid bits from the mode; setgid comes from the parent */
	if (rc == 0)
		give_node(make(cred, dir, name, S_IFDIR | (mode & 01777)), node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static int mem_symlink(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
		       const char *name, ff_node **node, struct stat *st)
{
	struct mem_obj *dir = obj_of(parent), *o;
	size_t len = strlen(target);
	int rc;

	if (len == 0)
		return -ENOENT;
	if (len > MEM_SYMLINK_MAX)
		return -ENAMETOOLONG;
	g_mutex_lock(&dir->tree->lock);
	rc = may_create(cred, dir, name);
	if (rc == 0) {
		o = make(cred, dir, name, S_IFLNK | 0777);
		o->target = g_strdup(target);
		give_node(o, node, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

/* fs.protected_hardlinks = 1: may `cred` link `o`, which it may not own? */
static bool may_link_source(const struct ff_cred *cred, const struct mem_obj *o)
{
	if (is_owner(cred, o))
		return true;
	if (!S_ISREG(o->mode) || (o->mode & S_ISUID) ||
	    (o->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return false;
	return obj_access(cred, o, R_OK | W_OK) == 0;
}

static int mem_link(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
		    const char *newname, struct stat *st)
{
	struct mem_obj *o = obj_of(node), *dir = obj_of(newparent);
	int rc;

	if (o->tree != dir->tree)
		return -EXDEV;
	g_mutex_lock(&dir->tree->lock);
	rc = dir_search(cred, dir, newname);
	if (rc == 0 && child_of(dir, newname))
		rc = -EEXIST;
	if (rc == 0 && !may_link_source(cred, o))
		rc = -EPERM;
	if (rc == 0)
		rc = obj_access(cred, dir, W_OK | X_OK);
	if (rc == 0 && S_ISDIR(o->mode))
		rc = -EPERM;
	if (rc == 0 && o->nlink == 0)
		rc = -ENOENT; /* unlinked: it cannot come back */
	if (rc == 0) {
		g_hash_table_insert(dir->children, g_strdup(newname), o);
		o->nlink++;
		o->ctime = now_ts();
		dir_changed(dir, o->ctime);
		obj_stat(o, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

/* unlink and rmdir: the checks they share, in Linux's order; *victim is what `name` names. */
static int remove_check(const struct ff_cred *cred, struct mem_obj *dir, const char *name,
			bool want_dir, struct mem_obj **victim)
{
	struct mem_obj *o;
	int rc = dir_search(cred, dir, name);

	if (rc)
		return rc;
	o = child_of(dir, name);
	if (!o)
		return -ENOENT;
	rc = may_delete(cred, dir, o);
	if (rc)
		return rc;
	if (want_dir && !S_ISDIR(o->mode))
		return -ENOTDIR;
	if (!want_dir && S_ISDIR(o->mode))
		return -EISDIR;
	if (want_dir && g_hash_table_size(o->children))
		return -ENOTEMPTY;
	*victim = o;
	return 0;
}

static int remove_name(const struct ff_cred *cred, ff_node *parent, const char *name, bool want_dir)
{
	struct mem_obj *dir = obj_of(parent), *o;
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = remove_check(cred, dir, name, want_dir, &o);
	if (rc == 0) {
		dir_remove(dir, name, o, now_ts());
		obj_release(o);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static int mem_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(cred, parent, name, false);
}

static int mem_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	return remove_name(cred, parent, name, true);
}

/* One rename, its objects found: the checks of do_renameat2() and vfs_rename(), in their order.
 * 1 means "the same object under both names: nothing to do". */
static int rename_check(const struct ff_cred *cred, struct mem_obj *sdir, struct mem_obj *src,
			struct mem_obj *ddir, struct mem_obj *dst, unsigned int flags)
{
	bool exchange = flags & RENAME_EXCHANGE;
	int rc;

	if ((flags & RENAME_NOREPLACE) && dst)
		return -EEXIST;
	if (exchange && !dst)
		return -ENOENT;
	if (S_ISDIR(src->mode) && is_ancestor(src, ddir))
		return -EINVAL; /* into itself or below */
	if (dst && S_ISDIR(dst->mode) && is_ancestor(dst, sdir))
		return exchange ? -EINVAL : -ENOTEMPTY;
	if (src == dst)
		return 1;
	rc = may_delete(cred, sdir, src);
	if (rc)
		return rc;
	rc = dst ? may_delete(cred, ddir, dst) : obj_access(cred, ddir, W_OK | X_OK);
	if (rc)
		return rc;
	if (dst && !exchange && S_ISDIR(src->mode) && !S_ISDIR(dst->mode))
		return -ENOTDIR;
	if (dst && !exchange && !S_ISDIR(src->mode) && S_ISDIR(dst->mode))
		return -EISDIR;
	/* A directory that changes parent has its ".." rewritten: it must be writable. */
	if (sdir != ddir && S_ISDIR(src->mode) && (rc = obj_access(cred, src, W_OK)))
		return rc;
	if (sdir != ddir && exchange && S_ISDIR(dst->mode) && (rc = obj_access(cred, dst, W_OK)))
		return rc;
	if (dst && !exchange && S_ISDIR(dst->mode) && g_hash_table_size(dst->children))
		return -ENOTEMPTY;
	return 0;
}

/* A directory `o` now named in `to` instead of `from`: links of the parents follow. */
static void reparent(struct mem_obj *o, struct mem_obj *from, struct mem_obj *to)
{
	if (!S_ISDIR(o->mode) || from == to)
		return;
	from->nlink--;
	to->nlink++;
	o->parent = to;
}

static void rename_exchange(struct mem_obj *sdir, const char *name, struct mem_obj *src,
			    struct mem_obj *ddir, const char *newname, struct mem_obj *dst)
{
	g_hash_table_insert(sdir->children, g_strdup(name), dst);
	g_hash_table_insert(ddir->children, g_strdup(newname), src);
	reparent(src, sdir, ddir);
	reparent(dst, ddir, sdir);
}

static int mem_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      ff_node *newparent, const char *newname, unsigned int flags)
{
	struct mem_obj *sdir = obj_of(parent), *ddir = obj_of(newparent), *src = NULL, *dst = NULL;
	struct timespec now;
	int rc;

	if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    (flags == (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		return -EINVAL;
	if (sdir->tree != ddir->tree)
		return -EXDEV;
	g_mutex_lock(&sdir->tree->lock);
	rc = dir_search(cred, sdir, name);
	if (rc == 0)
		rc = dir_search(cred, ddir, newname);
	if (rc == 0) {
		src = child_of(sdir, name);
		dst = child_of(ddir, newname);
		rc = src ? rename_check(cred, sdir, src, ddir, dst, flags) : -ENOENT;
	}
	if (rc == 0) {
		now = now_ts();
		if (flags & RENAME_EXCHANGE) {
			rename_exchange(sdir, name, src, ddir, newname, dst);
			dst->ctime = now;
		} else {
			if (dst)
				dir_remove(ddir, newname, dst, now);
			g_hash_table_remove(sdir->children, name);
			g_hash_table_insert(ddir->children, g_strdup(newname), src);
			reparent(src, sdir, ddir);
		}
		src->ctime = now;
		dir_changed(sdir, now);
		dir_changed(ddir, now);
		if (dst && !(flags & RENAME_EXCHANGE))
			obj_release(dst);
	}
	g_mutex_unlock(&sdir->tree->lock);
	return rc < 0 ? rc : 0;
}

/* ---- files ------------------------------------------------------------------------------ */

static struct mem_fh *fh_new(struct mem_obj *o, int flags)
{
	struct mem_fh *f = g_new(struct mem_fh, 1);

	o->refs++;
	f->obj = o;
	f->flags = flags;
	return f;
}

/* Open the existing `o` for `cred`, with the tree locked. */
static int open_locked(const struct ff_cred *cred, struct mem_obj *o, int flags, ff_fh **fh)
{
	int acc = flags & O_ACCMODE, mask, rc;

	if (S_ISDIR(o->mode))
		return -EISDIR;
	if (S_ISLNK(o->mode))
		return -ELOOP;
	if (!S_ISREG(o->mode))
		return -ENXIO; /* special files never reach a FUSE filesystem's open */
	mask = acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK;
	if (flags & O_TRUNC)
		mask |= W_OK; /* and Linux truncates even for O_RDONLY */
	rc = obj_access(cred, o, mask);
	if (rc)
		return rc;
	if (flags & O_TRUNC) {
		rc = data_resize(o, 0);
		if (rc)
			return rc;
		data_changed(cred, o);
	}
	*fh = (ff_fh *)fh_new(o, flags);
	return 0;
}

static int mem_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh)
{
	struct mem_obj *o = obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = open_locked(cred, o, flags, fh);
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

static int mem_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
		      mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh)
{
	struct mem_obj *dir = obj_of(parent), *o;
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = dir_search(cred, dir, name);
	o = rc ? NULL : child_of(dir, name);
	if (o) {
		/* There already (made by someone else since the kernel looked): open(2) opens it */
		rc = (flags & O_EXCL) ? -EEXIST : open_locked(cred, o, flags, fh);
	} else if (rc == 0) {
		rc = may_create(cred, dir, name);
		if (rc == 0) {
			/* its creator may open it whatever its mode says */
			o = make(cred, dir, name, S_IFREG | (mode & 07777));
			*fh = (ff_fh *)fh_new(o, flags);
		}
	}
	if (rc == 0)
		give_node(o, node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static ssize_t mem_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	struct mem_obj *o = f->obj;
	ssize_t n = 0;

	if ((f->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	g_mutex_lock(&o->tree->lock);
	if ((guint64)off < o->size) {
		n = MIN(size, o->size - (size_t)off);
		memcpy(buf, o->data + off, n);
	}
	g_mutex_unlock(&o->tree->lock);
	return n;
}

/* Write `size` bytes at `off` (or at the end) of `o`, with the tree locked. */
static ssize_t write_locked(const struct ff_cred *cred, struct mem_obj *o, const void *buf,
			    size_t size, off_t off, bool append)
{
	guint64 end;
	int rc;

	if (append)
		off = o->size;
	if (off < 0)
		return -EINVAL;
	if (size == 0)
		return 0;
	end = (guint64)off + size;
	if (end > o->size) {
		rc = data_resize(o, end);
		if (rc)
			return rc;
	}
	memcpy(o->data + off, buf, size);
	data_changed(cred, o);
	return size;
}

static ssize_t mem_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf,
			 size_t size, off_t off)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	ssize_t n;

	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	g_mutex_lock(&f->obj->tree->lock);
	n = write_locked(cred, f->obj, buf, size, off, f->flags & O_APPEND);
	g_mutex_unlock(&f->obj->tree->lock);
	return n;
}

/* Memory has nothing to flush or sync. */
static int mem_flush(void *loc, ff_fh *fh)
{
	return 0;
}

static int mem_fsync(void *loc, ff_fh *fh, int datasync)
{
	return 0;
}

static int mem_release(void *loc, ff_fh *fh)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	struct mem_tree *t = f->obj->tree;

	g_mutex_lock(&t->lock);
	obj_unref(f->obj);
	g_mutex_unlock(&t->lock);
	g_free(f);
	return 0;
}

static int fallocate_locked(const struct ff_cred *cred, struct mem_obj *o, int mode, off_t off,
			    off_t len)
{
	guint64 end = (guint64)off + len;
	int rc = 0;

	if (end > MEM_CAPACITY)
		return -EFBIG;
	if (mode == 0 && end > o->size)
		rc = data_resize(o, end);
	else if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) && (guint64)off < o->size)
		memset(o->data + off, 0, MIN(end, o->size) - off);
	/* FALLOC_FL_KEEP_SIZE alone: memory is allocated as it is written */
	if (rc == 0)
		data_changed(cred, o); /* ext4 calls file_modified() for every mode */
	return rc;
}

static int mem_fallocate(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off,
			 off_t len)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	int rc;

	/* in vfs_fallocate()'s order */
	if (off < 0 || len <= 0)
		return -EINVAL;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE &&
	    mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	g_mutex_lock(&f->obj->tree->lock);
	rc = fallocate_locked(cred, f->obj, mode, off, len);
	g_mutex_unlock(&f->obj->tree->lock);
	return rc;
}

/* Files have no holes here: all data up to the size, one hole at the end. SEEK_CUR is the
 * core's, which knows the position. */
static off_t mem_lseek(void *loc, ff_fh *fh, off_t off, int whence)
{
	struct mem_obj *o = ((struct mem_fh *)fh)->obj;
	off_t size, res;

	g_mutex_lock(&o->tree->lock);
	size = o->size;
	g_mutex_unlock(&o->tree->lock);

	switch (whence) {
	case SEEK_DATA:
	case SEEK_HOLE:
		if (off < 0 || off >= size)
			return -ENXIO;
		return whence == SEEK_DATA ? off : size;
	case SEEK_SET:
		res = off;
		break;
	case SEEK_END:
		if (__builtin_add_overflow(size, off, &res))
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return res < 0 ? -EINVAL : res;
}

/* Copy `n` bytes of `src` at `off_in` to `dst` at `off_out`, with the tree locked. Growing a file
 * moves its data: within one file, copy from a duplicate. */
static ssize_t copy_locked(const struct ff_cred *cred, struct mem_obj *src, off_t off_in,
			   struct mem_obj *dst, off_t off_out, size_t n)
{
	char *dup = src == dst ? g_memdup2(src->data + off_in, n) : NULL;
	ssize_t rc = write_locked(cred, dst, dup ? dup : src->data + off_in, n, off_out, false);

	g_free(dup);
	return rc;
}

static ssize_t mem_copy_file_range(void *loc, const struct ff_cred *cred, ff_fh *fh_in,
				   off_t off_in, ff_fh *fh_out, off_t off_out, size_t len,
				   int flags)
{
	struct mem_fh *in = (struct mem_fh *)fh_in, *out = (struct mem_fh *)fh_out;
	struct mem_obj *src = in->obj, *dst = out->obj;
	ssize_t n = 0;

	if (flags)
		return -EINVAL;
	if ((in->flags & O_ACCMODE) == O_WRONLY || (out->flags & O_ACCMODE) == O_RDONLY ||
	    (out->flags & O_APPEND))
		return -EBADF;
	if (off_in < 0 || off_out < 0)
		return -EINVAL;
	if (src->tree != dst->tree)
		return -EXDEV; /* the kernel copies through read and write */
	g_mutex_lock(&src->tree->lock);
	if ((guint64)off_in < src->size)
		n = MIN(len, src->size - (size_t)off_in);
	if (src == dst && n && (guint64)off_in < (guint64)off_out + n &&
	    (guint64)off_out < (guint64)off_in + n)
		n = -EINVAL; /* overlapping ranges of one file */
	else if (n)
		n = copy_locked(cred, src, off_in, dst, off_out, n);
	g_mutex_unlock(&src->tree->lock);
	return n;
}

/* ---- directories ------------------------------------------------------------------------ */

static void dirent_clear(gpointer p)
{
	g_free(((struct mem_dirent *)p)->name);
}

static gint dirent_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(((const struct mem_dirent *)a)->name, ((const struct mem_dirent *)b)->name);
}

/* The entries of `dir` now, sorted by name, with the tree locked. */
static GArray *snapshot_locked(const struct mem_obj *dir)
{
	GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(struct mem_dirent),
				      g_hash_table_size(dir->children));
	GHashTableIter it;
	gpointer name, value;

	g_array_set_clear_func(a, dirent_clear);
	g_hash_table_iter_init(&it, dir->children);
	while (g_hash_table_iter_next(&it, &name, &value)) {
		const struct mem_obj *o = value;
		struct mem_dirent e = { g_strdup(name), o->ino, o->mode & S_IFMT };

		g_array_append_val(a, e);
	}
	g_array_sort(a, dirent_cmp);
	return a;
}

static int mem_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh)
{
	struct mem_obj *o = obj_of(node);
	struct mem_dir *d;
	int rc = 0;

	g_mutex_lock(&o->tree->lock);
	if (!S_ISDIR(o->mode))
		rc = -ENOTDIR;
	else
		rc = obj_access(cred, o, R_OK); /* listing an r-- directory works natively */
	if (rc == 0) {
		d = g_new0(struct mem_dir, 1);
		g_mutex_init(&d->lock);
		o->refs++;
		d->dir = o;
		d->entries = snapshot_locked(o);
		d->fresh = true;
		*dh = (ff_dh *)d;
	}
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

/* Plus mode: the entry's object now, referenced, with its attributes in *st; NULL and *st
 * untouched when the name cannot be looked up (no search permission), or *gone when the name
 * has gone since the snapshot. */
static struct mem_obj *entry_node(const struct ff_cred *cred, struct mem_obj *dir,
				  const struct mem_dirent *e, struct stat *st, bool *gone)
{
	struct mem_tree *t = dir->tree;
	struct mem_obj *o = NULL;
	ff_node *node;

	g_mutex_lock(&t->lock);
	if (obj_access(cred, dir, X_OK) == 0) {
		o = child_of(dir, e->name);
		*gone = !o;
		if (o)
			give_node(o, &node, st);
	}
	g_mutex_unlock(&t->lock);
	return o;
}

static int mem_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		       bool plus, ff_fill_fn fill, void *buf)
{
	struct mem_dir *d = (struct mem_dir *)dh;
	int rc = 0;

	if (off < 0)
		return -EINVAL;
	g_mutex_lock(&d->lock);
	if (off == 0 && !d->fresh) {
		/* A rewind sees the directory as it is now, as rewinddir(3) does. */
		g_mutex_lock(&d->dir->tree->lock);
		g_array_unref(d->entries);
		d->entries = snapshot_locked(d->dir);
		g_mutex_unlock(&d->dir->tree->lock);
	}
	d->fresh = false;

	for (gsize i = off; i < d->entries->len; i++) {
		const struct mem_dirent *e = &g_array_index(d->entries, struct mem_dirent, i);
		struct mem_obj *o = NULL;
		bool gone = false;
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = e->ino;
		st.st_mode = e->type;
		if (plus)
			o = entry_node(cred, d->dir, e, &st, &gone);
		if (gone)
			continue; /* a node for a name no longer there would be a lie */
		rc = fill(buf, e->name, &st, (off_t)i + 1, (ff_node *)o, false); /* takes o */
		if (rc == FF_FILL_FULL) {
			rc = 0; /* the next listing starts with this entry again */
			break;
		}
		if (rc < 0)
			break;
		rc = 0;
	}
	g_mutex_unlock(&d->lock);
	return rc;
}

static int mem_releasedir(void *loc, ff_dh *dh)
{
	struct mem_dir *d = (struct mem_dir *)dh;
	struct mem_tree *t = d->dir->tree;

	g_mutex_lock(&t->lock);
	obj_unref(d->dir);
	g_mutex_unlock(&t->lock);
	g_array_unref(d->entries);
	g_mutex_clear(&d->lock);
	g_free(d);
	return 0;
}

static int mem_fsyncdir(void *loc, ff_dh *dh, int datasync)
{
	return 0;
}

/* ---- whole location --------------------------------------------------------------------- */

static int mem_statfs(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	struct mem_tree *t = ((struct mem_loc *)loc)->tree;
	guint64 used;

	memset(st, 0, sizeof(*st));
	g_mutex_lock(&t->lock);
	used = (t->bytes + MEM_BLOCK - 1) / MEM_BLOCK;
	st->f_files = MEM_FILES;
	st->f_ffree = st->f_favail = MEM_FILES - MIN(t->objects, MEM_FILES);
	g_mutex_unlock(&t->lock);
	st->f_bsize = st->f_frsize = MEM_BLOCK;
	st->f_blocks = MEM_BLOCKS;
	st->f_bfree = st->f_bavail = MEM_BLOCKS - MIN(used, MEM_BLOCKS);
	st->f_fsid = t->dev;
	st->f_namemax = MEM_NAME_MAX;
	return 0;
}

/* ---- extended attributes ---------------------------------------------------------------- */

enum xattr_ns { XATTR_NS_USER, XATTR_NS_TRUSTED, XATTR_NS_SECURITY };

/* The namespace of an attribute's name, or -EOPNOTSUPP (unknown) or -EINVAL (a prefix alone). */
static int xattr_ns(const char *name)
{
	static const char *const prefixes[] = {
		[XATTR_NS_USER] = "user.",
		[XATTR_NS_TRUSTED] = "trusted.",
		[XATTR_NS_SECURITY] = "security.",
	};

	for (int ns = 0; ns < (int)G_N_ELEMENTS(prefixes); ns++)
		if (g_str_has_prefix(name, prefixes[ns]))
			return name[strlen(prefixes[ns])] ? ns : -EINVAL;
	return -EOPNOTSUPP;
}

/* May `cred` read (or write) the attribute `name` of `o`? As xattr_permission() and the
 * capability checks of Linux answer (header comment). */
static int xattr_may(const struct ff_cred *cred, const struct mem_obj *o, const char *name,
		     bool write)
{
	int ns = xattr_ns(name);

	switch (ns) {
	case XATTR_NS_USER:
		if (!S_ISREG(o->mode) && !S_ISDIR(o->mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(o->mode) && (o->mode & S_ISVTX) && !is_owner(cred, o))
			return -EPERM;
		return obj_access(cred, o, write ? W_OK : R_OK);
	case XATTR_NS_TRUSTED:
		if (is_root(cred))
			return 0;
		return write ? -EPERM : -ENODATA;
	case XATTR_NS_SECURITY:
		return write && !is_root(cred) ? -EPERM : 0;
	default:
		return ns;
	}
}

static int mem_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			const void *value, size_t size, int flags)
{
	struct mem_obj *o = obj_of(node);
	bool exists;
	int rc;

	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	g_mutex_lock(&o->tree->lock);
	rc = xattr_may(cred, o, name, true);
	exists = o->xattrs && g_hash_table_contains(o->xattrs, name);
	if (rc == 0 && (flags & XATTR_CREATE) && exists)
		rc = -EEXIST;
	if (rc == 0 && (flags & XATTR_REPLACE) && !exists)
		rc = -ENODATA;
	if (rc == 0) {
		if (!o->xattrs)
			o->xattrs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							  (GDestroyNotify)g_bytes_unref);
		g_hash_table_insert(o->xattrs, g_strdup(name), g_bytes_new(value, size));
		o->ctime = now_ts();
	}
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

/* `len` bytes at `data` into `buf` of `size` (0: only the length). */
static ssize_t give_value(const void *data, size_t len, void *buf, size_t size)
{
	if (size == 0)
		return len;
	if (len > size)
		return -ERANGE;
	if (len)
		memcpy(buf, data, len); /* an empty value's data may be NULL */
	return len;
}

static ssize_t mem_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
			    void *buf, size_t size)
{
	struct mem_obj *o = obj_of(node);
	GBytes *value = NULL;
	const void *data;
	ssize_t rc;
	gsize len;

	g_mutex_lock(&o->tree->lock);
	rc = xattr_may(cred, o, name, false);
	if (rc == 0 && o->xattrs)
		value = g_hash_table_lookup(o->xattrs, name);
	if (rc == 0 && !value)
		rc = -ENODATA;
	if (rc == 0) {
		data = g_bytes_get_data(value, &len);
		rc = give_value(data, len, buf, size);
	}
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

/* Names in byte order, so that every listing of an unchanged object is the same. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static ssize_t mem_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			     size_t size)
{
	struct mem_obj *o = obj_of(node);
	GString *list = g_string_new(NULL);
	ssize_t rc = 0;

	g_mutex_lock(&o->tree->lock);
	if (o->xattrs) {
		guint n;
		gpointer *names = g_hash_table_get_keys_as_array(o->xattrs, &n);

		qsort(names, n, sizeof(*names), name_cmp);
		for (guint i = 0; i < n; i++) {
			const char *name = names[i];

			/* only root sees trusted.* listed, as on ext4 */
			if (!g_str_has_prefix(name, "trusted.") || is_root(cred))
				g_string_append_len(list, name, strlen(name) + 1);
		}
		g_free(names); /* the keys are the table's */
	}
	g_mutex_unlock(&o->tree->lock);
	rc = give_value(list->str, list->len, buf, size);
	g_string_free(list, TRUE);
	return rc;
}

static int mem_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name)
{
	struct mem_obj *o = obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = xattr_may(cred, o, name, true);
	if (rc == 0 && !(o->xattrs && g_hash_table_remove(o->xattrs, name)))
		rc = -ENODATA;
	if (rc == 0)
		o->ctime = now_ts();
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

/* ---- the module's one symbol ------------------------------------------------------------ */

static const struct ff_backend_ops mem_ops = {
	.check = mem_check,
	.mount = mem_mount,
	.unmount = mem_unmount,

	.root = mem_root,
	.lookup = mem_lookup,
	.forget = mem_forget,
	.getattr = mem_getattr,
	.setattr = mem_setattr,
	.readlink = mem_readlink,
	.mknod = mem_mknod,
	.mkdir = mem_mkdir,
	.symlink = mem_symlink,
	.link = mem_link,
	.unlink = mem_unlink,
	.rmdir = mem_rmdir,
	.rename = mem_rename,

	.open = mem_open,
	.create = mem_create,
	.read = mem_read,
	.write = mem_write,
	.flush = mem_flush,
	.fsync = mem_fsync,
	.release = mem_release,
	.fallocate = mem_fallocate,
	.lseek = mem_lseek,
	.copy_file_range = mem_copy_file_range,

	.opendir = mem_opendir,
	.readdir = mem_readdir,
	.releasedir = mem_releasedir,
	.fsyncdir = mem_fsyncdir,

	.statfs = mem_statfs,

	.setxattr = mem_setxattr,
	.getxattr = mem_getxattr,
	.listxattr = mem_listxattr,
	.removexattr = mem_removexattr,
};

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "mem",
	.description = "trees in memory, for tests",
	.caps = FF_CAP_POSIX_OWNERS,
	.ops = &mem_ops,
};
