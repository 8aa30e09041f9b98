# SPDX-License-Identifier: GPL-2.0-or-later
"""POSIX behaviour through the mount (DESIGN §5, §6, §7): visibility of outside changes, stable
inode numbers, open files surviving unlink and rename, precise errnos, symlinks never followed
by the daemon, large directories."""

import errno
import fcntl
import mmap
import os
import shutil
import stat
import subprocess
import sys
import threading

import pytest

from conftest import VISIBLE_WITHIN
from util import (create, expect_errno, listdir_set, random_bytes, read_file, run, wait_until,
                  write_file)



def test_new_file_on_disk_visible(mounted):
    # never looked at through the mount before: visible at once, no cache to excuse
    create(mounted.d("a", "fresh"), b"fresh data")
    assert read_file(mounted.p("a", "fresh")) == b"fresh data"
    # a directory listed through the mount, then changed on disk
    assert listdir_set(mounted.p("b")) == set()
    create(mounted.d("b", "later"), b"later")
    within = VISIBLE_WITHIN[mounted.kind]
    assert wait_until(lambda: "later" in os.listdir(mounted.p("b")), within), \
        f"file created on disk not listed through the mount within {within} s"
    assert read_file(mounted.p("b", "later")) == b"later"
    # changed content and size of a file already read through the mount
    write_file(mounted.d("b", "later"), b"later, and longer")
    assert wait_until(lambda: read_file(mounted.p("b", "later")) == b"later, and longer",
                      within)
    # removed on disk
    os.unlink(mounted.d("b", "later"))
    assert wait_until(lambda: not os.path.exists(mounted.p("b", "later")), within)
    assert "later" not in os.listdir(mounted.p("b"))


def test_inode_stable(mounted):
    f = create(mounted.p("a", "f"), b"x")
    os.mkdir(mounted.p("a", "d"))
    ino = os.stat(f).st_ino
    dino = os.stat(mounted.p("a", "d")).st_ino
    assert os.stat(f).st_ino == ino
    assert ino != dino
    assert os.stat(mounted.p("a")).st_ino not in (ino, dino)
    os.rename(f, mounted.p("a", "d", "g"))
    assert os.stat(mounted.p("a", "d", "g")).st_ino == ino
    os.rename(mounted.p("a", "d"), mounted.p("a", "e"))
    assert os.stat(mounted.p("a", "e")).st_ino == dino
    assert os.stat(mounted.p("a", "e", "g")).st_ino == ino
    # readdir reports the same numbers as stat
    with os.scandir(mounted.p("a", "e")) as it:
        assert {e.name: e.inode() for e in it} == {"g": ino}
    # distinct objects in distinct referrals never share a number
    numbers = set()
    for path in (mounted.mnt, mounted.p("a"), mounted.p("b"), mounted.p("virt"),
                 mounted.p("virt", "deep"), mounted.p("a", "nested"), mounted.p("a", "e"),
                 mounted.p("a", "e", "g"), create(mounted.p("b", "g"), b"y")):
        numbers.add(os.stat(path).st_ino)
    assert len(numbers) == 9


def test_inode_stable_after_forget(mounted):
    """DESIGN §5: same object, same st_ino for the life of the mount, also after the kernel
    forgot the inode (tar, du and rsync -H compare st_ino across a whole walk)."""
    f = create(mounted.p("a", "f"), b"x")
    os.mkdir(mounted.p("a", "d"))
    before = (os.stat(f).st_ino, os.stat(mounted.p("a", "d")).st_ino)
    with open("/proc/sys/vm/drop_caches", "w") as dc:
        dc.write("2\n")  # dentries and inodes: the kernel sends FORGET for ours
    assert (os.stat(f).st_ino, os.stat(mounted.p("a", "d")).st_ino) == before


def test_open_file_survives_unlink(mounted):
    path = mounted.p("a", "f")
    with open(path, "w+b") as fh:
        fh.write(b"before unlink;")
        fh.flush()
        os.unlink(path)
        assert not os.path.exists(path)
        assert "f" not in os.listdir(mounted.p("a"))
        expect_errno(errno.ENOENT, os.stat, path)
        fh.write(b" after unlink")
        fh.flush()
        fh.seek(0)
        assert fh.read() == b"before unlink; after unlink"
        assert os.fstat(fh.fileno()).st_size == len(b"before unlink; after unlink")
        os.ftruncate(fh.fileno(), 6)
        fh.seek(0)
        assert fh.read() == b"before"
    # nothing of the unlinked file is left in the location once it is closed (a backend that
    # renamed it aside while open must remove it on release)
    assert wait_until(lambda: os.listdir(mounted.d("a")) == [], VISIBLE_WITHIN[mounted.kind]), \
        f"left in the location after close: {os.listdir(mounted.d('a'))}"
    assert listdir_set(mounted.p("a")) == {"nested"}
    # the name can be reused
    create(path, b"new")
    assert read_file(path) == b"new"


