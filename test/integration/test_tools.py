# SPDX-License-Identifier: GPL-2.0-or-later
"""Everyday tools through the mount (DESIGN §9): ls, stat, cp, mv, find, tar, rsync, git, dd,
truncate, ln, chmod, touch, setfattr/getfattr, mkfifo. Results are checked through the mount and
on the backing dir on disk."""

import calendar
import errno
import os
import re
import stat
import subprocess
import time

import pytest

from conftest import VISIBLE_WITHIN
from util import (MiB, assert_same_tree, create, expect_errno, listdir_set, make_tree,
                  random_bytes, read_file, run, run_fails, tree_opts, wait_until, write_file)


def test_ls_root(mounted):
    assert listdir_set(mounted.mnt) == {"a", "b", "virt"}  # no .fedfuse
    out = run(["ls", "-la", mounted.mnt], text=True).stdout
    names = [line.split()[-1] for line in out.splitlines()[1:]]
    assert sorted(names) == [".", "..", "a", "b", "virt"]
    assert ".fedfuse" not in run(["ls", "-A", mounted.mnt], text=True).stdout


def test_ls_referral(mounted):
    # mounting wrote nothing into the locations (no mount point made for /a/nested in A)
    for name in mounted.src:
        assert os.listdir(mounted.d(name)) == [], name
    create(mounted.d("a", "one"), b"1")
    os.mkdir(mounted.d("a", "dir"))
    create(mounted.d("b", "two"), b"22")
    assert listdir_set(mounted.p("a")) == {"one", "dir", "nested"}
    assert listdir_set(mounted.p("b")) == {"two"}
    out = run(["ls", "-l", mounted.p("a")], text=True).stdout
    assert "one" in out and "dir" in out


def test_stat(mounted):
    data = random_bytes(12345)
    write_file(mounted.p("a", "f"), data)
    os.mkdir(mounted.p("a", "d"))
    for name in ("f", "d"):
        via, disk = os.stat(mounted.p("a", name)), os.stat(mounted.d("a", name))
        if mounted.supports("chmod"):
            assert via.st_mode == disk.st_mode, name
        else:  # permission bits are synthesised (file_mode/dir_mode)
            assert stat.S_IFMT(via.st_mode) == stat.S_IFMT(disk.st_mode), name
        assert via.st_nlink == disk.st_nlink, name
        assert (via.st_uid, via.st_gid) == (disk.st_uid, disk.st_gid), name
        res = mounted.caps("stat_res_ns")
        assert via.st_mtime_ns // res == disk.st_mtime_ns // res, name
        if name == "f":
            assert via.st_size == disk.st_size == len(data)
            if mounted.supports("st_blocks"):
                assert via.st_blocks == disk.st_blocks
            else:
                assert via.st_blocks * 512 >= len(data)
    assert stat.S_ISREG(os.stat(mounted.p("a", "f")).st_mode)
    assert stat.S_ISDIR(os.stat(mounted.p("a", "d")).st_mode)
    # stat(1) agrees with os.stat
    out = run(["stat", "-c", "%s %F", mounted.p("a", "f")], text=True).stdout.split(None, 1)
    assert int(out[0]) == len(data) and out[1].strip() == "regular file"


def test_script_runs(mounted):
    """A script written into a referral and made executable runs there (./autogen.sh): on SMB,
    whose modes are not stored, files show file-mode 0755 as the kernel's CIFS client shows
    them, and chmod +x is a no-op that succeeds."""
    path = mounted.p("a", "hello.sh")
    create(path, b"#!/bin/sh\necho hello from $(basename $0)\n")
    os.chmod(path, 0o755)
    assert os.stat(path).st_mode & 0o111 == 0o111
    out = run([path], text=True)
    assert out.stdout == "hello from hello.sh\n"


