#!/usr/bin/env python3
"""mlpd report / export / diff against mprof-report, on files written by Mono's own log profiler
and by our agent for the test programs:
  * report --json totals equal mprof-report's (calls, allocated objects and bytes, throws, sample
    hits, lock contentions) and the per-method call counts of the most called methods too;
  * the collapsed export sums to the sample hits (cpu), allocations (alloc, alloc-bytes), throws;
  * the hot spot of sample.exe (SampleProgram:Spin) comes first in the report and in collapsed;
  * Fib's recursion does not double-count its inclusive time; unmatched enters at the end close;
  * --what for what the file lacks, unknown thread, bad options: one-line errors, exit 2;
  * diff writes 'stack A B' lines and an HTML page;
  * progress: on a terminal (a pty) standard error shows bytes, percent and events/s; on a pipe,
    nothing.
"""
import json
import os
import pty
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mlpdtest import (MLPD, MONO, MPROF_REPORT, check, finish, mono_log_profile, mprof_report,  # noqa: E402
                      our_totals, program, run)

AGENT = os.environ.get("MLPD_AGENT", "libmlpd.so")
WORK = os.path.join(os.getcwd(), "report-work")
os.makedirs(WORK, exist_ok=True)


def agent_profile(prog, options, out):
    env = dict(os.environ)
    env["LD_PRELOAD"] = AGENT
    env["MLPD_OPTIONS"] = f"{options},output={out}"
    return run([MONO, program(prog)], env=env)


