# SPDX-License-Identifier: GPL-2.0-or-later
"""fedfuse-junction (DESIGN §8) on temp dirs: add, list, show, check and remove for each junction
format, checked on disk (xattrs, modes, symlink targets), its errors, and status on a real mount.
The daemon following junctions is tested elsewhere; fedfs junctions (trusted.* xattrs) need root,
which CI is. `nsdb` runs against the NSDB (slapd provider and consumer) of the test servers."""

import base64
import fcntl
import os
import re
import select
import socket
import stat
import subprocess
import termios
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from conftest import BUILDDIR, SRCDIR, daemon_env, read_servers_env
from servers_util import poll

TOOL = os.path.join(BUILDDIR, "tools", "fedfuse-junction")
FEDFUSE_XATTR = "user.fedfuse.locations"
FEDFS_XATTR = "trusted.junction.nfs"
FEDFS_MODE_XATTR = "trusted.junction.mode"

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="fedfs junctions use trusted.* xattrs: root only")


def tool(*args, status=0):
    """Run fedfuse-junction; it must exit with `status`. Returns (stdout, stderr)."""
    if not os.access(TOOL, os.X_OK):
        pytest.fail(f"{TOOL} is not built (set FEDFUSE_BUILDDIR)", pytrace=False)
    # it loads the backends, as the daemon does, to check locations by their own rules
    p = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60, env=daemon_env())
    assert p.returncode == status, (
        f"fedfuse-junction {' '.join(map(str, args))}: exit {p.returncode}, wanted {status}\n"
        f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p.stdout, p.stderr


def fails(*args, status=1, says=()):
    """A run that must fail with `status`, printing nothing on stdout and each of `says`."""
    out, err = tool(*args, status=status)
    assert out == ""
    assert err.startswith("fedfuse-junction: "), err
    for s in (says,) if isinstance(says, str) else says:
        assert s in err, f"{s!r} not in {err!r}"
    return err


def xattrs(path):
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in os.listxattr(path, follow_symlinks=False)}


def show(path):
    """`show PATH` as a dict of its fields ("location" a list)."""
    out, _ = tool("show", path)
    d = {"location": []}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "location":
            d["location"].append(value)
        else:
            d[key] = value
    return d


