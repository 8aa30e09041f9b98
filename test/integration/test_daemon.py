# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon as a program (DESIGN §2): --version, --help, unmounting and signals."""

import errno
import os
import re
import signal
import subprocess

import pytest

from conftest import file_uri, is_mounted, run_daemon
from util import create, read_file, wait_until


def test_version():
    p = run_daemon(["--version"])
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    assert re.search(r"fedfuse\D*\d+\.\d+\.\d+", out), out
    assert not re.search(r"error|usage", out, re.I), out


def test_help():
    p = run_daemon(["--help"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert re.search(r"usage", out, re.I), out
    assert "MOUNTPOINT" in out.upper()
    assert "--namespace" in out or "namespace=" in out, out
    assert "-f" in out and "-d" in out, out


def test_no_mountpoint():
    p = run_daemon([])
    assert p.returncode != 0
    assert p.stderr.strip(), "no message when the mount point is missing"


def test_unknown_option(tmp_path):
    p = run_daemon(["--no-such-option", str(tmp_path)])
    assert p.returncode != 0
    assert p.stderr.strip()
    assert not is_mounted(tmp_path)


def simple_mount(mount_factory, tmp_path):
    loc = tmp_path / "loc"
    loc.mkdir()
    (loc / "f").write_bytes(b"data")
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])])
    m.start()
    return m


def test_fusermount_unmount(mount_factory, tmp_path):
    m = simple_mount(mount_factory, tmp_path)
    assert read_file(os.path.join(m.mnt, "x", "f")) == b"data"
    subprocess.run(["fusermount3", "-u", m.mnt], check=True)
    assert m.wait() == 0, m.log_text()
    assert not is_mounted(m.mnt)


def test_sigterm(mount_factory, tmp_path):
    m = simple_mount(mount_factory, tmp_path)
    assert read_file(os.path.join(m.mnt, "x", "f")) == b"data"
    m.proc.send_signal(signal.SIGTERM)
    assert m.wait() == 0, m.log_text()
    assert not is_mounted(m.mnt), "still mounted after SIGTERM"


def test_sigint(mount_factory, tmp_path):
    m = simple_mount(mount_factory, tmp_path)
    m.proc.send_signal(signal.SIGINT)
    assert m.wait() == 0, m.log_text()
    assert not is_mounted(m.mnt)


def test_sigterm_with_open_files(mount_factory, tmp_path):
    """Open files and a busy cwd do not keep the daemon from exiting on SIGTERM."""
    m = simple_mount(mount_factory, tmp_path)
    fh = open(os.path.join(m.mnt, "x", "f"), "rb")
    dfd = os.open(os.path.join(m.mnt, "x"), os.O_RDONLY)
    try:
        m.proc.send_signal(signal.SIGTERM)
        rc = m.wait()
    finally:
        # the connection is gone: close may report ENOTCONN, and that is right
        for close in (fh.close, lambda: os.close(dfd)):
            try:
                close()
            except OSError as e:
                assert e.errno == errno.ENOTCONN, e
    assert rc == 0, m.log_text()
    wait_until(lambda: not is_mounted(m.mnt), 2)
    if is_mounted(m.mnt):
        subprocess.run(["fusermount3", "-uz", m.mnt])
        pytest.fail("still mounted after SIGTERM with open files")


def test_debug_option(mount_factory, tmp_path):
    """-d prints FUSE's request trace to stderr in the foreground."""
    loc = tmp_path / "dloc"
    loc.mkdir()
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])], extra_args=["-d"], name="dbg")
    m.expect_log(r".")  # FUSE's trace prints "error: -2 (No such file ...)" for ENOENT
    m.start()
    create(os.path.join(m.mnt, "x", "g"))
    assert (loc / "g").exists()
    assert wait_until(lambda: "LOOKUP" in m.log_text() or "lookup" in m.log_text(), 2), \
        m.log_text()


@pytest.mark.parametrize("form", ["--namespace=FILE", "--namespace FILE", "-o namespace=FILE",
                                  "FILE MOUNTPOINT"])
