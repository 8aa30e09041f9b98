/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * namespace_tree.c - the namespace as a tree (namespace.h): built once from the referrals a
 * namespace file names, then only read: walked by path, asked which referral serves a path,
 * described for /.fedfuse/namespace. namespace.c parses the file.
 */
#include <string.h>

#include "fedfuse/namespace.h"
#include "fedfuse/namespace_tree.h"
#include "fedfuse/nsdb.h"

struct ff_ns_node *ff_ns_node_add(struct ff_namespace *ns, struct ff_ns_node *parent,
				  const char *name)
{
	struct ff_ns_node *node = g_new0(struct ff_ns_node, 1);

	node->name = g_strdup(name);
	if (!parent)
		node->path = g_strdup("/");
	else if (!parent->parent)
		node->path = g_strconcat("/", name, NULL);
	else
		node->path = g_strconcat(parent->path, "/", name, NULL);
	node->parent = parent;
	node->children = g_hash_table_new(g_str_hash, g_str_equal);
	node->child_list = g_ptr_array_new();
	g_ptr_array_add(ns->nodes, node);
	node->id = ns->nodes->len;
	if (parent) {
		g_hash_table_insert(parent->children, node->name, node);
		g_ptr_array_add(parent->child_list, node);
	}
	return node;
}

void ff_ns_node_free(gpointer p)
{
	struct ff_ns_node *node = p;

	g_free(node->name);
	g_free(node->path);
	g_hash_table_unref(node->children);
	g_ptr_array_unref(node->child_list);
	g_free(node);
}

static gint node_cmp(gconstpointer a, gconstpointer b)
{
	const struct ff_ns_node *x = *(struct ff_ns_node *const *)a;
	const struct ff_ns_node *y = *(struct ff_ns_node *const *)b;

	return strcmp(x->name, y->name);
}

/* Make a node for every referral and every ancestor of one (virtual directories). */
void ff_namespace_build_tree(struct ff_namespace *ns)
{
	for (guint i = 0; i < ns->referrals->len; i++) {
		struct ff_referral *r = g_ptr_array_index(ns->referrals, i);
		struct ff_ns_node *node = ns->root;
		char **names;

		if (strcmp(r->path, "/") == 0) {
			node->referral = r;
			continue;
		}
		names = g_strsplit(r->path + 1, "/", -1);
		for (char **name = names; *name; name++) {
			struct ff_ns_node *child = g_hash_table_lookup(node->children, *name);

			node = child ? child : ff_ns_node_add(ns, node, *name);
		}
		node->referral = r;
		g_strfreev(names);
	}
	for (guint i = 0; i < ns->nodes->len; i++) {
		struct ff_ns_node *node = g_ptr_array_index(ns->nodes, i);

		g_ptr_array_sort(node->child_list, node_cmp);
	}
}

struct ff_namespace *ff_namespace_ref(struct ff_namespace *ns)
{
	if (ns)
		g_atomic_int_inc(&ns->refcount);
	return ns;
}

void ff_namespace_unref(struct ff_namespace *ns)
{
	if (!ns || !g_atomic_int_dec_and_test(&ns->refcount))
		return;
	g_ptr_array_unref(ns->nodes);
	g_ptr_array_unref(ns->referrals);
	if (ns->nsdbs)
		g_hash_table_unref(ns->nsdbs);
	g_free(ns->file);
	g_free(ns);
}

const struct ff_ns_node *ff_ns_node_child(const struct ff_ns_node *node, const char *name)
{
	if (!node || !name)
		return NULL;
	return g_hash_table_lookup(node->children, name);
}

/* Walk `path` from the root as far as the tree goes. Returns the deepest node reached and sets
 * *end to the unconsumed part of `path`. `visit` sees every node passed, with the rest after it. */
static const struct ff_ns_node *walk(const struct ff_namespace *ns, const char *path,
				     const char **end,
				     void (*visit)(const struct ff_ns_node *, const char *, void *),
				     void *data)
{
	const struct ff_ns_node *node = ns->root;
	const char *p = path + 1;
	char name[NS_NAME_MAX + 1];

	if (visit)
		visit(node, p, data);
	while (*p != '\0') {
		size_t n = strcspn(p, "/");
		const struct ff_ns_node *child;

		if (n == 0 || n > NS_NAME_MAX)
			break;
		memcpy(name, p, n);
		name[n] = '\0';
		child = g_hash_table_lookup(node->children, name);
		if (!child)
			break;
		node = child;
		p += n;
		if (*p == '/')
			p++;
		if (visit)
			visit(node, p, data);
	}
	*end = p;
	return node;
}

const struct ff_ns_node *ff_namespace_find(const struct ff_namespace *ns, const char *path)
{
	const struct ff_ns_node *node;
	const char *end;

	if (!ns || !path || path[0] != '/')
		return NULL;
	node = walk(ns, path, &end, NULL, NULL);
	/* a trailing '/' was skipped by walk(): "/a/" is not a normalised name of "/a" */
	if (*end != '\0' || (end > path + 1 && end[-1] == '/'))
		return NULL;
	return node;
}

struct resolve_state {
	const struct ff_referral *referral;
	const char *rest;
};

static void resolve_visit(const struct ff_ns_node *node, const char *rest, void *data)
{
	struct resolve_state *st = data;

	if (node->referral) {
		st->referral = node->referral;
		st->rest = rest;
	}
}