def perm(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


# ---- fedfuse ---------------------------------------------------------------------------------

def test_fedfuse_add_show_remove(tmp_path):
    j = tmp_path / "j"
    out, _ = tool("add", j, "file:///srv/a", "nfs://h/export?version=4", "smb://h2/share/dir")
    assert out == f"created fedfuse junction {j}\n"
    # a missing PATH is created as a directory
    assert stat.S_ISDIR(os.lstat(j).st_mode)
    assert xattrs(j) == {FEDFUSE_XATTR:
                         b"file:///srv/a;nfs://h/export?version=4;smb://h2/share/dir"}
    assert show(j) == {"path": str(j), "format": "fedfuse",
                       "location": ["file:///srv/a", "nfs://h/export?version=4",
                                    "smb://h2/share/dir"],
                       "mode": "0755", "ttl": "none (the namespace's junction-cache-ttl)"}

    out, _ = tool("remove", j)
    assert out == f"removed fedfuse junction {j}\n"
    assert xattrs(j) == {}
    assert os.listdir(j) == []
    fails("remove", j, says=f"{j} is not a junction")
    fails("show", j, says=f"{j} is not a junction")


def test_fedfuse_existing_dir_mode_kept(tmp_path):
    j = tmp_path / "j"
    j.mkdir()
    os.chmod(j, 0o750)
    # "--format" anywhere, "--" before a PATH, a ';' inside a URI written as "\;"
    tool("add", "--format", "fedfuse", "--", j, "file:///a;b", "nfs://h:3049/x")
    assert os.getxattr(j, FEDFUSE_XATTR) == b"file:///a\\;b;nfs://h:3049/x"
    assert perm(j) == 0o750
    assert show(j)["location"] == ["file:///a;b", "nfs://h:3049/x"]
    tool("remove", str(j) + "/")
    assert perm(j) == 0o750


def test_fedfuse_made_by_hand(tmp_path):
    """A junction made with setfattr, as users will, with white space and a trailing ';'."""
    j = tmp_path / "j"
    j.mkdir()
    os.setxattr(j, FEDFUSE_XATTR, b" file:///srv/x ;\tsmb://nas/media;\n")
    assert show(j)["location"] == ["file:///srv/x", "smb://nas/media"]


# ---- fedfs -----------------------------------------------------------------------------------

def fedfs_locations(doc):
    """(host, port, components, read order) of each <location> of nfsref's XML."""
    root = ET.fromstring(doc)
    assert root.tag == "junction"
    locs = []
    for loc in root.find("fileset").findall("location"):
        host = loc.find("host")
        locs.append((host.get("name"), host.get("port"),
                     [c.text for c in loc.find("path").findall("component")],
                     loc.find("read").get("order")))
    return root, locs


@needs_root
def test_fedfs_add_show_remove(tmp_path):
    j = tmp_path / "j"
    j.mkdir()
    os.chmod(j, 0o750)
    out, _ = tool("add", j, "nfs://filer1.example.org:20049/export/alpha",
                  "nfs://filer2.example.org/export/alpha", "nfs://[::1]/", "--format=fedfs")
    assert out == f"created fedfs junction {j}\n"
    # as nfsref add leaves it: mode 01000, the XML, the saved mode as octal text
    assert stat.S_IMODE(os.lstat(j).st_mode) == 0o1000
    x = xattrs(j)
    assert x[FEDFS_MODE_XATTR] == b"750"
    assert set(x) == {FEDFS_XATTR, FEDFS_MODE_XATTR}
    doc = x[FEDFS_XATTR]
    assert doc.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n')
    root, locs = fedfs_locations(doc)
    assert root.find("savedmode").get("bits") == "750"
    assert locs == [("filer1.example.org", "20049", ["export", "alpha"], "0"),
                    ("filer2.example.org", None, ["export", "alpha"], "1"),
                    ("::1", None, [], "2")]
    for loc in root.find("fileset").findall("location"):
        assert loc.find("currency").text == "-1"
        assert loc.find("validfor").text == "0"
        assert loc.find("genflags").attrib == {"writable": "false", "going": "false",
                                               "split": "true"}

    assert show(j) == {"path": str(j), "format": "fedfs",
                       "location": ["nfs://filer1.example.org:20049/export/alpha",
                                    "nfs://filer2.example.org/export/alpha", "nfs://[::1]/"],
                       "mode": "0750", "ttl": "none (the namespace's junction-cache-ttl)"}

    out, _ = tool("remove", j)
    assert out == f"removed fedfs junction {j} (mode 0750 restored)\n"
    assert stat.S_IMODE(os.lstat(j).st_mode) == 0o750
    assert xattrs(j) == {}


@needs_root
def test_fedfs_made_by_hand(tmp_path):
    """nfsref's XML set with setfattr, with a read rank and a validfor; then malformed ones."""
    j = tmp_path / "j"
    j.mkdir()
    doc = (b'<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n  <savedmode bits="700"/>\n'
           b'  <fileset>\n'
           b'    <location><host name="b"/><path><component>e</component></path>'
           b'<read rank="1" order="0"/><validfor>90</validfor></location>\n'
           b'    <location><host name="a" port="2049"/><path><component>e</component></path>'
           b'<read rank="0" order="0"/><validfor>300</validfor></location>\n'
           b'  </fileset>\n</junction>\n')
    os.setxattr(j, FEDFS_XATTR, doc)
    os.chmod(j, 0o1000)
    d = show(j)
    assert d["format"] == "fedfs"
    assert d["location"] == ["nfs://a/e", "nfs://b/e"]
    assert d["mode"] == "0700"  # from <savedmode>, there is no trusted.junction.mode
    assert d["ttl"] == "90 s"

    # without mode 01000 the daemon does not look at trusted.*: neither does the tool
    os.chmod(j, 0o755)
    fails("show", j, says="is not a junction")
    os.chmod(j, 0o1000)

    # malformed: shown as what is wrong, listed as invalid, still removable
    os.setxattr(j, FEDFS_XATTR, b"<junction><fileset><location><host name='h'/><path>"
                b"<component>..</component></path></location></fileset></junction>")
    fails("show", j, says=(f"{j}: invalid fedfs junction: ", "is '.' or '..'"))
    out, _ = tool("list", tmp_path, status=1)
    assert out.startswith(f"{j}\tfedfs\tinvalid: trusted.junction.nfs: ")
    os.setxattr(j, FEDFS_XATTR, b"<junction><fileset><location>" * 3)
    fails("check", j, says="invalid fedfs junction")
    os.setxattr(j, FEDFS_MODE_XATTR, b"700")
    tool("remove", j)
    assert perm(j) == 0o700 and xattrs(j) == {}


@needs_root
def test_fedfs_nsdb(tmp_path):
    """An NSDB junction as nfsref writes it: its one location is the FSN on its NSDB."""
    j = tmp_path / "j"
    j.mkdir()
    os.setxattr(j, FEDFS_XATTR, b'<junction><savedmode bits="755"/><fileset>'
                b'<name fsnuuid="D2B09895-98ff-415e-ac73-565fad7b429b" '
                b'nsdbname="nsdb.example.net"/></fileset></junction>')
    os.chmod(j, 0o1000)
    fsn = "fedfs://nsdb.example.net/d2b09895-98ff-415e-ac73-565fad7b429b"
    out, _ = tool("list", tmp_path)
    assert out == f"{j}\tfedfs\t{fsn}\n"
    out, _ = tool("show", j)
    assert fsn in out
    # a fileset name that is no UUID is an invalid junction
    bad = tmp_path / "bad"
    bad.mkdir()
    os.setxattr(bad, FEDFS_XATTR, b'<junction><fileset><name fsnuuid="x" '
                b'nsdbname="nsdb.example.net"/></fileset></junction>')
    os.chmod(bad, 0o1000)
    fails("show", bad, says="<name fsnuuid='x'> is not a UUID")
    tool("remove", j)
    assert perm(j) == 0o755


@needs_root
def test_fedfs_cannot_hold(tmp_path):
    j = tmp_path / "j"
    fails("add", "--format", "fedfs", j, "nfs://h/x", "smb://h/share",
          says="'smb://h/share': fedfs junctions hold nfs:// locations only")
    fails("add", "--format", "fedfs", j, "nfs://h/x?version=4",
          says="cannot hold the option 'version=4'")
    assert not os.path.lexists(j)  # nothing was made
    # ?nfsport= is the port
    tool("add", "--format", "fedfs", j, "nfs://h/x?nfsport=3049")
    assert show(j)["location"] == ["nfs://h:3049/x"]


# ---- msdfs -----------------------------------------------------------------------------------

def test_msdfs_add_show_remove(tmp_path):
    j = tmp_path / "j"
    out, _ = tool("add", "--format", "msdfs", j, "smb://srv/share/dir", "smb://srv2/s%20t")
    assert out == f"created msdfs junction {j}\n"
    assert os.readlink(j) == "msdfs:srv\\share\\dir,srv2\\s t"
    assert show(j) == {"path": str(j), "format": "msdfs",
                       "location": ["smb://srv/share/dir", "smb://srv2/s%20t"],
                       "mode": "0755", "ttl": "none (the namespace's junction-cache-ttl)"}
    out, _ = tool("remove", j)
    assert out == f"removed msdfs junction {j} (now an empty directory)\n"
    assert stat.S_ISDIR(os.lstat(j).st_mode) and os.listdir(j) == []


def test_msdfs_replaces_empty_dir(tmp_path):
    j = tmp_path / "j"
    j.mkdir()
    tool("add", "-f", "msdfs", j, "smb://srv/share")
    assert os.readlink(j) == "msdfs:srv\\share"
    # a junction made by Samba's admins, any case of the prefix
    k = tmp_path / "k"
    os.symlink("MSDFS:\\\\srv1\\a,srv2/b/c", k)
    assert show(k)["location"] == ["smb://srv1/a", "smb://srv2/b/c"]


def test_msdfs_errors(tmp_path):
    j = tmp_path / "j"
    fails("add", "--format", "msdfs", j, "nfs://h/x",
          says="'nfs://h/x': msdfs junctions hold smb:// locations only")
    fails("add", "--format", "msdfs", j, "smb://h:4445/s", says="cannot hold a port")
    fails("add", "--format", "msdfs", j, "file:///srv", says="smb:// locations only")
    assert not os.path.lexists(j)
    j.mkdir()
    (j / "f").write_text("x")
    fails("add", "--format", "msdfs", j, "smb://h/s", says=f"{j} is not empty")
    f = tmp_path / "file"
    f.write_text("x")
    fails("add", "--format", "msdfs", f, "smb://h/s",
          says=f"{f} exists and is not an empty directory")
    # a symlink that is no junction is left alone
    link = tmp_path / "link"
    os.symlink("elsewhere", link)
    fails("remove", link, says=f"{link} is a symbolic link, not an msdfs junction")
    fails("show", link, says="is not a junction")
    assert os.readlink(link) == "elsewhere"
    # malformed: invalid, removable
    bad = tmp_path / "bad"
    os.symlink("msdfs:srv\\..\\x", bad)
    fails("show", bad, says=(f"{bad}: invalid msdfs junction:", "'.' or '..'"))
    tool("remove", bad)
    assert stat.S_ISDIR(os.lstat(bad).st_mode)


# ---- list ------------------------------------------------------------------------------------

def test_list_every_format(tmp_path):
    top = tmp_path / "top"
    (top / "d1" / "d2").mkdir(parents=True)
    (top / "plain").mkdir()
    (top / "file").write_text("x")
    tool("add", top / "d1" / "d2" / "deep", "file:///srv/deep")
    tool("add", top / "a-fedfuse", "file:///srv/a", "nfs://h/a")
    tool("add", "--format", "msdfs", top / "m-msdfs", "smb://srv/share")
    os.symlink("../somewhere", top / "not-a-junction")
    # a symlink to a directory holding a junction is not followed
    tool("add", tmp_path / "outside-j", "file:///srv/o")
    os.symlink(tmp_path, top / "loop")
    want = [f"{top}/a-fedfuse\tfedfuse\tfile:///srv/a nfs://h/a",
            f"{top}/d1/d2/deep\tfedfuse\tfile:///srv/deep",
            f"{top}/m-msdfs\tmsdfs\tsmb://srv/share"]
    if os.geteuid() == 0:
        tool("add", "--format", "fedfs", top / "f-fedfs", "nfs://h/e")
        want.insert(2, f"{top}/f-fedfs\tfedfs\tnfs://h/e")
    out, err = tool("list", top)
    assert out.splitlines() == want
    assert err == ""
    # DIR itself can be a junction
    out, _ = tool("list", top / "a-fedfuse")
    assert out == f"{top}/a-fedfuse\tfedfuse\tfile:///srv/a nfs://h/a\n"


def test_list_problems(tmp_path):
    (tmp_path / "ok").mkdir()
    os.setxattr(tmp_path / "ok", FEDFUSE_XATTR, b"file:///x")
    bad = tmp_path / "bad"
    bad.mkdir()
    os.setxattr(bad, FEDFUSE_XATTR, b"nfs://h/../x")
    weird = tmp_path / "new\nline"
    weird.mkdir()
    os.setxattr(weird, FEDFUSE_XATTR, b"file:///w")
    out, _ = tool("list", tmp_path, status=1)
    assert out.splitlines() == [
        f"{bad}\tfedfuse\tinvalid: user.fedfuse.locations: path '/../x' in 'nfs://h/../x' "
        "is not normalised",
        f"{tmp_path}/new\\x0aline\tfedfuse\tfile:///w",  # one line per junction, always
        f"{tmp_path}/ok\tfedfuse\tfile:///x",
    ]
    fails("list", tmp_path / "missing", says="No such file or directory")
    fails("list", tmp_path, tmp_path, status=2, says="list needs exactly one DIR")


# ---- check -----------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check(tmp_path):
    srv = tmp_path / "srv"
    srv.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    closed = free_port()
    try:
        j = tmp_path / "up"
        tool("add", j, f"file://{srv}", f"nfs://127.0.0.1:{port}/x",
             f"nfs://127.0.0.1/y?nfsport={port}", f"smb://127.0.0.1:{port}/s")
        out, err = tool("check", j)
        lines = out.splitlines()
        assert len(lines) == 4 and all(line.startswith("ok    ") for line in lines), out
        assert f"TCP 127.0.0.1 port {port} answered" in lines[1]
        assert f"TCP 127.0.0.1 port {port} answered" in lines[2]
        assert err == ""

        k = tmp_path / "down"
        tool("add", k, f"nfs://127.0.0.1:{port}/x", f"smb://127.0.0.1:{closed}/s",
             f"file://{srv}/missing")
        out, err = tool("check", "--timeout", "2", k, status=1)
        lines = out.splitlines()
        assert lines[0].startswith("ok    ")
        assert lines[1] == (f"FAIL  smb://127.0.0.1:{closed}/s: TCP 127.0.0.1 port {closed}: "
                            "Connection refused")
        assert lines[2] == f"FAIL  file://{srv}/missing: {srv}/missing: No such file or directory"
        assert "2 of 3 locations" in err
    finally:
        listener.close()
    fails("check", j, "--timeout", "zero", status=2, says="not a number of seconds")
    fails("check", tmp_path / "nope", says="No such file or directory")


# ---- errors ----------------------------------------------------------------------------------

def test_add_errors(tmp_path):
    j = tmp_path / "j"
    fails("add", j, "ftp://h/x", says="backend 'ftp' is not available (no ftp.so in ")
    # what a scheme needs past the URI rules, its backend says
    fails("add", j, "smb://h/", says="smb URI 'smb://h/' names no share")
    fails("add", j, "nfs://h/x?nfsport=0", says="nfsport=0: not a port number")
    fails("add", j, "file://elsewhere/x", says="file:// location file://elsewhere/x names a host")
    fails("add", j, "nfs://h/a/../b", says="path '/a/../b' in 'nfs://h/a/../b' is not normalised")
    fails("add", j, "smb://user:secret@h/s", says="user name or password")
    fails("add", j, "file:///a", "file:///a", says="location 'file:///a' is given twice")
    fails("add", j, *[f"file:///d{i}" for i in range(257)], says="at most 256")
    assert not os.path.lexists(j)  # nothing made on any error
    fails("add", j, status=2, says="add needs a PATH and at least one LOCATION")
    fails("add", "--format", "nfsref", j, "nfs://h/x", status=2, says="unknown format 'nfsref'")
    fails("add", j, "file:///x", "--bogus", status=2, says="unknown option '--bogus'")

    # a non-empty directory, a file, a symlink, a missing parent, an existing junction
    j.mkdir()
    (j / "f").write_text("x")
    fails("add", j, "file:///x", says=f"{j} is not empty")
    assert xattrs(j) == {}
    fails("add", j / "f", "file:///x", says=f"{j}/f is not a directory")
    os.symlink(j, tmp_path / "l")
    fails("add", tmp_path / "l", "file:///x", says="is a symbolic link, not a directory")
    fails("add", tmp_path / "no" / "such", "file:///x",
          says=f"cannot create directory {tmp_path}/no/such: No such file or directory")
    k = tmp_path / "k"
    tool("add", k, "file:///x")
    fails("add", k, "file:///y", says=f"{k} is already a junction; remove it first")
    fails("add", "--format", "msdfs", k, "smb://h/s", says="is already a junction")
    assert os.getxattr(k, FEDFUSE_XATTR) == b"file:///x"


def test_usage(tmp_path):
    out, _ = tool("--help")
    assert out.startswith("Usage: fedfuse-junction COMMAND")
    assert tool("show", "--help")[0] == out
    out, _ = tool("--version")
    assert out.startswith("fedfuse-junction ")
    fails(status=2, says="no command given")
    fails("frobnicate", status=2, says="unknown command 'frobnicate'")
    fails("show", status=2, says="show needs exactly one PATH")
    fails("remove", tmp_path / "missing", says="No such file or directory")


# ---- status ----------------------------------------------------------------------------------

def test_status(tmp_path, mount_factory):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    m = mount_factory(referrals=[("/a", [f"file://{a}"]),
                                 ("/x/b", [f"file://{b}", f"file://{a}"])])
    m.start()
    assert os.listdir(os.path.join(m.mnt, "a")) == []
    out, err = tool("status", m.mnt)
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"fedfuse mount {m.mnt}"
    assert lines[2] == "Locations"
    header = lines[3].split()
    assert header[:3] == ["REFERRAL", "LOCATION", "STATE"]
    rows = [line.split() for line in lines[4:7]]
    assert [r[:2] for r in rows] == [["/a", f"file://{a}"], ["/x/b", f"file://{b}"],
                                     ["/x/b", f"file://{a}"]]
    assert rows[0][2] == "up"
    # columns line up
    assert lines[4].index(f"file://{a}") == lines[3].index("LOCATION")
    assert "Statistics (per location in use)" in lines and "Namespace" in lines
    assert "Traffic (operations sent to each referral's locations)" in lines
    assert f"  file={m.namespace}" in lines
    assert any(line.startswith("  /x/b referral locations=") for line in lines)

    fails("status", tmp_path, says=f"{tmp_path} is not a fedfuse mount")
    fails("status", tmp_path / "missing", says="No such file or directory")


# ---- nsdb ------------------------------------------------------------------------------------

def schema_must(cls):
    """The MUST attributes of objectClass `cls` (its superclasses' included) in
    conf/fedfs-nsdb.ldif, the schema the test NSDB runs."""
    with open(os.path.join(SRCDIR, "conf", "fedfs-nsdb.ldif")) as f:
        text = re.sub(r"\n ", "", f.read())  # LDIF continuation lines
    classes = {}
    for line in text.splitlines():
        if not line.startswith("olcObjectClasses:"):
            continue
        name = re.search(r"NAME '([^']+)'", line).group(1)
        sup = re.search(r"SUP (\w+)", line)
        must = re.search(r"MUST \(([^)]*)\)|MUST (\w+)", line)
        attrs = set()
        if must:
            attrs = {a.strip() for a in (must.group(1) or must.group(2)).split("$")}
        classes[name] = (sup.group(1) if sup else None, attrs)
    out = set()
    while cls in classes:
        cls, attrs = classes[cls][0], classes[cls][1]
        out |= attrs
    assert out, "no MUST attributes found in the schema"
    return out


def parse_ldif(text):
    """ldapsearch -LLL output as a list of {attribute: [values]} ("dn" included)."""
    entries = []
    for block in text.strip().split("\n\n"):
        if not block.strip():
            continue
        entry = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if value.startswith(":"):
                value = base64.b64decode(value[1:].strip()).decode()
            entry.setdefault(key, []).append(value.strip())
        entries.append(entry)
    return entries


class NsdbTool:
    """`fedfuse-junction nsdb` against the test servers' NSDB, as its administrator; every FSN
    a test creates is deleted afterwards."""

    def __init__(self, env, tmp_path):
        missing = [k for k in ("NSDB_HOST", "NSDB_PORT", "NSDB_CONSUMER_PORT", "NSDB_NCE",
                               "NSDB_ADMIN_DN", "NSDB_ADMIN_PW_FILE") if not env.get(k)]
        if missing:
            pytest.fail(f"the test servers give no {', '.join(missing)} "
                        "(run scripts/test-servers start)", pytrace=False)
        self.host = env["NSDB_HOST"]
        self.server = f"{self.host}:{env['NSDB_PORT']}"
        self.consumer = f"{self.host}:{env['NSDB_CONSUMER_PORT']}"
        self.nce = env["NSDB_NCE"]
        self.admin = env["NSDB_ADMIN_DN"]
        self.admin_pw_file = env["NSDB_ADMIN_PW_FILE"]
        with open(self.admin_pw_file) as f:
            self.password = f.read()
        # a copy of the caller's own, as the tool wants it; written as an editor would, with a
        # newline at the end (not part of the password)
        self.pw_file = tmp_path / "admin.pw"
        fd = os.open(self.pw_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password + "\n")
        self.fsns = []

    def run(self, *args, status=0, env=None, write=True, nsdb=None):
        """fedfuse-junction nsdb [--nsdb, -D, -y] ARGS: it must exit with `status`. Returns
        (stdout, stderr), in neither of which the password may appear. It runs in a session of
        its own: without -y there is no terminal to ask a password on."""
        if not os.access(TOOL, os.X_OK):
            pytest.fail(f"{TOOL} is not built (set FEDFUSE_BUILDDIR)", pytrace=False)
        argv = [TOOL, "nsdb"]
        if nsdb is not False:
            argv += ["--nsdb", nsdb or self.server]
        if write:
            argv += ["-D", self.admin, "-y", self.pw_file]
        argv += [str(a) for a in args]
        p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=60, env=dict(daemon_env(), **(env or {})),
                           start_new_session=True)
        shown = " ".join(map(str, argv))
        assert p.returncode == status, (f"{shown}: exit {p.returncode}, wanted {status}\n"
                                        f"stdout: {p.stdout}\nstderr: {p.stderr}")
        assert self.password not in p.stdout and self.password not in p.stderr, shown
        if status:
            assert p.stdout == "" and p.stderr.startswith("fedfuse-junction: "), p.stderr
        return p.stdout, p.stderr

    def create_fsn(self, *args):
        out, _ = self.run("create-fsn", *args)
        fsn = out.strip()
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", fsn)
        self.fsns.append(fsn)
        return fsn

    def list(self, *fsns, **kw):
        """`list` as [(fsn, ttl, [(fsl, rank, order, going, uri)...])...]."""
        out, _ = self.run("list", *fsns, write=False, **kw)
        got = []
        for line in out.splitlines():
            f = line.split("\t")
            if f[0]:
                assert len(f) == 2 and f[1].startswith("ttl="), line
                got.append((f[0], int(f[1][4:]), []))
                continue
            going = f[4] == "going"
            assert len(f) == (6 if going else 5), line
            assert f[2].startswith("rank=") and f[3].startswith("order="), line
            got[-1][2].append((f[1], int(f[2][5:]), int(f[3][6:]), going, f[-1]))
        return got

    def fsn_dn(self, fsn):
        return f"fedfsFsnUuid={fsn},{self.nce}"

    def ldapsearch(self, base, port_of=None, scope="sub"):
        """The entries at and below `base` as any LDAP client reads them (anonymously), or None
        when there is no such entry."""
        p = subprocess.run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H",
                            f"ldap://{port_of or self.server}", "-b", base, "-s", scope],
                           capture_output=True, text=True, timeout=30)
        if p.returncode == 32:  # noSuchObject
            return None
        assert p.returncode == 0, p.stderr
        return parse_ldif(p.stdout)

    def cleanup(self):
        for fsn in self.fsns:
            subprocess.run(["ldapdelete", "-x", "-H", f"ldap://{self.server}", "-D",
                            self.admin, "-y", self.admin_pw_file, "-r", self.fsn_dn(fsn)],
                           capture_output=True, timeout=30)