def test_mtime_roundtrip(mounted):
    res = mounted.caps("time_res_ns")
    path = create(mounted.p("a", "f"), b"x")
    atime, mtime = 1_234_567_890_123_456_700, 1_111_111_111_987_654_300
    os.utime(path, ns=(atime, mtime))
    assert os.stat(path).st_mtime_ns // res == mtime // res
    assert os.stat(mounted.d("a", "f")).st_mtime_ns // res == mtime // res
    assert os.stat(mounted.d("a", "f")).st_atime_ns // res == atime // res
    # and the other way round: a change made on disk shows through the mount
    os.utime(mounted.d("a", "f"), ns=(atime, mtime + 1000))
    assert wait_until(lambda: os.stat(path).st_mtime_ns // res == (mtime + 1000) // res,
                      VISIBLE_WITHIN[mounted.kind]), "mtime changed on disk not seen"


def test_write_updates_mtime_and_size(mounted):
    path = create(mounted.p("a", "f"), b"abc")
    os.utime(path, ns=(10**18, 10**18))
    with open(path, "ab") as f:
        f.write(b"defg")
    st = os.stat(path)
    assert st.st_size == 7
    assert st.st_mtime_ns > 10**18 + 10**9 * 3600 * 24 * 365 * 10  # moved to "now"
    assert read_file(mounted.d("a", "f")) == b"abcdefg"


def test_cp_in_and_out(mounted):
    data = random_bytes(5 * MiB + 123, seed=7)
    src = create(os.path.join(mounted.tmp, "src.bin"), data)
    run(["cp", src, mounted.p("a", "copy.bin")])
    assert read_file(mounted.p("a", "copy.bin")) == data
    assert read_file(mounted.d("a", "copy.bin")) == data
    out = os.path.join(mounted.tmp, "out.bin")
    run(["cp", mounted.p("a", "copy.bin"), out])
    assert read_file(out) == data
    # within a referral (copy_file_range in the daemon) and across referrals (kernel fallback)
    run(["cp", mounted.p("a", "copy.bin"), mounted.p("a", "copy2.bin")])
    assert read_file(mounted.d("a", "copy2.bin")) == data
    run(["cp", mounted.p("a", "copy.bin"), mounted.p("b", "copy3.bin")])
    assert read_file(mounted.d("b", "copy3.bin")) == data
    run(["cp", mounted.p("a", "copy.bin"), mounted.p("virt", "deep", "copy4.bin")])
    assert read_file(mounted.d("deep", "copy4.bin")) == data
    # overwrite with something shorter: no stale tail
    run(["cp", create(os.path.join(mounted.tmp, "short"), b"short"), mounted.p("a", "copy.bin")])
    assert read_file(mounted.p("a", "copy.bin")) == b"short"
    assert read_file(mounted.d("a", "copy.bin")) == b"short"


def test_mv_within_referral(mounted):
    create(mounted.p("a", "f"), b"file")
    os.makedirs(mounted.p("a", "dir", "sub"))
    create(mounted.p("a", "dir", "sub", "g"), b"gee")
    os.mkdir(mounted.p("a", "target"))
    run(["mv", mounted.p("a", "f"), mounted.p("a", "target", "f2")])
    run(["mv", mounted.p("a", "dir"), mounted.p("a", "target", "dir2")])
    assert listdir_set(mounted.p("a")) == {"target", "nested"}
    assert listdir_set(mounted.p("a", "target")) == {"f2", "dir2"}
    assert read_file(mounted.p("a", "target", "f2")) == b"file"
    # children of a renamed directory are reachable under the new name, through the mount
    # (which may have cached them under the old one) and on disk
    assert read_file(mounted.p("a", "target", "dir2", "sub", "g")) == b"gee"
    assert read_file(mounted.d("a", "target", "dir2", "sub", "g")) == b"gee"
    assert not os.path.exists(mounted.p("a", "dir"))
    assert not os.path.exists(mounted.d("a", "f"))
    # mv over an existing file replaces it
    create(mounted.p("a", "x"), b"new")
    create(mounted.p("a", "y"), b"old")
    run(["mv", "-f", mounted.p("a", "x"), mounted.p("a", "y")])
    assert read_file(mounted.p("a", "y")) == b"new"
    assert not os.path.exists(mounted.p("a", "x"))


