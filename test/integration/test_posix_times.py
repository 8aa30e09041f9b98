# SPDX-License-Identifier: GPL-2.0-or-later
"""The timestamps each call must update (pjdfstest checks them call by call): for every
operation, which of mtime and ctime of the object and of its parent directories move, compared
with the same operation on a native directory (posix_util.times_parity). atime only where the
kind honours it (POSIX_CAPS atime), on the server's relatime rules: the kernel does not keep atime
for FUSE (S_NOATIME), the server does when it reads."""

import os
import time

import pytest

from posix_util import (P, create_file, hardlinks_or_errno, pcaps, psupports, symlinks_or_errno,
                        tick, times, times_parity, with_fd, write_at)
from posix_util import par_fixture  # noqa: F401 (fixtures)

OLD = 1_000_000_000  # 2001: times set back so that any update is seen


def fields(par):
    """mtime and ctime, or mtime only where ctime is the write time (smb)."""
    return ("mtime", "ctime") if pcaps(par.kind, "ctime") is True else ("mtime",)


def base(root):
    """Setup on each side: a directory d with a file f (and sub dir e), times set back."""
    for p in ("d", "e"):
        os.makedirs(os.path.join(root, p), exist_ok=True)
    if not os.path.exists(os.path.join(root, "d", "f")):
        create_file(os.path.join(root, "d", "f"), b"0123456789")
    for rel in ("d/f", "d", "e", "."):
        os.utime(os.path.join(root, rel), (OLD, OLD))


def j(root, *rel):
    return os.path.join(root, *rel)


def creat(root):
    create_file(j(root, "d", "new"), b"")


def mkdir(root):
    os.mkdir(j(root, "d", "newdir"))


def unlink(root):
    os.unlink(j(root, "d", "f"))


def rmdir(root):
    os.mkdir(j(root, "d", "gone"))
    os.utime(j(root, "d"), (OLD, OLD))
    tick()
    os.rmdir(j(root, "d", "gone"))


def rename_same_dir(root):
    os.rename(j(root, "d", "f"), j(root, "d", "g"))


def rename_other_dir(root):
    os.rename(j(root, "d", "f"), j(root, "e", "f"))


def rename_dir(root):
    os.rename(j(root, "e"), j(root, "d", "e"))


def write(root):
    with_fd(j(root, "d", "f"), os.O_WRONLY, write_at, b"x", 3)


def write_empty(root):
    with_fd(j(root, "d", "f"), os.O_WRONLY, write_at, b"", 3)


def truncate_shrink(root):
    os.truncate(j(root, "d", "f"), 2)


def truncate_grow(root):
    os.truncate(j(root, "d", "f"), 100)


def truncate_same(root):
    os.truncate(j(root, "d", "f"), 10)


def ftruncate(root):
    with_fd(j(root, "d", "f"), os.O_RDWR, os.ftruncate, 5)


def open_trunc(root):
    os.close(os.open(j(root, "d", "f"), os.O_WRONLY | os.O_TRUNC))


def open_existing_creat(root):
    os.close(os.open(j(root, "d", "f"), os.O_WRONLY | os.O_CREAT))


def read(root):
    with open(j(root, "d", "f"), "rb") as fh:
        fh.read()


def chmod(root):
    os.chmod(j(root, "d", "f"), 0o600)


def chown(root):
    os.chown(j(root, "d", "f"), 0, 0)


def utime(root):
    os.utime(j(root, "d", "f"), (OLD + 5, OLD + 5))


OPS = {
    "create": (creat, ["d", "d/f"]),
    "mkdir": (mkdir, ["d", "d/f"]),
    "unlink": (unlink, ["d", "e"]),
    "rmdir": (rmdir, ["d"]),
    "rename-same-dir": (rename_same_dir, ["d"]),
    "rename-other-dir": (rename_other_dir, ["d", "e"]),
    "rename-dir": (rename_dir, ["d", "."]),
    "write": (write, ["d/f", "d"]),
    "write-nothing": (write_empty, ["d/f"]),
    "truncate-shrink": (truncate_shrink, ["d/f"]),
    "truncate-grow": (truncate_grow, ["d/f"]),
    "truncate-same-size": (truncate_same, ["d/f"]),
    "ftruncate": (ftruncate, ["d/f"]),
    "open-o_trunc": (open_trunc, ["d/f", "d"]),
    "open-o_creat-existing": (open_existing_creat, ["d/f", "d"]),
    "read": (read, ["d/f"]),
    "chmod": (chmod, ["d/f", "d"]),
    "chown": (chown, ["d/f", "d"]),
    "utime": (utime, ["d/f"]),
}


