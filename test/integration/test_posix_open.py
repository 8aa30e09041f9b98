# SPDX-License-Identifier: GPL-2.0-or-later
"""open(2) and ftruncate(2) through the mount, call by call against a native directory (what
pjdfstest's tests/open and tests/ftruncate cover): flags, O_CREAT modes, EEXIST, ENOENT,
ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP, O_TRUNC, O_APPEND, descriptors used against their access
mode. EACCES needs a plain user: test_posix_perms.py."""

import errno
import os
import stat

import pytest

from posix_util import (P, create_file, open_close, pcaps, read_all, shown_perm, stat_fields,
                        symlinks_or_errno, with_fd, write_at)
from posix_util import par_fixture  # noqa: F401 (fixtures)

O = os


def setup_tree(par):
    par.each(create_file, P("f"), b"0123456789")
    par.each(os.mkdir, P("d"))


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o755, 0o444, 0o000, 0o777, 0o1755, 0o2755,
                                  0o4755])
def test_open_creat_mode(par, mode):
    """O_CREAT makes a regular file with mode & ~umask (the kernel applies the umask)."""
    os.umask(0o022)
    par.same(open_close, P("f"), O.O_CREAT | O.O_EXCL | O.O_RDWR, mode, expect="ok")
    par.stat_same("f", stat_fields(par.kind))
    assert stat.S_IMODE(os.lstat(par.mp("f")).st_mode) == shown_perm(par.kind, mode & ~0o022)
    # root may reopen it for writing whatever the mode says (not where the server refuses)
    refuse = pcaps(par.kind, "root_writes_readonly")
    if refuse is not True and not (shown_perm(par.kind, mode & ~0o022) & 0o222):
        par.expect(refuse, with_fd, P("f"), O.O_RDWR, write_at, b"x", 0)
        return
    par.same(with_fd, P("f"), O.O_RDWR, write_at, b"x", 0, expect="ok")


def test_open_creat_mode_zero_writable_by_creator(par):
    """pjdfstest open/25: O_CREAT with mode 0 and O_RDWR gives a descriptor that writes."""
    def creat_write(path):
        fd = os.open(path, O.O_CREAT | O.O_EXCL | O.O_RDWR, 0)
        try:
            return os.write(fd, b"hello")
        finally:
            os.close(fd)
    par.same(creat_write, P("f"), expect="ok")
    assert read_all(par.dp("f")) == b"hello"


def test_open_eexist(par):
    setup_tree(par)
    par.same(open_close, P("f"), O.O_CREAT | O.O_EXCL | O.O_WRONLY, expect=errno.EEXIST)
    par.same(open_close, P("d"), O.O_CREAT | O.O_EXCL | O.O_RDONLY, expect=errno.EEXIST)
    # without O_CREAT, O_EXCL is ignored (Linux); O_CREAT alone opens the existing file
    par.same(open_close, P("f"), O.O_EXCL | O.O_RDONLY, expect="ok")
    assert par.same(open_close, P("f"), O.O_CREAT | O.O_RDWR) == (stat.S_IFREG, 10)
    assert read_all(par.dp("f")) == b"0123456789"
    if symlinks_or_errno(par):
        # O_EXCL never follows a symlink, not even a dangling one
        par.each(os.symlink, "f", P("lf"))
        par.each(os.symlink, "nowhere", P("dangling"))
        par.same(open_close, P("lf"), O.O_CREAT | O.O_EXCL | O.O_WRONLY, expect=errno.EEXIST)
        par.same(open_close, P("dangling"), O.O_CREAT | O.O_EXCL | O.O_WRONLY,
                 expect=errno.EEXIST)
        assert not os.path.lexists(par.mp("nowhere"))
        # O_CREAT without O_EXCL through a dangling symlink creates its target (Linux)
        par.same(open_close, P("dangling"), O.O_CREAT | O.O_WRONLY, expect="ok")
        par.stat_same("nowhere", stat_fields(par.kind))