@pytest.fixture
def nsdb(tmp_path):
    n = NsdbTool(read_servers_env(), tmp_path)
    yield n
    n.cleanup()


def test_nsdb_round_trip(nsdb):
    """create-fsn, add-fsl, update-fsl, remove-fsl, delete-fsn, each seen with list and with a
    plain ldapsearch: the entries are RFC 7532's, with every attribute the schema makes
    mandatory."""
    fsn = nsdb.create_fsn("--ttl", "60")
    a = nsdb.run("add-fsl", fsn, "nfs://127.0.0.1:12049//export/a")[0].strip()
    b = str(uuid.uuid4())
    out, _ = nsdb.run("add-fsl", fsn, "nfs://filer2.example.org/export/a", "--fsl-uuid",
                      b.upper(), "--rank=1", "--order", "4")
    assert out == f"{b}\n"
    c = nsdb.run("add-fsl", "--going", fsn, "smb://nas.example.org/share/a", "--order", "2")[
        0].strip()
    # the daemon's order: read rank, then read order, then UUID
    assert nsdb.list(fsn) == [(fsn, 60, [(a, 0, 0, False, "nfs://127.0.0.1:12049//export/a"),
                                         (c, 0, 2, True, "smb://nas.example.org/share/a"),
                                         (b, 1, 4, False, "nfs://filer2.example.org/export/a")])]
    # every FSN without arguments, this one among them, in UUID order
    every = nsdb.list()
    assert [f[0] for f in every] == sorted(f[0] for f in every)
    assert (fsn, 60, nsdb.list(fsn)[0][2]) in every

    entries = {e["dn"][0]: e for e in nsdb.ldapsearch(nsdb.fsn_dn(fsn))}
    assert len(entries) == 4
    top = entries[nsdb.fsn_dn(fsn)]
    assert top["objectClass"] == ["fedfsFsn"]
    assert top["fedfsFsnUuid"] == [fsn] and top["fedfsFsnTTL"] == ["60"]
    must = schema_must("fedfsNfsFsl")
    assert {"fedfsFslUuid", "fedfsFsnUuid", "fedfsNfsURI", "fedfsNfsReadRank"} <= must
    for fsl, uri, rank, order, going in ((a, "nfs://127.0.0.1:12049//export/a", 0, 0, False),
                                         (b, "nfs://filer2.example.org/export/a", 1, 4, False),
                                         (c, "smb://nas.example.org/share/a", 0, 2, True)):
        e = entries[f"fedfsFslUuid={fsl},{nsdb.fsn_dn(fsn)}"]
        assert e["objectClass"] == ["fedfsNfsFsl"]
        assert must <= set(e), f"missing {must - set(e)}"
        assert e["fedfsFslUuid"] == [fsl] and e["fedfsFsnUuid"] == [fsn]
        assert e["fedfsNfsURI"] == [uri]
        assert e["fedfsNfsReadRank"] == [str(rank)] and e["fedfsNfsReadOrder"] == [str(order)]
        assert e["fedfsNfsGenFlagGoing"] == ["TRUE" if going else "FALSE"]

    # update-fsl changes what it is given only
    out, _ = nsdb.run("update-fsl", fsn, b, "--rank", "0", "--order", "1", "--uri",
                      "nfs://filer3.example.org//export/b")
    assert out == f"updated FSL {b} of FSN {fsn}\n"
    nsdb.run("update-fsl", fsn, c, "--not-going")
    assert nsdb.list(fsn)[0][2] == [(a, 0, 0, False, "nfs://127.0.0.1:12049//export/a"),
                                    (b, 0, 1, False, "nfs://filer3.example.org//export/b"),
                                    (c, 0, 2, False, "smb://nas.example.org/share/a")]
    e = nsdb.ldapsearch(f"fedfsFslUuid={c},{nsdb.fsn_dn(fsn)}", scope="base")[0]
    assert e["fedfsNfsGenFlagGoing"] == ["FALSE"] and e["fedfsNfsReadOrder"] == ["2"]
    nsdb.run("update-fsl", fsn, c, status=2)  # nothing to change
    nsdb.run("update-fsl", fsn, c, "--going", "--not-going", status=2)

    out, _ = nsdb.run("remove-fsl", fsn, a)
    assert out == f"removed FSL {a} of FSN {fsn}\n"
    assert [f[0] for f in nsdb.list(fsn)[0][2]] == [b, c]
    assert nsdb.ldapsearch(f"fedfsFslUuid={a},{nsdb.fsn_dn(fsn)}") is None
    _, err = nsdb.run("remove-fsl", fsn, a, status=1)
    assert f"delete fedfsFslUuid={a},{nsdb.fsn_dn(fsn)}: No such object" in err

    out, _ = nsdb.run("delete-fsn", fsn)
    assert out == f"deleted FSN {fsn} and its FSLs\n"
    assert nsdb.ldapsearch(nsdb.fsn_dn(fsn)) is None
    _, err = nsdb.run("list", fsn, write=False, status=1)
    assert f"NSDB {nsdb.server} has no FSN {fsn}" in err
    _, err = nsdb.run("add-fsl", fsn, "nfs://h//e", status=1)
    assert "No such object" in err and f"is there an FSN {fsn}?" in err