def test_unlinked_open_file_nlink(mounted):
    """POSIX: fstat of an open file whose last name was removed reports st_nlink 0."""
    path = create(mounted.p("a", "f"), b"x")
    with open(path, "rb") as fh:
        os.unlink(path)
        assert os.fstat(fh.fileno()).st_nlink == 0


@pytest.mark.parametrize("order", ["f-then-g", "g-then-f"])
def test_open_file_survives_unlink_of_all_links(mounted, order):
    """An open file with two names keeps working when both are removed."""
    if not mounted.supports("hardlink"):
        return  # test_hard_link checks the errno
    f, g = mounted.p("a", "f"), mounted.p("a", "g")
    create(f, b"data;")
    with open(f, "r+b") as fh:
        os.link(f, g)
        for name in ((f, g) if order == "f-then-g" else (g, f)):
            os.unlink(name)
        fh.seek(0, os.SEEK_END)
        fh.write(b"more")
        fh.flush()
        fh.seek(0)
        assert fh.read() == b"data;more"
        assert os.fstat(fh.fileno()).st_size == 9
        assert not {"f", "g"} & listdir_set(mounted.p("a"))
    assert wait_until(lambda: os.listdir(mounted.d("a")) == [], VISIBLE_WITHIN[mounted.kind]), \
        f"left in the location after close: {os.listdir(mounted.d('a'))}"


def test_unlink_other_link_of_open_file(mounted):
    """Removing one of two names of an open file is a plain unlink: the object keeps a name,
    so nothing needs to be set aside (st_nlink drops to 1 at once, on disk too)."""
    if not mounted.supports("hardlink"):
        return  # test_hard_link checks the errno
    f = create(mounted.p("a", "f"), b"x")
    with open(f, "rb") as fh:
        os.link(f, mounted.p("a", "g"))
        os.unlink(mounted.p("a", "g"))
        assert os.listdir(mounted.d("a")) == ["f"]
        assert os.stat(mounted.d("a", "f")).st_nlink == 1
        assert os.fstat(fh.fileno()).st_nlink == 1


def test_open_file_survives_rename(mounted):
    os.mkdir(mounted.p("a", "d"))
    path = create(mounted.p("a", "d", "f"), b"one;")
    with open(path, "r+b") as fh:
        ino = os.fstat(fh.fileno()).st_ino
        os.rename(path, mounted.p("a", "g"))  # out of its directory
        fh.seek(0, os.SEEK_END)
        fh.write(b"two;")
        fh.flush()
        assert read_file(mounted.p("a", "g")) == b"one;two;"
        os.rename(mounted.p("a", "g"), mounted.p("a", "d", "h"))
        os.rename(mounted.p("a", "d"), mounted.p("a", "e"))  # and its new parent moves
        fh.write(b"three")
        fh.flush()
        fh.seek(0)
        assert fh.read() == b"one;two;three"
        assert os.fstat(fh.fileno()).st_ino == ino
        assert os.stat(mounted.p("a", "e", "h")).st_ino == ino
    assert read_file(mounted.d("a", "e", "h")) == b"one;two;three"


def test_rename_over_open_file(mounted):
    old = create(mounted.p("a", "old"), b"old content")
    new = create(mounted.p("a", "new"), b"new content")
    with open(old, "rb") as fh:
        os.rename(new, old)
        assert fh.read() == b"old content"
    assert read_file(old) == b"new content"
    # a path-named backend kept the replaced file under a hidden name while it was open; FUSE
    # sends the release that removes it after close() has returned
    assert wait_until(lambda: listdir_set(mounted.p("a")) == {"old", "nested"}), \
        sorted(os.listdir(mounted.p("a")))


