# SPDX-License-Identifier: GPL-2.0-or-later
"""The bash completion of fedfuse-junction (tools/bash-completion/fedfuse-junction): bash sources
it and runs its completion function on a command line; the test compares COMPREPLY with what
tools/fedfuse-junction.c accepts there. Needs bash only: no mount, no server, no root."""

import os
import shutil
import subprocess

import pytest

from conftest import SRCDIR

COMPLETION = os.path.join(SRCDIR, "tools", "bash-completion", "fedfuse-junction")

# compopt only works while bash itself completes; here it is a no-op. Each line of stdout is one
# entry of COMPREPLY.
_DRIVER = """
source "$1"
compopt() { :; }
COMP_WORDBREAKS=$2
COMP_LINE=$3
COMP_POINT=${#COMP_LINE}
_fedfuse_junction
printf '%s\\n' "${COMPREPLY[@]}"
"""


def complete(line, cwd=None, breaks="\"'><=;|&(:"):
    """COMPREPLY for the command line `line`, the cursor at its end, as a sorted list."""
    if shutil.which("bash") is None:
        pytest.fail("bash is not installed")
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", _DRIVER, "bash", COMPLETION,
                          breaks, line], cwd=cwd, check=True, capture_output=True,
                         text=True).stdout
    return sorted(x for x in out.split("\n") if x)


def test_registered():
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", 'source "$1"; complete -p',
                          "bash", COMPLETION], check=True, capture_output=True, text=True).stdout
    assert "complete -F _fedfuse_junction fedfuse-junction" in out


def test_commands():
    assert complete("fedfuse-junction ") == ["add", "check", "list", "nsdb", "remove", "show",
                                             "status"]
    assert complete("fedfuse-junction re") == ["remove"]
    assert complete("fedfuse-junction -") == ["--help", "--version"]


def test_options():
    assert complete("fedfuse-junction add -") == ["--format", "--help"]
    assert complete("fedfuse-junction add /x smb://h/s --f") == ["--format"]
    assert complete("fedfuse-junction check -") == ["--help", "--timeout"]
    for cmd in ("list", "show", "remove", "status"):
        assert complete(f"fedfuse-junction {cmd} -") == ["--help"], cmd
    # after "--" add takes everything as an argument: a location here
    assert complete("fedfuse-junction add -- /x -") == []


def test_format_values():
    assert complete("fedfuse-junction add --format ") == ["fedfs", "fedfs-nsdb", "fedfuse",
                                                          "msdfs"]
    assert complete("fedfuse-junction add -f m") == ["msdfs"]
    # bash replaces only what follows the '=' of --format=...
    assert complete("fedfuse-junction add --format=fedf") == ["fedfs", "fedfs-nsdb", "fedfuse"]
    assert complete("fedfuse-junction add --format=fedf", breaks=" ") == [
        "--format=fedfs", "--format=fedfs-nsdb", "--format=fedfuse"]
    # an NSDB junction: PATH, then an NSDB host and an FSN UUID, which are not completed
    assert complete("fedfuse-junction add --format fedfs-nsdb /x ") == []


def test_nsdb():
    assert complete("fedfuse-junction nsdb ") == ["add-fsl", "create-fsn", "delete-fsn", "list",
                                                  "remove-fsl", "update-fsl"]
    conn = ["--ca-file", "--help", "--nsdb", "--security", "--timeout", "-D", "-y"]
    assert complete("fedfuse-junction nsdb -") == conn
    assert complete("fedfuse-junction nsdb --nsdb h -D cn=a -y /p list -") == conn
    assert complete("fedfuse-junction nsdb create-fsn -") == sorted(conn + ["--ttl"])
    assert complete("fedfuse-junction nsdb add-fsl -") == sorted(
        conn + ["--fsl-uuid", "--going", "--order", "--rank"])
    assert complete("fedfuse-junction nsdb update-fsl -") == sorted(
        conn + ["--going", "--not-going", "--order", "--rank", "--uri"])
    # option values: the subcommand is still the next word after them
    assert complete("fedfuse-junction nsdb --nsdb h -D cn=a cr") == ["create-fsn"]
    assert complete("fedfuse-junction nsdb --security ") == ["ldaps", "none", "starttls"]
    assert complete("fedfuse-junction nsdb --security=s") == ["starttls"]
    for opt in ("--nsdb", "-D", "--timeout"):
        assert complete(f"fedfuse-junction nsdb {opt} ") == [], opt
    # an FSL's URI: nfs or smb
    assert complete("fedfuse-junction nsdb add-fsl --rank 1 u ") == ["nfs://", "smb://"]
    assert complete("fedfuse-junction nsdb add-fsl u nfs:") == ["//"]
    assert complete("fedfuse-junction nsdb update-fsl u v --uri s") == ["smb://"]
    assert complete("fedfuse-junction nsdb remove-fsl u ") == []


def test_timeout_takes_a_number():
    assert complete("fedfuse-junction check --timeout ") == []
    assert complete("fedfuse-junction check -t ") == []


def test_paths(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    d = str(tmp_path)
    both = [f"{d}/dir", f"{d}/file"]
    for cmd in ("show", "remove", "check", "add", "add --format msdfs", "check --timeout 2"):
        assert complete(f"fedfuse-junction {cmd} {d}/") == both, cmd
    for cmd in ("list", "status"):
        assert complete(f"fedfuse-junction {cmd} {d}/") == [f"{d}/dir"], cmd
    assert complete("fedfuse-junction list d", cwd=d) == ["dir"]
    # each of these takes one path only
    for cmd in ("list", "show", "check", "remove", "status"):
        assert complete(f"fedfuse-junction {cmd} {d}/dir {d}/") == [], cmd


def test_locations(tmp_path):
    (tmp_path / "srv").mkdir()
    d = str(tmp_path)
    assert complete(f"fedfuse-junction add {d}/j ") == ["file:///", "nfs://", "smb://"]
    assert complete(f"fedfuse-junction add {d}/j nfs://h/e ") == ["file:///", "nfs://", "smb://"]
    assert complete(f"fedfuse-junction add --format fedfs {d}/j n") == ["nfs://"]
    # bash replaces only what follows the last ':' of the URI
    assert complete(f"fedfuse-junction add {d}/j smb:") == ["//"]
    assert complete(f"fedfuse-junction add {d}/j file://{d}/s") == [f"//{d}/srv/"]
    assert complete(f"fedfuse-junction add {d}/j file://{d}/s", breaks=" ") == [
        f"file://{d}/srv/"]
