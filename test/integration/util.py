# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers shared by the integration tests: running tools, errno checks, trees to compare."""

import errno
import hashlib
import os
import random
import signal
import stat
import subprocess
import time

import pytest

MiB = 1 << 20


def run(cmd, **kw):
    """Run a tool; fail the test with its output when it exits non-zero."""
    kw.setdefault("timeout", 60)
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.run(cmd, capture_output=True, **kw)
    if p.returncode != 0:
        out = p.stdout.decode(errors="replace") if isinstance(p.stdout, bytes) else p.stdout
        err = p.stderr.decode(errors="replace") if isinstance(p.stderr, bytes) else p.stderr
        pytest.fail(f"{cmd!r} exited {p.returncode}\nstdout: {out}\nstderr: {err}",
                    pytrace=False)
    return p


def run_fails(cmd, **kw):
    """Run a tool that must fail; return its stderr as text."""
    kw.setdefault("timeout", 60)
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)
    assert p.returncode != 0, f"{cmd!r} succeeded but should have failed"
    return p.stderr


def errname(e):
    return errno.errorcode.get(e, str(e)) if isinstance(e, int) else repr(e)


def expect_errno(expected, fn, *args, **kw):
    """Call fn; it must raise OSError with errno `expected` (an int or a set of ints)."""
    allowed = expected if isinstance(expected, (set, frozenset, tuple)) else {expected}
    try:
        fn(*args, **kw)
    except OSError as e:
        assert e.errno in allowed, (
            f"{fn.__name__}{args}: got {errname(e.errno)} ({e}), "
            f"expected {' or '.join(errname(x) for x in allowed)}")
        return e
    pytest.fail(f"{fn.__name__}{args} succeeded, expected "
                f"{' or '.join(errname(x) for x in allowed)}", pytrace=False)


def random_bytes(n, seed=0):
    return random.Random(seed).randbytes(n)


