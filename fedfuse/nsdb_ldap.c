/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nsdb_ldap.c - reading an FSN and its FSLs from an NSDB with OpenLDAP's client library, as
 * RFC 7532 lays them out: the root DSE's naming contexts, the one carrying
 * fedfsNsdbContainerInfo names the NSDB container entry (NCE), the FSN is
 * fedfsFsnUuid=UUID,NCE and its FSLs are entries of class fedfsFsl below it. Every wait is
 * bounded by the caller's deadline; data from the directory is untrusted and checked.
 */
#include <errno.h>
#include <ldap.h>
#include <stdlib.h>
#include <string.h>

#include "fedfuse/nsdb.h"

struct ff_nsdb_conn {
	LDAP *ld;
	char *server;
	char *nce; /* cached fedfsNceDN */
};

static guint64 searches; /* atomic */

guint64 ff_nsdb_searches(void)
{
	return __atomic_load_n(&searches, __ATOMIC_RELAXED);
}

/* The time left before `deadline`, at least 1 ms; false when it has passed. */
static bool time_left(gint64 deadline, struct timeval *tv)
{
	gint64 left = deadline - g_get_monotonic_time();

	if (left <= 0)
		return false;
	if (left < 1000)
		left = 1000;
	tv->tv_sec = (time_t)(left / G_USEC_PER_SEC);
	tv->tv_usec = (suseconds_t)(left % G_USEC_PER_SEC);
	return true;
}

static int ldap_to_errno(int rc)
{
	switch (rc) {
	case LDAP_SERVER_DOWN:
	case LDAP_CONNECT_ERROR:
	case LDAP_UNAVAILABLE:
	case LDAP_BUSY:
		return -EHOSTDOWN;
	case LDAP_TIMEOUT:
	case LDAP_TIMELIMIT_EXCEEDED:
		return -ETIMEDOUT;
	case LDAP_NO_SUCH_OBJECT:
		return -ENOENT;
	case LDAP_INVALID_CREDENTIALS:
	case LDAP_INSUFFICIENT_ACCESS:
	case LDAP_INAPPROPRIATE_AUTH:
	case LDAP_STRONG_AUTH_REQUIRED:
	case LDAP_CONFIDENTIALITY_REQUIRED:
		return -EACCES;
	case LDAP_ALREADY_EXISTS:
		return -EEXIST;
	case LDAP_NOT_ALLOWED_ON_NONLEAF:
		return -ENOTEMPTY;
	case LDAP_OBJECT_CLASS_VIOLATION:
	case LDAP_INVALID_SYNTAX:
	case LDAP_UNDEFINED_TYPE:
	case LDAP_CONSTRAINT_VIOLATION:
	case LDAP_INVALID_DN_SYNTAX:
	case LDAP_NAMING_VIOLATION:
		return -EINVAL;
	case LDAP_UNWILLING_TO_PERFORM:
		return -EPERM;
	case LDAP_SIZELIMIT_EXCEEDED:
		return -E2BIG;
	default:
		return -EIO;
	}
}

const char *ff_nsdb_conn_server(const struct ff_nsdb_conn *conn)
{
	return conn->server;
}

void ff_nsdb_close(struct ff_nsdb_conn *conn)
{
	if (!conn)
		return;
	if (conn->ld)
		ldap_unbind_ext_s(conn->ld, NULL, NULL);
	g_free(conn->server);
	g_free(conn->nce);
	g_free(conn);
}

static int fail_ldap(struct ff_nsdb_conn *conn, int rc, const char *what, char **msg)
{
	*msg = g_strdup_printf("NSDB %s: %s: %s", conn->server, what, ldap_err2string(rc));
	return ldap_to_errno(rc);
}

/* What the server said of the last operation's failure besides its result code, as
 * " (TEXT)" (made printable), or "" when it said nothing. g_malloc'd. */
static char *diagnostic(struct ff_nsdb_conn *conn)
{
	char *text = NULL, *shown, *out;

	if (ldap_get_option(conn->ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &text) != LDAP_OPT_SUCCESS ||
	    !text || !*text) {
		ldap_memfree(text);
		return g_strdup("");
	}
	shown = ff_shown(text);
	ldap_memfree(text);
	out = g_strdup_printf(" (%s)", shown);
	g_free(shown);
	return out;
}

