# SPDX-License-Identifier: GPL-2.0-or-later
"""utimensat(2) and futimens(3) through the mount, against a native directory (pjdfstest
tests/utimensat): explicit times with nanoseconds (to the kind's resolution, conftest.CAPS
time_res_ns), UTIME_NOW, UTIME_OMIT, a NULL times array, AT_SYMLINK_NOFOLLOW, far dates, and
EINVAL for bad nanoseconds. What plain users may set: test_posix_perms.py."""

import errno
import os
import time

import pytest

from posix_util import (AT_SYMLINK_NOFOLLOW, P, UTIME_NOW, UTIME_OMIT, create_file, futimens, pcaps,
                        psupports, symlinks_or_errno, tick, times, utimensat, with_fd)
from posix_util import par_fixture  # noqa: F401 (fixtures)


def expect_time(par, path, field, ns):
    """`field` of `path` in the mount is `ns`, to the kind's resolution."""
    res = par.m.caps("time_res_ns")
    got = times(path)[field]
    assert abs(got - ns) < res, f"{field} of {path}: {got}, set {ns} (resolution {res} ns)"


@pytest.mark.parametrize("when", [
    (1_000_000_000, 123_456_789),        # 2001, nanoseconds
    (1_700_000_000, 999_999_999),        # the last nanosecond of a second
    (0, 0),                              # the epoch
    (2_147_483_648, 500_000_000),        # past 2038-01-19 (Y2038)
    (4_102_444_800, 1),                  # 2100
    (-86_400 * 365, 250_000_000),        # 1969
])
def test_utimensat_explicit(par, when):
    par.each(create_file, P("f"), b"x")
    par.each(os.mkdir, P("d"))
    atime, mtime = when, (when[0] + 3600, (when[1] + 1) % 1_000_000_000)
    span = pcaps(par.kind, "time_range")
    if span and not span[0] <= when[0] < span[1]:
        # outside what the protocol carries: refused (EINVAL) or clamped to the nearest time
        # it can carry, as the kernel does for filesystems with a narrower range
        # (timestamp_truncate); never stored as another date
        mo, _ = par.both(utimensat, P("f"), atime, mtime)
        if mo[0] == "ok":
            lo, hi = span[0] * 10**9, span[1] * 10**9 - 1
            got = times(par.mp("f"))["mtime"]
            want = min(max(mtime[0] * 10**9 + mtime[1], lo), hi)
            assert abs(got - want) < 10**9, f"mtime set to {mtime} shows as {got} ns"
        else:
            assert mo == ("err", "EINVAL"), mo
        return
    for rel in ("f", "d"):
        par.same(utimensat, P(rel), atime, mtime, expect="ok")
        expect_time(par, par.mp(rel), "atime", atime[0] * 10**9 + atime[1])
        expect_time(par, par.mp(rel), "mtime", mtime[0] * 10**9 + mtime[1])
    if par.kind == "file":
        assert times(par.dp("f"))["mtime"] == mtime[0] * 10**9 + mtime[1]


def test_utimensat_now_and_omit(par):
    par.each(create_file, P("f"), b"x")
    old = (1_000_000_000, 0)
    par.same(utimensat, P("f"), old, old, expect="ok")
    t0 = time.time_ns()
    tick()
    # UTIME_NOW for one, UTIME_OMIT for the other
    par.same(utimensat, P("f"), (0, UTIME_NOW), (0, UTIME_OMIT), expect="ok")
    t = times(par.mp("f"))
    assert t["atime"] > t0 and t["mtime"] == 10**18
    par.same(utimensat, P("f"), (0, UTIME_OMIT), (0, UTIME_NOW), expect="ok")
    t2 = times(par.mp("f"))
    assert t2["atime"] == t["atime"] and t2["mtime"] > t0
    # a NULL array: both now
    par.same(utimensat, P("f"), old, old, expect="ok")
    par.same(utimensat, P("f"), None, None, expect="ok")
    t3 = times(par.mp("f"))
    assert t3["atime"] > t0 and t3["mtime"] > t0
    # both now and the clock agree (the server's clock is this machine's here)
    assert abs(t3["mtime"] - time.time_ns()) < 5 * 10**9


