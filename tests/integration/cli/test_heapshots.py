#!/usr/bin/env python3
"""`mlpd heapshots`: the heapshot listing and diff, checked against Mono 6.8's mprof-report.

- Runs Mono's own log profiler (`heapshot`) on heapshot.exe: 3 heapshots (tests/programs/README.md).
- On the file and on a gzip copy (and the plain file through standard input):
  - the listing has as many heapshots as mprof-report's "Heap shot N at X secs: size: S, object
    count: C, class count: K" lines, with the same time (3 decimals), size, object and class counts, and
    the same class rows (name, bytes, objects); the roots equal `mprof-report --traces`'s;
  - Leaf is exactly 5000 objects / 160000 B and Twig 5000 / 120000 B in every heapshot;
  - `--json` parses and agrees with the text (every field, every class row, in order);
  - `--diff 0 1` lists no change for Leaf/Twig (with `--all`: +0 +0 rows), its totals line and the
    deltas of `--diff 1 2 --all --json` equal the listing's differences; `--top N` limits rows.
- Errors: a heapshot index out of range or not a number (exit 2, one line), missing file (exit 1),
  usage errors (exit 2), --help (exit 0); a file without heapshots (`heapshot=ondemand`) prints
  "FILE: no heapshots" and exits 0 (JSON: no output); a truncated file prints its problems on stderr
  as `mlpd verify` does, still lists what it read, and exits 1.
"""
import collections
import gzip
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

MLPD = t.MLPD

EXPECTED_CLASSES = {"Leaf": (5000, 160000), "Twig": (5000, 120000)}
# tests/programs/README.md; the last heapshot (at shutdown) also holds one object of the runtime's own
# that Mono 6.12 keeps alive and 6.8 does not.
EXPECTED_OBJECTS = [10070, 10070, 10432 if t.RUNTIME == "mono612" else 10431]

HEADER_RE = re.compile(r"^heapshot (\d+) at (-?\d+\.\d{3}) s: (\d+) objects, (\d+) bytes, (\d+) classes, "
                       r"(\d+) roots( \(incomplete: no heap_end\))?$")
ROW_RE = re.compile(r"^  +(\d+) +(\d+)  (.+)$")
DIFF_ROW_RE = re.compile(r"^  +([+-]\d+) +([+-]\d+)  (.+)$")
TOTAL_RE = re.compile(r"^total: ([+-]\d+) bytes, ([+-]\d+) objects \((\d+) -> (\d+) bytes, (\d+) -> (\d+) objects\)$")
MORE_RE = re.compile(r"^  \((\d+) more classes\)$")
MPROF_SHOT_RE = re.compile(r"^\tHeap shot (\d+) at ([\d.]+) secs: size: (\d+), object count: (\d+), "
                           r"class count: (\d+), roots: (\d+)d?$")
MPROF_ROW_RE = re.compile(r"^\t\s+(\d+)\s+(\d+)\s+(\d+) (.+?)( \(bytes: [+-]?\d+, count: [+-]?\d+\))?$")
PROBLEM_RE = re.compile(r"^(.+): offset (\d+) \((?:buffer \d+|header)\): .+$")


def heapshots(args, input_bytes=None):
    return t.run([MLPD, "heapshots", *args], input_bytes=input_bytes, timeout=300)


def one_line(s):
    return len(s.strip().splitlines()) == 1


def parse_listing(text, label):
    """[{index, time, objects, bytes, classes, roots, complete, rows: [(name, objects, bytes)], more}]"""
    shots = []
    for i, line in enumerate(text.splitlines()):
        if not line:
            continue
        m = HEADER_RE.match(line)
        if m:
            shots.append({"index": int(m[1]), "time": m[2], "objects": int(m[3]), "bytes": int(m[4]),
                          "classes": int(m[5]), "roots": int(m[6]), "complete": m[7] is None, "rows": [],
                          "more": 0})
            continue
        if not t.check(shots, f"{label}: line {i + 1} before any heapshot header: {line!r}"):
            continue
        if line.split() == ["bytes", "objects", "class"]:
            continue
        m = MORE_RE.match(line)
        if m:
            shots[-1]["more"] = int(m[1])
            continue
        m = ROW_RE.match(line)
        if t.check(m is not None, f"{label}: line {i + 1} has an unexpected shape: {line!r}"):
            shots[-1]["rows"].append((m[3], int(m[2]), int(m[1])))
    return shots


