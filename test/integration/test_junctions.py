# SPDX-License-Identifier: GPL-2.0-or-later
"""Junctions inside backends (DESIGN §4, issue 7 item 6): the three formats are followed, they
nest, a loop gives ELOOP, malformed values show as what they physically are and are logged
once, a cached crossing costs no junction read, user.fedfuse.location names the junction's
location, and an MS-DFS link inside an NFS export leads to an SMB share.

Servers: the shared ones (/tmp/fedfuse-servers, never stopped here) for NFS; MS-DFS targets
carry no port, so an smbd must listen on 127.0.0.1:445: the shared one if it does, else a
private one started for this module (FEDFUSE_SMB_PORTS="<port> 445"). FedFS junctions hold
nfs://HOST:PORT/PATH locations (NFSv3 by default, MOUNT port from rpcbind): they point at a
private ganesha, which registers its ports with rpcbind when it starts.
"""

import errno
import os
import random
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BUILDDIR, KINDS, SERVERS_ENV, backend_module_present, read_servers_env
from conftest import daemon_env, stop_or_fail, uri_below
from servers_util import (PrivateServers, drop_caches, drop_caches_and_settle, location_ops,
                          location_xattr, port_listens, read_stats, timed, total_calls)
from util import expect_errno, mkdirs, namespace_text, read_file, wait_until, write_file

TOOL = os.path.join(BUILDDIR, "tools", "fedfuse-junction")
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="trusted.* xattrs (FedFS) need root")


# ---- making junctions --------------------------------------------------------------------------

_tool_state = {}


def junction_tool():
    """The fedfuse-junction binary if it is built and does its job, else None (then the tests
    make junctions by hand, with setfattr's system calls and symlink)."""
    if "tool" in _tool_state:
        return _tool_state["tool"]
    tool = None
    if os.access(TOOL, os.X_OK):
        d = tempfile.mkdtemp(prefix="fedfuse-jprobe-")
        try:
            os.mkdir(os.path.join(d, "probe"))
            p = subprocess.run([TOOL, "add", os.path.join(d, "probe"), "file:///tmp",
                                "--format", "fedfuse"], capture_output=True, text=True,
                               timeout=30, stdin=subprocess.DEVNULL, env=daemon_env())
            # The placeholder says so and fails; a real tool is used even if it fails.
            if not (p.returncode != 0 and "not written yet" in p.stderr):
                tool = TOOL
        finally:
            shutil.rmtree(d, ignore_errors=True)
    _tool_state["tool"] = tool
    return tool


def nfsref_xml(locations, saved_mode=0o755, validfor=0):
    """trusted.junction.nfs as nfs-utils' nfsref add writes it (libxml2's indented output).
    locations: (host, port, [components]) in order of preference."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<junction>",
           f'  <savedmode bits="{saved_mode:o}"/>', "  <fileset>"]
    for order, (host, port, comps) in enumerate(locations):
        out.append("    <location>")
        out.append(f'      <host name="{host}"' + (f' port="{port}"' if port and port != 2049
                                                      else "") + "/>")
        if comps:
            out.append("      <path>")
            out += [f"        <component>{c}</component>" for c in comps]
            out.append("      </path>")
        else:
            out.append("      <path/>")
        out += ["      <currency>-1</currency>",
                '      <genflags writable="false" going="false" split="true"/>',
                '      <transflags rdma="true"/>',
                '      <class simul="0" handle="0" fileid="0" writever="0" change="0" '
                'readdir="0"/>',
                f'      <read rank="0" order="{order}"/>',
                '      <write rank="0" order="0"/>',
                '      <flags varsub="false"/>',
                f"      <validfor>{validfor}</validfor>",
                "    </location>"]
    out += ["  </fileset>", "</junction>", ""]
    return "\n".join(out).encode()


def fedfs_by_hand(path, xml, mode_text=b"755"):
    """What nfsref add does to an existing directory: the XML, the saved mode, mode 01000."""
    os.setxattr(path, "trusted.junction.nfs", xml)
    if mode_text is not None:
        os.setxattr(path, "trusted.junction.mode", mode_text)
    os.chmod(path, 0o1000)


def nfs_components(uri):
    """nfs://HOST[:PORT]/a/b?... -> (host, port, ["a", "b"])."""
    m = re.match(r"^nfs://([^/:?]+)(?::(\d+))?(/[^?]*)", uri)
    assert m, uri
    return m.group(1), int(m.group(2) or 0), [c for c in m.group(3).split("/") if c]