def test_mv_across_referrals(mounted):
    """rename(2) gives EXDEV between referrals; mv copies instead."""
    data = random_bytes(300000)
    create(mounted.p("a", "f"), data)
    os.makedirs(mounted.p("a", "tree", "sub"))
    create(mounted.p("a", "tree", "sub", "g"), b"g")
    run(["mv", mounted.p("a", "f"), mounted.p("b", "f")])
    run(["mv", mounted.p("a", "tree"), mounted.p("b", "tree")])
    assert read_file(mounted.d("b", "f")) == data
    assert read_file(mounted.d("b", "tree", "sub", "g")) == b"g"
    assert not os.path.exists(mounted.d("a", "f"))
    assert not os.path.exists(mounted.d("a", "tree"))
    assert listdir_set(mounted.p("a")) == {"nested"}


def find_lines(root, fmt="%y %P\n", *args):
    out = run(["find", root] + list(args) + ["-printf", fmt], text=True).stdout
    return sorted(out.splitlines())


def test_find(mounted):
    make_tree(mounted.d("a", "tree"), mounted.capabilities)
    mnt, disk = mounted.p("a", "tree"), mounted.d("a", "tree")
    fmt = "%y %m %P %l\n" if mounted.supports("chmod") else "%y %P %l\n"
    assert find_lines(mnt, fmt) == find_lines(disk, fmt)
    assert find_lines(mnt, "%P %s\n", "-type", "f") == find_lines(disk, "%P %s\n", "-type", "f")
    assert find_lines(mnt, "%P\n", "-name", "*.txt") == ["sub/with space.txt", "sub/ünïcødé.txt"]
    assert find_lines(mnt, "%P\n", "-newermt", "2030-01-01") == []


def test_find_whole_namespace(mounted):
    """find from the root walks every referral, the nested one once, and nothing hidden."""
    create(mounted.d("a", "fa"))
    create(mounted.d("b", "fb"))
    create(mounted.d("nested", "fc"))
    create(mounted.d("deep", "fd"))
    os.mkdir(mounted.d("a", "nested"))
    create(mounted.d("a", "nested", "hidden"))
    out = run(["find", mounted.mnt, "-printf", "%y %P\n"], text=True).stdout.splitlines()
    assert sorted(out) == sorted([
        "d ", "d a", "f a/fa", "d a/nested", "f a/nested/fc", "d b", "f b/fb",
        "d virt", "d virt/deep", "f virt/deep/fd"])


def test_tar(mounted):
    caps = mounted.capabilities
    src = make_tree(os.path.join(mounted.tmp, "src"), caps)
    os.mkdir(mounted.p("a", "t"))
    # tar x into the mount
    # POSIX (pax) format keeps nanosecond times; GNU format only seconds
    keep = "-xp" if caps["chmod"] is True else "-x --no-same-permissions --no-same-owner"
    run(f"tar cf - --format=posix -C '{src}' . | tar {keep} -f - -C '{mounted.p('a', 't')}'",
        shell=True)
    assert_same_tree(src, mounted.p("a", "t"), **tree_opts(mounted))
    assert_same_tree(src, mounted.d("a", "t"), **tree_opts(mounted))
    # tar c from the mount (hard links are found through st_ino/st_nlink)
    archive = os.path.join(mounted.tmp, "t.tar")
    run(["tar", "cf", archive, "--format=posix", "-C", mounted.p("a", "t"), "."])
    out = os.path.join(mounted.tmp, "out")
    os.mkdir(out)
    run(["tar", "xpf", archive, "-C", out])
    assert_same_tree(src, out, **tree_opts(mounted))
    if caps["hardlink"] is True:
        listing = run(["tar", "tvf", archive], text=True).stdout
        assert " link to " in listing, listing


