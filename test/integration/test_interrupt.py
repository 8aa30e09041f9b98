# SPDX-License-Identifier: GPL-2.0-or-later
"""Interrupts (issue 19): a process blocked in an operation on a location that does not answer
gets its Ctrl-C at once. The kernel sends FUSE_INTERRUPT and waits for the daemon's answer
(even for a fatal signal, once the daemon has read the request); the backend stops waiting,
the caller gets EINTR (a Python program with a SIGINT handler sees its KeyboardInterrupt), and
the daemon's worker is free again instead of waiting out the location's timeout. A mem://
location with ?faults=FILE stands in for the server (backends/mem/mem_fault.c)."""

import os
import signal
import sys
import time

import pytest

from conftest import file_uri
from util import ctrl_c, namespace_text, read_file, wait_until, write_file

TIMEOUT = 20  # the location's timeout: far longer than the budget below
PROMPT = 1.0  # seconds from SIGINT to the caller's return

# The fault's op name -> the call the child makes. A read is made with O_DIRECT: a read through
# the page cache waits in the kernel for a page, which only a fatal signal ends (as on the
# kernel's NFS client), and the kernel sends no FUSE_INTERRUPT for it.
CALLS = {
    "lookup": ("os.stat(P + '/x')"),
    "open": ("os.open(P + '/x', os.O_RDONLY)"),
    "read": ("os.readv(DFD, [mmap.mmap(-1, 4096)])"),
    "write": ("os.write(WFD, b'more')"),
    "readdir": ("os.listdir(P + '/d')"),
    "getxattr": ("os.getxattr(P + '/x', 'user.k')"),
}

CHILD = r"""
import mmap, os, signal, sys, time
P = sys.argv[1]
op = sys.argv[2]
call = sys.argv[3]
handler = sys.argv[4] == "handler"
DFD = os.open(P + '/x', os.O_RDONLY | os.O_DIRECT) if op == "read" else None
WFD = os.open(P + '/x', os.O_WRONLY) if op == "write" else None
if handler:
    def on_int(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_int)
else:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
print("ready", flush=True)
sys.stdin.readline()   # the parent injects the hang, then says go
try:
    eval(call)
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
except OSError as e:
    print("errno", e.errno, flush=True)
"""


class Stalled:
    def __init__(self, mount_factory, tmp_path):
        self.faults = os.path.join(str(tmp_path), "faults")
        tree = f"intr{os.getpid()}"
        ok = tmp_path / "ok"
        ok.mkdir()
        (ok / "here").write_bytes(b"fine")
        ns = namespace_text([("/f", [f"mem://{tree}/f?faults={self.faults}"], None),
                             ("/ok", [file_uri(str(ok))], None)],
                            {"timeout": TIMEOUT, "attr_timeout": 0})
        self.m = mount_factory(ns_text=ns)
        self.m.start()
        self.f = os.path.join(self.m.mnt, "f")
        write_file(os.path.join(self.f, "x"), b"data")
        os.setxattr(os.path.join(self.f, "x"), "user.k", b"v")
        os.mkdir(os.path.join(self.f, "d"))

    def inject(self, text):
        tmp = self.faults + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.faults)


@pytest.fixture
def stalled(mount_factory, tmp_path):
    return Stalled(mount_factory, tmp_path)


def run_interrupted(stalled, op, handler):
    """A child blocked in `op` gets SIGINT; returns (seconds to exit, its output, its status)."""
    return ctrl_c([sys.executable, "-c", CHILD, stalled.f, op, CALLS[op],
                   "handler" if handler else "default"],
                  stall=lambda: stalled.inject(f"{op} hang\n"),
                  release=lambda: stalled.inject(""), timeout=TIMEOUT + 5)


@pytest.mark.parametrize("op", sorted(CALLS))
def test_ctrl_c_with_handler(stalled, op):
    """A program that handles SIGINT: its blocked call ends at once, as an interruption."""
    took, out, rc = run_interrupted(stalled, op, handler=True)
    assert took < PROMPT, f"{op}: SIGINT took {took:.2f} s to end the call"
    assert out.strip() in ("interrupted", f"errno {4}"), out


@pytest.mark.parametrize("op", ["read", "readdir", "lookup"])
def test_ctrl_c_default(stalled, op):
    """A program that dies of SIGINT (the kernel still waits for the daemon's answer)."""
    took, out, rc = run_interrupted(stalled, op, handler=False)
    assert rc == -signal.SIGINT, (rc, out)
    assert took < PROMPT, f"{op}: SIGINT took {took:.2f} s to end the process"


def test_worker_freed_and_location_still_up(stalled):
    """Interrupted calls leave no worker waiting and do not mark the location down: as many
    interrupted reads as the daemon has workers, then the location answers at once."""
    for _ in range(12):
        took, out, _ = run_interrupted(stalled, "read", handler=True)
        assert took < PROMPT
    t0 = time.monotonic()
    assert read_file(os.path.join(stalled.f, "x")) == b"data"
    assert sorted(os.listdir(stalled.f)) == ["d", "x"]
    assert time.monotonic() - t0 < PROMPT
    with open(os.path.join(stalled.m.mnt, ".fedfuse", "locations")) as f:
        assert "state=up" in next(line for line in f if line.startswith("/f\t"))
    with open(os.path.join(stalled.m.mnt, ".fedfuse", "metrics")) as f:
        text = f.read()
    assert 'op="read",errno="EINTR"}' in text
    assert wait_until(lambda: read_file(os.path.join(stalled.m.mnt, "ok", "here")) == b"fine")


def test_buffered_read_and_unmount(stalled):
    """A read through the page cache: Ctrl-C ends the program at once (the kernel waits for
    the page killably), and the request it left, which the kernel does not interrupt, does not
    hold up the unmount: a daemon whose session has ended lets go of its waits."""
    took, _, rc = ctrl_c([sys.executable, "-c",
                          "import os,signal,sys; fd=os.open(sys.argv[1], os.O_RDONLY); "
                          "signal.signal(signal.SIGINT, signal.SIG_DFL); "
                          "print('ready', flush=True); sys.stdin.readline(); "
                          "os.read(fd, 4)", os.path.join(stalled.f, "x")],
                         stall=lambda: stalled.inject("read hang\n"), timeout=TIMEOUT + 5)
    assert rc == -signal.SIGINT
    assert took < PROMPT
    t0 = time.monotonic()
    assert stalled.m.unmount()
    assert stalled.m.wait(timeout=TIMEOUT) == 0
    took = time.monotonic() - t0
    assert took < 3, f"unmount took {took:.1f} s with a read hung in the backend"
