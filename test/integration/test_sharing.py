# SPDX-License-Identifier: GPL-2.0-or-later
"""Sharing files: two fedfuse mounts of the same export, as two workstations would have (what
one writes and closes, the other sees on its next open, even where its kernel holds the old data
in its page cache; NFSv4 locks taken in one exclude the other), and several processes sharing a
database through one mount."""

import fcntl
import mmap
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import read_servers_env, uri_below
from servers_util import PrivateServers, read_locations
from test_locks import INTERRUPTED_WAIT, Holder, expect_busy, getlk, setlk
from util import mkdirs, namespace_text, read_file, wait_until, write_file

SHARED = read_servers_env()
KINDS = {"nfs3": ("NFS_V3_URI", "NFS_V3_DIR"), "nfs4": ("NFS_V4_URI", "NFS_V4_DIR"),
         "smb": ("SMB_URI", "SMB_DIR")}


def export_dir(kind):
    uri_key, dir_key = KINDS[kind]
    if not SHARED.get(uri_key):
        pytest.fail(f"the test servers give no {uri_key} (run scripts/test-servers start)",
                    pytrace=False)
    name = f"sharing-{uuid.uuid4().hex[:8]}"
    d = mkdirs(os.path.join(SHARED[dir_key], name))
    os.chmod(d, 0o777)
    return uri_below(SHARED[uri_key], name), d


def two_mounts(mount_factory, uri):
    # attr-timeout long enough that only the open's own check can see a change
    text = namespace_text([("/x", [uri], {"attr-timeout": "60"})])
    return (mount_factory(ns_text=text, name="one").start(),
            mount_factory(ns_text=text, name="two").start())


@pytest.mark.parametrize("kind", list(KINDS))
def test_close_to_open_between_two_mounts(mount_factory, kind):
    uri, d = export_dir(kind)
    write_file(os.path.join(d, "f"), b"A" * 8192)
    one, two = two_mounts(mount_factory, uri)
    f1, f2 = os.path.join(one.mnt, "x", "f"), os.path.join(two.mnt, "x", "f")
    assert read_file(f2) == b"A" * 8192  # two's page cache holds the old data
    for round_, byte in enumerate((b"B", b"C", b"D")):
        time.sleep(0.01)
        with open(f1, "r+b") as f:  # same size: only the times say it changed
            f.write(byte * 8192)
        assert read_file(f2) == byte * 8192, f"round {round_}: two read stale data"
        assert read_file(f1) == byte * 8192
    # a size the kernel of two has cached attributes for changes too
    write_file(f1, b"E" * 100)
    assert read_file(f2) == b"E" * 100
    assert os.stat(f2).st_size == 100
    write_file(f1, b"F" * 20000)  # and grows
    assert read_file(f2) == b"F" * 20000
    # and a new file, made in two, read in one
    write_file(os.path.join(two.mnt, "x", "g"), b"from two\n")
    assert read_file(os.path.join(one.mnt, "x", "g")) == b"from two\n"