def test_rsync(mounted):
    caps = mounted.capabilities
    src = make_tree(os.path.join(mounted.tmp, "src"), caps)
    dst = mounted.p("a", "r")
    # -a is -rlptgoD: where modes cannot be stored, only what can be
    a = "-a" if caps["chmod"] is True else "-rlt"
    run(["rsync", a, src + "/", dst + "/"])
    opts = dict(tree_opts(mounted), links=False)  # rsync -a does not keep hard links
    assert_same_tree(src, dst, **opts)
    assert_same_tree(src, mounted.d("a", "r"), **opts)
    back = os.path.join(mounted.tmp, "back")
    run(["rsync", a, dst + "/", back + "/"])
    assert_same_tree(src, back, **opts)
    # a second run finds nothing to transfer (sizes and mtimes read back exactly)
    out = run(["rsync", a, "-i", src + "/", dst + "/"], text=True).stdout
    if not mounted.supports("symlink_times"):  # rsync then re-sets the times of symlinks
        out = "\n".join(l for l in out.splitlines() if not l.startswith(".L..t"))
    assert out.strip() == "", "rsync found differences on a second run:\n" + out
    # and an update of one file is picked up
    write_file(os.path.join(src, "sub", "deeper", "deepest", "leaf"), b"changed\n")
    run(["rsync", a, src + "/", dst + "/"])
    assert read_file(mounted.d("a", "r", "sub", "deeper", "deepest", "leaf")) == b"changed\n"


def test_rsync_kernel_headers(mounted):
    """`rsync -a /usr/include/linux/` (whose netfilter folder has names that differ only in
    case: xt_CONNMARK.h and xt_connmark.h...) and then `diff -r`: nothing is missing or
    different, except, where the location matches names without case (SMB), the names rsync
    said it could not create; a second rsync converges on the same."""
    src = "/usr/include/linux"
    if not os.path.isdir(os.path.join(src, "netfilter")):
        pytest.skip("no kernel headers in /usr/include/linux (linux-libc-dev)")
    dst = mounted.p("a", "inc")
    a = "-a" if mounted.capabilities["chmod"] is True else "-rlt"
    refused = set()
    for attempt in range(2):
        p = subprocess.run(["rsync", a, src + "/", dst + "/"], capture_output=True, text=True,
                           timeout=600)
        assert p.returncode in (0, 23), p.stderr  # 23: some files could not be made
        # rsync: [receiver] rename "/…/netfilter/.xt_connmark.h.Xyz" -> "netfilter/xt_connmark.h":
        # File exists (17)
        names = {os.path.basename(re.findall(r'"([^"]+)"', line)[-1])
                 for line in p.stderr.splitlines() if "File exists (17)" in line}
        assert (p.returncode == 23) == bool(names), p.stderr
        refused |= names
    d = subprocess.run(["diff", "-r", src, dst], capture_output=True, text=True, timeout=600)
    missing = set(re.findall(r"^Only in " + re.escape(src) + r"[^:]*: (.*)$", d.stdout, re.M))
    others = [line for line in d.stdout.splitlines() if not line.startswith("Only in " + src)]
    assert not others, "diff -r found differences:\n" + "\n".join(others[:20])
    assert missing == refused, f"missing: {sorted(missing)}; refused by rsync: {sorted(refused)}"
    if not mounted.supports("case_sensitive"):
        assert missing, "expected names that differ only in case to be refused"


def test_git(mounted, git_env):
    repo = mounted.p("a", "repo")
    os.mkdir(repo)
    git = lambda *args: run(["git", "-C", repo] + list(args), env=git_env, text=True)  # noqa
    git("init", "-q")
    write_file(os.path.join(repo, "README"), b"hello\n")
    os.makedirs(os.path.join(repo, "src"))
    write_file(os.path.join(repo, "src", "main.c"), b"int main(void) { return 0; }\n")
    git("add", ".")
    git("commit", "-q", "-m", "first commit")
    write_file(os.path.join(repo, "README"), b"hello again\n")
    git("commit", "-q", "-a", "-m", "second commit")
    log = git("log", "--format=%s").stdout.splitlines()
    assert log == ["second commit", "first commit"]
    assert git("status", "--porcelain").stdout == ""
    git("fsck", "--strict", "--no-progress")
    git("gc", "-q")
    git("fsck", "--strict", "--no-progress")
    assert git("show", "HEAD~1:README").stdout == "hello\n"
    # the repository on disk is the same repository
    out = run(["git", "-C", mounted.d("a", "repo"), "log", "--format=%s"], env=git_env,
              text=True).stdout.splitlines()
    assert out == log


