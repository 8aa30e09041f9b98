# SPDX-License-Identifier: GPL-2.0-or-later
"""Private loopback servers for the fault and junction tests: a ganesha and/or an smbd of a test
module's own, started through scripts/test-servers with their own state folder and ports, so
that a test may stop, freeze or kill them without touching the shared servers (whose state is
/tmp/fedfuse-servers and which are never stopped here).

Also: small helpers to read /.fedfuse/stats and /.fedfuse/locations, to run an operation with
a time bound, and to poll.
"""

import atexit
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import SRCDIR, read_servers_env

TEST_SERVERS = os.path.join(SRCDIR, "scripts", "test-servers")


# ---- ports -------------------------------------------------------------------------------------

def port_listens(port, host="127.0.0.1", timeout=1.0):
    """True if something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_ports(n):
    """n distinct TCP ports free on 127.0.0.1 now (bound and released: a small race remains)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            socks.append(s)
            # stay clear of the ports the shared servers and scripts use by default
            if port not in ports and port not in (445, 2049, 4445, 12049, 12050):
                ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


# ---- private servers ---------------------------------------------------------------------------

_LIVE = set()  # PrivateServers not cleaned up yet, for the atexit safety net


class PrivateServers:
    """One ganesha, one smbd and/or one NSDB pair (slapd) of our own. start() runs scripts/test-servers start with
    FEDFUSE_TEST_STATE pointing at a private folder; .env is its servers.env afterwards."""

    def __init__(self, smb_ports=None, prefix="fedfuse-priv-", lease=None):
        # Short path: it ends up in NFS export paths and URIs.
        self.state = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        os.chmod(self.state, 0o755)
        (self.nfs_port, self.mnt_port, smb_port, self.nsdb_port, self.nsdb_consumer_port,
         self.nsdb_ldaps_port) = free_ports(6)
        self.smb_ports = smb_ports or [smb_port]
        self.lease = lease  # ganesha's NFSv4 lease, seconds (None: its default)
        self.env = {}
        self.log = []
        _LIVE.add(self)

    def _run(self, cmd, *which, timeout=120):
        env = dict(os.environ)
        env.update(FEDFUSE_TEST_STATE=self.state, GANESHA_NFS_PORT=str(self.nfs_port),
                   GANESHA_MNT_PORT=str(self.mnt_port),
                   FEDFUSE_SMB_PORTS=" ".join(str(p) for p in self.smb_ports),
                   FEDFUSE_NSDB_PORT=str(self.nsdb_port),
                   FEDFUSE_NSDB_CONSUMER_PORT=str(self.nsdb_consumer_port),
                   FEDFUSE_NSDB_LDAPS_PORT=str(self.nsdb_ldaps_port),
                   **({"GANESHA_LEASE": str(self.lease)} if self.lease else {}))
        p = subprocess.run([TEST_SERVERS, cmd] + list(which), env=env, capture_output=True,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.log.append(f"$ test-servers {cmd} {' '.join(which)} -> {p.returncode}\n"
                        f"{p.stdout}{p.stderr}")
        self.env = read_servers_env(os.path.join(self.state, "servers.env"))
        return p

    def start(self, *which):
        p = self._run("start", *which)
        if p.returncode != 0:
            pytest.fail(f"private servers {which} did not start:\n{p.stdout}{p.stderr}",
                        pytrace=False)
        return self

    def stop(self, *which):
        self.cont(*[w for w in which if w in ("nfs", "smb")])
        return self._run("stop", *which)

    # The pids are read from the pid files each time: a restart changes them.
    def nfs_pid(self):
        try:
            with open(os.path.join(self.state, "ganesha", "ganesha.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def smb_pid(self):
        try:
            with open(os.path.join(self.state, "samba", "run", "smbd.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def _signal(self, which, sig):
        if which == "nfs":
            pid = self.nfs_pid()
            if pid:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        else:
            # smbd forks one process per client connection: the whole group (it leads its own).
            pid = self.smb_pid()
            if pid:
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    pass

    def freeze(self, *which):
        """SIGSTOP the server(s): connections stay open, nothing answers. Returns once every
        thread of the server is stopped (a signal is delivered asynchronously: a thread busy
        on another CPU could otherwise still answer one more request)."""
        for w in which:
            self._signal(w, signal.SIGSTOP)
        for w in which:
            pid = self.nfs_pid() if w == "nfs" else self.smb_pid()
            if pid:
                _wait_stopped(pid, group=(w != "nfs"))

    def cont(self, *which):
        for w in which:
            self._signal(w, signal.SIGCONT)

    def kill(self, *which):
        """SIGKILL the server(s) and wait until they are gone and their ports closed."""
        for w in which:
            pid = self.nfs_pid() if w == "nfs" else self.smb_pid()
            self._signal(w, signal.SIGCONT)
            self._signal(w, signal.SIGKILL)
            deadline = time.monotonic() + 15
            while pid and time.monotonic() < deadline:
                if w == "nfs":
                    gone = not os.path.exists(f"/proc/{pid}")
                else:
                    gone = subprocess.run(["pgrep", "-g", str(pid)],
                                          capture_output=True).returncode != 0
                if gone:
                    break
                time.sleep(0.05)

    def ports_of(self, which):
        return [self.nfs_port, self.mnt_port] if which == "nfs" else list(self.smb_ports)

    def cleanup(self):
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        try:
            self.cont("nfs", "smb")
            self._run("stop", "nfs", "smb", "nsdb", timeout=60)
        finally:
            shutil.rmtree(self.state, ignore_errors=True)


@atexit.register
def _cleanup_all():
    for s in list(_LIVE):
        try:
            s.cleanup()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


# ---- control files ----------------------------------------------------------------------------

_OP_LINE = re.compile(r"^\s+(\S+)\s+calls=(\d+)\s+errors=(\d+)\s+avg_us=")


def read_stats(mnt):
    """/.fedfuse/stats as {"junction-cache": {hits, misses, entries},
    "locations": {(ns_path, uri): {op: (calls, errors)}}}."""
    with open(os.path.join(mnt, ".fedfuse", "stats")) as f:
        text = f.read()
    out = {"junction-cache": None, "locations": {}, "text": text}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^junction-cache hits=(\d+) misses=(\d+) entries=(\d+)", line)
        if m:
            out["junction-cache"] = dict(hits=int(m.group(1)), misses=int(m.group(2)),
                                         entries=int(m.group(3)))
            continue
        m = re.match(r"^location (\S+) (\S+)$", line)
        if m:
            cur = out["locations"].setdefault((m.group(1), m.group(2)), {})
            continue
        m = _OP_LINE.match(line)
        if m and cur is not None:
            cur[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert out["junction-cache"] is not None, "no junction-cache line in stats:\n" + text
    return out


def location_ops(stats, uri, ns_prefix=None):
    """The op counters of the (single) location serving `uri` (whose ns path starts with
    `ns_prefix` when given); {} when it has none yet. Fails if several match."""
    found = [ops for (ns, u), ops in stats["locations"].items()
             if u == uri and (ns_prefix is None or ns.startswith(ns_prefix))]
    assert len(found) <= 1, f"{len(found)} locations serve {uri}:\n{stats['text']}"
    return found[0] if found else {}


def total_calls(ops):
    return sum(c for c, _ in ops.values())


def read_locations(mnt):
    """/.fedfuse/locations as {(ns_path, uri): {"state": ..., ...}}."""
    with open(os.path.join(mnt, ".fedfuse", "locations")) as f:
        text = f.read()
    out = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 3:
            continue
        kv = dict(x.split("=", 1) for x in fields[2:] if "=" in x)
        out[(fields[0], fields[1])] = kv
    return out


def location_state(mnt, ns_path, uri):
    return read_locations(mnt).get((ns_path, uri), {}).get("state")


def location_xattr(path):
    return os.getxattr(path, "user.fedfuse.location").decode()


# ---- timing -----------------------------------------------------------------------------------

class Timed:
    """Run fn(*args) in a thread; .join(bound) says whether it finished within `bound` seconds
    of its start. .result / .error (an OSError or other exception) / .elapsed afterwards."""

    def __init__(self, fn, *args, **kwargs):
        self.result = None
        self.error = None
        self.elapsed = None
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._t = threading.Thread(target=self._run, daemon=True)
        self.start = time.monotonic()
        self._t.start()

    def _run(self):
        try:
            self.result = self._fn(*self._args, **self._kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self.error = e
        self.elapsed = time.monotonic() - self.start

    def join(self, bound):
        self._t.join(max(0.0, self.start + bound - time.monotonic()))
        return not self._t.is_alive()

    def wait(self, timeout=120):
        self._t.join(timeout)
        return not self._t.is_alive()


def timed(fn, *args, bound, **kwargs):
    """Run fn(*args, **kwargs); fail the test unless it finished within `bound` seconds.
    Returns (result, error, elapsed)."""
    t = Timed(fn, *args, **kwargs)
    if not t.join(bound):
        t.wait()  # the mount's watchdog ends a real hang
        pytest.fail(f"{getattr(fn, '__name__', fn)}{args} took {time.monotonic() - t.start:.1f} s "
                    f"(bound {bound} s)", pytrace=False)
    return t.result, t.error, t.elapsed


def poll(pred, timeout, interval=0.25):
    """pred() until it returns a true value or `timeout` seconds passed; returns the last
    value. Exceptions count as false (the last one is kept in poll.last_error)."""
    deadline = time.monotonic() + timeout
    poll.last_error = None
    while True:
        try:
            value = pred()
        except Exception as e:  # noqa: BLE001
            value, poll.last_error = None, e
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def errno_of(e):
    return e.errno if isinstance(e, OSError) else None


def cached_inodes(mnt):
    """The daemon's count of inodes the kernel holds ("inodes N" in /.fedfuse/stats)."""
    return int(re.search(r"^inodes (\d+)$", read_stats(mnt)["text"], re.M).group(1))


def drop_caches_and_settle(mnt, timeout=10.0):
    """drop_caches(), then wait until the daemon has received the kernel's forgets: its inode
    count fell and stays put between two reads. False if it cannot drop caches."""
    before = cached_inodes(mnt)
    if not drop_caches():
        return False
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        n = cached_inodes(mnt)
        if n < before and n == last:
            return True
        last = n
        time.sleep(0.05)
    raise AssertionError(f"the daemon still holds {last} of {before} inodes after drop_caches")


def drop_caches():
    """Make the kernel forget unused dentries and inodes (root only); False if it cannot."""
    # no sync(): it could wait on somebody else's frozen network mount
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("2")
        return True
    except OSError:
        return False


ERRNAMES = errno.errorcode


def _stopped(pid):
    """Whether every thread of process `pid` is stopped (or the process is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


def _wait_stopped(pid, group=False, timeout=5.0):
    """Wait until process `pid` (with group: every process of its group) is stopped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [pid]
        if group:
            out = subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True)
            pids = [int(p) for p in out.stdout.split()] or [pid]
        if all(_stopped(p) for p in pids):
            return
        time.sleep(0.01)
