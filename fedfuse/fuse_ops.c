/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse_ops.c - the FUSE low-level operations: each one finds its inode, asks resolve.c what
 * backend object it stands for, checks what the namespace forbids (writes to virtual
 * directories and read-only referrals, renames across locations), calls the backend and
 * replies. The sign of an error flips here and nowhere else: fuse_reply_err(req, -rc).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fedfuse/control.h"
#include "fedfuse/cred.h"
#include "fedfuse/dir.h"
#include "fedfuse/fedfuse.h"
#include "fedfuse/gateway.h"
#include "fedfuse/log.h"
#include "fedfuse/notify.h"
#include "fedfuse/resolve.h"

#define MAX_IO (1024 * 1024)
#define LOCATION_XATTR "user.fedfuse.location"

/* An open file. Control files carry their text instead of a backend handle. */
struct ff_file {
	struct ff_mount *mnt;
	struct ff_inode *inode;
	void *fh;
	int fd;	      /* kernel descriptor for splicing, or -1 */
	int flock_fd; /* the description its flock()s are taken on, or -1 (lock.h) */
	bool wrote;
	char *text;
	size_t len;
};

/* What one operation on one inode needs; op_begin() fills it, op_end() releases it. */
struct op {
	struct ff_state *s;
	struct ff_inode *inode;
	struct ff_target t;
	struct ff_cred_hold h;
};

static struct ff_state *state(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct ff_file *file_of(struct fuse_file_info *fi)
{
	return (struct ff_file *)(uintptr_t)fi->fh;
}

/* Open files stay on their location; while it is down they fail with EIO. */
static int file_usable(struct ff_file *f)
{
	return ff_mount_usable(f->mnt) < 0 ? -EIO : 0;
}

/* Find the inode and its backend target. With `write`, refuse namespace-only inodes and
 * read-only referrals with EROFS. */
static int op_begin(fuse_req_t req, fuse_ino_t ino, bool write, struct op *op)
{
	int rc;

	op->s = state(req);
	op->t = (struct ff_target){ 0 };
	ff_cred_get(req, &op->h);
	op->inode = ff_itab_get(op->s->itab, ino);
	if (!op->inode)
		return -ESTALE;
	if (ff_control_is_control(ino))
		return write ? -EROFS : 0;
	rc = ff_target_get(op->s, &op->h.cred, op->inode, &op->t);
	if (rc < 0)
		return rc;
	if (write && (!op->t.mnt || op->t.mnt->loc.spec.read_only))
		return -EROFS;
	return 0;
}

static void op_end(struct op *op)
{
	ff_target_put(op->s, &op->t);
	ff_cred_put(&op->h);
}

static void handle_track(struct ff_state *s, void *handle, bool is_dir)
{
	g_mutex_lock(&s->handles_lock);
	g_hash_table_insert(s->handles, handle, GINT_TO_POINTER(is_dir));
	g_mutex_unlock(&s->handles_lock);
}

static void handle_untrack(struct ff_state *s, void *handle)
{
	g_mutex_lock(&s->handles_lock);
	g_hash_table_remove(s->handles, handle);
	g_mutex_unlock(&s->handles_lock);
}

static void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* ---- inodes ------------------------------------------------------------------------------- */

static void ff_init(void *data, struct fuse_conn_info *conn)
{
	struct ff_state *s = data;

	conn->max_write = MAX_IO;
	conn->max_readahead = MAX_IO;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Record locks and flock() come to us (lock.h): through the mount they exclude the
	 * programs that lock a local location's files directly, too. */
	if (conn->capable & FUSE_CAP_POSIX_LOCKS)
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* The kernel clears setuid/setgid bits. */
	conn->want &= ~(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_WRITEBACK_CACHE);
	/* When the kernel checks permissions, it checks POSIX ACLs too (read as xattrs, cached
	 * until an invalidation). A new object's umask is then applied by us: not where it
	 * inherits a default ACL (see create_mode()). */
	if (s->default_permissions && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	else
		conn->want &= ~(FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK);
}

/* The mode to create an object with: the caller's umask applied, unless the backend applies it
 * itself because it knows whether the object inherits a default ACL (FF_CAP_ACL). Without
 * FUSE_CAP_DONT_MASK the kernel applied it already, and cred->umask changes nothing more. */
static mode_t create_mode(const struct op *op, mode_t mode)
{
	return (op->t.mnt->be->caps & FF_CAP_ACL) ? mode : mode & ~op->h.cred.umask;
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ff_state *s = state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, parent);
	struct fuse_entry_param e;
	struct ff_cred_hold h;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ff_cred_get(req, &h);
	rc = ff_resolve_lookup(s, &h.cred, inode, name, &e);
	ff_cred_put(&h);
	if (rc == -ENOENT) { /* negative entries are not cached: others may create it */
		memset(&e, 0, sizeof(e));
		fuse_reply_entry(req, &e);
	} else if (rc < 0) {
		reply_err(req, rc);
	} else {
		fuse_reply_entry(req, &e);
	}
}

static void ff_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ff_itab_forget(state(req)->itab, ino, nlookup);
	fuse_reply_none(req);
}

