/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem_data.c - the mem:// reference backend's open files (open, create, read, write, fallocate,
 * lseek, copy_file_range...), open directories (opendir, readdir), statfs and extended
 * attributes, on the objects of mem.c (which says what the backend does; mem.h: the locking).
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/mem/mem.h"

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
	rc = mem_obj_access(cred, o, mask);
	if (rc)
		return rc;
	if (flags & O_TRUNC) {
		rc = mem_data_resize(o, 0);
		if (rc)
			return rc;
		mem_data_changed(cred, o);
	}
	*fh = (ff_fh *)fh_new(o, flags);
	return 0;
}

int mem_open(void *loc, const struct ff_cred *cred, ff_node *node, int flags, ff_fh **fh)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "open");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = open_locked(cred, o, flags, fh);
	g_mutex_unlock(&o->tree->lock);
	return rc;
}

int mem_create(void *loc, const struct ff_cred *cred, ff_node *parent, const char *name,
	       mode_t mode, int flags, ff_node **node, struct stat *st, ff_fh **fh)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "create");

	if (fault)
		return fault;

	struct mem_obj *dir = mem_obj_of(parent), *o;
	int rc;

	g_mutex_lock(&dir->tree->lock);
	rc = mem_dir_search(cred, dir, name);
	o = rc ? NULL : mem_child_of(dir, name);
	if (o) {
		/* There already (made by someone else since the kernel looked): open(2) opens it */
		rc = (flags & O_EXCL) ? -EEXIST : open_locked(cred, o, flags, fh);
	} else if (rc == 0) {
		rc = mem_may_create(cred, dir, name);
		if (rc == 0) {
			/* its creator may open it whatever its mode says */
			o = mem_make(cred, dir, name, S_IFREG | (mode & 07777));
			*fh = (ff_fh *)fh_new(o, flags);
		}
	}
	if (rc == 0)
		mem_give_node(o, node, st);
	g_mutex_unlock(&dir->tree->lock);
	return rc;
}

ssize_t mem_read(void *loc, ff_fh *fh, void *buf, size_t size, off_t off)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "read");

	if (fault)
		return fault;

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
		rc = mem_data_resize(o, end);
		if (rc)
			return rc;
	}
	memcpy(o->data + off, buf, size);
	mem_data_changed(cred, o);
	return size;
}

ssize_t mem_write(void *loc, const struct ff_cred *cred, ff_fh *fh, const void *buf, size_t size,
		  off_t off)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "write");

	if (fault)
		return fault;

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
int mem_flush(void *loc, ff_fh *fh)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "flush");

	if (fault)
		return fault;

	return 0;
}

int mem_fsync(void *loc, ff_fh *fh, int datasync)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "fsync");

	if (fault)
		return fault;

	return 0;
}

int mem_release(void *loc, ff_fh *fh)
{
	struct mem_fh *f = (struct mem_fh *)fh;
	struct mem_tree *t = f->obj->tree;

	g_mutex_lock(&t->lock);
	mem_obj_unref(f->obj);
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
		rc = mem_data_resize(o, end);
	else if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) && (guint64)off < o->size)
		memset(o->data + off, 0, MIN(end, o->size) - off);
	/* FALLOC_FL_KEEP_SIZE alone: memory is allocated as it is written */
	if (rc == 0)
		mem_data_changed(cred, o); /* ext4 calls file_modified() for every mode */
	return rc;
}

int mem_fallocate(void *loc, const struct ff_cred *cred, ff_fh *fh, int mode, off_t off, off_t len)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "fallocate");

	if (fault)
		return fault;

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
off_t mem_lseek(void *loc, ff_fh *fh, off_t off, int whence)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "lseek");

	if (fault)
		return fault;

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

ssize_t mem_copy_file_range(void *loc, const struct ff_cred *cred, ff_fh *fh_in, off_t off_in,
			    ff_fh *fh_out, off_t off_out, size_t len, int flags)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "copy_file_range");

	if (fault)
		return fault;

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

int mem_opendir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh **dh)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "opendir");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
	struct mem_dir *d;
	int rc = 0;

	g_mutex_lock(&o->tree->lock);
	if (!S_ISDIR(o->mode))
		rc = -ENOTDIR;
	else
		rc = mem_obj_access(cred, o, R_OK); /* listing an r-- directory works natively */
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
	if (mem_obj_access(cred, dir, X_OK) == 0) {
		o = mem_child_of(dir, e->name);
		*gone = !o;
		if (o)
			mem_give_node(o, &node, st);
	}
	g_mutex_unlock(&t->lock);
	return o;
}

int mem_readdir(void *loc, const struct ff_cred *cred, ff_node *node, ff_dh *dh, off_t off,
		bool plus, ff_fill_fn fill, void *buf)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "readdir");

	if (fault)
		return fault;

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

int mem_releasedir(void *loc, ff_dh *dh)
{
	struct mem_dir *d = (struct mem_dir *)dh;
	struct mem_tree *t = d->dir->tree;

	g_mutex_lock(&t->lock);
	mem_obj_unref(d->dir);
	g_mutex_unlock(&t->lock);
	g_array_unref(d->entries);
	g_mutex_clear(&d->lock);
	g_free(d);
	return 0;
}

int mem_fsyncdir(void *loc, ff_dh *dh, int datasync)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "fsyncdir");

	if (fault)
		return fault;

	return 0;
}

/* ---- whole location --------------------------------------------------------------------- */

int mem_statfs(void *loc, const struct ff_cred *cred, ff_node *node, struct statvfs *st)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "statfs");

	if (fault)
		return fault;

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
		if (write && S_ISDIR(o->mode) && (o->mode & S_ISVTX) && !mem_is_owner(cred, o))
			return -EPERM;
		return mem_obj_access(cred, o, write ? W_OK : R_OK);
	case XATTR_NS_TRUSTED:
		if (mem_is_root(cred))
			return 0;
		return write ? -EPERM : -ENODATA;
	case XATTR_NS_SECURITY:
		return write && !mem_is_root(cred) ? -EPERM : 0;
	default:
		return ns;
	}
}

int mem_setxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		 const void *value, size_t size, int flags)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "setxattr");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
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
		o->ctime = mem_now_ts();
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

ssize_t mem_getxattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name,
		     void *buf, size_t size)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "getxattr");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
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

ssize_t mem_listxattr(void *loc, const struct ff_cred *cred, ff_node *node, char *buf, size_t size)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "listxattr");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
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
			if (!g_str_has_prefix(name, "trusted.") || mem_is_root(cred))
				g_string_append_len(list, name, strlen(name) + 1);
		}
		g_free(names); /* the keys are the table's */
	}
	g_mutex_unlock(&o->tree->lock);
	rc = give_value(list->str, list->len, buf, size);
	g_string_free(list, TRUE);
	return rc;
}

int mem_removexattr(void *loc, const struct ff_cred *cred, ff_node *node, const char *name)
{
	int fault = mem_fault(((struct mem_loc *)loc)->faults, "removexattr");

	if (fault)
		return fault;

	struct mem_obj *o = mem_obj_of(node);
	int rc;

	g_mutex_lock(&o->tree->lock);
	rc = xattr_may(cred, o, name, true);
	if (rc == 0 && !(o->xattrs && g_hash_table_remove(o->xattrs, name)))
		rc = -ENODATA;
	if (rc == 0)
		o->ctime = mem_now_ts();
	g_mutex_unlock(&o->tree->lock);
	return rc;
}
