# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the fedfuse integration suite (DESIGN §9): mount the built daemon over a namespace
of temp dirs or loopback servers, hand the mount to a test, unmount and check the daemon's log.

Every test that takes `mounted` runs once per backend kind (file, nfs3, nfs4, smb). Without
FEDFUSE_TEST_BACKENDS the network kinds run when scripts/test-servers has described their servers
in servers.env and are reported as skipped otherwise; with FEDFUSE_TEST_BACKENDS=file,nfs3,...
exactly those kinds run and a missing server or backend module is a failure.
"""

import errno
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("FEDFUSE_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
BUILDDIR = os.environ.get("FEDFUSE_BUILDDIR") or SRCDIR
DAEMON = os.path.join(BUILDDIR, "fedfuse", "fedfuse")
BACKEND_DIRS = [os.path.join(BUILDDIR, "backends", d, ".libs") for d in ("local", "nfs", "smb", "mem")]
STATE = os.environ.get("FEDFUSE_TEST_STATE", "/tmp/fedfuse-servers")
SERVERS_ENV = os.path.join(STATE, "servers.env")

# A command every daemon of the tests runs under (scripts/check --valgrind: valgrind ...).
DAEMON_WRAPPER = shlex.split(os.environ.get("FEDFUSE_DAEMON_WRAPPER", ""))
# seconds to wait for the mount to appear, and for the daemon to exit
MOUNT_TIMEOUT = float(os.environ.get("FEDFUSE_MOUNT_TIMEOUT", "10"))
TEST_TIMEOUT = float(os.environ.get("FEDFUSE_TEST_TIMEOUT", "120"))  # per test, then SIGKILL

# ---- backend kinds and what each can do ------------------------------------------------------

# kind -> (URI key, on-disk dir key in servers.env, backend module)
KINDS = {
    "file": (None, None, "file"),
    "nfs3": ("NFS_V3_URI", "NFS_V3_DIR", "nfs"),
    "nfs4": ("NFS_V4_URI", "NFS_V4_DIR", "nfs"),
    "smb": ("SMB_URI", "SMB_DIR", "smb"),
}

# What each kind supports. True: works like a local POSIX filesystem. An errno: the operation
# must fail with exactly that errno (tests assert it instead of skipping). Other values are
# explained where they appear.
_POSIX = {
    "hardlink": True,  # link()
    "symlink": True,  # symlink(), and symlinks made on the server show as symlinks
    "fifo": True,  # mknod() of a fifo
    # True: all 12 permission bits are stored. "write-bit": like mount.cifs without unix
    # extensions, chmod succeeds, files keep only "writable or not" (the DOS read-only
    # attribute), directories keep dir_mode.
    "chmod": True,
    "xattr": True,  # user.* extended attributes
    "time_res_ns": 1,  # granularity of timestamps set through the mount
    "stat_res_ns": 1,  # granularity of timestamps read through the mount
    "st_blocks": True,  # st_blocks is the server's; False: derived from st_size
    "symlink_times": True,  # times set on a symlink itself (utimensat AT_SYMLINK_NOFOLLOW) stick
    "case_sensitive": True,  # "A" and "a" name two entries
}
CAPS = {
    "file": dict(_POSIX),
    # ENOTSUP == EOPNOTSUPP on Linux. nfs-ganesha 4.3 (VFS) answers SETATTR of a symlink's times
    # with success and keeps the old times.
    "nfs3": dict(_POSIX, xattr=errno.ENOTSUP, symlink_times=False),
    "nfs4": dict(_POSIX, xattr=errno.ENOTSUP, symlink_times=False),
    # Checked against backends/smb/smb.c (no unix extensions): link, symlink and mknod answer
    # EPERM as vfat does; user.* xattrs EOPNOTSUPP (libsmbclient exposes no EAs); times go
    # through smbc_utimes(), which takes a struct timeval, so microseconds (SMB itself has
    # 100 ns). TODO: revisit if the backend gains SMB3 POSIX extensions or raw SET_INFO.
    "smb": dict(
        _POSIX,
        hardlink=errno.EPERM,
        symlink=errno.EPERM,
        fifo=errno.EPERM,
        chmod="write-bit",
        xattr=errno.ENOTSUP,
        time_res_ns=1000,
        stat_res_ns=100,
        st_blocks=False,  # libsmbclient computes st_blocks from the size
        case_sensitive=False,  # Samba matches names without case by default
    ),
}

# How long a change made behind the daemon's back may take to show through the mount. Local
# locations are watched (change notification invalidates the kernel caches at once, but
# asynchronously); network ones are bounded by the attribute timeout (1 s by default).
VISIBLE_WITHIN = {"file": 1.0, "nfs3": 3.0, "nfs4": 3.0, "smb": 3.0}


def caps(kind, what):
    return CAPS[kind][what]


def supports(kind, what):
    return CAPS[kind][what] is True


def read_servers_env(path=SERVERS_ENV):
    """KEY=VALUE lines written by scripts/test-servers; {} when there are none."""
    env = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                key, value = line.split("=", 1)
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                env[key.strip()] = value
    except FileNotFoundError:
        pass
    return env


def requested_kinds():
    """The kinds FEDFUSE_TEST_BACKENDS names, or None when it is unset or empty."""
    value = os.environ.get("FEDFUSE_TEST_BACKENDS", "").strip()
    if not value:
        return None
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise pytest.UsageError(
            f"FEDFUSE_TEST_BACKENDS: unknown kind(s) {', '.join(unknown)} "
            f"(known: {', '.join(KINDS)})")
    return kinds


def backend_module_present(module):
    dirs = os.environ.get("FEDFUSE_BACKEND_DIR", ":".join(BACKEND_DIRS)).split(":")
    return any(os.path.exists(os.path.join(d, module + ".so")) for d in dirs if d)


def pytest_configure(config):
    requested_kinds()  # refuse a bad FEDFUSE_TEST_BACKENDS before collecting anything


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        kinds = requested_kinds() or list(KINDS)
        metafunc.parametrize("backend", kinds, indirect=True, ids=kinds)


@pytest.fixture
def backend(request):
    """The backend kind under test; skipped (or failed, when requested) if it cannot run."""
    kind = request.param
    strict = requested_kinds() is not None
    uri_key, dir_key, module = KINDS[kind]
    problem = None
    if uri_key is not None:
        env = read_servers_env()
        if not env.get(uri_key) or not env.get(dir_key):
            problem = (f"{SERVERS_ENV} has no {uri_key}/{dir_key} "
                       f"(run scripts/test-servers start)")
    if problem is None and not backend_module_present(module):
        problem = f"backend module {module}.so not built (looked in FEDFUSE_BACKEND_DIR)"
    if problem is not None:
        if strict:
            pytest.fail(f"{kind}: {problem}; FEDFUSE_TEST_BACKENDS asks for it", pytrace=False)
        pytest.skip(f"{kind}: {problem}")
    return kind


# ---- the daemon --------------------------------------------------------------------------------

# Log lines that mean something went wrong, unless a test expects them.
BAD_LOG = re.compile(r"^fedfuse: (warning|error|critical|alert|emergency):|^fuse: |fatal|"
                     r"AddressSanitizer|LeakSanitizer|ThreadSanitizer|"
                     r"UndefinedBehaviorSanitizer|runtime error|^\(process:\d+\): \w+-(WARNING|CRITICAL)",
                     re.I | re.M)


def daemon_env():
    env = dict(os.environ)
    env.setdefault("FEDFUSE_BACKEND_DIR", ":".join(BACKEND_DIRS))
    return env


def check_daemon_built():
    if not os.access(DAEMON, os.X_OK):
        pytest.fail(f"{DAEMON} is not built (set FEDFUSE_BUILDDIR)", pytrace=False)


def run_daemon(args, timeout=MOUNT_TIMEOUT, **kw):
    """Run the daemon to completion (for options that exit before mounting)."""
    check_daemon_built()
    return subprocess.run(DAEMON_WRAPPER + [DAEMON] + args, env=daemon_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, **kw)


def uri_below(uri, sub):
    """`uri` with `/sub` appended to its path (before any `?query`)."""
    base, q, query = uri.partition("?")
    return base.rstrip("/") + "/" + sub + q + query


def file_uri(path):
    return "file://" + path


def is_mounted(path):
    """True if something is mounted on `path`, per /proc/self/mountinfo: unlike
    os.path.ismount this also sees a dead FUSE mount ("Transport endpoint is not connected")."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4]
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)
            if point == path:
                return True
    return False


