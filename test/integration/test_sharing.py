# SPDX-License-Identifier: GPL-2.0-or-later
"""Two fedfuse mounts of the same export, as two workstations would have: what one writes and
closes, the other sees on its next open (close-to-open), even where its kernel holds the old
data in its page cache."""

import os
import time
import uuid

import pytest

from conftest import read_servers_env, uri_below
from util import mkdirs, namespace_text, read_file, write_file

SHARED = read_servers_env()
KINDS = {"nfs3": ("NFS_V3_URI", "NFS_V3_DIR"), "nfs4": ("NFS_V4_URI", "NFS_V4_DIR"),
         "smb": ("SMB_URI", "SMB_DIR")}


def export_dir(kind):
    uri_key, dir_key = KINDS[kind]
    if not SHARED.get(uri_key):
        pytest.fail(f"the test servers give no {uri_key} (run scripts/test-servers start)",
                    pytrace=False)
    name = f"sharing-{uuid.uuid4().hex[:8]}"
    d = mkdirs(os.path.join(SHARED[dir_key], name))
    os.chmod(d, 0o777)
    return uri_below(SHARED[uri_key], name), d


def two_mounts(mount_factory, uri):
    # attr-timeout long enough that only the open's own check can see a change
    text = namespace_text([("/x", [uri], {"attr-timeout": "60"})])
    return (mount_factory(ns_text=text, name="one").start(),
            mount_factory(ns_text=text, name="two").start())


@pytest.mark.parametrize("kind", list(KINDS))
def test_close_to_open_between_two_mounts(mount_factory, kind):
    uri, d = export_dir(kind)
    write_file(os.path.join(d, "f"), b"A" * 8192)
    one, two = two_mounts(mount_factory, uri)
    f1, f2 = os.path.join(one.mnt, "x", "f"), os.path.join(two.mnt, "x", "f")
    assert read_file(f2) == b"A" * 8192  # two's page cache holds the old data
    for round_, byte in enumerate((b"B", b"C", b"D")):
        time.sleep(0.01)
        with open(f1, "r+b") as f:  # same size: only the times say it changed
            f.write(byte * 8192)
        assert read_file(f2) == byte * 8192, f"round {round_}: two read stale data"
        assert read_file(f1) == byte * 8192
    # a size the kernel of two has cached attributes for changes too
    write_file(f1, b"E" * 100)
    assert read_file(f2) == b"E" * 100
    assert os.stat(f2).st_size == 100
    write_file(f1, b"F" * 20000)  # and grows
    assert read_file(f2) == b"F" * 20000
    # and a new file, made in two, read in one
    write_file(os.path.join(two.mnt, "x", "g"), b"from two\n")
    assert read_file(os.path.join(one.mnt, "x", "g")) == b"from two\n"
