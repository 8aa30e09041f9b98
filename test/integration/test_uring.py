# SPDX-License-Identifier: GPL-2.0-or-later
"""Requests through FUSE over io_uring (fedfuse/uring.c): where the kernel has it (its fuse
module's enable_uring, Linux 6.14 and later), this module switches it on for its own mounts and
puts it back as it was. The daemon then takes requests on a ring per CPU instead of reading
/dev/fuse: everything must work as before (data, names, attributes, locks answered later from
another thread), `-o nouring` keeps /dev/fuse, and a request that takes long holds up no other
request, not even one made on the same CPU (whose ring it shares). The tests of other modules
imported at the end run here again, through the rings."""

import fcntl
import hashlib
import os
import re
import subprocess
import threading
import time

import pytest

from test_fault_injection import Faulty
from util import namespace_text, read_file, write_file

PARAM = "/sys/module/fuse/parameters/enable_uring"
AT_ONCE = 1.5  # "at once" on a loaded 2-core machine
MiB = 1024 * 1024


@pytest.fixture(scope="module", autouse=True)
def enable_uring():
    """FUSE over io_uring on for the mounts of this module, as it was afterwards."""
    if not os.path.exists(PARAM):
        pytest.skip("this kernel's fuse module has no io_uring (enable_uring)")
    with open(PARAM) as f:
        before = f.read().strip()
    try:
        with open(PARAM, "w") as f:
            f.write("Y")
    except OSError as e:
        pytest.skip(f"cannot switch on FUSE over io_uring: {e}")
    yield
    with open(PARAM, "w") as f:
        f.write(before)


def uring_stats(mnt):
    """(queues, threads, requests) from /.fedfuse/stats, or None when not through io_uring."""
    text = read_file(os.path.join(mnt, ".fedfuse", "stats")).decode()
    m = re.search(r"^io_uring queues=(\d+) threads=(\d+) requests=(\d+)$", text, re.M)
    return tuple(int(x) for x in m.groups()) if m else None


def test_requests_come_through_the_rings(mounted):
    """Data, names and attributes through the rings: the same answers as ever, and the daemon
    counts the requests it took there."""
    before = uring_stats(mounted.m.mnt)
    assert before is not None, "the daemon does not take requests through io_uring"
    assert before[0] >= 1
    d = mounted.p("a", "ring")
    os.mkdir(d)
    data = os.urandom(3 * MiB + 4321)
    write_file(os.path.join(d, "big"), data)
    with open(os.path.join(d, "big"), "rb") as f:  # reads of every size, and one past the end
        assert f.read(1) == data[:1]
        assert f.read(MiB) == data[1:MiB + 1]
        f.seek(len(data) - 10)
        assert f.read(100) == data[-10:]
    assert hashlib.sha256(read_file(os.path.join(d, "big"))).digest() == \
        hashlib.sha256(data).digest()
    names = {f"n{i:04d}-{'x' * (i % 200)}" for i in range(300)}
    for n in names:
        write_file(os.path.join(d, n), n.encode())
    assert set(os.listdir(d)) == names | {"big"}
    os.rename(os.path.join(d, "big"), os.path.join(d, "moved"))
    assert os.stat(os.path.join(d, "moved")).st_size == len(data)
    os.truncate(os.path.join(d, "moved"), 5)
    assert read_file(os.path.join(d, "moved")) == data[:5]
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(d, "big"))
    if mounted.supports("xattr") is True:
        os.setxattr(os.path.join(d, "moved"), "user.ring", b"v" * 3000)
        assert os.getxattr(os.path.join(d, "moved"), "user.ring") == b"v" * 3000
    for n in names:
        os.unlink(os.path.join(d, n))
    os.unlink(os.path.join(d, "moved"))
    os.rmdir(d)
    after = uring_stats(mounted.m.mnt)
    assert after[2] > before[2] + 600, (before, after)


