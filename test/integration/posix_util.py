# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers of the POSIX conformance suite (test_posix_*.py, issue 8): parity checks that run one
call on the mount and on a native directory and compare result and errno (STYLE 11, as mergerfs's
tests/TEST_posix_* do), unprivileged users to act as, and timestamp bookkeeping.

A test builds a Parity over a `mounted` fixture: the same relative tree lives in mount /a/t and
in a native directory beside the mount (a plain ext4 directory here), and

    par.same(os.rename, P("x"), P("y"))

calls os.rename on both sides (P() paths made absolute on each side) and fails unless both give
the same result or the same errno. With user=USER_A the call runs in a child process acting as
that user (uid, gid, supplementary groups; the child first changes into the side's root as root,
so P() paths are relative and the 0700 pytest temp dirs above are never searched).
"""

import ctypes
import errno
import grp
import os
import pickle
import pwd
import stat
import subprocess
import time

import pytest

from conftest import CAPS
from util import errname

# ---- what the POSIX suite needs to know beyond conftest.CAPS -----------------------------------

# Per kind, in the spirit of conftest.CAPS: True works as on a local POSIX filesystem; an errno is
# the documented error; other values are explained here.
#   owners: True, or "fixed": every file shows the location's uid/gid (fedfuse.namespace(5)
#           uid=/gid=, default the daemon's user), chown is accepted and ignored (as mount.cifs
#           without unix extensions does).
#   dir_modes: True, or "fixed": directories always show dir-mode (default 0755).
#   special_bits: True: setuid/setgid/sticky are stored; False: dropped (smb: write-bit only).
#   atime: True: reads update atime on the server's relatime rules; False: not honoured.
#   dir_nlink: True: a directory's st_nlink counts its subdirectories; False: always 2 (cifs).
#   rename_noreplace, rename_exchange: renameat2() flags; an errno where the protocol has no
#           atomic way (NFS has neither, SMB no exchange): EINVAL, as Linux's NFS and CIFS
#           clients answer.
#   symlink_max: the longest symlink target the kind stores (PATH_MAX - 1 on Linux).
#   ctime: True, or "mtime": st_ctime shows the last write time (libsmbclient's stat), so
#           it moves with mtime only and goes back when mtime is set back.
#   symlink_times: True: utimensat(AT_SYMLINK_NOFOLLOW) sets a symlink's own times; False: the
#           server accepts and ignores them (nfs-ganesha 4.3's VFS FSAL).
#   truncate_same_mtime: True: truncate() to the current size moves mtime/ctime (Linux
#           filesystems do); False: the server skips it (Samba: an unchanged end of file).
#   time_range: seconds a timestamp may take: None (any 64-bit time), or (lo, hi) where the
#           protocol has less room (NFSv3: unsigned 32-bit seconds, as for Linux's client).
#   root_writes_readonly: True: root opens a file without write bits for writing (Linux);
#           an errno: the server refuses (SMB: the DOS read-only attribute, as mount.cifs).
#   sticky_only_dir: True: mkdir(path, 01000) makes a directory; an errno: the server takes a
#           directory of mode 01000 for an NFSv4 referral (nfs-ganesha 4.3 answers
#           NFS4ERR_MOVED for it: EREMOTE).
_POSIX_EXTRA = dict(owners=True, dir_modes=True, special_bits=True, atime=True,
                    dir_nlink=True, rename_noreplace=True, rename_exchange=True,
                    symlink_max=4095, ctime=True, symlink_times=True, time_range=None,
                    truncate_same_mtime=True, root_writes_readonly=True, sticky_only_dir=True)
# libnfs 4.0 encodes every call but WRITE into a 4 KiB buffer: longer symlink targets than
# about 3.9 KiB cannot be sent (ENAMETOOLONG); 3072 bytes always fit.
_NFS_EXTRA = dict(_POSIX_EXTRA, rename_noreplace=errno.EINVAL, rename_exchange=errno.EINVAL,
                  symlink_times=False, symlink_max=3072)
POSIX_CAPS = {
    "file": dict(CAPS["file"], **_POSIX_EXTRA),
    "nfs3": dict(CAPS["nfs3"], **dict(_NFS_EXTRA, time_range=(0, 1 << 32))),
    "nfs4": dict(CAPS["nfs4"], **dict(_NFS_EXTRA, sticky_only_dir=errno.EREMOTE)),
    "smb": dict(CAPS["smb"], **dict(_POSIX_EXTRA, owners="fixed", dir_modes="fixed",
                                    special_bits=False, dir_nlink=False,
                                    rename_exchange=errno.EINVAL, ctime="mtime",
                                    truncate_same_mtime=False,
                                    root_writes_readonly=errno.EACCES)),
}


def pcaps(kind, what):
    return POSIX_CAPS[kind][what]


def psupports(kind, what):
    return POSIX_CAPS[kind][what] is True


# ---- users --------------------------------------------------------------------------------------

USER_A = "fedfusetest2"  # a plain user, member of GROUP through a supplementary group
USER_B = "fedfusetest3"  # another plain user, not in GROUP
GROUP = "fedfusetestg"


class User:
    def __init__(self, name):
        pw = pwd.getpwnam(name)
        self.name = name
        self.uid = pw.pw_uid
        self.gid = pw.pw_gid
        self.groups = os.getgrouplist(name, pw.pw_gid)

    def __repr__(self):
        return f"User({self.name}, uid={self.uid}, gid={self.gid}, groups={self.groups})"


def _exists(getter, name):
    try:
        getter(name)
        return True
    except KeyError:
        return False


def _ensure(getter, name, cmd):
    """Run cmd unless `name` exists; another session creating it at the same time is fine."""
    if _exists(getter, name):
        return
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 and not _exists(getter, name):
        pytest.fail(f"{' '.join(cmd)} failed: {p.stderr}", pytrace=False)


def ensure_users():
    """Create GROUP, USER_A (in GROUP) and USER_B when missing; idempotent. Returns
    {"a": User, "b": User, "group": gid}."""
    if os.geteuid() != 0:
        pytest.fail("the POSIX permission tests create users: run them as root", pytrace=False)
    nologin = "/usr/sbin/nologin"
    _ensure(grp.getgrnam, GROUP, ["groupadd", "--system", GROUP])
    for name, groups in ((USER_A, [GROUP]), (USER_B, [])):
        cmd = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
               "--shell", nologin, "--user-group"]
        if groups:
            cmd += ["--groups", ",".join(groups)]
        _ensure(pwd.getpwnam, name, cmd + [name])
    gid = grp.getgrnam(GROUP).gr_gid
    if gid not in User(USER_A).groups:  # made by an older run without the group
        subprocess.run(["usermod", "-a", "-G", GROUP, USER_A], check=True)
    return {"a": User(USER_A), "b": User(USER_B), "group": gid}


@pytest.fixture(scope="session", name="users")
def users_fixture():
    """The plain users of the permission tests, created once per session."""
    return ensure_users()


def as_user(user, fn, *args, cwd=None, umask=0o022, groups=None, **kw):
    """Call fn(*args, **kw) in a forked child acting as `user` (a User): supplementary groups
    (default: the user database's, as the daemon sees them), gid, uid, umask. With `cwd` the
    child changes into it before dropping root. Returns fn's (picklable) result; an OSError
    raised by fn is raised again here with its errno."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        try:
            os.close(rfd)
            try:
                if cwd is not None:
                    os.chdir(cwd)
                os.setgroups(user.groups if groups is None else groups)
                os.setgid(user.gid)
                os.setuid(user.uid)
                os.umask(umask)
                res = ("ok", fn(*args, **kw))
            except OSError as e:
                res = ("oserror", e.errno, str(e))
            except BaseException as e:  # noqa: BLE001 (handed to the parent)
                res = ("exception", repr(e))
            try:
                data = pickle.dumps(res)
            except Exception as e:  # noqa: BLE001
                data = pickle.dumps(("exception", f"unpicklable result: {e!r}"))
            os.write(wfd, data)
        finally:
            os._exit(0)
    os.close(wfd)
    chunks = []
    with os.fdopen(rfd, "rb") as r:
        while True:
            b = r.read(65536)
            if not b:
                break
            chunks.append(b)
    os.waitpid(pid, 0)
    if not chunks:
        pytest.fail(f"child acting as {user.name} died without a result", pytrace=False)
    res = pickle.loads(b"".join(chunks))
    if res[0] == "ok":
        return res[1]
    if res[0] == "oserror":
        raise OSError(res[1], res[2])
    pytest.fail(f"{fn.__name__} as {user.name}: {res[1]}", pytrace=False)


# ---- calls that return something comparable ----------------------------------------------------

def open_close(path, flags, mode=0o666, dir_fd=None):
    """open() then close(); returns the type and size of what was opened."""
    fd = os.open(path, flags, mode, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        return (stat.S_IFMT(st.st_mode), st.st_size if stat.S_ISREG(st.st_mode) else None)
    finally:
        os.close(fd)


def with_fd(path, flags, fn, *args, mode=0o666):
    """open(), fn(fd, *args) (its result), close()."""
    fd = os.open(path, flags, mode)
    try:
        return fn(fd, *args)
    finally:
        os.close(fd)


def write_at(fd, data, off=None):
    return os.pwrite(fd, data, off) if off is not None else os.write(fd, data)


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def lmode(path):
    """The full st_mode of path, symlinks not followed (as oct text for readable diffs)."""
    return oct(os.lstat(path).st_mode)


def nlink(path):
    return os.lstat(path).st_nlink


def owner(path):
    st = os.lstat(path)
    return (st.st_uid, st.st_gid)


def create_file(path, data=b"", mode=0o644):
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# ---- parity -------------------------------------------------------------------------------------

class P(str):
    """A path relative to the Parity root; made absolute (or left relative, for calls run as a
    user from inside the root) on each side."""


def _outcome(fn, args, kw):
    try:
        return ("ok", fn(*args, **kw))
    except OSError as e:
        return ("err", errname(e.errno))


def _short(a):
    r = repr(str(a)) if isinstance(a, P) else repr(a)
    return r if len(r) <= 60 else f"{r[:28]}...{r[-20:]} ({len(str(a))} chars)"


def _describe(fn, args):
    name = getattr(fn, "__name__", repr(fn))
    return f"{name}({', '.join(_short(a) for a in args)})"


class Parity:
    """The same relative tree in the mount (at `where`/`sub`) and in a native directory."""

    def __init__(self, mounted, where="a", sub="t", mode=0o755):
        self.m = mounted
        self.kind = mounted.kind
        self.mroot = mounted.p(where, sub)
        self.droot = mounted.d(where, sub)  # the mount side's backing dir
        self.nroot = os.path.join(mounted.tmp, f"native-{where}-{sub}")
        os.mkdir(self.mroot)
        os.mkdir(self.nroot)
        for r in (self.mroot, self.nroot):
            os.chmod(r, mode)
        self.sides = (("mount", self.mroot), ("native", self.nroot))

    def mp(self, *rel):
        return os.path.join(self.mroot, *rel)

    def np(self, *rel):
        return os.path.join(self.nroot, *rel)

    def dp(self, *rel):
        return os.path.join(self.droot, *rel)

    @staticmethod
    def _subst(root, args, relative):
        return [(a if relative else os.path.join(root, a)) if isinstance(a, P) else a
                for a in args]

    def both(self, fn, *args, user=None, umask=0o022, groups=None, **kw):
        """(mount outcome, native outcome); an outcome is ("ok", value) or ("err", "ENAME").
        With `user`, run as that user (with `groups` instead of its database groups)."""
        out = []
        for _, root in self.sides:
            if user is None:
                out.append(_outcome(fn, self._subst(root, args, False), kw))
            else:
                a = self._subst(root, args, True)
                out.append(_outcome(lambda: as_user(user, fn, *a, cwd=root, umask=umask,
                                                     groups=groups, **kw), (), {}))
        return tuple(out)

    def same(self, fn, *args, user=None, umask=0o022, groups=None, expect=None, **kw):
        """Call on both sides; both must agree (and equal `expect`, an errno or "ok", if
        given). Returns the value (None for an error)."""
        mo, no = self.both(fn, *args, user=user, umask=umask, groups=groups, **kw)
        who = f" as {user.name}" if user else ""
        who += f" with groups {groups}" if groups is not None else ""
        assert mo == no, (f"{_describe(fn, args)}{who} on {self.kind}: mount gives "
                          f"{_fmt(mo)}, native gives {_fmt(no)}")
        if expect is not None:
            want = ("err", errname(expect)) if isinstance(expect, int) else ("ok",)
            assert mo[:len(want)] == want, (f"{_describe(fn, args)}{who}: both give "
                                            f"{_fmt(mo)}, expected {want[-1]}")
        return mo[1] if mo[0] == "ok" else None

    def expect(self, err, fn, *args, user=None, umask=0o022, groups=None, **kw):
        """The mount must fail with `err` (a documented difference of this kind); the native
        side runs too, so the report can say what Linux does."""
        mo, no = self.both(fn, *args, user=user, umask=umask, groups=groups, **kw)
        ok = mo[0] == "ok" if err is None else mo == ("err", errname(err))
        assert ok, (f"{_describe(fn, args)} on {self.kind}: mount gives {_fmt(mo)}, the "
                    f"documented behaviour of {self.kind} is "
                    f"{'success' if err is None else errname(err)} (native gives {_fmt(no)})")
        return mo

    def each(self, fn, *args, **kw):
        """Call fn on both sides (setup); any error fails the test."""
        for name, root in self.sides:
            fn(*self._subst(root, args, False), **kw)

    def stat_same(self, rel, fields=("type", "perm", "nlink", "size", "uid", "gid")):
        """lstat(rel) must agree on `fields` (type, perm, nlink, size, uid, gid). The nlink of
        a directory is left out where the kind documents it as fixed (dir_nlink)."""
        if "nlink" in fields and not psupports(self.kind, "dir_nlink") and \
                os.path.isdir(os.path.join(self.nroot, rel)):
            fields = tuple(f for f in fields if f != "nlink")
        got = [self.describe(os.path.join(root, rel), fields) for _, root in self.sides]
        assert got[0] == got[1], f"lstat {rel!r} on {self.kind}: mount {got[0]}, native {got[1]}"
        return got[0]

    @staticmethod
    def describe(path, fields):
        st = os.lstat(path)
        d = {}
        for f in fields:
            if f == "type":
                d[f] = stat.filemode(st.st_mode)[0]
            elif f == "perm":
                d[f] = oct(stat.S_IMODE(st.st_mode))
            else:
                d[f] = getattr(st, "st_" + f)
        return d


def _fmt(o):
    return o[1] if o[0] == "err" else f"success ({o[1]!r})"


# ---- timestamps ---------------------------------------------------------------------------------

TIME_FIELDS = ("atime", "mtime", "ctime")
OLD_NS = 1_000_000_000_000_000_000  # 2001-09-09T01:46:40Z, a multiple of every resolution


def times(path, follow=False):
    st = os.stat(path) if follow else os.lstat(path)
    return {"atime": st.st_atime_ns, "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns}


def tick():
    """Long enough for any clock and resolution the kinds use (coarse ext4 clocks: a jiffy)."""
    time.sleep(0.03)


def changed(before, after, fields=("mtime", "ctime")):
    """The fields that moved forward; a field that moved back is reported as "<f> went back"."""
    out = set()
    for f in fields:
        if after[f] > before[f]:
            out.add(f)
        elif after[f] < before[f]:
            out.add(f + " went back")
    return out


def times_parity(par, setup, op, watched, fields=("mtime", "ctime"), allow=None):
    """Run `setup(root)` then, after a tick, `op(root)` on both sides and compare which of
    `fields` of each watched relative path moved. `allow` maps a watched path to the set of
    fields the mount may leave unchanged (a documented difference). Returns {rel: set}."""
    allow = allow or {}
    result = {}
    for side, root in par.sides:
        setup(root)
        before = {rel: times(os.path.join(root, rel)) for rel in watched}
        tick()
        op(root)
        after = {rel: times(os.path.join(root, rel)) for rel in watched if
                 os.path.lexists(os.path.join(root, rel))}
        result[side] = {rel: changed(before[rel], after[rel], fields) for rel in after}
    for rel in result["native"]:
        got, want = result["mount"].get(rel), result["native"][rel]
        if got != want and not (got is not None and want - got <= allow.get(rel, set())
                                and got <= want):
            pytest.fail(f"{par.kind}: after the operation, {rel!r} changed {sorted(got or [])} "
                        f"through the mount, {sorted(want)} on a native directory",
                        pytrace=False)
    return result["mount"]


# ---- fixtures and setup shared by the test_posix_* modules -------------------------------------

@pytest.fixture(name="par")
def par_fixture(mounted):
    """A Parity over mount /a/t (the backend kind under test) and a native directory."""
    return Parity(mounted)


def symlinks_or_errno(par, target="target", name="probe-symlink"):
    """True if the kind makes symlinks. Otherwise check that symlink() fails with the kind's
    documented errno (conftest.CAPS) and return False, so that the caller skips the rest."""
    if par.m.supports("symlink"):
        return True
    par.expect(par.m.caps("symlink"), os.symlink, target, P(name))
    return False


def hardlinks_or_errno(par, src, name="probe-link"):
    """As symlinks_or_errno, for link(): `src` (relative) must exist on both sides."""
    if par.m.supports("hardlink"):
        return True
    par.expect(par.m.caps("hardlink"), os.link, P(src), P(name))
    return False


def fifos_or_errno(par, name="probe-fifo"):
    if par.m.supports("fifo"):
        return True
    par.expect(par.m.caps("fifo"), os.mkfifo, P(name))
    return False


def stat_fields(kind, is_dir=False):
    """The lstat fields a kind must agree on with a native directory."""
    fields = ["type", "size"] if not is_dir else ["type"]
    if CAPS[kind]["chmod"] is True and (not is_dir or psupports(kind, "dir_modes")):
        fields.append("perm")
    if psupports(kind, "owners"):
        fields += ["uid", "gid"]
    if (CAPS[kind]["hardlink"] is True and not is_dir) or (is_dir and
                                                            psupports(kind, "dir_nlink")):
        fields.append("nlink")
    return tuple(fields)


def shown_perm(kind, mode, is_dir=False):
    """The permission bits a kind shows for an object given `mode` (create or chmod)."""
    how = CAPS[kind]["chmod"]
    if how is True:
        return mode & 0o7777
    assert how == "write-bit", how
    if is_dir:
        return 0o755
    return 0o755 if mode & 0o222 else 0o555


# ---- calls Python's os module does not offer on Linux -------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


def _check(rc, *what):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), *what)
    return rc


def lchmod(path, mode):
    """fchmodat(AT_SYMLINK_NOFOLLOW) (glibc's emulation: EOPNOTSUPP on a symlink)."""
    _check(_libc.fchmodat(AT_FDCWD, os.fsencode(path), ctypes.c_uint(mode),
                          AT_SYMLINK_NOFOLLOW), path)


def renameat2(old, new, flags):
    _check(_libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new),
                           ctypes.c_uint(flags)), old)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path, atime, mtime, flags=0):
    """utimensat(2) with raw (sec, nsec) pairs, UTIME_NOW / UTIME_OMIT as nsec, or None for
    a NULL times pointer."""
    if atime is None and mtime is None:
        ts = None
    else:
        ts = (_Timespec * 2)(_Timespec(*atime), _Timespec(*mtime))
    _check(_libc.utimensat(AT_FDCWD, os.fsencode(path), ts, flags), path)


def futimens(fd, atime, mtime):
    ts = (_Timespec * 2)(_Timespec(*atime), _Timespec(*mtime))
    _check(_libc.futimens(fd, ts))