static void ff_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct ff_state *s = state(req);

	for (size_t i = 0; i < count; i++)
		ff_itab_forget(s->itab, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_state *s = state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, ino);
	struct ff_file *f = fi ? file_of(fi) : NULL;
	struct ff_cred_hold h;
	struct stat st;
	double timeout;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (f && f->mnt && file_usable(f) < 0) { /* an open file on a location that died */
		fuse_reply_err(req, EIO);
		return;
	}
	ff_cred_get(req, &h);
	rc = ff_resolve_getattr(s, &h.cred, inode, f && f->mnt ? f->fh : NULL, &st, &timeout);
	ff_cred_put(&h);
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, timeout);
}

/*
 * FUSE_CAP_HANDLE_KILLPRIV is off, so the kernel clears setuid and setgid itself when a caller
 * without CAP_FSETID writes, truncates or chowns a file: it sends a setattr of the mode in the
 * caller's name, and the caller need not own the file (the kernel skips its permission check
 * for that setattr). Done as the caller it would fail EPERM, and the write with it. A mode
 * change by a caller who does not own the file and that only drops S_ISUID/S_ISGID is that
 * request (the kernel refuses any other chmod by a non-owner when it checks permissions, so
 * this is done only with default_permissions): it is done with the daemon's own credentials.
 */
static bool is_kill_setid(const struct ff_cred *cred, const struct stat *cur,
			  const struct stat *attr)
{
	mode_t before = cur->st_mode & 07777, after = attr->st_mode & 07777;
	mode_t dropped = before & ~after;

	return cred->uid != 0 && cred->uid != cur->st_uid && S_ISREG(cur->st_mode) &&
	       (after & ~before) == 0 && dropped != 0 &&
	       (dropped & ~(mode_t)(S_ISUID | S_ISGID)) == 0;
}

static bool cred_in_group(const struct ff_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (int i = 0; i < cred->ngroups && cred->groups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

/*
 * A size change by a caller without CAP_FSETID clears setuid, and setgid when the file is
 * group-executable or the caller is not in its group (Linux >= 6.2). The kernel's FUSE client
 * leaves that to us for a truncate, and a server may not do it (ganesha keeps the bits on a
 * SETATTR of the size): after a truncate, `st` tells what the backend left, and what should
 * have gone is cleared with the daemon's credentials, as is_kill_setid() does for the kernel.
 */
static int drop_setid(struct op *op, void *fh, struct stat *st)
{
	mode_t drop = 0;
	struct ff_cred_hold self;
	struct stat attr = { .st_mode = st->st_mode };
	int rc;

	if (op->h.cred.uid == 0 || !S_ISREG(st->st_mode))
		return 0;
	drop = st->st_mode & S_ISUID;
	if ((st->st_mode & S_ISGID) &&
	    ((st->st_mode & S_IXGRP) || !cred_in_group(&op->h.cred, st->st_gid)))
		drop |= S_ISGID;
	if (!drop)
		return 0;
	attr.st_mode &= ~drop;
	ff_cred_self(&self);
	rc = ff_gw_setattr(op->t.mnt, &self.cred, op->t.bnode, fh, &attr, FF_SET_MODE, st);
	ff_cred_put(&self);
	return rc;
}

/* FUSE's setattr bits in the contract's terms (backend.h). */
static unsigned int set_bits(int fuse_to_set)
{
	static const struct {
		int fuse;
		unsigned int ff;
	} map[] = {
		{ FUSE_SET_ATTR_MODE, FF_SET_MODE },
		{ FUSE_SET_ATTR_UID, FF_SET_UID },
		{ FUSE_SET_ATTR_GID, FF_SET_GID },
		{ FUSE_SET_ATTR_SIZE, FF_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, FF_SET_ATIME },
		{ FUSE_SET_ATTR_MTIME, FF_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, FF_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, FF_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, FF_SET_CTIME },
	};
	unsigned int out = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
		if (fuse_to_set & map[i].fuse)
			out |= map[i].ff;
	return out;
}

static void ff_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int fuse_to_set,
		       struct fuse_file_info *fi)
{
	struct ff_file *f = fi ? file_of(fi) : NULL;
	unsigned int to_set = set_bits(fuse_to_set);
	bool done = false;
	void *fh;
	struct op op;
	struct stat st, cur;
	int rc;

	rc = op_begin(req, ino, true, &op);
	fh = f && f->mnt ? f->fh : NULL;
	if (rc == 0 && (to_set & FF_SET_MODE) && op.h.cred.uid != 0 && op.s->default_permissions &&
	    ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &cur) == 0 &&
	    is_kill_setid(&op.h.cred, &cur, attr)) {
		struct ff_cred_hold self;

		ff_cred_self(&self);
		rc = ff_gw_setattr(op.t.mnt, &self.cred, op.t.bnode, fh, attr, FF_SET_MODE, &st);
		ff_cred_put(&self);
		to_set &= ~FF_SET_MODE;
		done = !(to_set & ~FF_SET_CTIME); /* nothing left: `st` is the answer */
	}
	if (rc == 0 && !done) { /* all of it, or what is left after the kill above */
		rc = ff_gw_setattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, attr, to_set, &st);
		if (rc == 0 && (to_set & FF_SET_SIZE))
			rc = drop_setid(&op, fh, &st);
	}
	if (rc < 0) {
		reply_err(req, rc);
	} else {
		st.st_ino = ino;
		ff_resolve_fix_attr(op.inode, &st);
		fuse_reply_attr(req, &st, ff_mount_cache_timeout(op.t.mnt));
	}
	op_end(&op);
}