/* A TLS connection (ldaps, or StartTLS) that failed: the error, with what libldap said of the
 * handshake. With GnuTLS, a certificate refused (not valid for the server's name, signed by no
 * CA trusted, or out of its dates) reads "(unknown error code)": libldap hands its own -1 to
 * gnutls_strerror(), over its own message of a name that does not match. */
static int fail_tls(struct ff_nsdb_conn *conn, const struct ff_nsdb_conf *conf, int rc,
		    const char *what, char **msg)
{
	g_autofree char *why = NULL, *ca = conf->ca_file ? ff_shown(conf->ca_file) : NULL;
	char *text = NULL;

	if (ldap_get_option(conn->ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &text) != LDAP_OPT_SUCCESS)
		text = NULL;
	if (text && strcmp(text, "(unknown error code)") == 0)
		why = g_strdup_printf(": the server's certificate is refused (not valid for its "
				      "name, not signed by %s%s, or out of its dates)",
				      ca ? "a CA of ca-file " : "a CA the system trusts",
				      ca ? ca : "");
	else if (text && *text)
		why = diagnostic(conn);
	ldap_memfree(text);
	*msg = g_strdup_printf("NSDB %s: %s: %s%s", conn->server, what, ldap_err2string(rc),
			       why ? why : "");
	return ldap_to_errno(rc);
}

/* The CAs the connection trusts: those of ca-file alone, or the system's as libldap's
 * configuration names them (TLS_CACERT and TLS_CACERTDIR of ldap.conf, or LDAPTLS_CACERT and
 * LDAPTLS_CACERTDIR in the environment), the CAs ldapsearch trusts. A new handle holds none of
 * the global options' file names (ldap_create() clears them, for the handle to share the
 * global TLS context), so the context of its own that LDAP_OPT_X_TLS_NEWCTX makes from them
 * would trust no CA at all: the system's names are copied. */
static int set_cas(LDAP *ld, const struct ff_nsdb_conf *conf)
{
	static const int opts[] = { LDAP_OPT_X_TLS_CACERTFILE, LDAP_OPT_X_TLS_CACERTDIR };
	int rc = LDAP_OPT_SUCCESS;

	if (conf->ca_file) {
		/* "" clears: no CA directory is trusted besides the file */
		rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTDIR, "");
		if (rc == LDAP_OPT_SUCCESS)
			rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, conf->ca_file);
		return rc;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(opts) && rc == LDAP_OPT_SUCCESS; i++) {
		char *value = NULL;

		rc = ldap_get_option(NULL, opts[i], &value);
		if (rc == LDAP_OPT_SUCCESS && value)
			rc = ldap_set_option(ld, opts[i], value);
		ldap_memfree(value);
	}
	return rc;
}

/* TLS settings of the connection's own (the global ones are left alone): the server's
 * certificate must be valid for its name and signed by a CA set_cas() names. */
static int setup_tls(struct ff_nsdb_conn *conn, const struct ff_nsdb_conf *conf, char **msg)
{
	int demand = LDAP_OPT_X_TLS_DEMAND, zero = 0, rc;

	rc = ldap_set_option(conn->ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand);
	if (rc == LDAP_OPT_SUCCESS)
		rc = set_cas(conn->ld, conf);
	if (rc == LDAP_OPT_SUCCESS)
		rc = ldap_set_option(conn->ld, LDAP_OPT_X_TLS_NEWCTX, &zero);
	if (rc != LDAP_OPT_SUCCESS)
		return fail_ldap(conn, rc, "TLS settings", msg);
	return 0;
}