def report_json(path, *args):
    p = run([MLPD, "report", "--json", *args, path])
    check(p.returncode == 0, f"report --json {path}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        check(False, f"report --json {path}: not JSON ({e}): {p.stdout[:200]}")
        return {}


def collapsed(path, what, extra=()):
    p = run([MLPD, "export", "--format", "collapsed", "--what", what, *extra, path])
    check(p.returncode == 0, f"export collapsed --what {what} {path}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    stacks = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(.+) (\d+)$", line)
        if not check(m is not None, f"collapsed line of {path} not 'stack COUNT': {line!r}"):
            continue
        stacks[m.group(1)] = stacks.get(m.group(1), 0) + int(m.group(2))
    return stacks


def mprof_method_calls(path):
    """Per-method call counts from mprof-report's call report (every method, --verbose)."""
    p = run([MPROF_REPORT, "--reports=call", "--verbose", "--method-sort=calls", path], timeout=300)
    calls = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*\d+\s+\d+\s+(\d+)\s+(.+)$", line)
        if m:
            calls[m.group(2)] = calls.get(m.group(2), 0) + int(m.group(1))
    return calls


def compare_calls(label, path):
    rep = report_json(path, "--top", "8")
    rc, t, _ = mprof_report(path)
    check(rc == 0, f"{label}: mprof-report failed")
    calls = rep.get("calls", {})
    check(calls.get("total") == t.get("calls"), f"{label}: calls.total {calls.get('total')} != mprof-report's {t.get('calls')}")
    alloc = rep.get("alloc", {})
    check(alloc.get("objects") == t.get("alloc_objects") and alloc.get("bytes") == t.get("alloc_bytes"),
          f"{label}: alloc {alloc.get('objects')} objects / {alloc.get('bytes')} bytes != mprof-report's "
          f"{t.get('alloc_objects')} / {t.get('alloc_bytes')}")
    if "throws" in t:
        check(rep.get("exceptions", {}).get("throws") == t["throws"],
              f"{label}: throws {rep.get('exceptions', {}).get('throws')} != mprof-report's {t['throws']}")
    theirs = mprof_method_calls(path)
    methods = calls.get("methods", [])
    check(len(methods) == 8, f"{label}: calls.methods has {len(methods)} entries, not --top 8")
    for m in methods[:5]:
        check("name" in m and theirs.get(m["name"]) == m["calls"],
              f"{label}: {m.get('name')}: {m.get('calls')} calls, mprof-report says {theirs.get(m.get('name'))}")
    by_name = {m["name"]: m for m in methods}
    fib = by_name.get("CallsProgram:Fib (int)")
    if check(fib is not None, f"{label}: Fib not among the most called: {[m['name'] for m in methods]}"):
        check(fib["calls"] == 21891, f"{label}: Fib calls {fib['calls']} != 21891")
        # Recursion counted once: Fib's inclusive time is at most Main's (it runs inside Main once).
        main = [m for m in calls.get("inclusive", []) if m["name"] == "CallsProgram:Main ()"]
        check(main and fib["total_ns"] <= main[0]["total_ns"],
              f"{label}: Fib inclusive {fib['total_ns']} ns > Main's {main[0]['total_ns'] if main else '?'}: "
              "recursion double-counted")
    check(calls.get("methods", [{}])[0].get("name") == "CallsProgram:Fib (int)", f"{label}: Fib not the most called")
    # Collapsed allocation stacks sum to the totals.
    for what, want in (("alloc", t.get("alloc_objects")), ("alloc-bytes", t.get("alloc_bytes"))):
        s = sum(collapsed(path, what).values())
        check(s == want, f"{label}: collapsed --what {what} sums to {s}, not {want}")
    s = sum(collapsed(path, "calls").values())
    check(s > 0, f"{label}: collapsed --what calls is empty")
    return rep


def main():
    # calls + alloc, Mono's profiler and ours.
    mono_calls = os.path.join(WORK, "mono-calls.mlpd")
    mono_log_profile("calls", "calls,alloc", mono_calls)
    rep = compare_calls("mono calls", mono_calls)
    check("samples" not in rep and "monitor" not in rep, f"mono calls: sections without events: {sorted(rep)}")
    for key in ("header", "calls", "alloc", "gc", "jit"):
        check(key in rep, f"mono calls: no '{key}' section")
    ours_calls = os.path.join(WORK, "ours-calls.mlpd")
    agent_profile("calls", "calls,alloc", ours_calls)
    compare_calls("our calls", ours_calls)

    # Text report: Fib's line and the sections.
    p = run([MLPD, "report", mono_calls])
    check(p.returncode == 0 and "== Calls: " in p.stdout and "CallsProgram:Fib (int)" in p.stdout,
          f"text report lacks the calls section or Fib: {p.stdout[:400]}")

    # Exceptions: throws by type, collapsed sums.
    for label, path, make in (("mono exceptions", os.path.join(WORK, "mono-exc.mlpd"), "mono"),
                              ("our exceptions", os.path.join(WORK, "ours-exc.mlpd"), "ours")):
        if make == "mono":
            mono_log_profile("exceptions", "exception,alloc", path)
        else:
            agent_profile("exceptions", "exception,alloc", path)
        rep = report_json(path)
        rc, t, _ = mprof_report(path)
        exc = rep.get("exceptions", {})
        check(exc.get("throws") == t.get("throws"), f"{label}: throws {exc.get('throws')} != mprof-report's {t.get('throws')}")
        s = sum(collapsed(path, "exceptions").values())
        check(s == t.get("throws"), f"{label}: collapsed --what exceptions sums to {s}, not {t.get('throws')}")
        types = {x["name"]: x["throws"] for x in exc.get("types", [])}
        check(types.get("System.InvalidOperationException") == 100,
              f"{label}: InvalidOperationException thrown {types.get('System.InvalidOperationException')} times, not 100: {types}")
        sites = [x["name"] for x in exc.get("sites", [])]
        check(any("ExceptionsProgram:Thrower" in n for n in sites), f"{label}: Thrower not a throw site: {sites}")

    # Samples: the hot spot first; totals against mprof-report (Mono's file: one IP per hit) and
    # against the event count (ours: mprof-report counts every native IP as a hit).
    for label, path, make in (("mono samples", os.path.join(WORK, "mono-sample.mlpd"), "mono"),
                              ("our samples", os.path.join(WORK, "ours-sample.mlpd"), "ours")):
        if make == "mono":
            mono_log_profile("sample", "sample", path)
            rc, t, _ = mprof_report(path)
            want = t.get("sample_hits")
        else:
            agent_profile("sample", "sample=1000", path)
            rc, t, _ = our_totals(path)
            want = t.get("sample_hits")
        rep = report_json(path)
        samples = rep.get("samples", {})
        check(samples.get("total") == want and want, f"{label}: samples.total {samples.get('total')} != {want}")
        methods = samples.get("methods", [])
        if make == "mono":  # Mono's sampler hits idle threads as much as the busy one: totals only
            s = sum(collapsed(path, "cpu").values())
            check(s == want, f"{label}: collapsed cpu sums to {s}, not {want}")
            continue
        check(methods and "SampleProgram:Spin" in methods[0].get("name", ""),
              f"{label}: the hot spot is not first: {[m.get('name') for m in methods[:3]]}")
        stacks = collapsed(path, "cpu")
        check(sum(stacks.values()) == want, f"{label}: collapsed cpu sums to {sum(stacks.values())}, not {want}")
        leaves = {}
        for st, n in stacks.items():
            leaf = st.split(";")[-1]
            leaves[leaf] = leaves.get(leaf, 0) + n
        top = max(leaves, key=leaves.get) if leaves else ""
        check("SampleProgram:Spin" in top, f"{label}: collapsed's heaviest leaf is {top!r}")
        th = run([MLPD, "export", "--format", "collapsed", "--threads", path])
        check(th.returncode == 0 and all(" (0x" in l.split(";")[0] or l.startswith("thread 0x")
                                         for l in th.stdout.splitlines()),
              f"{label}: --threads lines do not start with the thread: {th.stdout[:200]}")
        # Default --what is cpu for a file with samples.
        d = run([MLPD, "export", "--format", "collapsed", path])
        check(d.returncode == 0 and sum(int(l.rsplit(" ", 1)[1]) for l in d.stdout.splitlines()) == want,
              f"{label}: the default --what is not cpu")
        # --thread: the main thread holds the Spin samples.
        main_tid = None
        for line in th.stdout.splitlines():
            if "SampleProgram:Spin" in line:
                m = re.search(r"\((0x[0-9a-f]+)\)|^thread (0x[0-9a-f]+)", line)
                main_tid = m.group(1) or m.group(2) if m else None
                break
        if check(main_tid is not None, f"{label}: no thread id found in --threads output"):
            r = report_json(path, "--thread", main_tid)
            check(r.get("samples", {}).get("methods", [{}])[0].get("name", "").startswith("SampleProgram:Spin"),
                  f"{label}: --thread {main_tid}: Spin not first")

    # Monitors: contentions against mprof-report.
    mono_mon = os.path.join(WORK, "mono-monitor.mlpd")
    mono_log_profile("monitors", "monitor", mono_mon)
    rep = report_json(mono_mon)
    rc, t, _ = mprof_report(mono_mon)
    if t.get("monitor.contention"):
        check(rep.get("monitor", {}).get("contentions") == t.get("monitor.contention"),
              f"monitor: contentions {rep.get('monitor', {}).get('contentions')} != {t.get('monitor.contention')}")
        s = sum(collapsed(mono_mon, "monitor").values())
        check(s == t.get("monitor.contention"), f"monitor: collapsed sums to {s}")

    # Errors: one line, exit 2, naming the option that records what is missing.
    p = run([MLPD, "export", "--format", "collapsed", "--what", "cpu", mono_calls])
    check(p.returncode == 2 and "'sample'" in p.stderr and len(p.stderr.strip().splitlines()) == 1,
          f"--what cpu on a file without samples: exit {p.returncode}, {p.stderr!r}")
    p = run([MLPD, "export", "--what", "monitor", "-o", os.path.join(WORK, "x.collapsed"), mono_calls])
    check(p.returncode == 2 and "'monitor'" in p.stderr, f"--what monitor without monitor events: {p.stderr!r}")
    p = run([MLPD, "report", "--thread", "no-such-thread", mono_calls])
    check(p.returncode == 2 and "no thread" in p.stderr, f"--thread unknown: exit {p.returncode} {p.stderr!r}")
    p = run([MLPD, "export", "-o", os.path.join(WORK, "x.unknown"), mono_calls])
    check(p.returncode == 2 and "--format" in p.stderr, f"unknown extension: exit {p.returncode} {p.stderr!r}")
    p = run([MLPD, "export", "--format", "nope", mono_calls])
    check(p.returncode == 2, f"unknown format: exit {p.returncode}")
    # The format from OUT's extension; default what for a calls file without samples: calls.
    out = os.path.join(WORK, "calls.folded")
    p = run([MLPD, "export", "-o", out, mono_calls])
    check(p.returncode == 0 and os.path.getsize(out) > 0, f"export -o .folded: exit {p.returncode} {p.stderr!r}")

    # A truncated file: the report of what could be read, exit 1, the problem on stderr.
    with open(mono_calls, "rb") as f:
        data = f.read()
    cut = os.path.join(WORK, "cut.mlpd")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    p = run([MLPD, "report", cut])
    check(p.returncode == 1 and re.search(r": offset \d+ \(", p.stderr) and "== Calls" in p.stdout,
          f"truncated file: exit {p.returncode}, stderr {p.stderr[:200]!r}")
    # Unmatched enters at the end are closed there and counted.
    p = run([MLPD, "report", "--json", cut])
    try:
        rep = json.loads(p.stdout)
        check(rep["calls"]["unclosed"] > 0, f"truncated file: no unclosed calls reported: {rep['calls'].get('unclosed')}")
    except (ValueError, KeyError) as e:
        check(False, f"truncated file: report --json: {e}")

    # Progress: on a terminal only (MLPD_PROGRESS_AFTER_MS=0: even for a short read).
    master, slave = pty.openpty()
    env = dict(os.environ, MLPD_PROGRESS_AFTER_MS="0")
    p = subprocess.run([MLPD, "report", mono_calls], stdout=subprocess.DEVNULL, stderr=slave, env=env, timeout=120)
    os.close(slave)
    tty = b""
    try:
        while True:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            tty += chunk
    except OSError:
        pass
    os.close(master)
    check(p.returncode == 0 and re.search(rb"reading: [\d.]+ MiB \(\d+%\), [\d.]+ M events/s", tty),
          f"no progress on a terminal: {tty[:200]!r}")
    p = run([MLPD, "report", mono_calls], env=env)
    check(p.returncode == 0 and p.stderr == "", f"progress or other output on a pipe: {p.stderr[:200]!r}")

    # diff: Mono's samples against ours (same program).
    a, b = os.path.join(WORK, "mono-sample.mlpd"), os.path.join(WORK, "ours-sample.mlpd")
    p = run([MLPD, "diff", a, b])
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines and all(re.match(r"^.+ \d+ \d+$", l) for l in lines),
          f"diff collapsed: exit {p.returncode}, {lines[:2]}")
    check(any("SampleProgram:Spin" in l for l in lines), "diff: Spin missing")
    # --threads: threads matched by name, the columns still sum to each profile's total.
    p = run([MLPD, "diff", "--threads", a, b])
    rows = [l.rsplit(" ", 2) for l in p.stdout.splitlines()]
    want_a, want_b = report_json(a)["samples"]["total"], report_json(b)["samples"]["total"]
    check(p.returncode == 0 and sum(int(r[1]) for r in rows) == want_a and sum(int(r[2]) for r in rows) == want_b,
          f"diff --threads: columns do not sum to {want_a} / {want_b}")
    check(any(r[0].startswith("Main;") for r in rows), f"diff --threads: no thread named Main: {[r[0][:30] for r in rows[:3]]}")
    html = os.path.join(WORK, "diff.html")
    p = run([MLPD, "diff", "-o", html, a, b])
    check(p.returncode == 0 and "\"diff\":true" in open(html, encoding="utf-8").read(), f"diff html: exit {p.returncode}")
    finish("report_totals")


if __name__ == "__main__":
    main()
