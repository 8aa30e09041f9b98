# SPDX-License-Identifier: GPL-2.0-or-later
"""symlink(2) and readlink(2) through the mount, against a native directory (pjdfstest
tests/symlink): targets of every length up to PATH_MAX - 1, dangling links, relative and
absolute targets, errnos. Kinds without symlinks (smb) must answer their documented errno."""

import errno
import os
import stat

import pytest

from posix_util import (P, create_file, pcaps, symlinks_or_errno)
from posix_util import par_fixture  # noqa: F401 (fixtures)


@pytest.mark.parametrize("length", [1, 2, 100, 255, 256, 1023, 1024, 1025, 2048, 4094, 4095])
def test_symlink_target_lengths(par, length):
    if not symlinks_or_errno(par, "t" * length):
        return
    # a target of `length` bytes made of path components no longer than NAME_MAX
    parts, left = [], length
    while left > 0:
        n = min(200, left)
        if left - n == 1:  # never leave a lone "/" at the end
            n -= 1
        parts.append("c" * (n - 1) + ("/" if left - n > 0 else "c"))
        left -= n
    target = "".join(parts)
    assert len(target) == length
    if length > pcaps(par.kind, "symlink_max"):
        par.expect(errno.ENAMETOOLONG, os.symlink, target, P("l"))
        return
    par.same(os.symlink, target, P("l"), expect="ok")
    assert par.same(os.readlink, P("l")) == target
    par.stat_same("l", ("type", "size"))
    assert os.lstat(par.mp("l")).st_size == length
    assert os.readlink(par.dp("l")) == target


def test_symlink_too_long(par):
    """A target of PATH_MAX bytes or more: ENAMETOOLONG."""
    if not symlinks_or_errno(par):
        return
    par.same(os.symlink, "x/" * 2048, P("l"), expect=errno.ENAMETOOLONG)
    par.same(os.symlink, "x" * 5000, P("l"), expect=errno.ENAMETOOLONG)


def test_symlink_dangling_and_kinds(par):
    if not symlinks_or_errno(par):
        return
    par.each(create_file, P("f"), b"data")
    par.each(os.mkdir, P("d"))
    for name, target in (("dangling", "nowhere"), ("abs", "/nonexistent/x"), ("rel", "f"),
                         ("dir", "d"), ("dotdot", "d/../f"), ("self", "self"),
                         ("space", "a target with spaces"), ("utf8", "\u00e9t\u00e9")):
        par.same(os.symlink, target, P(name), expect="ok")
        assert par.same(os.readlink, P(name)) == target
        par.stat_same(name, ("type", "size"))
        assert stat.S_ISLNK(os.lstat(par.mp(name)).st_mode)
    par.same(os.stat, P("dangling"), expect=errno.ENOENT)
    par.same(os.stat, P("self"), expect=errno.ELOOP)
    par.same(lambda p: os.stat(p).st_size, P("rel"), expect="ok")
    par.same(lambda p: sorted(os.listdir(p)), P("dir"), expect="ok")
    # a symlink's own mode is 0777 on Linux
    assert stat.S_IMODE(os.lstat(par.mp("rel")).st_mode) == 0o777
    # readdir tells the type
    with os.scandir(par.mp()) as it:
        assert {e.name for e in it if e.is_symlink()} == {
            "dangling", "abs", "rel", "dir", "dotdot", "self", "space", "utf8"}


def test_symlink_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    if not symlinks_or_errno(par):
        # the errno is the same whatever the name
        par.expect(par.m.caps("symlink"), os.symlink, "t", P("d/new"))
        return
    par.each(os.symlink, "f", P("l"))
    par.same(os.symlink, "t", P("f"), expect=errno.EEXIST)
    par.same(os.symlink, "t", P("d"), expect=errno.EEXIST)
    par.same(os.symlink, "t", P("l"), expect=errno.EEXIST)
    par.same(os.symlink, "t", P("missing/l"), expect=errno.ENOENT)
    par.same(os.symlink, "t", P("f/l"), expect=errno.ENOTDIR)
    par.same(os.symlink, "t", P("x" * 256), expect=errno.ENAMETOOLONG)
    par.same(os.symlink, "", P("empty"), expect=errno.ENOENT)
    par.same(os.readlink, P("f"), expect=errno.EINVAL)
    par.same(os.readlink, P("d"), expect=errno.EINVAL)
    par.same(os.readlink, P("missing"), expect=errno.ENOENT)
    par.same(os.readlink, P("f/x"), expect=errno.ENOTDIR)


@pytest.mark.parametrize("length", [1000, 3000, 4095])
def test_readlink_long_target_made_on_server(par, length):
    """A symlink made behind the daemon's back reads back whole, whatever its length."""
    target = ("d" * 99 + "/") * (length // 100) + "e" * (length % 100)
    target = target[:length - 1] + "z"
    os.symlink(target, par.dp("l"))
    os.symlink(target, par.np("l"))
    if not par.m.supports("symlink"):
        return  # test_symlink_on_disk_not_followed: what smb shows
    assert par.same(os.readlink, P("l")) == target
    par.stat_same("l", ("type", "size"))
