# SPDX-License-Identifier: GPL-2.0-or-later
"""Fault injection (issue 19): a mem:// location with ?faults=FILE fails, delays or hangs the
operations FILE names (backends/mem/mem_fault.c), with no server behind it. Through the mount:
every operation's errno reaches the caller unchanged; a hung operation ends with ETIMEDOUT
within the namespace's timeout + 2 s while the other referral keeps serving; delays are only
delays; once the faults are gone the location works again without a remount. Under the
sanitizer build (scripts/check --sanitize) the same runs check that nothing leaks on the error
paths."""

import errno
import os
import threading
import time

import pytest

from util import namespace_text, read_file, wait_until, write_file

TIMEOUT = 2  # the namespace's timeout=, seconds
OP_BOUND = TIMEOUT + 2  # a hung operation fails within this
AT_ONCE = 1.5  # "at once" on a loaded 2-core machine, far below TIMEOUT
RECOVERY = 30  # seconds to poll for the location to come back (prober back-off)

class Faulty:
    """A mount with /f on a mem:// location that reads its faults from a file, and /ok on
    another one of the same tree."""

    def __init__(self, mount_factory, tmp_path, timeout=TIMEOUT):
        self.faults = os.path.join(str(tmp_path), "faults")
        tree = f"fi{os.getpid()}"
        ns = namespace_text([("/f", [f"mem://{tree}/f?faults={self.faults}"], None),
                             ("/ok", [f"mem://{tree}/ok"], None)],
                            {"timeout": timeout, "attr_timeout": 0})
        self.m = mount_factory(ns_text=ns)
        self.m.start()

    def p(self, *parts):
        return os.path.join(self.m.mnt, *parts)

    def inject(self, text):
        """Replace the faults; the location reads them before its next operation."""
        tmp = self.faults + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.faults)

    def clear(self):
        self.inject("")


@pytest.fixture
def faulty(mount_factory, tmp_path):
    return Faulty(mount_factory, tmp_path)


def _fd_op(path, flags, fn):
    fd = os.open(path, flags)
    try:
        return fn(fd)
    finally:
        os.close(fd)


# op named in the faults file -> (what to set up, the call that reaches that operation)
def _setup_file(fy):
    write_file(fy.p("f", "x"), b"data")
    os.setxattr(fy.p("f", "x"), "user.k", b"v")


def _setup_link(fy):
    _setup_file(fy)
    os.symlink("x", fy.p("f", "l"))


def _setup_dir(fy):
    os.mkdir(fy.p("f", "d"))


CALLS = {
    "lookup": (_setup_file, lambda fy: os.stat(fy.p("f", "x"))),
    "getattr": (_setup_file, lambda fy: _fd_op(fy.p("f", "x"), os.O_RDONLY, os.fstat)),
    "setattr": (_setup_file, lambda fy: os.chmod(fy.p("f", "x"), 0o600)),
    "readlink": (_setup_link, lambda fy: os.readlink(fy.p("f", "l"))),
    "mknod": (None, lambda fy: os.mkfifo(fy.p("f", "fifo"))),
    "mkdir": (None, lambda fy: os.mkdir(fy.p("f", "d"))),
    "symlink": (None, lambda fy: os.symlink("target", fy.p("f", "l"))),
    "link": (_setup_file, lambda fy: os.link(fy.p("f", "x"), fy.p("f", "x2"))),
    "unlink": (_setup_file, lambda fy: os.unlink(fy.p("f", "x"))),
    "rmdir": (_setup_dir, lambda fy: os.rmdir(fy.p("f", "d"))),
    "rename": (_setup_file, lambda fy: os.rename(fy.p("f", "x"), fy.p("f", "y"))),
    "open": (_setup_file, lambda fy: os.close(os.open(fy.p("f", "x"), os.O_RDONLY))),
    "create": (None, lambda fy: os.close(os.open(fy.p("f", "new"), os.O_CREAT | os.O_WRONLY,
                                                 0o644))),
    "read": (_setup_file, lambda fy: _fd_op(fy.p("f", "x"), os.O_RDONLY,
                                            lambda fd: os.read(fd, 4))),
    "write": (_setup_file, lambda fy: _fd_op(fy.p("f", "x"), os.O_WRONLY,
                                             lambda fd: os.write(fd, b"more"))),
    "fsync": (_setup_file, lambda fy: _fd_op(fy.p("f", "x"), os.O_WRONLY, os.fsync)),
    "opendir": (_setup_dir, lambda fy: os.listdir(fy.p("f", "d"))),
    "readdir": (_setup_dir, lambda fy: os.listdir(fy.p("f", "d"))),
    "statfs": (None, lambda fy: os.statvfs(fy.p("f"))),
    "setxattr": (_setup_file, lambda fy: os.setxattr(fy.p("f", "x"), "user.n", b"1")),
    "getxattr": (_setup_file, lambda fy: os.getxattr(fy.p("f", "x"), "user.k")),
    "listxattr": (_setup_file, lambda fy: os.listxattr(fy.p("f", "x"))),
    "removexattr": (_setup_file, lambda fy: os.removexattr(fy.p("f", "x"), "user.k")),
}

# Errors a server gives that say nothing about the connection: each reaches the caller as it is.
ERRNOS = ["EIO", "ENOSPC", "EDQUOT", "EACCES", "EROFS"]


@pytest.mark.parametrize("op", sorted(CALLS))
def test_errno_reaches_caller(faulty, op):
    setup, call = CALLS[op]
    if setup:
        setup(faulty)
    for name in ERRNOS:
        faulty.inject(f"{op} errno {name}\n")
        with pytest.raises(OSError) as e:
            call(faulty)
        assert e.value.errno == getattr(errno, name), \
            f"{op} injected {name}, the caller got {errno.errorcode.get(e.value.errno)}"
    faulty.clear()
    call(faulty)  # and the same call works once the fault is gone
    # the other referral never noticed
    assert os.listdir(faulty.p("ok")) == []