def msdfs_target(smb_uri):
    """smb://HOST/SHARE/PATH (no port) -> msdfs:HOST\\SHARE\\PATH."""
    m = re.match(r"^smb://([^/:]+)/(.+)$", smb_uri)
    assert m, smb_uri
    return "msdfs:" + m.group(1) + "\\" + m.group(2).replace("/", "\\")


def make_junction(path, locations, fmt):
    """Make the empty directory `path` a junction of format `fmt` to `locations` (URIs), with
    fedfuse-junction add when it is built, else by hand. Returns "tool" or "hand"."""
    if not os.path.lexists(path):
        os.mkdir(path)
    tool = junction_tool()
    if tool:
        p = subprocess.run([tool, "add", path] + list(locations) + ["--format", fmt],
                           capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL, env=daemon_env())
        assert p.returncode == 0, (f"fedfuse-junction add {path} {locations} --format {fmt}: "
                                   f"exit {p.returncode}\n{p.stdout}{p.stderr}")
        return "tool"
    if fmt == "fedfuse":
        os.setxattr(path, "user.fedfuse.locations", ";".join(locations).encode())
    elif fmt == "msdfs":
        os.rmdir(path)
        os.symlink(",".join(msdfs_target(u)[len("msdfs:"):] if i else msdfs_target(u)
                            for i, u in enumerate(locations)), path)
    elif fmt == "fedfs":
        fedfs_by_hand(path, nfsref_xml([nfs_components(u) for u in locations]))
    else:
        raise ValueError(fmt)
    return "hand"


# ---- namespace and mounts ----------------------------------------------------------------------

def ns_text(referrals, **options):
    """referrals: [(path, [uris], {key: value})]."""
    return namespace_text(referrals, dict({"timeout": "3"}, **options))


def furi(path):
    return "file://" + path


# ---- servers -----------------------------------------------------------------------------------

def _smb_ports_of(conf):
    try:
        with open(conf) as f:
            for line in f:
                m = re.match(r"\s*smb ports\s*=\s*(.*)$", line)
                if m:
                    return [int(p) for p in m.group(1).split()]
    except OSError:
        pass
    return []


@pytest.fixture(scope="module")
def smb445():
    """An smbd answering on 127.0.0.1:445 (MS-DFS targets carry no port): dict with "dir" (the
    guest share's folder) and "share" ("guest"). The shared one if it listens there, else a
    private one for this module, stopped at the end."""
    if not backend_module_present("smb"):
        pytest.skip("backend module smb.so not built")
    shared = read_servers_env(SERVERS_ENV)
    conf = os.path.join(os.path.dirname(SERVERS_ENV), "samba", "smb.conf")
    if shared.get("SMB_DIR") and 445 in _smb_ports_of(conf) and port_listens(445):
        yield {"dir": shared["SMB_DIR"], "share": "guest"}
        return
    deadline = time.monotonic() + 60
    while port_listens(445) and time.monotonic() < deadline:
        time.sleep(1)  # somebody else's smbd on 445: it may be a test that ends soon
    if port_listens(445):
        pytest.fail("127.0.0.1:445 is taken by a server that is not the shared smbd; MS-DFS "
                    "tests need an smbd of known shares there", pytrace=False)
    srv = PrivateServers(smb_ports=None, prefix="fedfuse-jt445-")
    srv.smb_ports = [srv.smb_ports[0], 445]
    try:
        srv.start("smb")
        assert port_listens(445), "private smbd does not listen on 445:\n" + "\n".join(srv.log)
        yield {"dir": srv.env["SMB_DIR"], "share": "guest"}
    finally:
        srv.cleanup()


@pytest.fixture(scope="module")
def private_nfs():
    """A private ganesha (FedFS junctions name host and port only: NFSv3, MOUNT port from
    rpcbind, where this instance registers when it starts)."""
    if not backend_module_present("nfs"):
        pytest.skip("backend module nfs.so not built")
    srv = PrivateServers(prefix="fedfuse-jtnfs-")
    try:
        srv.start("nfs")
        yield srv
    finally:
        srv.cleanup()


def rpcbind_mount_port():
    """The port rpcbind gives for MOUNT v3 over TCP, or None."""
    p = subprocess.run(["rpcinfo", "-p", "127.0.0.1"], capture_output=True, text=True,
                       timeout=20)
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "100005" and f[1] == "3" and f[2] == "tcp":
            return int(f[3])
    return None


