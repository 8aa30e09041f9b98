/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main.c - the fedfuse daemon: parse options, load and check the namespace file before
 * anything is mounted, mount, serve until unmounted or signalled, and re-read the namespace
 * file on SIGHUP.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "fedfuse/bdi.h"
#include "fedfuse/check.h"
#include "fedfuse/cred.h"
#include "fedfuse/devio.h"
#include "fedfuse/fedfuse.h"
#include "fedfuse/gateway.h"
#include "fedfuse/interrupt.h"
#include "fedfuse/log.h"
#include "fedfuse/loop.h"
#include "fedfuse/notify.h"
#include "fedfuse/plugins.h"
#include "fedfuse/uring.h"

enum { KEY_NONOPT_SEEN = 100 };

/* Arguments that are not options, in the order given: MOUNTPOINT, or (as mount.fuse3 calls
 * helpers for an fstab line "fedfuse#NAMESPACE_FILE") NAMESPACE_FILE MOUNTPOINT. */
struct positional {
	char *args[2];
	int count;
	bool extra;
};

enum { KEY_DEFAULT_PERMISSIONS = 1, KEY_SUID, KEY_DEV, KEY_ALLOW_SUID, KEY_ALLOW_DEV, KEY_CHECK };

/* Set-user-ID files and device nodes on a server take no effect through the mount (nosuid,
 * nodev) unless asked. Asked means `-o suid`/`-o dev` when fedfuse is started directly, or
 * `-o allow_suid`/`-o allow_dev` however it is started: mount(8) never passes `suid` or `dev`
 * to a helper (they are its defaults), and mount.fuse3 adds both to every mount it starts, in
 * the form with two arguments (NAMESPACE_FILE MOUNTPOINT), where they are ignored. */
static struct {
	bool suid, dev, allow_suid, allow_dev;
} special_files;

static const struct fuse_opt option_spec[] = {
	/* fuse_opt applies every template that matches, in order, and "--namespace %s" also
	 * matches "--namespace=FILE" (with "=FILE" as the value): the exact form comes last. */
	{ "--namespace %s", offsetof(struct ff_options, namespace_file), 0 },
	{ "--namespace=%s", offsetof(struct ff_options, namespace_file), 0 },
	{ "namespace=%s", offsetof(struct ff_options, namespace_file), 0 },
	{ "readahead=%u", offsetof(struct ff_options, readahead_kib), 0 },
	{ "noxattr", offsetof(struct ff_options, noxattr), 1 },
	{ "nouring", offsetof(struct ff_options, nouring), 1 },
	{ "uring_poll=%d", offsetof(struct ff_options, uring_poll_usec), 0 },
	/* Ours to know, the kernel's to enforce: noted, and passed on (option_proc). */
	FUSE_OPT_KEY("--check", KEY_CHECK),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_KEY("suid", KEY_SUID),
	FUSE_OPT_KEY("dev", KEY_DEV),
	FUSE_OPT_KEY("allow_suid", KEY_ALLOW_SUID),
	FUSE_OPT_KEY("allow_dev", KEY_ALLOW_DEV),
	/* fstab-only options: accepted and ignored, as mount(8) may pass them on (and x-*: see
	 * option_proc). */
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

static struct positional positional;
static bool check_mode; /* --check: a dry run (check.c) */

static int option_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct ff_options *opts = data;

	switch (key) {
	case KEY_DEFAULT_PERMISSIONS:
		opts->default_permissions = true;
		return 1;
	case KEY_SUID:
		special_files.suid = true;
		return 0; /* passed on by main() if it stands */
	case KEY_DEV:
		special_files.dev = true;
		return 0;
	case KEY_ALLOW_SUID:
		special_files.allow_suid = true;
		return 0;
	case KEY_ALLOW_DEV:
		special_files.allow_dev = true;
		return 0;
	case KEY_CHECK:
		check_mode = true;
		return 0;
	}
	if (key == FUSE_OPT_KEY_OPT && g_str_has_prefix(arg, "x-"))
		return 0; /* x-systemd.automount, x-mount.mkdir...: for other programs */
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1; /* keep: libfuse parses the rest */
	if (positional.count == 2) {
		positional.extra = true;
		return 0;
	}
	positional.args[positional.count++] = g_strdup(arg);
	return 0;
}

/* --check [--namespace FILE | FILE] [MOUNTPOINT] */
static int run_check(struct ff_options *opts)
{
	const char *file = opts->namespace_file ? opts->namespace_file : positional.args[0];
	const char *mnt = opts->namespace_file ? positional.args[0] : positional.args[1];
	int ret = 1;

	if (!file)
		fprintf(stderr, "fedfuse: --check needs a namespace file (see --help)\n");
	else if (positional.extra || (opts->namespace_file && positional.count > 1))
		fprintf(stderr, "fedfuse: too many arguments (see --help)\n");
	else
		ret = ff_check(file, mnt);
	g_free(opts->namespace_file);
	g_free(positional.args[0]);
	g_free(positional.args[1]);
	return ret;
}

