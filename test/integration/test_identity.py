# SPDX-License-Identifier: GPL-2.0-or-later
"""Every user as themself on an SMB referral (identity=per-user): on one allow_other mount, each
caller's operations reach the server logged on with that caller's own credentials, from the
referral's credentials-dir; a caller without a file there is refused, root included. The
share `multi` of the test servers has one/ (fedfusetest's), two/ (fedfusetest2's) and both/.
What a user may do is what the server lets that user do, in both directions: the kernel's own
check (default_permissions) refuses nothing the server allows, and what the server refuses
fails. With sec=krb5 each caller logs on with their own Kerberos tickets instead, against a
Samba AD domain controller the tests start in a network namespace of its own."""

import errno
import os
import pathlib
import pwd
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import SRCDIR, read_servers_env, run_daemon
from posix_util import User, as_user
from posix_util import users_fixture  # noqa: F401 (fixtures)
from util import namespace_text, wait_until

SHARED = read_servers_env()
ONE, TWO = "fedfusetest", "fedfusetest2"  # scripts/servers/samba.sh


def need(*keys):
    missing = [k for k in keys if not SHARED.get(k)]
    if missing:
        pytest.fail(f"the test servers give no {', '.join(missing)} "
                    "(run scripts/test-servers start)", pytrace=False)


@pytest.fixture
def per_user(mount_factory, tmp_path):
    """A mount of the share `multi` with identity=per-user; credentials for ONE and TWO (one
    by user name, one by uid) and none for nobody. Returns (mount, referral dir, share dir)."""
    need("SMB_MULTI_URI", "SMB_MULTI_DIR", "SMB_CRED", "SMB_CRED2")
    creds = tmp_path / "creds"
    creds.mkdir(mode=0o700)
    shutil.copyfile(SHARED["SMB_CRED"], creds / ONE)
    shutil.copyfile(SHARED["SMB_CRED2"], creds / str(pwd.getpwnam(TWO).pw_uid))
    for f in creds.iterdir():
        os.chmod(f, 0o600)
    m = mount_factory(ns_text=namespace_text([("/m", [SHARED["SMB_MULTI_URI"]],
                                               {"identity": "per-user",
                                                "credentials-dir": str(creds)})])).start()
    # a caller without credentials is refused, and the log says why
    m.expect_log(r"no credentials for uid \d+")
    d = SHARED["SMB_MULTI_DIR"]
    for sub in ("one", "two", "both"):
        for name in os.listdir(os.path.join(d, sub)):
            p = os.path.join(d, sub, name)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    return m, os.path.join(m.mnt, "m"), d


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return True


def test_each_user_acts_as_themself(per_user):
    m, r, d = per_user
    one, two = User(ONE), User(TWO)
    # each may write where the server lets them, and the file is theirs on the server
    assert as_user(one, write, "m/one/a", b"by one", cwd=m.mnt)
    assert as_user(two, write, "m/two/b", b"by two", cwd=m.mnt)
    assert pwd.getpwuid(os.stat(os.path.join(d, "one", "a")).st_uid).pw_name == ONE
    assert pwd.getpwuid(os.stat(os.path.join(d, "two", "b")).st_uid).pw_name == TWO
    # and not where the server does not: the kernel's check let it through, the server said no
    for user, path in ((one, "m/two/x"), (two, "m/one/y")):
        with pytest.raises(OSError) as e:
            as_user(user, write, path, b"no", cwd=m.mnt)
        assert e.value.errno == errno.EACCES, (user.name, path)
    assert sorted(os.listdir(os.path.join(d, "one"))) == ["a"]
    assert sorted(os.listdir(os.path.join(d, "two"))) == ["b"]
    # both may write in both/, each as themself
    assert as_user(one, write, "m/both/from-one", b"1", cwd=m.mnt)
    assert as_user(two, write, "m/both/from-two", b"2", cwd=m.mnt)
    owners = {n: pwd.getpwuid(os.stat(os.path.join(d, "both", n)).st_uid).pw_name
              for n in os.listdir(os.path.join(d, "both"))}
    assert owners == {"from-one": ONE, "from-two": TWO}
    # the server sees one session per user
    out = subprocess.run(["smbstatus", "-b", "-s", os.path.join(
        os.path.dirname(SHARED["SMB_CRED"]), "smb.conf")], capture_output=True, text=True,
        timeout=30)
    assert ONE in out.stdout and TWO in out.stdout, out.stdout + out.stderr