def test_dd(mounted):
    data = random_bytes(8 * MiB, seed=3)
    src = create(os.path.join(mounted.tmp, "src"), data)
    f = mounted.p("a", "dd.bin")
    run(["dd", f"if={src}", f"of={f}", "bs=1M", "count=8", "conv=fsync", "status=none"])
    assert read_file(mounted.d("a", "dd.bin")) == data
    # overwrite 2 MiB in the middle, keep the rest (conv=notrunc), odd block size
    patch = random_bytes(2 * MiB, seed=4)
    p = create(os.path.join(mounted.tmp, "patch"), patch)
    run(["dd", f"if={p}", f"of={f}", "bs=64k", "seek=48", "conv=notrunc,fsync", "status=none"])
    expected = data[:3 * MiB] + patch + data[5 * MiB:]
    assert read_file(mounted.d("a", "dd.bin")) == expected
    out = os.path.join(mounted.tmp, "out")
    run(["dd", f"if={f}", f"of={out}", "bs=1M", "status=none"])
    assert read_file(out) == expected
    # O_DIRECT-free skip read of the tail
    tail = run(["dd", f"if={f}", "bs=1M", "skip=7", "status=none"]).stdout
    assert tail == expected[7 * MiB:]


def test_dd_direct(mounted):
    """dd with oflag=direct and iflag=direct, as on a native disk: aligned blocks, then an odd
    block size that direct I/O on a disk file system would refuse but the mount takes (FUSE
    direct I/O has no alignment rule). The bytes are on the backing file when dd returns."""
    data = random_bytes(64 * 4096 + 1000, seed=5)
    src = create(os.path.join(mounted.tmp, "src"), data)
    f = mounted.p("a", "direct.bin")
    run(["dd", f"if={src}", f"of={f}", "bs=4096", "count=64", "oflag=direct", "status=none"])
    assert read_file(mounted.d("a", "direct.bin")) == data[:64 * 4096]
    run(["dd", f"if={src}", f"of={f}", "bs=1000", "oflag=direct", "status=none"])
    assert read_file(mounted.d("a", "direct.bin")) == data
    out = run(["dd", f"if={f}", "bs=4096", "iflag=direct", "status=none"]).stdout
    assert out == data


def test_truncate(mounted):
    f = create(mounted.p("a", "t"), b"0123456789")
    run(["truncate", "-s", "1M", f])
    assert os.stat(f).st_size == MiB
    assert os.stat(mounted.d("a", "t")).st_size == MiB
    data = read_file(f)
    assert data[:10] == b"0123456789" and data[10:] == bytes(MiB - 10)
    run(["truncate", "-s", "4", f])
    assert read_file(f) == b"0123"
    assert read_file(mounted.d("a", "t")) == b"0123"
    # grow again: the cut bytes must not come back
    run(["truncate", "-s", "8", f])
    assert read_file(f) == b"0123" + bytes(4)
    run(["truncate", "-s", "0", f])
    assert os.stat(f).st_size == 0 and read_file(mounted.d("a", "t")) == b""
    # ftruncate through an open descriptor
    with open(f, "r+b") as fh:
        fh.write(b"abcdef")
        fh.flush()
        os.ftruncate(fh.fileno(), 3)
        assert os.fstat(fh.fileno()).st_size == 3
    assert read_file(mounted.d("a", "t")) == b"abc"


def test_hard_link(mounted):
    f = create(mounted.p("a", "f"), b"data")
    g = mounted.p("a", "g")
    want = mounted.caps("hardlink")
    if want is not True:
        expect_errno(want, os.link, f, g)
        run_fails(["ln", f, g])
        return
    run(["ln", f, g])
    sf, sg = os.stat(f), os.stat(g)
    assert sf.st_ino == sg.st_ino
    assert sf.st_nlink == sg.st_nlink == 2
    assert os.stat(mounted.d("a", "f")).st_ino == os.stat(mounted.d("a", "g")).st_ino
    with open(g, "ab") as fh:
        fh.write(b"+more")
    assert read_file(f) == b"data+more"
    os.unlink(f)
    assert os.stat(g).st_nlink == 1
    assert read_file(g) == b"data+more"
    # a hard link into a subdirectory, and a hard link across referrals (EXDEV)
    os.mkdir(mounted.p("a", "sub"))
    os.link(g, mounted.p("a", "sub", "h"))
    assert os.stat(mounted.p("a", "sub", "h")).st_ino == os.stat(g).st_ino
    expect_errno(errno.EXDEV, os.link, g, mounted.p("b", "h"))