def write_file(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def create(path, data=b""):
    write_file(path, data)
    return path


def mkdirs(*paths):
    """Make each directory (and its parents), mode 0755; returns the path, or the paths."""
    for p in paths:
        os.makedirs(p, exist_ok=True)
        os.chmod(p, 0o755)
    return paths[0] if len(paths) == 1 else paths


def namespace_text(referrals, options=None):
    """A namespace file: [namespace] with `options` (key_name: value, "_" written "-"), then
    referrals [(path, [uris], {key: value} or None)]."""
    opts = {k.replace("_", "-"): v for k, v in (options or {}).items()}
    lines = ["[namespace]"] + [f"{k}={v}" for k, v in opts.items()]
    for path, uris, keys in referrals:
        lines += ["", f"[{path}]", "locations=" + ";".join(uris)]
        lines += [f"{k}={v}" for k, v in (keys or {}).items()]
    return "\n".join(lines) + "\n"


def wait_until(pred, timeout=3.0, interval=0.05):
    """Poll pred() until true or `timeout` seconds passed; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def listdir_set(path):
    names = os.listdir(path)
    assert len(names) == len(set(names)), f"duplicate names listed in {path}: {sorted(names)}"
    return set(names)


# ---- trees --------------------------------------------------------------------------------------

def make_tree(root, caps, seed=1):
    """A varied tree under `root` (created): files of awkward sizes, empty and nested dirs,
    unusual names, and where `caps` allow, odd modes, a symlink, a hard link. Fixed mtimes with
    nanoseconds, so that copies can be checked for time preservation."""
    os.makedirs(root, exist_ok=True)
    rnd = random.Random(seed)
    sizes = [0, 1, 4095, 4096, 4097, 65537, MiB + 3]
    files = []
    for i, size in enumerate(sizes):
        p = os.path.join(root, f"f{i}-{size}.bin")
        write_file(p, rnd.randbytes(size))
        files.append(p)
    os.makedirs(os.path.join(root, "sub", "deeper", "deepest"))
    os.mkdir(os.path.join(root, "empty"))
    for name in ("with space.txt", "ünïcødé.txt", "-dash", ".hidden", "x" * 200):
        write_file(os.path.join(root, "sub", name), name.encode() * 3)
    write_file(os.path.join(root, "sub", "deeper", "deepest", "leaf"), b"leaf\n")
    if caps["chmod"] is True:
        os.chmod(files[1], 0o600)
        os.chmod(files[2], 0o755)
        os.chmod(files[3], 0o640)
        os.chmod(os.path.join(root, "empty"), 0o700)
    if caps["symlink"] is True:
        os.symlink("f1-1.bin", os.path.join(root, "link-rel"))
        os.symlink("../sub/deeper", os.path.join(root, "empty-sibling-link"))
        os.symlink("dangling-target", os.path.join(root, "sub", "dangling"))
    if caps["hardlink"] is True:
        os.link(files[4], os.path.join(root, "sub", "hard"))
    # Fixed times, deepest first so that creating entries does not move a parent's mtime.
    t = 1_000_000_000_123_456_700  # 2001-09-09, with nanoseconds (100 ns multiple for smb)
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            entries.append(os.path.join(dirpath, n))
    entries.sort(key=lambda p: -p.count(os.sep))
    for k, p in enumerate(entries + [root]):
        ns = t + k * 1_000_001_100
        os.utime(p, ns=(ns, ns), follow_symlinks=False)
    return root


def snapshot(root, content=True, modes=True, mtimes=True, time_res=1, links=True,
             symlink_mtimes=True):
    """Describe the tree under `root` (root itself as "."): relpath -> tuple of what was asked.
    Hard links (with links=True) are marked by the smallest relpath of their group."""
    out = {}
    groups = {}  # st_ino -> relpaths, for regular files with st_nlink > 1

    def entry(path, rel):
        st = os.lstat(path)
        kind = stat.S_IFMT(st.st_mode)
        desc = [stat.filemode(st.st_mode)[0]]
        if stat.S_ISREG(kind):
            desc.append(st.st_size)
            if content:
                desc.append(sha(read_file(path)))
            if links and st.st_nlink > 1:
                groups.setdefault(st.st_ino, []).append(rel)
        elif stat.S_ISLNK(kind):
            desc.append(os.readlink(path))
        if modes and not stat.S_ISLNK(kind):
            desc.append(oct(stat.S_IMODE(st.st_mode)))
        if mtimes and (symlink_mtimes or not stat.S_ISLNK(kind)):
            desc.append(st.st_mtime_ns // time_res)
        out[rel] = tuple(desc)

    entry(root, ".")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            entry(p, os.path.relpath(p, root))
    for rels in groups.values():
        for rel in rels:
            out[rel] += ("hardlink:" + min(rels),)
    return out


def assert_same_tree(a, b, **opts):
    sa, sb = snapshot(a, **opts), snapshot(b, **opts)
    if sa != sb:
        diff = []
        for k in sorted(set(sa) | set(sb)):
            if sa.get(k) != sb.get(k):
                diff.append(f"  {k}: {sa.get(k)} != {sb.get(k)}")
        pytest.fail(f"trees differ ({a} vs {b}):\n" + "\n".join(diff[:40]), pytrace=False)


def tree_opts(m):
    """snapshot() options fitting the backend kind of a Mounted."""
    return dict(modes=m.supports("chmod"), time_res=m.caps("time_res_ns"),
                symlink_mtimes=m.supports("symlink_times"))


def ctrl_c(argv, stall, release=None, settle=0.5, timeout=60):
    """Run `argv`, a program that prints "ready", reads a line from stdin, then makes one call;
    stall() (what makes that call hang) before it goes on; SIGINT it once blocked. Returns
    (seconds from SIGINT to its exit, the rest of its output, its return code), after
    release() (what lets the hung call end) whatever happened."""
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        stall()
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(settle)
        assert child.poll() is None, f"{argv[-2:]}: the call did not block"
        t0 = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - t0
        return took, child.stdout.read() if child.poll() is not None else "", child.returncode
    finally:
        if release:
            release()
        if child.poll() is None:
            child.kill()
            child.wait()