def test_nsdb_options(nsdb, tmp_path):
    """The NSDB from $FEDFUSE_NSDB, a UUID given to create-fsn, option errors."""
    fsn = str(uuid.uuid4())
    out, _ = nsdb.run("create-fsn", fsn.upper(), nsdb=False, env={"FEDFUSE_NSDB": nsdb.server})
    nsdb.fsns.append(fsn)
    assert out == f"{fsn}\n"
    assert nsdb.list(fsn, nsdb=False, env={"FEDFUSE_NSDB": nsdb.server}) == [(fsn, 300, [])]
    _, err = nsdb.run("create-fsn", fsn, status=1)
    assert f"add {nsdb.fsn_dn(fsn)}: Already exists" in err

    _, err = nsdb.run("list", nsdb=False, write=False, env={"FEDFUSE_NSDB": ""}, status=2)
    assert "no NSDB given" in err
    _, err = nsdb.run("list", nsdb="bad host", write=False, status=1)
    assert "NSDB 'bad host' is not HOST, HOST:PORT or [IPV6]:PORT" in err
    _, err = nsdb.run("list", "--security", "tls", write=False, status=2)
    assert "--security: 'tls' is not none, starttls or ldaps" in err
    _, err = nsdb.run("list", "--ca-file", "ca.pem", write=False, status=1)
    assert "--ca-file: 'ca.pem' is not an absolute path" in err
    _, err = nsdb.run("list", "--timeout", "0", write=False, status=2)
    assert "not a number of seconds" in err
    _, err = nsdb.run("frob", status=2)
    assert "unknown subcommand 'frob'" in err
    nsdb.run(status=2)
    _, err = nsdb.run("create-fsn", "--rank", "1", status=2)
    assert "nsdb create-fsn: unknown option '--rank'" in err
    _, err = nsdb.run("add-fsl", fsn, "nfs://h//e", "--rank", "256", status=2)
    assert "--rank: '256' is not a number from 0 to 255" in err
    _, err = nsdb.run("create-fsn", "--ttl", "-1", status=2)
    assert "--ttl: '-1'" in err
    _, err = nsdb.run("add-fsl", fsn, status=2)
    assert "nsdb add-fsl takes an FSN-UUID and a URI" in err
    _, err = nsdb.run("delete-fsn", "not-a-uuid", status=1)
    assert "FSN UUID 'not-a-uuid' is not a UUID" in err
    _, err = nsdb.run("remove-fsl", fsn, "x", status=1)
    assert "FSL UUID 'x' is not a UUID" in err
    # a server that does not answer
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    _, err = nsdb.run("list", nsdb=f"127.0.0.1:{closed}", write=False, status=1)
    assert f"NSDB 127.0.0.1:{closed}: connect: Can't contact LDAP server" in err
    assert nsdb.list(fsn) == [(fsn, 300, [])]  # nothing of the above wrote anything