def test_nfs4_locks_exclude_between_two_mounts(mount_factory):
    """Record locks and flock()s on an NFSv4 location are the server's: two mounts (two clients
    of the server, as two workstations are) exclude each other. F_GETLK in one shows the other's
    lock (pid 0: another machine's), ranges split and merge as POSIX says, a waiting F_SETLKW is
    granted when the other side unlocks, and a process's end gives its locks back."""
    uri, d = export_dir("nfs4")
    for name in ("f", "g", "h"):
        write_file(os.path.join(d, name), b"x" * 4096)
    one, two = two_mounts(mount_factory, uri)
    a = os.open(os.path.join(one.mnt, "x", "f"), os.O_RDWR)
    b = os.open(os.path.join(two.mnt, "x", "f"), os.O_RDWR)
    for m in (one, two):
        kv = [kv for (ns_path, _), kv in read_locations(m.mnt).items() if ns_path == "/x"]
        assert kv and all(v.get("locks") == "server" for v in kv), kv
    try:
        setlk(a, fcntl.F_WRLCK, 0, 100)
        expect_busy(setlk, b, fcntl.F_WRLCK, 50, 10)
        expect_busy(setlk, b, fcntl.F_RDLCK, 99, 1)
        assert getlk(b, fcntl.F_RDLCK, 50, 10) == (fcntl.F_WRLCK, 0, 100, 0)
        setlk(b, fcntl.F_WRLCK, 100, 50)  # beside it: granted
        expect_busy(setlk, a, fcntl.F_RDLCK, 120, 1)  # and one is refused two's
        setlk(a, fcntl.F_UNLCK, 40, 20)  # one's lock splits in two
        setlk(b, fcntl.F_WRLCK, 45, 10)
        expect_busy(setlk, b, fcntl.F_WRLCK, 30, 15)
        expect_busy(setlk, b, fcntl.F_WRLCK, 60, 1)
        setlk(a, fcntl.F_RDLCK, 0, 40)  # downgraded: read locks are shared
        setlk(b, fcntl.F_RDLCK, 0, 10)
        setlk(b, fcntl.F_UNLCK, 0, 60)

        waiter = threading.Thread(target=setlk, args=(b, fcntl.F_WRLCK, 0, 10, True))
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive(), "F_SETLKW was granted while another client held the range"
        setlk(a, fcntl.F_UNLCK, 0, 0)
        waiter.join(timeout=10)
        assert not waiter.is_alive(), "F_SETLKW was never granted after the other unlocked"
        expect_busy(setlk, a, fcntl.F_WRLCK, 5, 1)
        os.close(b)  # gives two's locks back
        b = -1
        assert wait_until(lambda: try_setlk(a, fcntl.F_WRLCK, 0, 0), 5.0), \
            "the locks of a closed file stayed on the server"
    finally:
        for fd in (a, b):
            if fd >= 0:
                os.close(fd)

    # flock(): whole-file locks on the server, for each open file
    a = os.open(os.path.join(one.mnt, "x", "g"), os.O_RDWR)
    b = os.open(os.path.join(two.mnt, "x", "g"), os.O_RDWR)
    try:
        fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BlockingIOError):
            fcntl.flock(b, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(a, fcntl.LOCK_SH | fcntl.LOCK_NB)  # converted
        fcntl.flock(b, fcntl.LOCK_SH | fcntl.LOCK_NB)
        with pytest.raises(BlockingIOError):
            fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(a)  # its release gives its flock back
    assert wait_until(lambda: try_flock(b, fcntl.LOCK_EX), 5.0), \
        "the flock of a closed file was never given back to the server"
    os.close(b)

    # a process that dies holding a lock: its close gives it back
    holder = Holder(os.path.join(one.mnt, "x", "h"), "write", 0, 0)
    b = os.open(os.path.join(two.mnt, "x", "h"), os.O_RDWR)
    try:
        expect_busy(setlk, b, fcntl.F_WRLCK, 4000, 1)
        holder.p.send_signal(signal.SIGKILL)
        holder.p.wait(timeout=10)
        assert wait_until(lambda: try_setlk(b, fcntl.F_WRLCK, 0, 0), 5.0), \
            "a killed process's lock stayed on the server"
    finally:
        os.close(b)


def test_nfs4_waits_for_another_clients_lock(mount_factory):
    """A blocking flock() or F_SETLKW that another client's lock holds up waits (the daemon
    asks the server again and again) and is granted after that client unlocks; one interrupted
    by a signal ends with EINTR and takes nothing afterwards."""
    uri, d = export_dir("nfs4")
    write_file(os.path.join(d, "f"), b"x" * 4096)
    one, two = two_mounts(mount_factory, uri)
    f1, f2 = os.path.join(one.mnt, "x", "f"), os.path.join(two.mnt, "x", "f")
    a, b = os.open(f1, os.O_RDWR), os.open(f2, os.O_RDWR)
    try:
        fcntl.flock(a, fcntl.LOCK_EX)
        waiter = threading.Thread(target=fcntl.flock, args=(b, fcntl.LOCK_EX))
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive(), "flock() was granted while another client held it"
        fcntl.flock(a, fcntl.LOCK_UN)
        waiter.join(timeout=10)
        assert not waiter.is_alive(), "flock() was never granted after the other unlocked"
        with pytest.raises(BlockingIOError):
            fcntl.flock(a, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(b, fcntl.LOCK_UN)

        setlk(a, fcntl.F_WRLCK, 0, 0)
        p = subprocess.Popen([sys.executable, "-c", INTERRUPTED_WAIT, f2],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().strip() == "interrupted"
            setlk(a, fcntl.F_UNLCK, 0, 0)
            time.sleep(2.5)  # past the longest wait between asks: a live request would have it
            setlk(b, fcntl.F_WRLCK, 0, 0)  # the interrupted process (still alive) holds nothing
        finally:
            p.stdin.close()
            p.wait(timeout=10)
    finally:
        os.close(a)
        os.close(b)


def try_setlk(fd, kind, start, length):
    try:
        setlk(fd, kind, start, length)
        return True
    except OSError:
        return False


def try_flock(fd, op):
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


WRITER = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
for i in range(int(sys.argv[3])):
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t (who, n) VALUES (?, ?)", (sys.argv[2], i))
    db.execute("UPDATE c SET n = n + 1")
    db.execute("COMMIT")
db.close()
"""


def test_sqlite_wal_through_the_mount_alone(mount_factory, tmp_path):
    """What README's "Where coherence ends" calls safe: a SQLite database in WAL mode (its index
    a shared mapping, its writers serialised by locks) used by several processes at once, all
    through the mount. Every commit is there and the database is sound."""
    backing = mkdirs(os.path.join(str(tmp_path), "backing"))
    m = mount_factory(ns_text=namespace_text([("/l", [f"file://{backing}"], None)])).start()
    path = os.path.join(m.mnt, "l", "db.sqlite")
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    db.execute("CREATE TABLE t (who TEXT, n INTEGER)")
    db.execute("CREATE TABLE c (n INTEGER)")
    db.execute("INSERT INTO c VALUES (0)")
    db.close()
    commits = 200
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, path, f"w{i}", str(commits)])
               for i in range(3)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0]
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 3 * commits
    assert db.execute("SELECT n FROM c").fetchone()[0] == 3 * commits
    db.close()


LEASE = 20  # seconds: the private ganesha's NFSv4 lease


@pytest.fixture
def short_lease():
    servers = PrivateServers(prefix="fedfuse-lease-", lease=LEASE).start("nfs")
    yield servers
    servers.cleanup()


def test_nfs4_open_file_and_lock_survive_idle_leases(mount_factory, short_lease):
    """A file held open and idle for three NFSv4 lease periods keeps its open state on the
    server, and a lock held as long keeps excluding another client: the daemon renews the
    lease (libnfs never does). The open is shown with a file removed on the server meanwhile,
    which only the open state still reaches (reopening it by name would fail); the lock with a
    second mount, whose lock the server would grant had it forgotten the first one's."""
    env = short_lease.env
    name = f"lease-{uuid.uuid4().hex[:8]}"
    d = mkdirs(os.path.join(env["NFS_V4_DIR"], name))
    data = os.urandom(1 << 20)
    write_file(os.path.join(d, "f"), data)
    write_file(os.path.join(d, "g"), b"g" * 100)
    ns = namespace_text([("/x", [uri_below(env["NFS_V4_URI"], name)], None)])
    m = mount_factory(ns_text=ns).start()
    other = mount_factory(ns_text=ns, name="other").start()
    fd = os.open(os.path.join(m.mnt, "x", "f"), os.O_RDONLY | os.O_DIRECT)
    locked = os.open(os.path.join(m.mnt, "x", "g"), os.O_RDWR)
    buf = mmap.mmap(-1, 4096)  # O_DIRECT wants an aligned buffer
    b = -1
    try:
        assert os.preadv(fd, [buf], 0) == 4096 and bytes(buf) == data[:4096]
        setlk(locked, fcntl.F_WRLCK, 0, 0)
        os.unlink(os.path.join(d, "f"))  # on the server, behind the client's back
        time.sleep(3 * LEASE + 2)
        assert os.preadv(fd, [buf], 512 * 1024) == 4096
        assert bytes(buf) == data[512 * 1024:512 * 1024 + 4096]
        b = os.open(os.path.join(other.mnt, "x", "g"), os.O_RDWR)
        expect_busy(setlk, b, fcntl.F_WRLCK, 50, 1)
        setlk(locked, fcntl.F_UNLCK, 0, 0)  # the holder's lock state is still good
        setlk(b, fcntl.F_WRLCK, 50, 1)
    finally:
        for f in (fd, locked, b):
            if f >= 0:
                os.close(f)
        buf.close()


# ---- SMB change notification -----------------------------------------------------------------

def smbclient(uri, commands):
    """Run smbclient commands as a guest on the share and directory of `uri`
    (smb://host:port/share/dir), directly against the server: another client."""
    rest = uri[len("smb://"):]
    hostport, share, sub = rest.split("/", 2)
    host, _, port = hostport.partition(":")
    r = subprocess.run(["smbclient", "-N", "-p", port or "445", f"//{host}/{share}",
                        "-D", sub, "-c", commands], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "NT_STATUS" not in r.stdout, (commands, r.stdout, r.stderr)


def smb_mount(mount_factory, keys):
    uri, d = export_dir("smb")
    m = mount_factory(ns_text=namespace_text([("/x", [uri], dict({"attr-timeout": "600"},
                                                                  **keys))])).start()
    return m, uri, os.path.join(m.mnt, "x")


def notify_invalidations(m):
    with open(os.path.join(m.mnt, ".fedfuse", "stats")) as f:
        for line in f:
            if line.startswith("notify invalidations="):
                return int(line.split("=", 1)[1])
    raise AssertionError("no 'notify invalidations=' line in /.fedfuse/stats")


def size_or_none(path):
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def test_smb_changes_by_others_seen_at_once(mount_factory, tmp_path):
    """attr-timeout=600, yet what another SMB client creates, changes, renames and removes on
    the share shows through the mount within 2 s: the server's change notification drops the
    kernel's cached entries and attributes. Checked with stat and listings, which the
    close-to-open check on open does not help."""
    m, uri, x = smb_mount(mount_factory, {})
    src = tmp_path / "src"
    src.write_bytes(b"one\n")
    big = tmp_path / "big"
    big.write_bytes(b"two" * 1000)
    assert os.listdir(x) == []  # the kernel caches the empty listing and the directory
    smbclient(uri, f"put {src} f")
    assert wait_until(lambda: os.listdir(x) == ["f"], 2.0), os.listdir(x)
    assert os.stat(os.path.join(x, "f")).st_size == 4  # the kernel caches its attributes
    smbclient(uri, f"put {big} f")
    assert wait_until(lambda: size_or_none(os.path.join(x, "f")) == 3000, 2.0)
    assert read_file(os.path.join(x, "f")) == b"two" * 1000
    # below the location's directory too
    os.listdir(x)
    smbclient(uri, f"mkdir d; put {src} d\\g")
    assert wait_until(lambda: os.path.exists(os.path.join(x, "d", "g")), 2.0)
    assert os.listdir(os.path.join(x, "d")) == ["g"]
    smbclient(uri, "rename d\\g d\\h")
    assert wait_until(lambda: os.listdir(os.path.join(x, "d")) == ["h"], 2.0)
    assert not os.path.exists(os.path.join(x, "d", "g"))
    smbclient(uri, "rm f")
    assert wait_until(lambda: not os.path.exists(os.path.join(x, "f")), 2.0)
    assert os.listdir(x) == ["d"]
    assert notify_invalidations(m) > 0
    locs = open(os.path.join(m.mnt, ".fedfuse", "locations")).read()
    assert "watched=yes" in locs, locs


def test_smb_changes_by_others_late_unwatched(mount_factory, tmp_path):
    """The same with watch=false: the kernel keeps the attributes it cached for attr-timeout,
    so a change of size is not seen in those 2 s (what the watch above is for)."""
    m, uri, x = smb_mount(mount_factory, {"watch": "false"})
    src = tmp_path / "src"
    src.write_bytes(b"one\n")
    big = tmp_path / "big"
    big.write_bytes(b"two" * 1000)
    smbclient(uri, f"put {src} f")
    assert os.stat(os.path.join(x, "f")).st_size == 4
    smbclient(uri, f"put {big} f")
    time.sleep(2.0)
    assert os.stat(os.path.join(x, "f")).st_size == 4
    assert notify_invalidations(m) == 0


def test_smb_own_changes_not_reported(mount_factory):
    """What the daemon itself does comes back from the server as changes too; those are known
    to the kernel already and are not passed on (unfiltered, a file made, written, renamed
    and removed cost about four invalidations)."""
    m, uri, x = smb_mount(mount_factory, {})
    files = 40
    for i in range(files):
        p = os.path.join(x, f"f{i}")
        write_file(p, b"data" * 100)
        os.truncate(p, 10)
        os.rename(p, p + ".r")
    os.mkdir(os.path.join(x, "d"))
    for i in range(files):
        os.unlink(os.path.join(x, f"f{i}.r"))
    os.rmdir(os.path.join(x, "d"))
    time.sleep(1.0)  # the server's reports arrive within milliseconds
    # a report delayed past its moment on a loaded machine may pass: a few, never most
    assert notify_invalidations(m) < files // 4, m.log_text()
