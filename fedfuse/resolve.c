/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * resolve.c - name resolution across the namespace: a lookup in a directory that is part of the
 * namespace tree first asks the namespace (referrals hide what a location has at that name,
 * like a mount on a mount point), then the directory's backend.
 */
#include <errno.h>
#include <string.h>

#include "fedfuse/control.h"
#include "fedfuse/cred.h"
#include "fedfuse/gateway.h"
#include "fedfuse/log.h"
#include "fedfuse/nsdb.h"
#include "fedfuse/plugins.h"
#include "fedfuse/resolve.h"

#define JUNCTION_DEPTH_MAX 16

void ff_ctx_begin(struct ff_ctx *c, struct ff_state *s, const struct ff_cred *cred)
{
	c->s = s;
	c->ns = ff_state_ns(s);
	c->cred = cred;
	c->start = g_get_monotonic_time();
}

void ff_ctx_end(struct ff_ctx *c)
{
	ff_namespace_unref(c->ns);
	c->ns = NULL;
}

const struct ff_ns_node *ff_resolve_ns_node(const struct ff_ctx *c, struct ff_inode *inode)
{
	struct ff_namespace *old = NULL;
	const struct ff_ns_node *node = NULL;

	g_mutex_lock(&inode->lock);
	if (inode->ns_ref && inode->ns_ref->ns == c->ns) {
		node = inode->ns_ref->node;
	} else if (inode->ns_ref) {
		/* Found in an earlier namespace (a reload came since): the same path in this one,
		 * which the inode then keeps. Not there: not part of this one's tree. */
		node = ff_namespace_find(c->ns, inode->ns_ref->node->path);
		if (node) {
			old = inode->ns_ref->ns;
			inode->ns_ref->ns = ff_namespace_ref(c->ns);
			inode->ns_ref->node = node;
		}
	}
	g_mutex_unlock(&inode->lock);
	if (old)
		ff_namespace_unref(old);
	return node;
}

/* `node` (of c->ns, or NULL) is where `inode` now stands in the namespace tree. */
static void set_ns_node(const struct ff_ctx *c, struct ff_inode *inode,
			const struct ff_ns_node *node)
{
	ff_inode_set_ns(inode, node ? c->ns : NULL, node);
}

/* The namespace child `name` of `dir`, if any. */
static const struct ff_ns_node *ns_child(const struct ff_ns_node *dir, const char *name)
{
	return dir ? g_hash_table_lookup(dir->children, name) : NULL;
}

static void fill_entry(struct ff_inode *inode, const struct stat *st, double timeout,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = inode->ino;
	e->attr = *st;
	e->attr.st_ino = inode->ino;
	e->attr_timeout = timeout;
	e->entry_timeout = timeout;
	ff_inode_note_mode(inode, st->st_mode);
}

/* Intern a backend object; consumes bnode. */
static struct ff_inode *intern(struct ff_state *s, struct ff_mount *mnt, ff_node *bnode,
			       const struct stat *st)
{
	bool one_node = S_ISDIR(st->st_mode) && (mnt->be->caps & FF_CAP_PATH_NODES);
	bool created;
	struct ff_inode *inode = ff_itab_intern(s->itab, mnt, mnt->index, st->st_dev, st->st_ino,
						bnode, st->st_mode, one_node, &created);

	if (created) {
		ff_mount_ref(mnt); /* the inode's, dropped when it is released */
	} else {
		/* Seen before: keep the node the inode has (a path-named backend learns the newest
		 * path, which is the one the kernel now uses) and drop the new reference, which may
		 * well be to the same node. */
		if (inode->bnode != bnode)
			ff_gw_relink(mnt, inode->bnode, bnode);
		ff_gw_forget(mnt, bnode);
	}
	return inode;
}

void ff_resolve_entry(struct ff_state *s, struct ff_mount *mnt, ff_node *bnode,
		      const struct stat *st, struct fuse_entry_param *e)
{
	struct ff_inode *inode = intern(s, mnt, bnode, st);

	fill_entry(inode, st, ff_mount_cache_timeout(mnt), e);
}

void ff_resolve_entry_held(struct ff_mount *mnt, struct ff_inode *inode, const struct stat *st,
			   struct fuse_entry_param *e)
{
	fill_entry(inode, st, ff_mount_cache_timeout(mnt), e);
}