def test_nsdb_password_rules(nsdb, tmp_path):
    """The password: from a file only its owner can access, or the terminal; never echoed or
    printed; a wrong one is an error naming the bind."""
    fsn = str(uuid.uuid4())

    def refused(pw_file, says, status=1):
        p = subprocess.run([TOOL, "nsdb", "--nsdb", nsdb.server, "-D", nsdb.admin, "-y",
                            str(pw_file), "create-fsn", fsn], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60, env=daemon_env(),
                           start_new_session=True)
        assert p.returncode == status and p.stdout == "", p.stderr
        assert says in p.stderr, p.stderr
        assert nsdb.password not in p.stderr
    loose = tmp_path / "loose.pw"
    loose.write_text(nsdb.password)
    os.chmod(loose, 0o644)
    refused(loose, f"password file {loose} may be accessed by group or others (mode 0644); "
            "chmod 600 it")
    os.chmod(loose, 0o640)
    refused(loose, "(mode 0640); chmod 600 it")
    link = tmp_path / "link.pw"
    os.symlink(nsdb.pw_file, link)
    refused(link, f"password file {link} is a symbolic link")
    empty = tmp_path / "empty.pw"
    empty.write_text("\n")
    os.chmod(empty, 0o600)
    refused(empty, f"password file {empty} is empty")
    refused(tmp_path, f"password file {tmp_path} is not a regular file")
    refused(tmp_path / "missing", "No such file or directory")
    wrong = tmp_path / "wrong.pw"
    wrong.write_text("not-" + nsdb.password)
    os.chmod(wrong, 0o600)
    refused(wrong, f"NSDB {nsdb.server}: bind as {nsdb.admin}: Invalid credentials")
    assert nsdb.ldapsearch(nsdb.fsn_dn(fsn)) is None  # none of these wrote

    # -D without -y asks on the terminal; there is none here
    _, err = nsdb.run("-D", nsdb.admin, "create-fsn", write=False, status=1)
    assert f"no password for {nsdb.admin}: there is no terminal to ask on" in err
    _, err = nsdb.run("-y", nsdb.pw_file, "list", write=False, status=2)
    assert "give -D BINDDN too" in err
    _, err = nsdb.run("create-fsn", write=False, status=2)
    assert "nsdb create-fsn writes to the NSDB: give -D BINDDN" in err

    # typed on the terminal, with echo off
    master, slave = os.openpty()

    def controlling_tty():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    p = subprocess.Popen([TOOL, "nsdb", "--nsdb", nsdb.server, "-D", nsdb.admin, "create-fsn",
                          fsn], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=daemon_env(),
                         preexec_fn=controlling_tty, pass_fds=(slave,))
    os.close(slave)
    nsdb.fsns.append(fsn)
    try:
        seen = b""
        deadline = time.monotonic() + 30
        while not seen.endswith(b": ") and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                seen += os.read(master, 1024)
        assert seen == f"Password for {nsdb.admin}: ".encode()
        assert not termios.tcgetattr(master)[3] & termios.ECHO  # lflag: echo is off
        os.write(master, nsdb.password.encode() + b"\n")
        out, err = p.communicate(timeout=30)
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 1024)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    assert p.returncode == 0, err
    assert out == f"{fsn}\n"
    assert nsdb.password.encode() not in seen  # not echoed
    assert nsdb.password not in out + err