def test_namespace_option_forms(mount_factory, tmp_path, form):
    """Each documented way of naming the namespace file mounts the same tree."""
    loc = tmp_path / "formloc"
    loc.mkdir()
    create(str(loc / "f"), b"found")
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])], name="form")
    ns = m.namespace
    m.ns_args = {"--namespace=FILE": [f"--namespace={ns}"],
                 "--namespace FILE": ["--namespace", ns],
                 "-o namespace=FILE": ["-o", f"namespace={ns}"],
                 "FILE MOUNTPOINT": [ns]}[form]
    m.start()
    assert read_file(os.path.join(m.mnt, "x", "f")) == b"found"


def _readahead_kb(mnt):
    dev = os.stat(mnt).st_dev
    with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb") as f:
        return int(f.read())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may set a mount's read-ahead")
@pytest.mark.parametrize("opt,want", [(None, 1024), ("readahead=256", 256), ("readahead=0", 128)])
def test_readahead_window(mount_factory, tmp_path, opt, want):
    """The mount's read-ahead window: 1 MiB unless -o readahead says otherwise (0: the
    kernel's 128 KiB for FUSE), and a file reads back whole through it."""
    loc = tmp_path / "raloc"
    loc.mkdir()
    data = os.urandom(3 * 1024 * 1024 + 17)
    (loc / "big").write_bytes(data)
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])],
                      extra_args=["-o", opt] if opt else [], name="ra")
    m.start()
    assert _readahead_kb(m.mnt) == want
    with open(os.path.join(m.mnt, "x", "big"), "rb") as f:
        assert f.read() == data


def _xattr_requests(mnt):
    with open(os.path.join(mnt, ".fedfuse", "stats")) as f:
        return sum(int(m.group(1)) for m in re.finditer(r"^  xattr +calls=(\d+)", f.read(), re.M))


@pytest.mark.parametrize("noxattr", [False, True])
def test_noxattr(mount_factory, tmp_path, noxattr):
    """-o noxattr: no extended attributes through the mount (EOPNOTSUPP, the kernel's own answer
    once told ENOSYS), and so no request for them: `ls -l` and writes cost none. Without it,
    xattrs work and each of those asks the daemon."""
    loc = tmp_path / "xloc"
    loc.mkdir()
    for i in range(20):
        (loc / f"f{i}").write_bytes(b"x")
    os.setxattr(str(loc / "f0"), "user.color", b"blue")
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])],
                      extra_args=["-o", "noxattr"] if noxattr else [], name="nx")
    m.start()
    f0 = os.path.join(m.mnt, "x", "f0")
    out = subprocess.run(["ls", "-l", os.path.join(m.mnt, "x")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.count(" f") == 20, out
    with open(f0, "r+b") as f:
        for _ in range(10):
            f.write(b"y" * 4096)
    if noxattr:
        for call in (lambda: os.getxattr(f0, "user.color"), lambda: os.listxattr(f0),
                     lambda: os.setxattr(f0, "user.color", b"red"),
                     lambda: os.removexattr(f0, "user.color")):
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno == errno.EOPNOTSUPP
        # one request of each kind at most, then the kernel stops asking
        assert _xattr_requests(m.mnt) <= 4
        assert os.getxattr(str(loc / "f0"), "user.color") == b"blue"  # untouched below
    else:
        assert os.getxattr(f0, "user.color") == b"blue"
        assert _xattr_requests(m.mnt) > 20


def test_background_daemon(tmp_path):
    """Without -f the daemon forks into the background and serves from there (its threads
    must be started after the fork); fusermount3 -u stops it."""
    src = tmp_path / "src"
    src.mkdir()
    create(str(src / "f"), b"served from the background")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ns = tmp_path / "namespace.conf"
    ns.write_text(f"[/a]\nlocations={file_uri(str(src))}\n")
    p = run_daemon(["--namespace", str(ns), str(mnt)])
    assert p.returncode == 0, p.stderr
    try:
        assert is_mounted(str(mnt))
        out = subprocess.run(["cat", str(mnt / "a" / "f")], capture_output=True, timeout=20)
        assert out.stdout == b"served from the background", out
        assert os.listdir(str(mnt)) == ["a"]
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
    wait_until(lambda: not is_mounted(str(mnt)), 10)