def test_nouring_keeps_dev_fuse(mount_factory, tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    m = mount_factory(ns_text=namespace_text([("/a", [f"file://{tree}"], None)]),
                      extra_args=["-o", "nouring"])
    m.start()
    write_file(os.path.join(m.mnt, "a", "f"), b"through /dev/fuse")
    assert read_file(os.path.join(m.mnt, "a", "f")) == b"through /dev/fuse"
    assert uring_stats(m.mnt) is None


def on_cpu(cpu, fn, *args):
    """Call fn(*args) in this thread pinned to `cpu` (its requests come on that CPU's ring),
    and let it run anywhere again afterwards."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return fn(*args)
    finally:
        os.sched_setaffinity(0, before)


class Pinned(threading.Thread):
    def __init__(self, cpu, fn, *args):
        super().__init__(daemon=True)
        self.cpu, self.fn, self.args = cpu, fn, args
        self.result = self.error = None
        self.took = None

    def run(self):
        t0 = time.monotonic()
        try:
            self.result = on_cpu(self.cpu, self.fn, *self.args)
        except OSError as e:
            self.error = e
        self.took = time.monotonic() - t0


def test_a_slow_request_holds_up_nobody_on_its_cpu(mount_factory, tmp_path):
    """A request that takes seconds (a slow server) keeps its ring's thread busy: the requests
    made meanwhile on the same CPU, by other programs, are taken by another thread of that
    ring."""
    fy = Faulty(mount_factory, tmp_path, timeout=30)
    for k in range(3):
        write_file(fy.p("f", f"x{k}"), b"slow")
    write_file(fy.p("ok", "y"), b"quick")
    cpu = sorted(os.sched_getaffinity(0))[0]
    time.sleep(1.5)  # a quiet second: the daemon's supervisor sleeps until the next request
    fy.inject("open delay 3000\n")
    t0 = time.monotonic()
    slow = [subprocess.Popen(["taskset", "-c", str(cpu), "cat", fy.p("f", f"x{k}")],
                             stdout=subprocess.PIPE) for k in range(3)]
    time.sleep(0.3)
    for i in range(5):
        t1 = time.monotonic()
        assert on_cpu(cpu, read_file, fy.p("ok", "y")) == b"quick"
        took = time.monotonic() - t1
        assert took < AT_ONCE, f"a quick read on CPU {cpu} took {took:.1f} s behind slow ones"
        if i == 0:
            assert all(p.poll() is None for p in slow), "the slow reads were not slow"
    for p in slow:
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0 and out == b"slow"
    took = time.monotonic() - t0
    # each waited for its own open, not for the others' in turn
    assert 2.5 <= took < 8, f"the slow reads took {took:.1f} s"
    fy.clear()
    queues, threads, _ = uring_stats(fy.m.mnt)
    assert threads > queues, "no thread was added to the ring of the busy CPU"


def test_no_reply_waits_behind_a_slow_request(mount_factory, tmp_path):
    """A ring's thread that answers a request and then finds a slow one waiting sends its
    answer before it takes the slow one: a program reading a file one block at a time on a
    CPU whose other threads open files on a slow server gets each block at once. (Each read
    takes the daemon 1 ms, so the opens arrive while one is being answered.)"""
    fy = Faulty(mount_factory, tmp_path, timeout=30)
    for k in range(3):
        write_file(fy.p("f", f"x{k}"), b"slow")
    write_file(fy.p("f", "q"), b"quick")
    cpu = sorted(os.sched_getaffinity(0))[0]
    fd = os.open(fy.p("f", "q"), os.O_RDONLY | os.O_DIRECT)  # each read a request
    done = threading.Event()

    def reads():
        worst, n = 0, 0
        while not done.is_set():
            t1 = time.monotonic()
            assert os.pread(fd, 4096, 0) == b"quick"
            worst = max(worst, time.monotonic() - t1)
            n += 1
        return worst, n

    try:
        fy.inject("open delay 3000\nread delay 1\n")
        reader = Pinned(cpu, reads)
        reader.start()
        slow = []
        for k in range(3):  # 2 s apart: a reply held until the next request is seen too
            time.sleep(0.3 if k == 0 else 2)
            slow.append(Pinned(cpu, read_file, fy.p("f", f"x{k}")))
            slow[-1].start()
        for t in slow:
            t.join()
            assert t.error is None and t.result == b"slow", t.error
        done.set()
        reader.join()
    finally:
        done.set()
        os.close(fd)
        fy.clear()
    assert reader.error is None and reader.result, reader.error
    worst, n = reader.result
    assert n > 100, f"only {n} reads"
    assert worst < AT_ONCE, f"a read on CPU {cpu} waited {worst:.1f} s behind a slow open"


def test_a_lock_granted_later_is_answered_through_its_ring(mounted):
    """A blocking lock is answered by the lock table's thread once the holder lets go, not by
    the thread that took the request: the answer must still reach the ring it came on."""
    path = mounted.p("a", "lockfile")
    write_file(path, b"x" * 100)
    cpu = sorted(os.sched_getaffinity(0))[-1]
    holder = os.open(path, os.O_RDWR)
    fcntl.lockf(holder, fcntl.LOCK_EX)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the waiter: a process of its own (record locks are per process)
        try:
            os.sched_setaffinity(0, {cpu})
            fd = os.open(path, os.O_RDWR)
            os.write(w, b"r")
            fcntl.lockf(fd, fcntl.LOCK_EX)  # waits for the holder
            os.write(w, b"g")
            os._exit(0)
        except BaseException:
            os._exit(1)
    try:
        assert os.read(r, 1) == b"r"
        time.sleep(0.5)  # the waiter's request waits in the daemon's lock table by now
        fcntl.lockf(holder, fcntl.LOCK_UN)
        assert os.read(r, 1) == b"g"
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        os.close(holder)
        os.close(r)
        os.close(w)


def test_many_callers_on_every_cpu(mounted):
    """Callers on every CPU at once, each with files of its own: nothing is lost or mixed up
    between the rings."""
    base = mounted.p("a", "many")
    os.mkdir(base)
    cpus = sorted(os.sched_getaffinity(0))

    def work(k):
        d = os.path.join(base, f"w{k}")
        os.mkdir(d)
        for i in range(60):
            body = f"{k}:{i}:".encode() * (1 + i * 37)
            write_file(os.path.join(d, f"f{i}"), body)
            assert read_file(os.path.join(d, f"f{i}")) == body
        assert len(os.listdir(d)) == 60
        return k

    threads = [Pinned(cpus[k % len(cpus)], work, k) for k in range(2 * len(cpus) + 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive()
        assert t.error is None, t.error
    assert sorted(t.result for t in threads) == list(range(len(threads)))


# ---- other modules' tests, through the rings --------------------------------------------------
# (imported names are collected here too, with this module's enable_uring in force)

from test_locks import (holders, lockfile, test_blocking_lock_waits_for_release,  # noqa: E402,F401
                        test_blocking_lock_interrupted, test_flock_excludes_processes,
                        test_record_locks_exclude_processes)
from test_fsx import *  # noqa: E402,F401,F403
from test_interrupt import *  # noqa: E402,F401,F403