static void ff_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	struct op op;
	ssize_t n = 0;
	int rc;

	rc = op_begin(req, ino, false, &op);
	if (rc == 0 && !op.t.mnt)
		rc = -EINVAL;
	if (rc == 0) {
		n = ff_gw_readlink(op.t.mnt, &op.h.cred, op.t.bnode, buf, sizeof(buf) - 1);
		rc = n < 0 ? (int)n : 0;
	}
	if (rc < 0) {
		reply_err(req, rc);
	} else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
	op_end(&op);
}

/* ---- names -------------------------------------------------------------------------------- */

/* A name a nested referral or virtual directory stands on cannot be removed or replaced. */
static int check_ns_name(struct op *op, struct ff_inode *dir, const char *name)
{
	return ff_resolve_is_ns_child(op->s, dir, name) ? -EBUSY : 0;
}

static void reply_new_entry(fuse_req_t req, struct op *op, int rc, ff_node *node,
			    const struct stat *st)
{
	struct fuse_entry_param e;

	if (rc < 0) {
		reply_err(req, rc);
		return;
	}
	ff_resolve_entry(op->s, op->t.mnt, node, st, &e);
	fuse_reply_entry(req, &e);
}

static void ff_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	ff_node *node = NULL;
	struct stat st;
	struct op op;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_mknod(op.t.mnt, &op.h.cred, op.t.bnode, name, create_mode(&op, mode),
				 rdev, &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	op_end(&op);
}

static void ff_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	ff_node *node = NULL;
	struct stat st;
	struct op op;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_mkdir(op.t.mnt, &op.h.cred, op.t.bnode, name, create_mode(&op, mode),
				 &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	op_end(&op);
}

static void ff_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	ff_node *node = NULL;
	struct stat st;
	struct op op;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_symlink(op.t.mnt, &op.h.cred, target, op.t.bnode, name, &node, &st);
	reply_new_entry(req, &op, rc, node, &st);
	op_end(&op);
}

static void ff_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct ff_inode *inode = ff_itab_get(state(req)->itab, ino);
	struct fuse_entry_param e = { 0 };
	struct stat st;
	struct op op;
	int rc;

	rc = op_begin(req, newparent, true, &op);
	if (rc == 0 && (!inode || !inode->mnt || inode->ns_path))
		rc = inode ? -EPERM : -ESTALE;
	if (rc == 0 && inode->mnt != op.t.mnt)
		rc = -EXDEV;
	if (rc == 0)
		rc = ff_gw_link(op.t.mnt, &op.h.cred, inode->bnode, op.t.bnode, newname, &st);
	if (rc < 0) {
		reply_err(req, rc);
	} else {
		ff_itab_ref(op.s->itab, inode);
		ff_resolve_entry_held(op.t.mnt, inode, &st, &e);
		fuse_reply_entry(req, &e);
	}
	op_end(&op);
}

static void remove_hidden(struct ff_state *s, struct ff_inode *inode);

/*
 * Before `name` in directory `dir` goes away (unlink, or rename over it): on a backend that
 * names objects by path, a file still open through this mount would become unreachable, so it
 * is renamed to a hidden name instead and removed at its last close (what NFS clients do).
 * Returns 1 when the name is gone that way, 0 when nothing was needed, or -errno.
 */