def default_stop_signals():
    """In the daemon's child before exec: SIGINT and SIGQUIT as a terminal gives them. A test
    run started in the background by a non-interactive shell inherits them ignored, and libfuse
    (rightly) leaves an ignored signal alone, so Ctrl-C would not stop the daemon."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


class Mount:
    """One running daemon. start() mounts, stop() unmounts and checks the exit and the log."""

    def __init__(self, mnt, namespace, log, extra_args=(), wrapper=(), hang_timeout=None):
        self.mnt = mnt
        self.hang_timeout = hang_timeout or TEST_TIMEOUT  # then the daemon is killed
        self.wrapper = list(wrapper)  # a command the daemon runs under (prlimit, setpriv...)
        self.namespace = namespace
        self.log = log
        self.extra_args = list(extra_args)
        self.ns_args = ["--namespace", namespace]
        self.proc = None
        self.expected_log = []
        self.timed_out = False
        self._watchdog = None

    def expect_log(self, pattern):
        """Declare that log lines matching `pattern` (a regex) are expected, not a failure."""
        self.expected_log.append(re.compile(pattern))

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def start(self):
        check_daemon_built()
        args = (self.wrapper + DAEMON_WRAPPER + [DAEMON, "-f", "-o", "allow_other,default_permissions"] + self.ns_args
                + self.extra_args + [self.mnt])
        with open(self.log, "ab") as logf:
            logf.write(("# " + " ".join(args) + "\n").encode())
            logf.flush()
            self.proc = subprocess.Popen(args, env=daemon_env(), stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         preexec_fn=default_stop_signals)
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                pytest.fail(f"daemon exited with {self.proc.returncode} before mounting:\n"
                            + self.log_text(), pytrace=False)
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                pytest.fail(f"not mounted after {MOUNT_TIMEOUT} s:\n" + self.log_text(),
                            pytrace=False)
            time.sleep(0.02)
        self._watchdog = threading.Timer(self.hang_timeout, self._hung)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self

    def _hung(self):
        # A hung daemon would hang the test in the kernel; killing it fails every pending
        # request with ENOTCONN, so the test ends and teardown reports the hang.
        self.timed_out = True
        self.proc.kill()

    def mounted(self):
        return is_mounted(self.mnt)

    def unmount(self):
        """fusermount3 -u, retried while busy, then lazily (-uz) as a last resort."""
        for _ in range(20):
            if subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True).returncode == 0:
                return True
            if not self.mounted():
                return True
            time.sleep(0.1)
        subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        return False

    def wait(self, timeout=MOUNT_TIMEOUT):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def stop(self):
        """Unmount (if still mounted), wait for the daemon; return a list of problems."""
        problems = []
        if self._watchdog:
            self._watchdog.cancel()
        if self.proc is None:
            return problems
        if self.timed_out:
            problems.append(f"test hung for {self.hang_timeout} s: daemon killed")
        if self.proc.poll() is None or self.mounted():
            if not self.unmount():
                problems.append("fusermount3 -u kept failing (busy?); unmounted lazily")
        rc = self.wait()
        if rc is None:
            problems.append(f"daemon did not exit within {MOUNT_TIMEOUT} s of unmount; killed")
        elif rc != 0 and not self.timed_out:
            problems.append(f"daemon exited with {rc}")
        if self.mounted():
            problems.append("still mounted after the daemon exited")
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        problems += self.log_problems()
        return problems

    def log_problems(self):
        bad = []
        for line in self.log_text().splitlines():
            if line.startswith("# "):
                continue
            if BAD_LOG.search(line) and not any(p.search(line) for p in self.expected_log):
                bad.append("unexpected log line: " + line)
        return bad


def stop_or_fail(m):
    problems = m.stop()
    if problems:
        pytest.fail("\n".join(problems) + "\n--- daemon log ---\n" + m.log_text(), pytrace=False)


def write_namespace(path, referrals, options=None):
    """referrals: list of (namespace path, [uri, ...]) in file order."""
    lines = ["[namespace]"]
    for k, v in (options or {}).items():
        lines.append(f"{k}={v}")
    for ns_path, uris in referrals:
        lines += ["", f"[{ns_path}]", "locations=" + ";".join(uris)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Layout:
    """The backing dirs of one test: name -> (URI, dir on disk)."""

    def __init__(self, kind, tmp):
        self.kind = kind
        self.uris = {}
        self.src = {}
        self._cleanup = []
        uri_key, dir_key, _ = KINDS[kind]
        for name in ("a", "b", "nested", "deep"):
            if uri_key is not None and name in ("a", "b"):
                env = read_servers_env()
                sub = f"it-{os.getpid()}-{name}-{os.path.basename(tmp)}"
                d = os.path.join(env[dir_key], sub)
                shutil.rmtree(d, ignore_errors=True)
                os.mkdir(d)
                os.chmod(d, 0o755)
                self._cleanup.append(d)
                self.uris[name] = uri_below(env[uri_key], sub)
            else:
                d = os.path.join(tmp, "loc-" + name)
                os.mkdir(d)
                os.chmod(d, 0o755)
                self.uris[name] = file_uri(d)
            self.src[name] = d

    def referrals(self):
        return [("/a", [self.uris["a"]]), ("/b", [self.uris["b"]]),
                ("/a/nested", [self.uris["nested"]]), ("/virt/deep", [self.uris["deep"]])]

    def cleanup(self):
        for d in self._cleanup:
            shutil.rmtree(d, ignore_errors=True)


class Mounted:
    """What a test gets: .mnt, .src (name -> backing dir), .log, .kind, and helpers."""

    def __init__(self, m, layout, tmp):
        self.m = m
        self.mnt = m.mnt
        self.log = m.log
        self.src = layout.src
        self.kind = layout.kind
        self.capabilities = CAPS[layout.kind]
        self.tmp = tmp
        self.namespace = m.namespace
        self.layout = layout

    def p(self, *parts):
        """A path in the mount."""
        return os.path.join(self.mnt, *parts)

    def d(self, name, *parts):
        """A path in backing dir `name` on disk."""
        return os.path.join(self.src[name], *parts)

    def expect_log(self, pattern):
        self.m.expect_log(pattern)

    def caps(self, what):
        return caps(self.kind, what)

    def supports(self, what):
        return supports(self.kind, what)


@pytest.fixture
def mounted(backend, tmp_path):
    """The daemon mounted over /a, /b (backend `backend`), /a/nested and /virt/deep (file)."""
    tmp = str(tmp_path)
    layout = Layout(backend, tmp)
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    ns = os.path.join(tmp, "namespace.conf")
    write_namespace(ns, layout.referrals())
    m = Mount(mnt, ns, os.path.join(tmp, "fedfuse.log"))
    try:
        m.start()
        yield Mounted(m, layout, tmp)
        stop_or_fail(m)
    finally:
        if m.proc is not None and m.proc.poll() is None:
            m.stop()
        layout.cleanup()


@pytest.fixture
def mount_factory(tmp_path):
    """For tests that need their own namespace or want to stop the daemon themselves."""
    mounts = []

    def make(ns_text=None, referrals=None, extra_args=(), name="m", wrapper=(),
             hang_timeout=None):
        base = os.path.join(str(tmp_path), name)
        os.mkdir(base)
        mnt = os.path.join(base, "mnt")
        os.mkdir(mnt)
        ns = os.path.join(base, "namespace.conf")
        if ns_text is not None:
            with open(ns, "w") as f:
                f.write(ns_text)
        else:
            write_namespace(ns, referrals)
        m = Mount(mnt, ns, os.path.join(base, "fedfuse.log"), extra_args, wrapper, hang_timeout)
        mounts.append(m)
        return m

    yield make
    problems = []
    for m in mounts:
        if m.proc is not None:
            problems += m.stop()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def servers_stopped_midway(tmp_path_factory):
    """For a module whose tests stop servers in the middle of operations: the sanitizer build's
    daemons started meanwhile also take the suppressions of test/lsan-stopped-servers.supp
    (leaks inside libraries on paths that only a server stopped at the wrong moment takes).
    Without LSAN_OPTIONS (not a sanitizer build) nothing changes."""
    old = os.environ.get("LSAN_OPTIONS")
    match = re.search(r"(?:^|:)suppressions=([^:]+)", old or "")
    if match:
        combined = tmp_path_factory.mktemp("lsan") / "lsan.supp"
        with open(match.group(1)) as base, \
                open(os.path.join(SRCDIR, "test", "lsan-stopped-servers.supp")) as extra:
            combined.write_text(base.read() + "\n" + extra.read())
        os.environ["LSAN_OPTIONS"] = old.replace(match.group(0), match.group(0).replace(
            match.group(1), str(combined)), 1)
    try:
        yield
    finally:
        if match:
            os.environ["LSAN_OPTIONS"] = old


# Fixtures of the fault and junction modules that start servers of a kind themselves.
_FIXTURE_KINDS = {"smb445": ("smb",), "private_nfs": ("nfs3",), "priv": ("nfs3", "smb"),
                  "nsdb": ("nfs3",), "private_nsdb": ("nfs3",), "short_lease": ("nfs4",),
                  "addc": ("smb",)}


@pytest.fixture(autouse=True)
def _requested_kinds_only(request):
    """Tests that need a kind of server FEDFUSE_TEST_BACKENDS does not name are not run (the
    kinds a run covers are chosen in one place)."""
    wanted = requested_kinds()
    if wanted is None:
        return
    needs = set()
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    for key in ("kind", "nfs_kind"):
        if params.get(key) in KINDS:
            needs.add(params[key])
    if "nfs_kind" in params:
        needs.add("smb")  # failover from NFS to an SMB replica
    for name, kinds in _FIXTURE_KINDS.items():
        if name in request.fixturenames and not (needs & set(kinds)):
            needs.update(kinds)
    missing = sorted(needs - set(wanted))
    if missing:
        pytest.skip(f"FEDFUSE_TEST_BACKENDS does not name {', '.join(missing)}")


# The folders the shared servers export, which tests fill through the servers and directly.
_EXPORT_DIR_KEYS = ("NFS_V3_DIR", "NFS_V4_DIR", "SMB_DIR", "SMB_USER_DIR", "SMB_MULTI_DIR")


@pytest.fixture(scope="session", autouse=True)
def _exports_left_as_found():
    """What the tests made in the shared exports goes when the run ends, kept or not by the
    test that made it (a failed test leaves its files until then): runs after runs must not
    fill the disk the servers export from."""
    env = read_servers_env()
    dirs = [env[k] for k in _EXPORT_DIR_KEYS if env.get(k) and os.path.isdir(env[k])]
    before = {d: set(os.listdir(d)) for d in dirs}
    yield
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name in before[d]:
                continue
            path = os.path.join(d, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


@pytest.fixture(autouse=True)
def _record_nodeid(request, record_property):
    # run-pytest turns the junit report into TAP and names each test by its node id.
    record_property("nodeid", request.node.nodeid)


@pytest.fixture
def git_env(tmp_path):
    """An environment in which git reads no user or system configuration."""
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / ".gitconfig"
    cfg.write_text("[user]\n\tname = Fed Fuse\n\temail = fedfuse@example.org\n"
                   "[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n")
    env = dict(os.environ)
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(cfg),
               XDG_CONFIG_HOME=str(home), TZ="UTC", LC_ALL="C")
    return env
