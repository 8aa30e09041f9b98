# SPDX-License-Identifier: GPL-2.0-or-later
"""Permissions as plain users (issue 8): the mount runs with allow_other,default_permissions
(conftest.Mount), CI runs as root, so the tests act as USER_A / USER_B of posix_util (created
once per session) and compare each call with the same call by the same user on a native
directory: EACCES, EPERM of chmod/chown/utimes on another user's file, sticky directories,
ownership of new files on the backing directory, supplementary groups, the umask, setuid/setgid
clearing by unprivileged writes and chown.

SMB locations have no POSIX owners or directory modes (posix_util.POSIX_CAPS: owners and
dir_modes "fixed"): every object shows the daemon's uid/gid, directories 0755, so a plain user
may read but never create there; the tests assert exactly that on smb."""

import errno
import os
import stat
import threading

import pytest

from posix_util import (P, UTIME_NOW, UTIME_OMIT, create_file, open_close, Parity, pcaps, psupports,
                        utimensat, with_fd, write_at)
from posix_util import users_fixture  # noqa: F401 (fixtures)


@pytest.fixture
def upar(mounted, users):
    """A Parity whose root any user may write in (0777)."""
    return Parity(mounted, mode=0o777)


def posix_owners(par):
    return psupports(par.kind, "owners") and psupports(par.kind, "dir_modes")


def smb_user_cannot_create(par, user):
    """The documented behaviour where owners and directory modes are fixed: the root shows
    dir-mode 0755 owned by the daemon's user, so the kernel refuses a plain user's create."""
    assert stat.S_IMODE(os.stat(par.mroot).st_mode) == 0o755
    par.expect(errno.EACCES, open_close, P("new"), os.O_CREAT | os.O_WRONLY, user=user)
    par.expect(errno.EACCES, os.mkdir, P("newdir"), user=user)
    # and reading is allowed (others r-x, files 0755)
    par.each(create_file, P("readable"), b"r")
    par.expect(None, open_close, P("readable"), os.O_RDONLY, user=user)
    par.expect(errno.EACCES, open_close, P("readable"), os.O_WRONLY, user=user)


def test_new_files_owned_by_caller(upar, users):
    """Files, directories, symlinks and fifos a user creates belong to the user (uid and
    primary gid), through the mount and on the backing directory (DESIGN §6)."""
    par, a = upar, users["a"]
    if not posix_owners(par):
        smb_user_cannot_create(par, a)
        return
    par.same(create_file, P("f"), b"data", user=a, expect="ok")
    par.same(os.mkdir, P("d"), user=a, expect="ok")
    made = ["f", "d"]
    if par.m.supports("symlink"):
        par.same(os.symlink, "f", P("l"), user=a, expect="ok")
        made.append("l")
    if par.m.supports("fifo"):
        par.same(os.mkfifo, P("p"), user=a, expect="ok")
        made.append("p")
    for rel in made:
        par.stat_same(rel, ("type", "uid", "gid"))
        st = os.lstat(par.dp(rel))
        assert (st.st_uid, st.st_gid) == (a.uid, a.gid), \
            f"{rel} on the backing directory belongs to {st.st_uid}:{st.st_gid}"
    # in a setgid directory the group comes from the directory (and subdirs inherit setgid)
    par.each(os.mkdir, P("sg"))
    par.each(os.chown, P("sg"), 0, users["group"])
    par.each(os.chmod, P("sg"), 0o2777)
    par.same(create_file, P("sg/f"), b"x", user=a, expect="ok")
    par.same(os.mkdir, P("sg/d"), user=a, expect="ok")
    par.stat_same("sg/f", ("type", "perm", "uid", "gid"))
    par.stat_same("sg/d", ("type", "perm", "uid", "gid"))
    assert os.lstat(par.dp("sg/f")).st_gid == users["group"]


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o000, 0o777])
def test_umask(upar, users, mask):
    par, a = upar, users["a"]
    if not posix_owners(par):
        smb_user_cannot_create(par, a)
        return
    par.same(open_close, P("f"), os.O_CREAT | os.O_WRONLY, 0o666, user=a, umask=mask)
    par.same(open_close, P("x"), os.O_CREAT | os.O_WRONLY, 0o777, user=a, umask=mask)
    par.same(os.mkdir, P("d"), 0o777, user=a, umask=mask)
    made = ["f", "x", "d"]
    refuse = pcaps(par.kind, "sticky_only_dir")
    if refuse is not True and 0o1777 & ~mask == 0o1000:
        par.expect(refuse, os.mkdir, P("s"), 0o1777, user=a, umask=mask)
    else:
        par.same(os.mkdir, P("s"), 0o1777, user=a, umask=mask)
        made.append("s")
    for rel in made:
        par.stat_same(rel, ("type", "perm"))
    if par.m.supports("fifo"):
        par.same(os.mkfifo, P("p"), 0o666, user=a, umask=mask)
        par.stat_same("p", ("type", "perm"))