static int hide_if_open(struct op *op, struct ff_inode *dir, struct ff_target *dt, const char *name)
{
	static gint counter;
	struct ff_mount *m = dt->mnt;
	struct ff_inode *victim;
	g_autofree char *hidden = NULL;
	ff_node *node;
	struct stat st;
	bool open;
	int rc;

	if (!(m->be->caps & FF_CAP_PATH_NODES) || g_atomic_int_get(&m->open_files) == 0)
		return 0;
	if (ff_gw_lookup(m, &op->h.cred, dt->bnode, name, &node, &st) < 0)
		return 0; /* the operation itself will say what is wrong */
	victim = ff_itab_find(op->s->itab, m->index, st.st_dev, st.st_ino);
	open = false;
	if (victim && !S_ISDIR(st.st_mode) && st.st_nlink == 1) { /* its last name */
		g_mutex_lock(&victim->lock);
		open = victim->opencount > 0 && !(victim->gone && victim->gone->hidden_name);
		g_mutex_unlock(&victim->lock);
	}
	/* The open inode may know the object by another, removed, name: make it follow this
	 * one, which the rename below moves to the hidden name. */
	if (open && victim->bnode != node)
		ff_gw_relink(m, victim->bnode, node);
	ff_gw_forget(m, node);
	if (!open)
		return 0;
	hidden = g_strdup_printf(".fedfuse_hidden%016" PRIx64 "%08x", victim->ino,
				 (unsigned)g_atomic_int_add(&counter, 1));
	rc = ff_gw_rename(m, &op->h.cred, dt->bnode, name, dt->bnode, hidden, 0);
	if (rc < 0)
		return rc;
	ff_itab_ref(op->s->itab, dir); /* keeps the directory until the hidden name is removed */
	g_mutex_lock(&victim->lock);
	ff_inode_gone(victim)->hidden_parent = dir;
	victim->gone->hidden_name = g_steal_pointer(&hidden);
	g_mutex_unlock(&victim->lock);
	remove_hidden(op->s, victim); /* closed meanwhile: its release found no hidden name */
	return 1;
}

static void ff_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct op op;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		rc = hide_if_open(&op, op.inode, &op.t, name);
	if (rc == 0)
		rc = ff_gw_unlink(op.t.mnt, &op.h.cred, op.t.bnode, name);
	reply_err(req, rc < 0 ? rc : 0);
	op_end(&op);
}

/* Before rmdir on a path-named backend: the inode the kernel holds for that directory, if any,
 * with its attributes. */
static struct ff_inode *dir_to_remove(struct op *op, const char *name, struct stat *st)
{
	struct ff_mount *m = op->t.mnt;
	struct ff_inode *inode;
	ff_node *node;

	if (!(m->be->caps & FF_CAP_PATH_NODES) ||
	    ff_gw_lookup(m, &op->h.cred, op->t.bnode, name, &node, st) < 0)
		return NULL;
	ff_gw_forget(m, node);
	inode = ff_itab_find(op->s->itab, m->index, st->st_dev, st->st_ino);
	return inode && S_ISDIR(st->st_mode) ? inode : NULL;
}

static void ff_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ff_inode *victim = NULL;
	struct stat vst;
	struct op op;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		victim = dir_to_remove(&op, name, &vst);
	if (rc == 0)
		rc = ff_gw_rmdir(op.t.mnt, &op.h.cred, op.t.bnode, name);
	if (rc == 0 && victim) {
		g_mutex_lock(&victim->lock);
		struct ff_inode_gone *gone = ff_inode_gone(victim);

		gone->removed = true;
		gone->removed_st = vst;
		gone->removed_st.st_nlink = 0;
		gone->removed_st.st_ino = victim->ino;
		g_mutex_unlock(&victim->lock);
	}
	reply_err(req, rc);
	op_end(&op);
}

static void ff_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct op op, nop;
	int rc, nrc;

	rc = op_begin(req, parent, true, &op);
	nrc = op_begin(req, newparent, true, &nop);
	if (rc == 0)
		rc = nrc;
	if (rc == 0 && op.t.mnt != nop.t.mnt)
		rc = -EXDEV;
	if (rc == 0 && flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		rc = -EINVAL;
	if (rc == 0)
		rc = check_ns_name(&op, op.inode, name);
	if (rc == 0)
		rc = check_ns_name(&op, nop.inode, newname);
	if (rc == 0 && !(flags & (RENAME_NOREPLACE | RENAME_EXCHANGE))) {
		rc = hide_if_open(&op, nop.inode, &nop.t, newname);
		rc = rc > 0 ? 0 : rc;
	}
	if (rc == 0)
		rc = ff_gw_rename(op.t.mnt, &op.h.cred, op.t.bnode, name, nop.t.bnode, newname,
				  flags);
	reply_err(req, rc);
	op_end(&nop);
	op_end(&op);
}

/* ---- files -------------------------------------------------------------------------------- */

static bool same_version(struct ff_inode *inode, const struct stat *st)
{
	return inode->cache_valid && inode->cache_size == st->st_size &&
	       inode->cache_mtime_sec == st->st_mtim.tv_sec &&
	       inode->cache_mtime_nsec == st->st_mtim.tv_nsec;
}

static void remember_version(struct ff_inode *inode, const struct stat *st)
{
	g_mutex_lock(&inode->lock);
	inode->cache_valid = true;
	inode->cache_size = st->st_size;
	inode->cache_mtime_sec = st->st_mtim.tv_sec;
	inode->cache_mtime_nsec = (int32_t)st->st_mtim.tv_nsec;
	g_mutex_unlock(&inode->lock);
}

