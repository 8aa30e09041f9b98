# SPDX-License-Identifier: GPL-2.0-or-later
"""link(2) and unlink(2) through the mount, against a native directory (pjdfstest tests/link,
tests/unlink): link counts, shared data and inode numbers, EEXIST, ENOENT, ENOTDIR, EPERM on
directories, EXDEV across referrals, and unlink of open files (data still readable and
writable through the descriptor). Kinds without hard links (smb) must answer their documented
errno (conftest.CAPS)."""

import errno
import os

from posix_util import (P, create_file, hardlinks_or_errno, nlink, read_all, symlinks_or_errno)
from posix_util import par_fixture  # noqa: F401 (fixtures)
from conftest import VISIBLE_WITHIN
from util import create, expect_errno, wait_until


def test_link_counts(par):
    par.each(create_file, P("f"), b"shared")
    if not hardlinks_or_errno(par, "f"):
        assert os.lstat(par.mp("f")).st_nlink == 1
        return
    for k, name in enumerate(("g", "h"), start=2):
        par.same(os.link, P("f"), P(name), expect="ok")
        for n in ("f", "g", "h")[:k]:
            par.stat_same(n, ("type", "nlink", "size"))
            assert nlink(par.mp(n)) == k
    ino = {os.lstat(par.mp(n)).st_ino for n in ("f", "g", "h")}
    assert len(ino) == 1, "hard links show different inode numbers"
    # one object: a write through one name is read through the other
    with open(par.mp("g"), "r+b") as fh:
        fh.write(b"SHARED")
    assert read_all(par.mp("h")) == read_all(par.mp("f")) == b"SHARED"
    assert os.lstat(par.dp("f")).st_nlink == 3 and \
        os.lstat(par.dp("f")).st_ino == os.lstat(par.dp("h")).st_ino
    par.same(os.unlink, P("f"), expect="ok")
    par.stat_same("g", ("type", "nlink"))
    par.same(os.unlink, P("g"), expect="ok")
    par.stat_same("h", ("type", "nlink"))
    assert read_all(par.mp("h")) == b"SHARED"


def test_link_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.each(create_file, P("g"), b"y")
    par.each(os.mkdir, P("d"))
    if not hardlinks_or_errno(par, "f"):
        # the errno comes before any other check a server could make
        par.expect(par.m.caps("hardlink"), os.link, P("f"), P("d/new"))
        return
    par.same(os.link, P("f"), P("g"), expect=errno.EEXIST)
    par.same(os.link, P("f"), P("d"), expect=errno.EEXIST)
    par.same(os.link, P("f"), P("f"), expect=errno.EEXIST)
    par.same(os.link, P("missing"), P("new"), expect=errno.ENOENT)
    par.same(os.link, P("f"), P("nodir/new"), expect=errno.ENOENT)
    par.same(os.link, P("f/x"), P("new"), expect=errno.ENOTDIR)
    par.same(os.link, P("f"), P("g/new"), expect=errno.ENOTDIR)
    par.same(os.link, P("d"), P("dlink"), expect=errno.EPERM)  # no links to directories
    par.same(os.link, P("f"), P("x" * 256), expect=errno.ENAMETOOLONG)
    if symlinks_or_errno(par):
        par.each(os.symlink, "g", P("l"))
        par.same(os.link, P("f"), P("l"), expect=errno.EEXIST)
        # link() does not follow a symlink source (linkat without AT_SYMLINK_FOLLOW)
        par.same(os.link, P("l"), P("l2"), follow_symlinks=False, expect="ok")
        par.stat_same("l2", ("type", "nlink"))
        assert os.readlink(par.mp("l2")) == "g"
        par.same(os.link, P("l"), P("l3"), follow_symlinks=True, expect="ok")
        par.stat_same("l3", ("type", "nlink", "size"))


def test_link_exdev(mounted):
    """Hard links never cross referrals (one location each), whatever the kinds."""
    f = create(mounted.p("a", "f"), b"x")
    want = errno.EXDEV
    for target in (mounted.p("b", "f"), mounted.p("a", "nested", "f"),
                   mounted.p("virt", "deep", "f")):
        expect_errno(want, os.link, f, target)
    # from a file location into the kind under test, too
    g = create(mounted.p("a", "nested", "g"), b"y")
    expect_errno(want, os.link, g, mounted.p("a", "g"))
    # and into a virtual directory: read-only
    expect_errno(errno.EROFS, os.link, f, mounted.p("virt", "f"))


def test_unlink(par):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    par.same(os.unlink, P("d"), expect=errno.EISDIR)
    par.same(os.unlink, P("missing"), expect=errno.ENOENT)
    par.same(os.unlink, P("f/x"), expect=errno.ENOTDIR)
    par.same(os.unlink, P("x" * 256), expect=errno.ENAMETOOLONG)
    par.same(os.unlink, P("f"), expect="ok")
    assert not os.path.lexists(par.dp("f"))
    par.same(os.unlink, P("f"), expect=errno.ENOENT)
    if symlinks_or_errno(par):
        par.each(create_file, P("target"), b"t")
        par.each(os.symlink, "target", P("l"))
        par.same(os.unlink, P("l"), expect="ok")  # the link, not its target
        par.stat_same("target", ("type", "size"))
        par.each(os.symlink, "d", P("ld"))
        par.same(os.unlink, P("ld"), expect="ok")
        assert os.path.isdir(par.mp("d"))


def test_unlink_open_file(par):
    """pjdfstest-style: the data of an unlinked file stays readable and writable through every
    descriptor open on it, until the last one closes."""
    def scenario(path):
        create_file(path, b"0123456789")
        rw = os.open(path, os.O_RDWR)
        ro = os.open(path, os.O_RDONLY)
        try:
            os.unlink(path)
            gone = not os.path.lexists(path)
            os.pwrite(rw, b"abc", 8)  # past the old end
            os.ftruncate(rw, 12)
            os.fsync(rw)
            st = os.fstat(ro)
            return (gone, os.pread(ro, 100, 0), os.pread(rw, 4, 2), st.st_size, st.st_nlink)
        finally:
            os.close(rw)
            os.close(ro)
    got = par.same(scenario, P("f"), expect="ok")
    assert got == (True, b"01234567abc\0", b"2345", 12, 0)
    # nothing is left in the location once the last descriptor is closed
    assert wait_until(lambda: os.listdir(par.dp()) == [], VISIBLE_WITHIN[par.kind]), \
        f"left in the location: {os.listdir(par.dp())}"