void ff_virtual_stat(const struct ff_ctx *c, struct ff_inode *inode, struct stat *st)
{
	struct ff_state *s = c->s;
	const struct ff_ns_node *node = ff_resolve_ns_node(c, inode);

	memset(st, 0, sizeof(*st));
	st->st_ino = inode->ino;
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2 + (node ? node->child_list->len : 0);
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_size = 4096;
	st->st_blksize = 4096;
	g_mutex_lock(&s->ns_lock);
	st->st_atim = st->st_mtim = st->st_ctim = s->ns_time;
	g_mutex_unlock(&s->ns_lock);
}

/* A list of locations with every FSN location replaced by the locations its NSDB gives. */
struct expanded {
	GPtrArray *list; /* struct ff_location *, borrowed from the caller's list or from `keep` */
	GPtrArray *keep; /* the NSDB's answers (GPtrArray *), NULL when no FSN was named */
};

static void expanded_clear(struct expanded *x)
{
	g_ptr_array_unref(x->list);
	if (x->keep)
		g_ptr_array_unref(x->keep);
}

/* Expand `locations` into `x`, asking NSDBs within `timeout` seconds. Returns 0, or the first
 * FSN's error when no location is left. */
static int expand(const struct ff_ctx *c, GPtrArray *locations, double timeout, struct expanded *x)
{
	int rc = 0;
	guint i;

	/* The common case, on the path of every operation on a root that is a referral: no FSN,
	 * nothing to copy. */
	for (i = 0; i < locations->len; i++)
		if (ff_nsdb_is_fsn(&((struct ff_location *)locations->pdata[i])->spec))
			break;
	x->keep = NULL;
	if (i == locations->len) {
		x->list = g_ptr_array_ref(locations);
		return 0;
	}
	x->list = g_ptr_array_new();
	for (i = 0; i < locations->len; i++) {
		struct ff_location *loc = locations->pdata[i];
		g_autofree char *msg = NULL;
		GPtrArray *got;
		int r;

		if (!ff_nsdb_is_fsn(&loc->spec)) {
			g_ptr_array_add(x->list, loc);
			continue;
		}
		r = ff_nsdb_resolve(c->s->nsdb, c->ns, loc, timeout, &got, &msg);
		if (r < 0) {
			g_autofree char *key = g_strdup_printf("nsdb resolve %s", loc->spec.uri);

			ff_log_once(LOG_WARNING, key, 60, "%s", msg);
			if (rc == 0)
				rc = r == -EINVAL ? -EIO : r;
			continue;
		}
		if (!x->keep)
			x->keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
		g_ptr_array_add(x->keep, got);
		for (guint j = 0; j < got->len; j++)
			g_ptr_array_add(x->list, got->pdata[j]);
	}
	return x->list->len > 0 ? 0 : rc;
}

/*
 * The root of a referral's first reachable location: the mount and its root node (the mount's
 * own, kept until unmount: operations on a namespace whose root is a referral make no root()
 * call each). A location that fails with a connection-level error is skipped (and marked
 * down); any other error is the answer.
 */
static int referral_root(const struct ff_ctx *c, const struct ff_referral *ref,
			 struct ff_mount **mntp, ff_node **bnode)
{
	struct expanded x;
	int rc = expand(c, ref->locations, ref->timeout, &x);

	if (rc < 0)
		goto out_clear;
	rc = -EHOSTDOWN;
	for (guint i = 0; i < x.list->len; i++) {
		struct ff_location *loc = x.list->pdata[i];
		struct ff_mount *m =
			ff_mounts_get(c->s->mounts, ref->path, loc, ref->attr_timeout, NULL);

		ff_mount_unref(m); /* a referral's mount: the table keeps it */
		rc = ff_mount_connect(m);
		if (rc == 0)
			rc = ff_mount_root_node(m, c->cred, bnode);
		if (rc == 0) {
			*mntp = m;
			goto out_clear;
		}
		if (!ff_errno_is_connection(rc) && rc != -ENOSYS)
			goto out_clear;
	}
	rc = ff_errno_is_connection(rc) ? -EHOSTDOWN : rc;
out_clear:
	expanded_clear(&x);
	return rc;
}