int ff_nsdb_connect(const char *server, const struct ff_nsdb_conf *conf, gint64 deadline,
		    const char *bind_dn, const char *password, struct ff_nsdb_conn **out,
		    char **msg)
{
	enum ff_nsdb_security sec = conf ? conf->security : FF_NSDB_SEC_NONE;
	struct ff_nsdb_conn *conn = g_new0(struct ff_nsdb_conn, 1);
	g_autofree char *uri = NULL;
	int v3 = LDAP_VERSION3, rc;
	struct timeval tv;

	conn->server = g_strdup(server);
	uri = g_strdup_printf("%s://%s", sec == FF_NSDB_SEC_LDAPS ? "ldaps" : "ldap", server);
	rc = ldap_initialize(&conn->ld, uri);
	if (rc != LDAP_SUCCESS) {
		rc = fail_ldap(conn, rc, "bad address", msg);
		goto out_close;
	}
	ldap_set_option(conn->ld, LDAP_OPT_PROTOCOL_VERSION, &v3);
	ldap_set_option(conn->ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
	if (!time_left(deadline, &tv)) {
		*msg = g_strdup_printf("NSDB %s: no time left to connect", server);
		rc = -ETIMEDOUT;
		goto out_close;
	}
	ldap_set_option(conn->ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
	ldap_set_option(conn->ld, LDAP_OPT_TIMEOUT, &tv);
	if (sec != FF_NSDB_SEC_NONE) {
		rc = setup_tls(conn, conf, msg);
		if (rc < 0)
			goto out_close;
	}
	rc = ldap_connect(conn->ld);
	if (rc != LDAP_SUCCESS) {
		if (sec == FF_NSDB_SEC_LDAPS)
			rc = fail_tls(conn, conf, rc, "connect", msg);
		else
			rc = fail_ldap(conn, rc, "connect", msg);
		goto out_close;
	}
	if (sec == FF_NSDB_SEC_STARTTLS) {
		rc = ldap_start_tls_s(conn->ld, NULL, NULL);
		if (rc != LDAP_SUCCESS) {
			rc = fail_tls(conn, conf, rc, "StartTLS", msg);
			goto out_close;
		}
	}
	if (bind_dn) {
		struct berval cred = { password ? strlen(password) : 0, (char *)password };

		rc = ldap_sasl_bind_s(conn->ld, bind_dn, LDAP_SASL_SIMPLE, &cred, NULL, NULL, NULL);
		if (rc != LDAP_SUCCESS) {
			g_autofree char *what = ff_shown(bind_dn), *why = diagnostic(conn);

			*msg = g_strdup_printf("NSDB %s: bind as %s: %s%s", server, what,
					       ldap_err2string(rc), why);
			rc = ldap_to_errno(rc);
			goto out_close;
		}
	}
	*out = conn;
	return 0;

out_close:
	ff_nsdb_close(conn);
	return rc;
}

/* One search, bounded by `deadline` and by `sizelimit` entries (LDAP_NO_LIMIT: the server's
 * limit only; more is -E2BIG), counted. *res is the caller's to ldap_msgfree(). */
static int search(struct ff_nsdb_conn *conn, const char *base, int scope, const char *filter,
		  char **attrs, gint64 deadline, int sizelimit, LDAPMessage **res, char **msg)
{
	struct timeval tv;
	int rc;

	*res = NULL;
	if (!time_left(deadline, &tv)) {
		*msg = g_strdup_printf("NSDB %s: timed out", conn->server);
		return -ETIMEDOUT;
	}
	__atomic_fetch_add(&searches, 1, __ATOMIC_RELAXED);
	rc = ldap_search_ext_s(conn->ld, base, scope, filter, attrs, 0, NULL, NULL, &tv, sizelimit,
			       res);
	if (rc == LDAP_SUCCESS)
		return 0;
	if (*res)
		ldap_msgfree(*res);
	*res = NULL;
	if (rc == LDAP_NO_SUCH_OBJECT) {
		*msg = g_strdup_printf("NSDB %s: no entry %s", conn->server, base);
		return -ENOENT;
	}
	return fail_ldap(conn, rc, "search", msg);
}

/* The first value of `attr` as a string (g_malloc'd), or NULL when it has none. A value that
 * holds NUL bytes or control characters reads as *bad. */
static char *value_of(LDAP *ld, LDAPMessage *e, const char *attr, bool *bad)
{
	struct berval **v = ldap_get_values_len(ld, e, attr);
	char *s = NULL;

	if (!v)
		return NULL;
	if (v[0] && !ff_has_control_char(v[0]->bv_val, v[0]->bv_len) &&
	    !memchr(v[0]->bv_val, '\0', v[0]->bv_len))
		s = g_strndup(v[0]->bv_val, v[0]->bv_len);
	else
		*bad = true;
	ldap_value_free_len(v);
	return s;
}

static bool has_class(LDAP *ld, LDAPMessage *e, const char *cls)
{
	struct berval **v = ldap_get_values_len(ld, e, "objectClass");
	bool found = false;

	for (int i = 0; v && v[i]; i++)
		if (v[i]->bv_len == strlen(cls) &&
		    g_ascii_strncasecmp(v[i]->bv_val, cls, v[i]->bv_len) == 0)
			found = true;
	ldap_value_free_len(v);
	return found;
}

/* An INTEGER attribute within [lo, hi]; `dflt` when absent. False when malformed. */
static bool int_of(LDAP *ld, LDAPMessage *e, const char *attr, gint64 lo, gint64 hi, gint64 dflt,
		   gint64 *out)
{
	bool bad = false;
	g_autofree char *s = value_of(ld, e, attr, &bad);
	char *end;

	*out = dflt;
	if (bad)
		return false;
	if (!s)
		return true;
	errno = 0;
	*out = g_ascii_strtoll(s, &end, 10);
	return s[0] != '\0' && *end == '\0' && errno == 0 && *out >= lo && *out <= hi;
}

void ff_nsdb_conn_set_nce(struct ff_nsdb_conn *conn, const char *nce)
{
	g_free(conn->nce);
	conn->nce = g_strdup(nce);
}

const char *ff_nsdb_conn_nce(const struct ff_nsdb_conn *conn)
{
	return conn->nce;
}

int ff_nsdb_nce(struct ff_nsdb_conn *conn, gint64 deadline, const char **nce, char **msg)
{
	char *dse_attrs[] = { "namingContexts", NULL }, *nce_attrs[] = { "fedfsNceDN", NULL };
	struct berval **ctx = NULL;
	LDAPMessage *res = NULL, *e;
	int rc;

	if (conn->nce) {
		*nce = conn->nce;
		return 0;
	}
	rc = search(conn, "", LDAP_SCOPE_BASE, "(objectClass=*)", dse_attrs, deadline, 1, &res,
		    msg);
	if (rc < 0)
		return rc;
	e = ldap_first_entry(conn->ld, res);
	if (e)
		ctx = ldap_get_values_len(conn->ld, e, "namingContexts");
	ldap_msgfree(res);
	for (int i = 0; ctx && ctx[i] && !conn->nce; i++) {
		g_autofree char *base = g_strndup(ctx[i]->bv_val, ctx[i]->bv_len);
		bool bad = false;

		rc = search(conn, base, LDAP_SCOPE_BASE, "(objectClass=fedfsNsdbContainerInfo)",
			    nce_attrs, deadline, 1, &res, msg);
		if (rc == -ENOENT) {
			g_clear_pointer(msg, g_free);
			continue;
		}
		if (rc < 0)
			goto out_free;
		e = ldap_first_entry(conn->ld, res);
		if (e)
			conn->nce = value_of(conn->ld, e, "fedfsNceDN", &bad);
		ldap_msgfree(res);
	}
	if (!conn->nce) {
		*msg = g_strdup_printf("NSDB %s: no naming context carries fedfsNsdbContainerInfo "
				       "with a fedfsNceDN",
				       conn->server);
		rc = -ENOENT;
		goto out_free;
	}
	*nce = conn->nce;
	rc = 0;
out_free:
	ldap_value_free_len(ctx);
	return rc;
}

static gint uuid_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int ff_nsdb_list_fsns(struct ff_nsdb_conn *conn, gint64 deadline, GPtrArray **out, GPtrArray *bad,
		      char **msg)
{
	char *attrs[] = { "fedfsFsnUuid", NULL };
	LDAPMessage *res, *e;
	const char *nce;
	GPtrArray *uuids;
	int rc;

	rc = ff_nsdb_nce(conn, deadline, &nce, msg);
	if (rc < 0)
		return rc;
	rc = search(conn, nce, LDAP_SCOPE_ONELEVEL, "(objectClass=fedfsFsn)", attrs, deadline,
		    LDAP_NO_LIMIT, &res, msg);
	if (rc == -E2BIG) {
		g_free(*msg);
		*msg = g_strdup_printf("NSDB %s: %s holds more FSNs than the server returns to one "
				       "search (its size limit)",
				       conn->server, nce);
	}
	if (rc < 0)
		return rc;
	uuids = g_ptr_array_new_with_free_func(g_free);
	for (e = ldap_first_entry(conn->ld, res); e; e = ldap_next_entry(conn->ld, e)) {
		bool malformed = false;
		char *u = value_of(conn->ld, e, "fedfsFsnUuid", &malformed);

		if (u && !malformed && ff_nsdb_uuid_valid(u)) {
			g_ptr_array_add(uuids, g_ascii_strdown(u, -1));
		} else if (bad) {
			char *edn = ldap_get_dn(conn->ld, e);
			g_autofree char *shown = ff_shown(edn ? edn : "?");

			g_ptr_array_add(bad,
					g_strdup_printf("FSN %s has no valid fedfsFsnUuid", shown));
			ldap_memfree(edn);
		}
		g_free(u);
	}
	ldap_msgfree(res);
	g_ptr_array_sort(uuids, uuid_cmp);
	*out = uuids;
	return 0;
}

void ff_nsdb_fsn_free(struct ff_nsdb_fsn *fsn)
{
	if (!fsn)
		return;
	g_free(fsn->dn);
	g_free(fsn->uuid);
	if (fsn->fsls)
		g_ptr_array_unref(fsn->fsls);
	g_free(fsn);
}

static void fsl_free(gpointer p)
{
	struct ff_nsdb_fsl *fsl = p;

	g_free(fsl->dn);
	g_free(fsl->uuid);
	g_free(fsl->uri);
	g_free(fsl);
}

static void note_bad(GPtrArray *bad, const char *dn, const char *why)
{
	g_autofree char *shown = ff_shown(dn);

	if (bad)
		g_ptr_array_add(bad, g_strdup_printf("FSL %s %s", shown, why));
}

/* An FSL entry, or NULL (noted in `bad`) when it is malformed or names another FSN. */
static struct ff_nsdb_fsl *read_fsl(LDAP *ld, LDAPMessage *e, const char *dn, const char *fsn_uuid,
				    GPtrArray *bad)
{
	struct ff_nsdb_fsl *fsl = g_new0(struct ff_nsdb_fsl, 1);
	g_autofree char *fsn = NULL, *going = NULL;
	gint64 rank, order, validfor;
	bool malformed = false;

	fsl->dn = g_strdup(dn);
	fsl->uuid = value_of(ld, e, "fedfsFslUuid", &malformed);
	fsn = value_of(ld, e, "fedfsFsnUuid", &malformed);
	fsl->uri = value_of(ld, e, "fedfsNfsURI", &malformed);
	going = value_of(ld, e, "fedfsNfsGenFlagGoing", &malformed);
	if (malformed) {
		note_bad(bad, dn, "has a value with control characters");
		goto out_free;
	}
	if (!fsl->uuid || !ff_nsdb_uuid_valid(fsl->uuid)) {
		note_bad(bad, dn, "has no valid fedfsFslUuid");
		goto out_free;
	}
	if (!fsn || g_ascii_strcasecmp(fsn, fsn_uuid) != 0) {
		note_bad(bad, dn, "does not name its FSN in fedfsFsnUuid");
		goto out_free;
	}
	if (!fsl->uri) {
		note_bad(bad, dn, "has no fedfsNfsURI");
		goto out_free;
	}
	if (!int_of(ld, e, "fedfsNfsReadRank", 0, 255, 0, &rank) ||
	    !int_of(ld, e, "fedfsNfsReadOrder", 0, 255, 0, &order) ||
	    !int_of(ld, e, "fedfsNfsValidFor", G_MININT32, G_MAXINT32, 0, &validfor)) {
		note_bad(bad, dn, "has a read rank, read order or valid-for out of range");
		goto out_free;
	}
	if (going && strcmp(going, "TRUE") != 0 && strcmp(going, "FALSE") != 0) {
		note_bad(bad, dn, "has a fedfsNfsGenFlagGoing that is not TRUE or FALSE");
		goto out_free;
	}
	fsl->read_rank = (int)rank;
	fsl->read_order = (int)order;
	fsl->validfor = MAX(validfor, 0); /* RFC 7532 allows < 0; it says no more than 0 */
	fsl->going = going && strcmp(going, "TRUE") == 0;
	return fsl;

out_free:
	fsl_free(fsl);
	return NULL;
}

static int fsn_dn(struct ff_nsdb_conn *conn, const char *uuid, gint64 deadline, char **dn,
		  char **msg)
{
	const char *nce;
	int rc;

	if (!ff_nsdb_uuid_valid(uuid)) {
		g_autofree char *shown = ff_shown(uuid);

		*msg = g_strdup_printf("'%s' is not a UUID", shown);
		return -EINVAL;
	}
	rc = ff_nsdb_nce(conn, deadline, &nce, msg);
	if (rc == 0)
		*dn = g_strdup_printf("fedfsFsnUuid=%s,%s", uuid, nce);
	return rc;
}

/* The order of preference of FSLs: read rank, then read order (lower first), then UUID. */
static int fsl_cmp(gconstpointer a, gconstpointer b)
{
	const struct ff_nsdb_fsl *x = *(struct ff_nsdb_fsl *const *)a;
	const struct ff_nsdb_fsl *y = *(struct ff_nsdb_fsl *const *)b;

	if (x->read_rank != y->read_rank)
		return x->read_rank < y->read_rank ? -1 : 1;
	if (x->read_order != y->read_order)
		return x->read_order < y->read_order ? -1 : 1;
	return strcmp(x->uuid, y->uuid);
}

int ff_nsdb_read_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 deadline,
		     struct ff_nsdb_fsn **out, GPtrArray *bad, char **msg)
{
	char *attrs[] = { "objectClass",       "fedfsFsnUuid",
			  "fedfsFsnTTL",       "fedfsFslUuid",
			  "fedfsNfsURI",       "fedfsNfsReadRank",
			  "fedfsNfsReadOrder", "fedfsNfsGenFlagGoing",
			  "fedfsNfsValidFor",  NULL };
	struct ff_nsdb_fsn *fsn = NULL;
	g_autofree char *dn = NULL;
	LDAPMessage *res, *e;
	int rc;

	rc = fsn_dn(conn, uuid, deadline, &dn, msg);
	if (rc < 0)
		return rc;
	rc = search(conn, dn, LDAP_SCOPE_SUBTREE,
		    "(|(objectClass=fedfsFsn)(objectClass=fedfsFsl)(objectClass=fedfsNfsFsl))",
		    attrs, deadline, FF_NSDB_FSLS_MAX + 1, &res, msg);
	if (rc == -ENOENT) {
		g_free(*msg);
		*msg = g_strdup_printf("NSDB %s has no FSN %s (no entry %s)", conn->server, uuid,
				       dn);
	}
	if (rc == -E2BIG) {
		g_free(*msg);
		*msg = g_strdup_printf("NSDB %s: FSN %s has more than %d FSLs", conn->server, uuid,
				       FF_NSDB_FSLS_MAX);
		rc = -EINVAL;
	}
	if (rc < 0)
		return rc;
	fsn = g_new0(struct ff_nsdb_fsn, 1);
	fsn->fsls = g_ptr_array_new_with_free_func(fsl_free);
	for (e = ldap_first_entry(conn->ld, res); e; e = ldap_next_entry(conn->ld, e)) {
		char *edn = ldap_get_dn(conn->ld, e);
		bool malformed = false;

		if (!edn)
			continue;
		if (has_class(conn->ld, e, "fedfsFsn")) {
			g_autofree char *u = value_of(conn->ld, e, "fedfsFsnUuid", &malformed);

			if (u && g_ascii_strcasecmp(u, uuid) == 0 && !fsn->dn) {
				fsn->dn = g_strdup(edn);
				fsn->uuid = g_ascii_strdown(u, -1);
				if (!int_of(conn->ld, e, "fedfsFsnTTL", 0, G_MAXUINT32, -1,
					    &fsn->ttl) ||
				    fsn->ttl < 0) {
					*msg = g_strdup_printf("NSDB %s: FSN %s has no valid "
							       "fedfsFsnTTL",
							       conn->server, uuid);
					rc = -EINVAL;
				}
			}
		} else if (has_class(conn->ld, e, "fedfsNfsFsl") ||
			   has_class(conn->ld, e, "fedfsFsl")) {
			struct ff_nsdb_fsl *fsl = read_fsl(conn->ld, e, edn, uuid, bad);

			if (fsl)
				g_ptr_array_add(fsn->fsls, fsl);
		}
		ldap_memfree(edn);
	}
	ldap_msgfree(res);
	if (rc == 0 && !fsn->dn) {
		*msg = g_strdup_printf("NSDB %s: %s is not a fedfsFsn of UUID %s", conn->server, dn,
				       uuid);
		rc = -EINVAL;
	}
	if (rc < 0) {
		ff_nsdb_fsn_free(fsn);
		return rc;
	}
	g_ptr_array_sort(fsn->fsls, fsl_cmp);
	*out = fsn;
	return 0;
}

/* ---- writes -------------------------------------------------------------------------------- */

static void mod_free(gpointer p)
{
	LDAPMod *m = p;

	if (!m)
		return;
	g_free(m->mod_type);
	g_strfreev(m->mod_values);
	g_free(m);
}

static void mod_add(GPtrArray *mods, int op, const char *type, const char *value)
{
	LDAPMod *m = g_new0(LDAPMod, 1);

	m->mod_op = op;
	m->mod_type = g_strdup(type);
	m->mod_values = g_new0(char *, 2);
	m->mod_values[0] = g_strdup(value);
	g_ptr_array_add(mods, m);
}

static void mod_add_int(GPtrArray *mods, int op, const char *type, gint64 value)
{
	char buf[32];

	g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, value);
	mod_add(mods, op, type, buf);
}

