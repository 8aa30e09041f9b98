# SPDX-License-Identifier: GPL-2.0-or-later
"""Read-ahead on nfs:// and smb:// (read-ahead=, README "NFS locations" and "SMB locations"): a
file read sequentially is read ahead of the kernel's requests, so what the daemon holds must
never be served once the file changed. Reads here are O_DIRECT (past the kernel's page cache,
so each reaches the daemon), 1 MiB at a time as cp and dd read. A write through another
descriptor, a truncation, and another client's change on the server ahead of the reader are all
seen by its next read; random reads return what the file holds, with read-ahead and without
(read-ahead=0); a reply sent from what was read ahead survives the reader closing the file at
once. file:// runs the random reads (a local read is spliced or copied depending on its
size)."""

import mmap
import os
import random
import time

import pytest

from test_sharing import export_dir
from util import namespace_text, write_file

KINDS = ["nfs3", "nfs4", "smb"]
MiB = 1 << 20
SEEN_WITHIN = 10  # seconds: another client's change, with or without change notification


class Reader:
    """An O_DIRECT descriptor that reads 1 MiB blocks."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        self.buf = mmap.mmap(-1, MiB)  # page-aligned, as O_DIRECT wants

    def block(self, k):
        n = os.preadv(self.fd, [self.buf], k * MiB)
        return bytes(self.buf[:n])

    def close(self):
        os.close(self.fd)


def prepare(mount_factory, kind, size, tmp=None, keys=None):
    if kind == "file":
        d = str(tmp)
        uri = "file://" + d
    else:
        uri, d = export_dir(kind)
    data = random.Random(kind).randbytes(size)
    write_file(os.path.join(d, "f"), data)
    m = mount_factory(ns_text=namespace_text([("/x", [uri], keys)])).start()
    return m, os.path.join(m.mnt, "x", "f"), os.path.join(d, "f"), data


@pytest.mark.parametrize("kind", KINDS)
def test_sequential_read_sees_own_writes_ahead(mount_factory, kind):
    m, path, _, data = prepare(mount_factory, kind, 32 * MiB)
    r = Reader(path)
    w = os.open(path, os.O_WRONLY)
    try:
        for k in range(8):  # far enough for read-ahead to be running
            assert r.block(k) == data[k * MiB:(k + 1) * MiB]
        new = os.urandom(MiB)
        os.pwrite(w, new, 10 * MiB)  # ahead of the reader, inside what it may read ahead
        for k in range(8, 32):
            want = new if k == 10 else data[k * MiB:(k + 1) * MiB]
            assert r.block(k) == want, f"block {k}"
        # and a truncation: the blocks past the new end are gone
        r2 = Reader(path)
        try:
            for k in range(4):
                r2.block(k)
            os.ftruncate(w, 6 * MiB)
            assert r2.block(4) == data[4 * MiB:5 * MiB]
            assert r2.block(5) == data[5 * MiB:6 * MiB]
            assert r2.block(6) == b""
        finally:
            r2.close()
    finally:
        os.close(w)
        r.close()


@pytest.mark.parametrize("kind", KINDS)
def test_sequential_read_sees_another_clients_change(mount_factory, kind):
    m, path, on_server, data = prepare(mount_factory, kind, 32 * MiB)
    r = Reader(path)
    try:
        for k in range(8):
            assert r.block(k) == data[k * MiB:(k + 1) * MiB]
        new = os.urandom(MiB)
        with open(on_server, "r+b") as f:  # the server's own folder: another client
            f.seek(9 * MiB)
            f.write(new)
        assert r.block(8) == data[8 * MiB:9 * MiB]
        deadline = time.monotonic() + SEEN_WITHIN
        while r.block(9) != new:
            assert time.monotonic() < deadline, "another client's change never read"
            time.sleep(0.05)
    finally:
        r.close()


@pytest.mark.parametrize("kind,ahead", [("file", None)] + [(k, None) for k in KINDS] +
                         [(k, "0") for k in KINDS])
def test_random_and_sequential_reads_return_the_data(mount_factory, tmp_path, kind, ahead):
    keys = None if ahead is None else {"read-ahead": ahead}
    m, path, _, data = prepare(mount_factory, kind, 24 * MiB + 12345, tmp_path, keys)
    rnd = random.Random(1)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 3 * MiB)
    try:
        # runs of sequential reads from random places, of sizes the kernel sends
        for _ in range(60):
            off = rnd.randrange(0, len(data) + MiB) & ~4095
            size = rnd.choice([4096, 65536, 131072, 614400, MiB, 3 * MiB])
            for _ in range(rnd.choice([1, 1, 4])):
                n = os.preadv(fd, [memoryview(buf)[:size]], off)
                assert bytes(buf[:n]) == data[off:off + size], (off, size)
                off += size
    finally:
        os.close(fd)
    # and a plain read through the page cache, as cp reads
    with open(path, "rb") as f:
        assert f.read() == data


@pytest.mark.parametrize("kind", KINDS)
def test_closing_right_after_the_last_reply(mount_factory, kind):
    """The kernel may hand the file's release to the daemon as soon as it has the last read's
    reply, while the thread that sent it from what was read ahead still returns (a crash once,
    fedfuse/file.c; the window is microseconds, so this rarely lands in it): reading a file to
    its end and closing it at once, many times, gives every byte and leaves the daemon
    answering."""
    m, path, _, data = prepare(mount_factory, kind, 3 * MiB + 4096)
    for _ in range(60):
        r = Reader(path)
        try:
            got = b"".join(r.block(k) for k in range(4))
        finally:
            r.close()
        assert got == data
    assert os.path.getsize(path) == len(data)  # the daemon still answers