def parse_mprof(text):
    """mprof-report's heapshot report: [{time, bytes, objects, classes, roots, rows: [(name, objects, bytes)]}]"""
    shots = []
    for line in text.splitlines():
        m = MPROF_SHOT_RE.match(line)
        if m:
            shots.append({"time": m[2], "bytes": int(m[3]), "objects": int(m[4]), "classes": int(m[5]),
                          "roots": int(m[6]), "rows": []})
            continue
        m = MPROF_ROW_RE.match(line)
        if m and shots:
            shots[-1]["rows"].append((m[4], int(m[2]), int(m[1])))
    return shots


def check_listing(label, path, mprof, mprof_roots, input_bytes=None):
    args = ["-"] if input_bytes is not None else [path]
    p = heapshots(args, input_bytes)
    t.check(p.returncode == 0 and p.stderr == "", f"{label}: exit {p.returncode}, stderr {p.stderr[:300]!r}")
    shots = parse_listing(p.stdout, label)
    if not t.check(len(shots) == len(mprof) == 3,
                   f"{label}: {len(shots)} heapshots, mprof-report has {len(mprof)} (expected 3)"):
        return None
    for i, (s, m) in enumerate(zip(shots, mprof)):
        w = f"{label}: heapshot {i}"
        t.check(s["index"] == i, f"{w}: index {s['index']}")
        t.check(s["complete"], f"{w}: marked incomplete")
        for key in ("time", "objects", "bytes", "classes"):
            t.check(s[key] == m[key], f"{w}: {key} {s[key]}, mprof-report {m[key]}")
        t.check(s["objects"] == EXPECTED_OBJECTS[i], f"{w}: {s['objects']} objects, expected {EXPECTED_OBJECTS[i]}")
        t.check(s["roots"] == mprof_roots[i], f"{w}: {s['roots']} roots, mprof-report --traces {mprof_roots[i]}")
        t.check(s["more"] == 0 and len(s["rows"]) == s["classes"],
                f"{w}: {len(s['rows'])} class rows for {s['classes']} classes")
        t.check(collections.Counter(s["rows"]) == collections.Counter(m["rows"]),
                f"{w}: class rows differ from mprof-report's: ours-only "
                f"{sorted(set(s['rows']) - set(m['rows']))[:5]}, theirs-only {sorted(set(m['rows']) - set(s['rows']))[:5]}")
        t.check(sum(r[1] for r in s["rows"]) == s["objects"] and sum(r[2] for r in s["rows"]) == s["bytes"],
                f"{w}: class rows do not add up to the totals")
        t.check([r[2] for r in s["rows"]] == sorted((r[2] for r in s["rows"]), reverse=True),
                f"{w}: rows not sorted by bytes")
        for name, (objects, size) in EXPECTED_CLASSES.items():
            got = [(r[1], r[2]) for r in s["rows"] if r[0] == name]
            t.check(got == [(objects, size)], f"{w}: {name} rows {got}, expected [({objects}, {size})]")
    return shots


def check_json(label, path, shots):
    p = heapshots(["--json", path])
    t.check(p.returncode == 0 and p.stderr == "", f"{label} --json: exit {p.returncode}, stderr {p.stderr[:300]!r}")
    objs = []
    for i, line in enumerate(p.stdout.splitlines()):
        try:
            objs.append(json.loads(line))
        except ValueError as e:
            t.check(False, f"{label} --json: line {i + 1} is not JSON ({e}): {line[:200]!r}")
    if not t.check(len(objs) == len(shots), f"{label} --json: {len(objs)} objects for {len(shots)} heapshots"):
        return
    for s, o in zip(shots, objs):
        w = f"{label} --json heapshot {s['index']}"
        for key in ("index", "time", "objects", "bytes", "classes", "roots", "complete", "class_count"):
            t.check(key in o, f"{w}: no {key!r}")
        t.check(o.get("index") == s["index"] and o.get("objects") == s["objects"] and o.get("bytes") == s["bytes"]
                and o.get("roots") == s["roots"] and o.get("complete") is True
                and o.get("class_count") == s["classes"], f"{w}: fields differ from the text: {str(o)[:300]}")
        t.check(isinstance(o.get("time"), float) and f"{o['time']:.3f}" == s["time"],
                f"{w}: time {o.get('time')} vs text {s['time']}")
        rows = [(c["name"], c["objects"], c["bytes"]) for c in o.get("classes", [])]
        t.check(rows == s["rows"], f"{w}: class rows differ from the text")
    # --top in JSON: classes limited, class_count not.
    p = heapshots(["--json", "--top", "2", path])
    objs = [json.loads(line) for line in p.stdout.splitlines()] if p.returncode == 0 else []
    t.check(len(objs) == 3 and all(len(o["classes"]) == 2 and o["class_count"] == s["classes"]
                                   for o, s in zip(objs, shots)), f"{label} --json --top 2: wrong class lists")


