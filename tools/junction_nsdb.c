/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * junction_nsdb.c - `fedfuse-junction nsdb`: the fileset names (FSNs) and locations (FSLs) of a
 * FedFS NSDB (RFC 7532) created, changed, listed and deleted with the daemon's own LDAP client
 * (nsdb_ldap.c) and URI rules. A bind password comes from a private file or the terminal, never
 * from the command line or the environment, and is never printed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <glib.h>

#include "fedfuse/nsdb.h"
#include "tools/fedfuse-junction.h"

#define NSDB_TIMEOUT 10.0 /* seconds each exchange with the NSDB may take */
#define NSDB_TTL 300	  /* fedfsFsnTTL of a new FSN */
#define PASSWORD_MAX 1024 /* bytes of a bind password */
#define NSDB_ENV "FEDFUSE_NSDB"

/* ---- options and subcommands --------------------------------------------------------------- */

enum sub { SUB_CREATE_FSN, SUB_ADD_FSL, SUB_UPDATE_FSL, SUB_REMOVE_FSL, SUB_DELETE_FSN, SUB_LIST };

#define SUB_BIT(s) (1u << (s))
#define SUB_ANY 0u /* an option of the connection, before or after the subcommand */

enum opt {
	OPT_NSDB,
	OPT_BIND_DN,
	OPT_PW_FILE,
	OPT_SECURITY,
	OPT_CA_FILE,
	OPT_TIMEOUT,
	OPT_TTL,
	OPT_FSL_UUID,
	OPT_URI,
	OPT_RANK,
	OPT_ORDER,
	OPT_GOING,
	OPT_NOT_GOING,
};

static const struct nsdb_option {
	const char *name;  /* "--nsdb" */
	const char *alias; /* "-D", or NULL */
	bool value;	   /* takes one: "--name VALUE" or "--name=VALUE" */
	unsigned int subs; /* SUB_BIT()s of the subcommands that take it, or SUB_ANY */
} options[] = {
	[OPT_NSDB] = { "--nsdb", NULL, true, SUB_ANY },
	[OPT_BIND_DN] = { "--bind-dn", "-D", true, SUB_ANY },
	[OPT_PW_FILE] = { "--password-file", "-y", true, SUB_ANY },
	[OPT_SECURITY] = { "--security", NULL, true, SUB_ANY },
	[OPT_CA_FILE] = { "--ca-file", NULL, true, SUB_ANY },
	[OPT_TIMEOUT] = { "--timeout", NULL, true, SUB_ANY },
	[OPT_TTL] = { "--ttl", NULL, true, SUB_BIT(SUB_CREATE_FSN) },
	[OPT_FSL_UUID] = { "--fsl-uuid", NULL, true, SUB_BIT(SUB_ADD_FSL) },
	[OPT_URI] = { "--uri", NULL, true, SUB_BIT(SUB_UPDATE_FSL) },
	[OPT_RANK] = { "--rank", NULL, true, SUB_BIT(SUB_ADD_FSL) | SUB_BIT(SUB_UPDATE_FSL) },
	[OPT_ORDER] = { "--order", NULL, true, SUB_BIT(SUB_ADD_FSL) | SUB_BIT(SUB_UPDATE_FSL) },
	[OPT_GOING] = { "--going", NULL, false, SUB_BIT(SUB_ADD_FSL) | SUB_BIT(SUB_UPDATE_FSL) },
	[OPT_NOT_GOING] = { "--not-going", NULL, false, SUB_BIT(SUB_UPDATE_FSL) },
};

/* One run of `nsdb`: what the command line said, then the connection. */
struct nsdb_cmd {
	enum sub which;
	const struct nsdb_sub *sub; /* &subs[which], NULL until given */
	GPtrArray *args;	    /* const char *: the subcommand's arguments */
	const char *nsdb, *bind_dn, *pw_file, *security, *ca_file;
	const char *fsl_uuid, *uri;
	double timeout;
	gint64 ttl;
	int rank, order; /* -1: not given */
	int going;	 /* -1: not given, 0: --not-going, 1: --going */
	struct ff_nsdb_conf *conf;
	struct ff_nsdb_conn *conn;
	char *password;
};