def test_caller_without_credentials_refused(per_user):
    m, r, d = per_user
    nobody = User("nobody")
    for call in (lambda: os.listdir("m"), lambda: os.stat("m/both"),
                 lambda: write("m/both/z", b"z")):
        with pytest.raises(OSError) as e:
            as_user(nobody, call, cwd=m.mnt)
        assert e.value.errno == errno.EACCES
    # root is a caller like any other: no file for it, no access
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(r, "both"))
    assert e.value.errno == errno.EACCES
    assert os.listdir(os.path.join(d, "both")) == []


def test_per_user_needs_credentials_dir(mount_factory, tmp_path):
    """identity=per-user without credentials-dir, or with a directory others may write, is
    refused when the namespace is loaded, with the file and line."""
    need("SMB_MULTI_URI")
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    for keys, want in (({"identity": "per-user"}, "needs credentials-dir"),
                       ({"identity": "per-user", "credentials-dir": str(loose)},
                        "writable by others"),
                       ({"identity": "every-user"}, "is not 'shared' or 'per-user'")):
        ns = tmp_path / "ns.conf"
        ns.write_text(namespace_text([("/m", [SHARED["SMB_MULTI_URI"]], keys)]))
        p = run_daemon(["--check", str(ns)])
        assert p.returncode != 0 and want in p.stderr and "ns.conf:" in p.stderr, p.stderr


@pytest.fixture
def home_of_two(tmp_path):
    """TWO's home directory, for the length of the test, is a fresh directory of theirs (the
    test servers make the SMB users without one)."""
    home = tmp_path / "home-two"
    home.mkdir()
    pw = pwd.getpwnam(TWO)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, 0o755)
    set_home(TWO, str(home))
    try:
        yield home
    finally:
        set_home(TWO, pw.pw_dir)


def set_home(user, home):
    """usermod --home, waiting out the smbd session processes that run as the user (usermod
    refuses a user in use, status 8) for up to 20 s."""
    def done():
        r = subprocess.run(["usermod", "--home", home, user], capture_output=True, text=True)
        assert r.returncode in (0, 8), r.stderr
        return r.returncode == 0
    assert wait_until(done, 20.0), f"usermod --home {home} {user}: the user stays in use"


def user_file(path, owner, mode=0o600):
    shutil.copyfile(SHARED["SMB_CRED2"], path)
    pw = pwd.getpwnam(owner) if isinstance(owner, str) else pwd.getpwuid(owner)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    os.chmod(path, mode)


def test_users_own_credentials_file(home_of_two, mount_factory):
    """identity=per-user with user-credentials: a user's own file below their home directory,
    theirs and private, logs them on as themself. A file that is not theirs, one reached
    through a symlink, and a user without a file are refused (EACCES), each with a log line
    that says why."""
    need("SMB_MULTI_URI", "SMB_MULTI_DIR", "SMB_CRED2")
    cfg = home_of_two / "cfg"
    text = namespace_text([("/m", [SHARED["SMB_MULTI_URI"]],
                            {"identity": "per-user", "user-credentials": "cfg/smb.cred"})])
    one, two = User(ONE), User(TWO)

    def refused(name, why):
        m = mount_factory(ns_text=text, name=name).start()
        m.expect_log(why)
        m.expect_log(r"no credentials for uid \d+")  # the harness's own calls, as root
        with pytest.raises(OSError) as e:
            as_user(two, os.listdir, "m/two", cwd=m.mnt)
        assert e.value.errno == errno.EACCES
        assert wait_until(lambda: re.search(why, m.log_text()), 5.0), m.log_text()

    # the directory on the way is a symlink (to a directory with a good file): not followed
    elsewhere = home_of_two / "elsewhere"
    elsewhere.mkdir()
    user_file(elsewhere / "smb.cred", TWO)
    os.symlink("elsewhere", cfg)
    refused("symlink", r"cfg/smb\.cred: Not a directory|cfg/smb\.cred: Too many levels")
    os.unlink(cfg)
    # the file is not the user's own
    cfg.mkdir()
    user_file(cfg / "smb.cred", "root")
    refused("not-theirs", r"owned by uid 0, not by uid %d" % two.uid)
    # the user's own, private: in
    os.unlink(cfg / "smb.cred")
    user_file(cfg / "smb.cred", TWO)
    m = mount_factory(ns_text=text, name="good").start()
    m.expect_log(r"no credentials for uid \d+")
    d = SHARED["SMB_MULTI_DIR"]
    for name in os.listdir(os.path.join(d, "two")):
        os.unlink(os.path.join(d, "two", name))
    assert as_user(two, write, "m/two/mine", b"by two", cwd=m.mnt)
    assert pwd.getpwuid(os.stat(os.path.join(d, "two", "mine")).st_uid).pw_name == TWO
    # ONE has no home directory, so no file: refused
    with pytest.raises(OSError) as e:
        as_user(one, os.listdir, "m/one", cwd=m.mnt)
    assert e.value.errno == errno.EACCES
    why = r"no credentials for uid %d \(%s\) at ~/cfg/smb\.cred" % (one.uid, ONE)
    m.expect_log(why)
    assert wait_until(lambda: re.search(why, m.log_text()), 5.0), m.log_text()


