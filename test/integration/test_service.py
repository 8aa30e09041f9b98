# SPDX-License-Identifier: GPL-2.0-or-later
"""Running as a systemd service (DESIGN §2): the unit conf/fedfuse@.service passes
`systemd-analyze verify`; the daemon tells a Type=notify unit when the mount is served, when it
reloads and when it stops (sd_notify, through $NOTIFY_SOCKET as systemd gives it); when its
stderr is the journal's stream ($JOURNAL_STREAM) each line carries its syslog priority."""

import os
import re
import shutil
import signal
import socket
import subprocess

import pytest

from conftest import BUILDDIR, file_uri, is_mounted
from util import namespace_text, wait_until

DAEMON = os.path.join(BUILDDIR, "fedfuse", "fedfuse")


def built_with_systemd():
    try:
        with open(os.path.join(BUILDDIR, "config.h")) as f:
            return re.search(r"^#define HAVE_LIBSYSTEMD 1$", f.read(), re.M) is not None
    except OSError:
        return False


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_unit_verifies(tmp_path):
    """The unit as make builds it, with the daemon's path pointing at this build, is a valid
    unit to systemd: no error and no warning (an unknown key is a warning)."""
    unit = os.path.join(BUILDDIR, "conf", "fedfuse@.service")
    assert os.path.exists(unit), "make builds conf/fedfuse@.service"
    with open(unit) as f:
        text = f.read()
    m = re.search(r"^ExecStart=(\S+)/fedfuse ", text, re.M)
    assert m, text
    text = text.replace(m.group(1) + "/fedfuse ", DAEMON + " ")
    instance = tmp_path / "fedfuse@srv-fed.service"
    instance.write_text(text)
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr.strip(), p.stdout + p.stderr
    # what the unit promises
    assert "Type=notify" in text and "ExecReload=/bin/kill -HUP $MAINPID" in text
    assert "After=network-online.target" in text
    assert "--namespace=/etc/fedfuse/%i.conf %f" in text
    # no setting that would give the daemon a mount namespace of its own (its mount would be
    # invisible to the system)
    for key in ("PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateDevices",
                "ProtectKernelTunables", "ProtectKernelModules", "ProtectControlGroups",
                "ReadOnlyPaths", "InaccessiblePaths", "PrivateMounts"):
        assert not re.search(rf"^{key}=", text, re.M), key


class NotifySocket:
    """The socket systemd listens on for a Type=notify service."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.messages = []

    def receive(self):
        try:
            while True:
                self.messages.append(self.sock.recv(4096).decode())
        except (socket.timeout, BlockingIOError):
            pass
        return self.messages

    def wait_for(self, pred, timeout=10):
        return wait_until(lambda: any(pred(m) for m in self.receive()), timeout)


@pytest.mark.skipif(not built_with_systemd(), reason="built without libsystemd")
def test_sd_notify(mount_factory, tmp_path, monkeypatch):
    loc = tmp_path / "loc"
    loc.mkdir()
    ns = namespace_text([("/a", [file_uri(str(loc))], None)])
    sock = NotifySocket(str(tmp_path / "notify.sock"))
    monkeypatch.setenv("NOTIFY_SOCKET", sock.path)
    m = mount_factory(ns_text=ns, name="notify")
    m.start()
    assert sock.wait_for(lambda s: "READY=1" in s.split("\n"))
    ready = next(s for s in sock.messages if "READY=1" in s.split("\n"))
    assert f"STATUS=serving {m.namespace} on {m.mnt}" in ready.split("\n")
    assert is_mounted(m.mnt)

    # a reload: RELOADING=1 (with the time), then READY=1 again
    sock.messages.clear()
    m.proc.send_signal(signal.SIGHUP)
    assert sock.wait_for(lambda s: "STATUS=namespace reloaded" in s.split("\n"))
    assert any(re.search(r"^RELOADING=1\nMONOTONIC_USEC=\d+$", s) for s in sock.messages)
    # a file with an error: the namespace in force is kept, and systemd is told
    sock.messages.clear()
    with open(m.namespace, "a") as f:
        f.write("[/broken\n")
    m.expect_log(r"keeping the namespace in force")
    m.proc.send_signal(signal.SIGHUP)
    assert sock.wait_for(lambda s: s.startswith("READY=1\nSTATUS=reload failed"))

    sock.messages.clear()
    m.proc.send_signal(signal.SIGTERM)
    assert m.wait() == 0
    assert "STOPPING=1" in sock.receive()


def test_journal_priorities(mount_factory, tmp_path, monkeypatch):
    """With stderr the journal's stream, lines start with <PRIORITY> (sd-daemon(3)), so the
    journal files each at its level; otherwise they read "fedfuse: LEVEL: ..."."""
    loc = tmp_path / "loc"
    loc.mkdir()
    m = mount_factory(referrals=[("/a", [file_uri(str(loc))])], name="journal")
    open(m.log, "a").close()
    st = os.stat(m.log)
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
    m.start()
    assert wait_until(lambda: re.search(r"^<6>serving \S+ on ", m.log_text(), re.M), 5), \
        m.log_text()
    assert not re.search(r"^fedfuse: info:", m.log_text(), re.M)
