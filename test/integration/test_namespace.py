# SPDX-License-Identifier: GPL-2.0-or-later
"""The namespace itself (DESIGN §3): nested referrals, virtual directories, the control
directory, errors in the namespace file, reload on SIGHUP."""

import errno
import os
import re
import signal
import stat
import time

import pytest

from conftest import file_uri, is_mounted, run_daemon, write_namespace
from servers_util import location_ops, read_stats
from util import create, expect_errno, listdir_set, read_file, wait_until


def test_nested_referral_hides_outer(mounted):
    os.mkdir(mounted.d("a", "nested"))
    create(mounted.d("a", "nested", "hidden"), b"from A")
    create(mounted.d("nested", "shown"), b"from C")
    assert listdir_set(mounted.p("a", "nested")) == {"shown"}
    assert read_file(mounted.p("a", "nested", "shown")) == b"from C"
    expect_errno(errno.ENOENT, os.stat, mounted.p("a", "nested", "hidden"))
    assert sorted(os.listdir(mounted.p("a"))) == ["nested"]  # listed once
    # writes land in C, not in A
    create(mounted.p("a", "nested", "new"), b"new")
    assert read_file(mounted.d("nested", "new")) == b"new"
    assert not os.path.exists(mounted.d("a", "nested", "new"))


def test_nested_referral_without_outer_entry(mounted):
    """A has nothing at `nested`: the referral is still there, in lookups and listings."""
    create(mounted.d("nested", "shown"), b"C")
    create(mounted.d("a", "other"))
    assert listdir_set(mounted.p("a")) == {"nested", "other"}
    assert stat.S_ISDIR(os.stat(mounted.p("a", "nested")).st_mode)
    with os.scandir(mounted.p("a")) as it:
        assert {e.name: e.is_dir() for e in it} == {"nested": True, "other": False}
    assert read_file(mounted.p("a", "nested", "shown")) == b"C"


def test_nested_referral_over_outer_file(mounted):
    """A has a *file* at `nested`: the referral still wins, as a directory."""
    create(mounted.d("a", "nested"), b"a plain file in A")
    create(mounted.d("nested", "shown"))
    assert stat.S_ISDIR(os.stat(mounted.p("a", "nested")).st_mode)
    assert listdir_set(mounted.p("a", "nested")) == {"shown"}
    assert sorted(os.listdir(mounted.p("a"))) == ["nested"]


def test_nested_referral_cannot_be_removed(mounted):
    create(mounted.d("nested", "shown"))
    expect_errno({errno.EBUSY, errno.EROFS, errno.EPERM, errno.ENOTEMPTY},
                 os.rmdir, mounted.p("a", "nested"))
    expect_errno({errno.EBUSY, errno.EROFS, errno.EPERM, errno.EXDEV},
                 os.rename, mounted.p("a", "nested"), mounted.p("a", "elsewhere"))
    create(mounted.p("a", "f"))
    expect_errno({errno.EBUSY, errno.EROFS, errno.EPERM, errno.EISDIR, errno.EXDEV},
                 os.rename, mounted.p("a", "f"), mounted.p("a", "nested"))
    assert os.path.exists(mounted.d("nested", "shown"))
    assert listdir_set(mounted.p("a", "nested")) == {"shown"}


def test_virtual_dir(mounted):
    create(mounted.d("deep", "x"), b"in D")
    assert listdir_set(mounted.p("virt")) == {"deep"}
    st = os.stat(mounted.p("virt"))
    assert stat.S_ISDIR(st.st_mode)
    assert stat.S_ISDIR(os.stat(mounted.mnt).st_mode)
    assert read_file(mounted.p("virt", "deep", "x")) == b"in D"
    # `..` of a referral root is the virtual directory above it
    assert os.stat(mounted.p("virt", "deep", "..")).st_ino == st.st_ino
    assert os.stat(mounted.p("a", "nested", "..")).st_ino == os.stat(mounted.p("a")).st_ino
    # statfs works at every level
    for p in (mounted.mnt, mounted.p("virt"), mounted.p("a")):
        os.statvfs(p)


@pytest.mark.parametrize("where", ["", "virt"])
def test_virtual_dir_read_only(mounted, where):
    d = mounted.p(where) if where else mounted.mnt
    existing = mounted.p(where, "deep") if where else mounted.p("a")
    erofs = errno.EROFS
    expect_errno(erofs, os.mkdir, os.path.join(d, "newdir"))
    expect_errno(erofs, os.open, os.path.join(d, "newfile"), os.O_CREAT | os.O_WRONLY)
    expect_errno(erofs, os.mknod, os.path.join(d, "fifo"), 0o600 | stat.S_IFIFO)
    expect_errno(erofs, os.symlink, "target", os.path.join(d, "link"))
    # unlink(2) of a directory is EISDIR from the VFS before it reaches the daemon, and a
    # virtual directory holds only directories
    expect_errno(errno.EISDIR, os.unlink, existing)
    expect_errno(erofs, os.rmdir, existing)
    expect_errno(erofs, os.rename, existing, os.path.join(d, "renamed"))
    expect_errno(erofs, os.chmod, d, 0o700)
    expect_errno(erofs, os.chown, d, 1, 1)
    expect_errno(erofs, os.utime, d, (1, 1))
    expect_errno(erofs, os.setxattr, d, "user.x", b"1")
    expect_errno(erofs, os.removexattr, d, "user.x")
    expect_errno(errno.ENOENT, os.stat, os.path.join(d, "newdir"))
    assert listdir_set(d) == ({"deep"} if where else {"a", "b", "virt"})