def parse_diff(text, label):
    rows, total, header, other = [], None, None, []
    for line in text.splitlines():
        m = DIFF_ROW_RE.match(line)
        if m:
            rows.append((m[3], int(m[2]), int(m[1])))
            continue
        m = TOTAL_RE.match(line)
        if m:
            total = tuple(int(x) for x in m.groups())
            continue
        if line.startswith("heapshot "):
            header = line
            continue
        other.append(line)
    return header, rows, total, other


def check_diff(label, path, shots):
    by_name = [collections.defaultdict(lambda: [0, 0]) for _ in shots]
    for i, s in enumerate(shots):
        for name, objects, size in s["rows"]:
            by_name[i][name][0] += objects
            by_name[i][name][1] += size

    # 0 -> 1: the same live graph; Leaf/Twig never listed as changed.
    p = heapshots(["--diff", "0", "1", path])
    t.check(p.returncode == 0 and p.stderr == "", f"{label} --diff 0 1: exit {p.returncode}, {p.stderr[:300]!r}")
    header, rows, total, _ = parse_diff(p.stdout, label)
    t.check(header is not None and header.startswith("heapshot 0 -> 1 ("), f"{label} --diff 0 1: header {header!r}")
    for name in EXPECTED_CLASSES:
        t.check(all(r[0] != name for r in rows), f"{label} --diff 0 1: {name} listed as changed: {rows}")
    s0, s1, s2 = shots
    t.check(total == (s1["bytes"] - s0["bytes"], s1["objects"] - s0["objects"], s0["bytes"], s1["bytes"],
                      s0["objects"], s1["objects"]), f"{label} --diff 0 1: totals line {total}")
    p = heapshots(["--diff", "0", "1", "--all", path])
    _, rows, _, _ = parse_diff(p.stdout, label)
    for name in EXPECTED_CLASSES:
        t.check([r for r in rows if r[0] == name] == [(name, 0, 0)], f"{label} --diff 0 1 --all: {name} row wrong")
    t.check(len(rows) == s1["classes"], f"{label} --diff 0 1 --all: {len(rows)} rows, {s1['classes']} classes")

    # 1 -> 2 (shutdown): text rows sorted by bytes grown, deltas = listing differences.
    p = heapshots(["--diff", "1", "2", path])
    header, rows, total, _ = parse_diff(p.stdout, label)
    t.check(p.returncode == 0 and rows, f"{label} --diff 1 2: exit {p.returncode}, {len(rows)} rows")
    t.check([r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True), f"{label} --diff 1 2: not sorted")
    t.check(all(r[1] or r[2] for r in rows), f"{label} --diff 1 2: unchanged class listed without --all")
    t.check(total is not None and total[0] == s2["bytes"] - s1["bytes"] and total[1] == s2["objects"] - s1["objects"],
            f"{label} --diff 1 2: totals line {total}")
    p = heapshots(["--diff", "1", "2", "--all", "--json", path])
    try:
        d = json.loads(p.stdout)
    except ValueError as e:
        t.check(False, f"{label} --diff --json: not JSON ({e}): {p.stdout[:200]!r}")
        return
    t.check(d.get("from") == 1 and d.get("to") == 2 and d.get("bytes") == s2["bytes"] - s1["bytes"]
            and d.get("objects") == s2["objects"] - s1["objects"], f"{label} --diff --json: {str(d)[:300]}")
    got = collections.defaultdict(lambda: [0, 0])
    for c in d.get("classes", []):
        got[c["name"]][0] += c["objects"]
        got[c["name"]][1] += c["bytes"]
    names = set(by_name[1]) | set(by_name[2])
    want = {n: [by_name[2][n][0] - by_name[1][n][0], by_name[2][n][1] - by_name[1][n][1]] for n in names}
    t.check(dict(got) == want, f"{label} --diff 1 2 --json: deltas differ from the listing")
    text_rows = {(r[0], r[1], r[2]) for r in rows}
    json_rows = {(c["name"], c["objects"], c["bytes"]) for c in d.get("classes", []) if c["objects"] or c["bytes"]}
    t.check(text_rows == json_rows, f"{label} --diff 1 2: JSON and text rows differ")

    p = heapshots(["--diff", "1", "2", "--top", "3", path])
    _, rows, total, other = parse_diff(p.stdout, label)
    t.check(len(rows) == 3 and total is not None and any(MORE_RE.match(o) for o in other),
            f"{label} --diff --top 3: {len(rows)} rows, other lines {other}")
    p = heapshots(["--top", "1", path])
    top = parse_listing(p.stdout, label + " --top 1")
    t.check(len(top) == 3 and all(len(s["rows"]) == 1 and s["rows"][0][0] == "Leaf" and
                                  s["more"] == s["classes"] - 1 for s in top), f"{label} --top 1: wrong rows")