/* The root of location `m` as an entry, counting a kernel lookup. When the kernel still holds
 * the root's inode and its attributes are fresh, no backend call is made. */
static int enter_mount(const struct ff_ctx *c, struct ff_mount *m, const struct ff_ns_node *ns_node,
		       struct fuse_entry_param *e)
{
	gint64 start = g_get_monotonic_time();
	struct ff_inode *inode = NULL;
	ff_node *bnode;
	struct stat st;
	int rc;

	if (ff_mount_root_attr(m, NULL, 0, &st))
		inode = ff_itab_find_ref(c->s->itab, m, m->index, st.st_dev, st.st_ino);
	if (!inode) {
		rc = ff_gw_root(m, c->cred, &bnode, &st);
		if (rc < 0)
			return rc;
		inode = intern(c->s, m, bnode, &st);
		g_mutex_lock(&m->lock);
		m->root_known = true;
		m->root_st = st;
		m->root_time = start;
		g_mutex_unlock(&m->lock);
	}
	set_ns_node(c, inode, ns_node);
	fill_entry(inode, &st, ff_mount_cache_timeout(m), e);
	return 0;
}

/* A junction must not lead back to a location it is reached from. */
static bool loops(struct ff_mount *from, const struct ff_location *loc)
{
	for (struct ff_mount *m = from; m; m = m->parent)
		if (strcmp(m->loc.spec.uri, loc->spec.uri) == 0)
			return true;
	return from && from->depth >= JUNCTION_DEPTH_MAX;
}

/*
 * Enter the first reachable of the locations of the referral at namespace node `ns_node`, or
 * (`ns_node` NULL) of a junction found inside mount `parent`. A location that fails with a
 * connection-level error is skipped; when none answers the entry fails with EHOSTDOWN.
 */
static int enter(const struct ff_ctx *c, GPtrArray *locations, double attr_timeout,
		 struct ff_mount *parent, const struct ff_ns_node *ns_node,
		 struct fuse_entry_param *e)
{
	const char *ns_path = ns_node ? ns_node->path : NULL;
	struct expanded x;
	/* LDAP work gets what an operation in the location holding the junction may take */
	double timeout = parent				? parent->loc.spec.timeout
			 : ns_node && ns_node->referral ? ns_node->referral->timeout
							: c->ns->timeout;
	int rc = expand(c, locations, timeout, &x);

	if (rc < 0)
		goto out_clear;
	rc = -EHOSTDOWN;
	for (guint i = 0; i < x.list->len; i++) {
		struct ff_location *loc = x.list->pdata[i];
		struct ff_mount *m;

		if (parent && loops(parent, loc)) {
			rc = -ELOOP;
			continue;
		}
		m = ff_mounts_get(c->s->mounts, ns_path, loc, attr_timeout, parent);
		rc = ff_mount_connect(m);
		if (rc == 0)
			rc = enter_mount(c, m, ns_node, e); /* its root inode holds m */
		ff_mount_unref(m);
		if (rc == 0)
			goto out_clear;
		if (!ff_errno_is_connection(rc) && rc != -ENOSYS && rc != -ELOOP)
			goto out_clear;
	}
	rc = ff_errno_is_connection(rc) ? -EHOSTDOWN : rc;
out_clear:
	expanded_clear(&x);
	return rc;
}

/* ---- junctions -------------------------------------------------------------------------- */

/* Read and parse what makes `node` a junction, as the daemon itself. NULL when it is none, or
 * a malformed one (then *msg says why). */
