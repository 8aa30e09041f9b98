# SPDX-License-Identifier: GPL-2.0-or-later
"""rename(2) and renameat2(2) through the mount, against a native directory (pjdfstest
tests/rename): over files, over empty directories, file over directory (EISDIR), directory over
file (ENOTDIR), into its own subtree (EINVAL), over a non-empty directory (ENOTEMPTY), onto
itself, between two hard links of one file (a no-op), across referrals (EXDEV), RENAME_NOREPLACE
and RENAME_EXCHANGE."""

import errno
import os

from posix_util import (P, RENAME_EXCHANGE, RENAME_NOREPLACE, create_file, hardlinks_or_errno,
                        pcaps, psupports, read_all, renameat2, symlinks_or_errno)
from posix_util import par_fixture  # noqa: F401 (fixtures)
from util import create, expect_errno


def ino(path):
    return os.lstat(path).st_ino


def test_rename_file_over_file(par):
    par.each(create_file, P("src"), b"new")
    par.each(create_file, P("dst"), b"old content")
    before = ino(par.mp("src"))
    par.same(os.rename, P("src"), P("dst"), expect="ok")
    assert not os.path.lexists(par.mp("src")) and not os.path.lexists(par.dp("src"))
    assert read_all(par.mp("dst")) == read_all(par.dp("dst")) == b"new"
    assert ino(par.mp("dst")) == before, "rename changed the inode number"
    par.stat_same("dst", ("type", "size", "nlink"))
    # into another directory, and back under a new name
    par.each(os.mkdir, P("d"))
    par.same(os.rename, P("dst"), P("d/f"), expect="ok")
    par.same(os.rename, P("d/f"), P("back"), expect="ok")
    assert ino(par.mp("back")) == before
    assert sorted(os.listdir(par.dp())) == ["back", "d"]


def test_rename_dirs(par):
    par.each(os.makedirs, P("src/sub"))
    par.each(create_file, P("src/sub/f"), b"x")
    par.each(os.mkdir, P("empty"))
    par.each(os.mkdir, P("other"))
    par.same(os.rename, P("src"), P("empty"), expect="ok")  # over an empty directory
    assert read_all(par.mp("empty/sub/f")) == b"x"
    par.same(os.rename, P("empty"), P("other/moved"), expect="ok")  # into another directory
    for rel in ("other", "other/moved", "other/moved/sub"):
        par.stat_same(rel, ("type", "nlink"))
    par.same(os.rename, P("other/moved"), P("top"), expect="ok")
    par.stat_same("other", ("type", "nlink"))
    assert os.path.isfile(par.dp("top/sub/f"))


def test_rename_errnos(par):
    par.each(os.makedirs, P("d/sub/deeper"))
    par.each(os.makedirs, P("full/x"))
    par.each(os.mkdir, P("empty"))
    par.each(create_file, P("f"), b"f")
    par.each(create_file, P("g"), b"g")
    par.same(os.rename, P("f"), P("empty"), expect=errno.EISDIR)
    par.same(os.rename, P("d"), P("f"), expect=errno.ENOTDIR)
    par.same(os.rename, P("d"), P("d/sub/new"), expect=errno.EINVAL)
    par.same(os.rename, P("d"), P("d/sub/deeper"), expect=errno.EINVAL)
    par.same(os.rename, P("d"), P("d/new"), expect=errno.EINVAL)
    par.same(os.rename, P("d/sub"), P("d/sub/deeper/x"), expect=errno.EINVAL)
    par.same(os.rename, P("d"), P("full"), expect=errno.ENOTEMPTY)
    par.same(os.rename, P("missing"), P("x"), expect=errno.ENOENT)
    par.same(os.rename, P("f"), P("missing/x"), expect=errno.ENOENT)
    par.same(os.rename, P("f/x"), P("y"), expect=errno.ENOTDIR)
    par.same(os.rename, P("f"), P("g/x"), expect=errno.ENOTDIR)
    par.same(os.rename, P("f"), P("x" * 256), expect=errno.ENAMETOOLONG)
    par.same(os.rename, P("d/."), P("x"))
    par.same(os.rename, P("d/.."), P("x"))
    par.same(os.rename, P("d"), P("empty/.."))
    # nothing moved
    for rel in ("d/sub/deeper", "full/x", "empty", "f", "g"):
        assert os.path.lexists(par.dp(rel)), rel