def test_control_dir(mounted):
    """DESIGN §6: /.fedfuse is reachable by name, not listed, read-only."""
    ctl = mounted.p(".fedfuse")
    assert stat.S_ISDIR(os.stat(ctl).st_mode)
    assert ".fedfuse" not in os.listdir(mounted.mnt)
    assert {"stats", "namespace", "locations"} <= listdir_set(ctl)
    ns = read_file(os.path.join(ctl, "namespace")).decode()
    for path in ("/a", "/b", "/a/nested", "/virt/deep"):
        assert path in ns, ns
    assert mounted.layout.uris["deep"] in ns
    read_file(os.path.join(ctl, "stats"))
    locs = read_file(os.path.join(ctl, "locations")).decode()
    assert mounted.layout.uris["nested"] in locs, locs
    expect_errno({errno.EROFS, errno.EACCES, errno.EPERM},
                 os.open, os.path.join(ctl, "stats"), os.O_WRONLY)
    expect_errno({errno.EROFS, errno.EACCES, errno.EPERM},
                 os.open, os.path.join(ctl, "new"), os.O_CREAT | os.O_WRONLY)


# ---- namespace file errors ----------------------------------------------------------------------

GOOD = "file:///tmp"
BAD_NAMESPACES = {
    # name: (text, line of the error)
    "unknown-key": (f"[/a]\nlocations={GOOD}\ncolour=red\n", 3),
    "unknown-namespace-key": (f"[namespace]\nbogus=1\n[/a]\nlocations={GOOD}\n", 2),
    "duplicate-path": (f"[/a]\nlocations={GOOD}\n\n[/a]\nlocations={GOOD}\n", 4),
    "unknown-scheme": ("[/a]\nlocations=ftp://host/x\n", 2),
    "unknown-scheme-second": (f"[/a]\nlocations={GOOD};gopher://h/x\n", 2),
    "relative-path": (f"[/a]\nlocations={GOOD}\n[a/b]\nlocations={GOOD}\n", 3),
    "unnormalised-path": (f"[/a/../b]\nlocations={GOOD}\n", 1),
    "double-slash": (f"[/a//b]\nlocations={GOOD}\n", 1),
    "bad-boolean": (f"[/a]\nlocations={GOOD}\nread-only=maybe\n", 3),
    "bad-timeout": (f"[namespace]\ntimeout=soon\n[/a]\nlocations={GOOD}\n", 2),
    "empty-locations": ("[/a]\nlocations=\n", 2),
    "file-uri-with-host": ("[/a]\nlocations=file://tmp/x\n", 2),
    "syntax": (f"[/a]\nlocations={GOOD}\nthis is not a key file line\n", 3),
}


def check_refused(tmp_path, ns, line):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    t0 = time.monotonic()
    p = run_daemon(["-f", "--namespace", str(ns), str(mnt)])
    elapsed = time.monotonic() - t0
    assert p.returncode == 1, f"exit {p.returncode}; stderr: {p.stderr}"
    want = re.escape(str(ns)) + ":" + (str(line) if line is not None else r"\d+") + ": \\S"
    assert re.match(want, p.stderr), \
        f"stderr does not start with {ns}:{line if line is not None else 'LINE'}: ...\n{p.stderr}"
    assert elapsed < 5, f"took {elapsed:.1f} s to refuse"
    assert not is_mounted(mnt)
    assert os.listdir(mnt) == []
    return p.stderr


@pytest.mark.parametrize("case", sorted(BAD_NAMESPACES))
def test_bad_namespace(tmp_path, case):
    text, line = BAD_NAMESPACES[case]
    ns = tmp_path / "ns.conf"
    ns.write_text(text)
    check_refused(tmp_path, ns, line)


def test_missing_namespace(tmp_path):
    err = check_refused(tmp_path, tmp_path / "no-such.conf", None)
    assert "No such file" in err or "not found" in err.lower(), err