def test_eacces(upar, users):
    """Search, read and write permission of directories and files of another user."""
    par, a, b = upar, users["a"], users["b"]
    for d, mode in (("priv", 0o700), ("ro", 0o755), ("noexec", 0o666), ("nowrite", 0o555)):
        par.each(os.mkdir, P(d))
        par.each(create_file, P(f"{d}/f"), b"data")
        par.each(os.chmod, P(f"{d}/f"), 0o644)
        par.each(os.chown, P(d), b.uid, b.gid)
        par.each(os.chmod, P(d), mode)
    for f, mode in (("mine0", 0o000), ("theirs600", 0o600), ("theirs644", 0o644)):
        par.each(create_file, P(f), b"data")
        par.each(os.chown, P(f), a.uid if f == "mine0" else b.uid, -1)
        par.each(os.chmod, P(f), mode)
    if not posix_owners(par):
        # directory modes are not stored: every directory is 0755 of the daemon's user
        par.expect(None, os.listdir, P("priv"), user=a)
        par.expect(None, open_close, P("priv/f"), os.O_RDONLY, user=a)
        par.expect(errno.EACCES, open_close, P("ro/new"), os.O_CREAT | os.O_WRONLY, user=a)
        par.expect(errno.EACCES, open_close, P("theirs644"), os.O_WRONLY, user=a)
        return
    for call in ((os.listdir, P("priv")), (open_close, P("priv/f"), os.O_RDONLY),
                 (os.stat, P("priv/f")), (os.mkdir, P("priv/new")),
                 (open_close, P("ro/new"), os.O_CREAT | os.O_WRONLY), (os.unlink, P("ro/f")),
                 (os.rename, P("ro/f"), P("ro/g")), (os.mkdir, P("nowrite/new")),
                 (os.rename, P("nowrite/f"), P("moved")), (os.stat, P("noexec/f")),
                 (open_close, P("noexec/f"), os.O_RDONLY),
                 (open_close, P("mine0"), os.O_RDONLY), (open_close, P("theirs600"), os.O_RDONLY),
                 (open_close, P("theirs644"), os.O_WRONLY),
                 (open_close, P("theirs644"), os.O_RDONLY | os.O_TRUNC),
                 (os.truncate, P("theirs644"), 0)):
        par.same(*call, user=a, expect=errno.EACCES)
    # what is allowed
    par.same(os.listdir, P("ro"), user=a, expect="ok")
    par.same(open_close, P("ro/f"), os.O_RDONLY, user=a, expect="ok")
    par.same(os.listdir, P("noexec"), user=a, expect="ok")  # names, no attributes
    par.same(open_close, P("theirs644"), os.O_RDONLY, user=a, expect="ok")
    # and root may do all of it (CAP_DAC_OVERRIDE)
    par.same(os.listdir, P("priv"), expect="ok")
    par.same(open_close, P("mine0"), os.O_RDWR, expect="ok")


