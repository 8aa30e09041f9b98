# SPDX-License-Identifier: GPL-2.0-or-later
"""Scale: descriptors are a cache, not a limit, and junctions have no cap.

The daemon runs with RLIMIT_NOFILE 4096 that it cannot raise (no CAP_SYS_RESOURCE), as in a
container. The kernel caches far more inodes than that while `find` walks 100,000 files or
100,000 junctions; every one must still be listed and read, no caller may see EMFILE, and once
the kernel forgets them (drop caches) the daemon gives back its inodes, mounts and descriptors,
and at least half of the memory the junction walk took.
"""
import os
import re
import subprocess

import pytest

from servers_util import drop_caches, read_stats
from util import wait_until

FD_LIMIT = 4096
# A walk through 100,000 junctions takes minutes under AddressSanitizer, not a hang.
HANG_TIMEOUT = 900
WRAPPER = ["prlimit", f"--nofile={FD_LIMIT}:{FD_LIMIT}", "setpriv",
           "--bounding-set=-sys_resource", "--inh-caps=-sys_resource"]


@pytest.fixture(autouse=True)
def _root_only():
    if os.geteuid() != 0:
        pytest.skip("needs root (drop_caches, setpriv)")


def daemon_fds(m):
    return len(os.listdir(f"/proc/{m.proc.pid}/fd"))


def daemon_rss_kib(m):
    with open(f"/proc/{m.proc.pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


def daemon_limit(m):
    with open(f"/proc/{m.proc.pid}/limits") as f:
        return int(re.search(r"^Max open files\s+(\d+)", f.read(), re.M).group(1))


def sanitized(m):
    """AddressSanitizer keeps freed memory in quarantine: RSS says nothing then."""
    with open(f"/proc/{m.proc.pid}/maps") as f:
        return "libasan" in f.read()


def memory_back(m, base_kib, peak_kib):
    """Once everything is forgotten, the daemon gives back at least half of the memory the walk
    took (what it frees goes back to malloc, which is trimmed; malloc keeps some of it
    fragmented). Polled: the last mounts are freed, and malloc trimmed, after their linger."""
    if sanitized(m):
        return True
    return wait_until(lambda: daemon_rss_kib(m) <= base_kib + (peak_kib - base_kib) / 2,
                      timeout=15, interval=0.5)


def warm_base(m, sample):
    """The daemon's RSS once a small walk (`sample`, a few entries) has started the worker
    threads and their buffers, and the kernel forgot it again: what the big walk adds to this is
    the memory it costs."""
    find_files(sample)
    forgotten(m, inodes_at_most=1000)
    return daemon_rss_kib(m)


def stat_value(mnt, name):
    return int(re.search(rf"^{name} (\d+)$", read_stats(mnt)["text"], re.M).group(1))


def find_files(top):
    """`find TOP -type f`: its output lines, and its complaints (stderr)."""
    p = subprocess.run(["find", top, "-type", "f"], capture_output=True, text=True)
    return p.stdout.splitlines(), p.stderr.strip(), p.returncode


def fds_closed(m, at_most=200):
    """Polled: the forgets still arriving after forgotten() close the last nodes' descriptors."""
    return wait_until(lambda: daemon_fds(m) < at_most, timeout=15, interval=0.5)


def forgotten(m, inodes_at_most, mounts_at_most=None):
    """drop_caches until the daemon holds few inodes (and mounts): the kernel's forgets arrive
    after the call returns, and lingering mounts are freed a few seconds after their last use."""
    def settled():
        drop_caches()
        if stat_value(m.mnt, "inodes") > inodes_at_most:
            return False
        return mounts_at_most is None or stat_value(m.mnt, "mounts") <= mounts_at_most
    return wait_until(settled, timeout=60, interval=0.5)


def test_find_100k_files_under_fd_limit(mount_factory, tmp_path):
    data = tmp_path / "data"
    for d in range(100):
        sub = data / f"d{d}"
        sub.mkdir(parents=True)
        for f in range(1000):
            os.close(os.open(sub / f"f{f}", os.O_CREAT | os.O_WRONLY, 0o644))
    m = mount_factory(referrals=[("/big", [f"file://{data}"])], wrapper=WRAPPER,
                      hang_timeout=HANG_TIMEOUT).start()
    assert daemon_limit(m) == FD_LIMIT  # it could not raise its limit
    top = os.path.join(m.mnt, "big")

    lines, err, rc = find_files(top)
    assert err == "" and rc == 0
    assert len(lines) == 100_000
    # The kernel holds more inodes than the daemon may open descriptors (before descriptors
    # were a cache, find failed here with "Too many open files").
    assert stat_value(m.mnt, "inodes") > 2 * FD_LIMIT
    assert daemon_fds(m) < FD_LIMIT

    # Each file can still be opened and read (their descriptors were closed and are reopened).
    for d in (0, 37, 99):
        for f in (0, 500, 999):
            with open(os.path.join(top, f"d{d}", f"f{f}"), "rb") as fh:
                assert fh.read() == b""

    # Memory is the junction walk's to show (it grows by some 170 MB; this one by 5).
    assert forgotten(m, inodes_at_most=1000)
    assert fds_closed(m), f"{daemon_fds(m)} descriptors still open"


def test_100k_junctions_under_fd_limit(mount_factory, tmp_path):
    n = 100_000
    targets = tmp_path / "targets"
    holder = tmp_path / "holder"
    targets.mkdir()
    holder.mkdir()
    for i in range(n):
        t = targets / f"t{i}"
        t.mkdir()
        with open(t / "f", "w") as f:
            f.write(f"{i}\n")
        j = holder / f"j{i}"
        j.mkdir()
        os.setxattr(j, "user.fedfuse.locations", f"file://{t}".encode())
    m = mount_factory(referrals=[("/j", [f"file://{holder}"])], wrapper=WRAPPER,
                      hang_timeout=HANG_TIMEOUT).start()
    assert daemon_limit(m) == FD_LIMIT
    top = os.path.join(m.mnt, "j")
    base_rss = warm_base(m, os.path.join(top, "j0"))

    # Walked with find: every junction's file is found...
    lines, err, rc = find_files(top)
    assert err == "" and rc == 0
    assert len(lines) == n
    # ...many junction mounts live at once, more than the daemon may open descriptors (the
    # kernel keeps what it can of the walk; more than 0xfffe mounts at once: test_mount)...
    assert stat_value(m.mnt, "mounts") > FD_LIMIT
    assert daemon_fds(m) < FD_LIMIT
    # ...and read, each through its own junction.
    for i in range(n):
        with open(os.path.join(top, f"j{i}", "f")) as f:
            assert f.read() == f"{i}\n"
    assert daemon_fds(m) < FD_LIMIT
    peak_rss = daemon_rss_kib(m)

    assert forgotten(m, inodes_at_most=1000, mounts_at_most=10)
    assert fds_closed(m), f"{daemon_fds(m)} descriptors still open"
    assert memory_back(m, base_rss, peak_rss)
