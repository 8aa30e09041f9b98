# SPDX-License-Identifier: GPL-2.0-or-later
"""POSIX ACLs through the mount (DESIGN §6): on a file:// location they are the backing
filesystem's system.posix_acl_* xattrs, and with default_permissions the kernel enforces them
(a named user's entry grants access the mode bits do not; a default ACL is inherited and then
overrides the creator's umask), exactly as on the native directory they are compared with.
NFS and SMB locations have none: setting one fails with EOPNOTSUPP, and access follows the mode
bits alone."""

import errno
import os
import stat
import struct

import pytest

from conftest import supports
from posix_util import P, Parity, create_file, open_close, read_all
from posix_util import users_fixture  # noqa: F401 (fixtures)

ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"

# linux/posix_acl_xattr.h: a version, then (tag, perm, id) entries, little-endian
_TAGS = {"user_obj": 0x01, "user": 0x02, "group_obj": 0x04, "group": 0x08, "mask": 0x10,
         "other": 0x20}
_NO_ID = 0xFFFFFFFF


def acl_value(entries):
    """The xattr value of an ACL given as [(tag, perm bits, id or None)]."""
    out = struct.pack("<I", 2)
    for tag, perm, ident in entries:
        out += struct.pack("<HHI", _TAGS[tag], perm, _NO_ID if ident is None else ident)
    return out


def acl_entries(value):
    """The entries of an ACL xattr value, as acl_value() takes them."""
    names = {v: k for k, v in _TAGS.items()}
    (version,) = struct.unpack_from("<I", value)
    assert version == 2
    out = []
    for off in range(4, len(value), 8):
        tag, perm, ident = struct.unpack_from("<HHI", value, off)
        out.append((names[tag], perm, None if ident == _NO_ID else ident))
    return out


def has_acls(kind):
    return kind == "file"


@pytest.fixture
def upar(mounted, users):
    """A Parity whose root any user may write in (0777)."""
    return Parity(mounted, mode=0o777)


def test_named_user_entry_grants_access(upar, users):
    """A file of mode 0600 owned by root, with an entry giving user a read access: a reads it,
    user b does not; removing the ACL takes a's access away."""
    par, a, b = upar, users["a"], users["b"]
    par.each(create_file, P("f"), b"secret", mode=0o600)
    modes = supports(par.kind, "chmod") is True  # smb shows every file as file-mode (0755)
    if modes:
        par.same(read_all, P("f"), user=a, expect=errno.EACCES)
    grant = acl_value([("user_obj", 6, None), ("user", 4, a.uid), ("group_obj", 0, None),
                       ("mask", 4, None), ("other", 0, None)])
    if not has_acls(par.kind):
        par.expect(errno.EOPNOTSUPP, os.setxattr, P("f"), ACCESS, grant)
        par.expect(errno.ENODATA, os.getxattr, P("f"), ACCESS)
        if modes:
            par.expect(errno.EACCES, read_all, P("f"), user=a)
        return
    par.same(os.setxattr, P("f"), ACCESS, grant, expect="ok")
    par.stat_same("f", ("perm",))  # the group bits show the mask: 0640
    assert stat.S_IMODE(os.stat(par.mp("f")).st_mode) == 0o640
    assert acl_entries(os.getxattr(par.mp("f"), ACCESS)) == acl_entries(grant)
    par.same(read_all, P("f"), user=a, expect="ok")
    par.same(read_all, P("f"), user=b, expect=errno.EACCES)
    par.same(open_close, P("f"), os.O_WRONLY, user=a, expect=errno.EACCES)
    par.same(os.removexattr, P("f"), ACCESS, expect="ok")
    par.same(read_all, P("f"), user=a, expect=errno.EACCES)