/* The mods as the NULL-terminated array the library wants (the array still owns them). */
static LDAPMod **mods_array(GPtrArray *mods)
{
	g_ptr_array_add(mods, NULL);
	return (LDAPMod **)mods->pdata;
}

static int write_result(struct ff_nsdb_conn *conn, int rc, const char *what, const char *dn,
			char **msg)
{
	g_autofree char *why = NULL;

	if (rc == LDAP_SUCCESS)
		return 0;
	why = diagnostic(conn);
	if (rc == LDAP_REFERRAL) {
		/* a replica that sends writes to its provider: refused here, as referrals are
		 * not chased */
		char **urls = NULL;
		g_autofree char *to = NULL;

		ldap_get_option(conn->ld, LDAP_OPT_REFERRAL_URLS, &urls);
		if (urls && urls[0])
			to = ff_shown(urls[0]);
		ldap_memvfree((void **)urls);
		*msg = g_strdup_printf("NSDB %s: %s %s: the server refers writes to %s%s",
				       conn->server, what, dn, to ? to : "another server", why);
		return -EPERM;
	}
	*msg = g_strdup_printf("NSDB %s: %s %s: %s%s", conn->server, what, dn, ldap_err2string(rc),
			       why);
	return ldap_to_errno(rc);
}

int ff_nsdb_create_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 ttl, gint64 deadline,
		       char **msg)
{
	g_autoptr(GPtrArray) mods = g_ptr_array_new_with_free_func(mod_free);
	g_autofree char *dn = NULL;
	int rc = fsn_dn(conn, uuid, deadline, &dn, msg);

	if (rc < 0)
		return rc;
	mod_add(mods, LDAP_MOD_ADD, "objectClass", "fedfsFsn");
	mod_add(mods, LDAP_MOD_ADD, "fedfsFsnUuid", uuid);
	mod_add_int(mods, LDAP_MOD_ADD, "fedfsFsnTTL", ttl);
	rc = ldap_add_ext_s(conn->ld, dn, mods_array(mods), NULL, NULL);
	return write_result(conn, rc, "add", dn, msg);
}