def test_open_by_file_mode_in_closed_directory(upar, users):
    """A file's own mode decides whether another user may open it, whatever the directory lets
    that user do besides searching it: write (by group or other bits) in a directory they may
    not write, read in one they may only search. libnfs 4.0's NFSv4 OPEN asked ACCESS of the
    directory and failed such opens EINVAL. Denials are EACCES."""
    par, a, b = upar, users["a"], users["b"]
    for d, mode in (("ro", 0o755), ("xonly", 0o711)):
        par.each(os.mkdir, P(d))
        for f, fmode, gid in (("other_rw", 0o666, b.gid), ("group_rw", 0o664, users["group"]),
                              ("other_r", 0o644, b.gid)):
            par.each(create_file, P(f"{d}/{f}"), b"data")
            par.each(os.chown, P(f"{d}/{f}"), b.uid, gid)
            par.each(os.chmod, P(f"{d}/{f}"), fmode)
        par.each(os.chown, P(d), b.uid, b.gid)
        par.each(os.chmod, P(d), mode)
    if not posix_owners(par):
        # owners and modes are fixed: the files show 0755 of the daemon's user
        par.expect(None, open_close, P("ro/other_rw"), os.O_RDONLY, user=a)
        par.expect(errno.EACCES, open_close, P("ro/other_rw"), os.O_WRONLY, user=a)
        return
    for d in ("ro", "xonly"):
        for f in ("other_rw", "group_rw"):
            for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_APPEND, os.O_RDONLY):
                par.same(open_close, P(f"{d}/{f}"), flags, user=a, expect="ok")
            par.same(with_fd, P(f"{d}/{f}"), os.O_WRONLY, write_at, b"more", 4, user=a,
                     expect="ok")
        par.same(open_close, P(f"{d}/other_r"), os.O_RDONLY, user=a, expect="ok")
        par.same(open_close, P(f"{d}/other_r"), os.O_WRONLY, user=a, expect=errno.EACCES)
        par.same(open_close, P(f"{d}/other_r"), os.O_RDWR, user=a, expect=errno.EACCES)
        par.stat_same(f"{d}/other_rw", ("type", "perm", "size", "uid", "gid"))


def test_eperm_on_others_files(upar, users):
    """chmod, chown and setting explicit times are the owner's (pjdfstest chmod/07, chown/07,
    utimensat/05-07)."""
    par, a, b = upar, users["a"], users["b"]
    par.each(create_file, P("theirs"), b"x")
    par.each(os.chown, P("theirs"), b.uid, b.gid)
    par.each(os.chmod, P("theirs"), 0o644)
    par.each(create_file, P("shared"), b"x")
    par.each(os.chown, P("shared"), b.uid, b.gid)
    par.each(os.chmod, P("shared"), 0o666)
    par.same(os.chmod, P("theirs"), 0o777, user=a, expect=errno.EPERM)
    par.same(os.chown, P("theirs"), a.uid, -1, user=a, expect=errno.EPERM)
    par.same(os.chown, P("theirs"), -1, users["group"], user=a, expect=errno.EPERM)
    # times: explicit values only by the owner; "now" by anyone who may write
    t = (1_000_000_000, 0)
    par.same(utimensat, P("theirs"), t, t, user=a, expect=errno.EPERM)
    par.same(utimensat, P("theirs"), (0, UTIME_NOW), (0, UTIME_NOW), user=a,
             expect=errno.EACCES)
    par.same(utimensat, P("theirs"), None, None, user=a, expect=errno.EACCES)
    par.same(utimensat, P("theirs"), (0, UTIME_OMIT), (0, UTIME_OMIT), user=a, expect="ok")
    if psupports(par.kind, "owners") and par.m.supports("chmod"):
        par.same(utimensat, P("shared"), t, t, user=a, expect=errno.EPERM)
        par.same(utimensat, P("shared"), (0, UTIME_NOW), (0, UTIME_NOW), user=a, expect="ok")
        par.same(utimensat, P("shared"), None, None, user=a, expect="ok")
    else:  # "shared" shows 0755 of the daemon's user: "now" is refused too
        par.expect(errno.EACCES, utimensat, P("shared"), None, None, user=a)