@pytest.mark.parametrize("op", list(OPS))
def test_times(par, op):
    fn, watched = OPS[op]
    allow = None
    if op == "truncate-same-size" and not psupports(par.kind, "truncate_same_mtime"):
        allow = {"d/f": {"mtime", "ctime"}}
    times_parity(par, base, fn, watched, fields=fields(par), allow=allow)


def test_times_of_moved_objects(par):
    """rename moves the ctime of the object renamed (Linux); link that of its target."""
    def setup(root):
        base(root)
    times_parity(par, setup, rename_same_dir, ["d"], fields=fields(par))
    # the renamed object itself: watch it under its new name
    for side, root in par.sides:
        base(root)
    before = {side: times(j(root, "d", "f")) for side, root in par.sides}
    tick()
    par.each(os.rename, P("d/f"), P("d/moved"))
    for side, root in par.sides:
        after = times(j(root, "d", "moved"))
        assert after["mtime"] == before[side]["mtime"], f"{side}: rename moved mtime"
        if side == "mount" and pcaps(par.kind, "ctime") != True:  # noqa: E712
            continue
        assert after["ctime"] > before[side]["ctime"], f"{side}: rename left ctime"


def test_times_link(par):
    par.each(os.mkdir, P("d"))
    par.each(create_file, P("d/f"), b"x")
    if not hardlinks_or_errno(par, "d/f"):
        return

    def op(root):
        os.link(j(root, "d", "f"), j(root, "d", "g"))
    times_parity(par, base, op, ["d", "d/f"], fields=fields(par))


def test_times_symlink_and_fifo(par):
    par.each(os.mkdir, P("d"))
    if symlinks_or_errno(par):
        times_parity(par, base, lambda root: os.symlink("t", j(root, "d", "l")), ["d"],
                     fields=fields(par))
    if par.m.supports("fifo"):
        times_parity(par, base, lambda root: os.mkfifo(j(root, "d", "p")), ["d"],
                     fields=fields(par))


def test_times_new_object(par):
    """A new file's three times are now, and equal (pjdfstest open/00, mkdir/00)."""
    t0 = time.time_ns() - 10**9  # the server's clock may be behind by the resolution
    par.same(create_file, P("f"), b"", expect="ok")
    par.same(os.mkdir, P("d"), expect="ok")
    for rel in ("f", "d"):
        t = times(par.mp(rel))
        assert t["mtime"] >= t0 and t["ctime"] >= t0 and t["atime"] >= t0, (rel, t)
        assert abs(t["mtime"] - t["ctime"]) < 10**8, (rel, t)


def test_atime_read(par):
    """A read updates atime where the kind honours it, on relatime rules: when atime is older
    than mtime or a day old. The file is made and dated on the server, so that the first read
    through the mount really reaches it (not the page cache)."""
    path = par.dp("f")
    create_file(path, b"some data to read")
    os.utime(path, (OLD, OLD + 10))  # atime before mtime
    tick()
    t0 = time.time_ns() - 10**9  # coarse clocks: atime may lag time_ns() by a jiffy
    with open(par.mp("f"), "rb") as fh:
        assert fh.read() == b"some data to read"
    got = times(par.mp("f"))["atime"]
    if psupports(par.kind, "atime"):
        assert got >= t0, f"atime {got} not updated by a read (before: {OLD * 10**9})"
    else:
        assert got == OLD * 10**9
    # a relatime filesystem does not update it again right away
    tick()
    with open(par.mp("f"), "rb") as fh:
        fh.read()
    assert times(par.mp("f"))["atime"] in (got, times(par.dp("f"))["atime"])


def test_mtime_moves_with_write_on_open_file(par):
    """stat of a file being written shows the write's mtime at once (make, rsync and editors
    compare it): after a write and fsync, and right after close."""
    def scenario(path):
        create_file(path, b"0123456789")
        os.utime(path, (OLD, OLD))
        fd = os.open(path, os.O_WRONLY)
        try:
            tick()
            os.pwrite(fd, b"x", 3)
            os.fsync(fd)
            while_open = os.stat(path).st_mtime_ns > OLD * 10**9
        finally:
            os.close(fd)
        after_close = os.stat(path).st_mtime_ns > OLD * 10**9
        return while_open, after_close
    assert par.same(scenario, P("f"), expect="ok") == (True, True)
