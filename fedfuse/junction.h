/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction.h - the three on-disk junction formats of DESIGN §4 (fedfuse xattr, FedFS XML as
 * written by nfsref, Samba MS-DFS symlinks), parsed into location lists and written back.
 * Pure code: no I/O, GLib only, shared by the daemon (resolve.c) and fedfuse-junction.
 *
 * Every value handed to a parser is untrusted (it comes from a backend's tree): sizes are
 * bounded, every location goes through ff_location_parse(), and messages are safe to log.
 */
#ifndef FEDFUSE_JUNCTION_H
#define FEDFUSE_JUNCTION_H

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fedfuse/namespace.h"

/* Where each format lives. */
#define FF_JUNCTION_XATTR_FEDFUSE "user.fedfuse.locations"   /* ';'-separated URIs */
#define FF_JUNCTION_XATTR_FEDFS "trusted.junction.nfs"	     /* nfsref's XML */
#define FF_JUNCTION_XATTR_FEDFS_MODE "trusted.junction.mode" /* saved mode, octal text */
#define FF_JUNCTION_MSDFS_PREFIX "msdfs:"		     /* symlink target, any case */

#define FF_JUNCTION_VALUE_MAX 65536   /* bytes in any junction value (xattr or link target) */
#define FF_JUNCTION_LOCATIONS_MAX 256 /* locations (targets) in one junction */
#define FF_JUNCTION_MSG_MAX 512	      /* bytes in a parser message, NUL excluded */
#define FF_JUNCTION_DEFAULT_MODE 0755 /* what a junction shows unless it says otherwise */
#define FF_JUNCTION_NFS_PORT 2049     /* the port FedFS XML leaves out */

enum ff_junction_format { FF_JUNCTION_FEDFUSE, FF_JUNCTION_FEDFS, FF_JUNCTION_MSDFS };

struct ff_junction {
	enum ff_junction_format format;
	/* struct ff_location *, in order of preference, 1 to FF_JUNCTION_LOCATIONS_MAX of them,
	 * no URI twice. The array owns them (g_ptr_array_unref frees them). Each spec has the
	 * defaults of ff_location_parse(); loc->line is 0. */
	GPtrArray *locations;
	mode_t mode; /* permission bits (07777 at most) the junction shows as a directory */
	double ttl;  /* seconds: the smallest non-zero FedFS <validfor>, else 0 (no cap) */
};

/* Frees the junction and its locations. NULL is allowed. */
void ff_junction_free(struct ff_junction *j);

/* "fedfuse", "fedfs" or "msdfs". */
const char *ff_junction_format_name(enum ff_junction_format format);

/*
 * The parsers. Each takes `len` bytes at the value (not NUL-terminated; one trailing NUL byte,
 * as some writers store, is ignored; any other NUL is an error) and returns a new junction that
 * the caller frees with ff_junction_free().
 *
 * On a malformed value each returns NULL, sets errno to EINVAL and *msg (if msg is non-NULL) to
 * a g_malloc'd sentence that names the value at fault: valid UTF-8, control characters and
 * invalid bytes escaped, at most FF_JUNCTION_MSG_MAX bytes. The caller adds the path.
 */

/* user.fedfuse.locations: the syntax of a namespace file's locations= (ff_location_list_parse:
 * ';'-separated, "\;" for a ';' inside a URI, one trailing ';' and surrounding white space
 * allowed). Any scheme. mode is FF_JUNCTION_DEFAULT_MODE, ttl 0. */
struct ff_junction *ff_junction_parse_fedfuse(const char *value, size_t len, char **msg);

/* trusted.junction.nfs (`xml`) and trusted.junction.mode (`mode_text`, NULL when the directory
 * has none). The XML is nfsref's: <junction> holding an optional <savedmode bits="OCTAL"/> and
 * one <fileset> of 1 to 256 <location> elements, each with one <host name= [port=]> and one
 * <path> of <component>s (none for the export root); <read rank= order=> orders them (lower
 * first, then document order); <validfor> gives the ttl; <currency>, <genflags>, <transflags>,
 * <class>, <write> and <flags> are optional and only checked. Unknown elements are ignored with
 * their contents; unknown attributes too. A component must not be empty, ".", ".." or hold '/'.
 * Each location becomes nfs://HOST[:PORT]/COMP/... (PORT only when not 2049).
 * mode: trusted.junction.mode when given, else <savedmode>, else FF_JUNCTION_DEFAULT_MODE.
 *
 * A FedFS NSDB junction (<fileset><name fsnuuid= nsdbname= [nsdbport=]/></fileset>, no
 * <location>; a fileset holding both is refused) has one location, the FSN:
 * fedfs://NSDBNAME[:NSDBPORT]/UUID (nsdb.h; PORT only when not 389, the UUID in lower case),
 * which the daemon resolves through LDAP. */
struct ff_junction *ff_junction_parse_fedfs(const char *xml, size_t len, const char *mode_text,
					    size_t mode_len, char **msg);

/* A symlink target "msdfs:T1,T2,..." ("msdfs:" in any case), each target SERVER\SHARE[\PATH...]
 * with '\' or '/' as separator (leading separators ignored, as Samba does), no empty, "." or
 * ".." component, at most 256 targets. Each becomes smb://SERVER/SHARE[/PATH] (components
 * %-encoded). mode is FF_JUNCTION_DEFAULT_MODE, ttl 0. */
struct ff_junction *ff_junction_parse_msdfs(const char *target, size_t len, char **msg);

/* Whether a symlink target starts with "msdfs:" in any case: the cheap test before parsing. */
bool ff_junction_is_msdfs(const char *target, size_t len);

/* Whether a directory's st_mode marks a FedFS junction as nfsref leaves it: sticky bit set and
 * no execute bit (nfsref sets exactly 01000). The cheap test before reading trusted.* xattrs. */
bool ff_junction_is_fedfs_mode(mode_t st_mode);

/*
 * The writers, for fedfuse-junction. `locations` holds struct ff_location * (as the parsers and
 * ff_location_list_parse make them), at least one. Each returns a g_malloc'd NUL-terminated
 * value to store without its NUL; on a location the format cannot hold, NULL with *msg set as
 * above (naming the location) and errno EINVAL.
 */

/* Any location: the URIs joined by ';' (a ';' inside one written "\;"). Never fails. */
char *ff_junction_format_fedfuse(GPtrArray *locations);

/* nfs:// locations only, whose query holds at most nfsport=N: the XML that nfsref add writes
 * (libxml2's indented layout, nfsref's default values), with <savedmode bits="%o"> of
 * saved_mode & 07777 and <read order=> numbering the locations in order of preference. Each
 * location's port is what port_of(spec, data, msg) says (ff_plugin_server_port(): the nfs
 * backend reads host:port and nfsport=); a location it refuses is refused with its message.
 * Every path component must be valid UTF-8. */
char *ff_junction_format_fedfs(GPtrArray *locations, mode_t saved_mode, ff_location_port_fn port_of,
			       void *data, char **msg);

/* A FedFS NSDB junction as nfsref add -t nfs-fedfs writes it (the layout above): <savedmode> of
 * saved_mode & 07777 and one <fileset><name fsnuuid= nsdbname= nsdbport=/></fileset>, the UUID
 * in lower case, the port always written, an IPv6 host without brackets (given with or
 * without). Refuses an `fsn_uuid` that is no UUID, a host that is no host name or IP address
 * and a port out of 1..65535. Read back, its location is fedfs://HOST[:PORT]/UUID. */
char *ff_junction_format_fedfs_nsdb(const char *nsdb_host, int nsdb_port, const char *fsn_uuid,
				    mode_t saved_mode, char **msg);

/* smb:// locations only, without port or query, whose share and path components hold no ',' or
 * '\': "msdfs:HOST\SHARE[\PATH],...". */
char *ff_junction_format_msdfs(GPtrArray *locations, char **msg);

#endif /* FEDFUSE_JUNCTION_H */