def test_delay_is_only_a_delay(faulty):
    write_file(faulty.p("f", "x"), b"slow")
    faulty.inject("* delay 300\n")
    t0 = time.monotonic()
    assert read_file(faulty.p("f", "x")) == b"slow"
    assert time.monotonic() - t0 >= 0.3
    faulty.clear()


@pytest.mark.parametrize("op", ["read", "getattr", "readdir", "lookup", "write"])
def test_hang_times_out_and_others_serve(faulty, op):
    """A hung operation fails ETIMEDOUT within timeout + 2 s; meanwhile the other referral
    and the root answer at once; afterwards the location works again without a remount."""
    setup, call = CALLS[op]
    if setup:
        setup(faulty)
    write_file(faulty.p("ok", "here"), b"fine")
    # a timeout marks the location down (it is taken for a dead server) until the prober
    # finds it back
    faulty.m.expect_log(r"location mem://\S+/f\?faults=\S+ is (unreachable|reachable again)")
    faulty.inject(f"{op} hang\n")
    result = {}

    def hung():
        t0 = time.monotonic()
        try:
            call(faulty)
            result["err"] = None
        except OSError as e:
            result["err"] = e.errno
        result["took"] = time.monotonic() - t0

    t = threading.Thread(target=hung)
    t.start()
    time.sleep(0.3)  # let it reach the backend
    for _ in range(3):
        t0 = time.monotonic()
        assert read_file(faulty.p("ok", "here")) == b"fine"
        assert "ok" in os.listdir(faulty.m.mnt)
        os.stat(faulty.m.mnt)
        took = time.monotonic() - t0
        assert took < AT_ONCE, f"the other referral took {took:.2f} s while {op} hung"
    t.join(OP_BOUND + 5)
    assert not t.is_alive()
    # ETIMEDOUT; EIO for I/O on a file already open (README: open files on a location
    # that is down get EIO)
    expected = {errno.ETIMEDOUT, errno.EIO} if op in ("read", "write") else {errno.ETIMEDOUT}
    assert result["err"] in expected, errno.errorcode.get(result["err"])
    assert result["took"] <= OP_BOUND, f"{op} hung for {result['took']:.2f} s"
    faulty.clear()

    def works():
        try:
            os.listdir(faulty.p("f"))
            return read_file(faulty.p("f", "x")) == b"data" if setup is _setup_file else True
        except OSError:
            return False
    assert wait_until(works, RECOVERY, 0.2), f"/f did not work again after {op} hung"


# One more than the threads the daemon keeps waiting for requests (one per CPU, 2 to 8), so
# that some must be added; with the one serving the other referral, at most its 10.
HUNG = min(max(os.cpu_count() or 2, 2), 8) + 1
LONG_TIMEOUT = 5  # the other referral must answer long before the hung lookups end


def test_more_hung_requests_than_waiting_threads(mount_factory, tmp_path):
    """More lookups of one directory hang at once than threads wait for requests: the kernel
    sends them together, and the daemon starts threads in place of those held up, so the other
    referral and the root still answer at once, long before the hung lookups fail (ETIMEDOUT,
    within the timeout)."""
    faulty = Faulty(mount_factory, tmp_path, timeout=LONG_TIMEOUT)
    write_file(faulty.p("ok", "here"), b"fine")
    faulty.m.expect_log(r"location mem://\S+/f\?faults=\S+ is (unreachable|reachable again)")
    faulty.inject("lookup hang\n")
    result = {}

    def hung(i):
        t0 = time.monotonic()
        try:
            os.stat(faulty.p("f", f"x{i}"))
            result[i] = (None, time.monotonic() - t0)
        except OSError as e:
            result[i] = (e.errno, time.monotonic() - t0)

    threads = [threading.Thread(target=hung, args=(i,)) for i in range(HUNG)]
    for t in threads:
        t.start()
    # every lookup reaches the backend, and then no request comes for over a second (the
    # daemon's threads still have to notice the next one)
    time.sleep(1.5)
    t0 = time.monotonic()
    assert read_file(faulty.p("ok", "here")) == b"fine"
    assert "ok" in os.listdir(faulty.m.mnt)
    took = time.monotonic() - t0
    assert took < AT_ONCE, f"the other referral took {took:.2f} s while {HUNG} lookups hung"
    for t in threads:
        t.join(LONG_TIMEOUT + 7)
    assert not any(t.is_alive() for t in threads)
    assert sorted(result) == list(range(HUNG))
    for i, (err, secs) in result.items():
        assert err == errno.ETIMEDOUT, (i, errno.errorcode.get(err))
        assert secs <= LONG_TIMEOUT + 2, f"lookup {i} hung for {secs:.2f} s"
    faulty.clear()


def test_lookups_of_one_directory_at_once(faulty):
    """Lookups of four names of one directory, each delayed one second by the location, end
    together: the kernel sends them at once (FUSE_PARALLEL_DIROPS) and the daemon serves them
    at once, instead of one after the other (four seconds)."""
    faulty.inject("lookup delay 1000\n")
    done = []

    def look(i):
        try:
            os.stat(faulty.p("f", f"y{i}"))
        except FileNotFoundError:
            done.append(i)

    threads = [threading.Thread(target=look, args=(i,)) for i in range(4)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    took = time.monotonic() - t0
    assert sorted(done) == [0, 1, 2, 3]
    assert took < 2.5, f"four delayed lookups of one directory took {took:.2f} s"
    faulty.clear()