def test_utimensat_omit_both_changes_nothing(par):
    """pjdfstest utimensat/03: UTIME_OMIT for both leaves even ctime alone."""
    par.each(create_file, P("f"), b"x")
    before = times(par.mp("f"))
    tick()
    par.same(utimensat, P("f"), (5, UTIME_OMIT), (7, UTIME_OMIT), expect="ok")
    assert times(par.mp("f")) == before


def test_utimensat_sets_ctime(par):
    par.each(create_file, P("f"), b"x")
    before = times(par.mp("f"))
    tick()
    par.same(utimensat, P("f"), (1_000_000_000, 0), (1_000_000_000, 0), expect="ok")
    after = times(par.mp("f"))
    if pcaps(par.kind, "ctime") == "mtime":
        assert after["ctime"] == after["mtime"] == 10**18
    else:
        assert after["ctime"] > before["ctime"]


def test_utimensat_errnos(par):
    par.each(create_file, P("f"), b"x")
    par.same(utimensat, P("f"), (0, 1_000_000_000), (0, 0), expect=errno.EINVAL)
    par.same(utimensat, P("f"), (0, 0), (0, -1), expect=errno.EINVAL)
    par.same(utimensat, P("missing"), (0, 0), (0, 0), expect=errno.ENOENT)
    par.same(utimensat, P("f/x"), (0, 0), (0, 0), expect=errno.ENOTDIR)
    par.same(utimensat, P("f"), (0, 0), (0, 0), 0x4000, expect=errno.EINVAL)  # unknown flag


def test_utimensat_symlink_nofollow(par):
    if not symlinks_or_errno(par):
        return
    par.each(create_file, P("f"), b"x")
    par.each(os.symlink, "f", P("l"))
    par.each(os.symlink, "nowhere", P("dangling"))
    target = times(par.mp("f"))
    link_t, file_t = (1_100_000_000, 5_000), (1_200_000_000, 7_000)
    link_before = times(par.mp("l"))
    par.same(utimensat, P("l"), link_t, link_t, AT_SYMLINK_NOFOLLOW, expect="ok")
    assert times(par.mp("f"))["mtime"] == target["mtime"], "AT_SYMLINK_NOFOLLOW followed"
    if not psupports(par.kind, "symlink_times"):
        # accepted, and the server leaves the link's times alone
        assert times(par.mp("l"))["mtime"] == link_before["mtime"]
        link_t = (link_before["mtime"] // 10**9, link_before["mtime"] % 10**9)
    expect_time(par, par.mp("l"), "mtime", link_t[0] * 10**9 + link_t[1])
    par.same(utimensat, P("dangling"), link_t, link_t, AT_SYMLINK_NOFOLLOW, expect="ok")
    # without the flag the target's times change
    par.same(utimensat, P("l"), file_t, file_t, expect="ok")
    expect_time(par, par.mp("f"), "mtime", file_t[0] * 10**9 + file_t[1])
    expect_time(par, par.mp("l"), "mtime", link_t[0] * 10**9 + link_t[1])
    par.same(utimensat, P("dangling"), file_t, file_t, expect=errno.ENOENT)


def test_futimens(par):
    par.each(create_file, P("f"), b"x")
    t = (1_300_000_000, 123_000)
    par.same(with_fd, P("f"), os.O_RDONLY, futimens, t, t, expect="ok")
    expect_time(par, par.mp("f"), "mtime", t[0] * 10**9 + t[1])
    t0 = time.time_ns()
    tick()
    par.same(with_fd, P("f"), os.O_WRONLY, futimens, (0, UTIME_OMIT), (0, UTIME_NOW),
             expect="ok")
    assert times(par.mp("f"))["mtime"] > t0
