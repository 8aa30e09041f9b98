/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem.h - internals shared by the files of the mem:// reference backend (mem.c says what it is):
 * its trees, objects, locations and handles, its limits, the locking, the helpers of mem.c that
 * mem_data.c uses, and the operations of mem_data.c that mem.c's ops table names. Private to the
 * module, like everything but fedfuse_backend.
 */
#ifndef FEDFUSE_MEM_H
#define FEDFUSE_MEM_H

#include <glib.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

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
	struct mem_faults *faults; /* ?faults=FILE (mem_fault.c), or NULL */
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

/* ---- mem_fault.c ----------------------------------------------------------------------------- */

struct mem_faults;
/* The core's services (attach()), or NULL. */
extern const struct ff_host *mem_host;
/* The faults FILE asks for, on a location whose operations may take `timeout` seconds. */
struct mem_faults *mem_faults_new(const char *file, double timeout);
void mem_faults_free(struct mem_faults *f);
/* Before operation `op`: 0, or -errno to answer instead (after any delay FILE asks for). */
int mem_fault(struct mem_faults *f, const char *op);

/* ---- mem.c ----------------------------------------------------------------------------------- */

/* The object a node is. */
struct mem_obj *mem_obj_of(ff_node *node);
/* The time now, for the objects' times. */
struct timespec mem_now_ts(void);
/* Is `cred` root, or no one (the daemon itself)? */
bool mem_is_root(const struct ff_cred *cred);
/* Does `cred` own `o`, or is it root? */
bool mem_is_owner(const struct ff_cred *cred, const struct mem_obj *o);
/* The permission bits' answer for `mask` (R_OK, W_OK, X_OK): 0 or -EACCES. */
int mem_obj_access(const struct ff_cred *cred, const struct mem_obj *o, int mask);
/* Drop a reference; the object goes with its last name and its last reference. */
void mem_obj_unref(struct mem_obj *o);
/* A new node reference for `o`, and its attributes. */
void mem_give_node(struct mem_obj *o, ff_node **node, struct stat *st);
/* Resize a regular file's data, zero-filling what grows: -EFBIG, -ENOSPC, -ENOMEM or 0. */
int mem_data_resize(struct mem_obj *o, guint64 size);
/* The data of `o` changed: times and setid bits as a write by `cred` changes them. */
void mem_data_changed(const struct ff_cred *cred, struct mem_obj *o);
/* What `name` names in the directory `dir`, or NULL. */
struct mem_obj *mem_child_of(const struct mem_obj *dir, const char *name);
/* May `cred` look `name` up in `dir`? */
int mem_dir_search(const struct ff_cred *cred, const struct mem_obj *dir, const char *name);
/* May `cred` make `name` in `dir`? */
int mem_may_create(const struct ff_cred *cred, const struct mem_obj *dir, const char *name);
/* A new object named `name` in `dir`, checked by mem_may_create(). */
struct mem_obj *mem_make(const struct ff_cred *cred, struct mem_obj *dir, const char *name,
			 mode_t mode);
/* Free `o` if it has neither a name nor a reference left. */
void mem_obj_release(struct mem_obj *o);
/* The attributes of `o`. */
void mem_obj_stat(const struct mem_obj *o, struct stat *st);
/* `dir`'s entries changed at `now`: its times. */
void mem_dir_changed(struct mem_obj *dir, struct timespec now);
/* Take `name` (naming `o`) out of `dir`. */
void mem_dir_remove(struct mem_obj *dir, const char *name, struct mem_obj *o, struct timespec now);

/* ---- mem_names.c ----------------------------------------------------------------------------- */

int mem_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      dev_t rdev, ff_node **node, struct stat *st);
int mem_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      ff_node **node, struct stat *st);
int mem_symlink(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
		const char *name, ff_node **node, struct stat *st);
int mem_link(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
	     const char *newname, struct stat *st);
int mem_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
int mem_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name);
int mem_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node *newparent, const char *newname, unsigned int flags);

/* ---- mem_data.c ------------------------------------------------------------------------------ */

/* Files. */
int mem_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh);
int mem_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh);
ssize_t mem_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off);
ssize_t mem_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf, size_t size,
		  off_t off);
int mem_flush(void *loc, ff_fh *fh);
int mem_fsync(void *loc, ff_fh *fh, int datasync);
int mem_release(void *loc, ff_fh *fh);
int mem_fallocate(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off, off_t len);
off_t mem_lseek(void *loc, ff_fh *fh, off_t off, int whence);
ssize_t mem_copy_file_range(void *loc, const struct ff_cred *cred, ff_fh *fh_in, off_t off_in,
			    ff_fh *fh_out, off_t off_out, size_t len, int flags);

/* Directories. */
int mem_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh);
int mem_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		bool plus, ff_fill_fn fill, void *buf);
int mem_releasedir(void *loc, ff_dh *dh);
int mem_fsyncdir(void *loc, ff_dh *dh, int datasync);

/* The whole location. */
int mem_statfs(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st);

/* Extended attributes. */
int mem_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		 const void *value, size_t size, int flags);
ssize_t mem_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		     void *buf, size_t size);
ssize_t mem_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf, size_t size);
int mem_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name);

#endif /* FEDFUSE_MEM_H */
