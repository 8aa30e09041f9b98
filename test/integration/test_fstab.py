# SPDX-License-Identifier: GPL-2.0-or-later
"""Mounting from /etc/fstab (DESIGN §2): mount(8) runs mount.fuse3, which runs fedfuse with the
fstab line's options. Each mount is set-user-ID-free and device-free (nosuid,nodev) unless the
administrator opts out, and fstab-only options are accepted and ignored.

The tests run `mount --fstab FILE MOUNTPOINT` (util-linux) in a mount namespace of their own,
where the build's daemon is bind-mounted as /usr/local/sbin/fedfuse (mount.fuse3 starts
"fedfuse" through /bin/sh with the shell's default PATH, which searches /usr/local/sbin first).
Nothing outside the namespace sees the mount."""

import os
import shutil
import subprocess

import pytest

from conftest import BUILDDIR, daemon_env, file_uri, is_mounted, write_namespace
from util import create, wait_until

DAEMON = os.path.join(BUILDDIR, "fedfuse", "fedfuse")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="mount(8) with an fstab file needs root"),
    pytest.mark.skipif(not (shutil.which("unshare") and shutil.which("mount.fuse3")),
                       reason="needs unshare (util-linux) and mount.fuse3 (fuse3)"),
]

# In the namespace: put the daemon on mount.fuse3's PATH, mount from the fstab file, print what
# the kernel says of the mount and what a file through it holds, unmount.
SCRIPT = r"""
set -u
bin=$1 fstab=$2 mnt=$3
mount --bind "$bin" /usr/local/sbin || exit 90
mount --fstab "$fstab" "$mnt" || exit 91
trap 'umount -l "$mnt" 2>/dev/null' EXIT
echo "fstype=$(findmnt -n -o FSTYPE --mountpoint "$mnt")"
echo "options=$(findmnt -n -o VFS-OPTIONS --mountpoint "$mnt")"
echo "content=$(cat "$mnt/x/hello")"
umount "$mnt" || exit 92
echo unmounted
"""


def mount_from_fstab(tmp_path, line_for):
    """Mount through an fstab line made by line_for(namespace_file, mountpoint); return the
    script's key=value output. Checks that `umount` stopped the daemon."""
    loc = tmp_path / "loc"
    loc.mkdir()
    create(str(loc / "hello"), b"through fstab")
    ns = tmp_path / "namespace.conf"
    write_namespace(str(ns), [("/x", [file_uri(str(loc))])])
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(DAEMON, bin_dir / "fedfuse")
    fstab = tmp_path / "fstab"
    fstab.write_text(line_for(str(ns), str(mnt)) + "\n")
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", SCRIPT,
                        "sh", str(bin_dir), str(fstab), str(mnt)],
                       env=daemon_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}{p.stderr}"
    out = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    assert "unmounted" in p.stdout.splitlines()
    # The daemon lived in the namespace; `umount` ends it.
    assert wait_until(lambda: not daemon_running(str(ns)), 10), "daemon still running after umount"
    assert not is_mounted(str(mnt))
    return out


def daemon_running(namespace_file):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if namespace_file.encode() in argv and any(a.endswith(b"fedfuse") for a in argv[:1]):
            return True
    return False


def flags(options):
    return set(options.split(","))


def test_fstab_line(tmp_path):
    """The line of the README: type fuse.fedfuse, fstab-only options ignored, nosuid,nodev."""
    out = mount_from_fstab(tmp_path, lambda ns, mnt:
                           f"{ns} {mnt} fuse.fedfuse "
                           "allow_other,default_permissions,_netdev,nofail 0 0")
    assert out["content"] == "through fstab"
    assert out["fstype"] == "fuse.fedfuse"
    assert {"nosuid", "nodev"} <= flags(out["options"]), out


def test_fstab_program_form(tmp_path):
    """The older form "fedfuse#NAMESPACE_FILE" with type fuse, and systemd's x-* options and
    noauto, which are for other programs."""
    out = mount_from_fstab(tmp_path, lambda ns, mnt:
                           f"fedfuse#{ns} {mnt} fuse allow_other,noauto,"
                           "x-systemd.automount,x-systemd.mount-timeout=30 0 0")
    assert out["content"] == "through fstab"
    assert {"nosuid", "nodev"} <= flags(out["options"]), out


def test_fstab_opt_out(tmp_path):
    """allow_suid and allow_dev lift nosuid and nodev (mount(8) never passes suid or dev on)."""
    out = mount_from_fstab(tmp_path, lambda ns, mnt:
                           f"{ns} {mnt} fuse.fedfuse allow_other,allow_suid,allow_dev 0 0")
    assert out["content"] == "through fstab"
    assert not {"nosuid", "nodev"} & flags(out["options"]), out


def mount_options(mnt):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mnt:
                return flags(fields[5])
    return None


@pytest.mark.parametrize("args,want", [
    ([], {"nosuid", "nodev"}),
    (["-o", "suid"], {"nodev"}),
    (["-o", "dev,suid"], set()),
    (["-o", "allow_dev"], {"nosuid"}),
])
def test_started_directly(mount_factory, tmp_path, args, want):
    """Started directly, -o suid / -o dev (or allow_*) lift the default nosuid,nodev."""
    loc = tmp_path / "loc"
    loc.mkdir()
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])], extra_args=args, name="direct")
    m.start()
    assert mount_options(m.mnt) & {"nosuid", "nodev"} == want


def test_helper_form_ignores_mount_fuse3_flags(mount_factory, tmp_path):
    """In the form mount.fuse3 uses (NAMESPACE_FILE MOUNTPOINT) dev and suid come from
    mount.fuse3 itself, on every mount: they are ignored."""
    loc = tmp_path / "loc"
    loc.mkdir()
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])], extra_args=["-o", "dev,suid"],
                      name="helper")
    m.ns_args = [m.namespace]
    m.start()
    assert mount_options(m.mnt) >= {"nosuid", "nodev"}