static struct ff_junction *read_junction(struct ff_state *s, struct ff_mount *m, ff_node *node,
					 const struct stat *st, const struct ff_cred *cred,
					 char **msg)
{
	char *buf = g_malloc(FF_JUNCTION_VALUE_MAX);
	struct ff_junction *j = NULL;
	char mode[32];
	ssize_t n, mn;

	if (S_ISLNK(st->st_mode)) {
		n = ff_gw_readlink(m, cred, node, buf, FF_JUNCTION_VALUE_MAX);
		if (n > 0 && ff_junction_is_msdfs(buf, n))
			j = ff_junction_parse_msdfs(buf, n, msg);
		else if (n == -ENAMETOOLONG)
			*msg = g_strdup("msdfs target longer than 65536 bytes");
		goto out_free;
	}
	if (ff_junction_is_fedfs_mode(st->st_mode) && s->uid == 0) {
		n = ff_gw_getxattr(m, cred, node, FF_JUNCTION_XATTR_FEDFS, buf,
				   FF_JUNCTION_VALUE_MAX);
		if (n >= 0) {
			mn = ff_gw_getxattr(m, cred, node, FF_JUNCTION_XATTR_FEDFS_MODE, mode,
					    sizeof(mode));
			j = ff_junction_parse_fedfs(buf, n, mn > 0 ? mode : NULL, mn > 0 ? mn : 0,
						    msg);
			goto out_free;
		}
	}
	if (g_atomic_int_get(&m->no_user_xattrs))
		goto out_free;
	n = ff_gw_getxattr(m, cred, node, FF_JUNCTION_XATTR_FEDFUSE, buf, FF_JUNCTION_VALUE_MAX);
	if (n == -ENOTSUP || n == -EOPNOTSUPP)
		g_atomic_int_set(&m->no_user_xattrs, 1);
	else if (n == -ERANGE)
		*msg = g_strdup(FF_JUNCTION_XATTR_FEDFUSE " larger than 65536 bytes");
	else if (n >= 0)
		j = ff_junction_parse_fedfuse(buf, n, msg);
out_free:
	if (j && !ff_plugin_check_junction(j, msg))
		g_clear_pointer(&j, ff_junction_free);
	g_free(buf);
	return j;
}

/* What the object `node` found in `m` is as a junction (a reference), or NULL. */
static struct ff_jentry *junction_of(const struct ff_ctx *c, struct ff_mount *m, ff_node *node,
				     const struct stat *st)
{
	struct ff_state *s = c->s;
	g_autofree char *msg = NULL;
	struct ff_cred_hold self;
	struct ff_junction *j;
	struct ff_jentry *e;
	double ttl;

	if (S_ISLNK(st->st_mode)) {
		/* a symlink: an msdfs junction, maybe */
	} else if (S_ISDIR(st->st_mode)) {
		if (g_atomic_int_get(&m->no_user_xattrs) &&
		    !(ff_junction_is_fedfs_mode(st->st_mode) && s->uid == 0))
			return NULL;
	} else {
		return NULL;
	}
	e = ff_jcache_get(s->jcache, m->id, st);
	if (!e) {
		ff_cred_self(&self);
		j = read_junction(s, m, node, st, &self.cred, &msg);
		ff_cred_put(&self);
		if (msg) {
			g_autofree char *key = g_strdup_printf("junction %s %ju", m->loc.spec.uri,
							       (uintmax_t)st->st_ino);

			ff_log_once(LOG_WARNING, key, 3600,
				    "%s: malformed junction (inode %ju), shown as it is: %s",
				    m->loc.spec.uri, (uintmax_t)st->st_ino, msg);
		}
		ttl = c->ns->junction_cache_ttl;
		if (j && j->ttl > 0 && j->ttl < ttl)
			ttl = j->ttl;
		e = ff_jcache_put(s->jcache, m->id, st, j, ttl);
	}
	if (!e->junction) {
		ff_jentry_unref(e);
		return NULL;
	}
	return e;
}

static bool location_down(struct ff_state *s, const struct ff_referral *ref,
			  const struct ff_location *loc)
{
	struct ff_mount *m = ff_mounts_get(s->mounts, ref->path, loc, ref->attr_timeout, NULL);

	ff_mount_unref(m); /* a referral's mount: the table keeps it */
	return g_atomic_int_get(&m->state) == FF_MOUNT_DOWN;
}

bool ff_resolve_referral_hidden(struct ff_state *s, const struct ff_referral *ref)
{
	if (ref->on_unreachable != FF_UNREACHABLE_SKIP)
		return false;
	for (guint i = 0; i < ref->locations->len; i++) {
		const struct ff_location *loc = ref->locations->pdata[i];
		g_autoptr(GPtrArray) known = NULL;
		bool nsdb_down = false;

		if (!ff_nsdb_is_fsn(&loc->spec)) {
			if (!location_down(s, ref, loc))
				return false;
			continue;
		}
		/* an FSN: down when its NSDB is, or when every location it gave is */
		known = ff_nsdb_cached(s->nsdb, loc, &nsdb_down);
		if (nsdb_down)
			continue;
		if (!known)
			return false; /* not asked yet */
		for (guint j = 0; j < known->len; j++)
			if (!location_down(s, ref, known->pdata[j]))
				return false;
	}
	return true;
}