def test_chmod_limits_acl(upar, users):
    """chmod changes the ACL's mask along with the group bits: a named entry is then limited
    by it, as on a local filesystem. (Where there are no ACLs, chmod alone decides.)"""
    par, a = upar, users["a"]
    if not has_acls(par.kind):
        par.each(create_file, P("f"), b"x", mode=0o600)
        par.expect(errno.ENODATA, os.getxattr, P("f"), ACCESS)
        par.same(os.chmod, P("f"), 0o640, expect="ok")
        par.expect(errno.ENODATA, os.getxattr, P("f"), ACCESS)
        return
    par.each(create_file, P("f"), b"x", mode=0o600)
    par.each(os.setxattr, P("f"), ACCESS,
             acl_value([("user_obj", 6, None), ("user", 6, a.uid), ("group_obj", 0, None),
                        ("mask", 6, None), ("other", 0, None)]))
    par.same(open_close, P("f"), os.O_RDWR, user=a, expect="ok")
    par.same(os.chmod, P("f"), 0o640, expect="ok")
    par.same(open_close, P("f"), os.O_RDWR, user=a, expect=errno.EACCES)
    par.same(read_all, P("f"), user=a, expect="ok")
    par.stat_same("f", ("perm",))


@pytest.mark.parametrize("make", ["file", "dir"])
def test_default_acl_inherited_over_umask(upar, users, make):
    """A default ACL on a directory is inherited by what is made in it, and then the creator's
    umask does not apply (POSIX.1e); beside it, in a directory without one, the umask does."""
    par, a = upar, users["a"]
    par.each(os.mkdir, P("inherit"))
    par.each(os.mkdir, P("plain"))
    for d in ("inherit", "plain"):
        par.each(os.chmod, P(d), 0o777)
    dflt = acl_value([("user_obj", 7, None), ("group_obj", 7, None), ("other", 5, None)])
    if not has_acls(par.kind):
        par.expect(errno.EOPNOTSUPP, os.setxattr, P("inherit"), DEFAULT, dflt)
        return
    par.same(os.setxattr, P("inherit"), DEFAULT, dflt, expect="ok")

    def make_it(path):
        if make == "dir":
            os.mkdir(path, 0o777)
        else:
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666))

    for d in ("inherit", "plain"):
        par.same(make_it, P(f"{d}/new"), user=a, umask=0o077, expect="ok")
        par.stat_same(f"{d}/new", ("type", "perm", "uid", "gid"))
    got = stat.S_IMODE(os.stat(par.mp("inherit/new")).st_mode)
    assert got == (0o775 if make == "dir" else 0o664), oct(got)
    assert stat.S_IMODE(os.stat(par.mp("plain/new")).st_mode) == (
        0o700 if make == "dir" else 0o600)
    if make == "dir":  # a directory inherits the default ACL itself
        assert acl_entries(os.getxattr(par.mp("inherit/new"), DEFAULT)) == acl_entries(dflt)


def test_umask_applied_without_acls(upar, users):
    """On every kind, a plain create applies the caller's umask (the kernel leaves it to
    fedfuse once ACLs are on)."""
    par, a = upar, users["a"]
    if not supports(par.kind, "chmod") is True:
        # smb: the root shows dir-mode 0755 of the daemon's user, so a plain user creates
        # nothing there (test_posix_perms); root's new objects show file-mode and dir-mode
        par.expect(errno.EACCES, create_file, P("f"), b"", 0o666, user=a, umask=0o027)
        par.each(create_file, P("r"), b"", 0o600)
        assert stat.S_IMODE(os.stat(par.mp("r")).st_mode) == 0o755
        return
    par.same(create_file, P("f"), b"", 0o666, user=a, umask=0o027, expect="ok")
    par.same(os.mkdir, P("d"), 0o777, user=a, umask=0o027, expect="ok")
    par.stat_same("f", ("perm",))
    par.stat_same("d", ("perm",))
    assert stat.S_IMODE(os.stat(par.mp("f")).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(par.mp("d")).st_mode) == 0o750
