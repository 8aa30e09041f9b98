/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nsdb.h - FedFS Namespace Databases (RFC 7532): a fileset name (FSN) kept in an LDAP
 * directory, whose fileset locations (FSLs) say where its data is. A junction or a referral
 * names an FSN as the location fedfs://NSDBHOST[:PORT]/FSN-UUID; resolution reads the FSN and
 * its FSLs from the NSDB (or one of its replicas), orders them by read rank and order, skips
 * those marked going, and caches the answer for the FSN's TTL, then serves it stale for a grace
 * while the directory does not answer.
 *
 * Three layers: the namespace file's [nsdb HOST[:PORT]] groups and the FSN location syntax
 * (nsdb_conf.c, pure, in the core library); the LDAP reads and writes (nsdb_ldap.c, shared
 * with fedfuse-junction); the daemon's cache of resolved FSNs (nsdb.c).
 */
#ifndef FEDFUSE_NSDB_H
#define FEDFUSE_NSDB_H

#include <glib.h>
#include <stdbool.h>

#include "fedfuse/location.h"

#define FF_NSDB_SCHEME "fedfs" /* fedfs://NSDBHOST[:PORT]/FSN-UUID */
#define FF_NSDB_PORT 389       /* LDAP's, what an NSDB name without a port means */
#define FF_NSDB_UUID_LEN 36    /* 8-4-4-4-12 hexadecimal digits */
#define FF_NSDB_STALE_GRACE 300.0
#define FF_NSDB_FSLS_MAX 256

/* ---- configuration (nsdb_conf.c) ---------------------------------------------------------- */

enum ff_nsdb_security { FF_NSDB_SEC_NONE, FF_NSDB_SEC_STARTTLS, FF_NSDB_SEC_LDAPS };

/* One [nsdb HOST[:PORT]] group of the namespace file. */
struct ff_nsdb_conf {
	char *name; /* "host:port", the port always written */
	enum ff_nsdb_security security;
	char *ca_file;	    /* NULL: the system's CAs */
	GPtrArray *servers; /* char * "host:port": the NSDB itself first, then its replicas= */
	int line;
};

/* Whether `uuid` (NUL-terminated) is an RFC 4122 UUID in its text form, any case. */
bool ff_nsdb_uuid_valid(const char *uuid);

/* "host:port" of `text` (HOST, HOST:PORT, [V6]:PORT), g_malloc'd, or NULL with *msg set. */
char *ff_nsdb_server_name(const char *text, char **msg);

/* A new group for [nsdb TEXT] (TEXT after "nsdb "), or NULL with *msg set. */
struct ff_nsdb_conf *ff_nsdb_conf_new(const char *text, int line, char **msg);
void ff_nsdb_conf_free(gpointer conf);
/* One key of the group (security=, ca-file=, replicas=): false with *msg naming the value. */
bool ff_nsdb_conf_set(struct ff_nsdb_conf *conf, const char *key, const char *value, char **msg);

/* Whether a location names an FSN (its scheme is fedfs). */
bool ff_nsdb_is_fsn(const struct ff_location_spec *spec);
/* The rules of an FSN location: a host, an optional port, a path of one UUID, no query.
 * 0, or -EINVAL with *msg set. On success *server ("host:port") and *uuid (lower case) are
 * g_malloc'd when not NULL. */
int ff_nsdb_fsn_parse(const struct ff_location_spec *spec, char **server, char **uuid, char **msg);

/* ---- LDAP (nsdb_ldap.c) ------------------------------------------------------------------- */

struct ff_nsdb_fsl {
	char *dn;
	char *uuid;
	char *uri; /* fedfsNfsURI as stored */
	int read_rank, read_order;
	bool going;	 /* fedfsNfsGenFlagGoing */
	gint64 validfor; /* fedfsNfsValidFor, seconds, 0 when absent */
};

struct ff_nsdb_fsn {
	char *dn;
	char *uuid;
	gint64 ttl;	 /* fedfsFsnTTL, seconds */
	GPtrArray *fsls; /* struct ff_nsdb_fsl *, in order of preference: read rank, then read
			  * order (lower first), then UUID */
};

void ff_nsdb_fsn_free(struct ff_nsdb_fsn *fsn);

struct ff_nsdb_conn;

/* Connect to `server` ("host:port") with the security of `conf` (NULL: none), within the
 * monotonic `deadline` (usec), and bind as `bind_dn` with `password` (NULL: anonymous).
 * Returns 0, -EHOSTDOWN or -ETIMEDOUT when the server does not answer (try a replica),
 * -EACCES when the bind is refused, or another -errno; *msg says why. */
int ff_nsdb_connect(const char *server, const struct ff_nsdb_conf *conf, gint64 deadline,
		    const char *bind_dn, const char *password, struct ff_nsdb_conn **out,
		    char **msg);
void ff_nsdb_close(struct ff_nsdb_conn *conn);
/* The server the connection is to ("host:port"). */
const char *ff_nsdb_conn_server(const struct ff_nsdb_conn *conn);

