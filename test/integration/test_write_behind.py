# SPDX-License-Identifier: GPL-2.0-or-later
"""Write-behind on nfs:// and smb:// (write-behind=, README "NFS" and "SMB"): a write() is
answered before the server answers it, so everything that looks at the file meanwhile must see
what was written: a read through another descriptor (O_DIRECT, past the kernel's page cache),
the size through fstat() and stat(), a truncation issued after the writes. close() and fsync()
wait for every WRITE; with write-behind=0 every write() does. Small writes joined in the
daemon still reach the server soon while the file stays open. The daemon's memory stays bounded
by the window, however many files are written at once."""

import mmap
import os
import random
import threading
import time

import pytest

from conftest import file_uri
from test_sharing import export_dir
from util import namespace_text, read_file

KINDS = ["nfs3", "nfs4", "smb"]
MiB = 1 << 20


def mount(mount_factory, uri, window):
    keys = {} if window is None else {"write-behind": str(window)}
    return mount_factory(ns_text=namespace_text([("/x", [uri], keys)])).start()


def o_direct_read(path, size):
    """Read `size` bytes from the start of `path` past the kernel's page cache."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
        n = os.readv(fd, [buf])
        return bytes(buf[:n])
    finally:
        os.close(fd)


@pytest.mark.parametrize("window", [None, 0, 64])
@pytest.mark.parametrize("kind", KINDS)
def test_written_data_seen_before_close(mount_factory, kind, window):
    uri, d = export_dir(kind)
    m = mount(mount_factory, uri, window)
    path = os.path.join(m.mnt, "x", "f")
    data = random.Random(kind).randbytes(24 * MiB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, len(data), MiB):  # as cp and dd write
            assert os.write(fd, data[off:off + MiB]) == MiB
        # nothing closed or synced: another descriptor and the attributes see it all
        assert os.fstat(fd).st_size == len(data)
        assert os.stat(path).st_size == len(data)
        assert o_direct_read(path, len(data)) == data
        assert len(os.listdir(os.path.join(m.mnt, "x"))) == 1
        # a truncation after writes in flight is not overtaken by them
        for off in range(0, 8 * MiB, MiB):
            os.write(fd, data[off:off + MiB])
        os.truncate(path, 3 * MiB)
        assert os.stat(path).st_size == 3 * MiB
    finally:
        os.close(fd)
    assert os.path.getsize(os.path.join(d, "f")) == 3 * MiB
    assert read_file(os.path.join(d, "f")) == data[:3 * MiB]


@pytest.mark.parametrize("kind", KINDS)
def test_small_writes_reach_the_server_while_open(mount_factory, kind):
    """Writes shorter than a WRITE (a log's lines) may wait in the daemon for the next one to
    join them: readers through the mount see them at once all the same, and they reach the
    server soon although the file stays open and nothing more is written to it."""
    uri, d = export_dir(kind)
    m = mount(mount_factory, uri, None)
    path = os.path.join(m.mnt, "x", "log")
    want = b"".join(f"line {i}\n".encode() for i in range(100))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for line in want.splitlines(keepends=True):
            assert os.write(fd, line) == len(line)
        assert os.stat(path).st_size == len(want)
        assert o_direct_read(path, 4096) == want
        os.write(fd, b"the last line\n")  # and then nothing, the file open
        want += b"the last line\n"
        deadline = time.monotonic() + 10
        while read_file(os.path.join(d, "log")) != want:
            assert time.monotonic() < deadline, (
                f"{kind}: 10 s after the last write() to a file left open, the server holds "
                f"{read_file(os.path.join(d, 'log'))[-40:]!r} at its end")
            time.sleep(0.05)
    finally:
        os.close(fd)
    assert read_file(os.path.join(d, "log")) == want


@pytest.mark.parametrize("kind", KINDS)
def test_a_busy_file_does_not_hold_up_another(mount_factory, kind):
    """A file written without a pause does not keep a line written to another open file from
    the server. The busy one is written in pieces that do not fill a WRITE, so that it always
    has one waiting to be joined, and its first piece is older than the other file's line."""
    uri, d = export_dir(kind)
    m = mount(mount_factory, uri, None)
    busy = os.open(os.path.join(m.mnt, "x", "busy"), os.O_WRONLY | os.O_CREAT, 0o644)
    quiet = os.open(os.path.join(m.mnt, "x", "quiet"), os.O_WRONLY | os.O_CREAT, 0o644)
    piece = random.Random(kind).randbytes(100_000)
    try:
        os.write(busy, piece)
        assert os.write(quiet, b"one line\n") == 9
        deadline, n = time.monotonic() + 10, 0
        while read_file(os.path.join(d, "quiet")) != b"one line\n":
            assert time.monotonic() < deadline, (
                f"{kind}: after 10 s and {n} writes to another file, the server holds "
                f"{read_file(os.path.join(d, 'quiet'))!r} of a file left open")
            for _ in range(10):
                n += 1
                if n % 640 == 0:  # 64 MB at most
                    os.lseek(busy, 0, os.SEEK_SET)
                os.write(busy, piece)
    finally:
        os.close(quiet)
        os.close(busy)


@pytest.mark.parametrize("kind", KINDS)
def test_fsync_puts_everything_on_the_server(mount_factory, kind):
    uri, d = export_dir(kind)
    m = mount(mount_factory, uri, 64)
    data = random.Random(kind).randbytes(16 * MiB)
    fd = os.open(os.path.join(m.mnt, "x", "f"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for off in range(0, len(data), MiB):
            os.write(fd, data[off:off + MiB])
        os.fsync(fd)
        # the descriptor is still open: only fsync() can have put it there
        assert read_file(os.path.join(d, "f")) == data
    finally:
        os.close(fd)


def location_metric(mnt, name):
    """The sum of a gauge over the locations in /.fedfuse/metrics."""
    total = 0
    for line in read_file(os.path.join(mnt, ".fedfuse", "metrics")).decode().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def write_at_once(mnt, where, n, data):
    """Write `data` to files f0..f{n-1} in directory `where` of the mount at `mnt`, all at
    once, in 1 MiB writes; returns the errors and the highest write-behind gauge seen
    meanwhile."""
    errors, peak, done = [], [0.0], threading.Event()

    def writer(i):
        try:
            with open(os.path.join(where, f"f{i}"), "wb") as f:
                for off in range(0, len(data), MiB):
                    f.write(data[off:off + MiB])
        except OSError as e:
            errors.append(e)

    def sampler():
        while not done.is_set():
            peak[0] = max(peak[0], location_metric(mnt, "fedfuse_location_write_behind_bytes"))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    s = threading.Thread(target=sampler)
    s.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    s.join()
    return errors, peak[0]


@pytest.mark.parametrize("kind", KINDS)
def test_sixteen_writers_stay_within_their_windows(mount_factory, kind):
    """16 files written at once with write-behind=2: the data the daemon holds for them (its
    gauge, sampled throughout) never exceeds what 16 files may keep (4 windows, at least
    8 MiB, each: in flight or awaiting COMMIT), every file arrives whole, and nothing is held
    once they are closed."""
    uri, d = export_dir(kind)
    m = mount(mount_factory, uri, 2)
    data = random.Random(kind).randbytes(32 * MiB)
    errors, peak = write_at_once(m.mnt, os.path.join(m.mnt, "x"), 16, data)
    assert not errors
    assert peak > 0, "the gauge never moved"
    assert peak <= 16 * 8 * MiB, f"{peak / MiB:.1f} MiB held"
    assert location_metric(m.mnt, "fedfuse_location_write_behind_bytes") == 0
    for i in range(16):
        assert read_file(os.path.join(d, f"f{i}")) == data, f"f{i}"


@pytest.mark.parametrize("kind", KINDS)
def test_junction_write_behind_counts_to_its_referral(mount_factory, tmp_path, kind):
    """Data held for a junction's location shows in the gauge of the referral the junction
    is reached through (as its traffic counts there), and is gone once the files close."""
    uri, d = export_dir(kind)
    loc = tmp_path / "loc"
    (loc / "j").mkdir(parents=True)
    try:
        os.setxattr(loc / "j", "user.fedfuse.locations", uri.encode())
    except OSError as e:
        pytest.skip(f"no user xattrs here: {e}")
    m = mount_factory(ns_text=namespace_text([("/x", [file_uri(str(loc))], {})])).start()
    data = random.Random(kind).randbytes(16 * MiB)
    errors, peak = write_at_once(m.mnt, os.path.join(m.mnt, "x", "j"), 8, data)
    assert not errors
    assert peak > 0, "the gauge never moved"
    assert location_metric(m.mnt, "fedfuse_location_write_behind_bytes") == 0
    for i in range(8):
        assert read_file(os.path.join(d, f"f{i}")) == data, f"f{i}"
