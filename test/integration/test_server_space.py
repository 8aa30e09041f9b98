# SPDX-License-Identifier: GPL-2.0-or-later
"""A server that runs out of room (issue 19): ENOSPC, and EDQUOT for a user over quota, reach
the program that writes, at a write, at fsync() or at close(), never a silent short file.
The servers are PRIVATE (a ganesha and an smbd of this module) whose NFS exports and SMB user
share are small filesystems, stopped and unmounted at the end whatever happened:
- full: 32 MiB tmpfs;
- quota: btrfs subvolumes with a 4 MiB quota group limit (this kernel may lack the user
  quotas of ext4, xfs and tmpfs: CONFIG_QUOTA; btrfs quota groups do not need it), skipped
  where loop devices or btrfs are missing."""

import errno
import os
import shutil
import subprocess

import pytest

from conftest import backend_module_present
from servers_util import PrivateServers
from util import namespace_text

MiB = 1 << 20
FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
EXPORTS = {"nfs3": ("NFS_V3_URI", "NFS_V3_DIR"), "nfs4": ("NFS_V4_URI", "NFS_V4_DIR")}
SHARES = ("ganesha/v3", "ganesha/v4", "samba/user")


def run(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode == 0, p.stdout + p.stderr


def tmpfs(state, d):
    ok, out = run("mount", "-t", "tmpfs", "-o", "size=32M,mode=1777", "tmpfs", d)
    assert ok, out


def btrfs_quota(state, d):
    """A subvolume of a fresh btrfs image limited to 4 MiB, mounted on `d`."""
    if not shutil.which("mkfs.btrfs"):
        pytest.skip("no mkfs.btrfs (btrfs-progs)")
    img = os.path.join(state, d[len(state):].strip("/").replace("/", "_") + ".img")
    top = img + ".top"
    with open(img, "wb") as f:
        f.truncate(128 * MiB)
    os.mkdir(top)
    ok, out = run("mkfs.btrfs", "-q", "-f", img)
    assert ok, out
    ok, out = run("mount", "-o", "loop", img, top)
    if not ok:
        pytest.skip(f"cannot mount a btrfs image here: {out.strip()}")
    try:
        for argv in (["btrfs", "quota", "enable", top],
                     ["btrfs", "subvolume", "create", os.path.join(top, "q")],
                     ["btrfs", "qgroup", "limit", "4M", os.path.join(top, "q")]):
            ok, out = run(*argv)
            assert ok, f"{argv}: {out}"
        os.chmod(os.path.join(top, "q"), 0o1777)
    finally:
        run("umount", top)
    ok, out = run("mount", "-o", "loop,subvol=q", img, d)
    assert ok, out


def servers_on(make_fs):
    if os.geteuid() != 0:
        pytest.skip("mounting a filesystem needs root")
    which = [w for w in ("nfs", "smb") if backend_module_present(w)]
    if not which:
        pytest.skip("neither nfs.so nor smb.so is built")
    srv = PrivateServers(prefix="fedfuse-spc-")
    mounted = []
    try:
        for sub in SHARES:
            d = os.path.join(srv.state, sub)
            os.makedirs(d)
            make_fs(srv.state, d)
            mounted.append(d)
        srv.start(*which)
        yield srv
    finally:
        srv.stop("nfs", "smb")
        for d in mounted:
            run("umount", "-l", d)
        srv.cleanup()


@pytest.fixture(scope="module")
def full():
    yield from servers_on(tmpfs)


@pytest.fixture(scope="module")
def quota():
    yield from servers_on(btrfs_quota)


def write_all(path, size):
    """Write `size` bytes to `path` in 1 MiB writes, fsync, close; the errno that stopped it,
    or None."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for _ in range(size >> 20):
                os.write(fd, b"x" * MiB)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        return e.errno
    return None


def nfs_mount(srv, mount_factory, version):
    if not backend_module_present("nfs"):
        pytest.skip("nfs.so not built")
    uri, d = EXPORTS[version]
    m = mount_factory(ns_text=namespace_text([("/r", [srv.env[uri]], None)]))
    m.start()
    return m, srv.env[d]


def smb_mount(srv, mount_factory):
    if not backend_module_present("smb"):
        pytest.skip("smb.so not built")
    m = mount_factory(ns_text=namespace_text([("/r", [srv.env["SMB_USER_URI"]],
                                               {"credentials": srv.env["SMB_CRED"]})]))
    m.start()
    return m, srv.env["SMB_USER_DIR"]


def check_told(m, d, want, errnos):
    """Write `want` bytes where they do not fit: the writer gets one of `errnos`, the file on
    the server is not whole (short, or with a hole where a write was refused while later ones,
    already in flight, were not); then, the file removed, the same mount writes again (a full
    disk is not a dead server)."""
    err = write_all(os.path.join(m.mnt, "r", "big"), want)
    assert err in errnos, f"writing {want >> 20} MiB: errno {err}"
    with open(os.path.join(d, "big"), "rb") as f:
        stored = f.read()
    assert stored != b"x" * want, "the file is whole although the writer was told it is not"
    os.unlink(os.path.join(m.mnt, "r", "big"))
    assert write_all(os.path.join(m.mnt, "r", "after"), 1 * MiB) is None
    assert os.path.getsize(os.path.join(d, "after")) == 1 * MiB
    os.unlink(os.path.join(m.mnt, "r", "after"))


@pytest.mark.parametrize("version", ["nfs3", "nfs4"])
def test_nfs_enospc(full, mount_factory, version):
    """An NFS export on a full filesystem: the writer gets ENOSPC, the location stays up."""
    m, d = nfs_mount(full, mount_factory, version)
    check_told(m, d, 48 * MiB, {errno.ENOSPC})


@pytest.mark.parametrize("version", ["nfs3", "nfs4"])
def test_nfs_edquot(quota, mount_factory, version):
    """An NFS export over its quota: the writer gets EDQUOT (NFS3ERR_DQUOT, NFS4ERR_DQUOT)."""
    m, d = nfs_mount(quota, mount_factory, version)
    check_told(m, d, 8 * MiB, {errno.EDQUOT})


def test_smb_full_share(full, mount_factory):
    """The SMB share full: Samba says NT_STATUS_DISK_FULL; the writer gets ENOSPC."""
    check_told(*smb_mount(full, mount_factory), 48 * MiB, {errno.ENOSPC})


def test_smb_share_over_quota(quota, mount_factory):
    """The SMB share over its quota: Samba answers NT_STATUS_DISK_FULL for EDQUOT too (its
    map of errno to NT status), so the writer gets ENOSPC (or EDQUOT from a server that
    says NT_STATUS_QUOTA_EXCEEDED)."""
    check_told(*smb_mount(quota, mount_factory), 8 * MiB, FULL_ERRNOS)