def test_rename_onto_itself(par):
    """Renaming an object onto itself, or onto another hard link of itself, succeeds and
    changes nothing: both names stay (POSIX)."""
    par.each(create_file, P("f"), b"data")
    par.each(os.mkdir, P("d"))
    par.same(os.rename, P("f"), P("f"), expect="ok")
    par.same(os.rename, P("d"), P("d"), expect="ok")
    par.same(os.rename, P("d"), P("d/"), expect="ok")
    assert read_all(par.dp("f")) == b"data" and os.path.isdir(par.dp("d"))
    if hardlinks_or_errno(par, "f"):
        par.each(os.link, P("f"), P("g"))
        par.same(os.rename, P("f"), P("g"), expect="ok")
        assert sorted(os.listdir(par.mp())) == sorted(os.listdir(par.np())) == ["d", "f", "g"]
        assert os.lstat(par.dp("f")).st_nlink == 2
        par.stat_same("g", ("type", "nlink"))


def test_rename_symlink(par):
    if not symlinks_or_errno(par):
        return
    par.each(create_file, P("target"), b"t")
    par.each(os.mkdir, P("d"))
    par.each(os.symlink, "target", P("l"))
    par.each(os.symlink, "d", P("ld"))
    par.same(os.rename, P("l"), P("l2"), expect="ok")  # the link moves, not its target
    assert os.readlink(par.mp("l2")) == "target" and os.path.isfile(par.mp("target"))
    par.same(os.rename, P("target"), P("l2"), expect="ok")  # over a symlink
    par.stat_same("l2", ("type", "size"))
    par.same(os.rename, P("ld"), P("d/ld"), expect="ok")
    par.same(os.rename, P("d"), P("ld2"), expect="ok")


def test_renameat2_flags(par):
    par.each(create_file, P("a"), b"A")
    par.each(create_file, P("b"), b"BB")
    par.each(os.mkdir, P("d"))
    par.same(renameat2, P("a"), P("c"), RENAME_NOREPLACE | RENAME_EXCHANGE,
             expect=errno.EINVAL)
    if psupports(par.kind, "rename_noreplace"):
        par.same(renameat2, P("a"), P("b"), RENAME_NOREPLACE, expect=errno.EEXIST)
        par.same(renameat2, P("a"), P("c"), RENAME_NOREPLACE, expect="ok")
    else:
        # over a name the kernel knows, it answers EEXIST itself; a new name reaches us
        par.same(renameat2, P("a"), P("b"), RENAME_NOREPLACE, expect=errno.EEXIST)
        par.expect(pcaps(par.kind, "rename_noreplace"), renameat2, P("a"), P("new"),
                   RENAME_NOREPLACE)
        os.rename(par.np("new"), par.np("a"))  # the native side did it
        par.each(os.rename, P("a"), P("c"))
    if not psupports(par.kind, "rename_exchange"):
        par.expect(pcaps(par.kind, "rename_exchange"), renameat2, P("c"), P("b"),
                   RENAME_EXCHANGE)
        assert read_all(par.mp("c")) == b"A"
        return
    par.same(renameat2, P("c"), P("b"), RENAME_EXCHANGE)
    par.stat_same("b", ("type", "size"))
    par.stat_same("c", ("type", "size"))
    par.same(renameat2, P("b"), P("d"), RENAME_EXCHANGE)
    par.stat_same("d", ("type",))
    par.same(renameat2, P("c"), P("missing"), RENAME_EXCHANGE)


def test_rename_exdev(mounted):
    """Renames never cross referrals: file to file kinds, kind to kind, nested and virtual."""
    f = create(mounted.p("a", "f"), b"x")
    os.mkdir(mounted.p("a", "d"))
    create(mounted.p("b", "over"), b"y")
    for src in (f, mounted.p("a", "d")):
        for dst in (mounted.p("b", "x"), mounted.p("b", "over"), mounted.p("a", "nested", "x"),
                    mounted.p("virt", "deep", "x")):
            # a directory over an existing file: the kernel says ENOTDIR before asking us
            # (one FUSE superblock; natively EXDEV is checked first, between two mounts)
            want = {errno.EXDEV, errno.ENOTDIR} if dst.endswith("over") and \
                src.endswith("d") else errno.EXDEV
            expect_errno(want, os.rename, src, dst)
    g = create(mounted.p("a", "nested", "g"), b"z")
    expect_errno(errno.EXDEV, os.rename, g, mounted.p("a", "g"))
    expect_errno(errno.EXDEV, os.rename, g, mounted.p("a", "f"))
    # a referral itself cannot be renamed or replaced
    expect_errno({errno.EBUSY, errno.EXDEV}, os.rename, mounted.p("a", "nested"),
                 mounted.p("a", "n2"))
    expect_errno({errno.EBUSY, errno.EXDEV}, os.rename, mounted.p("a", "d"),
                 mounted.p("a", "nested"))
    assert os.path.isfile(mounted.d("a", "f")) and os.path.isdir(mounted.d("a", "d"))