def test_chown_by_owner(upar, users):
    """A plain owner may change the group to one of its groups, nothing else (pjdfstest
    chown/00, chown/07); that clears setuid and setgid (Linux)."""
    par, a, b = upar, users["a"], users["b"]
    par.each(create_file, P("mine"), b"x")
    par.each(os.chown, P("mine"), a.uid, a.gid)
    if not psupports(par.kind, "owners"):  # shows the daemon's user: not a's
        par.expect(errno.EPERM, os.chown, P("mine"), -1, users["group"], user=a)
        return
    par.same(os.chown, P("mine"), -1, users["group"], user=a, expect="ok")
    par.stat_same("mine", ("uid", "gid"))
    assert os.lstat(par.dp("mine")).st_gid == users["group"]
    par.same(os.chown, P("mine"), -1, b.gid, user=a, expect=errno.EPERM)
    par.same(os.chown, P("mine"), b.uid, -1, user=a, expect=errno.EPERM)
    par.same(os.chown, P("mine"), a.uid, -1, user=a, expect="ok")  # to itself: allowed
    par.same(os.chown, P("mine"), -1, -1, user=a, expect="ok")
    for mode in (0o6755, 0o6745, 0o4755):
        par.same(os.chmod, P("mine"), mode, user=a, expect="ok")
        par.same(os.chown, P("mine"), -1, a.gid, user=a, expect="ok")
        par.stat_same("mine", ("perm", "uid", "gid"))


def test_chmod_setgid_by_non_member(upar, users):
    """An owner who is not in the file's group may chmod g+s, but the bit is dropped (Linux);
    the sticky bit on a file is kept."""
    par, a, b = upar, users["a"], users["b"]
    par.each(create_file, P("f"), b"x")
    par.each(os.chown, P("f"), a.uid, b.gid)
    if not psupports(par.kind, "owners"):
        par.expect(errno.EPERM, os.chmod, P("f"), 0o2755, user=a)
        return
    for mode in (0o2755, 0o6755, 0o1644, 0o4700):
        par.same(os.chmod, P("f"), mode, user=a, expect="ok")
        par.stat_same("f", ("perm",))
    # a member of the group keeps it
    par.each(os.chown, P("f"), a.uid, users["group"])
    par.same(os.chmod, P("f"), 0o2755, user=a, expect="ok")
    par.stat_same("f", ("perm",))


class RootTraffic:
    """Root's lookups on the mount from a few threads while a block runs, so that the daemon's
    workers keep acting as root between a user's requests."""

    def __init__(self, root, threads=4):
        self.root, self.threads, self.stop = root, threads, threading.Event()

    def _run(self, i):
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                os.stat(os.path.join(self.root, f"absent-{i}-{n}"))
            except FileNotFoundError:
                pass

    def __enter__(self):
        self.workers = [threading.Thread(target=self._run, args=(i,)) for i in range(self.threads)]
        for w in self.workers:
            w.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for w in self.workers:
            w.join()


def _fallocate(fd, off, length):
    os.posix_fallocate(fd, off, length)


SETID_ACTIONS = {
    "write": lambda: (with_fd, P("f"), os.O_WRONLY, write_at, b"DA", 0),
    "owner-write": lambda: (with_fd, P("f"), os.O_WRONLY, write_at, b"DA", 0),
    "truncate": lambda: (os.truncate, P("f"), 2),
    "ftruncate": lambda: (with_fd, P("f"), os.O_RDWR, os.ftruncate, 2),
    "o_trunc": lambda: (open_close, P("f"), os.O_WRONLY | os.O_TRUNC),
    "fallocate": lambda: (with_fd, P("f"), os.O_RDWR, _fallocate, 0, 8192),
}


