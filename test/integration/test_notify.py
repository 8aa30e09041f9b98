# SPDX-License-Identifier: GPL-2.0-or-later
"""Change notification of local locations (DESIGN §6): changes that other programs make to a
watched file:// location are visible through the mount at once, although the kernel caches the
location's entries, attributes and listings for long; the daemon's own changes are not reported
back to it.

Every mount here sets attr-timeout to 600 s, so that a change seen within the few seconds a test
waits was seen because it was reported, not because a cache expired. The daemon runs as root,
as in CI, so the file:// locations are watched with fanotify; the last tests run it as an
ordinary user (nobody), where they are watched with inotify.
"""

import os
import shutil
import stat
import tarfile
import tempfile
import time

import pytest

from conftest import Mount

from servers_util import read_locations, read_stats, location_ops
from util import mkdirs, namespace_text, read_file, wait_until, write_file

SEEN = 5.0  # seconds a change by others may take to show (events are delivered asynchronously)
LONG = "600"  # attr-timeout: what an unwatched location would cache for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="watching needs a daemon run by root")


def ns_text(referrals, **options):
    """referrals: [(path, dir, {key: value})], all file:// locations."""
    return namespace_text([(p, ["file://" + d], keys) for p, d, keys in referrals],
                          dict({"attr_timeout": LONG, "timeout": "5"}, **options))


def watched(m, ns_path, d):
    """The location's watched= field in /.fedfuse/locations (after something was looked up)."""
    return read_locations(m.mnt)[(ns_path, "file://" + d)].get("watched")


def invalidations(m):
    for line in read_stats(m.mnt)["text"].splitlines():
        if line.startswith("notify invalidations="):
            return int(line.split("=", 1)[1])
    raise AssertionError("no 'notify invalidations=' line in /.fedfuse/stats")


@pytest.fixture
def one(mount_factory, tmp_path):
    """A mount of one watched directory at /a; returns (mount, backing dir, mount dir)."""
    d = mkdirs(str(tmp_path / "loc"))
    m = mount_factory(ns_text=ns_text([("/a", d, None)])).start()
    a = os.path.join(m.mnt, "a")
    os.listdir(a)
    assert watched(m, "/a", d) == "yes", m.log_text()
    return m, d, a


def test_attributes_and_data_of_others_seen(one):
    m, d, a = one
    write_file(os.path.join(d, "f"), b"one\n")
    f = os.path.join(a, "f")
    assert read_file(f) == b"one\n"  # the kernel now caches its pages and attributes
    assert os.stat(f).st_size == 4
    with open(os.path.join(d, "f"), "ab") as w:
        w.write(b"two\n")
    assert wait_until(lambda: os.stat(f).st_size == 8, SEEN), "a size change by others not seen"
    assert read_file(f) == b"one\ntwo\n"
    with open(os.path.join(d, "f"), "r+b") as w:  # same size, new bytes
        w.write(b"ONE")
    assert wait_until(lambda: read_file(f) == b"ONE\ntwo\n", SEEN), "new bytes not seen"
    os.chmod(os.path.join(d, "f"), 0o600)
    assert wait_until(lambda: stat.S_IMODE(os.stat(f).st_mode) == 0o600, SEEN)


def test_entries_of_others_seen(one):
    m, d, a = one
    os.mkdir(os.path.join(d, "sub"))
    write_file(os.path.join(d, "sub", "old"), b"x")
    sub = os.path.join(a, "sub")
    assert sorted(os.listdir(sub)) == ["old"]  # the listing and the entry are cached now
    assert os.path.exists(os.path.join(sub, "old"))

    write_file(os.path.join(d, "sub", "new"), b"y")
    assert wait_until(lambda: sorted(os.listdir(sub)) == ["new", "old"], SEEN), \
        "a file created by others is missing from the listing"
    assert read_file(os.path.join(sub, "new")) == b"y"

    os.unlink(os.path.join(d, "sub", "old"))
    assert wait_until(lambda: not os.path.lexists(os.path.join(sub, "old")), SEEN), \
        "a file removed by others is still there"
    assert sorted(os.listdir(sub)) == ["new"]

    os.rename(os.path.join(d, "sub", "new"), os.path.join(d, "moved"))
    assert wait_until(lambda: os.path.exists(os.path.join(a, "moved")), SEEN)
    assert wait_until(lambda: not os.path.lexists(os.path.join(sub, "new")), SEEN)
    assert read_file(os.path.join(a, "moved")) == b"y"

    os.rmdir(os.path.join(d, "sub"))
    assert wait_until(lambda: not os.path.lexists(sub), SEEN), "a removed directory is still there"