static void file_release(struct ff_state *s, struct ff_file *f);

static struct ff_file *file_new(struct op *op, void *fh)
{
	struct ff_file *f = g_new0(struct ff_file, 1);

	f->mnt = op->t.mnt;
	f->inode = op->inode;
	f->fh = fh;
	f->fd = ff_gw_handle_fd(f->mnt, fh);
	f->flock_fd = -1;
	g_atomic_int_inc(&f->mnt->open_files);
	g_mutex_lock(&op->inode->lock);
	op->inode->opencount++;
	g_mutex_unlock(&op->inode->lock);
	handle_track(op->s, f, false);
	return f;
}

static void open_control(fuse_req_t req, struct op *op, struct fuse_file_info *fi)
{
	struct ff_file *f = g_new0(struct ff_file, 1);

	f->inode = op->inode;
	f->fd = -1;
	f->flock_fd = -1;
	f->text = ff_control_read(op->s, op->inode->ino, &f->len);
	handle_track(op->s, f, false);
	fi->fh = (uintptr_t)f;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int flags = fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY);
	bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct ff_file *f;
	struct stat st;
	struct op op;
	void *fh;
	int rc;

	rc = op_begin(req, ino, write, &op);
	if (rc == 0 && ff_control_is_control(ino)) {
		open_control(req, &op, fi);
		op_end(&op);
		return;
	}
	if (rc == 0 && !op.t.mnt)
		rc = -EISDIR;
	if (rc == 0)
		rc = ff_gw_open(op.t.mnt, &op.h.cred, op.t.bnode, flags, &fh);
	if (rc < 0) {
		reply_err(req, rc);
		op_end(&op);
		return;
	}
	f = file_new(&op, fh);
	/* Close-to-open consistency: keep the kernel's cached pages only if the file has not
	 * changed since they were read. */
	if (!(flags & O_TRUNC) && ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &st) == 0) {
		g_mutex_lock(&op.inode->lock);
		fi->keep_cache = same_version(op.inode, &st);
		g_mutex_unlock(&op.inode->lock);
		remember_version(op.inode, &st);
	}
	/* O_TRUNC by a caller without CAP_FSETID clears setid bits, as a truncate does; the
	 * kernel may hold the old mode (ff_inode_note_mode). */
	if ((flags & O_TRUNC) && op.h.cred.uid != 0 &&
	    __atomic_load_n(&op.inode->setid, __ATOMIC_RELAXED)) {
		if (ff_gw_getattr(op.t.mnt, &op.h.cred, op.t.bnode, fh, &st) == 0 &&
		    drop_setid(&op, fh, &st) < 0)
			ff_log_once(LOG_WARNING, op.t.mnt->loc.spec.uri, 60,
				    "cannot clear setid bits after a truncating open on %s",
				    op.t.mnt->loc.spec.uri);
		ff_notify_after_write(op.inode);
	}
	if (flags & O_DIRECT)
		fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	if (fuse_reply_open(req, fi) == -ENOENT) /* the opener was interrupted */
		file_release(op.s, f);
	op_end(&op);
}

static void ff_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	ff_node *node = NULL;
	struct ff_file *f;
	struct stat st;
	struct op op;
	void *fh;
	int rc;

	rc = op_begin(req, parent, true, &op);
	if (rc == 0)
		rc = ff_gw_create(op.t.mnt, &op.h.cred, op.t.bnode, name, create_mode(&op, mode),
				  fi->flags & ~O_NOCTTY, &node, &st, &fh);
	if (rc < 0) {
		reply_err(req, rc);
		op_end(&op);
		return;
	}
	ff_resolve_entry(op.s, op.t.mnt, node, &st, &e);
	op.inode = ff_itab_get(op.s->itab, e.ino);
	f = file_new(&op, fh);
	remember_version(op.inode, &st);
	if (fi->flags & O_DIRECT)
		fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	fuse_reply_create(req, &e, fi);
	op_end(&op);
}

/* A per-thread buffer for backends that cannot splice, freed when the thread ends. */
struct io_buf {
	size_t cap;
	char data[];
};

static GPrivate io_buf_key = G_PRIVATE_INIT(g_free);

static char *io_buffer(size_t size)
{
	struct io_buf *b = g_private_get(&io_buf_key);

	if (!b || size > b->cap) {
		size_t cap = MAX(size, (size_t)MAX_IO);

		b = g_malloc(sizeof(*b) + cap);
		b->cap = cap;
		g_private_replace(&io_buf_key, b);
	}
	return b->data;
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	gint64 start = g_get_monotonic_time();
	ssize_t n;

	if (!f->mnt) { /* a control file */
		size_t from = MIN((size_t)off, f->len), len = MIN(size, f->len - from);
		char *buf = io_buffer(len);

		/* From the thread's buffer: once the kernel has the reply, the reader may close the
		 * file and another thread free its text, while this one's writev returns. */
		memcpy(buf, f->text + from, len);
		fuse_reply_buf(req, buf, len);
		return;
	}
	if (file_usable(f) < 0) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (f->fd >= 0) {
		struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

		buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		buf.buf[0].fd = f->fd;
		buf.buf[0].pos = off;
		ff_mount_account(f->mnt, FF_OP_READ, 0, start);
		fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
		return;
	}
	n = ff_gw_read(f->mnt, f->fh, io_buffer(size), size, off);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_buf(req, io_buffer(size), n);
}