@pytest.mark.parametrize("how", list(SETID_ACTIONS))
def test_setid_cleared_by_unprivileged_write(upar, users, how):
    """pjdfstest chmod/12: a write or truncate by a user without CAP_FSETID clears setuid, and
    setgid when the file is group-executable or (Linux >= 6.2, setattr_should_drop_sgid) when
    the writer is not in the file's group. The native directory is the oracle; the backing file
    itself must agree too (a bit kept there would make the file setid again for everybody).
    Rounds alternate with root's writes, so that the daemon's workers have acted as root just
    before: the user's write must still act as the user."""
    par, a = upar, users["a"]
    par.each(create_file, P("f"), b"data")
    if how == "owner-write":
        par.each(os.chown, P("f"), a.uid, a.gid)
    if not psupports(par.kind, "special_bits"):
        par.each(os.chmod, P("f"), 0o6777)
        # no setid bits to clear; root's file shows 0644 of the daemon's user: not writable
        par.expect(errno.EACCES, open_close, P("f"), os.O_WRONLY, user=a)
        return
    for rnd in range(16):
        # 02767: setgid without group execute; a is not in the file's group, so it goes too
        mode = 0o6777 if rnd % 2 == 0 else 0o2767
        par.each(with_fd, P("f"), os.O_WRONLY, write_at, b"root", 0)
        par.each(os.chmod, P("f"), mode)
        with RootTraffic(par.mroot):
            par.same(*SETID_ACTIONS[how](), user=a, expect="ok")
        shown = par.stat_same("f", ("perm", "size"))
        assert oct(stat.S_IMODE(os.lstat(par.dp("f")).st_mode)) == shown["perm"], \
            f"round {rnd}: the backing file's mode differs from what the mount shows"


def test_sticky_directory(upar, users):
    """In a sticky directory only the owner of an entry, of the directory, or root may remove
    or rename it (pjdfstest unlink/11, rename/21, rmdir/11)."""
    par, a, b = upar, users["a"], users["b"]
    par.each(os.mkdir, P("s"))
    par.each(os.chmod, P("s"), 0o1777)
    if not posix_owners(par):
        # the sticky bit is not stored and the directory shows 0755: nobody but root writes
        assert stat.S_IMODE(os.stat(par.mp("s")).st_mode) == 0o755
        par.expect(errno.EACCES, create_file, P("s/fa"), b"a", user=a)
        return
    par.same(create_file, P("s/fa"), b"a", user=a, expect="ok")
    par.same(create_file, P("s/fb"), b"b", user=b, expect="ok")
    par.same(os.mkdir, P("s/db"), user=b, expect="ok")
    par.same(os.unlink, P("s/fb"), user=a, expect=errno.EPERM)
    par.same(os.rename, P("s/fb"), P("s/moved"), user=a, expect=errno.EPERM)
    par.same(os.rename, P("s/fa"), P("s/fb"), user=a, expect=errno.EPERM)  # over b's file
    par.same(os.rmdir, P("s/db"), user=a, expect=errno.EPERM)
    par.same(os.rename, P("s/fa"), P("s/fa2"), user=a, expect="ok")
    par.same(os.unlink, P("s/fa2"), user=a, expect="ok")
    par.same(os.unlink, P("s/fb"), user=b, expect="ok")
    # the directory's owner may remove anybody's entries
    par.same(create_file, P("s/fb"), b"b", user=b, expect="ok")
    par.each(os.chown, P("s"), a.uid, a.gid)
    par.same(os.unlink, P("s/fb"), user=a, expect="ok")
    par.same(os.rmdir, P("s/db"), user=a, expect="ok")
    assert os.listdir(par.dp("s")) == []


