# SPDX-License-Identifier: GPL-2.0-or-later
"""chmod(2) and chown(2) as root through the mount, against a native directory (pjdfstest
tests/chmod, tests/chown): every permission bit, through descriptors and symlinks, errnos, and
setuid/setgid clearing by chown and by writes. What plain users may and may not do:
test_posix_perms.py."""

import errno
import os
import stat

import pytest

from posix_util import (P, create_file, lchmod, psupports, shown_perm, symlinks_or_errno, with_fd,
                        write_at)
from posix_util import par_fixture, users_fixture  # noqa: F401 (fixtures)

MODES = [0o7777, 0o4755, 0o2755, 0o1777, 0o0, 0o644, 0o600, 0o444, 0o777, 0o2745]


def perm(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def check_perm(par, rel, mode, is_dir):
    """The mount shows what a native directory shows, or the kind's documented mapping."""
    if par.m.supports("chmod") and (not is_dir or psupports(par.kind, "dir_modes")):
        par.stat_same(rel, ("type", "perm"))
    else:
        assert perm(par.mp(rel)) == shown_perm(par.kind, mode, is_dir), \
            f"{rel} after chmod {oct(mode)}: {oct(perm(par.mp(rel)))}"


@pytest.mark.parametrize("what", ["file", "dir"])
def test_chmod_all_bits(par, what):
    make = (lambda p: create_file(p, b"x")) if what == "file" else os.mkdir
    par.each(make, P("o"))
    for mode in MODES:
        par.same(os.chmod, P("o"), mode, expect="ok")
        check_perm(par, "o", mode, what == "dir")
    # stored on the server, not only in the kernel's cache
    if par.m.supports("chmod") and par.kind == "file":
        assert perm(par.dp("o")) == MODES[-1]


def test_fchmod(par):
    par.each(create_file, P("f"), b"x")
    for mode in (0o4711, 0o640, 0o444, 0o666):
        par.same(with_fd, P("f"), os.O_RDONLY, os.fchmod, mode, expect="ok")
        check_perm(par, "f", mode, False)
    # an open file keeps its descriptor's access whatever the new mode says
    par.same(with_fd, P("f"), os.O_RDWR, lambda fd: (os.fchmod(fd, 0), os.write(fd, b"y"))[1],
             expect="ok")


def test_chmod_follows_symlink(par):
    if not symlinks_or_errno(par):
        return
    par.each(create_file, P("f"), b"x")
    par.each(os.symlink, "f", P("l"))
    par.same(os.chmod, P("l"), 0o600, expect="ok")
    par.stat_same("f", ("type", "perm"))
    par.stat_same("l", ("type", "perm"))  # the link itself stays 0777
    # lchmod: fchmodat(AT_SYMLINK_NOFOLLOW) of a symlink is EOPNOTSUPP on Linux
    par.same(lchmod, P("l"), 0o600)


def test_chmod_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.same(os.chmod, P("missing"), 0o644, expect=errno.ENOENT)
    par.same(os.chmod, P("f/x"), 0o644, expect=errno.ENOTDIR)
    par.same(os.chmod, P("x" * 256), 0o644, expect=errno.ENAMETOOLONG)
    if symlinks_or_errno(par):
        par.each(os.symlink, "loop", P("loop"))
        par.same(os.chmod, P("loop"), 0o644, expect=errno.ELOOP)
        par.each(os.symlink, "missing", P("dangling"))
        par.same(os.chmod, P("dangling"), 0o644, expect=errno.ENOENT)


def _chown_expect(par, rel, uid, gid):
    """After chown(uid, gid) through the mount: what the kind shows."""
    st = os.lstat(par.mp(rel))
    if psupports(par.kind, "owners"):
        par.stat_same(rel, ("uid", "gid"))
        disk = os.lstat(par.dp(rel))
        assert (disk.st_uid, disk.st_gid) == (st.st_uid, st.st_gid), "owner not stored"
    else:  # "fixed": accepted and ignored, as mount.cifs without unix extensions
        assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())


def test_chown_root(par, users):
    a, g = users["a"], users["group"]
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    for rel in ("f", "d"):
        par.same(os.chown, P(rel), a.uid, g, expect="ok")
        _chown_expect(par, rel, a.uid, g)
        par.same(os.chown, P(rel), -1, 0, expect="ok")  # -1 leaves the owner alone
        _chown_expect(par, rel, a.uid, 0)
        par.same(os.chown, P(rel), 0, -1, expect="ok")
        _chown_expect(par, rel, 0, 0)
        par.same(os.chown, P(rel), -1, -1, expect="ok")
    par.same(with_fd, P("f"), os.O_RDONLY, os.fchown, a.uid, a.gid, expect="ok")
    _chown_expect(par, "f", a.uid, a.gid)
    par.same(os.chown, P("missing"), 0, 0, expect=errno.ENOENT)
    par.same(os.chown, P("f/x"), 0, 0, expect=errno.ENOTDIR)


def test_chown_symlink(par, users):
    if not symlinks_or_errno(par):
        return
    a = users["a"]
    par.each(create_file, P("f"), b"x")
    par.each(os.symlink, "f", P("l"))
    # chown follows, lchown does not
    par.same(os.chown, P("l"), a.uid, a.gid, expect="ok")
    par.stat_same("f", ("uid", "gid"))
    par.stat_same("l", ("uid", "gid"))
    par.same(os.chown, P("l"), 0, a.gid, follow_symlinks=False, expect="ok")
    par.stat_same("f", ("uid", "gid"))
    par.stat_same("l", ("uid", "gid"))
    assert os.lstat(par.dp("l")).st_gid == a.gid and os.lstat(par.dp("f")).st_uid == a.uid


@pytest.mark.parametrize("mode", [0o6755, 0o4755, 0o2755, 0o2745, 0o6644])
@pytest.mark.parametrize("what", ["file", "dir"])
def test_chown_clears_setid(par, users, mode, what):
    """Linux clears setuid, and setgid when group-executable, of a regular file on chown, even
    by root; directories keep them."""
    if not psupports(par.kind, "special_bits"):
        return  # never stored: test_chmod_all_bits checks what the kind shows
    a = users["a"]
    make = (lambda p: create_file(p, b"x")) if what == "file" else os.mkdir
    par.each(make, P("o"))
    par.same(os.chmod, P("o"), mode, expect="ok")
    par.same(os.chown, P("o"), a.uid, -1, expect="ok")
    par.stat_same("o", ("perm", "uid", "gid"))
    par.same(os.chmod, P("o"), mode, expect="ok")
    par.same(os.chown, P("o"), -1, a.gid, expect="ok")
    par.stat_same("o", ("perm", "uid", "gid"))
    # chown to the owner it already has: Linux still clears
    par.same(os.chmod, P("o"), mode, expect="ok")
    par.same(os.chown, P("o"), -1, -1, expect="ok")
    par.stat_same("o", ("perm", "uid", "gid"))


def test_root_write_keeps_setid(par):
    """A write by root (CAP_FSETID) leaves setuid/setgid alone; the suid clearing by plain
    users is in test_posix_perms.py."""
    if not psupports(par.kind, "special_bits"):
        return
    par.each(create_file, P("f"), b"x")
    par.same(os.chmod, P("f"), 0o6777, expect="ok")
    par.same(with_fd, P("f"), os.O_WRONLY, write_at, b"more", 1, expect="ok")
    par.same(os.truncate, P("f"), 2, expect="ok")
    par.stat_same("f", ("perm", "size"))
