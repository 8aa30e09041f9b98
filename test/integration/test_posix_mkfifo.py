# SPDX-License-Identifier: GPL-2.0-or-later
"""mkfifo(3) and mknod(2) through the mount, against a native directory (pjdfstest
tests/mkfifo, tests/mknod): S_ISFIFO with the mode and umask applied, a working pipe, EEXIST,
ENOENT, ENOTDIR, ENAMETOOLONG, sockets and device nodes (as root). Kinds without special files
(smb) must answer their documented errno."""

import errno
import os
import stat
import threading

import pytest

from posix_util import (P, create_file, fifos_or_errno, symlinks_or_errno)
from posix_util import par_fixture  # noqa: F401 (fixtures)


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o777, 0o000, 0o1755])
def test_mkfifo_mode(par, mode):
    if not fifos_or_errno(par):
        return
    os.umask(0o022)
    par.same(os.mkfifo, P("p"), mode, expect="ok")
    par.stat_same("p", ("type", "perm", "nlink", "size", "uid", "gid"))
    assert stat.S_ISFIFO(os.lstat(par.mp("p")).st_mode)
    assert stat.S_ISFIFO(os.lstat(par.dp("p")).st_mode)


def test_fifo_works(par):
    """A fifo made through the mount passes data between two processes of this machine."""
    if not fifos_or_errno(par):
        return
    par.each(os.mkfifo, P("p"))
    got = []

    def reader():
        with open(par.mp("p"), "rb") as r:
            got.append(r.read())
    t = threading.Thread(target=reader)
    t.start()
    with open(par.mp("p"), "wb") as w:
        w.write(b"through the fifo")
    t.join(10)
    assert got == [b"through the fifo"]
    # opening a fifo read-only and non-blocking never waits (and never reaches the daemon)
    fd = os.open(par.mp("p"), os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
    par.same(lambda p: os.open(p, os.O_WRONLY | os.O_NONBLOCK), P("p"), expect=errno.ENXIO)


def test_mkfifo_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    if not fifos_or_errno(par):
        par.expect(par.m.caps("fifo"), os.mkfifo, P("d/p"))
        return
    par.each(os.mkfifo, P("p"))
    par.same(os.mkfifo, P("p"), expect=errno.EEXIST)
    par.same(os.mkfifo, P("f"), expect=errno.EEXIST)
    par.same(os.mkfifo, P("d"), expect=errno.EEXIST)
    par.same(os.mkfifo, P("missing/p"), expect=errno.ENOENT)
    par.same(os.mkfifo, P("f/p"), expect=errno.ENOTDIR)
    par.same(os.mkfifo, P("x" * 256), expect=errno.ENAMETOOLONG)
    if symlinks_or_errno(par):
        par.each(os.symlink, "nowhere", P("dangling"))
        par.same(os.mkfifo, P("dangling"), expect=errno.EEXIST)
    # unlink and rename of a fifo
    par.same(os.rename, P("p"), P("d/p2"), expect="ok")
    par.same(os.unlink, P("d/p2"), expect="ok")


@pytest.mark.parametrize("kind", ["reg", "sock", "chr", "blk"])
def test_mknod(par, kind):
    """mknod of a regular file and a socket (anyone), of devices (root: CAP_MKNOD)."""
    fmt = {"reg": stat.S_IFREG, "sock": stat.S_IFSOCK, "chr": stat.S_IFCHR,
           "blk": stat.S_IFBLK}[kind]
    dev = os.makedev(1, 3) if kind in ("chr", "blk") else 0
    if kind != "reg" and not par.m.supports("fifo"):
        par.expect(par.m.caps("fifo"), os.mknod, P("n"), fmt | 0o644, dev)
        return
    par.same(os.mknod, P("n"), fmt | 0o640, dev, expect="ok")
    fields = ("type", "perm", "size") if par.m.supports("chmod") else ("type", "size")
    par.stat_same("n", fields)
    if kind in ("chr", "blk"):
        assert os.lstat(par.mp("n")).st_rdev == dev
    par.same(os.mknod, P("n"), fmt | 0o640, dev, expect=errno.EEXIST)