def test_supplementary_groups(upar, users):
    """Group permission applies through supplementary groups; the group class, once it
    matches, is final even when "others" would allow more."""
    par, a, b, g = upar, users["a"], users["b"], users["group"]
    assert g in a.groups and a.gid != g
    for name, mode in (("g-r", 0o040), ("g-none", 0o604), ("g-rw", 0o060)):
        par.each(create_file, P(name), b"x")
        par.each(os.chown, P(name), 0, g)
        par.each(os.chmod, P(name), mode)
    par.each(os.mkdir, P("gdir"))
    par.each(os.chown, P("gdir"), 0, g)
    par.each(os.chmod, P("gdir"), 0o070)
    if not posix_owners(par):
        # group and modes are not stored: files show 0644/0444 of the daemon's group
        par.expect(None, open_close, P("g-none"), os.O_RDONLY, user=a)
        par.expect(errno.EACCES, open_close, P("g-rw"), os.O_WRONLY, user=a)
        return
    par.same(open_close, P("g-r"), os.O_RDONLY, user=a, expect="ok")
    par.same(open_close, P("g-r"), os.O_RDONLY, user=b, expect=errno.EACCES)
    par.same(open_close, P("g-none"), os.O_RDONLY, user=a, expect=errno.EACCES)
    par.same(open_close, P("g-none"), os.O_RDONLY, user=b, expect="ok")
    par.same(with_fd, P("g-rw"), os.O_WRONLY, write_at, b"y", user=a, expect="ok")
    par.same(create_file, P("gdir/new"), b"n", user=a, expect="ok")
    par.same(create_file, P("gdir/new2"), b"n", user=b, expect=errno.EACCES)
    par.stat_same("gdir/new", ("uid", "gid"))


def test_protected_hardlinks(upar, users):
    """fs.protected_hardlinks: a user may not link to a file it could not write."""
    par, a, b = upar, users["a"], users["b"]
    if not par.m.supports("hardlink") or not posix_owners(par):
        return  # test_posix_link.py checks the errno
    par.each(create_file, P("theirs"), b"x")
    par.each(os.chown, P("theirs"), b.uid, b.gid)
    par.each(os.chmod, P("theirs"), 0o600)
    with open("/proc/sys/fs/protected_hardlinks") as f:
        protected = f.read().strip() == "1"
    par.same(os.link, P("theirs"), P("mine"), user=a,
             expect=errno.EPERM if protected else "ok")


def test_caller_groups_not_user_database(upar, users):
    """The caller's own supplementary groups count, not those the user database lists for its
    uid (newgrp, sg, setgroups(2) by services, a membership changed since login): DESIGN §6
    "the caller's fsuid/fsgid/groups". pjdfstest chown/00 and chown/05 act this way."""
    par, a, b, g = upar, users["a"], users["b"], users["group"]
    assert g not in b.groups
    with_g = [b.gid, g]
    par.each(os.mkdir, P("gdir"))
    par.each(os.chown, P("gdir"), 0, g)
    par.each(os.chmod, P("gdir"), 0o770)
    par.each(create_file, P("mine"), b"x")
    par.each(os.chown, P("mine"), b.uid, b.gid)
    if not posix_owners(par):  # "mine" shows the daemon's uid: not b's
        par.expect(errno.EPERM, os.chown, P("mine"), -1, g, user=b, groups=with_g)
        return
    par.same(os.chown, P("mine"), -1, g, user=b, groups=with_g, expect="ok")
    par.stat_same("mine", ("uid", "gid"))
    par.same(create_file, P("gdir/new"), b"n", user=b, groups=with_g, expect="ok")
    par.same(os.mkdir, P("gdir/sub"), user=b, groups=with_g, expect="ok")
    par.stat_same("gdir/new", ("uid", "gid"))
    # and a group the database lists but the process dropped gives nothing
    par.same(open_close, P("gdir/a-new"), os.O_CREAT | os.O_WRONLY, user=a, groups=[a.gid],
             expect=errno.EACCES)