def shared_kind_or_skip(kind):
    uri_key, dir_key, module = KINDS[kind]
    env = read_servers_env()
    if not env.get(uri_key) or not backend_module_present(module):
        pytest.skip(f"{kind}: no shared server in {SERVERS_ENV} or module not built")
    return env[uri_key], env[dir_key]


def warnings_matching(m, regex):
    return [l for l in m.log_text().splitlines() if re.search(regex, l)]


# ---- the formats -------------------------------------------------------------------------------

def check_entered(m, jpath, expect_names, expect_uri, file_name, content):
    """jpath (in the mount) shows as a directory with the target's contents."""
    st = os.lstat(jpath)
    assert stat.S_ISDIR(st.st_mode), f"{jpath}: mode {oct(st.st_mode)}, not a directory"
    assert set(os.listdir(jpath)) == set(expect_names)
    assert read_file(os.path.join(jpath, file_name)) == content
    assert location_xattr(jpath) == expect_uri
    assert location_xattr(os.path.join(jpath, file_name)) == expect_uri
    # readdirplus of the parent shows it as a directory too
    parent, name = os.path.split(jpath)
    ents = {e.name: e for e in os.scandir(parent)}
    assert ents[name].is_dir(follow_symlinks=False), f"{name} not listed as a directory"


def test_fedfuse_format_followed(mount_factory, tmp_path):
    top, target = mkdirs(str(tmp_path / "top"), str(tmp_path / "target"))
    write_file(os.path.join(target, "hello"), b"fedfuse format\n")
    how = make_junction(os.path.join(top, "j"), [furi(target)], "fedfuse")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    check_entered(m, os.path.join(m.mnt, "a", "j"), {"hello"}, furi(target), "hello",
                  b"fedfuse format\n")
    # written through the junction, lands in the target
    write_file(os.path.join(m.mnt, "a", "j", "new"), b"x")
    assert read_file(os.path.join(target, "new")) == b"x"
    print("junction made by", how)


def test_msdfs_format_followed(mount_factory, tmp_path, smb445):
    top = mkdirs(str(tmp_path / "top"))
    sub = f"jt-msdfs-{os.getpid()}-{tmp_path.name}"
    d = os.path.join(smb445["dir"], sub)
    os.mkdir(d)
    os.chmod(d, 0o777)
    try:
        write_file(os.path.join(d, "hello"), b"msdfs format\n")
        uri = f"smb://127.0.0.1/{smb445['share']}/{sub}"
        how = make_junction(os.path.join(top, "dfs"), [uri], "msdfs")
        assert os.path.islink(os.path.join(top, "dfs"))
        m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
        check_entered(m, os.path.join(m.mnt, "a", "dfs"), {"hello"}, uri, "hello",
                      b"msdfs format\n")
        print("junction made by", how)
        stop_or_fail(m)  # before its backing folders go
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _fedfs_target(private_nfs, tmp_path):
    sub = f"jt-fedfs-{tmp_path.name}"
    d = os.path.join(private_nfs.env["NFS_V3_DIR"], sub)
    os.mkdir(d)
    os.chmod(d, 0o777)
    write_file(os.path.join(d, "hello"), b"fedfs format\n")
    uri = f"nfs://127.0.0.1:{private_nfs.nfs_port}{private_nfs.env['NFS_V3_DIR']}/{sub}"
    return d, uri


def _check_rpcbind(private_nfs):
    port = rpcbind_mount_port()
    assert port == private_nfs.mnt_port, (
        f"rpcbind gives MOUNT v3 port {port}, not the private ganesha's {private_nfs.mnt_port} "
        "(another ganesha registered after it): the FedFS location cannot be mounted")


@needs_root
def test_fedfs_format_followed(mount_factory, tmp_path, private_nfs):
    """Made by fedfuse-junction add --format fedfs (or by hand when the tool is not built)."""
    top = mkdirs(str(tmp_path / "top"))
    d, uri = _fedfs_target(private_nfs, tmp_path)
    how = make_junction(os.path.join(top, "fedfs"), [uri], "fedfs")
    st = os.lstat(os.path.join(top, "fedfs"))
    assert stat.S_IMODE(st.st_mode) == 0o1000, oct(st.st_mode)
    _check_rpcbind(private_nfs)
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    check_entered(m, os.path.join(m.mnt, "a", "fedfs"), {"hello"}, uri, "hello",
                  b"fedfs format\n")
    print("junction made by", how)


