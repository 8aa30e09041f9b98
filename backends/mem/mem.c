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
 *
 * This file holds the objects and their permissions, directories' entries, the locations (check,
 * mount, unmount), the operations on nodes and the ops table; mem_data.c holds the open files
 * and directories, statfs and extended attributes, and mem.h what the two share (and the
 * locking).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/mem/mem.h"

static GMutex registry_lock;
static GHashTable *registry; /* tree name -> struct mem_tree, never freed */
static dev_t registry_next_dev = 1;

/* ---- objects ---------------------------------------------------------------------------- */

struct mem_obj *mem_obj_of(ff_node *node)
{
	return (struct mem_obj *)node;
}

struct timespec mem_now_ts(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/* No credentials: the daemon itself, acting for no one. */
bool mem_is_root(const struct ff_cred *cred)
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

bool mem_is_owner(const struct ff_cred *cred, const struct mem_obj *o)
{
	return mem_is_root(cred) || cred->uid == o->uid;
}

/* The permission bits' answer for `mask` (R_OK, W_OK, X_OK). Root reads and writes anything,
 * searches any directory, and executes a file that someone may execute. */
int mem_obj_access(const struct ff_cred *cred, const struct mem_obj *o, int mask)
{
	mode_t bits;

	if (mem_is_root(cred)) {
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
		else if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
			 !mem_is_root(cred) && !in_group(cred, dir->gid))
			mode &= ~S_ISGID;
	}
	o->mode = mode;
	o->nlink = S_ISDIR(mode) ? 2 : 1;
	o->atime = o->mtime = o->ctime = mem_now_ts();
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
void mem_obj_release(struct mem_obj *o)
{
	if (o->nlink == 0 && o->refs == 0)
		obj_free(o);
}

void mem_obj_unref(struct mem_obj *o)
{
	o->refs--;
	mem_obj_release(o);
}

void mem_obj_stat(const struct mem_obj *o, struct stat *st)
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
void mem_give_node(struct mem_obj *o, ff_node **node, struct stat *st)
{
	o->refs++;
	*node = (ff_node *)o;
	mem_obj_stat(o, st);
}

/* Resize a regular file's data, zero-filling what grows. The buffer doubles as it grows (up to
 * 16 MiB at a time) and shrinks when three quarters of it are unused. */
int mem_data_resize(struct mem_obj *o, guint64 size)
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
	if (mem_is_root(cred) || !S_ISREG(o->mode))
		return;
	o->mode &= ~S_ISUID;
	if ((o->mode & S_IXGRP) || !in_group(cred, o->gid))
		o->mode &= ~S_ISGID;
}

/* The data of `o` changed: times and setid bits as a write changes them. */
void mem_data_changed(const struct ff_cred *cred, struct mem_obj *o)
{
	kill_setid(cred, o);
	o->mtime = o->ctime = mem_now_ts();
}

/* ---- directories' entries ------------------------------------------------------------------ */

struct mem_obj *mem_child_of(const struct mem_obj *dir, const char *name)
{
	return g_hash_table_lookup(dir->children, name);
}

void mem_dir_changed(struct mem_obj *dir, struct timespec now)
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
	mem_dir_changed(dir, now);
}

/* Take `name` (naming `o`) out of `dir`; `o` loses that name, but is not freed here. */
void mem_dir_remove(struct mem_obj *dir, const char *name, struct mem_obj *o, struct timespec now)
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
	mem_dir_changed(dir, now);
}

