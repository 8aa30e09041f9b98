# SPDX-License-Identifier: GPL-2.0-or-later
"""truncate(2) and ftruncate(2) through the mount, against a native directory (pjdfstest
tests/truncate, tests/ftruncate): growing reads zeros, shrinking drops data, errnos (EISDIR,
EINVAL, ENOENT, ENOTDIR, EFBIG beyond the largest file the server takes). ftruncate of a
read-only descriptor: test_posix_open.py."""

import errno
import os

import pytest

from posix_util import (P, create_file, read_all, symlinks_or_errno, with_fd)
from posix_util import par_fixture  # noqa: F401 (fixtures)

DATA = bytes(range(256)) * 40  # 10240 bytes, no zeros in runs


@pytest.mark.parametrize("how", ["truncate", "ftruncate"])
def test_truncate_sizes(par, how):
    par.each(create_file, P("f"), DATA)

    def do(path, size):
        if how == "truncate":
            return os.truncate(path, size)
        return with_fd(path, os.O_WRONLY, os.ftruncate, size)

    for size in (20000, 10240, 4096, 4095, 1, 0, 65536 + 7, 1 << 20, 3):
        par.same(do, P("f"), size, expect="ok")
        par.stat_same("f", ("type", "size"))
        got = read_all(par.mp("f"))
        assert got == read_all(par.np("f")), f"content differs after {how} to {size}"
        assert len(read_all(par.dp("f"))) == size
    # what grew reads as zeros, what was kept is intact
    par.each(lambda p: (os.truncate(p, 0), create_file(p + "2", DATA)), P("f"))
    par.same(do, P("f2"), 5000, expect="ok")
    par.same(do, P("f2"), 9000, expect="ok")
    got = read_all(par.mp("f2"))
    assert got[:5000] == DATA[:5000] and got[5000:] == bytes(4000)


def test_truncate_through_open_descriptor(par):
    """A file truncated by name while open: reads through the descriptor see the new size,
    writes past it leave a hole of zeros."""
    def scenario(path):
        create_file(path, DATA)
        fd = os.open(path, os.O_RDWR)
        try:
            os.truncate(path, 100)
            size = os.fstat(fd).st_size
            tail = os.pread(fd, 200, 50)
            os.pwrite(fd, b"end", 300)
            return size, tail, os.pread(fd, 1000, 0), os.fstat(fd).st_size
        finally:
            os.close(fd)
    size, tail, data, end = par.same(scenario, P("f"), expect="ok")
    assert (size, end) == (100, 303) and data == DATA[:100] + bytes(200) + b"end"


def test_truncate_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    par.same(os.truncate, P("d"), 0, expect=errno.EISDIR)
    par.same(os.truncate, P("f"), -1, expect=errno.EINVAL)
    par.same(os.truncate, P("missing"), 0, expect=errno.ENOENT)
    par.same(os.truncate, P("f/x"), 0, expect=errno.ENOTDIR)
    par.same(os.truncate, P("x" * 256), 0, expect=errno.ENAMETOOLONG)
    if symlinks_or_errno(par):
        par.each(os.symlink, "f", P("l"))
        par.same(os.truncate, P("l"), 5, expect="ok")  # follows
        par.stat_same("f", ("type", "size"))
        par.each(os.symlink, "loop", P("loop"))
        par.same(os.truncate, P("loop"), 0, expect=errno.ELOOP)


def test_truncate_efbig(par):
    """Beyond the largest file the filesystem takes (ext4: 16 TiB): EFBIG, as natively; the
    file is left as it was. The kind's limit may be larger; then it must succeed."""
    par.each(create_file, P("f"), b"keep")
    for size in ((1 << 63) - 1, (1 << 44) + 4096):
        mo, no = par.both(os.truncate, P("f"), size)
        if mo != no:
            assert mo == ("ok", None) or mo == ("err", "EFBIG"), \
                f"truncate to {size} through the mount: {mo} (native: {no})"
        if mo[0] == "ok":
            par.each(os.truncate, P("f"), 4)
        assert read_all(par.mp("f")) == b"keep"
    par.same(with_fd, P("f"), os.O_RDWR, os.ftruncate, (1 << 63) - 1)