static void usage(const char *prog)
{
	printf("usage: %s [options] MOUNTPOINT\n"
	       "       %s NAMESPACE_FILE MOUNTPOINT [-o options]   (the form mount.fuse3 uses)\n"
	       "       %s --check NAMESPACE_FILE [MOUNTPOINT]\n"
	       "\n"
	       "Mounts the federated namespace described by a namespace file.\n"
	       "\n"
	       "fedfuse options:\n"
	       "    --namespace=FILE       the namespace file, see fedfuse.namespace(5)\n"
	       "    -o namespace=FILE      the same, as a mount option\n"
	       "    -o readahead=KIB       the kernel's read-ahead window for the mount, when\n"
	       "                           run as root (default 1024; 0: the kernel's 128)\n"
	       "    -o noxattr             no extended attributes (nor POSIX ACLs) through the\n"
	       "                           mount: ls -l and writes then cost one request less\n"
	       "                           per file and per write\n"
	       "    -o nouring             requests through /dev/fuse only, even where the\n"
	       "                           kernel offers FUSE over io_uring (its fuse module's\n"
	       "                           enable_uring): see README\n"
	       "    -o uring_poll=USEC     how long a thread of an io_uring ring looks for the\n"
	       "                           next request before it sleeps (default 50; 0: it\n"
	       "                           sleeps at once, using no CPU while it waits)\n"
	       "    -o allow_suid          set-user-ID and set-group-ID bits take effect (the\n"
	       "                           default is nosuid; -o suid too, started directly)\n"
	       "    -o allow_dev           device nodes can be opened (the default is nodev;\n"
	       "                           -o dev too, started directly)\n"
	       "    --check                validate the namespace file and probe each location\n"
	       "                           (exit 0 only if all answer); with MOUNTPOINT, also\n"
	       "                           print what a reload (SIGHUP) of that mount would\n"
	       "                           change. Mounts nothing, changes nothing\n"
	       "    -h   --help            print this help\n"
	       "    -V   --version         print the version\n"
	       "\n",
	       prog, prog, prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Tell systemd how the service is (a Type=notify unit: fedfuse@.service); nothing when it was
 * not started by systemd. The text holds lines such as "READY=1" (sd_notify(3)). */
static G_GNUC_PRINTF(1, 2) void notify_service(const char *fmt, ...)
{
#ifdef HAVE_LIBSYSTEMD
	va_list ap;
	char *state;

	va_start(ap, fmt);
	state = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	sd_notify(0, state);
	g_free(state);
#else
	(void)fmt;
#endif
}

/* SIGHUP: a handler may only write to a pipe; a thread does the reload. */
static int hup_pipe[2] = { -1, -1 };

static void hup_handler(int sig)
{
	int saved = errno;
	char c = 1;

	if (write(hup_pipe[1], &c, 1) < 0) {
		/* a reload is already pending */
	}
	errno = saved;
}

static void *reload_thread(void *data)
{
	struct ff_state *s = data;
	char c;

	while (read(hup_pipe[0], &c, 1) == 1) {
		notify_service("RELOADING=1\nMONOTONIC_USEC=%" G_GINT64_FORMAT,
			       g_get_monotonic_time());
		if (ff_state_reload(s))
			notify_service("READY=1\nSTATUS=namespace reloaded");
		else
			notify_service("READY=1\nSTATUS=reload failed: the namespace in force is "
				       "kept (see the log)");
	}
	return NULL;
}

static int setup_reload(struct ff_state *s, pthread_t *thread)
{
	struct sigaction sa = { .sa_handler = hup_handler, .sa_flags = SA_RESTART };
	int rc;

	if (pipe2(hup_pipe, O_CLOEXEC) < 0)
		return -errno;
	rc = -pthread_create(thread, NULL, reload_thread, s); /* signals blocked: see main() */
	if (rc < 0)
		return rc;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGHUP, &sa, NULL) < 0 ? -errno : 0;
}

static void stop_reload(pthread_t thread)
{
	signal(SIGHUP, SIG_DFL);
	close(hup_pipe[1]);
	pthread_join(thread, NULL);
	close(hup_pipe[0]);
}

/* ---- startup ------------------------------------------------------------------------------- */

/* Every cached inode of a local location holds a descriptor: allow as many as we may. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	unsigned long nr_open = 0;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	/* Root may go up to the kernel's own limit. */
	f = geteuid() == 0 ? fopen("/proc/sys/fs/nr_open", "r") : NULL;
	if (f) {
		if (fscanf(f, "%lu", &nr_open) == 1 && nr_open > rl.rlim_max)
			rl.rlim_max = nr_open;
		fclose(f);
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max; /* not allowed to raise the hard limit: the soft one */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Few malloc arenas. glibc gives each thread that allocates its own arena (up to 8 per core),
 * so the inodes a `find` creates are spread over as many arenas as there were worker threads,
 * each with its own slack. Two arenas (per-thread caches still serve the small allocations of
 * a request) took a cached NFS inode from about 322 to 298 bytes. Not when MALLOC_ARENA_MAX
 * says otherwise. */
static void limit_arenas(void)
{
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 2);
}

/*
 * Buffers of a MiB or more (a WRITE's data kept for write-behind, libnfs' and libsmbclient's
 * messages, read-ahead blocks) come and go at every request of a copy. From mmap() each would
 * cost its pages' faults and zeroing again, and so would heap memory that free() gives back to
 * the system at once: half the daemon's time in a 1 GiB NFSv3 write. So they come from the
 * heap (those below MALLOC_MMAP_MAX), which keeps up to MALLOC_KEEP of free
 * memory per arena (two of them, limit_arenas()) while data flows; once a written file is
 * closed, the next quiet pass of the prober gives it back (ff_memory_freed()).
 * MALLOC_KEEP is above what one file's writing frees at once: an NFSv3 file keeps 32 MiB
 * answered UNSTABLE and frees them at its COMMIT, with its window and libnfs' messages on top.
 * dd bs=1M conv=fsync of 1 GiB through nfs:// v3 on loopback (ganesha on tmpfs, 12 runs
 * each, alternated): with 32 MiB, 21k-56k page faults, 0.94-2.20 s of the daemon's CPU
 * (median 1.30) and 1.80-3.70 s in all (median 2.2); with 128 MiB, 3.6k-30k, 0.64-1.27 s
 * (0.79) and 1.30-2.19 s (1.72). Not when the environment sets either (MALLOC_MMAP_THRESHOLD_,
 * MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES).
 */
#define MALLOC_MMAP_MAX (16 * 1024 * 1024)
#define MALLOC_KEEP (128 * 1024 * 1024)

static void keep_big_buffers(void)
{
	if (getenv("MALLOC_MMAP_THRESHOLD_") || getenv("MALLOC_TRIM_THRESHOLD_") ||
	    getenv("GLIBC_TUNABLES"))
		return;
	mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_MAX);
	mallopt(M_TRIM_THRESHOLD, MALLOC_KEEP);
}