def check_two_files(path, workdir, shots):
    """--diff A B FILE1 FILE2: A of FILE1, B of a second run (other class addresses), matched by name."""
    second = os.path.join(workdir, "second.mlpd")
    p = t.mono_log_profile("heapshot", "heapshot", second)
    if not t.check(p.returncode == 0, f"second mono heapshot run failed: {p.stderr[:300]}"):
        return
    # The same file twice equals the one-file diff.
    one = heapshots(["--diff", "1", "2", "--all", path])
    two = heapshots(["--diff", "1", "2", "--all", path, path])
    t.check(one.returncode == two.returncode == 0 and one.stdout == two.stdout,
            f"--diff 1 2 FILE FILE differs from --diff 1 2 FILE: {two.stdout[:300]!r} {two.stderr[:300]!r}")
    # Two runs: heapshot 0 of each holds the same program classes; by name, Leaf and Twig did not change.
    p = heapshots(["--diff", "0", "0", "--all", "--json", path, second])
    try:
        d = json.loads(p.stdout)
    except ValueError as e:
        t.check(False, f"two runs --diff --json: not JSON ({e}): {p.stdout[:200]!r} {p.stderr[:200]!r}")
        return
    rows = {c["name"]: (c["objects"], c["bytes"]) for c in d["classes"]}
    for name in EXPECTED_CLASSES:
        t.check(rows.get(name) == (0, 0), f"two runs --diff 0 0: {name} row {rows.get(name)}, expected no change")
    t.check(len(rows) == len(d["classes"]), "two runs --diff: a class name listed twice")
    p = heapshots(["--diff", "0", "2", path, second])
    _, rows, total, _ = parse_diff(p.stdout, "two runs")
    t.check(p.returncode == 0 and total is not None and total[2] == shots[0]["bytes"],
            f"two runs --diff 0 2: exit {p.returncode}, totals {total}")
    print("ok  --diff across two files (classes matched by name)", flush=True)


def check_errors(path, workdir):
    cases = [
        (["--diff", "0", "3", path], 2, "no heapshot 3"),
        (["--diff", "7", "0", path], 2, "no heapshot 7"),
        (["--diff", "0", "x", path], 2, "--diff needs"),
        (["--diff", "0", path], 2, "--diff needs"),
        (["--diff", "-1", "0", path], 2, "--diff needs"),
        (["--top", "many", path], 2, "--top needs"),
        (["--all", path], 2, "--all"),
        (["--bogus", path], 2, "unknown option"),
        ([], 2, "no FILE"),
        ([path, path], 2, "one FILE"),
        (["--diff", "0", "1", path, path, path], 2, "one FILE"),
        (["--diff", "0", "3", path, path], 2, "no heapshot 3"),
        ([os.path.join(workdir, "missing.mlpd")], 1, "cannot open"),
        ([workdir], 1, "cannot open"),
    ]
    for args, rc, text in cases:
        p = heapshots(args)
        t.check(p.returncode == rc and p.stdout == "" and one_line(p.stderr) and text in p.stderr,
                f"heapshots {args}: exit {p.returncode} (want {rc}), stdout {p.stdout[:100]!r}, "
                f"stderr {p.stderr[:300]!r} (want one line with {text!r})")
    p = heapshots(["--help"])
    t.check(p.returncode == 0 and p.stdout.startswith("usage: mlpd heapshots") and p.stderr == "",
            f"heapshots --help: exit {p.returncode}")
    p = t.run([MLPD, "--help"])
    t.check(p.returncode == 0 and re.search(r"^  heapshots ", p.stdout, re.M), "mlpd --help lacks heapshots")

    # A truncated file: problems on stderr as `mlpd verify` prints them, the rest still listed, exit 1.
    data = open(path, "rb").read()
    cut = os.path.join(workdir, "cut.mlpd")
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    p = heapshots([cut])
    lines = p.stderr.splitlines()
    verify = [l for l in t.run([MLPD, "verify", cut]).stdout.splitlines() if PROBLEM_RE.match(l)]
    t.check(p.returncode == 1 and lines and all(PROBLEM_RE.match(l) and l.startswith(cut + ": ") for l in lines),
            f"truncated: exit {p.returncode}, stderr {p.stderr[:300]!r}")
    t.check(lines == verify, f"truncated: problems {lines} differ from mlpd verify's {verify}")
    t.check(parse_listing(p.stdout, "truncated") != [], "truncated: nothing listed")


