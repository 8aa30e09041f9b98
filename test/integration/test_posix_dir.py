# SPDX-License-Identifier: GPL-2.0-or-later
"""mkdir(2) and rmdir(2) through the mount, against a native directory (pjdfstest tests/mkdir,
tests/rmdir): modes, link counts of the parent, EEXIST, ENOENT, ENOTDIR, ENAMETOOLONG,
ENOTEMPTY, EINVAL on ".", and what a namespace forbids (referrals, virtual directories)."""

import errno
import os
import stat

import pytest

from posix_util import (P, create_file, psupports, shown_perm, symlinks_or_errno)
from posix_util import par_fixture  # noqa: F401 (fixtures)
from util import expect_errno


@pytest.mark.parametrize("mode", [0o755, 0o700, 0o777, 0o1777, 0o2755, 0o0, 0o4755])
def test_mkdir_mode(par, mode):
    os.umask(0o022)
    par.same(os.mkdir, P("d"), mode, expect="ok")
    got = stat.S_IMODE(os.lstat(par.mp("d")).st_mode)
    if par.m.supports("chmod") and psupports(par.kind, "dir_modes"):
        par.stat_same("d", ("type", "perm", "nlink", "uid", "gid"))
    else:
        assert got == shown_perm(par.kind, mode, is_dir=True)
    assert os.path.isdir(par.dp("d"))


def test_mkdir_parent_nlink(par):
    """A new subdirectory adds one link to its parent ("..") and rmdir takes it back."""
    par.each(os.mkdir, P("p"))
    par.stat_same("p", ("type", "nlink"))
    for name in ("a", "b"):
        par.same(os.mkdir, P("p/" + name), expect="ok")
        par.stat_same("p", ("type", "nlink"))
        par.stat_same("p/" + name, ("type", "nlink"))
    par.each(create_file, P("p/f"), b"")  # a file adds none
    par.stat_same("p", ("type", "nlink"))
    par.same(os.rmdir, P("p/a"), expect="ok")
    par.stat_same("p", ("type", "nlink"))


def test_mkdir_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    par.same(os.mkdir, P("f"), expect=errno.EEXIST)
    par.same(os.mkdir, P("d"), expect=errno.EEXIST)
    par.same(os.mkdir, P("d/"), expect=errno.EEXIST)
    par.same(os.mkdir, P("missing/d"), expect=errno.ENOENT)
    par.same(os.mkdir, P("f/d"), expect=errno.ENOTDIR)
    par.same(os.mkdir, P("x" * 256), expect=errno.ENAMETOOLONG)
    par.same(os.mkdir, P("y" * 255), expect="ok")
    par.same(os.mkdir, P("new/"), expect="ok")  # a trailing slash is fine
    if symlinks_or_errno(par):
        par.each(os.symlink, "d", P("l"))
        par.each(os.symlink, "nowhere", P("dangling"))
        par.same(os.mkdir, P("l"), expect=errno.EEXIST)
        par.same(os.mkdir, P("dangling"), expect=errno.EEXIST)  # never follows
        assert not os.path.lexists(par.mp("nowhere"))


def test_rmdir_errnos(par):
    par.each(os.makedirs, P("d/sub"))
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("e"))
    par.each(create_file, P("e/f"), b"x")
    par.same(os.rmdir, P("d"), expect=errno.ENOTEMPTY)
    par.same(os.rmdir, P("e"), expect=errno.ENOTEMPTY)
    par.same(os.rmdir, P("d/sub/."), expect=errno.EINVAL)
    par.same(os.rmdir, P("d/sub/.."), expect=errno.ENOTEMPTY)
    par.same(os.rmdir, P("f"), expect=errno.ENOTDIR)
    par.same(os.rmdir, P("f/x"), expect=errno.ENOTDIR)
    par.same(os.rmdir, P("missing"), expect=errno.ENOENT)
    par.same(os.rmdir, P("x" * 256), expect=errno.ENAMETOOLONG)
    par.same(os.rmdir, P("d/sub"), expect="ok")
    par.same(os.rmdir, P("d/"), expect="ok")
    assert not os.path.exists(par.dp("d"))
    if symlinks_or_errno(par):
        par.each(os.symlink, "e", P("l"))
        par.same(os.rmdir, P("l"), expect=errno.ENOTDIR)


def test_rmdir_open_dir(par):
    """A directory that is open (or some process's cwd) can be removed; the descriptor then
    lists nothing and fstat shows st_nlink 0."""
    par.each(os.mkdir, P("busy"))

    def rmdir_open(path):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rmdir(path)
            return (os.listdir(fd), os.fstat(fd).st_nlink)
        finally:
            os.close(fd)
    par.same(rmdir_open, P("busy"), expect="ok")


def test_rmdir_dot_of_root(mounted):
    """rmdir of a referral, a nested referral or a virtual directory: the namespace's."""
    expect_errno(errno.EBUSY, os.rmdir, mounted.p("a", "nested"))
    expect_errno({errno.EBUSY, errno.EROFS}, os.rmdir, mounted.p("virt", "deep"))
    expect_errno({errno.EBUSY, errno.EROFS}, os.rmdir, mounted.p("a"))
    expect_errno(errno.EINVAL, os.rmdir, mounted.p("a", "."))
    expect_errno(errno.EROFS, os.mkdir, mounted.p("virt", "new"))