int ff_target_get(const struct ff_ctx *c, struct ff_inode *inode, struct ff_target *t)
{
	const struct ff_ns_node *root;
	int rc = 0;

	*t = (struct ff_target){ inode->mnt, inode->bnode };
	if (inode->ino != FF_INO_ROOT)
		return inode->mnt ? ff_mount_usable(inode->mnt) : 0;
	root = ff_namespace_find(c->ns, "/");
	if (root && root->referral)
		rc = referral_root(c, root->referral, &t->mnt, &t->bnode);
	return rc;
}

void ff_target_put(struct ff_state *s, struct ff_target *t)
{
	t->mnt = NULL;
	t->bnode = NULL;
}

bool ff_resolve_is_ns_child(const struct ff_ctx *c, struct ff_inode *parent, const char *name)
{
	return ns_child(ff_resolve_ns_node(c, parent), name) != NULL;
}

static int lookup_backend(const struct ff_ctx *c, struct ff_target *t, const char *name,
			  ff_node **bnode, struct stat *st)
{
	return ff_gw_lookup(t->mnt, c->cred, t->bnode, name, bnode, st);
}

/* `path` names a namespace node: a referral, or a directory on the way to one. */
static int lookup_ns(const struct ff_ctx *c, struct ff_target *parent,
		     const struct ff_ns_node *node, const char *name, struct fuse_entry_param *e)
{
	struct ff_inode *inode;
	ff_node *bnode;
	struct stat st;
	int rc;

	if (node->referral) {
		rc = enter(c, node->referral->locations, node->referral->attr_timeout, NULL, node,
			   e);
		/* Fail open: while no location answers, the referral is not there. */
		if (rc == -EHOSTDOWN && node->referral->on_unreachable == FF_UNREACHABLE_SKIP)
			rc = -ENOENT;
		return rc;
	}
	/* A directory that leads to nested referrals: the location's own directory when it has
	 * one, else a virtual directory. */
	if (parent->mnt) {
		rc = lookup_backend(c, parent, name, &bnode, &st);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			inode = intern(c->s, parent->mnt, bnode, &st);
			set_ns_node(c, inode, node);
			fill_entry(inode, &st, ff_mount_cache_timeout(parent->mnt), e);
			return 0;
		}
		if (rc == 0)
			ff_gw_forget(parent->mnt, bnode);
		else if (rc != -ENOENT)
			return rc;
	}
	inode = ff_itab_intern_virtual(c->s->itab, 0, node->path);
	set_ns_node(c, inode, node);
	ff_virtual_stat(c, inode, &st);
	fill_entry(inode, &st, c->ns->attr_timeout, e);
	return 0;
}

int ff_resolve_found(const struct ff_ctx *c, struct ff_mount *mnt, ff_node *bnode,
		     const struct stat *st, bool off_tree, struct fuse_entry_param *e,
		     bool *junction)
{
	struct ff_jentry *je = junction_of(c, mnt, bnode, st);
	struct ff_inode *inode;
	int rc;

	if (junction)
		*junction = je != NULL;
	if (je) {
		ff_gw_forget(mnt, bnode);
		rc = enter(c, je->junction->locations, mnt->attr_timeout, mnt, NULL, e);
		ff_jentry_unref(je);
		return rc;
	}
	inode = intern(c->s, mnt, bnode, st);
	if (off_tree) /* no longer (or never) part of the namespace tree */
		set_ns_node(c, inode, NULL);
	fill_entry(inode, st, ff_mount_cache_timeout(mnt), e);
	return 0;
}

/*
 * How long the kernel may take a name a location does not have as absent. On a network
 * location, as long as it takes a name it has as present (attr-timeout): the kernel's NFS client
 * keeps such names too. It saves a round trip to the server for each file a program creates
 * after looking for it (git's checkout, make, an editor's backup). Created through the mount,
 * the name shows at once; created by others, once the timeout has passed, as their other changes
 * do. A local location's names are not kept absent: its watch would have to tell every
 * creation in time, and a lookup there costs little.
 */