static void ff_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	size_t size = fuse_buf_size(in);
	struct ff_cred_hold h;
	const void *data;
	ssize_t n;

	if (!f->mnt) {
		fuse_reply_err(req, EBADF);
		return;
	}
	f->wrote = true;
	if (in->count == 1 && !(in->buf[0].flags & FUSE_BUF_IS_FD)) {
		data = (const char *)in->buf[0].mem + in->off;
	} else {
		struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);

		mem.buf[0].mem = io_buffer(size);
		n = fuse_buf_copy(&mem, in, 0);
		if (n < 0) {
			reply_err(req, (int)n);
			return;
		}
		size = n;
		data = mem.buf[0].mem;
	}
	/* As the writer: whether setid bits survive depends on who writes (backend.h). */
	ff_cred_get(req, &h);
	n = ff_gw_write(f->mnt, &h.cred, f->fh, data, size, off);
	if (n > 0 && h.cred.uid != 0)
		ff_notify_after_write(f->inode);
	ff_cred_put(&h);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, n);
}

static void ff_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	int rc = 0;
	/* close(2): the closing process's record locks on the file are gone (POSIX) */
	ff_locks_owner_closed(state(req)->locks, ino, fi->lock_owner);

	if (f->mnt)
		rc = ff_gw_flush(f->mnt, f->fh);
	reply_err(req, rc);
}

static void ff_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	int rc = 0;

	if (f->mnt)
		rc = ff_gw_fsync(f->mnt, f->fh, datasync);
	reply_err(req, rc);
}

/* The last close of a file that was unlinked while open on a path-named backend. */
static void remove_hidden(struct ff_state *s, struct ff_inode *inode)
{
	struct ff_inode *dir;
	struct ff_cred_hold h;
	struct ff_target t;
	char *name;
	int rc;

	g_mutex_lock(&inode->lock);
	dir = inode->opencount == 0 && inode->gone ? inode->gone->hidden_parent : NULL;
	name = dir ? g_steal_pointer(&inode->gone->hidden_name) : NULL;
	if (dir)
		inode->gone->hidden_parent = NULL;
	g_mutex_unlock(&inode->lock);
	if (!dir)
		return;
	ff_cred_self(&h);
	rc = ff_target_get(s, &h.cred, dir, &t);
	if (rc == 0) {
		rc = ff_gw_unlink(t.mnt, &h.cred, t.bnode, name);
		ff_target_put(s, &t);
	}
	if (rc < 0)
		ff_log_once(LOG_WARNING, name, 60, "cannot remove %s (unlinked while open): %s",
			    name, g_strerror(-rc));
	ff_cred_put(&h);
	ff_itab_forget(s->itab, dir->ino, 1);
	g_free(name);
}

static void file_release(struct ff_state *s, struct ff_file *f)
{
	struct ff_cred_hold h;
	struct stat st;
	int rc;

	handle_untrack(s, f);
	ff_locks_file_closed(s->locks, f->inode->ino, &f->flock_fd);
	if (!f->mnt)
		goto out_free;
	ff_cred_self(&h);
	/* Our own writes changed mtime: remember the new version, so the next open keeps the
	 * pages this one wrote. */
	if (f->wrote && ff_gw_getattr(f->mnt, &h.cred, f->inode->bnode, f->fh, &st) == 0)
		remember_version(f->inode, &st);
	ff_cred_put(&h);
	rc = ff_gw_release(f->mnt, f->fh);
	if (rc < 0)
		ff_log_once(LOG_WARNING, f->mnt->loc.spec.uri, 60, "close on %s failed: %s",
			    f->mnt->loc.spec.uri, g_strerror(-rc));
	g_atomic_int_dec_and_test(&f->mnt->open_files);
	g_mutex_lock(&f->inode->lock);
	f->inode->opencount--;
	g_mutex_unlock(&f->inode->lock);
	remove_hidden(s, f->inode);
out_free:
	g_free(f->text);
	g_free(f);
}

static void ff_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	file_release(state(req), file_of(fi));
	fuse_reply_err(req, 0);
}

void ff_release_all(struct ff_state *s)
{
	GHashTableIter it;
	gpointer handle, is_dir;

	for (;;) {
		g_mutex_lock(&s->handles_lock);
		g_hash_table_iter_init(&it, s->handles);
		if (!g_hash_table_iter_next(&it, &handle, &is_dir)) {
			g_mutex_unlock(&s->handles_lock);
			return;
		}
		g_hash_table_iter_remove(&it);
		g_mutex_unlock(&s->handles_lock);
		if (is_dir)
			ff_dir_release(s, handle);
		else
			file_release(s, handle);
	}
}