def test_open_dir_survives_rename(mounted):
    os.makedirs(mounted.p("a", "d"))
    for i in range(5):
        create(mounted.p("a", "d", f"f{i}"))
    fd = os.open(mounted.p("a", "d"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rename(mounted.p("a", "d"), mounted.p("a", "e"))
        assert sorted(os.listdir(fd)) == [f"f{i}" for i in range(5)]
        # relative lookups through the open dir fd see the renamed directory
        assert os.stat("f3", dir_fd=fd).st_size == 0
        create(mounted.p("a", "e", "f5"))
        assert os.path.exists(mounted.d("a", "e", "f5"))
    finally:
        os.close(fd)


def test_rmdir_right_after_last_close(mounted):
    """`echo x > d/f; rm d/f; rmdir d`: FUSE sends the last release after close() returned, so
    a path-named backend may still have f set aside under a hidden name when rmdir comes; rmdir
    waits for that release instead of failing with ENOTEMPTY."""
    base = mounted.p("a", "rmd")
    os.mkdir(base)
    for i in range(50):
        d = os.path.join(base, f"d{i}")
        os.mkdir(d)
        create(os.path.join(d, "f"), b"x")
        os.unlink(os.path.join(d, "f"))
        os.rmdir(d)
    assert os.listdir(base) == []
    assert os.listdir(mounted.d("a", "rmd")) == []


def test_listing_right_after_last_close(mounted):
    """`echo x > f; rm f; ls`: FUSE sends the last release after close() returned, so the
    unlink may find f still open. Opened only by descriptors already closed, f is not set
    aside under a hidden name that `ls` (or `git status`) would show: the unlink waits for the
    release. A file still open by a descriptor in use is set aside (and stays readable)."""
    base = mounted.p("a", "lsd")
    busy = mounted.p("a", "busy")
    os.mkdir(base)
    os.mkdir(busy)
    stop = threading.Event()

    def churn(k):  # other programs' closes: RELEASEs queue up behind each other
        f = os.path.join(busy, f"b{k}")
        create(f, b"y")
        while not stop.is_set():
            os.close(os.open(f, os.O_RDONLY))

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(150):
            f = os.path.join(base, f"f{i}")
            create(f, b"x")
            os.unlink(f)
            assert os.listdir(base) == [], f"after unlinking f{i}"
    finally:
        stop.set()
        for t in threads:
            t.join()
    with open(create(os.path.join(base, "kept"), b"kept"), "rb") as fh:
        os.unlink(os.path.join(base, "kept"))
        assert fh.read() == b"kept"
    assert wait_until(lambda: os.listdir(base) == [])


def test_removed_identity_reused(mounted):
    """A server gives a removed object's file id to the next new one (ganesha over ext4 and
    tmpfs, smbd): a removed directory the kernel still holds (open here) must not lend its
    record, its saved attributes or its empty listing to the new file or directory."""
    base = mounted.p("a", "reuse")
    os.mkdir(base)
    for i in range(40):
        d = os.path.join(base, f"d{i}")
        os.mkdir(d)
        held = os.open(d, os.O_RDONLY | os.O_DIRECTORY)  # the kernel keeps its inode
        try:
            os.rmdir(d)
            f = os.path.join(base, f"f{i}")
            create(f, b"new file")
            st = os.stat(f)
            assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1, oct(st.st_mode)
            assert read_file(f) == b"new file"
            os.rename(f, f + ".moved")
            assert read_file(f + ".moved") == b"new file"
            os.unlink(f + ".moved")
            sub = os.path.join(base, f"s{i}")
            os.mkdir(sub)
            create(os.path.join(sub, "inside"), b"x")
            assert os.listdir(sub) == ["inside"]
            os.unlink(os.path.join(sub, "inside"))
            os.rmdir(sub)
        finally:
            os.close(held)


PATH_MAX = 4096


@pytest.mark.parametrize("comp_len", [16, 255])
def test_path_max(mounted, comp_len):
    """A path of PATH_MAX - 1 bytes works for mkdir, create, stat, rename, symlink, unlink and
    rmdir, and the tree it makes can be removed again (NFSv4 COMPOUNDs with a LOOKUP per
    component did not fit once the path passed some 3.6 KB; SMB rmdir was said to fail near
    3.9 KB). Reached through relative paths, each syscall path being short."""
    top = mounted.p("a", "pm")
    os.mkdir(top)
    here = os.getcwd()
    made = []
    try:
        os.chdir(top)
        cwd = top
        while PATH_MAX - 1 - len(cwd) - 1 > 255:
            name = "d" * min(comp_len, PATH_MAX - 1 - len(cwd) - 1 - 2)
            os.mkdir(name)
            os.chdir(name)
            made.append(name)
            cwd = os.path.join(cwd, name)
        left = PATH_MAX - 1 - len(cwd) - 1  # the last name makes the path PATH_MAX - 1 long
        assert 1 <= left <= 255 and len(os.path.join(cwd, "f" * left)) == PATH_MAX - 1
        f, g, s, d = ("f" * left, "g" * left, "s" * left, "e" * left)
        write_file(f, b"deep")
        assert os.stat(f).st_size == 4
        os.rename(f, g)
        assert read_file(g) == b"deep"
        if mounted.supports("symlink"):
            os.symlink(g, s)
            assert os.readlink(s) == g and stat.S_ISLNK(os.lstat(s).st_mode)
            os.unlink(s)
        os.mkdir(d)
        assert stat.S_ISDIR(os.stat(d).st_mode)
        assert sorted(os.listdir(".")) == sorted([d, g])
        os.rmdir(d)
        os.unlink(g)
        assert os.listdir(".") == []
        while made:
            os.chdir("..")
            os.rmdir(made.pop())
    finally:
        os.chdir(here)
    assert os.listdir(top) == []
    assert os.listdir(mounted.d("a", "pm")) == []


def test_creates_after_failed_creates(mounted):
    """Creates that fail before the server opens anything (their directory was removed behind
    the mount's back) mixed, from several threads, with creates that succeed: every one of
    those succeeds. An NFSv4 open-owner whose seqid was counted up for an OPEN the server never
    reached failed its next OPEN with NFS4ERR_BAD_SEQID, and once in a while the retry too."""
    base = mounted.p("a", "seq")
    os.mkdir(base)
    failures = []

    def worker(t):
        for i in range(25):
            gone = os.path.join(base, f"gone{t}-{i}")
            os.mkdir(gone)
            os.stat(gone)  # the kernel and the daemon know it
            os.rmdir(mounted.d("a", "seq", f"gone{t}-{i}"))
            try:
                create(os.path.join(gone, "x"), b"x")
                failures.append(f"create in a removed directory succeeded ({gone})")
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.ESTALE):
                    failures.append(f"create in a removed directory: {e!r}")
            f = os.path.join(base, f"f{t}-{i}")
            try:
                create(f, b"y" * 100)
                assert read_file(f) == b"y" * 100
                os.unlink(f)
            except OSError as e:
                failures.append(f"create {f}: {e!r}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def create_in(dir_fd, name):
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dir_fd))