static double negative_timeout(const struct ff_mount *mnt)
{
	return (mnt->be->caps & FF_CAP_LOCAL) ? 0 : mnt->attr_timeout;
}

int ff_resolve_lookup(const struct ff_ctx *c, struct ff_inode *parent, const char *name,
		      struct fuse_entry_param *e)
{
	const struct ff_ns_node *dir, *node;
	double absent = 0, keep; /* how long an absent name is kept so: this one, any */
	uint64_t gen;
	bool in_tree;
	struct ff_target t;
	ff_node *bnode;
	struct stat st;
	int rc;

	memset(e, 0, sizeof(*e));
	if (ff_control_is_control(parent->ino) ||
	    (parent->ino == FF_INO_ROOT && strcmp(name, FF_CONTROL_NAME) == 0))
		return ff_control_lookup(c->s, parent->ino, name, e);

	rc = ff_target_get(c, parent, &t);
	if (rc < 0)
		return rc;
	dir = ff_resolve_ns_node(c, parent);
	node = ns_child(dir, name);
	if (node) {
		rc = lookup_ns(c, &t, node, name, e);
		goto out_put;
	}
	g_mutex_lock(&parent->lock);
	in_tree = parent->ns_ref != NULL; /* in this namespace's tree or an earlier one's */
	g_mutex_unlock(&parent->lock);
	if (!t.mnt) {
		rc = -ENOENT;
		goto out_put;
	}
	keep = negative_timeout(t.mnt);
	if (keep > 0 && ff_absent_known(c->s->absent, parent->ino, name)) {
		rc = -ENOENT; /* found absent a moment ago (absent.h) */
		absent = keep;
		goto out_put;
	}
	gen = ff_absent_gen(c->s->absent);
	rc = lookup_backend(c, &t, name, &bnode, &st);
	if (rc == 0) {
		rc = ff_resolve_found(c, t.mnt, bnode, &st, in_tree, e, NULL);
	} else if (rc == -ENOENT) {
		absent = keep;
		ff_absent_note(c->s->absent, parent->ino, name, gen, keep);
	}
out_put:
	ff_target_put(c->s, &t);
	if (rc == -ENOENT)
		e->entry_timeout = absent;
	return rc;
}

void ff_resolve_fix_attr(struct ff_inode *inode, struct stat *st)
{
	ff_inode_note_mode(inode, st->st_mode);
	g_mutex_lock(&inode->lock);
	if (inode->gone && inode->gone->hidden_name) /* unlinked while open, kept hidden */
		st->st_nlink = 0;
	g_mutex_unlock(&inode->lock);
}

int ff_resolve_getattr(const struct ff_ctx *c, struct ff_inode *inode, ff_fh *fh, struct stat *st,
		       double *timeout)
{
	struct ff_target t;
	bool removed;
	int rc;

	if (ff_control_is_control(inode->ino))
		return ff_control_getattr(c->s, inode->ino, st, timeout);
	g_mutex_lock(&inode->lock);
	removed = inode->gone && inode->gone->removed;
	if (removed) {
		*st = inode->gone->removed_st;
		*timeout = 0;
	}
	g_mutex_unlock(&inode->lock);
	if (removed)
		return 0;
	rc = ff_target_get(c, inode, &t);
	if (rc < 0)
		return rc;
	if (!t.mnt) {
		ff_virtual_stat(c, inode, st);
		*timeout = c->ns->attr_timeout;
		return 0;
	}
	/* A location's root (a referral's, a junction's): what is known of it, at once. */
	if (!fh && inode->type == S_IFDIR &&
	    ff_mount_root_attr(t.mnt, &inode->bino, inode->dev, st))
		rc = 0;
	else
		rc = ff_gw_getattr(t.mnt, c->cred, t.bnode, fh, st);
	if (rc == 0) { /* else `st` holds nothing */
		st->st_ino = inode->ino;
		ff_resolve_fix_attr(inode, st);
	}
	*timeout = ff_mount_cache_timeout(t.mnt);
	ff_target_put(c->s, &t);
	return rc;
}