/* ---- locks (lock.h) ------------------------------------------------------------------------ */

static void ff_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct ff_file *f = file_of(fi);

	ff_locks_getlk(state(req)->locks, req, f->inode, f->mnt, fi->lock_owner, lock);
}

static void ff_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		     int sleep)
{
	struct ff_file *f = file_of(fi);

	ff_locks_setlk(state(req)->locks, req, f->inode, f->mnt, fi->lock_owner, lock, sleep);
}

static void ff_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct ff_file *f = file_of(fi);

	ff_locks_flock(state(req)->locks, req, f->inode, f->mnt, &f->flock_fd, op);
}

static void ff_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	struct ff_cred_hold h;
	int rc = -EOPNOTSUPP;

	if (f->mnt && f->mnt->loc.spec.read_only) {
		rc = -EROFS;
	} else if (f->mnt) {
		ff_cred_get(req, &h);
		rc = ff_gw_fallocate(f->mnt, &h.cred, f->fh, mode, off, len);
		if (rc == 0 && h.cred.uid != 0)
			ff_notify_after_write(f->inode);
		ff_cred_put(&h);
	}
	reply_err(req, rc);
}

static void ff_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct ff_file *f = file_of(fi);
	off_t res;

	if (!f->mnt) {
		fuse_reply_err(req, ENOSYS); /* the kernel then handles SEEK_DATA/HOLE itself */
		return;
	}
	res = ff_gw_lseek(f->mnt, f->fh, off, whence);
	if (res < 0)
		reply_err(req, (int)res);
	else
		fuse_reply_lseek(req, res);
}

static void ff_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct ff_file *in = file_of(fi_in), *out = file_of(fi_out);
	struct ff_cred_hold h;
	ssize_t n;

	if (!in->mnt || in->mnt != out->mnt) {
		fuse_reply_err(req, EXDEV); /* the kernel falls back to read and write */
		return;
	}
	out->wrote = true;
	ff_cred_get(req, &h);
	n = ff_gw_copy_file_range(in->mnt, &h.cred, in->fh, off_in, out->fh, off_out, len, flags);
	if (n > 0 && h.cred.uid != 0)
		ff_notify_after_write(out->inode);
	ff_cred_put(&h);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, n);
}

/* ---- directories -------------------------------------------------------------------------- */

static void ff_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ff_state *s = state(req);
	struct ff_inode *inode = ff_itab_get(s->itab, ino);
	struct ff_cred_hold h;
	struct ff_dir *dir;
	int rc;

	if (!inode) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ff_cred_get(req, &h);
	rc = ff_dir_open(s, &h.cred, inode, &dir);
	ff_cred_put(&h);
	if (rc < 0) {
		reply_err(req, rc);
		return;
	}
	fi->fh = (uintptr_t)dir;
	if (ff_dir_cacheable(dir))
		fi->cache_readdir = fi->keep_cache = 1;
	handle_track(s, dir, true);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		handle_untrack(s, dir);
		ff_dir_release(s, dir);
	}
}

static void do_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	struct ff_cred_hold h;

	ff_cred_get(req, &h);
	ff_dir_read(state(req), req, &h.cred, (struct ff_dir *)(uintptr_t)fi->fh, size, off, plus);
	ff_cred_put(&h);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, false);
}

static void ff_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, true);
}

static void ff_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	handle_untrack(state(req), (void *)(uintptr_t)fi->fh);
	ff_dir_release(state(req), (struct ff_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void ff_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	reply_err(req, ff_dir_fsync(state(req), (struct ff_dir *)(uintptr_t)fi->fh, datasync));
}

static void ff_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
	struct op op;
	int rc;

	rc = op_begin(req, ino, false, &op);
	if (rc == 0 && op.t.mnt) /* else a virtual directory's: nothing to store */
		rc = ff_gw_statfs(op.t.mnt, &op.h.cred, op.t.bnode, &st);
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_statfs(req, &st);
	op_end(&op);
}

/* ---- extended attributes ------------------------------------------------------------------ */

/* Junction values are the namespace's business, not its users'. */
static bool xattr_hidden(const char *name)
{
	return g_str_has_prefix(name, "user.fedfuse.") ||
	       g_str_has_prefix(name, "trusted.junction.");
}

/* The kernel reads these for its permission checks: "no ACL" is ENODATA, where any other error
 * would fail the check. */
static bool xattr_is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

static int xattr_begin(fuse_req_t req, fuse_ino_t ino, bool write, struct op *op)
{
	int rc = op_begin(req, ino, write, op);

	if (rc == 0 && !op->t.mnt)
		rc = write ? -EROFS : -ENODATA;
	return rc;
}

