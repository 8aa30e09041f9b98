# SPDX-License-Identifier: GPL-2.0-or-later
"""/.fedfuse/metrics: the daemon's figures in the Prometheus text exposition format (0.0.4),
read by a strict parser written here (the format's grammar, TYPE/HELP rules, histogram rules,
naming conventions), and the counts checked to move as operations happen through the mount."""

import errno
import math
import os
import re
import subprocess

import pytest

from conftest import BUILDDIR, file_uri
from util import create, namespace_text, read_file, wait_until

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}


def parse_value(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise ValueError(f"not a number: {text!r}")
    return float(text)


def parse_labels(text, pos):
    """Labels from text[pos] == '{' to the matching '}'; returns (dict, position after)."""
    assert text[pos] == "{"
    pos += 1
    labels = {}
    while text[pos] != "}":
        m = LABEL_NAME.match(text, pos)
        assert m, f"bad label name at {text[pos:]!r}"
        name = m.group(0)
        pos = m.end()
        assert text[pos:pos + 2] == '="', f"expected =\" after {name} in {text!r}"
        pos += 2
        value = []
        while text[pos] != '"':
            c = text[pos]
            if c == "\\":
                nxt = text[pos + 1]
                assert nxt in '\\"n', f"bad escape \\{nxt} in {text!r}"
                value.append("\n" if nxt == "n" else nxt)
                pos += 2
            else:
                assert c != "\n"
                value.append(c)
                pos += 1
        pos += 1
        assert name not in labels, f"label {name} twice in {text!r}"
        labels[name] = "".join(value)
        if text[pos] == ",":
            pos += 1
        else:
            assert text[pos] == "}", f"expected , or }} in {text!r}"
    return labels, pos + 1


def family_of(name, types):
    """The family a sample name belongs to (histogram samples carry a suffix)."""
    for family, kind in types.items():
        for suffix in SUFFIXES.get(kind, ("",)):
            if name == family + suffix:
                return family
    return name


def parse_exposition(text):
    """Parse strictly. Returns {family: {"type", "help", "samples": [(name, labels, value)]}}."""
    assert text.endswith("\n"), "the text must end with a newline"
    families = {}
    types = {}
    order = []  # families in the order their samples appear
    seen_series = set()
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {lineno}: {line!r}"
        assert line.strip(), f"blank {where}"
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                assert METRIC_NAME.fullmatch(name), where
                fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
                if parts[1] == "TYPE":
                    assert len(parts) == 4 and parts[3] in TYPES, where
                    assert fam["type"] is None, f"second TYPE for {name}: {where}"
                    assert not fam["samples"], f"TYPE after samples of {name}: {where}"
                    fam["type"] = parts[3]
                    types[name] = parts[3]
                else:
                    assert fam["help"] is None, f"second HELP for {name}: {where}"
                    fam["help"] = parts[3] if len(parts) == 4 else ""
            continue
        m = METRIC_NAME.match(line)
        assert m, where
        name = m.group(0)
        pos = m.end()
        labels = {}
        if pos < len(line) and line[pos] == "{":
            labels, pos = parse_labels(line, pos)
        assert line[pos] == " ", where
        fields = line[pos + 1:].split(" ")
        assert 1 <= len(fields) <= 2, where
        value = parse_value(fields[0])
        if len(fields) == 2:
            int(fields[1])  # a timestamp
        fam_name = family_of(name, types)
        fam = families.setdefault(fam_name, {"type": None, "help": None, "samples": []})
        if order and order[-1] != fam_name:
            assert fam_name not in order, f"samples of {fam_name} are not together: {where}"
        if not order or order[-1] != fam_name:
            order.append(fam_name)
        key = (name, tuple(sorted(labels.items())))
        assert key not in seen_series, f"series twice: {where}"
        seen_series.add(key)
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        check_family(name, fam)
    return families


def check_family(name, fam):
    kind = fam["type"]
    assert kind, f"{name} has no TYPE"
    assert fam["help"], f"{name} has no HELP"
    if kind == "counter":
        assert name.endswith("_total"), f"counter {name} does not end in _total"
        assert all(v >= 0 for _, _, v in fam["samples"]), name
    if kind != "histogram":
        assert all(n == name for n, _, _ in fam["samples"]), name
        return
    assert name.endswith("_seconds"), f"histogram {name} is not in seconds"
    series = {}
    for n, labels, v in fam["samples"]:
        base = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        s = series.setdefault(base, {"buckets": [], "sum": None, "count": None})
        if n == name + "_bucket":
            s["buckets"].append((parse_value(labels["le"]), v))
        elif n == name + "_sum":
            s["sum"] = v
        elif n == name + "_count":
            s["count"] = v
    for base, s in series.items():
        les = [le for le, _ in s["buckets"]]
        assert les == sorted(les) and les and les[-1] == math.inf, (name, base, les)
        counts = [c for _, c in s["buckets"]]
        assert counts == sorted(counts), f"{name}{base}: buckets not cumulative: {counts}"
        assert s["count"] == counts[-1], f"{name}{base}: _count != +Inf bucket"
        assert s["sum"] is not None and s["sum"] >= 0, (name, base)
        assert les[0] <= 1e-5 and 10 <= les[-2], f"{name}: buckets {les} do not span 10us-10s"


def value(families, name, **labels):
    """The value of the one sample of `name` whose labels include `labels` (0 if none)."""
    fam = families.get(name) or families.get(family_of(name, {k: f["type"] for k, f in
                                                               families.items()}))
    found = [v for n, lab, v in (fam or {"samples": []})["samples"]
             if n == name and all(lab.get(k) == x for k, x in labels.items())]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0


def scrape(mnt):
    with open(os.path.join(mnt, ".fedfuse", "metrics")) as f:
        return parse_exposition(f.read())


def test_parser_rejects_bad_text():
    """The parser is strict: each of these breaks a rule of the format."""
    good = ("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n")
    parse_exposition(good)
    for bad in [good.rstrip("\n"),                                    # no final newline
                good.replace("counter", "gauge\n# TYPE a_total gauge"),  # TYPE twice
                good.replace('x="1"', 'x="1",x="2"'),                  # label twice
                good.replace('"1"', '"a\\tb"'),                        # bad escape
                good.replace(" 3", " three"),                          # bad value
                good + 'a_total{x="1"} 4\n',                            # series twice
                good.replace("a_total", "a"),                          # counter without _total
                good + "# HELP b B.\n# TYPE b gauge\nb 1\na_total 1\n"]:  # family split
        with pytest.raises((AssertionError, ValueError, IndexError)):
            parse_exposition(bad)


@pytest.fixture
def metrics_mount(mount_factory, tmp_path):
    loc = tmp_path / "loc"
    loc.mkdir()
    ns = namespace_text([("/x", [file_uri(str(loc))], None),
                         ("/down", [f"mem://mx{os.getpid()}/d?faults={tmp_path}/faults"], None)],
                        {"attr_timeout": 0, "timeout": 2})
    (tmp_path / "faults").write_text("* errno ECONNREFUSED\n")
    m = mount_factory(ns_text=ns, name="metrics")
    m.expect_log(r"location mem://\S+ is (unreachable|reachable again)")
    m.start()
    return m, loc


def test_metrics_format_and_counts(metrics_mount):
    m, loc = metrics_mount
    x = os.path.join(m.mnt, "x")
    first = scrape(m.mnt)
    uri = file_uri(str(loc))
    where = {"location": "/x", "uri": uri}

    # negative lookups: one ENOENT each (a new name each time, so none is cached)
    for i in range(5):
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(x, f"missing{i}"))
    # bytes: a file made in the backing directory, read once through the mount
    data = os.urandom(100_000)
    (loc / "r").write_bytes(data)
    assert read_file(os.path.join(x, "r")) == data
    # and a file written through the mount
    create(os.path.join(x, "w"), b"w" * 70_000)
    after = scrape(m.mnt)

    def delta(name, **labels):
        return value(after, name, **where, **labels) - value(first, name, **where, **labels)

    assert delta("fedfuse_backend_errors_total", op="lookup", errno="ENOENT") >= 5
    assert delta("fedfuse_backend_read_bytes_total") == len(data)
    assert delta("fedfuse_backend_written_bytes_total") == 70_000
    assert delta("fedfuse_backend_ops_total", op="lookup") >= 7
    assert delta("fedfuse_backend_ops_total", op="write") >= 1
    assert delta("fedfuse_backend_op_duration_seconds_count", op="lookup") == \
        delta("fedfuse_backend_ops_total", op="lookup")
    assert value(after, "fedfuse_location_up", **where) == 1
    assert value(after, "fedfuse_inodes") >= 3
    assert value(after, "process_resident_memory_bytes") > 1 << 20
    assert value(after, "process_open_fds") >= 3
    assert value(after, "process_max_fds") >= value(after, "process_open_fds")


