/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namespace.h - the parsed namespace file (DESIGN §3): a tree of virtual directories and
 * referrals. A namespace is immutable once loaded; a reload builds a new one and swaps it in,
 * so readers hold a reference (ff_namespace_ref) while they use it.
 */
#ifndef FEDFUSE_NAMESPACE_H
#define FEDFUSE_NAMESPACE_H

#include <glib.h>
#include <stdbool.h>

#include "backends/backend.h"
#include "fedfuse/location.h"

enum ff_unreachable { FF_UNREACHABLE_ERROR, FF_UNREACHABLE_SKIP };

struct ff_referral {
	char *path;	      /* absolute namespace path, "/" possible */
	GPtrArray *locations; /* struct ff_location *, in order of preference; never empty */
	bool read_only;
	double timeout;	     /* seconds */
	double attr_timeout; /* seconds */
	bool watch;	     /* watch= as written; a location's spec.watch says if it is */
	enum ff_unreachable on_unreachable;
	char *credentials;	/* file path or NULL */
	bool per_user;		/* identity=per-user */
	char *credentials_dir;	/* credentials-dir=, or NULL */
	char *user_credentials; /* user-credentials=, or NULL */
	bool krb5;		/* sec=krb5 (implies per_user) */
	char *krb5_ccache;	/* krb5-ccache=, or NULL */
	int write_behind;	/* write-behind= in MiB, or -1: not given */
	int read_ahead;		/* read-ahead= in MiB, or -1: not given */
	int line;		/* line of the [group] */
};

/* A node of the namespace tree: the root, every referral and every ancestor of a referral. */
struct ff_ns_node {
	char *name; /* one component; "" for the root */
	char *path; /* absolute */
	struct ff_ns_node *parent;
	GHashTable *children;	      /* name -> struct ff_ns_node *, may be empty */
	GPtrArray *child_list;	      /* the same children, sorted by name, for readdir */
	struct ff_referral *referral; /* non-NULL when this path is a referral */
	uint64_t id;		      /* unique within the namespace, >= 1; the root is 1 */
};

struct ff_namespace {
	gint refcount;
	char *file;
	double junction_cache_ttl; /* seconds; 0 disables */
	double attr_timeout;	   /* seconds */
	double timeout;		   /* seconds */
	bool watch;		   /* referrals' default */
	int write_behind;	   /* referrals' default (MiB), or -1: not given */
	int read_ahead;		   /* referrals' default (MiB), or -1: not given */
	double nsdb_stale_grace;   /* seconds an NSDB answer serves past its TTL when no
				    * server answers */
	GHashTable *nsdbs;	   /* "host:port" -> struct ff_nsdb_conf * ([nsdb ...] groups) */
	struct ff_ns_node *root;
	GPtrArray *referrals; /* struct ff_referral *, in file order */
	GPtrArray *nodes;     /* every node, indexed by id - 1 */
};

/* Called for each location while loading, to let its backend validate it. Returns 0, or -errno
 * with *msg set (g_malloc'd) to a sentence naming the value at fault. */
typedef int (*ff_location_check_fn)(const struct ff_location_spec *spec, void *data, char **msg);

/* Load and validate a namespace file. On any error returns NULL and sets *err to a message of
 * the form "FILE:LINE: message" (LINE 0 when the file as a whole cannot be used: unreadable,
 * too large) (G_FILE_ERROR / G_KEY_FILE_ERROR domains). `check` (ff_plugin_check_location() in
 * the daemon) may be NULL: locations then pass with the rules every URI shares only. */
struct ff_namespace *ff_namespace_load(const char *file, ff_location_check_fn check, void *data,
				       GError **err);

struct ff_namespace *ff_namespace_ref(struct ff_namespace *ns);
void ff_namespace_unref(struct ff_namespace *ns);

/* The node at exactly `path` (absolute, normalised), or NULL. */
const struct ff_ns_node *ff_namespace_find(const struct ff_namespace *ns, const char *path);

/* The child `name` of `node`, or NULL. */
const struct ff_ns_node *ff_ns_node_child(const struct ff_ns_node *node, const char *name);

/* The referral serving `path` by longest-prefix match, or NULL when `path` lies only in virtual
 * directories. *rest (if non-NULL) is set to the part of `path` below the referral ("" or
 * "a/b"), pointing into `path`. */
const struct ff_referral *ff_namespace_resolve(const struct ff_namespace *ns, const char *path,
					       const char **rest);

/* Write the namespace in force as text (the /.fedfuse/namespace control file). */
char *ff_namespace_describe(const struct ff_namespace *ns);

#endif /* FEDFUSE_NAMESPACE_H */