# ---- sec=krb5 ----------------------------------------------------------------------------------

def test_kerberos_refused_where_it_cannot_work(tmp_path):
    """sec=krb5 is refused when the namespace is loaded, with the file and line, on a location
    that cannot use it: nfs:// (libnfs has no RPCSEC_GSS), file://, an SMB server given by
    address (no service principal to ask a ticket for)."""
    for uri, want in (("nfs://127.0.0.1/x", "sec=krb5 is for smb:// locations"),
                      ("file:///tmp", "sec=krb5 is for smb:// locations"),
                      ("smb://127.0.0.1/s", "sec=krb5 needs the server's host name"),
                      ("smb://localhost/s", "sec=krb5 needs the server's host name")):
        ns = tmp_path / "ns.conf"
        ns.write_text(namespace_text([("/m", [uri], {"sec": "krb5"})]))
        p = run_daemon(["--check", str(ns)])
        assert p.returncode != 0 and want in p.stderr and "ns.conf:" in p.stderr, p.stderr


@pytest.fixture(scope="module")
def addc():
    """The Samba AD DC of scripts/test-servers (addc), for this module's Kerberos tests."""
    script = os.path.join(SRCDIR, "scripts", "test-servers")
    r = subprocess.run([script, "start", "addc"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        yield read_servers_env()
    finally:
        subprocess.run([script, "stop", "addc"], capture_output=True, timeout=60)


def kinit(dc, user, principal, ccache):
    """A ticket for `principal` (a domain user) in `ccache`, got by the local user `user`
    (a User), so that the cache is theirs: kinit run as them in the DC's network namespace."""
    with open(os.path.join(dc["ADDC_PWDIR"], principal + ".pw")) as f:
        password = f.readline()
    env = dict(os.environ, KRB5_CONFIG=dc["ADDC_KRB5_CONFIG"])
    r = subprocess.run(["nsenter", "--net=/run/netns/" + dc["ADDC_NETNS"], "setpriv",
                        f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
                        "kinit", "-c", "FILE:" + str(ccache), f"{principal}@{dc['ADDC_REALM']}"],
                       input=password, capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def krb(addc, mount_factory, request, users):
    """A mount of the DC's share with sec=krb5, run in the DC's network namespace, the ticket
    caches in a directory of the test (krb5-ccache=): ONE holds alice's tickets, TWO bob's,
    users["b"] (posix_util.USER_B, created here when missing) none. Returns (mount, the share's
    folder, the caches' folder)."""
    # where each user may make their own (the test's folder is root's alone)
    caches = pathlib.Path(tempfile.mkdtemp(prefix="fedfuse-krb5cc-"))
    request.addfinalizer(lambda: shutil.rmtree(caches, ignore_errors=True))
    os.chmod(caches, 0o1777)
    kinit(addc, User(ONE), "alice", caches / f"krb5cc_{User(ONE).uid}")
    kinit(addc, User(TWO), "bob", caches / f"krb5cc_{User(TWO).uid}")
    text = namespace_text([("/k", [addc["ADDC_URI"]],
                            {"sec": "krb5", "krb5-ccache": str(caches / "krb5cc_%U")})])
    m = mount_factory(ns_text=text, wrapper=[
        "nsenter", "--net=/run/netns/" + addc["ADDC_NETNS"],
        "env", "KRB5_CONFIG=" + addc["ADDC_KRB5_CONFIG"]]).start()
    m.expect_log(r"Kerberos ticket cache")  # the harness's own calls, as root
    d = addc["ADDC_DIR"]
    for sub in ("alice", "bob", "both"):
        for name in os.listdir(os.path.join(d, sub)):
            os.unlink(os.path.join(d, sub, name))
    return m, d, caches


def test_kerberos_each_user_with_own_ticket(krb, addc):
    """sec=krb5: each caller's operations reach the server as the principal of their own
    ticket cache: their files are that principal's on the server, they may do what it may and
    nothing more, and the server sees one session per user."""
    m, d, caches = krb
    one, two = User(ONE), User(TWO)
    alice_id = os.stat(os.path.join(d, "alice")).st_uid  # made by alice over SMB
    bob_id = os.stat(os.path.join(d, "bob")).st_uid
    assert alice_id != bob_id
    assert as_user(one, write, "k/alice/a", b"by alice", cwd=m.mnt)
    assert as_user(two, write, "k/bob/b", b"by bob", cwd=m.mnt)
    assert os.stat(os.path.join(d, "alice", "a")).st_uid == alice_id
    assert os.stat(os.path.join(d, "bob", "b")).st_uid == bob_id
    assert as_user(two, lambda: open("k/alice/a", "rb").read(), cwd=m.mnt) == b"by alice"
    for user, path in ((one, "k/bob/x"), (two, "k/alice/y")):
        with pytest.raises(OSError) as e:
            as_user(user, write, path, b"no", cwd=m.mnt)
        assert e.value.errno == errno.EACCES, (user.name, path)
    assert os.listdir(os.path.join(d, "alice")) == ["a"]
    assert os.listdir(os.path.join(d, "bob")) == ["b"]
    assert as_user(one, write, "k/both/from-alice", b"1", cwd=m.mnt)
    assert as_user(two, write, "k/both/from-bob", b"2", cwd=m.mnt)
    owners = {n: os.stat(os.path.join(d, "both", n)).st_uid
              for n in os.listdir(os.path.join(d, "both"))}
    assert owners == {"from-alice": alice_id, "from-bob": bob_id}
    out = subprocess.run(["smbstatus", "-b", "-s", addc["ADDC_SMB_CONF"]],
                         capture_output=True, text=True, timeout=30).stdout
    users = {line.split()[1] for line in out.splitlines()
             if line.split() and line.split()[0].isdigit()}
    assert users == {str(alice_id), str(bob_id)}, out


def test_kerberos_without_ticket_refused(krb, addc, users):
    """A caller without a ticket cache, root included, gets EACCES, and the log says where the
    daemon looked; so does one whose cache is a symlink to another user's, or not theirs. A
    ticket got afterwards is taken at a later logon (a refusal is remembered for 2 s)."""
    m, d, caches = krb
    three = users["b"]
    mine = caches / f"krb5cc_{three.uid}"

    def refused(why):
        def once():
            with pytest.raises(OSError) as e:
                as_user(three, os.listdir, "k/both", cwd=m.mnt)
            assert e.value.errno == errno.EACCES
            return re.search(why, m.log_text())
        assert wait_until(once, 10.0, 0.2), m.log_text()

    refused(r"no Kerberos ticket cache at %s \(kinit\); uid %d is refused" %
            (re.escape(str(mine)), three.uid))
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(m.mnt, "k", "both"))
    assert e.value.errno == errno.EACCES
    assert os.listdir(os.path.join(d, "both")) == []
    # another user's cache, through a symlink of this user's: not followed
    os.symlink(caches / f"krb5cc_{User(TWO).uid}", mine)
    refused(r"Kerberos ticket cache %s is a symlink" % re.escape(str(mine)))
    os.unlink(mine)
    # a copy of it that is not theirs
    shutil.copyfile(caches / f"krb5cc_{User(TWO).uid}", mine)
    os.chmod(mine, 0o600)
    refused(r"Kerberos ticket cache %s is owned by uid 0, not by uid %d" %
            (re.escape(str(mine)), three.uid))
    os.unlink(mine)
    assert os.listdir(os.path.join(d, "both")) == []
    # their own ticket (for alice): in, as alice

    def writes():
        try:
            return as_user(three, write, "k/both/three", b"3", cwd=m.mnt)
        except PermissionError:
            return False
    kinit(addc, three, "alice", mine)
    assert wait_until(writes, 10.0, 0.2), m.log_text()
    assert os.stat(os.path.join(d, "both", "three")).st_uid == \
        os.stat(os.path.join(d, "alice")).st_uid
