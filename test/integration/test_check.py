# SPDX-License-Identifier: GPL-2.0-or-later
"""fedfuse --check NAMESPACE_FILE [MOUNTPOINT] (DESIGN §2): a dry run that validates the file,
probes every location within the timeout (one line each, exit 0 only when all answer) and,
given a running mount, prints what a reload would change, changing nothing."""

import os
import re
import time

from conftest import file_uri, run_daemon
from util import namespace_text, read_file

TIMEOUT = 2


def lines_of(p):
    return [line for line in p.stdout.splitlines() if line.strip()]


def test_check_all_up(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    ns = tmp_path / "ns.conf"
    ns.write_text(namespace_text([("/a", [file_uri(str(a))], None),
                                  ("/x/b", [file_uri(str(b)), file_uri(str(a))], None)]))
    p = run_daemon(["--check", str(ns)])
    assert p.returncode == 0, p.stdout + p.stderr
    out = lines_of(p)
    assert out[0] == f"{ns}: valid, 2 referrals"
    assert [line.split()[:3] for line in out[1:]] == [
        ["up", "/a", file_uri(str(a))], ["up", "/x/b", file_uri(str(b))],
        ["up", "/x/b", file_uri(str(a))]]


def test_check_reports_broken_location(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    gone = tmp_path / "gone"
    ns = tmp_path / "ns.conf"
    ns.write_text(namespace_text([("/a", [file_uri(str(a))], None),
                                  ("/gone", [file_uri(str(gone))], None)]))
    p = run_daemon(["--check", "--namespace", str(ns)])
    assert p.returncode == 1
    out = lines_of(p)
    assert out[1].startswith(f"up    /a  {file_uri(str(a))}  ")
    assert out[2].startswith(f"down  /gone  {file_uri(str(gone))}  ")
    assert "No such file or directory" in out[2]


def test_check_silent_location_within_timeout(tmp_path):
    """A location whose server never answers is reported down within its timeout (+2 s);
    the others are probed meanwhile, not after it."""
    a = tmp_path / "a"
    a.mkdir()
    faults = tmp_path / "faults"
    faults.write_text("mount hang\n")
    ns = tmp_path / "ns.conf"
    ns.write_text(namespace_text([("/a", [file_uri(str(a))], None),
                                  ("/silent", [f"mem://chk{os.getpid()}/s?faults={faults}"],
                                   None)], {"timeout": TIMEOUT}))
    t0 = time.monotonic()
    p = run_daemon(["--check", str(ns)])
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stdout + p.stderr
    out = lines_of(p)
    assert out[1].startswith("up    /a  ")
    assert out[2].startswith("down  /silent  ")
    assert took < TIMEOUT + 2 + 1, f"--check took {took:.1f} s"


def test_check_bad_file(tmp_path):
    ns = tmp_path / "ns.conf"
    ns.write_text("[/a]\nlocations=file:///tmp\ntimeout=soon\n")
    p = run_daemon(["--check", str(ns)])
    assert p.returncode == 1
    assert p.stdout == ""
    assert re.search(rf"^{re.escape(str(ns))}:3: .*soon", p.stderr, re.M), p.stderr


def test_check_reload_diff(mount_factory, tmp_path):
    """With a mount point: what a reload would add, remove and change; nothing changes."""
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    (a / "f").write_bytes(b"kept")
    m = mount_factory(ns_text=namespace_text([("/a", [file_uri(str(a))], None),
                                              ("/b", [file_uri(str(b))], None)]),
                      name="reload")
    m.start()
    with open(os.path.join(m.mnt, ".fedfuse", "namespace")) as f:
        before = f.read()
    # the mount's own file, edited: /b removed, /c added, /a's timeout changed
    with open(m.namespace, "w") as f:
        f.write(namespace_text([("/a", [file_uri(str(a))], {"timeout": 7}),
                                ("/c", [file_uri(str(c))], None)]))
    p = run_daemon(["--check", m.namespace, m.mnt])
    assert p.returncode == 0, p.stdout + p.stderr
    out = lines_of(p)
    i = out.index(f"a reload of {m.mnt} would change:")
    diff = out[i + 1:]
    assert any(re.fullmatch(r"  change  /a: timeout: \d+ -> 7", line) for line in diff), diff
    assert any(line.startswith(f"  add     /c: locations={file_uri(str(c))} ")
               for line in diff), diff
    assert "  remove  /b" in diff
    assert len(diff) == 3, diff
    assert not any(line.startswith("note:") for line in out), out
    # nothing changed in the running mount
    with open(os.path.join(m.mnt, ".fedfuse", "namespace")) as f:
        assert f.read() == before
    assert sorted(os.listdir(m.mnt)) == ["a", "b"]
    assert read_file(os.path.join(m.mnt, "a", "f")) == b"kept"


def test_check_reload_nothing_and_not_a_mount(mount_factory, tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    m = mount_factory(referrals=[("/a", [file_uri(str(a))])], name="same")
    m.start()
    p = run_daemon(["--check", m.namespace, m.mnt])
    assert p.returncode == 0, p.stdout + p.stderr
    assert lines_of(p)[-2:] == [f"a reload of {m.mnt} would change:", "  nothing"]
    p = run_daemon(["--check", m.namespace, str(tmp_path)])
    assert p.returncode == 1
    assert f"{tmp_path} is not a fedfuse mount" in p.stderr