@needs_root
def test_fedfs_by_hand_like_nfsref(mount_factory, tmp_path, private_nfs):
    """trusted.junction.nfs written with setfattr exactly as nfsref add writes it."""
    top = mkdirs(str(tmp_path / "top"))
    d, uri = _fedfs_target(private_nfs, tmp_path)
    j = mkdirs(os.path.join(top, "ref"))
    host, port, comps = nfs_components(uri)
    xml = nfsref_xml([(host, port, comps)])
    subprocess.run(["setfattr", "-n", "trusted.junction.nfs", "-v", xml.decode(), j], check=True)
    subprocess.run(["setfattr", "-n", "trusted.junction.mode", "-v", "755", j], check=True)
    os.chmod(j, 0o1000)
    _check_rpcbind(private_nfs)
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    jp = os.path.join(m.mnt, "a", "ref")
    check_entered(m, jp, {"hello"}, uri, "hello", b"fedfs format\n")
    assert stat.S_IMODE(os.stat(jp).st_mode) & 0o111, "entered junction is not searchable"


def test_first_reachable_location(mount_factory, tmp_path):
    """A junction with two locations whose first refuses connections is entered through the
    second."""
    top, target = mkdirs(str(tmp_path / "top"), str(tmp_path / "target"))
    write_file(os.path.join(target, "f"), b"second\n")
    from servers_util import free_ports
    dead = f"smb://127.0.0.1:{free_ports(1)[0]}/guest"  # nothing listens there
    if not backend_module_present("smb"):
        pytest.skip("backend module smb.so not built")
    make_junction(os.path.join(top, "j"), [dead, furi(target)], "fedfuse")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)]))
    m.expect_log(r"location " + re.escape(dead) + r" is unreachable")
    m.start()
    assert read_file(os.path.join(m.mnt, "a", "j", "f")) == b"second\n"
    assert location_xattr(os.path.join(m.mnt, "a", "j", "f")) == furi(target)
    assert len(warnings_matching(m, r"is unreachable")) == 1


# ---- nesting and loops -------------------------------------------------------------------------