/* May `cred` look `name` up in `dir`? In the order a lookup fails on Linux. */
int mem_dir_search(const struct ff_cred *cred, const struct mem_obj *dir, const char *name)
{
	int rc;

	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	rc = mem_obj_access(cred, dir, X_OK);
	if (rc)
		return rc;
	if (dir->nlink == 0)
		return -ENOENT; /* removed: nothing is found or made in it any more */
	if (strlen(name) > MEM_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* May `cred` make `name` in `dir`? */
int mem_may_create(const struct ff_cred *cred, const struct mem_obj *dir, const char *name)
{
	int rc = mem_dir_search(cred, dir, name);

	if (rc)
		return rc;
	if (mem_child_of(dir, name))
		return -EEXIST;
	rc = mem_obj_access(cred, dir, W_OK | X_OK);
	if (rc)
		return rc;
	return dir->tree->objects >= MEM_FILES ? -ENOSPC : 0;
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
		child = mem_child_of(d, *p);
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

/* The file of ?faults=FILE (mem_fault.c), the one option: an absolute path, %-encoded as a
 * query needs; NULL when the query is anything else. g_free it. */
static char *faults_file(const struct ff_location_spec *spec)
{
	char *file;

	if (!spec->query || !g_str_has_prefix(spec->query, "faults="))
		return NULL;
	file = g_uri_unescape_string(spec->query + strlen("faults="), NULL);
	if (file && (file[0] != '/' || strchr(file, '&'))) {
		g_free(file);
		file = NULL;
	}
	return file;
}

static int mem_check(const struct ff_location_spec *spec, char **msg)
{
	g_autofree char *faults = faults_file(spec);

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
	if (spec->query && !faults) {
		*msg = g_strdup_printf("mem:// location %s has a query (?%s); it takes one option, "
				       "faults=ABSOLUTE_PATH",
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
	struct mem_faults *faults = NULL;
	char *why = NULL, *file;
	struct mem_tree *t;
	struct mem_obj *root;
	struct mem_loc *l;
	int rc;

	rc = mem_check(spec, &why);
	if (rc)
		goto out_msg;
	file = faults_file(spec);
	if (file) {
		faults = mem_faults_new(file, spec->timeout);
		g_free(file);
		rc = mem_fault(faults, "mount");
		if (rc) {
			why = g_strdup_printf("mem:// location %s: mount fails: %s (injected)",
					      spec->uri, g_strerror(-rc));
			mem_faults_free(faults);
			goto out_msg;
		}
	}
	t = tree_get(spec->host);
	g_mutex_lock(&t->lock);
	rc = make_path(t, spec->path, &root);
	if (rc == 0)
		root->refs++;
	g_mutex_unlock(&t->lock);
	if (rc) {
		why = g_strdup_printf("mem:// location %s: cannot make %s: %s", spec->uri,
				      spec->path, g_strerror(-rc));
		mem_faults_free(faults);
		goto out_msg;
	}

	l = g_new0(struct mem_loc, 1);
	l->tree = t;
	l->root = root;
	l->faults = faults;
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
	mem_obj_unref(l->root);
	g_mutex_unlock(&l->tree->lock);
	mem_faults_free(l->faults);
	g_free(l);
}

/* ---- nodes ------------------------------------------------------------------------------ */

static int mem_root(void *loc, const struct ff_cred *cred, ff_node **node, struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "root");

	if (fault)
		return fault;

	struct mem_loc *l = loc;

	g_mutex_lock(&l->tree->lock);
	mem_give_node(l->root, node, st);
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
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "lookup");

	if (fault)
		return fault;

	struct mem_obj *dir = mem_obj_of(parent), *o = NULL;
	int rc;

	/* The core never passes these; refusing them keeps the location's root its root. */
	if (is_dot_or_dotdot(name) || strchr(name, '/'))
		return -EINVAL;
	g_mutex_lock(&dir->tree->lock);
	rc = mem_dir_search(cred, dir, name);
	if (rc == 0) {
		o = mem_child_of(dir, name);
		rc = o ? 0 : -ENOENT;
	}
	if (rc == 0)
		mem_give_node(o, node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

static void mem_forget(void *loc, ff_node *node)
{
	struct mem_obj *o = mem_obj_of(node);
	struct mem_tree *t = o->tree;

	g_mutex_lock(&t->lock);
	mem_obj_unref(o);
	g_mutex_unlock(&t->lock);
}

static int mem_getattr(void *loc, const struct ff_cred *cred, ff_node *node, ff_fh *fh,
		       struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "getattr");

	if (fault)
		return fault;

	struct mem_obj *o = fh ? ((struct mem_fh *)fh)->obj : mem_obj_of(node);

	g_mutex_lock(&o->tree->lock);
	mem_obj_stat(o, st);
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
		rc = f ? 0 : mem_obj_access(cred, o, W_OK);
		if (rc)
			return rc;
	}
	if ((to_set & FF_SET_UID) && !mem_is_root(cred) &&
	    (cred->uid != o->uid || attr->st_uid != o->uid))
		return -EPERM;
	if ((to_set & FF_SET_GID) && !mem_is_root(cred) &&
	    (cred->uid != o->uid || (attr->st_gid != o->gid && !in_group(cred, attr->st_gid))))
		return -EPERM;
	if (to_set & FF_SET_MODE) {
		if (S_ISLNK(o->mode))
			return -EOPNOTSUPP; /* as fchmodat(AT_SYMLINK_NOFOLLOW), and local.c */
		if (!mem_is_owner(cred, o))
			return -EPERM;
	}
	if ((to_set & set_times) && !mem_is_owner(cred, o))
		return -EPERM;
	if ((to_set & now_times) && !mem_is_owner(cred, o))
		return mem_obj_access(cred, o, W_OK);
	return 0;
}

/* setattr's changes, checked: the size first, the one that can fail. */
static int setattr_apply(const struct ff_cred *cred, struct mem_obj *o, const struct stat *attr,
			 unsigned int to_set)
{
	struct timespec now = mem_now_ts();
	int rc;

	if (to_set & FF_SET_SIZE) {
		rc = mem_data_resize(o, attr->st_size);
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
		if (!mem_is_root(cred) && !in_group(cred, o->gid))
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
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "setattr");

	if (fault)
		return fault;

	struct mem_fh *f = (struct mem_fh *)fh;
	struct mem_obj *o = f ? f->obj : mem_obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = setattr_check(cred, o, f, attr, to_set);
	if (rc == 0)
		rc = setattr_apply(cred, o, attr, to_set);
	if (rc == 0)
		mem_obj_stat(o, st);
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

static ssize_t mem_readlink(void *loc, const struct ff_cred *cred, ff_node *node, char *buf,
			    size_t size)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "readlink");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
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

/* The end of every create-style op, checked by mem_may_create(): the object named in `dir`. */
struct mem_obj *mem_make(const struct ff_cred *cred, struct mem_obj *dir, const char *name,
			 mode_t mode)
{
	struct mem_obj *o = obj_new(dir->tree, cred, dir, mode);

	dir_add(dir, name, o, o->ctime);
	return o;
}

/* ---- the module's one symbol ------------------------------------------------------------ */

const struct ff_host *mem_host;

static void mem_attach(const struct ff_host *host)
{
	mem_host = host;
}

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

	.attach = mem_attach,
};

__attribute__((visibility("default"))) const struct ff_backend fedfuse_backend = {
	.abi_major = FF_BACKEND_ABI_MAJOR,
	.abi_minor = FF_BACKEND_ABI_MINOR,
	.scheme = "mem",
	.description = "trees in memory, for tests",
	.caps = FF_CAP_POSIX_OWNERS,
	.ops = &mem_ops,
};