const struct ff_referral *ff_namespace_resolve(const struct ff_namespace *ns, const char *path,
					       const char **rest)
{
	struct resolve_state st = { NULL, NULL };
	const char *end;

	if (!ns || !path || path[0] != '/')
		return NULL;
	walk(ns, path, &end, resolve_visit, &st);
	if (st.referral && rest)
		*rest = st.rest;
	return st.referral;
}

/* ---- describe ----------------------------------------------------------------------------- */

/* Seconds in the shortest form that reads back the same. */
static void append_seconds(GString *out, const char *key, double d)
{
	char buf[G_ASCII_DTOSTR_BUF_SIZE];

	g_ascii_formatd(buf, sizeof(buf), "%.15g", d);
	if (g_ascii_strtod(buf, NULL) != d)
		g_ascii_formatd(buf, sizeof(buf), "%.17g", d);
	g_string_append_printf(out, "%s=%s", key, buf);
}

static void describe_node(GString *out, const struct ff_ns_node *node)
{
	const struct ff_referral *r = node->referral;

	g_string_append(out, node->path);
	if (!r) {
		g_string_append(out, " virtual\n");
	} else {
		const struct ff_location_spec *spec =
			&((const struct ff_location *)g_ptr_array_index(r->locations, 0))->spec;

		g_string_append(out, " referral locations=");
		for (guint i = 0; i < r->locations->len; i++) {
			const struct ff_location *loc = g_ptr_array_index(r->locations, i);

			if (i > 0)
				g_string_append_c(out, ';');
			/* as the file would write it: a ';' inside a URI is "\;" */
			for (const char *c = loc->spec.uri; *c; c++) {
				if (*c == ';')
					g_string_append_c(out, '\\');
				g_string_append_c(out, *c);
			}
		}
		g_string_append_printf(out, " read-only=%s ", r->read_only ? "true" : "false");
		append_seconds(out, "timeout", r->timeout);
		g_string_append_c(out, ' ');
		append_seconds(out, "attr-timeout", r->attr_timeout);
		g_string_append_printf(out, " watch=%s on-unreachable=%s",
				       r->watch ? "true" : "false",
				       r->on_unreachable == FF_UNREACHABLE_SKIP ? "skip" : "error");
		if (r->credentials)
			g_string_append_printf(out, " credentials=%s", r->credentials);
		if (r->per_user)
			g_string_append(out, " identity=per-user");
		if (r->per_user && r->credentials_dir)
			g_string_append_printf(out, " credentials-dir=%s", r->credentials_dir);
		if (r->per_user && r->user_credentials)
			g_string_append_printf(out, " user-credentials=%s", r->user_credentials);
		if (r->krb5)
			g_string_append_printf(out, " sec=krb5 krb5-ccache=%s",
					       r->krb5_ccache ? r->krb5_ccache : FF_KRB5_CCACHE);
		if (r->write_behind >= 0)
			g_string_append_printf(out, " write-behind=%d", r->write_behind);
		if (r->read_ahead >= 0)
			g_string_append_printf(out, " read-ahead=%d", r->read_ahead);
		if (spec->uid_set)
			g_string_append_printf(out, " uid=%u", (unsigned int)spec->uid);
		if (spec->gid_set)
			g_string_append_printf(out, " gid=%u", (unsigned int)spec->gid);
		g_string_append_printf(out, " file-mode=%04o dir-mode=%04o\n",
				       (unsigned int)spec->file_mode, (unsigned int)spec->dir_mode);
	}
	for (guint i = 0; i < node->child_list->len; i++)
		describe_node(out, g_ptr_array_index(node->child_list, i));
}

/* The [nsdb ...] groups, by name. */
static void describe_nsdbs(GString *out, const struct ff_namespace *ns)
{
	static const char *const security[] = { "none", "starttls", "ldaps" };
	g_autoptr(GList)
		names = g_list_sort(g_hash_table_get_keys(ns->nsdbs), (GCompareFunc)strcmp);

	for (GList *n = names; n; n = n->next) {
		const struct ff_nsdb_conf *conf = g_hash_table_lookup(ns->nsdbs, n->data);

		g_string_append_printf(out, "nsdb %s security=%s", conf->name,
				       security[conf->security]);
		if (conf->ca_file)
			g_string_append_printf(out, " ca-file=%s", conf->ca_file);
		for (guint i = 1; i < conf->servers->len; i++)
			g_string_append_printf(out, "%s%s", i > 1 ? ";" : " replicas=",
					       (char *)conf->servers->pdata[i]);
		g_string_append_c(out, '\n');
	}
}

char *ff_namespace_describe(const struct ff_namespace *ns)
{
	GString *out = g_string_new(NULL);

	g_string_append_printf(out, "file=%s\n", ns->file);
	append_seconds(out, "junction-cache-ttl", ns->junction_cache_ttl);
	g_string_append_c(out, '\n');
	append_seconds(out, "attr-timeout", ns->attr_timeout);
	g_string_append_c(out, '\n');
	append_seconds(out, "timeout", ns->timeout);
	g_string_append_printf(out, "\nwatch=%s\n", ns->watch ? "true" : "false");
	append_seconds(out, "nsdb-stale-grace", ns->nsdb_stale_grace);
	g_string_append_c(out, '\n');
	if (ns->write_behind >= 0)
		g_string_append_printf(out, "write-behind=%d\n", ns->write_behind);
	if (ns->read_ahead >= 0)
		g_string_append_printf(out, "read-ahead=%d\n", ns->read_ahead);
	describe_nsdbs(out, ns);
	describe_node(out, ns->root);
	return g_string_free(out, FALSE);
}