def main():
    workdir = tempfile.mkdtemp(prefix="mlpd-heapshots-")
    try:
        path = os.path.join(workdir, "heapshot.mlpd")
        p = t.mono_log_profile("heapshot", "heapshot", path)
        if not t.check(p.returncode == 0 and os.path.exists(path), f"mono heapshot run failed: {p.stderr[:300]}"):
            t.finish("test_heapshots")
        gz = path + ".gz"
        with open(path, "rb") as src, gzip.open(gz, "wb") as dst:
            shutil.copyfileobj(src, dst)

        # --verbose: without it mprof-report prints only the 30 biggest classes of a heapshot.
        rc, _, rp = t.mprof_report(path, "--reports=heapshot", "--verbose")
        mprof = parse_mprof(rp.stdout)
        rc2, _, rp2 = t.mprof_report(path, "--reports=heapshot", "--traces")
        mprof_roots = [s["roots"] for s in parse_mprof(rp2.stdout)]
        t.check(rc == 0 and rc2 == 0 and len(mprof) == len(mprof_roots) == 3,
                f"mprof-report: exit {rc}/{rc2}, {len(mprof)} heapshots")

        shots = None
        for label, f in (("heapshot.mlpd", path), ("heapshot.mlpd.gz", gz)):
            s = check_listing(label, f, mprof, mprof_roots)
            if s is None:
                continue
            shots = shots or s
            t.check(s == shots, f"{label}: listing differs from the plain file's")
            check_json(label, f, s)
            check_diff(label, f, s)
        if shots:
            check_listing("stdin", path, mprof, mprof_roots, input_bytes=open(path, "rb").read())
        print("ok  listing, JSON and diff (plain, gzip, stdin) agree with mprof-report", flush=True)

        check_errors(path, workdir)
        none = os.path.join(workdir, "ondemand.mlpd")
        p = t.mono_log_profile("heapshot", "heapshot=ondemand", none)
        if t.check(p.returncode == 0, f"mono heapshot=ondemand run failed: {p.stderr[:300]}"):
            p = heapshots([none])
            t.check(p.returncode == 0 and p.stdout == f"{none}: no heapshots\n" and p.stderr == "",
                    f"no heapshots: exit {p.returncode}, stdout {p.stdout[:200]!r}, stderr {p.stderr[:200]!r}")
            p = heapshots(["--json", none])
            t.check(p.returncode == 0 and p.stdout == "", f"no heapshots --json: exit {p.returncode}, {p.stdout[:200]!r}")
            p = heapshots(["--diff", "0", "0", none])
            t.check(p.returncode == 2 and one_line(p.stderr) and "has no heapshots" in p.stderr,
                    f"no heapshots --diff: exit {p.returncode}, {p.stderr[:200]!r}")
            p = heapshots(["--diff", "0", "0", path, none])
            t.check(p.returncode == 2 and one_line(p.stderr) and f"'{none}' has no heapshots" in p.stderr,
                    f"two files, second without heapshots --diff: exit {p.returncode}, {p.stderr[:200]!r}")
        print("ok  errors, truncated file, file without heapshots", flush=True)
        check_two_files(path, workdir, shots)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    t.finish("test_heapshots")


if __name__ == "__main__":
    main()