def test_nesting_three_deep(mount_factory, tmp_path):
    top, l1, l2, l3 = mkdirs(*(str(tmp_path / n) for n in ("top", "l1", "l2", "l3")))
    for i, d in enumerate((l1, l2, l3), 1):
        write_file(os.path.join(d, f"at{i}"), f"level {i}\n".encode())
    make_junction(os.path.join(top, "j1"), [furi(l1)], "fedfuse")
    make_junction(os.path.join(l1, "j2"), [furi(l2)], "fedfuse")
    make_junction(os.path.join(l2, "j3"), [furi(l3)], "fedfuse")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    p = os.path.join(m.mnt, "a")
    for i, loc in enumerate((l1, l2, l3), 1):
        p = os.path.join(p, f"j{i}")
        assert stat.S_ISDIR(os.lstat(p).st_mode)
        assert location_xattr(p) == furi(loc)
        assert read_file(os.path.join(p, f"at{i}")) == f"level {i}\n".encode()
        assert location_xattr(os.path.join(p, f"at{i}")) == furi(loc)
    assert sorted(os.listdir(p)) == ["at3"]
    # the whole chain through one walk, also after the kernel forgot it
    drop_caches()
    deep = os.path.join(m.mnt, "a", "j1", "j2", "j3", "at3")
    assert read_file(deep) == b"level 3\n"
    # find walks it with readdirplus
    out = subprocess.run(["find", os.path.join(m.mnt, "a")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert deep in out.stdout.splitlines()


def test_loop_gives_eloop(mount_factory, tmp_path):
    a, b = mkdirs(str(tmp_path / "la"), str(tmp_path / "lb"))
    make_junction(os.path.join(a, "self"), [furi(a)], "fedfuse")  # back to its own location
    make_junction(os.path.join(a, "tob"), [furi(b)], "fedfuse")
    make_junction(os.path.join(b, "toa"), [furi(a)], "fedfuse")  # a -> b -> a
    write_file(os.path.join(b, "inb"), b"b\n")
    m = mount_factory(ns_text=ns_text([("/a", [furi(a)], None)])).start()
    root = os.path.join(m.mnt, "a")
    expect_errno(errno.ELOOP, os.stat, os.path.join(root, "self"))
    expect_errno(errno.ELOOP, os.listdir, os.path.join(root, "self"))
    assert read_file(os.path.join(root, "tob", "inb")) == b"b\n"
    expect_errno(errno.ELOOP, os.stat, os.path.join(root, "tob", "toa"))
    # listing the directories that hold them still works and names them
    assert {"self", "tob"} <= set(os.listdir(root))
    assert {"toa", "inb"} == set(os.listdir(os.path.join(root, "tob")))
    # and asked again (cached junction), still ELOOP, not a hang or another answer
    drop_caches()
    expect_errno(errno.ELOOP, os.stat, os.path.join(root, "tob", "toa"))


# ---- malformed junctions -----------------------------------------------------------------------

# 64 KiB of junk: random bytes with NULs (refused at once), and without (the parsers must
# get through all of it), and 64 KiB of plausible URIs (more locations than allowed).
JUNK_64K = random.Random(64).randbytes(65536)
JUNK_64K_NO_NUL = bytes(b % 255 + 1 for b in random.Random(65).randbytes(65536))
MANY_URIS_64K = ";".join(f"file:///srv/replica{i:05d}" for i in range(3000)).encode()[:65536]

_GOOD_XML = nfsref_xml([("127.0.0.1", 12049, ["export", "dir"])])

# name -> (how to make it in directory `top`, needs root, needs a 64 KiB-xattr filesystem)
MALFORMED = {
    "fedfs-bad-xml": ("fedfs", b'<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n'
                      b'  <savedmode bits="755"/>\n  <fileset>\n    <location>\n'
                      b'      <host name="127.0.0.1"/>\n    </fileset>\n  </location>\n'
                      b'</junction>\n', True, False),
    "fedfs-truncated-xml": ("fedfs", _GOOD_XML[:len(_GOOD_XML) // 2], True, False),
    "fedfs-64k-junk": ("fedfs", JUNK_64K, True, True),
    "fedfs-dotdot": ("fedfs", nfsref_xml([("127.0.0.1", 12049, ["export", "..", "etc"])]),
                     True, False),
    "fedfs-nsdb-bad-uuid": ("fedfs", b'<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n'
                            b'  <savedmode bits="755"/>\n  <fileset>\n'
                            b'    <name fsnuuid="6ba7b810-9dad-11d1-80b4-00c04fd430c8-x" '
                            b'nsdbname="nsdb.example.org" nsdbport="389"/>\n'
                            b'  </fileset>\n</junction>\n', True, False),
    "fedfs-64k-junk-no-nul": ("fedfs", JUNK_64K_NO_NUL, True, True),
    "fedfuse-64k-junk": ("fedfuse", JUNK_64K, False, True),
    "fedfuse-64k-junk-no-nul": ("fedfuse", JUNK_64K_NO_NUL, False, True),
    "fedfuse-64k-uris": ("fedfuse", MANY_URIS_64K, False, True),
    "fedfuse-dotdot": ("fedfuse", b"file:///tmp/../etc", False, False),
    "fedfuse-not-a-uri": ("fedfuse", b"this is not a location", False, False),
    "msdfs-dotdot": ("msdfs", "msdfs:127.0.0.1\\guest\\..\\..\\etc", False, False),
}


@pytest.fixture
def shm_dir():
    """A folder on tmpfs (/dev/shm), where an xattr may hold 64 KiB (ext4 takes one block)."""
    d = tempfile.mkdtemp(prefix="fedfuse-jt-", dir="/dev/shm")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("ttl", [300, 0], ids=["cache-on", "cache-off"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_shown_as_is_and_logged_once(mount_factory, tmp_path, shm_dir, case, ttl):
    fmt, value, root_only, big = MALFORMED[case]
    if root_only and not IS_ROOT:
        pytest.skip("FedFS junctions are read only when fedfuse runs as root")
    top = mkdirs(os.path.join(shm_dir if big else str(tmp_path), "top"))
    write_file(os.path.join(top, "plain"), b"plain\n")
    j = os.path.join(top, "bad")
    if fmt == "msdfs":
        os.symlink(value, j)
    else:
        os.mkdir(j)
        os.chmod(j, 0o755)
        write_file(os.path.join(j, "inside"), b"physical\n")
        try:
            if fmt == "fedfs":
                fedfs_by_hand(j, value)
            else:
                os.setxattr(j, "user.fedfuse.locations", value)
        except OSError as e:
            if big and e.errno in (errno.ENOSPC, errno.E2BIG, errno.EOPNOTSUPP):
                pytest.skip(f"/dev/shm does not take a 64 KiB xattr: {e}")
            raise
    ino = os.lstat(j).st_ino
    disk = os.lstat(j)
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)], junction_cache_ttl=ttl))
    warning = rf"malformed junction \(inode {ino}\), shown as it is"
    m.expect_log(warning)
    m.start()
    mj = os.path.join(m.mnt, "a", "bad")
    for _ in range(4):  # lookups, readdirplus, and lookups after the kernel forgot the entry
        st = os.lstat(mj)
        assert stat.S_IFMT(st.st_mode) == stat.S_IFMT(disk.st_mode), (
            f"{case}: shown as {oct(st.st_mode)}, on disk {oct(disk.st_mode)}")
        assert stat.S_IMODE(st.st_mode) == stat.S_IMODE(disk.st_mode) or fmt == "msdfs"
        if fmt == "msdfs":
            assert os.readlink(mj) == value
        else:
            assert os.listdir(mj) == ["inside"]
            assert read_file(os.path.join(mj, "inside")) == b"physical\n"
            assert location_xattr(mj) == furi(top)
        assert sorted(os.listdir(os.path.join(m.mnt, "a"))) == ["bad", "plain"]
        drop_caches()
        time.sleep(0.1)
    lines = warnings_matching(m, warning)
    assert len(lines) == 1, f"{case}: logged {len(lines)} times:\n" + "\n".join(lines)
    line = lines[0]
    assert len(line) < 1024, f"{case}: log line of {len(line)} bytes"
    assert all(c >= " " for c in line), f"{case}: control characters in the log line"
    if case == "fedfs-nsdb-bad-uuid":
        assert "is not a UUID" in line


def test_junction_value_of_64k_is_followed(mount_factory, shm_dir):
    """The largest value an xattr can hold (64 KiB: a location padded with white space, which
    the locations= syntax allows) is still a junction, not refused for its size."""
    top, target = mkdirs(os.path.join(shm_dir, "top"), os.path.join(shm_dir, "target"))
    write_file(os.path.join(target, "f"), b"big value\n")
    j = mkdirs(os.path.join(top, "j"))
    uri = furi(target).encode()
    value = uri + b" " * (65536 - len(uri))
    try:
        os.setxattr(j, "user.fedfuse.locations", value)
    except OSError as e:
        pytest.skip(f"/dev/shm does not take a 64 KiB xattr: {e}")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    assert read_file(os.path.join(m.mnt, "a", "j", "f")) == b"big value\n"
    assert location_xattr(os.path.join(m.mnt, "a", "j")) == furi(target)


# ---- the junction cache ------------------------------------------------------------------------

def _jc(s):
    return s["junction-cache"]


@pytest.mark.skipif(not IS_ROOT, reason="needs drop_caches (root)")
def test_cached_crossing_reads_no_junction(mount_factory, tmp_path):
    """Crossing a cached junction again costs no junction read (a junction-cache hit, no miss)
    and no backend call beyond the parent's lookup of the name, plus at most the root's
    attributes of the junction's location when the kernel had forgotten that root; with the root
    still known to the kernel and its attributes fresh, the junction's location sees no call.

    (The daemon reads junction values with unaccounted backend calls, so the stats cannot show
    the read itself: the cache counters are what proves it was skipped.)"""
    top, target = mkdirs(str(tmp_path / "top"), str(tmp_path / "target"))
    sub = mkdirs(os.path.join(top, "sub"))
    write_file(os.path.join(sub, "plainfile"), b"p\n")
    write_file(os.path.join(target, "f"), b"through the junction\n")
    make_junction(os.path.join(sub, "j"), [furi(target)], "fedfuse")
    # Long attribute timeouts: the kernel asks again only because drop_caches made it forget.
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)], attr_timeout=60,
                                      junction_cache_ttl=300)).start()
    a_uri, j_uri = furi(top), furi(target)
    msub = os.path.join(m.mnt, "a", "sub")
    pin = os.open(msub, os.O_RDONLY | os.O_DIRECTORY)  # /a and /a/sub stay known and fresh
    try:
        s0 = read_stats(m.mnt)
        assert read_file(os.path.join(msub, "j", "f")) == b"through the junction\n"
        s1 = read_stats(m.mnt)
        assert _jc(s1)["misses"] > _jc(s0)["misses"], "first crossing was no cache miss"

        # 1. The kernel forgets j (and the junction root's inode); it looks j up again.
        assert drop_caches_and_settle(m.mnt)
        s2 = read_stats(m.mnt)
        st = os.stat(os.path.join(msub, "j"))
        assert stat.S_ISDIR(st.st_mode)
        s3 = read_stats(m.mnt)
        assert _jc(s3)["hits"] > _jc(s2)["hits"], "the kernel did not ask again (no hit)"
        assert _jc(s3)["misses"] == _jc(s2)["misses"], "cached junction read again"
        assert _jc(s3)["entries"] == _jc(s2)["entries"]
        pa2, pa3 = location_ops(s2, a_uri, "/a"), location_ops(s3, a_uri, "/a")
        assert pa3.get("lookup", (0, 0))[0] - pa2.get("lookup", (0, 0))[0] == 1, (
            f"parent location: lookups {pa2.get('lookup')} -> {pa3.get('lookup')}")
        assert {k: v for k, v in pa3.items() if k != "lookup"} == \
            {k: v for k, v in pa2.items() if k != "lookup"}, (pa2, pa3)
        j2, j3 = location_ops(s2, j_uri), location_ops(s3, j_uri)
        assert total_calls(j3) - total_calls(j2) <= 1, (j2, j3)
        assert {k: v for k, v in j3.items() if k != "lookup"} == \
            {k: v for k, v in j2.items() if k != "lookup"}, (j2, j3)

        # 2. The kernel still holds the junction's root; a readdirplus of sub crosses j again
        # (the daemon resolves junction entries by name): no call reaches j's location.
        pinj = os.open(os.path.join(msub, "j"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            s4 = read_stats(m.mnt)
            ents = {e.name: e.is_dir(follow_symlinks=False) for e in os.scandir(msub)}
            assert ents == {"j": True, "plainfile": False}
            s5 = read_stats(m.mnt)
            assert _jc(s5)["hits"] > _jc(s4)["hits"], "readdirplus did not cross j"
            assert _jc(s5)["misses"] == _jc(s4)["misses"], "cached junction read again"
            assert location_ops(s5, j_uri) == location_ops(s4, j_uri), (
                "the junction's location was called although its root is known:\n"
                f"{location_ops(s4, j_uri)} -> {location_ops(s5, j_uri)}")
            pa4, pa5 = location_ops(s4, a_uri, "/a"), location_ops(s5, a_uri, "/a")
            assert pa5.get("lookup", (0, 0))[0] - pa4.get("lookup", (0, 0))[0] <= 1
        finally:
            os.close(pinj)
    finally:
        os.close(pin)


@pytest.mark.skipif(not IS_ROOT, reason="needs drop_caches (root)")
def test_changed_junction_is_read_again(mount_factory, tmp_path):
    """The cache is keyed by the object and checked against its ctime: a junction given new
    locations leads to them as soon as the kernel asks again, whatever the TTL."""
    top, one, two = mkdirs(*(str(tmp_path / n) for n in ("top", "one", "two")))
    write_file(os.path.join(one, "which"), b"one\n")
    write_file(os.path.join(two, "which"), b"two\n")
    j = os.path.join(top, "j")
    make_junction(j, [furi(one)], "fedfuse")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)],
                                      junction_cache_ttl=300)).start()
    mj = os.path.join(m.mnt, "a", "j")
    assert read_file(os.path.join(mj, "which")) == b"one\n"
    os.setxattr(j, "user.fedfuse.locations", furi(two).encode())
    drop_caches()
    # the kernel asks again once it forgot the entry, at the latest after attr-timeout (1 s)
    assert wait_until(lambda: read_file(os.path.join(mj, "which")) == b"two\n", 5), \
        read_file(os.path.join(mj, "which"))
    assert location_xattr(mj) == furi(two)