def test_symlink(mounted):
    link = mounted.p("a", "s")
    want = mounted.caps("symlink")
    if want is not True:
        expect_errno(want, os.symlink, "target", link)
        run_fails(["ln", "-s", "target", link])
        return
    create(mounted.p("a", "target"), b"T")
    run(["ln", "-s", "target", link])
    assert stat.S_ISLNK(os.lstat(link).st_mode)
    assert os.readlink(link) == "target"
    assert os.readlink(mounted.d("a", "s")) == "target"
    assert read_file(link) == b"T"  # the kernel follows it, inside the mount
    assert os.lstat(link).st_size == len("target")
    # absolute, dangling and long targets are stored verbatim
    for name, target in (("abs", "/no/such/place"), ("dang", "nothing-here"),
                         ("long", "d/" * 1000 + "x")):
        os.symlink(target, mounted.p("a", name))
        assert os.readlink(mounted.p("a", name)) == target
        assert os.readlink(mounted.d("a", name)) == target
    assert run(["readlink", link], text=True).stdout == "target\n"


def test_chmod(mounted):
    f = create(mounted.p("a", "f"), b"x")
    d = mounted.p("a", "d")
    os.mkdir(d)
    want = mounted.caps("chmod")
    if want == "write-bit":
        dir_mode = stat.S_IMODE(os.stat(d).st_mode)
        run(["chmod", "444", f])
        assert stat.S_IMODE(os.stat(f).st_mode) & 0o222 == 0
        expect_errno(errno.EACCES, os.open, f, os.O_WRONLY)
        run(["chmod", "u+w", f])
        assert stat.S_IMODE(os.stat(f).st_mode) & 0o200
        write_file(f, b"writable again")
        assert read_file(mounted.d("a", "f")) == b"writable again"
        run(["chmod", "700", d])  # accepted, not stored
        assert stat.S_IMODE(os.stat(d).st_mode) == dir_mode
        return
    assert want is True
    for path, name, mode in ((f, "f", "640"), (f, "f", "4755"), (d, "d", "700"),
                             (d, "d", "1777")):
        run(["chmod", mode, path])
        assert stat.S_IMODE(os.stat(path).st_mode) == int(mode, 8), (name, mode)
        assert stat.S_IMODE(os.stat(mounted.d("a", name)).st_mode) == int(mode, 8), (name, mode)
    # chmod on disk shows through the mount
    os.chmod(mounted.d("a", "f"), 0o604)
    assert wait_until(lambda: stat.S_IMODE(os.stat(f).st_mode) == 0o604,
                      VISIBLE_WITHIN[mounted.kind]), "chmod on disk not seen"


def test_touch_date(mounted):
    f = mounted.p("a", "f")
    env = dict(os.environ, TZ="UTC")
    run(["touch", f], env=env)  # creates it
    assert os.path.isfile(mounted.d("a", "f"))
    run(["touch", "-d", "2001-02-03 04:05:06", f], env=env)
    want = calendar.timegm((2001, 2, 3, 4, 5, 6))
    assert os.stat(mounted.d("a", "f")).st_mtime == want
    assert os.stat(f).st_mtime == want
    assert os.stat(mounted.d("a", "f")).st_atime == want
    run(["touch", "-m", f], env=env)
    assert abs(os.stat(mounted.d("a", "f")).st_mtime - time.time()) < 60