def test_metrics_open_files_and_down_location(metrics_mount):
    m, loc = metrics_mount
    create(str(loc / "f"), b"data")
    before = value(scrape(m.mnt), "fedfuse_open_files")
    with open(os.path.join(m.mnt, "x", "f"), "rb"):
        assert value(scrape(m.mnt), "fedfuse_open_files") == before + 1
    assert wait_until(lambda: value(scrape(m.mnt), "fedfuse_open_files") == before, 5)

    # a location whose server refuses: down, and its errors counted by errno name
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(m.mnt, "down"))
    assert e.value.errno in (errno.ECONNREFUSED, errno.EHOSTDOWN, errno.EIO, errno.ETIMEDOUT)
    fams = scrape(m.mnt)
    down = [lab for n, lab, v in fams["fedfuse_location_up"]["samples"]
            if lab["location"] == "/down"]
    assert down and value(fams, "fedfuse_location_up", location="/down") == 0
    refused = [v for n, lab, v in fams["fedfuse_backend_errors_total"]["samples"]
               if lab["location"] == "/down" and lab["errno"] == "ECONNREFUSED"]
    assert refused and sum(refused) >= 1


def test_metrics_junction_cache(mount_factory, tmp_path):
    """Crossing a junction counts a miss, then hits; its traffic counts to the referral."""
    loc = tmp_path / "loc"
    target = tmp_path / "target"
    loc.mkdir()
    target.mkdir()
    (target / "t").write_bytes(b"behind the junction")
    (loc / "j").mkdir()
    try:
        os.setxattr(loc / "j", "user.fedfuse.locations", file_uri(str(target)).encode())
    except OSError as e:
        pytest.skip(f"no user xattrs here: {e}")
    m = mount_factory(referrals=[("/x", [file_uri(str(loc))])], name="jmetrics")
    m.start()
    before = scrape(m.mnt)
    assert read_file(os.path.join(m.mnt, "x", "j", "t")) == b"behind the junction"
    after = scrape(m.mnt)
    assert value(after, "fedfuse_junction_cache_misses_total") > \
        value(before, "fedfuse_junction_cache_misses_total")
    assert value(after, "fedfuse_junction_cache_entries") >= 1
    assert value(after, "fedfuse_backend_read_bytes_total", location="/x") == \
        len(b"behind the junction")
    assert value(after, "fedfuse_mounts") >= 2


def test_status_shows_metrics(metrics_mount):
    """fedfuse-junction status shows the same figures for a person."""
    m, loc = metrics_mount
    create(os.path.join(m.mnt, "x", "f"), b"z" * 2048)
    tool = os.path.join(BUILDDIR, "tools", "fedfuse-junction")
    p = subprocess.run([tool, "status", m.mnt], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = lines.index("Traffic (operations sent to each referral's locations)")
    header = lines[start + 1].split()
    assert header == ["REFERRAL", "LOCATION", "UP", "OPS", "ERRORS", "READ", "WRITTEN",
                      "MEAN", "P99"]
    row = next(line for line in lines[start + 2:] if line.split()[0] == "/x")
    assert "2.0 KiB" in row and " yes " in row, row
    assert "Daemon" in lines
    assert any(re.match(r"\s+inodes held by the kernel\s+\d+$", line) for line in lines)