int ff_nsdb_delete_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 deadline, char **msg)
{
	struct ff_nsdb_fsn *fsn = NULL;
	int rc = ff_nsdb_read_fsn(conn, uuid, deadline, &fsn, NULL, msg);

	if (rc < 0)
		return rc;
	for (guint i = 0; i < fsn->fsls->len && rc == 0; i++) {
		const struct ff_nsdb_fsl *fsl = fsn->fsls->pdata[i];

		rc = write_result(conn, ldap_delete_ext_s(conn->ld, fsl->dn, NULL, NULL), "delete",
				  fsl->dn, msg);
	}
	if (rc == 0)
		rc = write_result(conn, ldap_delete_ext_s(conn->ld, fsn->dn, NULL, NULL), "delete",
				  fsn->dn, msg);
	ff_nsdb_fsn_free(fsn);
	return rc;
}

int ff_nsdb_put_fsl(struct ff_nsdb_conn *conn, const char *fsn_uuid, const struct ff_nsdb_fsl *fsl,
		    bool create, bool set_going, gint64 deadline, char **msg)
{
	g_autoptr(GPtrArray) mods = g_ptr_array_new_with_free_func(mod_free);
	g_autofree char *parent = NULL, *dn = NULL;
	int op = create ? LDAP_MOD_ADD : LDAP_MOD_REPLACE;
	int rc = fsn_dn(conn, fsn_uuid, deadline, &parent, msg);

	if (rc < 0)
		return rc;
	if (!ff_nsdb_uuid_valid(fsl->uuid)) {
		g_autofree char *shown = ff_shown(fsl->uuid);

		*msg = g_strdup_printf("'%s' is not a UUID", shown);
		return -EINVAL;
	}
	dn = g_strdup_printf("fedfsFslUuid=%s,%s", fsl->uuid, parent);
	if (create) {
		/* RFC 7532's mandatory attributes, with the values nfsref and fedfs-utils use when
		 * none is given */
		static const char *const flags[][2] = {
			{ "fedfsNfsGenFlagWritable", "FALSE" },
			{ "fedfsNfsGenFlagSplit", "TRUE" },
			{ "fedfsNfsTransFlagRdma", "TRUE" },
			{ "fedfsNfsVarSub", "FALSE" },
		};
		static const char *const zero[] = {
			"fedfsNfsClassSimul",	 "fedfsNfsClassHandle", "fedfsNfsClassFileid",
			"fedfsNfsClassWritever", "fedfsNfsClassChange", "fedfsNfsClassReaddir",
			"fedfsNfsWriteRank",	 "fedfsNfsWriteOrder",
		};

		mod_add(mods, op, "objectClass", "fedfsNfsFsl");
		mod_add(mods, op, "fedfsFslUuid", fsl->uuid);
		mod_add(mods, op, "fedfsFsnUuid", fsn_uuid);
		mod_add_int(mods, op, "fedfsNfsCurrency", -1);
		mod_add_int(mods, op, "fedfsNfsValidFor", fsl->validfor);
		for (guint i = 0; i < G_N_ELEMENTS(flags); i++)
			mod_add(mods, op, flags[i][0], flags[i][1]);
		for (guint i = 0; i < G_N_ELEMENTS(zero); i++)
			mod_add_int(mods, op, zero[i], 0);
		set_going = true;
	}
	if (fsl->uri)
		mod_add(mods, op, "fedfsNfsURI", fsl->uri);
	if (fsl->read_rank >= 0 || create)
		mod_add_int(mods, op, "fedfsNfsReadRank", MAX(fsl->read_rank, 0));
	if (fsl->read_order >= 0 || create)
		mod_add_int(mods, op, "fedfsNfsReadOrder", MAX(fsl->read_order, 0));
	if (set_going)
		mod_add(mods, op, "fedfsNfsGenFlagGoing", fsl->going ? "TRUE" : "FALSE");
	if (mods->len == 0) {
		*msg = g_strdup("nothing to change");
		return -EINVAL;
	}
	if (create)
		rc = ldap_add_ext_s(conn->ld, dn, mods_array(mods), NULL, NULL);
	else
		rc = ldap_modify_ext_s(conn->ld, dn, mods_array(mods), NULL, NULL);
	return write_result(conn, rc, create ? "add" : "modify", dn, msg);
}

int ff_nsdb_delete_fsl(struct ff_nsdb_conn *conn, const char *fsn_uuid, const char *fsl_uuid,
		       gint64 deadline, char **msg)
{
	g_autofree char *parent = NULL, *dn = NULL;
	int rc = fsn_dn(conn, fsn_uuid, deadline, &parent, msg);

	if (rc < 0)
		return rc;
	if (!ff_nsdb_uuid_valid(fsl_uuid)) {
		g_autofree char *shown = ff_shown(fsl_uuid);

		*msg = g_strdup_printf("'%s' is not a UUID", shown);
		return -EINVAL;
	}
	dn = g_strdup_printf("fedfsFslUuid=%s,%s", fsl_uuid, parent);
	return write_result(conn, ldap_delete_ext_s(conn->ld, dn, NULL, NULL), "delete", dn, msg);
}
