# SPDX-License-Identifier: GPL-2.0-or-later
"""Record locks and flock() through the mount (DESIGN §6): processes exclude each other on every
kind of location, F_GETLK names the holder, a close releases the closing process's record locks,
a blocked F_SETLKW waits without holding up the mount and gives up on a signal; on a local
location the locks also exclude the programs that lock the backing file directly."""

import errno
import fcntl
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

from servers_util import read_locations
from util import mkdirs, namespace_text, wait_until, write_file

# struct flock on Linux x86_64/aarch64: short l_type, l_whence; off_t l_start, l_len; pid_t l_pid
FLOCK = "@hhqqi4x"

HOLDER = r"""
import fcntl, os, struct, sys
path, how, start, length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_RDWR)
if how == "flock":
    fcntl.flock(fd, fcntl.LOCK_EX)
else:
    kind = fcntl.F_WRLCK if how == "write" else fcntl.F_RDLCK
    fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("@hhqqi4x", kind, 0, start, length, 0))
print("locked", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "close-other":  # POSIX: closing any descriptor of the file drops the locks
        os.close(os.open(path, os.O_RDONLY))
    elif cmd == "unlock":
        if how == "flock":
            fcntl.flock(fd, fcntl.LOCK_UN)
        else:
            fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("@hhqqi4x", fcntl.F_UNLCK, 0, start,
                                                       length, 0))
    print("done", flush=True)
"""