def test_namespace_option_form(mount_factory, tmp_path):
    """-o namespace=FILE works like --namespace FILE."""
    loc = tmp_path / "loc"
    loc.mkdir()
    (loc / "hello").write_bytes(b"hi")
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])])
    m.ns_args = ["-o", f"namespace={m.namespace}"]
    m.start()
    assert read_file(os.path.join(m.mnt, "x", "hello")) == b"hi"


def test_read_only_referral(mount_factory, tmp_path):
    """read-only=true: reads work, every change fails with EROFS, nothing changes on disk."""
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "f").write_bytes(b"keep")
    (ro / "d").mkdir()
    m = mount_factory(ns_text=f"[namespace]\ntimeout=5\nattr-timeout=0.5\njunction-cache-ttl=0\n\n"
                              f"[/ro]\nlocations={file_uri(str(ro))}\nread-only=true\n"
                              f"timeout=2\nattr-timeout=2.5\n\n"
                              f"[/rw]\nlocations={file_uri(str(rw))}\nread-only=false\n")
    m.start()
    f = os.path.join(m.mnt, "ro", "f")
    assert read_file(f) == b"keep"
    expect_errno(errno.EROFS, os.open, f, os.O_WRONLY)
    expect_errno(errno.EROFS, os.open, os.path.join(m.mnt, "ro", "new"), os.O_CREAT | os.O_WRONLY)
    expect_errno(errno.EROFS, os.mkdir, os.path.join(m.mnt, "ro", "newdir"))
    expect_errno(errno.EROFS, os.unlink, f)
    expect_errno(errno.EROFS, os.rmdir, os.path.join(m.mnt, "ro", "d"))
    expect_errno(errno.EROFS, os.rename, f, os.path.join(m.mnt, "ro", "g"))
    expect_errno(errno.EROFS, os.chmod, f, 0o600)
    expect_errno(errno.EROFS, os.truncate, f, 0)
    expect_errno(errno.EROFS, os.utime, f, (1, 1))
    expect_errno(errno.EROFS, os.setxattr, f, "user.x", b"1")
    assert (ro / "f").read_bytes() == b"keep"
    assert sorted(os.listdir(ro)) == ["d", "f"]
    create(os.path.join(m.mnt, "rw", "ok"), b"ok")
    assert (rw / "ok").read_bytes() == b"ok"


def test_root_referral(mount_factory, tmp_path):
    """`/` itself may be a referral; then the root is writable, with another referral below."""
    root, sub = tmp_path / "root", tmp_path / "sub"
    root.mkdir()
    sub.mkdir()
    (sub / "s").write_bytes(b"s")
    m = mount_factory(referrals=[("/", [file_uri(str(root))]), ("/x/y", [file_uri(str(sub))])])
    m.start()
    create(os.path.join(m.mnt, "top"), b"top")
    assert (root / "top").read_bytes() == b"top"
    assert read_file(os.path.join(m.mnt, "x", "y", "s")) == b"s"
    assert listdir_set(m.mnt) == {"top", "x"}
    # Operations on / do not ask the location for its root each time (root() is counted as a
    # lookup of the location): stat and list it again and again.
    uri = file_uri(str(root))
    before = location_ops(read_stats(m.mnt), uri, "/").get("lookup", (0, 0))[0]
    for _ in range(10):
        os.stat(m.mnt)
        os.listdir(m.mnt)
        os.getxattr(m.mnt, "user.fedfuse.location")
    after = location_ops(read_stats(m.mnt), uri, "/").get("lookup", (0, 0))[0]
    assert after - before <= 1, f"root() asked {after - before} times for 30 operations"


def test_sighup_reload(mount_factory, tmp_path):
    """DESIGN §3: SIGHUP re-reads the file; a broken file is rejected whole."""
    a, c = tmp_path / "la", tmp_path / "lc"
    a.mkdir()
    c.mkdir()
    (c / "cfile").write_bytes(b"c")
    m = mount_factory(referrals=[("/a", [file_uri(str(a))])])
    m.start()
    assert listdir_set(m.mnt) == {"a"}
    write_namespace(m.namespace, [("/a", [file_uri(str(a))]), ("/c", [file_uri(str(c))])])
    m.proc.send_signal(signal.SIGHUP)
    assert wait_until(lambda: "c" in os.listdir(m.mnt), 5), m.log_text()
    assert read_file(os.path.join(m.mnt, "c", "cfile")) == b"c"
    # a broken file: logged, the namespace in force stays
    with open(m.namespace, "w") as f:
        f.write("[/a]\nlocations=ftp://nope\n")
    m.expect_log(re.escape(m.namespace) + ":2:")
    m.proc.send_signal(signal.SIGHUP)
    assert wait_until(lambda: re.search(re.escape(m.namespace) + ":2:", m.log_text()), 5), \
        "a namespace file with errors was not reported in the log:\n" + m.log_text()
    assert listdir_set(m.mnt) == {"a", "c"}
    assert read_file(os.path.join(m.mnt, "c", "cfile")) == b"c"
