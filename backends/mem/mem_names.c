/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem_names.c - the mem:// reference backend's changes of names: mknod, mkdir, symlink, link,
 * unlink, rmdir and rename (with RENAME_NOREPLACE and RENAME_EXCHANGE), each with the checks a
 * local file system makes, on the objects of mem.c (mem.h: the locking).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backends/mem/mem.h"

/* May `cred` take `victim`'s name out of `dir`? Write and search on `dir`, and in a sticky
 * directory, owning the victim or the directory. */
static int may_delete(const struct ff_cred *cred, const struct mem_obj *dir,
		      const struct mem_obj *victim)
{
	int rc = mem_obj_access(cred, dir, W_OK | X_OK);

	if (rc)
		return rc;
	if ((dir->mode & S_ISVTX) && !mem_is_root(cred) && cred->uid != victim->uid &&
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

int mem_mknod(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      dev_t rdev, ff_node **node, struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "mknod");

	if (fault)
		return fault;

	struct mem_obj *dir = mem_obj_of(parent), *o;
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
	rc = mem_may_create(cred, dir, name);
	if (rc == 0 && (S_ISCHR(mode) || S_ISBLK(mode)) && !mem_is_root(cred))
		rc = -EPERM; /* CAP_MKNOD */
	if (rc == 0) {
		o = mem_make(cred, dir, name, mode & (S_IFMT | 07777));
		if (S_ISCHR(mode) || S_ISBLK(mode))
			o->rdev = rdev;
		mem_give_node(o, node, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

int mem_mkdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name, mode_t mode,
	      ff_node **node, struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "mkdir");

	if (fault)
		return fault;

	struct mem_obj *dir = mem_obj_of(parent);
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = mem_may_create(cred, dir, name);
	/* mkdir(2) takes no setuid/setgid bits from the mode; setgid comes from the parent */
	if (rc == 0)
		mem_give_node(mem_make(cred, dir, name, S_IFDIR | (mode & 01777)), node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

int mem_symlink(void *loc, const struct ff_cred *cred, const char *target, ff_node *parent,
		const char *name, ff_node **node, struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "symlink");

	if (fault)
		return fault;

	struct mem_obj *dir = mem_obj_of(parent), *o;
	size_t len = strlen(target);
	int rc;

	if (len == 0)
		return -ENOENT;
	if (len > MEM_SYMLINK_MAX)
		return -ENAMETOOLONG;
	g_mutex_lock(&dir->tree->lock);
	rc = mem_may_create(cred, dir, name);
	if (rc == 0) {
		o = mem_make(cred, dir, name, S_IFLNK | 0777);
		o->target = g_strdup(target);
		mem_give_node(o, node, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

/* fs.protected_hardlinks = 1: may `cred` link `o`, which it may not own? */
static bool may_link_source(const struct ff_cred *cred, const struct mem_obj *o)
{
	if (mem_is_owner(cred, o))
		return true;
	if (!S_ISREG(o->mode) || (o->mode & S_ISUID) ||
	    (o->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return false;
	return mem_obj_access(cred, o, R_OK | W_OK) == 0;
}

int mem_link(void *loc, const struct ff_cred *cred, ff_node *node, ff_node *newparent,
	     const char *newname, struct stat *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "link");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node), *dir = mem_obj_of(newparent);
	int rc;

	if (o->tree != dir->tree)
		return -EXDEV;
	g_mutex_lock(&dir->tree->lock);
	rc = mem_dir_search(cred, dir, newname);
	if (rc == 0 && mem_child_of(dir, newname))
		rc = -EEXIST;
	if (rc == 0 && !may_link_source(cred, o))
		rc = -EPERM;
	if (rc == 0)
		rc = mem_obj_access(cred, dir, W_OK | X_OK);
	if (rc == 0 && S_ISDIR(o->mode))
		rc = -EPERM;
	if (rc == 0 && o->nlink == 0)
		rc = -ENOENT; /* unlinked: it cannot come back */
	if (rc == 0) {
		g_hash_table_insert(dir->children, g_strdup(newname), o);
		o->nlink++;
		o->ctime = mem_now_ts();
		mem_dir_changed(dir, o->ctime);
		mem_obj_stat(o, st);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

/* unlink and rmdir: the checks they share, in Linux's order; *victim is what `name` names. */
static int remove_check(const struct ff_cred *cred, struct mem_obj *dir, const char *name,
			bool want_dir, struct mem_obj **victim)
{
	struct mem_obj *o;
	int rc = mem_dir_search(cred, dir, name);

	if (rc)
		return rc;
	o = mem_child_of(dir, name);
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
	struct mem_obj *dir = mem_obj_of(parent), *o;
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = remove_check(cred, dir, name, want_dir, &o);
	if (rc == 0) {
		mem_dir_remove(dir, name, o, mem_now_ts());
		mem_obj_release(o);
	}
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

int mem_unlink(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "unlink");

	if (fault)
		return fault;

	return remove_name(cred, parent, name, false);
}

int mem_rmdir(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "rmdir");

	if (fault)
		return fault;

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
	rc = dst ? may_delete(cred, ddir, dst) : mem_obj_access(cred, ddir, W_OK | X_OK);
	if (rc)
		return rc;
	if (dst && !exchange && S_ISDIR(src->mode) && !S_ISDIR(dst->mode))
		return -ENOTDIR;
	if (dst && !exchange && !S_ISDIR(src->mode) && S_ISDIR(dst->mode))
		return -EISDIR;
	/* A directory that changes parent has its ".." rewritten: it must be writable. */
	if (sdir != ddir && S_ISDIR(src->mode) && (rc = mem_obj_access(cred, src, W_OK)))
		return rc;
	if (sdir != ddir && exchange && S_ISDIR(dst->mode) &&
	    (rc = mem_obj_access(cred, dst, W_OK)))
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

int mem_rename(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       ff_node *newparent, const char *newname, unsigned int flags)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "rename");

	if (fault)
		return fault;

	struct mem_obj *sdir = mem_obj_of(parent), *ddir = mem_obj_of(newparent), *src = NULL,
		       *dst = NULL;
	struct timespec now;
	int rc;

	if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    (flags == (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		return -EINVAL;
	if (sdir->tree != ddir->tree)
		return -EXDEV;
	g_mutex_lock(&sdir->tree->lock);
	rc = mem_dir_search(cred, sdir, name);
	if (rc == 0)
		rc = mem_dir_search(cred, ddir, newname);
	if (rc == 0) {
		src = mem_child_of(sdir, name);
		dst = mem_child_of(ddir, newname);
		rc = src ? rename_check(cred, sdir, src, ddir, dst, flags) : -ENOENT;
	}
	if (rc == 0) {
		now = mem_now_ts();
		if (flags & RENAME_EXCHANGE) {
			rename_exchange(sdir, name, src, ddir, newname, dst);
			dst->ctime = now;
		} else {
			if (dst)
				mem_dir_remove(ddir, newname, dst, now);
			g_hash_table_remove(sdir->children, name);
			g_hash_table_insert(ddir->children, g_strdup(newname), src);
			reparent(src, sdir, ddir);
		}
		src->ctime = now;
		mem_dir_changed(sdir, now);
		mem_dir_changed(ddir, now);
		if (dst && !(flags & RENAME_EXCHANGE))
			mem_obj_release(dst);
	}
	g_mutex_unlock(&sdir->tree->lock);
	return rc < 0 ? rc : 0;
}