static int serve(struct ff_state *s, struct fuse_cmdline_opts *cmd)
{
	struct fuse_loop_config *config;
	int rc;

	if (cmd->singlethread)
		return fuse_session_loop(s->se);
	if (!cmd->clone_fd) /* loop.c cannot give each thread a descriptor of its own */
		return ff_loop_run(s->se,
				   cmd->max_idle_threads == UINT_MAX ? 0 : cmd->max_idle_threads,
				   cmd->max_threads);
	config = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(config, cmd->clone_fd);
	if (cmd->max_idle_threads != UINT_MAX) /* UINT_MAX: not given */
		fuse_loop_cfg_set_idle_threads(config, cmd->max_idle_threads);
	if (cmd->max_threads > 0 && cmd->max_threads <= 100000)
		fuse_loop_cfg_set_max_threads(config, cmd->max_threads);
	rc = fuse_session_loop_mt(s->se, config);
	fuse_loop_cfg_destroy(config);
	return rc;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	g_autoptr(GError) err = NULL;
	struct ff_state s = { 0 };
	char *mountpoint = NULL;
	sigset_t all, old_mask;
	pthread_t reloader;
	int ret = 1, rc;

	s.opts.readahead_kib = 1024;
	s.opts.uring_poll_usec = -1;
	if (fuse_opt_parse(&args, &s.opts, option_spec, option_proc) < 0)
		return 1;
	if (check_mode) {
		ret = run_check(&s.opts);
		fuse_opt_free_args(&args);
		return ret;
	}
	if (positional.count == 2 && !s.opts.namespace_file) {
		s.opts.namespace_file = g_steal_pointer(&positional.args[0]);
		positional.args[0] = positional.args[1];
		positional.count = 1;
		special_files.suid = special_files.dev = false; /* mount.fuse3's, not the admin's */
	}
	if (special_files.suid || special_files.allow_suid)
		fuse_opt_add_arg(&args, "-osuid");
	if (special_files.dev || special_files.allow_dev)
		fuse_opt_add_arg(&args, "-odev");
	if (positional.extra || positional.count > 1) {
		fprintf(stderr, "fedfuse: too many arguments (see --help)\n");
		return 1;
	}
	if (positional.count == 1)
		fuse_opt_add_arg(&args, positional.args[0]);
	s.default_permissions = s.opts.default_permissions;
	s.noxattr = s.opts.noxattr;
	if (s.opts.uring_poll_usec < -1 || s.opts.uring_poll_usec > 1000000) {
		fprintf(stderr, "fedfuse: uring_poll=%d: microseconds from 0 to 1000000\n",
			s.opts.uring_poll_usec);
		goto out_args;
	}
	if (s.opts.uring_poll_usec >= 0)
		ff_uring_set_poll(s.opts.uring_poll_usec);
	if (fuse_parse_cmdline(&args, &cmd) != 0)
		return 1;
	if (cmd.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out_args;
	}
	if (cmd.show_version) {
		printf("fedfuse %s\n", PACKAGE_VERSION);
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	if (!s.opts.namespace_file) {
		fprintf(stderr,
			"fedfuse: no namespace file given (--namespace FILE; see --help)\n");
		goto out_args;
	}
	if (!cmd.mountpoint) {
		fprintf(stderr, "fedfuse: no mount point given (see --help)\n");
		goto out_args;
	}

	/* Everything the namespace file says is checked before anything is mounted. */
	s.ns = ff_namespace_load(s.opts.namespace_file, ff_plugin_check_location, NULL, &err);
	if (!s.ns) {
		fprintf(stderr, "%s\n", err->message);
		goto out_args;
	}
	/* Reloads happen after the daemon has changed to "/". */
	mountpoint = g_canonicalize_filename(s.opts.namespace_file, NULL);
	g_free(s.opts.namespace_file);
	s.opts.namespace_file = g_steal_pointer(&mountpoint);
	ff_state_init(&s);
	raise_fd_limit();
	limit_arenas();
	keep_big_buffers();
	ff_log_init(true, cmd.debug);

	s.se = fuse_session_new(&args, &ff_ops, sizeof(ff_ops), &s);
	if (!s.se)
		goto out_state;
	if (fuse_set_signal_handlers(s.se) != 0)
		goto out_session;
	ff_intr_watch_session(s.se);
	if (fuse_session_mount(s.se, cmd.mountpoint) != 0)
		goto out_signals;
	/* One thread (-s) means one; loop.c's workers cannot clone the descriptor either. */
	rc = ff_devio_install(s.se, !s.opts.nouring && !cmd.singlethread && !cmd.clone_fd);
	if (rc < 0)
		ff_warn("lookups in one directory will be served one at a time: %s",
			g_strerror(-rc));
	ff_bdi_set_readahead(cmd.mountpoint, s.opts.readahead_kib);
	if (fuse_daemonize(cmd.foreground) != 0)
		goto out_unmount;
	ff_log_init(cmd.foreground, cmd.debug);
	/* Threads are started only now: fuse_daemonize() forks, and threads do not survive it.
	 * None of them (nor the backends' threads they start) may take the signals meant for the
	 * session loop: libfuse's handler only marks the session as exiting, which the loop
	 * notices when the signal interrupts it or one of its workers. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old_mask);
	s.mounts = ff_mounts_new();
	rc = setup_reload(&s, &reloader);
	if (rc == 0) {
		s.locks = ff_locks_new();
		ff_notify_start(s.se, s.itab, s.absent);
	}
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (rc < 0) {
		ff_err("cannot set up SIGHUP handling");
		goto out_unmount;
	}
	ff_info("serving %s on %s", s.opts.namespace_file, cmd.mountpoint);
	/* Ready once mounted: the kernel queues requests until the loop below takes them. */
	notify_service("READY=1\nSTATUS=serving %s on %s", s.opts.namespace_file, cmd.mountpoint);
	ret = serve(&s, &cmd);
	notify_service("STOPPING=1");
	ff_locks_stop(s.locks); /* answers the requests still waiting for a lock */
	ff_uring_stop();
	/* A signal that asked us to stop is a clean stop. */
	if (ret == SIGINT || ret == SIGTERM)
		ret = 0;
	stop_reload(reloader);
out_unmount:
	ff_notify_stop();
	fuse_session_unmount(s.se);
out_signals:
	fuse_remove_signal_handlers(s.se);
out_session:
	ff_intr_watch_session(NULL);
	fuse_session_destroy(s.se);
out_state:
	ff_release_all(&s);
	ff_state_clear(&s);
out_args:
	g_free(s.opts.namespace_file);
	g_free(positional.args[0]);
	free(cmd.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