def test_cache_outlives_attr_timeout(mount_factory, tmp_path):
    """Watched, the kernel keeps what it learned beyond attr-timeout: stat after the timeout
    asks the backend nothing."""
    d = mkdirs(str(tmp_path / "loc"))
    write_file(os.path.join(d, "f"), b"x")
    m = mount_factory(ns_text=ns_text([("/a", d, None)], attr_timeout="0.2")).start()
    f = os.path.join(m.mnt, "a", "f")
    # open: the kernel keeps the entry and inode whatever reclaims memory meanwhile
    pin = os.open(f, os.O_RDONLY)
    try:
        os.stat(f)
        assert watched(m, "/a", d) == "yes"
        before = location_ops(read_stats(m.mnt), "file://" + d)
        time.sleep(0.6)  # past attr-timeout: the time passing is the point
        for _ in range(5):
            os.stat(f)
        after = location_ops(read_stats(m.mnt), "file://" + d)
    finally:
        os.close(pin)
    assert after.get("getattr") == before.get("getattr"), (before, after)
    assert after.get("lookup") == before.get("lookup"), (before, after)


def test_own_changes_not_reported(one):
    """What the daemon does itself comes back as events it drops: making and changing files
    through the mount sends the kernel no invalidation."""
    m, d, a = one
    os.listdir(a)
    n0 = invalidations(m)
    for i in range(20):
        p = os.path.join(a, f"f{i}")
        write_file(p, b"data" * i)
        os.chmod(p, 0o640)
        os.rename(p, p + ".r")
    os.mkdir(os.path.join(a, "dir"))
    os.setxattr(os.path.join(a, "dir"), "user.note", b"v")
    for i in range(0, 20, 2):
        os.unlink(os.path.join(a, f"f{i}.r"))
    # Nothing to wait for but time: any event of ours would have arrived by then (events come
    # in order, and the change by others below is seen within SEEN).
    time.sleep(0.5)
    assert invalidations(m) == n0
    # and others' changes are counted: to a file the kernel holds (open, so that nothing
    # reclaims its inode meanwhile)
    pin = os.open(os.path.join(a, "f1.r"), os.O_RDONLY)
    try:
        write_file(os.path.join(d, "f1.r"), b"other")
        assert wait_until(lambda: invalidations(m) > n0, SEEN)
    finally:
        os.close(pin)


def test_junction_made_by_others_entered(one, tmp_path):
    """An empty directory that another program turns into a junction is entered at once."""
    m, d, a = one
    target = mkdirs(str(tmp_path / "target"))
    write_file(os.path.join(target, "inside"), b"t")
    os.mkdir(os.path.join(d, "j"))
    j = os.path.join(a, "j")
    assert os.listdir(j) == []
    os.setxattr(os.path.join(d, "j"), "user.fedfuse.locations", ("file://" + target).encode())
    assert wait_until(lambda: os.listdir(j) == ["inside"], SEEN), "the new junction not entered"
    os.removexattr(os.path.join(d, "j"), "user.fedfuse.locations")
    assert wait_until(lambda: os.listdir(j) == [], SEEN), "the removed junction still entered"