static void ff_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct op op;
	int rc;

	rc = xattr_begin(req, ino, true, &op);
	if (rc == 0 && xattr_hidden(name))
		rc = -EPERM;
	if (rc == 0)
		rc = ff_gw_setxattr(op.t.mnt, &op.h.cred, op.t.bnode, name, value, size, flags);
	reply_err(req, rc);
	op_end(&op);
}

/* Reply with a value of `len` bytes to a request for `size` bytes (0: the length). */
static void reply_xattr_value(fuse_req_t req, const char *value, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

static void ff_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	g_autofree char *buf = size ? g_malloc(size) : NULL;
	struct op op;
	ssize_t n = 0;
	int rc;

	rc = op_begin(req, ino, false, &op);
	if (rc == 0 && strcmp(name, LOCATION_XATTR) == 0) {
		if (op.t.mnt)
			reply_xattr_value(req, op.t.mnt->loc.spec.uri,
					  strlen(op.t.mnt->loc.spec.uri), size);
		else
			fuse_reply_err(req, ENODATA);
		op_end(&op);
		return;
	}
	if (rc == 0 && !op.t.mnt)
		rc = -ENODATA;
	if (rc == 0 && xattr_hidden(name))
		rc = -ENODATA;
	if (rc == 0) {
		n = ff_gw_getxattr(op.t.mnt, &op.h.cred, op.t.bnode, name, buf, size);
		rc = n < 0 ? (int)n : 0;
	}
	if (rc == -EOPNOTSUPP && xattr_is_acl(name))
		rc = -ENODATA; /* a location without ACLs: none */
	if (rc < 0)
		reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else
		fuse_reply_buf(req, buf, n);
	op_end(&op);
}

/* The backend's attribute names without the hidden ones. */
static ssize_t list_visible(struct op *op, char **out)
{
	ssize_t n, used = 0;
	char *list = NULL;

	for (int tries = 0; tries < 5; tries++) {
		n = ff_gw_listxattr(op->t.mnt, &op->h.cred, op->t.bnode, NULL, 0);
		if (n <= 0)
			break;
		list = g_realloc(list, n);
		n = ff_gw_listxattr(op->t.mnt, &op->h.cred, op->t.bnode, list, n);
		if (n != -ERANGE)
			break;
	}
	if (n < 0) {
		g_free(list);
		return n;
	}
	for (ssize_t i = 0; i < n; i += strlen(list + i) + 1) {
		size_t len = strlen(list + i) + 1;

		if (!xattr_hidden(list + i)) {
			memmove(list + used, list + i, len);
			used += len;
		}
	}
	*out = list;
	return used;
}

static void ff_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	g_autofree char *list = NULL;
	struct op op;
	ssize_t n = 0;
	int rc;

	rc = xattr_begin(req, ino, false, &op);
	if (rc == -ENODATA)
		rc = 0; /* nothing to list */
	else if (rc == 0)
		n = list_visible(&op, &list);
	if (rc == 0 && n == -EOPNOTSUPP) /* a location without xattrs */
		n = 0;
	if (rc == 0 && n < 0)
		rc = (int)n;
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_xattr_value(req, list, n, size);
	op_end(&op);
}

static void ff_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct op op;
	int rc;

	rc = xattr_begin(req, ino, true, &op);
	if (rc == 0 && xattr_hidden(name))
		rc = -EPERM;
	if (rc == 0)
		rc = ff_gw_removexattr(op.t.mnt, &op.h.cred, op.t.bnode, name);
	reply_err(req, rc);
	op_end(&op);
}

const struct fuse_lowlevel_ops ff_ops = {
	.init = ff_init,
	.lookup = ff_lookup,
	.forget = ff_forget,
	.forget_multi = ff_forget_multi,
	.getattr = ff_getattr,
	.setattr = ff_setattr,
	.readlink = ff_readlink,
	.mknod = ff_mknod,
	.mkdir = ff_mkdir,
	.symlink = ff_symlink,
	.link = ff_link,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.rename = ff_rename,
	.open = ff_open,
	.create = ff_create,
	.read = ff_read,
	.write_buf = ff_write_buf,
	.flush = ff_flush,
	.fsync = ff_fsync,
	.release = ff_release,
	.getlk = ff_getlk,
	.setlk = ff_setlk,
	.flock = ff_flock,
	.fallocate = ff_fallocate,
	.lseek = ff_lseek,
	.copy_file_range = ff_copy_file_range,
	.opendir = ff_opendir,
	.readdir = ff_readdir,
	.readdirplus = ff_readdirplus,
	.releasedir = ff_releasedir,
	.fsyncdir = ff_fsyncdir,
	.statfs = ff_statfs,
	.setxattr = ff_setxattr,
	.getxattr = ff_getxattr,
	.listxattr = ff_listxattr,
	.removexattr = ff_removexattr,
};