# ---- where does this path live -----------------------------------------------------------------

def test_location_xattr_names_junction_location(mount_factory, tmp_path):
    top, target = mkdirs(str(tmp_path / "top"), str(tmp_path / "target"))
    mkdirs(os.path.join(target, "d"))
    write_file(os.path.join(target, "d", "f"), b"f\n")
    write_file(os.path.join(top, "onparent"), b"p\n")
    make_junction(os.path.join(top, "j"), [furi(target)], "fedfuse")
    m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)])).start()
    a = os.path.join(m.mnt, "a")
    assert location_xattr(a) == furi(top)
    assert location_xattr(os.path.join(a, "onparent")) == furi(top)
    for p in ("j", "j/d", "j/d/f"):
        assert location_xattr(os.path.join(a, p)) == furi(target), p
    # the junction's own xattr does not leak through the mount
    names = os.listxattr(os.path.join(a, "j"))
    assert "user.fedfuse.locations" not in names, names


# ---- MS-DFS inside NFS -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["nfs3", "nfs4"])
def test_msdfs_in_nfs_leads_to_smb(mount_factory, tmp_path, smb445, kind):
    nfs_uri, nfs_dir = shared_kind_or_skip(kind)
    tag = f"jt-{os.getpid()}-{tmp_path.name}"
    ndir = os.path.join(nfs_dir, tag)
    sdir = os.path.join(smb445["dir"], tag)
    for d in (ndir, sdir):
        os.mkdir(d)
        os.chmod(d, 0o777)
    try:
        write_file(os.path.join(ndir, "on-nfs"), b"nfs\n")
        write_file(os.path.join(sdir, "on-smb"), b"smb\n")
        smb_uri = f"smb://127.0.0.1/{smb445['share']}/{tag}"
        make_junction(os.path.join(ndir, "dfs"), [smb_uri], "msdfs")
        ref_uri = uri_below(nfs_uri, tag)
        m = mount_factory(ns_text=ns_text([("/n", [ref_uri], None)])).start()
        n = os.path.join(m.mnt, "n")
        assert sorted(os.listdir(n)) == ["dfs", "on-nfs"]
        assert location_xattr(os.path.join(n, "on-nfs")) == ref_uri
        check_entered(m, os.path.join(n, "dfs"), {"on-smb"}, smb_uri, "on-smb", b"smb\n")
        write_file(os.path.join(n, "dfs", "written"), b"w\n")
        assert read_file(os.path.join(sdir, "written")) == b"w\n"
        stop_or_fail(m)  # before its backing folders go (the last close may still be on its way)
    finally:
        shutil.rmtree(ndir, ignore_errors=True)
        shutil.rmtree(sdir, ignore_errors=True)