def test_open_enoent(par):
    setup_tree(par)
    par.same(open_close, P("missing"), O.O_RDONLY, expect=errno.ENOENT)
    par.same(open_close, P("missing"), O.O_WRONLY | O.O_TRUNC, expect=errno.ENOENT)
    par.same(open_close, P("nodir/f"), O.O_CREAT | O.O_WRONLY, expect=errno.ENOENT)
    par.same(open_close, P("d/missing/f"), O.O_RDONLY, expect=errno.ENOENT)


def test_open_enotdir(par):
    setup_tree(par)
    par.same(open_close, P("f/x"), O.O_RDONLY, expect=errno.ENOTDIR)
    par.same(open_close, P("f/x"), O.O_CREAT | O.O_WRONLY, expect=errno.ENOTDIR)
    par.same(open_close, P("f/"), O.O_RDONLY, expect=errno.ENOTDIR)
    par.same(open_close, P("f"), O.O_RDONLY | O.O_DIRECTORY, expect=errno.ENOTDIR)
    par.same(open_close, P("d"), O.O_RDONLY | O.O_DIRECTORY, expect="ok")
    # O_CREAT|O_DIRECTORY is refused (Linux >= 6.4: EINVAL) whatever exists
    par.same(open_close, P("new"), O.O_CREAT | O.O_DIRECTORY | O.O_RDONLY)
    par.same(open_close, P("d"), O.O_CREAT | O.O_DIRECTORY | O.O_RDONLY)


def test_open_eisdir(par):
    setup_tree(par)
    par.same(open_close, P("d"), O.O_RDONLY, expect="ok")
    for flags in (O.O_WRONLY, O.O_RDWR, O.O_CREAT | O.O_WRONLY, O.O_RDONLY | O.O_TRUNC,
                  O.O_WRONLY | O.O_TRUNC):
        par.same(open_close, P("d"), flags, expect=errno.EISDIR)
    par.same(open_close, P("d/"), O.O_CREAT | O.O_RDWR, expect=errno.EISDIR)


def test_open_enametoolong(par):
    par.each(os.mkdir, P("d"))
    long_name, max_name = "x" * 256, "y" * 255
    par.same(open_close, P(long_name), O.O_CREAT | O.O_WRONLY, expect=errno.ENAMETOOLONG)
    par.same(open_close, P(long_name), O.O_RDONLY, expect=errno.ENAMETOOLONG)
    par.same(open_close, P(long_name + "/f"), O.O_RDONLY, expect=errno.ENAMETOOLONG)
    par.same(open_close, P("d/" + long_name), O.O_CREAT | O.O_WRONLY,
             expect=errno.ENAMETOOLONG)
    par.same(open_close, P(max_name), O.O_CREAT | O.O_WRONLY, expect="ok")
    assert os.path.exists(par.dp(max_name))
    par.same(os.unlink, P(max_name), expect="ok")
    # a whole path of PATH_MAX bytes or more
    deep = "/".join(["z" * 100] * 41)
    par.same(open_close, P(deep), O.O_RDONLY, expect=errno.ENAMETOOLONG)


def test_open_eloop(par):
    if not symlinks_or_errno(par):
        return
    par.each(create_file, P("f"), b"data")
    par.each(os.mkdir, P("d"))
    par.each(os.symlink, "f", P("lf"))
    par.each(os.symlink, "d", P("ld"))
    par.each(os.symlink, "l2", P("l1"))
    par.each(os.symlink, "l1", P("l2"))
    par.each(os.symlink, "self", P("self"))
    for flags in (O.O_RDONLY, O.O_WRONLY, O.O_RDWR, O.O_CREAT | O.O_WRONLY,
                  O.O_WRONLY | O.O_TRUNC):
        par.same(open_close, P("lf"), flags | O.O_NOFOLLOW, expect=errno.ELOOP)
    par.same(open_close, P("ld"), O.O_RDONLY | O.O_NOFOLLOW)
    par.same(open_close, P("ld"), O.O_RDONLY | O.O_NOFOLLOW | O.O_DIRECTORY)
    par.same(open_close, P("lf"), O.O_RDONLY, expect="ok")  # followed without O_NOFOLLOW
    for name in ("l1", "self", "l1/x"):
        par.same(open_close, P(name), O.O_RDONLY, expect=errno.ELOOP)
        par.same(open_close, P(name), O.O_CREAT | O.O_WRONLY, expect=errno.ELOOP)
    # O_NOFOLLOW applies to the last component only
    par.same(open_close, P("ld/../f"), O.O_RDONLY | O.O_NOFOLLOW)
    par.same(open_close, P("f"), O.O_RDONLY | O.O_NOFOLLOW, expect="ok")