@pytest.mark.parametrize("where", ["namespace", "referral"])
def test_watch_false(mount_factory, tmp_path, where):
    d = mkdirs(str(tmp_path / "loc"))
    if where == "namespace":
        text = ns_text([("/a", d, None)], watch="false")
    else:
        text = ns_text([("/a", d, {"watch": "false"})])
    m = mount_factory(ns_text=text).start()
    os.listdir(os.path.join(m.mnt, "a"))
    assert watched(m, "/a", d) == "no"
    with open(os.path.join(m.mnt, ".fedfuse", "namespace")) as f:
        assert " watch=false " in f.read()


def test_overlapping_referrals_not_watched(mount_factory, tmp_path):
    """Two referrals showing the same objects are not watched: the daemon drops its own events,
    and a change made through one would never reach the other's kernel cache."""
    top, sub = mkdirs(str(tmp_path / "top"), str(tmp_path / "top" / "sub"))
    other = mkdirs(str(tmp_path / "other"))
    m = mount_factory(ns_text=ns_text([("/top", top, None), ("/sub", sub, None),
                                       ("/other", other, None)], attr_timeout="0.2")).start()
    for p in ("top", "sub", "other"):
        os.listdir(os.path.join(m.mnt, p))
    assert watched(m, "/top", top) == "no"
    assert watched(m, "/sub", sub) == "no"
    assert watched(m, "/other", other) == "yes"
    # a change through one is seen through the other once attr-timeout passes
    via_top = os.path.join(m.mnt, "top", "sub", "f")
    via_sub = os.path.join(m.mnt, "sub", "f")
    write_file(via_top, b"1")
    assert read_file(via_sub) == b"1"
    write_file(via_top, b"22")
    assert wait_until(lambda: read_file(via_sub) == b"22", SEEN)


def test_unwatchable_location_says_why(mount_factory, tmp_path):
    """A location on a filesystem whose changes may come from elsewhere (here a FUSE mount,
    the fedfuse mount of another daemon) is not watched, and the log says why."""
    inner_dir = mkdirs(str(tmp_path / "inner"))
    write_file(os.path.join(inner_dir, "f"), b"x")
    inner = mount_factory(ns_text=ns_text([("/x", inner_dir, None)]), name="inner-m").start()
    via = os.path.join(inner.mnt, "x")
    outer = mount_factory(ns_text=ns_text([("/y", via, None)], attr_timeout="1"),
                          name="outer-m").start()
    assert read_file(os.path.join(outer.mnt, "y", "f")) == b"x"
    assert watched(outer, "/y", via) == "no"
    outer.expect_log(r"changes by others are not watched: its filesystem is not one")
    assert outer.stop() == []  # before the mount it stands on


# ---- a daemon run by an ordinary user: inotify ---------------------------------------------

NOBODY = 65534  # nobody:nogroup