/* The NSDB container entry's DN: the fedfsNceDN of the first naming context that carries
 * fedfsNsdbContainerInfo. -ENOENT when none does. Cached in the connection. */
int ff_nsdb_nce(struct ff_nsdb_conn *conn, gint64 deadline, const char **nce, char **msg);

/* Take `nce` (NULL: none) as the NCE's DN, as learnt by an earlier connection to the server;
 * the NCE's DN the connection knows, or NULL. */
void ff_nsdb_conn_set_nce(struct ff_nsdb_conn *conn, const char *nce);
const char *ff_nsdb_conn_nce(const struct ff_nsdb_conn *conn);

/* The FSN `uuid` under the NCE and its FSLs (children of class fedfsFsl naming the FSN).
 * -ENOENT when there is no such FSN; -EINVAL when an entry is malformed (*msg names it; FSLs
 * that are malformed are left out with a message in *bad, when `bad` is not NULL: a
 * GPtrArray of g_malloc'd sentences the caller frees). */
int ff_nsdb_read_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 deadline,
		     struct ff_nsdb_fsn **out, GPtrArray *bad, char **msg);

/* The UUIDs (lower case, sorted) of every FSN under the NCE: a one-level search for entries of
 * class fedfsFsn, into a new *out of g_malloc'd strings. Entries without a valid fedfsFsnUuid
 * are left out with a sentence in `bad` (when not NULL). -E2BIG when the server's size limit
 * cuts the answer short. */
int ff_nsdb_list_fsns(struct ff_nsdb_conn *conn, gint64 deadline, GPtrArray **out, GPtrArray *bad,
		      char **msg);

/*
 * Writes, for fedfuse-junction nsdb (a connection bound as a DN that may write). Entries are
 * written as RFC 7532 lays them out, with every attribute its schema makes mandatory:
 *   fedfsFsnUuid=UUID,NCE                       objectClass fedfsFsn
 *   fedfsFslUuid=UUID,fedfsFsnUuid=UUID,NCE      objectClass fedfsNfsFsl
 * Each returns 0 or -errno (-EEXIST, -ENOENT, -EACCES...) with *msg set.
 */
int ff_nsdb_create_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 ttl, gint64 deadline,
		       char **msg);
/* The FSN and all its FSLs. */
int ff_nsdb_delete_fsn(struct ff_nsdb_conn *conn, const char *uuid, gint64 deadline, char **msg);
/* Add the FSL fsl->uuid of FSN `fsn_uuid` (create) or change the values given of an existing one:
 * fsl->uri when not NULL, read rank and order when >= 0, going when `set_going`. */
int ff_nsdb_put_fsl(struct ff_nsdb_conn *conn, const char *fsn_uuid, const struct ff_nsdb_fsl *fsl,
		    bool create, bool set_going, gint64 deadline, char **msg);
int ff_nsdb_delete_fsl(struct ff_nsdb_conn *conn, const char *fsn_uuid, const char *fsl_uuid,
		       gint64 deadline, char **msg);

/* How many searches this process has sent (for /.fedfuse/stats and scripts/fleet). */
guint64 ff_nsdb_searches(void);

/* ---- the daemon's cache (nsdb.c) ---------------------------------------------------------- */

struct ff_nsdb;
struct ff_namespace;

/* The location an FSL's fedfsNfsURI names (g_malloc'd): RFC 7532's form of the path
 * ("nfs://host//export/a") made the usual one, of scheme nfs or (our extension) smb, accepted by
 * its backend's rules. NULL with *msg set otherwise. */
char *ff_nsdb_fsl_location(const char *uri, char **msg);

struct ff_nsdb *ff_nsdb_new(void);
void ff_nsdb_free(struct ff_nsdb *db);

/*
 * The locations the FSN location `fsn` stands for, in order of preference: a new array of
 * struct ff_location * (each with the options of `fsn`'s spec), at least one. The answer is
 * cached for the FSN's TTL (capped by the namespace's junction-cache-ttl); after that the
 * directory is asked again, and while it does not answer the old answer serves for
 * nsdb-stale-grace more seconds. LDAP work ends within `timeout` seconds. Returns 0, or
 * -EHOSTDOWN (no NSDB server answers and nothing cached serves), -ENOENT (no such FSN), -EINVAL
 * (malformed data), with *msg set.
 */
int ff_nsdb_resolve(struct ff_nsdb *db, const struct ff_namespace *ns,
		    const struct ff_location *fsn, double timeout, GPtrArray **out, char **msg);

/* What is known of `fsn` without asking: its locations as last resolved (a new array, as
 * ff_nsdb_resolve() gives them) while it is fresh or stale, else NULL; *down says whether its
 * NSDB servers were not answering at the last attempt. */
GPtrArray *ff_nsdb_cached(struct ff_nsdb *db, const struct ff_location *fsn, bool *down);

/* One line per FSN resolved so far, for /.fedfuse/locations:
 * "fsn URI state=fresh|stale|down|error ..." */
void ff_nsdb_describe(struct ff_nsdb *db, GString *out);

#endif /* FEDFUSE_NSDB_H */