def test_open_trunc(par):
    for name in ("w", "rw", "ro"):
        par.each(create_file, P(name), b"0123456789")
    assert par.same(open_close, P("w"), O.O_WRONLY | O.O_TRUNC) == (stat.S_IFREG, 0)
    assert par.same(open_close, P("rw"), O.O_RDWR | O.O_TRUNC) == (stat.S_IFREG, 0)
    # O_RDONLY|O_TRUNC: unspecified by POSIX; Linux truncates when the caller may write
    par.same(open_close, P("ro"), O.O_RDONLY | O.O_TRUNC)
    par.stat_same("ro", ("type", "size"))
    for name in ("w", "rw"):
        assert read_all(par.dp(name)) == b""
    # O_CREAT|O_TRUNC on an existing file truncates it too
    par.each(create_file, P("c"), b"abc")
    assert par.same(open_close, P("c"), O.O_CREAT | O.O_TRUNC | O.O_WRONLY) == (stat.S_IFREG, 0)


def test_open_append(par):
    def append(path):
        fd = os.open(path, O.O_WRONLY | O.O_APPEND)
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, b"END")
            return os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
    par.each(create_file, P("f"), b"0123456789")
    assert par.same(append, P("f")) == 13
    assert read_all(par.mp("f")) == read_all(par.np("f")) == b"0123456789END"


def _ftruncate(fd, size):
    return os.ftruncate(fd, size)


def test_descriptor_access_mode(par):
    """pjdfstest ftruncate/13: a descriptor not open for writing cannot truncate (Linux:
    EINVAL), write (EBADF); one not open for reading cannot read (EBADF)."""
    par.each(create_file, P("f"), b"0123456789")
    par.same(with_fd, P("f"), O.O_RDONLY, _ftruncate, 2, expect=errno.EINVAL)
    par.same(with_fd, P("f"), O.O_RDONLY, os.write, b"x", expect=errno.EBADF)
    par.same(with_fd, P("f"), O.O_WRONLY, os.read, 4, expect=errno.EBADF)
    assert read_all(par.dp("f")) == b"0123456789"
    par.same(with_fd, P("f"), O.O_WRONLY, _ftruncate, 2, expect="ok")
    par.same(with_fd, P("f"), O.O_RDWR, _ftruncate, 4, expect="ok")
    assert read_all(par.dp("f")) == b"01\0\0"
    # negative length: EINVAL
    par.same(with_fd, P("f"), O.O_RDWR, _ftruncate, -1, expect=errno.EINVAL)
    # a directory descriptor cannot be truncated
    par.each(os.mkdir, P("d"))
    par.same(with_fd, P("d"), O.O_RDONLY, _ftruncate, 0)


def file_type(path):
    return stat.S_IFMT(os.lstat(path).st_mode)


def test_name_length_limit(par):
    """Names of NAME_MAX (255) bytes work for every kind of call; 256 bytes is ENAMETOOLONG, as
    on a local file system, answered by fedfuse before the name reaches a server."""
    ok, long = "n" * 255, "m" * 256
    par.same(create_file, P(ok), b"x", expect="ok")
    par.same(file_type, P(ok), expect="ok")
    par.same(os.rename, P(ok), P("o" * 255), expect="ok")
    par.same(os.mkdir, P("d" * 255), expect="ok")
    for call, args in ((create_file, (P(long), b"x")), (file_type, (P(long),)),
                       (os.mkdir, (P(long),)), (os.rmdir, (P(long),)), (os.unlink, (P(long),)),
                       (os.rename, (P("o" * 255), P(long))), (os.rename, (P(long), P("z"))),
                       (os.symlink, ("target", P(long))), (os.link, (P("o" * 255), P(long)))):
        par.same(call, *args, expect=errno.ENAMETOOLONG)
