# SPDX-License-Identifier: GPL-2.0-or-later
"""fedfuse-junction (DESIGN §8) on temp dirs: add, list, show, check and remove for each junction
format, checked on disk (xattrs, modes, symlink targets), its errors, and status on a real mount.
The daemon following junctions is tested elsewhere; fedfs junctions (trusted.* xattrs) need root,
which CI is."""

import os
import socket
import stat
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import BUILDDIR, daemon_env

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
    j = tmp_path / "j"
    j.mkdir()
    os.setxattr(j, FEDFS_XATTR, b'<junction><savedmode bits="755"/><fileset>'
                b'<name fsnuuid="d2b09895-98ff-415e-ac73-565fad7b429b" '
                b'nsdbname="nsdb.example.net"/></fileset></junction>')
    os.chmod(j, 0o1000)
    fails("show", j, says="NSDB junctions are not supported")
    # listed as unsupported, which is no error of the listing
    out, _ = tool("list", tmp_path)
    assert out == (f"{j}\tfedfs\tunsupported: NSDB junctions are not supported "
                   "(trusted.junction.nfs: fileset d2b09895-98ff-415e-ac73-565fad7b429b on "
                   "NSDB nsdb.example.net:389)\n")
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