def test_dir_removed_behind_the_back(mounted):
    """A directory a program holds open is removed on the server, and a new directory gets its
    number (ganesha and smbd give out the file system's inode numbers, which ext4 reuses once
    the server has let go of the old directory, as it does when a lookup in it fails): a
    create through the open directory must fail, not land in the new one."""
    base = mounted.p("a", "behind")
    os.mkdir(base)
    for i in range(20):
        old, new = os.path.join(base, f"old{i}"), os.path.join(base, f"new{i}")
        os.mkdir(old)
        fd = os.open(old, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.rmdir(mounted.d("a", "behind", f"old{i}"))
            expect_errno((errno.ENOENT, errno.ESTALE), os.stat, os.path.join(old, "x"))
            os.mkdir(new)
            os.stat(new)
            expect_errno((errno.ENOENT, errno.ESTALE), create_in, fd, "x")
        finally:
            os.close(fd)
        assert os.listdir(mounted.d("a", "behind", f"new{i}")) == []


def test_names_differing_in_case(mounted):
    """Names that differ only in case. A case-sensitive location holds two files; an SMB share
    matches names without case (Samba's default), where the create of the second name must
    fail EEXIST rather than open and truncate the first (`echo b > foo.h` emptied Foo.h), a
    rename onto it must fail rather than replace the first, and a rename that changes only the
    case works. Nothing is ever written to the other file."""
    a = mounted.p("a")
    insensitive = mounted.kind == "smb"
    create(os.path.join(a, "Foo.h"), b"first")
    create(os.path.join(a, "x"), b"x")
    if insensitive:
        expect_errno(errno.ENOENT, os.stat, os.path.join(a, "foo.h"))
        expect_errno(errno.EEXIST, write_file, os.path.join(a, "foo.h"), b"second")
        expect_errno(errno.EEXIST, os.mkdir, os.path.join(a, "FOO.h"))
        expect_errno(errno.EEXIST, os.rename, os.path.join(a, "x"), os.path.join(a, "foo.H"))
        assert listdir_set(a) == {"Foo.h", "x", "nested"}
        assert read_file(os.path.join(a, "x")) == b"x"
    else:
        write_file(os.path.join(a, "foo.h"), b"second")
        os.mkdir(os.path.join(a, "FOO.h"))
        os.rename(os.path.join(a, "x"), os.path.join(a, "foo.H"))
        assert listdir_set(a) == {"Foo.h", "foo.h", "FOO.h", "foo.H", "nested"}
        assert read_file(os.path.join(a, "foo.h")) == b"second"
        assert read_file(os.path.join(a, "foo.H")) == b"x"
    assert read_file(os.path.join(a, "Foo.h")) == b"first"
    assert read_file(mounted.d("a", "Foo.h")) == b"first"
    # a change of case only
    os.rename(os.path.join(a, "Foo.h"), os.path.join(a, "FOO.H"))
    assert read_file(os.path.join(a, "FOO.H")) == b"first"
    assert "FOO.H" in os.listdir(a) and "Foo.h" not in os.listdir(a)


def test_names_not_utf8(mounted):
    """Names are bytes on file:// and NFS: one that is not valid UTF-8 is made, listed, renamed
    and removed like any other. SMB names are Unicode: such a name is refused with EINVAL (and
    looked up as absent), as the other names SMB cannot hold are."""
    a = os.fsencode(mounted.p("a"))
    name, other = b"caf\xe9-\xff\xfe", b"\xc3\x28-renamed"
    if mounted.kind == "smb":
        expect_errno(errno.EINVAL, write_file, os.path.join(a, name), b"x")
        expect_errno(errno.ENOENT, os.stat, os.path.join(a, name))
        return
    write_file(os.path.join(a, name), b"latin-1 name")
    assert name in os.listdir(a)
    assert read_file(os.path.join(a, name)) == b"latin-1 name"
    os.rename(os.path.join(a, name), os.path.join(a, other))
    assert other in os.listdir(a) and name not in os.listdir(a)
    assert os.path.exists(os.path.join(os.fsencode(mounted.d("a")), other))
    os.unlink(os.path.join(a, other))
    assert set(os.listdir(a)) == {b"nested"}


def test_names_smb_cannot_hold(mounted):
    """Names SMB cannot hold as they are (reserved characters; a trailing "." or " ", which
    the server would drop and list under a mangled name) are refused on SMB referrals with
    EINVAL, and nothing appears on the share; everywhere else they are ordinary names."""
    base = mounted.p("a", "names")
    os.mkdir(base)
    names = ["notes.", "trailing ", "a:b", "q?", "star*", 'quote"', "pipe|", "lt<", "gt>"]
    for name in names:
        path = os.path.join(base, name)
        if mounted.kind == "smb":
            expect_errno(errno.EINVAL, create, path, b"x")
            expect_errno(errno.EINVAL, os.mkdir, path)
            expect_errno(errno.ENOENT, os.stat, path)
        else:
            create(path, b"x")
            assert read_file(path) == b"x"
    want = set() if mounted.kind == "smb" else set(names)
    assert set(os.listdir(mounted.d("a", "names"))) == want
    assert listdir_set(base) == want


def test_errno_enoent(mounted):
    for p in (mounted.p("missing"), mounted.p("a", "missing"), mounted.p("a", "x", "y"),
              mounted.p("virt", "missing"), mounted.p("virt", "deep", "missing"),
              mounted.p("a", "nested", "missing")):
        expect_errno(errno.ENOENT, os.stat, p)
        expect_errno(errno.ENOENT, os.open, p, os.O_RDONLY)
    expect_errno(errno.ENOENT, os.unlink, mounted.p("a", "missing"))
    expect_errno(errno.ENOENT, os.rmdir, mounted.p("a", "missing"))
    expect_errno(errno.ENOENT, os.rename, mounted.p("a", "missing"), mounted.p("a", "x"))
    expect_errno(errno.ENOENT, os.open, mounted.p("a", "x", "y"), os.O_CREAT | os.O_WRONLY)


def test_errno_enotempty(mounted):
    os.makedirs(mounted.p("a", "d", "sub"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, mounted.p("a", "d"))
    os.mkdir(mounted.p("a", "e"))
    create(mounted.p("a", "e", "f"))
    expect_errno(errno.ENOTEMPTY, os.rename, mounted.p("a", "d"), mounted.p("a", "e"))
    assert os.path.isdir(mounted.d("a", "d", "sub"))
    os.unlink(mounted.p("a", "e", "f"))
    os.rmdir(mounted.p("a", "e"))
    assert not os.path.exists(mounted.d("a", "e"))


def test_errno_exdev(mounted):
    f = create(mounted.p("a", "f"), b"x")
    os.mkdir(mounted.p("a", "d"))
    expect_errno(errno.EXDEV, os.rename, f, mounted.p("b", "f"))
    expect_errno(errno.EXDEV, os.rename, mounted.p("a", "d"), mounted.p("b", "d"))
    expect_errno(errno.EXDEV, os.rename, f, mounted.p("a", "nested", "f"))
    expect_errno(errno.EXDEV, os.rename, f, mounted.p("virt", "deep", "f"))
    assert os.path.exists(mounted.d("a", "f")) and not os.path.exists(mounted.d("b", "f"))


def test_errno_eexist(mounted):
    f = create(mounted.p("a", "f"), b"keep")
    expect_errno(errno.EEXIST, os.open, f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    expect_errno(errno.EEXIST, os.mkdir, f)
    os.mkdir(mounted.p("a", "d"))
    expect_errno(errno.EEXIST, os.mkdir, mounted.p("a", "d"))
    expect_errno(errno.EEXIST, os.mkdir, mounted.p("a", "nested"))
    assert read_file(mounted.d("a", "f")) == b"keep"
    # O_CREAT without O_EXCL opens the existing file
    fd = os.open(f, os.O_CREAT | os.O_RDWR)
    os.close(fd)
    assert read_file(f) == b"keep"
    if mounted.supports("symlink"):
        expect_errno(errno.EEXIST, os.symlink, "t", f)
    if mounted.supports("hardlink"):
        create(mounted.p("a", "g"))
        expect_errno(errno.EEXIST, os.link, mounted.p("a", "g"), f)


def test_errno_enotdir(mounted):
    f = create(mounted.p("a", "f"), b"x")
    os.mkdir(mounted.p("a", "d"))
    expect_errno(errno.ENOTDIR, os.stat, mounted.p("a", "f", "x"))
    expect_errno(errno.ENOTDIR, os.listdir, f)
    expect_errno(errno.ENOTDIR, os.rmdir, f)
    expect_errno(errno.ENOTDIR, os.open, f, os.O_RDONLY | os.O_DIRECTORY)
    expect_errno(errno.ENOTDIR, os.rename, mounted.p("a", "d"), f)
    expect_errno(errno.ENOTDIR, os.mkdir, mounted.p("a", "f", "sub"))


def test_errno_eisdir(mounted):
    d = mounted.p("a", "d")
    os.mkdir(d)
    create(mounted.p("a", "f"))
    expect_errno(errno.EISDIR, os.open, d, os.O_WRONLY)
    expect_errno(errno.EISDIR, os.open, d, os.O_RDWR)
    expect_errno(errno.EISDIR, os.unlink, d)
    expect_errno(errno.EISDIR, os.rename, mounted.p("a", "f"), d)
    expect_errno(errno.EISDIR, os.open, mounted.p("a"), os.O_WRONLY)
    fd = os.open(d, os.O_RDONLY)
    try:
        expect_errno(errno.EISDIR, os.read, fd, 10)
    finally:
        os.close(fd)


def test_symlink_on_disk_not_followed(mounted):
    """The daemon shows a symlink as what it is; only the kernel follows it."""
    os.symlink("/etc", mounted.d("a", "link"))
    os.symlink("/etc/passwd", mounted.d("a", "flink"))
    if not mounted.supports("symlink"):
        # the server hides or refuses symlinks; whatever it shows is not /etc
        assert not os.path.exists(mounted.p("a", "flink")) or \
            read_file(mounted.p("a", "flink")) != read_file("/etc/passwd")
        return
    st = os.lstat(mounted.p("a", "link"))
    assert stat.S_ISLNK(st.st_mode)
    assert os.readlink(mounted.p("a", "link")) == "/etc"
    assert stat.S_ISLNK(os.lstat(mounted.p("a", "flink")).st_mode)
    # readdir tells the type too
    with os.scandir(mounted.p("a")) as it:
        types = {e.name: e.is_symlink() for e in it}
    assert types["link"] and types["flink"]
    # the kernel follows an absolute target outside the mount: that is the real /etc
    assert sorted(os.listdir(mounted.p("a", "link"))) == sorted(os.listdir("/etc"))


def test_symlink_escape(mounted):
    """Nothing outside a location's root is reachable (DESIGN §7), even through a symlink
    that replaces a directory the daemon already knows."""
    # `secret` lies beside location A, outside it
    parent = os.path.dirname(mounted.src["a"])
    secret = os.path.join(parent, f"secret-{os.path.basename(mounted.src['a'])}")
    write_file(secret, b"secret")
    try:
        name = os.path.basename(secret)
        # a fresh symlink to "..": the kernel resolves it inside the mount (/a/.. is the root)
        if mounted.supports("symlink"):
            os.symlink("..", mounted.d("a", "up"))
            expect_errno(errno.ENOENT, os.stat, mounted.p("a", "up", name))
        # a directory known to the daemon, then swapped on disk for a symlink to ".."
        os.mkdir(mounted.d("a", "dir"))
        create(mounted.d("a", "dir", "inside"), b"inside")
        assert read_file(mounted.p("a", "dir", "inside")) == b"inside"
        fd = os.open(mounted.p("a", "dir"), os.O_RDONLY | os.O_DIRECTORY)  # keep the node alive
        try:
            os.rename(mounted.d("a", "dir"), mounted.d("a", "dir.moved"))
            os.symlink("..", mounted.d("a", "dir"))
            for path in (mounted.p("a", "dir", name), os.path.join(f"/proc/self/fd/{fd}", name)):
                try:
                    data = read_file(path)
                except OSError:
                    continue
                assert data != b"secret", f"{path} reached a file outside the location"
            try:
                names = os.listdir(fd)
            except OSError:
                names = []
            assert name not in names, "listing reached the directory above the location"
        finally:
            os.close(fd)
    finally:
        os.unlink(secret)


def test_large_directory(mounted):
    big = mounted.d("a", "big")
    os.mkdir(big)
    names = set()
    for i in range(2000):
        # names of every length up to 255 bytes, to cross readdir buffer boundaries unevenly
        name = f"{i:04d}-" + "n" * (i % 251)
        names.add(name)
        if i % 100 == 7:
            os.mkdir(os.path.join(big, name))
        else:
            os.close(os.open(os.path.join(big, name), os.O_CREAT | os.O_WRONLY, 0o644))
    assert listdir_set(mounted.p("a", "big")) == names
    with os.scandir(mounted.p("a", "big")) as it:
        dirs = {e.name for e in it if e.is_dir(follow_symlinks=False)}
    assert dirs == {n for n in names if int(n[:4]) % 100 == 7}
    out = run(["ls", "-l", mounted.p("a", "big")], text=True).stdout.splitlines()
    assert out[0].startswith("total")
    assert len(out) == 2001
    assert sum(1 for line in out[1:] if line.startswith("d")) == len(dirs)
    # a second listing (cached or not) is equal; so is one made while entries are added
    assert listdir_set(mounted.p("a", "big")) == names
    for i in range(10):
        create(mounted.p("a", "big", f"added-{i}"))
    assert listdir_set(mounted.p("a", "big")) == names | {f"added-{i}" for i in range(10)}


def test_100k_entries(mounted):
    """100,000 entries in one directory (made on the server side): `ls -f` lists each once,
    `ls -l` shows each with its attributes."""
    n = 100_000
    big = mounted.d("a", "huge")
    os.mkdir(big)
    try:
        for i in range(n):
            os.close(os.open(os.path.join(big, f"entry-{i:06d}"), os.O_CREAT | os.O_WRONLY,
                             0o644))
        ls = lambda opt: run(["ls", opt, mounted.p("a", "huge")], text=True,  # noqa: E731
                             timeout=900).stdout
        out = ls("-f").split()
        assert len(out) == n + 2 and len(set(out)) == n + 2  # with . and ..
        assert set(out) - {".", ".."} == {f"entry-{i:06d}" for i in range(n)}
        out = ls("-l").splitlines()
        assert out[0].startswith("total") and len(out) == n + 1
        assert all(line.startswith("-") and " 0 " in line for line in out[1:])
    finally:
        shutil.rmtree(big, ignore_errors=True)


def test_statfs(mounted):
    """statvfs of a referral reports its location's filesystem."""
    via, disk = os.statvfs(mounted.p("a")), os.statvfs(mounted.d("a"))
    assert via.f_bsize > 0 and via.f_blocks > 0
    assert via.f_blocks * via.f_frsize == disk.f_blocks * disk.f_frsize
    assert via.f_namemax >= 255 or via.f_namemax == disk.f_namemax


def test_parallel_io(mounted):
    """Many threads reading and writing their own files at once (the daemon is threaded)."""
    errors = []

    def worker(k):
        try:
            data = random_bytes(256 * 1024 + k, seed=k)
            where = ("a", "b")[k % 2]
            path = mounted.p(where, f"par-{k}")
            for _ in range(3):
                write_file(path, data)
                assert read_file(path) == data
                os.rename(path, path + ".x")
                os.rename(path + ".x", path)
            assert read_file(mounted.d(where, f"par-{k}")) == data
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"worker {k}: {e!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(os.listdir(mounted.p("a"))) == 4 + 1  # + nested


def test_append_and_sparse(mounted):
    path = mounted.p("a", "f")
    a = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    b = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(a, b"one;")
        os.write(b, b"two;")
        os.write(a, b"three;")
    finally:
        os.close(a)
        os.close(b)
    assert read_file(mounted.d("a", "f")) == b"one;two;three;"
    # a write far beyond the end leaves a hole that reads as zeros
    with open(path, "r+b") as fh:
        fh.seek(10 * 1024 * 1024)
        fh.write(b"end")
    data = read_file(path)
    assert len(data) == 10 * 1024 * 1024 + 3
    assert data[:14] == b"one;two;three;" and data[-3:] == b"end"
    assert data[14:-3].count(0) == len(data) - 17


def test_large_sparse_file(mounted):
    """A 16 GiB sparse file: its size, its hole read as zeros, its end, SEEK_DATA and SEEK_HOLE
    consistent with them (the backend's own answer where it has one, the kernel's default,
    data everywhere, elsewhere)."""
    size = 16 << 30
    path = mounted.p("a", "sparse")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        assert os.pwrite(fd, b"head", 0) == 4
        assert os.pwrite(fd, b"tail", size - 4) == 4
        os.fsync(fd)
        assert os.fstat(fd).st_size == size
        assert os.pread(fd, 65536, 8 << 30) == bytes(65536)
        assert os.pread(fd, 8, size - 8) == bytes(4) + b"tail"
        assert os.pread(fd, 4, size) == b""
        data = os.lseek(fd, 0, os.SEEK_DATA)
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        assert data == 0 and 4 <= hole <= size
        assert os.lseek(fd, size - 4, os.SEEK_DATA) <= size - 4
        expect_errno(errno.ENXIO, os.lseek, fd, size, os.SEEK_DATA)
    finally:
        os.close(fd)
    assert os.stat(mounted.d("a", "sparse")).st_size == size
    os.unlink(path)


def test_depth_200(mounted):
    """A tree 200 directories deep: made, used at the bottom, listed and removed."""
    top = mounted.p("a", "deep200")
    os.mkdir(top)
    here = os.getcwd()
    try:
        os.chdir(top)
        for _ in range(200):
            os.mkdir("d")
            os.chdir("d")
        write_file("bottom", b"200 down")
        assert read_file("bottom") == b"200 down"
        assert os.listdir(".") == ["bottom"]
        os.unlink("bottom")
        for _ in range(200):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)
    assert os.listdir(top) == [] and os.listdir(mounted.d("a", "deep200")) == []
    os.rmdir(top)


def test_mmap(mounted):
    path = create(mounted.p("a", "m"), bytes(8192))
    with open(path, "r+b") as fh:
        mm = mmap.mmap(fh.fileno(), 8192)
        mm[100:105] = b"hello"
        mm[8000:8005] = b"world"
        mm.flush()
        mm.close()
    data = read_file(mounted.d("a", "m"))
    assert data[100:105] == b"hello" and data[8000:8005] == b"world"
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 8192, prot=mmap.PROT_READ)
        assert mm[100:105] == b"hello"
        mm.close()


def test_writer_only_seen_by_cached_readers(mounted):
    """A descriptor opened for writing only (a direct one on local locations) and readers that
    have the file in the page cache, through read() and a shared mapping: each write shows to
    both at once, the file's growth too, and the data reaches the backing file."""
    path = create(mounted.p("a", "w"), b"a" * 16384)
    r = os.open(path, os.O_RDONLY)
    w = -1
    try:
        assert os.pread(r, 16384, 0) == b"a" * 16384  # cached now
        mm = mmap.mmap(r, 16384, prot=mmap.PROT_READ)
        try:
            assert mm[:16384] == b"a" * 16384
            w = os.open(path, os.O_WRONLY)
            # page-aligned, then neither start nor end aligned
            for off, data in ((4096, b"B" * 4096), (10000, b"C" * 3000)):
                assert os.pwrite(w, data, off) == len(data)
                assert os.pread(r, len(data), off) == data
                assert mm[off:off + len(data)] == data
            # a write from a buffer that is not page-aligned, across two pages
            view = memoryview(bytearray(b"-" * 3 + b"D" * 5000))[3:]
            assert os.pwrite(w, view, 1000) == 5000
            assert os.pread(r, 5000, 1000) == b"D" * 5000 and mm[1000:6000] == b"D" * 5000
            # growth: the reader sees the new size and the new bytes
            assert os.pwrite(w, b"E" * 100, 16384) == 100
            assert os.fstat(r).st_size == 16484
            assert os.pread(r, 200, 16384) == b"E" * 100
        finally:
            mm.close()
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    want = bytearray(b"a" * 16384)
    want[4096:8192] = b"B" * 4096
    want[10000:13000] = b"C" * 3000
    want[1000:6000] = b"D" * 5000
    want += b"E" * 100
    assert read_file(path) == bytes(want)
    assert read_file(mounted.d("a", "w")) == bytes(want)


def test_locks(mounted):
    """flock(1) and POSIX record locks exclude another process (DESIGN §6)."""
    path = create(mounted.p("a", "lockfile"), b"x" * 100)
    with open(path, "r+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert subprocess.run(["flock", "-n", "-E", "99", path, "true"]).returncode == 99, \
            "flock -n got a lock another process holds"
        fcntl.flock(fh, fcntl.LOCK_UN)
        assert subprocess.run(["flock", "-n", path, "true"]).returncode == 0
        # a POSIX write lock on bytes 0-9 held here blocks a conflicting one in a child, and
        # not one on other bytes
        code = ("import fcntl, sys\n"
                f"f = open({path!r}, 'r+b')\n"
                "try:\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)\n"
                "except OSError:\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50)\n"
                "    sys.exit(7)\n")
        fcntl.lockf(fh, fcntl.LOCK_EX, 10, 0)
        assert subprocess.run([sys.executable, "-c", code]).returncode == 7
        fcntl.lockf(fh, fcntl.LOCK_UN, 10, 0)
        assert subprocess.run([sys.executable, "-c", code]).returncode == 0