def test_xattr(mounted):
    f = create(mounted.p("a", "f"), b"x")
    want = mounted.caps("xattr")
    if want is not True:
        expect_errno(want, os.setxattr, f, "user.x", b"1")
        run_fails(["setfattr", "-n", "user.x", "-v", "1", f])
        expect_errno({want, errno.ENODATA}, os.getxattr, f, "user.x")
        return
    run(["setfattr", "-n", "user.x", "-v", "1", f])
    assert run(["getfattr", "--only-values", "-n", "user.x", f]).stdout == b"1"
    assert os.getxattr(mounted.d("a", "f"), "user.x") == b"1"
    assert "user.x" in os.listxattr(f)
    big = bytes(range(256)) * 4
    os.setxattr(f, "user.big", big)
    assert os.getxattr(f, "user.big") == big
    os.setxattr(mounted.d("a", "f"), "user.ondisk", b"disk")
    assert os.getxattr(f, "user.ondisk") == b"disk"  # xattrs are never cached by the kernel
    expect_errno(errno.ENODATA, os.getxattr, f, "user.missing")
    expect_errno(errno.EEXIST, os.setxattr, f, "user.x", b"2", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, f, "user.nope", b"2", os.XATTR_REPLACE)
    run(["setfattr", "-x", "user.x", f])
    expect_errno(errno.ENODATA, os.getxattr, mounted.d("a", "f"), "user.x")
    assert "user.x" not in os.listxattr(f)
    # xattrs on a directory too
    os.mkdir(mounted.p("a", "d"))
    os.setxattr(mounted.p("a", "d"), "user.dir", b"yes")
    assert os.getxattr(mounted.d("a", "d"), "user.dir") == b"yes"


def test_security_labels_are_not_carried(mounted):
    """SELinux and Smack labels are not carried, as by the kernel's NFS and CIFS clients: getting,
    setting or removing one is EOPNOTSUPP and listings leave them out, whatever the backend
    holds (so `ls -l` is told once that the mount has none). security.capability passes
    through where the location has xattrs."""
    f = create(mounted.p("a", "f"), b"x")
    if mounted.kind == "file":
        os.setxattr(mounted.d("a", "f"), "security.selinux", b"system_u:object_r:etc_t:s0\0")
        os.setxattr(mounted.d("a", "f"), "user.kept", b"1")
    for name in ("security.selinux", "security.SMACK64"):
        expect_errno(errno.EOPNOTSUPP, os.getxattr, f, name)
        expect_errno(errno.EOPNOTSUPP, os.setxattr, f, name, b"unconfined_u\0")
        expect_errno(errno.EOPNOTSUPP, os.removexattr, f, name)
    assert not [n for n in os.listxattr(f) if n.startswith("security.")]
    out = run(["ls", "-l", mounted.p("a")]).stdout.decode()
    assert re.search(r"^-\S+ +1 .* f$", out, re.M), out
    if mounted.kind != "file":
        return
    assert os.listxattr(f) == ["user.kept"]
    assert os.getxattr(mounted.d("a", "f"), "security.selinux") == \
        b"system_u:object_r:etc_t:s0\0"  # left as it was
    # VFS_CAP_REVISION_2, CAP_NET_RAW (13) permitted
    cap = (0x02000000).to_bytes(4, "little") + (1 << 13).to_bytes(4, "little") + bytes(12)
    os.setxattr(f, "security.capability", cap)
    assert os.getxattr(mounted.d("a", "f"), "security.capability") == cap
    assert os.getxattr(f, "security.capability") == cap
    assert "security.capability" in os.listxattr(f)


def test_mkfifo(mounted):
    p = mounted.p("a", "fifo")
    want = mounted.caps("fifo")
    if want is not True:
        expect_errno(want, os.mkfifo, p)
        return
    run(["mkfifo", p])
    assert stat.S_ISFIFO(os.stat(p).st_mode)
    assert stat.S_ISFIFO(os.lstat(mounted.d("a", "fifo")).st_mode)
    # the kernel runs the pipe itself: data flows without reaching a backend
    r = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        w = os.open(p, os.O_WRONLY)
        try:
            os.write(w, b"through the fifo")
            assert os.read(r, 100) == b"through the fifo"
        finally:
            os.close(w)
    finally:
        os.close(r)