@pytest.fixture
def as_nobody(tmp_path):
    """A mount of one location served by a daemon run as nobody: (mount, backing dir). The
    user may open /dev/fuse and mount with allow_other (the harness mounts so) for the test's
    length; both are put back after."""
    fuse_mode = stat.S_IMODE(os.stat("/dev/fuse").st_mode)
    conf = "/etc/fuse.conf"
    old_conf = open(conf).read() if os.path.exists(conf) else None
    os.chmod("/dev/fuse", 0o666)
    if "user_allow_other" not in [l.strip() for l in (old_conf or "").splitlines()]:
        with open(conf, "w") as f:
            f.write((old_conf or "") + "\nuser_allow_other\n")
    base = tempfile.mkdtemp(prefix="fedfuse-nobody-")  # tmp_path is root's alone (0700)
    os.chmod(base, 0o755)
    data, mnt = mkdirs(os.path.join(base, "data")), mkdirs(os.path.join(base, "mnt"))
    for d in (data, mnt):
        os.chown(d, NOBODY, NOBODY)
    ns = os.path.join(base, "namespace.conf")
    with open(ns, "w") as f:
        f.write(ns_text([("/a", data, None)]))
    m = Mount(mnt, ns, str(tmp_path / "fedfuse.log"),
              wrapper=["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
    try:
        m.start()
        os.listdir(os.path.join(m.mnt, "a"))
        yield m, data
    finally:
        problems = m.stop() if m.proc else []
        os.chmod("/dev/fuse", fuse_mode)
        if old_conf is None:
            os.unlink(conf)
        else:
            with open(conf, "w") as f:
                f.write(old_conf)
        shutil.rmtree(base, ignore_errors=True)
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def test_inotify_sees_changes_of_others(as_nobody):
    """An ordinary user's daemon watches its local location with inotify: changes made in the
    backing directory by another program show through the mount at once, attr-timeout=600
    notwithstanding."""
    m, d = as_nobody
    a = os.path.join(m.mnt, "a")
    assert watched(m, "/a", d) == "yes", m.log_text()
    assert os.listdir(a) == []
    write_file(os.path.join(d, "f"), b"one")
    assert wait_until(lambda: os.listdir(a) == ["f"], SEEN)
    assert os.stat(os.path.join(a, "f")).st_size == 3  # cached now
    write_file(os.path.join(d, "f"), b"one and more")
    assert wait_until(lambda: os.stat(os.path.join(a, "f")).st_size == 12, SEEN)
    os.chmod(os.path.join(d, "f"), 0o600)
    assert wait_until(lambda: stat.S_IMODE(os.stat(os.path.join(a, "f")).st_mode) == 0o600,
                      SEEN)
    # below a directory the kernel holds, made by the other program
    os.mkdir(os.path.join(d, "sub"))
    assert wait_until(lambda: os.path.isdir(os.path.join(a, "sub")), SEEN)
    assert os.listdir(os.path.join(a, "sub")) == []
    write_file(os.path.join(d, "sub", "g"), b"g")
    assert wait_until(lambda: os.listdir(os.path.join(a, "sub")) == ["g"], SEEN)
    os.rename(os.path.join(d, "sub", "g"), os.path.join(d, "h"))
    assert wait_until(lambda: sorted(os.listdir(a)) == ["f", "h", "sub"], SEEN)
    assert os.listdir(os.path.join(a, "sub")) == []
    os.unlink(os.path.join(d, "f"))
    assert wait_until(lambda: not os.path.exists(os.path.join(a, "f")), SEEN)
    assert invalidations(m) > 0


def test_inotify_own_changes_not_reported(as_nobody, tmp_path):
    """What the daemon does itself comes back from inotify too, without saying whose it is:
    the daemon marks what each operation changes and drops those events. A tar x of a few
    hundred files and directories through the mount, then renames and removals, sends the
    kernel (next to) no invalidation; unfiltered, every file cost several."""
    m, d = as_nobody
    a = os.path.join(m.mnt, "a")
    src = tmp_path / "src"
    files = 0
    for i in range(20):
        sub = src / f"d{i}"
        sub.mkdir(parents=True)
        for j in range(10):
            (sub / f"f{j}").write_bytes(os.urandom(100 + j))
            files += 1
    archive = str(tmp_path / "t.tar")
    with tarfile.open(archive, "w") as t:
        t.add(str(src), arcname="src")
    with tarfile.open(archive) as t:
        t.extractall(a)
    for i in range(20):
        os.rename(os.path.join(a, "src", f"d{i}", "f0"), os.path.join(a, "src", f"d{i}", "g"))
        os.unlink(os.path.join(a, "src", f"d{i}", "f1"))
        os.chmod(os.path.join(a, "src", f"d{i}", "f2"), 0o600)
    time.sleep(1.0)  # inotify's events reach the watcher within milliseconds
    # an event that the watcher reads later than half a second after its operation ended
    # (a loaded machine) is taken for another program's: a few may pass, never most
    assert invalidations(m) < files // 20, m.log_text()
    assert len(os.listdir(os.path.join(d, "src", "d0"))) == 9
