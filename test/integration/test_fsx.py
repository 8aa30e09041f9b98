# SPDX-License-Identifier: GPL-2.0-or-later
"""fsx (test/fsx/fsx.c) through the mount, on every backend kind (DESIGN §9, issue 8 item 4):
fixed seeds, 10,000 operations each, every read checked against fsx's model; then the file on
the server must hold what the mount shows. Nothing is disabled by hand: fsx detects what the
file system lacks, and the test asserts that this is exactly what the kind is known to lack."""

import os
import re
import subprocess

import pytest

from conftest import BUILDDIR
from util import read_file

FSX = os.path.join(BUILDDIR, "test", "fsx", "fsx")

SEEDS = (1, 2)
OPS = 10000  # per seed: 20,000 per backend kind
FSX_TIMEOUT = 100  # seconds; below conftest's TEST_TIMEOUT, so fsx's own report is kept

# What fsx finds missing through the mount, per kind, as its summary line names it ("fallocate":
# every mode; "fallocate-<mode>": one mode; "dread-unaligned"/"dwrite-unaligned": O_DIRECT
# reads/writes must be aligned).
# Each entry says why; anything else disabled, or any of these working, fails the test: update
# the table with the reason when a backend changes.
MISSING = {
    # None: what the backing file system lacks, except direct I/O. Every fallocate mode goes to
    # fallocate(2) on the backing file. O_DIRECT is served by the mount itself (no page cache
    # of its own, the backing file written before the reply), not passed down to the backing
    # open(2): unaligned direct I/O works through the mount whatever the backing file system
    # demands (DIRECT_IO below).
    "file": None,
    # backends/nfs has no fallocate op (NFSv3 has no ALLOCATE; libnfs 4.0 offers no NFSv4.2
    # ALLOCATE/DEALLOCATE): the core answers EOPNOTSUPP for every mode.
    "nfs3": {"fallocate"},
    "nfs4": {"fallocate"},
    # libsmbclient has no fallocate (no FSCTL_SET_ZERO_DATA, no allocation-size SET_INFO).
    "smb": {"fallocate"},
}

SUMMARY = re.compile(r"^fsx: .*: seed \d+: (\d+) operations passed:(.*); disabled: (.*)$", re.M)


def fsx(args, timeout=FSX_TIMEOUT):
    if not os.access(FSX, os.X_OK):
        pytest.fail(f"{FSX} is not built (make check builds it; set FEDFUSE_BUILDDIR)",
                    pytrace=False)
    return subprocess.run([FSX] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def disabled(out):
    """The set of kinds (and fallocate-<mode>s) fsx's summary line says it disabled."""
    m = SUMMARY.search(out)
    assert m, "no summary line in fsx's output:\n" + out
    return set() if m.group(3).strip() == "none" else set(m.group(3).split())


def detect(path):
    """What fsx disables on `path` with nothing disabled by hand (runs no operation)."""
    r = fsx(["-N", "0", path])
    assert r.returncode == 0, r.stdout + r.stderr
    return disabled(r.stdout)


# fsx's names for direct I/O it finds missing or limited to aligned requests.
DIRECT_IO = {"dread", "dwrite", "dread-unaligned", "dwrite-unaligned"}


def expected_missing(mounted, tmp_name):
    want = MISSING[mounted.kind]
    if want is None:  # what the backing file system itself lacks
        want = detect(mounted.d("a", tmp_name)) - DIRECT_IO
        os.unlink(mounted.d("a", tmp_name))
    return set(want)


@pytest.mark.parametrize("seed", SEEDS)
def test_fsx(mounted, seed):
    name = f"fsx-{seed}"
    want = expected_missing(mounted, name + ".native")
    path = mounted.p("a", name)
    try:
        r = fsx(["-N", str(OPS), "-S", str(seed), path])
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"fsx -S {seed} on {mounted.kind} did not finish in {FSX_TIMEOUT} s:\n"
                    f"{e.stdout or ''}{e.stderr or ''}", pytrace=False)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        pytest.fail(f"fsx failed on {mounted.kind} (exit {r.returncode}); the expected "
                    f"contents are in {path}.fsxgood\n{out}", pytrace=False)
    m = SUMMARY.search(r.stdout)
    assert m and int(m.group(1)) == OPS, out
    got = disabled(r.stdout)
    # "fallocate" alone when every mode is missing; else the modes one by one
    assert got == want, (f"fsx disabled {sorted(got) or 'nothing'} on {mounted.kind}, "
                         f"expected {sorted(want) or 'nothing'}:\n{out}")

    # The server holds what the mount shows (not just the kernel's page cache).
    via, disk = read_file(path), read_file(mounted.d("a", name))
    if via != disk:
        first = next((i for i, (x, y) in enumerate(zip(via, disk)) if x != y),
                     min(len(via), len(disk)))
        pytest.fail(f"after fsx -S {seed}: the mount shows {len(via)} bytes, the backing "
                    f"file has {len(disk)}; first difference at {first:#x}", pytrace=False)
    os.unlink(path)