class Holder:
    """Another process that holds a lock on `path` until told otherwise."""

    def __init__(self, path, how="write", start=0, length=100):
        self.p = subprocess.Popen([sys.executable, "-c", HOLDER, path, how, str(start),
                                   str(length)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        assert line.strip() == "locked", f"the holder could not lock {path}: {line!r}"
        self.pid = self.p.pid

    def tell(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "done"

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=10)


@pytest.fixture
def holders():
    made = []

    def make(*args, **kw):
        h = Holder(*args, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.stop()


def setlk(fd, kind, start=0, length=0, wait=False):
    fcntl.fcntl(fd, fcntl.F_SETLKW if wait else fcntl.F_SETLK,
                struct.pack(FLOCK, kind, 0, start, length, 0))


def getlk(fd, kind, start=0, length=0):
    """(type, start, len, pid) of a lock that would block `kind`, or None."""
    out = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(FLOCK, kind, 0, start, length, 0))
    t, _, s, n, pid = struct.unpack(FLOCK, out)
    return None if t == fcntl.F_UNLCK else (t, s, n, pid)


def expect_busy(fn, *args):
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno in (errno.EAGAIN, errno.EACCES), e.value


@pytest.fixture
def lockfile(mounted):
    path = mounted.p("a", "lockfile")
    write_file(path, b"x" * 4096)
    fd = os.open(path, os.O_RDWR)
    yield path, fd
    os.close(fd)


def test_record_locks_exclude_processes(lockfile, holders):
    path, fd = lockfile
    h = holders(path, "write", 0, 100)
    expect_busy(setlk, fd, fcntl.F_WRLCK, 50, 10)
    expect_busy(setlk, fd, fcntl.F_RDLCK, 99, 1)
    assert getlk(fd, fcntl.F_RDLCK, 50, 10) == (fcntl.F_WRLCK, 0, 100, h.pid)
    setlk(fd, fcntl.F_WRLCK, 100, 50)  # beside it: granted
    assert getlk(fd, fcntl.F_WRLCK, 100, 50) is None  # our own lock does not block us
    h.tell("unlock")
    setlk(fd, fcntl.F_WRLCK, 0, 100)



def test_locations_say_how_far_locks_reach(lockfile, mounted):
    """/.fedfuse/locations tells how far the mount's locks reach: a local location's are the
    backing file's own; NFSv4 ones are the server's; NFSv3 and SMB ones hold among the
    processes using this mount (libnfs 4.0 has no NLM; libsmbclient's are per connection)."""
    path, fd = lockfile
    setlk(fd, fcntl.F_WRLCK)
    mine = [kv for (ns_path, _), kv in read_locations(mounted.mnt).items() if ns_path == "/a"]
    assert mine, read_locations(mounted.mnt)
    want = {"file": "backing-file", "nfs4": "server"}.get(mounted.kind, "this-mount")
    assert all(kv.get("locks") == want for kv in mine), mine

def test_read_locks_share(lockfile, holders):
    path, fd = lockfile
    holders(path, "read", 0, 0)
    setlk(fd, fcntl.F_RDLCK)
    expect_busy(setlk, fd, fcntl.F_WRLCK)


def test_close_releases_record_locks(lockfile, holders):
    """POSIX: a process's record locks on a file go when it closes any descriptor of it, and
    when it exits."""
    path, fd = lockfile
    h = holders(path, "write", 0, 0)
    expect_busy(setlk, fd, fcntl.F_WRLCK)
    h.tell("close-other")
    setlk(fd, fcntl.F_WRLCK)
    setlk(fd, fcntl.F_UNLCK)
    h2 = holders(path, "write", 0, 0)
    expect_busy(setlk, fd, fcntl.F_WRLCK)
    h2.p.kill()
    h2.p.wait()
    assert wait_until(lambda: getlk(fd, fcntl.F_WRLCK) is None, 5.0)


def test_blocking_lock_waits_for_release(lockfile, holders):
    path, fd = lockfile
    h = holders(path, "write", 0, 0)
    got = threading.Event()

    def waiter():
        setlk(fd, fcntl.F_WRLCK, wait=True)
        got.set()

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    assert not got.wait(0.5), "F_SETLKW returned while the lock was held"
    # the mount keeps answering meanwhile
    assert os.stat(path).st_size == 4096
    h.tell("unlock")
    assert got.wait(10), "F_SETLKW did not return after the holder unlocked"
    t.join()


# A process whose F_SETLKW on argv[1] (a write lock on all of it) a signal ends after 1 s: it
# prints "interrupted" (or "locked"), then waits for a line on stdin before it exits.
INTERRUPTED_WAIT = r"""
import fcntl, os, signal, struct, sys
def alarm(sig, frame):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
fd = os.open(sys.argv[1], os.O_RDWR)
signal.alarm(1)
try:
    fcntl.fcntl(fd, fcntl.F_SETLKW, struct.pack("@hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))
    print("locked")
except TimeoutError:
    print("interrupted")
sys.stdout.flush()
sys.stdin.readline()
"""


def test_blocking_lock_interrupted(lockfile, holders):
    """A signal ends a blocked F_SETLKW with EINTR, and that request takes no lock later."""
    path, fd = lockfile
    h = holders(path, "write", 0, 0)
    p = subprocess.Popen([sys.executable, "-c", INTERRUPTED_WAIT, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "interrupted"
        h.tell("unlock")
        time.sleep(0.2)  # a request still queued in the daemon would take the lock now
        setlk(fd, fcntl.F_WRLCK)  # the waiting process (still alive) holds nothing
    finally:
        p.stdin.close()
        p.wait(timeout=10)


def test_flock_excludes_processes(lockfile, holders):
    path, fd = lockfile
    h = holders(path, "flock")
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    h.tell("unlock")
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # one open file: a second flock converts it; another open file of ours is another holder
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    fd2 = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd2, fcntl.LOCK_SH | fcntl.LOCK_NB)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd2)  # its last close drops its flock

    def exclusive():
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
    # FUSE sends the last close's release after close() returned: a moment later, not at once
    assert wait_until(exclusive, 5.0), "the flock of a closed file was never dropped"


@pytest.mark.parametrize("how", ["write", "flock"])
def test_locks_exclude_programs_on_the_backing_file(mount_factory, tmp_path, holders, how):
    """On a local location, a lock taken through the mount and one taken on the backing file
    directly exclude each other, both ways; F_GETLK through the mount names a direct holder."""
    d = mkdirs(str(tmp_path / "loc"))
    m = mount_factory(ns_text=namespace_text([("/a", ["file://" + d], None)])).start()
    path = os.path.join(m.mnt, "a", "shared")
    write_file(path, b"data")
    backing = os.path.join(d, "shared")
    fd = os.open(path, os.O_RDWR)
    nfd = os.open(backing, os.O_RDWR)
    try:
        lock = (lambda f: setlk(f, fcntl.F_WRLCK)) if how == "write" else \
            (lambda f: fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB))
        h = holders(backing, how, 0, 0)  # on the backing file, whole
        if how == "write":
            expect_busy(lock, fd)
            assert getlk(fd, fcntl.F_WRLCK) == (fcntl.F_WRLCK, 0, 0, h.pid)
        else:
            with pytest.raises(BlockingIOError):
                lock(fd)
        h.tell("unlock")
        lock(fd)  # through the mount
        if how == "write":
            expect_busy(lock, nfd)
        else:
            with pytest.raises(BlockingIOError):
                lock(nfd)
    finally:
        os.close(nfd)
        os.close(fd)