# ---- a server that accepts connections and never answers ---------------------------------------

class SilentServer:
    """A TCP listener on 127.0.0.1 that accepts every connection and never says a word."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.t = threading.Thread(target=self._accept, daemon=True)
        self.t.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_junction_to_silent_server(mount_factory, tmp_path):
    """Junctions to a server that accepts connections and never answers (NFSv3 and NFSv4): the
    first crossing fails within the namespace's timeout + 2 s (the junction's location takes the
    timeout of the referral holding it, not the built-in 15 s), after which the location is down
    and `ls -l` of the junctions' parent costs no more timeouts; the referral's own files are
    served meanwhile."""
    silent = SilentServer()
    try:
        top = mkdirs(str(tmp_path / "top"))
        write_file(os.path.join(top, "plain"), b"still here\n")
        uris = {"j3": f"nfs://127.0.0.1/x?version=3&nfsport={silent.port}&mountport={silent.port}",
                "j4": f"nfs://127.0.0.1/y?version=4&nfsport={silent.port}"}
        for name, uri in uris.items():
            make_junction(os.path.join(top, name), [uri], "fedfuse")
        m = mount_factory(ns_text=ns_text([("/a", [furi(top)], None)], timeout="2")).start()
        for uri in uris.values():
            m.expect_log(r"location " + re.escape(uri) + r" is unreachable")
        for name in uris:
            _, err, _ = timed(os.stat, os.path.join(m.mnt, "a", name), bound=2 + 2)
            assert isinstance(err, OSError) and err.errno in (errno.EHOSTDOWN, errno.ETIMEDOUT), err
        for _ in range(3):
            # the junctions are down: a listing with attributes answers at once
            out, err, _ = timed(subprocess.run, ["ls", "-l", os.path.join(m.mnt, "a")],
                                capture_output=True, text=True, bound=2.0)
            assert err is None and "plain" in out.stdout
        assert read_file(os.path.join(m.mnt, "a", "plain")) == b"still here\n"
    finally:
        silent.close()