struct nsdb_sub {
	const char *name;
	const char *args; /* what it takes, for a message */
	guint min_args, max_args;
	guint uuids; /* how many of the arguments (the first ones) are UUIDs */
	bool writes;
	int (*fn)(struct nsdb_cmd *c);
};

/* ---- the password -------------------------------------------------------------------------- */

static void password_free(char *pw)
{
	if (!pw)
		return;
	explicit_bzero(pw, strlen(pw));
	g_free(pw);
}

/* `len` bytes at `buf` as a password: one trailing newline left out, no NUL, not empty. NULL
 * (after complaining that `what` is wrong) otherwise. The `size` bytes of `buf` are wiped. */
static char *password_of(char *buf, size_t size, size_t len, const char *what)
{
	char *pw = NULL;

	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 0)
		tool_complain("%s is empty", what);
	else if (memchr(buf, '\0', len))
		tool_complain("%s holds a NUL byte", what);
	else
		pw = g_strndup(buf, len);
	explicit_bzero(buf, size);
	return pw;
}

/* The password in the file `path`: a regular file of the caller's, which no one else may read or
 * write (the rule of SMB credentials files), read without following a symbolic link. */
static char *password_from_file(const char *path)
{
	g_autofree char *p = tool_shown(path), *what = g_strdup_printf("password file %s", p);
	char buf[PASSWORD_MAX + 1];
	size_t len = 0;
	struct stat st;
	char *pw = NULL;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			tool_complain("%s is a symbolic link; name the file itself", what);
		else
			tool_complain("%s: %s", what, g_strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		tool_complain("%s: %s", what, g_strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		tool_complain("%s is not a regular file", what);
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		tool_complain("%s is owned by uid %u, not by you (uid %u)", what,
			      (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto out_close;
	}
	if (st.st_mode & 077) {
		tool_complain("%s may be accessed by group or others (mode %04o); chmod 600 it",
			      what, (unsigned int)(st.st_mode & 07777));
		goto out_close;
	}
	while (len <= PASSWORD_MAX) {
		ssize_t n = read(fd, buf + len, PASSWORD_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tool_complain("%s: %s", what, g_strerror(errno));
			explicit_bzero(buf, sizeof(buf));
			goto out_close;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > PASSWORD_MAX) {
		tool_complain("%s is longer than %d bytes", what, PASSWORD_MAX);
		explicit_bzero(buf, sizeof(buf));
		goto out_close;
	}
	pw = password_of(buf, sizeof(buf), len, what);
out_close:
	close(fd);
	return pw;
}

/* The terminal's settings while echo is off, for a signal to restore them. */
static struct termios tty_saved;
static volatile sig_atomic_t tty_fd = -1;

static void tty_restore_and_die(int sig)
{
	if (tty_fd >= 0)
		tcsetattr(tty_fd, TCSAFLUSH, &tty_saved);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The password typed on the controlling terminal, without echo. */
static char *password_from_tty(const char *bind_dn)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_handler = tty_restore_and_die }, old[G_N_ELEMENTS(sigs)];
	g_autofree char *dn = tool_shown(bind_dn), *prompt = NULL;
	char buf[PASSWORD_MAX + 1];
	struct termios quiet;
	size_t len = 0;
	char *pw = NULL;
	bool line = false;
	int fd;

	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		tool_complain("no password for %s: there is no terminal to ask on (%s); give -y "
			      "PASSWORD-FILE",
			      dn, g_strerror(errno));
		return NULL;
	}
	if (tcgetattr(fd, &tty_saved) < 0) {
		tool_complain("no password for %s: /dev/tty: %s; give -y PASSWORD-FILE", dn,
			      g_strerror(errno));
		close(fd);
		return NULL;
	}
	quiet = tty_saved;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
	quiet.c_lflag |= ICANON;
	sigemptyset(&sa.sa_mask);
	for (guint i = 0; i < G_N_ELEMENTS(sigs); i++)
		sigaction(sigs[i], &sa, &old[i]);
	tty_fd = fd;
	if (tcsetattr(fd, TCSAFLUSH, &quiet) < 0) {
		tool_complain("cannot turn the terminal's echo off: %s; give -y PASSWORD-FILE",
			      g_strerror(errno));
		goto out_restore;
	}
	prompt = g_strdup_printf("Password for %s: ", dn);
	if (write(fd, prompt, strlen(prompt)) < 0) {
		tool_complain("/dev/tty: %s", g_strerror(errno));
		goto out_restore;
	}
	while (len <= PASSWORD_MAX) {
		char ch;
		ssize_t n = read(fd, &ch, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (ch == '\n') {
			line = true;
			break;
		}
		buf[len++] = ch;
	}
	(void)!write(fd, "\n", 1); /* the newline the user typed, not echoed */
	if (len > PASSWORD_MAX)
		tool_complain("the password typed is longer than %d bytes", PASSWORD_MAX);
	else if (!line && len == 0)
		tool_complain("no password typed for %s", dn);
	else
		pw = password_of(buf, sizeof(buf), len, "the password typed");
	explicit_bzero(buf, sizeof(buf));
out_restore:
	tcsetattr(fd, TCSAFLUSH, &tty_saved);
	tty_fd = -1;
	for (guint i = 0; i < G_N_ELEMENTS(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
	close(fd);
	return pw;
}

/* ---- the subcommands ----------------------------------------------------------------------- */

static gint64 deadline(const struct nsdb_cmd *c)
{
	return g_get_monotonic_time() + (gint64)(c->timeout * G_USEC_PER_SEC);
}

/* Complain with the message of a failed NSDB operation, with a hint when a replica refused. */
static int failed(const struct nsdb_cmd *c, int rc, char *msg)
{
	if (rc == -EPERM && c->sub->writes)
		tool_complain("%s; is %s a read-only replica? Writes go to its provider", msg,
			      ff_nsdb_conn_server(c->conn));
	else if (rc == -ENOENT && c->which == SUB_ADD_FSL)
		tool_complain("%s; is there an FSN %s? (nsdb create-fsn makes one)", msg,
			      (const char *)g_ptr_array_index(c->args, 0));
	else
		tool_complain("%s", msg);
	g_free(msg);
	return 1;
}

/* Argument `i` of the subcommand, a UUID check_args() let through, in lower case. */
static char *uuid_arg(const struct nsdb_cmd *c, guint i)
{
	return g_ascii_strdown(g_ptr_array_index(c->args, i), -1);
}

/* An FSL URI refused when the daemon would refuse it (ff_nsdb_fsl_location()). */
static bool uri_ok(const char *uri)
{
	g_autofree char *shown = tool_shown(uri);
	char *msg = NULL, *loc = ff_nsdb_fsl_location(uri, &msg);

	if (loc) {
		g_free(loc);
		return true;
	}
	tool_complain("FSL URI '%s': %s", shown, msg);
	g_free(msg);
	return false;
}

static int sub_create_fsn(struct nsdb_cmd *c)
{
	g_autofree char *uuid = c->args->len > 0 ? uuid_arg(c, 0) : g_uuid_string_random();
	char *msg = NULL;
	int rc;

	rc = ff_nsdb_create_fsn(c->conn, uuid, c->ttl, deadline(c), &msg);
	if (rc < 0)
		return failed(c, rc, msg);
	printf("%s\n", uuid);
	return 0;
}

static int sub_add_fsl(struct nsdb_cmd *c)
{
	g_autofree char *fsn = uuid_arg(c, 0);
	g_autofree char *fsl_uuid = c->fsl_uuid ? g_ascii_strdown(c->fsl_uuid, -1)
						: g_uuid_string_random();
	struct ff_nsdb_fsl fsl = { .read_rank = MAX(c->rank, 0), .read_order = MAX(c->order, 0) };
	char *msg = NULL;
	int rc;

	fsl.uuid = fsl_uuid;
	fsl.uri = g_ptr_array_index(c->args, 1);
	fsl.going = c->going == 1;
	rc = ff_nsdb_put_fsl(c->conn, fsn, &fsl, true, true, deadline(c), &msg);
	if (rc < 0)
		return failed(c, rc, msg);
	printf("%s\n", fsl_uuid);
	return 0;
}

static int sub_update_fsl(struct nsdb_cmd *c)
{
	g_autofree char *fsn = uuid_arg(c, 0), *fsl_uuid = uuid_arg(c, 1);
	struct ff_nsdb_fsl fsl = { .read_rank = c->rank, .read_order = c->order };
	char *msg = NULL;
	int rc;

	fsl.uuid = fsl_uuid;
	fsl.uri = (char *)c->uri;
	fsl.going = c->going == 1;
	rc = ff_nsdb_put_fsl(c->conn, fsn, &fsl, false, c->going >= 0, deadline(c), &msg);
	if (rc < 0)
		return failed(c, rc, msg);
	printf("updated FSL %s of FSN %s\n", fsl_uuid, fsn);
	return 0;
}

static int sub_remove_fsl(struct nsdb_cmd *c)
{
	g_autofree char *fsn = uuid_arg(c, 0), *fsl = uuid_arg(c, 1);
	char *msg = NULL;
	int rc;

	rc = ff_nsdb_delete_fsl(c->conn, fsn, fsl, deadline(c), &msg);
	if (rc < 0)
		return failed(c, rc, msg);
	printf("removed FSL %s of FSN %s\n", fsl, fsn);
	return 0;
}

static int sub_delete_fsn(struct nsdb_cmd *c)
{
	g_autofree char *fsn = uuid_arg(c, 0);
	char *msg = NULL;
	int rc;

	rc = ff_nsdb_delete_fsn(c->conn, fsn, deadline(c), &msg);
	if (rc < 0)
		return failed(c, rc, msg);
	printf("deleted FSN %s and its FSLs\n", fsn);
	return 0;
}

/* One FSN and its FSLs, as `list` prints them. 0, or 1 after complaining. An FSN found by
 * listing them all (not `named`) that is gone when read was deleted meanwhile: left out. */
static int list_fsn(struct nsdb_cmd *c, const char *uuid, bool named)
{
	g_autoptr(GPtrArray) bad = g_ptr_array_new_with_free_func(g_free);
	struct ff_nsdb_fsn *fsn = NULL;
	char *msg = NULL;
	int rc;

	rc = ff_nsdb_read_fsn(c->conn, uuid, deadline(c), &fsn, bad, &msg);
	if (rc == -ENOENT && !named) {
		g_free(msg);
		return 0;
	}
	if (rc < 0)
		return failed(c, rc, msg);
	printf("%s\tttl=%" G_GINT64_FORMAT "\n", fsn->uuid, fsn->ttl);
	for (guint i = 0; i < fsn->fsls->len; i++) {
		const struct ff_nsdb_fsl *fsl = fsn->fsls->pdata[i];
		g_autofree char *fsl_uuid = g_ascii_strdown(fsl->uuid, -1);
		g_autofree char *uri = tool_shown(fsl->uri);

		printf("\t%s\trank=%d\torder=%d\t%s%s\n", fsl_uuid, fsl->read_rank, fsl->read_order,
		       fsl->going ? "going\t" : "", uri);
	}
	for (guint i = 0; i < bad->len; i++)
		tool_complain("NSDB %s: %s (left out)", ff_nsdb_conn_server(c->conn),
			      (char *)bad->pdata[i]);
	ff_nsdb_fsn_free(fsn);
	return bad->len ? 1 : 0;
}

static int sub_list(struct nsdb_cmd *c)
{
	g_autoptr(GPtrArray) bad = g_ptr_array_new_with_free_func(g_free);
	GPtrArray *uuids = NULL;
	char *msg = NULL;
	int rc = 0;

	if (c->args->len == 0) {
		rc = ff_nsdb_list_fsns(c->conn, deadline(c), &uuids, bad, &msg);
		if (rc < 0)
			return failed(c, rc, msg);
		for (guint i = 0; i < bad->len; i++)
			tool_complain("NSDB %s: %s (left out)", ff_nsdb_conn_server(c->conn),
				      (char *)bad->pdata[i]);
		rc = bad->len ? 1 : 0;
	} else {
		uuids = g_ptr_array_new_with_free_func(g_free);
		for (guint i = 0; i < c->args->len; i++)
			g_ptr_array_add(uuids, uuid_arg(c, i));
	}
	for (guint i = 0; i < uuids->len; i++)
		rc |= list_fsn(c, uuids->pdata[i], c->args->len > 0);
	g_ptr_array_unref(uuids);
	return rc;
}

static const struct nsdb_sub subs[] = {
	[SUB_CREATE_FSN] = { "create-fsn", "at most one FSN-UUID", 0, 1, 1, true, sub_create_fsn },
	[SUB_ADD_FSL] = { "add-fsl", "an FSN-UUID and a URI", 2, 2, 1, true, sub_add_fsl },
	[SUB_UPDATE_FSL] = { "update-fsl", "an FSN-UUID and an FSL-UUID", 2, 2, 2, true,
			     sub_update_fsl },
	[SUB_REMOVE_FSL] = { "remove-fsl", "an FSN-UUID and an FSL-UUID", 2, 2, 2, true,
			     sub_remove_fsl },
	[SUB_DELETE_FSN] = { "delete-fsn", "one FSN-UUID", 1, 1, 1, true, sub_delete_fsn },
	[SUB_LIST] = { "list", "FSN-UUIDs or nothing", 0, G_MAXUINT, G_MAXUINT, false, sub_list },
	{ NULL },
};

/* ---- the command line, parsed -------------------------------------------------------------- */

/* A number from `lo` to `hi` (decimal digits only). */
static bool number_arg(const char *s, gint64 lo, gint64 hi, gint64 *out)
{
	char *end;

	if (!g_ascii_isdigit(s[0]))
		return false;
	errno = 0;
	*out = g_ascii_strtoll(s, &end, 10);
	return *end == '\0' && errno == 0 && *out >= lo && *out <= hi;
}

/* The value of option `o` into `c`. EXIT_SUCCESS, or EXIT_USAGE after complaining. */
static int set_option(struct nsdb_cmd *c, enum opt o, const char *v)
{
	gint64 n;
	char *end;

	switch (o) {
	case OPT_NSDB:
		c->nsdb = v;
		break;
	case OPT_BIND_DN:
		if (!*v)
			return tool_usage_error("-D: empty bind DN");
		c->bind_dn = v;
		break;
	case OPT_PW_FILE:
		c->pw_file = v;
		break;
	case OPT_SECURITY:
		c->security = v;
		break;
	case OPT_CA_FILE:
		c->ca_file = v;
		break;
	case OPT_TIMEOUT:
		c->timeout = g_ascii_strtod(v, &end);
		if (!*v || *end || !(c->timeout > 0 && c->timeout <= 3600))
			return tool_usage_error("--timeout: '%s' is not a number of seconds "
						"(0 < s <= 3600)",
						v);
		break;
	case OPT_TTL:
		if (!number_arg(v, 0, G_MAXUINT32, &c->ttl))
			return tool_usage_error("--ttl: '%s' is not a number of seconds from 0 to "
						"%u",
						v, G_MAXUINT32);
		break;
	case OPT_FSL_UUID:
		c->fsl_uuid = v;
		break;
	case OPT_URI:
		c->uri = v;
		break;
	case OPT_RANK:
	case OPT_ORDER:
		if (!number_arg(v, 0, 255, &n))
			return tool_usage_error("%s: '%s' is not a number from 0 to 255",
						options[o].name, v);
		*(o == OPT_RANK ? &c->rank : &c->order) = (int)n;
		break;
	case OPT_GOING:
	case OPT_NOT_GOING:
		c->going = o == OPT_GOING;
		break;
	}
	return EXIT_SUCCESS;
}

/* Which option `arg` is (with its value after '=' in *inline_value), or -1. */
static int option_of(const char *arg, const char **inline_value)
{
	*inline_value = NULL;
	for (guint o = 0; o < G_N_ELEMENTS(options); o++) {
		size_t n = strlen(options[o].name);

		if (strcmp(arg, options[o].name) == 0 ||
		    (options[o].alias && strcmp(arg, options[o].alias) == 0))
			return (int)o;
		if (options[o].value && strncmp(arg, options[o].name, n) == 0 && arg[n] == '=') {
			*inline_value = arg + n + 1;
			return (int)o;
		}
	}
	return -1;
}

/* The command line after "nsdb" into `c`: EXIT_SUCCESS or EXIT_USAGE. */
static int parse_args(struct nsdb_cmd *c, int argc, char **argv)
{
	bool options_end = false, going_seen = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value;
		int o;

		if (!options_end && strcmp(arg, "--") == 0) {
			options_end = true;
			continue;
		}
		if (options_end || arg[0] != '-' || arg[1] == '\0') {
			if (c->sub) {
				g_ptr_array_add(c->args, (gpointer)arg);
				continue;
			}
			for (guint s = 0; subs[s].name; s++) {
				if (strcmp(arg, subs[s].name) == 0) {
					c->which = (enum sub)s;
					c->sub = &subs[s];
				}
			}
			if (!c->sub)
				return tool_usage_error("nsdb: unknown subcommand '%s'", arg);
			continue;
		}
		o = option_of(arg, &value);
		if (o < 0)
			return tool_usage_error("nsdb%s%s: unknown option '%s'", c->sub ? " " : "",
						c->sub ? c->sub->name : "", arg);
		if (options[o].subs != SUB_ANY && !c->sub)
			return tool_usage_error("nsdb: %s comes after its subcommand",
						options[o].name);
		if (options[o].subs != SUB_ANY && !(options[o].subs & SUB_BIT(c->which)))
			return tool_usage_error("nsdb %s: unknown option '%s'", c->sub->name,
						options[o].name);
		if (options[o].value && !value) {
			if (i + 1 == argc)
				return tool_usage_error("%s needs a value", arg);
			value = argv[++i];
		}
		if (o == OPT_GOING || o == OPT_NOT_GOING) {
			if (going_seen && c->going != (o == OPT_GOING))
				return tool_usage_error("--going and --not-going contradict each "
							"other");
			going_seen = true;
		}
		rc = set_option(c, (enum opt)o, value);
		if (rc != EXIT_SUCCESS)
			return rc;
	}
	if (!c->sub)
		return tool_usage_error("nsdb needs a subcommand: create-fsn, add-fsl, update-fsl, "
					"remove-fsl, delete-fsn or list");
	if (c->args->len < c->sub->min_args || c->args->len > c->sub->max_args)
		return tool_usage_error("nsdb %s takes %s", c->sub->name, c->sub->args);
	if (c->pw_file && !c->bind_dn)
		return tool_usage_error("-y names the password of a bind DN: give -D BINDDN too");
	if (c->sub->writes && !c->bind_dn)
		return tool_usage_error("nsdb %s writes to the NSDB: give -D BINDDN (a DN that "
					"may write) and -y PASSWORD-FILE",
					c->sub->name);
	return EXIT_SUCCESS;
}

/* ---- nsdb ---------------------------------------------------------------------------------- */

/* Whether `arg` is a UUID, complaining that it is not. */
static bool uuid_ok(const char *arg, const char *what)
{
	g_autofree char *shown = NULL;

	if (ff_nsdb_uuid_valid(arg))
		return true;
	shown = tool_shown(arg);
	tool_complain("%s '%s' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", what, shown);
	return false;
}

/* What the subcommand's arguments must be before a password is asked for or the NSDB anything:
 * EXIT_SUCCESS, or EXIT_USAGE or 1 after complaining. */
static int check_args(struct nsdb_cmd *c)
{
	for (guint i = 0; i < c->args->len && i < c->sub->uuids; i++) {
		bool fsl = i == 1 && c->sub->uuids == 2; /* FSN-UUID FSL-UUID */

		if (!uuid_ok(g_ptr_array_index(c->args, i), fsl ? "FSL UUID" : "FSN UUID"))
			return 1;
	}
	if (c->fsl_uuid && !uuid_ok(c->fsl_uuid, "FSL UUID"))
		return 1;
	if (c->which == SUB_ADD_FSL && !uri_ok(g_ptr_array_index(c->args, 1)))
		return 1;
	if (c->which == SUB_UPDATE_FSL) {
		if (!c->uri && c->rank < 0 && c->order < 0 && c->going < 0)
			return tool_usage_error("nsdb update-fsl: nothing to change (give --uri, "
						"--rank, --order, --going or --not-going)");
		if (c->uri && !uri_ok(c->uri))
			return 1;
	}
	return EXIT_SUCCESS;
}

/* The NSDB's settings from --nsdb (or $FEDFUSE_NSDB), --security and --ca-file, with the
 * namespace file's rules and messages. EXIT_SUCCESS, or EXIT_USAGE or 1 after complaining. */
static int make_conf(struct nsdb_cmd *c)
{
	const char *name = c->nsdb, *from = "--nsdb";
	char *msg = NULL;

	if (!name) {
		name = getenv(NSDB_ENV);
		from = "$" NSDB_ENV;
	}
	if (!name || !*name)
		return tool_usage_error("nsdb: no NSDB given (--nsdb HOST[:PORT] or $%s)",
					NSDB_ENV);
	c->conf = ff_nsdb_conf_new(name, 0, &msg);
	if (!c->conf) {
		tool_complain("%s: %s", from, msg);
		g_free(msg);
		return 1;
	}
	if (c->security && !ff_nsdb_conf_set(c->conf, "security", c->security, &msg)) {
		tool_usage_error("--%s", msg);
		g_free(msg);
		return EXIT_USAGE;
	}
	if (c->ca_file && !ff_nsdb_conf_set(c->conf, "ca-file", c->ca_file, &msg)) {
		tool_complain("--%s", msg);
		g_free(msg);
		return 1;
	}
	return EXIT_SUCCESS;
}

int cmd_nsdb(int argc, char **argv)
{
	struct nsdb_cmd c = {
		.args = g_ptr_array_new(),
		.timeout = NSDB_TIMEOUT,
		.ttl = NSDB_TTL,
		.rank = -1,
		.order = -1,
		.going = -1,
	};
	char *msg = NULL;
	int rc;

	rc = parse_args(&c, argc, argv);
	if (rc == EXIT_SUCCESS)
		rc = check_args(&c);
	if (rc == EXIT_SUCCESS)
		rc = make_conf(&c);
	if (rc != EXIT_SUCCESS)
		goto out_free;
	if (c.bind_dn) {
		c.password = c.pw_file ? password_from_file(c.pw_file)
				       : password_from_tty(c.bind_dn);
		if (!c.password) {
			rc = 1;
			goto out_free;
		}
	}
	rc = ff_nsdb_connect(c.conf->name, c.conf, deadline(&c), c.bind_dn, c.password, &c.conn,
			     &msg);
	password_free(g_steal_pointer(&c.password));
	if (rc < 0) {
		tool_complain("%s", msg);
		g_free(msg);
		rc = 1;
		goto out_free;
	}
	rc = c.sub->fn(&c);
	ff_nsdb_close(c.conn);
out_free:
	password_free(c.password);
	ff_nsdb_conf_free(c.conf);
	g_ptr_array_unref(c.args);
	return rc;
}