def test_nsdb_fsl_uri_refused(nsdb):
    """What the daemon would refuse as an FSL is refused before anything is written, with its
    message."""
    fsn = nsdb.create_fsn()
    _, err = nsdb.run("add-fsl", fsn, "nfs://filer.example.org//export/../etc", status=1)
    assert "FSL URI 'nfs://filer.example.org//export/../etc'" in err
    assert "is not normalised" in err
    _, err = nsdb.run("add-fsl", fsn, "ftp://filer.example.org/x", status=1)
    assert "scheme 'ftp' is not nfs or smb" in err
    _, err = nsdb.run("add-fsl", fsn, "smb://h/", status=1)
    assert "names no share" in err
    fsl = nsdb.run("add-fsl", fsn, "nfs://filer.example.org//export")[0].strip()
    _, err = nsdb.run("update-fsl", fsn, fsl, "--uri", "nfs://h/a/../b", status=1)
    assert "is not normalised" in err
    assert nsdb.list(fsn) == [(fsn, 300, [(fsl, 0, 0, False, "nfs://filer.example.org//export")])]
    assert len(nsdb.ldapsearch(nsdb.fsn_dn(fsn))) == 2  # the FSN and its one FSL


def test_nsdb_consumer_refuses_writes(nsdb):
    """The read-only replica refuses writes with a message that says why; it serves list."""
    _, err = nsdb.run("create-fsn", nsdb=nsdb.consumer, status=1)
    assert f"NSDB {nsdb.consumer}: add fedfsFsnUuid=" in err
    assert f"is {nsdb.consumer} a read-only replica? Writes go to its provider" in err
    fsn = nsdb.create_fsn()
    fsl = nsdb.run("add-fsl", fsn, "nfs://filer.example.org//export")[0].strip()
    want = [(fsn, 300, [(fsl, 0, 0, False, "nfs://filer.example.org//export")])]
    assert poll(lambda: nsdb.ldapsearch(f"fedfsFslUuid={fsl},{nsdb.fsn_dn(fsn)}",
                                        port_of=nsdb.consumer), 15), "not replicated"
    assert nsdb.list(fsn, nsdb=nsdb.consumer) == want
    _, err = nsdb.run("delete-fsn", fsn, nsdb=nsdb.consumer, status=1)
    assert "read-only replica" in err
    assert nsdb.list(fsn) == want


