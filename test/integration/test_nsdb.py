# SPDX-License-Identifier: GPL-2.0-or-later
"""FedFS NSDB junctions and referrals (RFC 7532), resolved by the daemon through real OpenLDAP
slapd servers: the shared provider/consumer pair of scripts/test-servers, or a private pair for
the tests that stop them. Every entry here is written with plain ldapadd/ldapmodify from the
RFC's schema, never through fedfuse's own tool, so the daemon is shown to read what any RFC 7532
writer leaves."""

import errno
import os
import signal
import subprocess
import time
import urllib.parse
import uuid

import pytest

from conftest import read_servers_env, uri_below
from servers_util import PrivateServers, poll, read_locations, timed
from util import expect_errno, mkdirs, namespace_text, read_file, write_file

IS_ROOT = os.geteuid() == 0
SHARED = read_servers_env()


def need(env, *keys):
    missing = [k for k in keys if not env.get(k)]
    if missing:
        pytest.fail(f"the test servers give no {', '.join(missing)} "
                    "(run scripts/test-servers start)", pytrace=False)


class Nsdb:
    """The LDAP side of a test: entries written with the OpenLDAP command-line tools."""

    def __init__(self, env):
        need(env, "NSDB_PORT", "NSDB_CONSUMER_PORT", "NSDB_NCE", "NSDB_ADMIN_DN",
             "NSDB_ADMIN_PW_FILE")
        self.port = int(env["NSDB_PORT"])
        self.consumer_port = int(env["NSDB_CONSUMER_PORT"])
        self.nce = env["NSDB_NCE"]
        self.admin = env["NSDB_ADMIN_DN"]
        self.pw_file = env["NSDB_ADMIN_PW_FILE"]
        self.fsns = []

    def url(self, port=None):
        return f"ldap://127.0.0.1:{port or self.port}"

    def _tool(self, tool, ldif, *extra):
        p = subprocess.run([tool, "-x", "-H", self.url(), "-D", self.admin, "-y", self.pw_file,
                            *extra], input=ldif, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, f"{tool} failed ({p.returncode}): {p.stderr}\n{ldif}"

    def add(self, ldif, *extra):
        self._tool("ldapadd", ldif, *extra)

    def modify(self, dn, attr, value):
        self._tool("ldapmodify", f"dn: {dn}\nchangetype: modify\nreplace: {attr}\n"
                                 f"{attr}: {value}\n")

    def fsn_dn(self, fsn):
        return f"fedfsFsnUuid={fsn},{self.nce}"

    def fsl_dn(self, fsn, fsl):
        return f"fedfsFslUuid={fsl},{self.fsn_dn(fsn)}"

    def add_fsn(self, ttl):
        fsn = str(uuid.uuid4())
        self.add(f"dn: {self.fsn_dn(fsn)}\nobjectClass: fedfsFsn\nfedfsFsnUuid: {fsn}\n"
                 f"fedfsFsnTTL: {ttl}\n")
        self.fsns.append(fsn)
        return fsn

    def fsl_ldif(self, fsn, fsl, uri, rank=0, order=0, going=False):
        """An fedfsNfsFsl with every attribute RFC 7532 makes mandatory (uri None: left out,
        which only the Relax Rules control lets the directory store)."""
        lines = [f"dn: {self.fsl_dn(fsn, fsl)}", "objectClass: fedfsNfsFsl",
                 f"fedfsFslUuid: {fsl}", f"fedfsFsnUuid: {fsn}", "fedfsNfsCurrency: -1",
                 "fedfsNfsGenFlagWritable: FALSE", f"fedfsNfsGenFlagGoing: "
                 f"{'TRUE' if going else 'FALSE'}", "fedfsNfsGenFlagSplit: TRUE",
                 "fedfsNfsTransFlagRdma: TRUE", "fedfsNfsClassSimul: 0",
                 "fedfsNfsClassHandle: 0", "fedfsNfsClassFileid: 0", "fedfsNfsClassWritever: 0",
                 "fedfsNfsClassChange: 0", "fedfsNfsClassReaddir: 0",
                 f"fedfsNfsReadRank: {rank}", f"fedfsNfsReadOrder: {order}",
                 "fedfsNfsWriteRank: 0", "fedfsNfsWriteOrder: 0", "fedfsNfsVarSub: FALSE",
                 "fedfsNfsValidFor: 0"]
        if uri is not None:
            lines.append(f"fedfsNfsURI: {uri}")
        return "\n".join(lines) + "\n"

    def add_fsl(self, fsn, uri, fsl=None, **kw):
        fsl = fsl or str(uuid.uuid4())
        self.add(self.fsl_ldif(fsn, fsl, uri, **kw))
        return fsl

    def replicated(self, dn, attr=None, value=None, timeout=15):
        """Wait until the consumer holds `dn` (with attr: value)."""
        def seen():
            p = subprocess.run(["ldapsearch", "-x", "-LLL", "-H", self.url(self.consumer_port),
                                "-b", dn, "-s", "base", attr or "dn"],
                               capture_output=True, text=True, timeout=10)
            return p.returncode == 0 and (attr is None or f"{attr}: {value}" in p.stdout)
        assert poll(seen, timeout), f"{dn} did not reach the consumer in {timeout} s"

    def cleanup(self):
        for fsn in self.fsns:
            subprocess.run(["ldapdelete", "-x", "-H", self.url(), "-D", self.admin, "-y",
                            self.pw_file, "-r", self.fsn_dn(fsn)], capture_output=True,
                           timeout=30)


@pytest.fixture
def nsdb():
    n = Nsdb(SHARED)
    yield n
    n.cleanup()


@pytest.fixture
def private_nsdb():
    """A provider and a consumer of this test's own, which it may stop."""
    servers = PrivateServers(prefix="fedfuse-nsdb-").start("nsdb")
    yield servers, Nsdb(servers.env)
    servers.cleanup()


def nfs_dir(name, content):
    """A folder of the shared NFSv3 export holding `marker`: its URI."""
    need(SHARED, "NFS_V3_URI", "NFS_V3_DIR")
    d = mkdirs(os.path.join(SHARED["NFS_V3_DIR"], name))
    write_file(os.path.join(d, "marker"), content)
    os.chmod(d, 0o777)
    return uri_below(SHARED["NFS_V3_URI"], name)


def smb_dir(name, content):
    need(SHARED, "SMB_URI", "SMB_DIR")
    d = mkdirs(os.path.join(SHARED["SMB_DIR"], name))
    write_file(os.path.join(d, "marker"), content)
    return uri_below(SHARED["SMB_URI"], name)


def fsn_uri(n, fsn, port=None):
    return f"fedfs://127.0.0.1:{port or n.port}/{fsn}"


def nsdb_junction(path, n, fsn):
    """What nfsref add -t nfs-fedfs leaves: a directory of mode 01000 whose XML names the FSN."""
    os.mkdir(path)
    os.setxattr(path, "trusted.junction.nfs",
                f'<?xml version="1.0" encoding="UTF-8"?>\n<junction>\n'
                f'  <savedmode bits="755"/>\n  <fileset>\n'
                f'    <name fsnuuid="{fsn}" nsdbname="127.0.0.1" nsdbport="{n.port}"/>\n'
                f'  </fileset>\n</junction>\n'.encode())
    os.chmod(path, 0o1000)


def marker(m, *parts):
    return read_file(os.path.join(m.mnt, *parts, "marker"))


def fsn_line(m, uri):
    return read_locations(m.mnt).get(("fsn", uri), {})


@pytest.mark.skipif(not IS_ROOT, reason="FedFS junctions are read only when fedfuse runs as root")
@pytest.mark.parametrize("kind", ["nfs3", "smb"])
def test_nsdb_junction_resolves(mount_factory, tmp_path, nsdb, kind):
    """A junction naming an FSN leads to the location its FSL gives: NFS as RFC 7532 says, and
    SMB, our extension."""
    tag = uuid.uuid4().hex[:8]
    uri = nfs_dir(f"nsdb-{tag}", b"nfs data\n") if kind == "nfs3" else \
        smb_dir(f"nsdb-{tag}", b"smb data\n")
    fsn = nsdb.add_fsn(ttl=300)
    nsdb.add_fsl(fsn, uri)
    top = mkdirs(os.path.join(str(tmp_path), "top"))
    nsdb_junction(os.path.join(top, "j"), nsdb, fsn)
    m = mount_factory(ns_text=namespace_text([("/a", [f"file://{top}"], None)]))
    m.start()
    assert marker(m, "a", "j") == (b"nfs data\n" if kind == "nfs3" else b"smb data\n")
    assert os.listdir(os.path.join(m.mnt, "a", "j")) == ["marker"]
    line = fsn_line(m, fsn_uri(nsdb, fsn))
    assert line.get("state") == "fresh", line
    assert line.get("locations") == uri


def test_referral_names_fsn(mount_factory, nsdb):
    """A referral whose location is an FSN: the fleet's servers are edited in LDAP only."""
    uri = nfs_dir(f"nsdb-ref-{uuid.uuid4().hex[:8]}", b"fleet\n")
    fsn = nsdb.add_fsn(ttl=300)
    nsdb.add_fsl(fsn, uri)
    m = mount_factory(ns_text=namespace_text([("/fleet", [fsn_uri(nsdb, fsn)], None)]))
    m.start()
    assert marker(m, "fleet") == b"fleet\n"
    with open(os.path.join(m.mnt, "fleet", "new"), "wb") as f:
        f.write(b"written through the FSN\n")
    assert read_file(os.path.join(SHARED["NFS_V3_DIR"], uri.split("/")[-1].split("?")[0],
                                  "new")) == b"written through the FSN\n"


def test_replicas_by_rank_and_going_skipped(mount_factory, nsdb):
    """FSLs are tried by read rank then read order (lower first); one marked going is not used."""
    tag = uuid.uuid4().hex[:8]
    a, b, c = (nfs_dir(f"nsdb-{x}-{tag}", x.encode()) for x in ("a", "b", "c"))
    ranked = nsdb.add_fsn(ttl=300)
    nsdb.add_fsl(ranked, a, rank=2, order=0)
    nsdb.add_fsl(ranked, b, rank=1, order=5)
    nsdb.add_fsl(ranked, c, rank=1, order=1)
    going = nsdb.add_fsn(ttl=300)
    nsdb.add_fsl(going, a, rank=0, going=True)
    nsdb.add_fsl(going, b, rank=3)
    m = mount_factory(ns_text=namespace_text([("/ranked", [fsn_uri(nsdb, ranked)], None),
                                              ("/going", [fsn_uri(nsdb, going)], None)]))
    m.start()
    assert marker(m, "ranked") == b"c"
    assert fsn_line(m, fsn_uri(nsdb, ranked))["locations"] == ";".join([c, b, a])
    assert marker(m, "going") == b"b"
    assert fsn_line(m, fsn_uri(nsdb, going))["locations"] == b


def test_ttl_honoured(mount_factory, nsdb):
    """An FSL changed in LDAP is followed once the FSN's TTL has passed, not before."""
    tag = uuid.uuid4().hex[:8]
    old, new = nfs_dir(f"nsdb-old-{tag}", b"old"), nfs_dir(f"nsdb-new-{tag}", b"new")
    ttl = 4
    fsn = nsdb.add_fsn(ttl=ttl)
    fsl = nsdb.add_fsl(fsn, old)
    m = mount_factory(ns_text=namespace_text([("/t", [fsn_uri(nsdb, fsn)],
                                               {"attr-timeout": "0.2"})]))
    m.start()
    assert marker(m, "t") == b"old"
    fetched = time.monotonic()
    nsdb.modify(nsdb.fsl_dn(fsn, fsl), "fedfsNfsURI", new)
    time.sleep(0.5)  # the kernel's entry (0.2 s) has expired: the daemon is asked again
    assert time.monotonic() - fetched < ttl - 1
    assert marker(m, "t") == b"old", "followed the change before the TTL ended"
    assert poll(lambda: marker(m, "t") == b"new", ttl + 5), "did not follow the changed FSL"
    assert time.monotonic() - fetched >= ttl - 0.5


def test_provider_down_consumer_answers(mount_factory, private_nsdb):
    """With the provider stopped, the replica listed for it answers."""
    servers, n = private_nsdb
    uri = nfs_dir(f"nsdb-rep-{uuid.uuid4().hex[:8]}", b"replica")
    fsn = n.add_fsn(ttl=1)
    fsl = n.add_fsl(fsn, uri)
    n.replicated(n.fsl_dn(fsn, fsl))
    servers.stop("nsdb-provider")
    text = namespace_text([("/r", [fsn_uri(n, fsn)], {"attr-timeout": "0.2"})])
    text += f"\n[nsdb 127.0.0.1:{n.port}]\nreplicas=127.0.0.1:{n.consumer_port}\n"
    m = mount_factory(ns_text=text)
    m.start()
    assert marker(m, "r") == b"replica"
    line = fsn_line(m, fsn_uri(n, fsn))
    assert line["state"] == "fresh" and line["server"] == f"127.0.0.1:{n.consumer_port}", line


def test_directory_down_stale_then_ehostdown(mount_factory, private_nsdb):
    """Both NSDB servers stopped: the last answer serves past its TTL for nsdb-stale-grace, and
    /.fedfuse/locations says it is stale; then EHOSTDOWN; the directory back, it is followed
    again."""
    servers, n = private_nsdb
    uri = nfs_dir(f"nsdb-stale-{uuid.uuid4().hex[:8]}", b"stale")
    ttl, grace = 1, 15  # stopping both slapd takes a few seconds of the grace
    fsn = n.add_fsn(ttl=ttl)
    n.replicated(n.fsl_dn(fsn, n.add_fsl(fsn, uri)))
    text = namespace_text([("/s", [fsn_uri(n, fsn)], {"attr-timeout": "0.2", "timeout": "3"})],
                          {"nsdb_stale_grace": grace})
    text += f"\n[nsdb 127.0.0.1:{n.port}]\nreplicas=127.0.0.1:{n.consumer_port}\n"
    m = mount_factory(ns_text=text)
    m.expect_log("no NSDB server answers")
    m.start()
    assert marker(m, "s") == b"stale"
    fetched = time.monotonic()
    servers.stop("nsdb")
    time.sleep(max(0.0, fetched + ttl + 0.5 - time.monotonic()))
    assert time.monotonic() - fetched < ttl + grace - 1, "stopping the NSDB took the grace"
    assert marker(m, "s") == b"stale"  # past the TTL, inside the grace
    assert fsn_line(m, fsn_uri(n, fsn))["state"] == "stale"

    def gone():
        try:
            os.stat(os.path.join(m.mnt, "s", "marker"))
            return False
        except OSError as e:
            return e.errno
    assert poll(gone, ttl + grace + 10) == errno.EHOSTDOWN
    assert fsn_line(m, fsn_uri(n, fsn))["state"] == "down"
    servers.start("nsdb")
    assert poll(lambda: marker(m, "s") == b"stale", 20), "not followed once the NSDB is back"
    assert fsn_line(m, fsn_uri(n, fsn))["state"] == "fresh"


def hide_from_readers(servers, n, dn, attr):
    """An access rule on the provider by which anonymous readers do not see `attr` of `dn`: to
    them the entry lacks it, as an entry of a schema without that rule would."""
    sock = os.path.join(servers.state, "slapd", "provider", "ldapi")
    ldif = ("dn: olcDatabase={1}mdb,cn=config\nchangetype: modify\nadd: olcAccess\n"
            f'olcAccess: {{0}}to dn.exact="{dn}" attrs={attr} by dn.exact="{n.admin}" write '
            "by * none\n")
    p = subprocess.run(["ldapmodify", "-Q", "-Y", "EXTERNAL", "-H",
                        "ldapi://" + urllib.parse.quote(sock, safe="")],
                       input=ldif, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_malformed_ldap_data_left_out(mount_factory, private_nsdb):
    """An FSL without a URI, or whose URI escapes its export, is left out with a log line; an FSN
    with no usable FSL fails the lookup; the daemon goes on. (A UUID that is none the directory
    refuses itself, its syntax being RFC 4530's; fedfuse checks it again, and a junction's when it
    is parsed: test_junctions.py.)"""
    servers, n = private_nsdb
    good = nfs_dir(f"nsdb-good-{uuid.uuid4().hex[:8]}", b"good")
    fsn = n.add_fsn(ttl=300)
    hidden = n.add_fsl(fsn, good)
    hide_from_readers(servers, n, n.fsl_dn(fsn, hidden), "fedfsNfsURI")
    n.add_fsl(fsn, good.replace("/nsdb-good", "/x/../../nsdb-good"), rank=1)
    n.add_fsl(fsn, good, rank=9)
    empty = n.add_fsn(ttl=300)
    n.add_fsl(empty, "nfs://127.0.0.1/x/../../etc")
    m = mount_factory(ns_text=namespace_text([("/m", [fsn_uri(n, fsn)], None),
                                              ("/e", [fsn_uri(n, empty)], None)]))
    for pattern in ("has no fedfsNfsURI, left out", "is not normalised.*left out",
                    "has no usable FSL"):
        m.expect_log(pattern)
    m.start()
    assert marker(m, "m") == b"good"
    assert fsn_line(m, fsn_uri(n, fsn))["locations"] == good
    expect_errno(errno.ENOENT, os.stat, os.path.join(m.mnt, "e", "marker"))
    assert fsn_line(m, fsn_uri(n, empty))["state"] == "error"
    log = m.log_text()
    assert "has no fedfsNfsURI, left out" in log and "is not normalised" in log
    assert marker(m, "m") == b"good"  # still serving


def test_rfc_form_of_nfs_uri(mount_factory, nsdb):
    """RFC 7532 writes an NFS URI's path as "/" then "/COMPONENT" for each component
    (nfs://host//export/a): it names the same folder as the single-slash form."""
    uri = nfs_dir(f"nsdb-rfc-{uuid.uuid4().hex[:8]}", b"rfc")
    rfc = uri.replace("nfs://127.0.0.1/", "nfs://127.0.0.1//", 1)
    fsn = nsdb.add_fsn(ttl=300)
    nsdb.add_fsl(fsn, rfc)
    m = mount_factory(ns_text=namespace_text([("/r", [fsn_uri(nsdb, fsn)], None)]))
    m.start()
    assert marker(m, "r") == b"rfc"
    assert fsn_line(m, fsn_uri(nsdb, fsn))["locations"] == uri


def slapd_pid(servers, role):
    with open(os.path.join(servers.state, "slapd", role, "slapd.pid")) as f:
        return int(f.read().strip())


def test_frozen_provider_replica_within_timeout(mount_factory, private_nsdb):
    """A provider that accepts connections but never answers (SIGSTOP) costs its share of the
    timeout, no more: the replica answers and the lookup ends within the referral's timeout."""
    servers, n = private_nsdb
    uri = nfs_dir(f"nsdb-frozen-{uuid.uuid4().hex[:8]}", b"frozen")
    fsn = n.add_fsn(ttl=300)
    n.replicated(n.fsl_dn(fsn, n.add_fsl(fsn, uri)))
    text = namespace_text([("/f", [fsn_uri(n, fsn)], {"timeout": "4"})])
    text += f"\n[nsdb 127.0.0.1:{n.port}]\nreplicas=127.0.0.1:{n.consumer_port}\n"
    m = mount_factory(ns_text=text)
    m.start()
    pid = slapd_pid(servers, "provider")
    os.kill(pid, signal.SIGSTOP)
    try:
        content, error, elapsed = timed(marker, m, "f", bound=4 + 2)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert error is None, error
    assert content == b"frozen"
    line = fsn_line(m, fsn_uri(n, fsn))
    assert line["server"] == f"127.0.0.1:{n.consumer_port}", line


def test_skip_hides_fsn_referral_while_nsdb_down(mount_factory, private_nsdb):
    """on-unreachable=skip: a referral naming an FSN leaves the listing while its NSDB does not
    answer (and its last answer is past its grace), and comes back with it."""
    servers, n = private_nsdb
    uri = nfs_dir(f"nsdb-skip-{uuid.uuid4().hex[:8]}", b"skip")
    fsn = n.add_fsn(ttl=1)
    n.add_fsl(fsn, uri)
    m = mount_factory(ns_text=namespace_text(
        [("/k", [fsn_uri(n, fsn)], {"attr-timeout": "0.2", "on-unreachable": "skip"})],
        {"nsdb_stale_grace": 0, "attr_timeout": 0.2}))
    m.expect_log("NSDB 127.0.0.1")
    m.start()
    assert marker(m, "k") == b"skip"
    servers.stop("nsdb-provider")

    def hidden():
        try:
            os.stat(os.path.join(m.mnt, "k"))
            return False
        except FileNotFoundError:
            return "k" not in os.listdir(m.mnt)
    assert poll(hidden, 20), "the referral stayed while its NSDB was down"
    servers.start("nsdb-provider")
    assert poll(lambda: marker(m, "k") == b"skip", 20)
    assert "k" in os.listdir(m.mnt)