@needs_root
def test_nsdb_junction(nsdb, tmp_path):
    """add --format fedfs-nsdb writes what nfsref -t nfs-fedfs writes; show and list give the
    FSN's location."""
    fsn = nsdb.create_fsn()
    nsdb.run("add-fsl", fsn, "nfs://filer.example.org//export")
    j = tmp_path / "j"
    j.mkdir()
    os.chmod(j, 0o750)
    out, _ = tool("add", "--format", "fedfs-nsdb", j, nsdb.server, fsn.upper())
    assert out == f"created fedfs junction {j}\n"
    assert perm(j) == 0o1000
    x = xattrs(j)
    assert x[FEDFS_MODE_XATTR] == b"750"
    host, port = nsdb.server.rsplit(":", 1)
    assert x[FEDFS_XATTR] == (
        '<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n  <savedmode bits="750"/>\n'
        f'  <fileset>\n    <name fsnuuid="{fsn}" nsdbname="{host}" nsdbport="{port}"/>\n'
        "  </fileset>\n</junction>\n").encode()
    location = f"fedfs://{nsdb.server}/{fsn}"
    assert show(j) == {"path": str(j), "format": "fedfs", "location": [location],
                       "mode": "0750", "ttl": "none (the namespace's junction-cache-ttl)"}
    out, _ = tool("list", tmp_path)
    assert out == f"{j}\tfedfs\t{location}\n"
    # the default port is left out of the location; an IPv6 NSDB has no brackets in the XML
    k = tmp_path / "k"
    tool("add", "--format=fedfs-nsdb", k, "[::1]:389", fsn)
    assert b'nsdbname="::1" nsdbport="389"' in xattrs(k)[FEDFS_XATTR]
    assert show(k)["location"] == [f"fedfs://[::1]/{fsn}"]
    tool("remove", j)
    assert perm(j) == 0o750 and xattrs(j) == {}
    # refused before anything is made
    bad = tmp_path / "bad"
    fails("add", "--format", "fedfs-nsdb", bad, nsdb.server, "x",
          says="'x' is not an FSN UUID")
    fails("add", "--format", "fedfs-nsdb", bad, "a b", fsn,
          says="NSDB 'a b' is not HOST, HOST:PORT or [IPV6]:PORT")
    fails("add", "--format", "fedfs-nsdb", bad, nsdb.server, status=2,
          says="add --format fedfs-nsdb needs a PATH, an NSDB and an FSN-UUID")
    assert not os.path.lexists(bad)
    # check: the FSN resolved through its NSDB, each location it gives probed
    up = nsdb.create_fsn()
    nsdb.run("add-fsl", up, read_servers_env()["NFS_V3_URI"])
    u = tmp_path / "u"
    tool("add", "--format", "fedfs-nsdb", u, nsdb.server, up)
    out, _ = tool("check", u)
    assert f"fsn   fedfs://{nsdb.server}/{up}: 1 location\n" in out, out
    assert "\nok    nfs://127.0.0.1" in out, out
    empty = nsdb.create_fsn()
    e = tmp_path / "e"
    tool("add", "--format", "fedfs-nsdb", e, nsdb.server, empty)
    out, _ = tool("check", e, status=1)
    assert f"FAIL  fedfs://{nsdb.server}/{empty}: FSN {empty} on NSDB" in out, out
