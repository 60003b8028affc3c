#!/usr/bin/env python3
"""Heapshots under the agent: every mode, triggering from managed code, heapshot-on-shutdown.

The program (tests/programs/heapshot_live.cs) holds exactly 100000 LiveNode objects in a static
array, dropped 50000 more before any heapshot can see them alive, and makes garbage between
collections. For each run:
- the program's output and exit status (3) are those of an unprofiled run;
- mprof-report's heapshot report (also with --traces) has the expected number of heapshots, and in
  each exactly 100000 LiveNode objects of 32 bytes (100000 references to them with --traces);
- `mlpd heapshots` lists the same heapshots with the same LiveNode row, sizes and object counts;
- `mlpd verify --strict` passes (every vtable and class a heap object uses is described before it);
- Mono.Profiler.Log (LogCount) reads the file and sees the same heapshots (objects, bytes).
Expected counts, by Mono's rules: `heapshot`: one per major collection; `heapshot=NUMgc`: the majors
whose number (from 0) is a multiple of NUM, ceil(M/2) for 2gc; `heapshot=100000ms`: only the first;
`heapshot=0ms`: every major; `ondemand` (or no heapshot option) with TriggerHeapshot() twice: two;
`heapshot-on-shutdown`: one. Major collections counted by mprof-report's gc report.
Most runs use a 64 MiB nursery so that no collection happens while the program builds its graph
(a heapshot then would rightly count more LiveNode objects); one `2gc` run keeps the default nursery,
so minor collections ask the finalizer for forced major ones (Mono's deferral), and checks the count.
Mono's own log profiler on the same program and the same option gives the same heapshots.
"""
import math
import os
import re
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
LIVE = 100000
CHURN = ("churn", "300000")
BIG_NURSERY = {"MONO_GC_PARAMS": "nursery-size=64m"}

SHOT_RE = re.compile(r"^\tHeap shot (\d+) at [\d.]+ secs: size: (\d+), object count: (\d+), class count: (\d+), "
                     r"roots: (\d+)d?$")
LIVE_ROW_RE = re.compile(r"^\t\s+(\d+)\s+(\d+)\s+(\d+) LiveNode(?: \(bytes: [+-]\d+, count: [+-]\d+\))?$")
REFS_RE = re.compile(r"^\t\t(\d+) references from: (.+)$")
OUR_SHOT_RE = re.compile(r"^heapshot (\d+) at -?[\d.]+ s: (\d+) objects, (\d+) bytes, (\d+) classes, (\d+) roots")
OUR_ROW_RE = re.compile(r"^ +(\d+) +(\d+)  LiveNode$")
GEN1_RE = re.compile(r"^\tGen1 collections: (\d+),")


def mprof_heapshots(path, traces=False):
    """[(objects, bytes, livenode_objects, livenode_bytes, {from_class: refs} )], major collections"""
    args = ["--reports=heapshot,gc"] + (["--traces"] if traces else [])
    p = t.run([t.MPROF_REPORT, *args, path], timeout=300)
    shots, majors, current_row = [], None, False
    for line in p.stdout.splitlines():
        m = SHOT_RE.match(line)
        if m:
            shots.append({"objects": int(m[3]), "bytes": int(m[2]), "live": None, "live_bytes": None, "refs": {}})
            current_row = False
            continue
        m = LIVE_ROW_RE.match(line)
        if m and shots:
            shots[-1]["live_bytes"], shots[-1]["live"] = int(m[1]), int(m[2])
            current_row = True
            continue
        m = REFS_RE.match(line)
        if m and shots and current_row:
            shots[-1]["refs"][m[2]] = int(m[1])
            continue
        if line.startswith("\t ") and not line.startswith("\t\t"):
            current_row = False
        m = GEN1_RE.match(line)
        if m:
            majors = int(m[1])
    return p.returncode, shots, majors, p


def our_heapshots(path):
    p = t.run([t.MLPD, "heapshots", path], timeout=300)
    shots = []
    for line in p.stdout.splitlines():
        m = OUR_SHOT_RE.match(line)
        if m:
            shots.append({"objects": int(m[2]), "bytes": int(m[3]), "live": None})
            continue
        m = OUR_ROW_RE.match(line)
        if m and shots:
            shots[-1]["live"], shots[-1]["live_bytes"] = int(m[2]), int(m[1])
    return p.returncode, shots, p


def own_lines(text):
    """The program's own output (without the runtime's missing-internal-call warning, printed when
    LogProfiler.IsAttached is asked with no profiler attached)."""
    return [l for l in text.splitlines() if re.match(r"^(live|checksum|done)\b", l)]


def run_agent(workdir, name, options, args, extra_env=None):
    out = os.path.join(workdir, name + ".mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    env.update(extra_env or {})
    return out, t.run([t.MONO, t.program("heapshot_live"), *args], timeout=300, env=env)


def keep_for_diagnosis(path):
    """A copy of a file a reader disagreed on, outside the test's temporary folder (seen once, under
    qemu at load 10-14: LogCount's heapshot sizes differed from mprof-report's)."""
    kept = os.path.join(tempfile.gettempdir(), "mlpd-heapshot-kept-" + os.path.basename(path))
    try:
        shutil.copyfile(path, kept)
    except OSError as e:
        return f"(not kept: {e})"
    return kept


def check_file(label, path, expected, plain, check_live=True):
    """Checks one file from every reader; returns mprof-report's heapshots."""
    rc, shots, majors, p = mprof_heapshots(path)
    t.check(rc == 0, f"{label}: mprof-report exit {rc}: {p.stderr[:300]!r}")
    n = expected(majors) if callable(expected) else expected
    t.check(len(shots) == n, f"{label}: mprof-report shows {len(shots)} heapshots, expected {n} (majors: {majors})")
    for i, s in enumerate(shots):
        if check_live:
            t.check(s["live"] == LIVE and s["live_bytes"] == 32 * LIVE,
                    f"{label}: heapshot {i}: {s['live']} LiveNode objects ({s['live_bytes']} bytes), expected {LIVE}")
        else:
            t.check(s["live"] is not None and s["live"] >= LIVE,
                    f"{label}: heapshot {i}: {s['live']} LiveNode objects, expected at least {LIVE}")
    rc, traced, _, p = mprof_heapshots(path, traces=True)
    t.check(rc == 0 and len(traced) == len(shots), f"{label}: mprof-report --traces: exit {rc}, {len(traced)} heapshots")
    for i, s in enumerate(traced):
        if check_live and t.check(s["live"] == LIVE, f"{label} --traces: heapshot {i}: {s['live']} LiveNode objects"):
            # every LiveNode is referenced from the array and from its predecessor
            t.check(s["refs"].get("LiveNode[]") == LIVE and s["refs"].get("LiveNode") == LIVE,
                    f"{label} --traces: heapshot {i}: references to LiveNode {s['refs']}")
    rc, ours, p = our_heapshots(path)
    t.check(rc == 0, f"{label}: mlpd heapshots exit {rc}: {p.stderr[:300]!r}")
    t.check([(s["objects"], s["bytes"], s["live"]) for s in ours] == [(s["objects"], s["bytes"], s["live"]) for s in shots],
            f"{label}: mlpd heapshots {[(s['objects'], s['bytes'], s['live']) for s in ours]} vs mprof-report "
            f"{[(s['objects'], s['bytes'], s['live']) for s in shots]}")
    rc, obj, p = t.verify_json(path, strict=True)
    t.check(rc == 0, f"{label}: mlpd verify --strict exit {rc}: {(p.stdout + p.stderr)[:600]!r}")
    rc, counts, detail, p = t.log_count(path)
    t.check(rc == 0, f"{label}: LogCount exit {rc}: {p.stderr[:300]!r}")
    t.check(counts.get("heap_start", 0) == len(shots) and counts.get("heap_end", 0) == len(shots),
            f"{label}: LogCount heap_start/heap_end {counts.get('heap_start')}/{counts.get('heap_end')}, expected {len(shots)}")
    lc = [(detail.get(f"heapshot.{i}.objects"), detail.get(f"heapshot.{i}.bytes")) for i in range(len(shots))]
    want = [(s["objects"], s["bytes"]) for s in shots]
    if lc != want:
        t.check(False, f"{label}: LogCount heapshots {lc}, mprof-report {want}, file kept as {keep_for_diagnosis(path)}")
    t.check(p.stdout != "" and rc == 0, f"{label}: LogCount printed nothing")
    return shots


def main():
    plain = t.run([t.MONO, t.program("heapshot_live"), "collect", "3"], timeout=300)
    t.check(plain.returncode == 3 and plain.stdout.endswith("done\n"),
            f"unprofiled run: exit {plain.returncode}, output {plain.stdout!r}")
    expect_out = {}
    for mode in (("collect", "2"), ("collect", "3"), ("collect", "5"), ("trigger", "2"), ("idle",), CHURN):
        p = t.run([t.MONO, t.program("heapshot_live"), *mode], timeout=300)
        expect_out[mode] = (p.returncode, own_lines(p.stdout))
        t.check(p.returncode == 3 and len(own_lines(p.stdout)) == 3, f"unprofiled {mode}: exit {p.returncode}")

    cases = [
        # label, options, program args, expected heapshots (int or f(majors)), env, every heapshot exact
        ("major", "heapshot", ("collect", "3"), lambda m: m, BIG_NURSERY, True),
        ("every-2gc", "heapshot=2gc", ("collect", "5"), lambda m: math.ceil(m / 2), BIG_NURSERY, True),
        ("every-2gc-deferred", "heapshot=2gc", ("collect", "5"), lambda m: math.ceil(m / 2), None, False),
        ("every-100000ms", "heapshot=100000ms", ("collect", "3"), 1, BIG_NURSERY, True),
        ("every-0ms", "heapshot=0ms", ("collect", "2"), lambda m: m, BIG_NURSERY, True),
        ("ondemand-trigger", "heapshot=ondemand", ("trigger", "2"), 2, None, True),
        ("trigger-nodefaults", "nodefaults", ("trigger", "2"), 2, None, True),
        ("trigger-gcroot", "nodefaults,gc,gcroot", ("trigger", "2"), 2, None, True),
        ("on-shutdown", "heapshot-on-shutdown", ("idle",), 1, None, True),
        ("ondemand-no-request", "heapshot=ondemand", ("collect", "3"), 0, None, True),
    ]
    with tempfile.TemporaryDirectory(prefix="mlpd-heapshot-") as workdir:
        for label, options, args, expected, env, exact in cases:
            path, p = run_agent(workdir, label, options, args, env)
            want_rc, want_out = expect_out[args]
            t.check(p.returncode == want_rc and own_lines(p.stdout) == want_out and len(p.stdout.splitlines()) == 3,
                    f"{label}: program exit {p.returncode}, output {p.stdout!r} (unprofiled: {want_rc}, {want_out!r})")
            # heapshot=ondemand opens the command port (its heapshots are asked for there), announced
            # in one line; nothing else from the agent.
            said = [l for l in p.stderr.splitlines() if "mlpd:" in l]
            port_line = "ondemand" in options and said and re.fullmatch(r"mlpd: command port 127\.0\.0\.1:\d+", said[0])
            t.check(said == [] or (port_line and len(said) == 1), f"{label}: agent said {p.stderr.strip()[:300]!r}")
            shots = check_file(label, path, expected, plain, check_live=exact)
            print(f"ok  {label}: {len(shots)} heapshot(s), " +
                  ", ".join(f"{s['live']} LiveNode of {s['objects']} objects" for s in shots[:3]), flush=True)

        # The concurrent collector: the major collections the runtime starts itself are concurrent and
        # cannot be walked (dead objects would be listed); each asks the finalizer thread for a forced
        # serial one, which takes the heapshot. Every heapshot still holds exactly the live LiveNodes.
        label = "major-concurrent"
        path, p = run_agent(workdir, label, "heapshot", CHURN, {"MONO_GC_PARAMS": "major=marksweep-conc"})
        t.check(p.returncode == 3 and own_lines(p.stdout) == expect_out[CHURN][1],
                f"{label}: program exit {p.returncode}, output {p.stdout[:300]!r}")
        shots = check_file(label, path, lambda m: len(mprof_heapshots(path)[1]), None)
        dump = t.run([t.MLPD, "dump", path], timeout=300).stdout
        walkers = [l.split('"')[1] for l in dump.splitlines() if l.endswith(" heap_start") and '"' in l]
        t.check(len(shots) >= 2 and "Finalizer" in walkers,
                f"{label}: {len(shots)} heapshots, taken by {walkers} (expected some forced on the finalizer thread)")
        print(f"ok  {label}: {len(shots)} heapshots, taken by {sorted(set(walkers))}", flush=True)

        # Mono's own profiler, same program, same options: the same heapshots of LiveNode.
        for options, args in (("heapshot", ("collect", "3")), ("heapshot-on-shutdown", ("idle",))):
            ours, p = run_agent(workdir, "ours-" + options, options, args, BIG_NURSERY)
            mono_path = os.path.join(workdir, "mono-" + options + ".mlpd")
            env = dict(os.environ)
            env.update(BIG_NURSERY)
            env.pop("LD_PRELOAD", None)
            mp = t.run([t.MONO, f"--profile=log:{options},output={mono_path}", t.program("heapshot_live"), *args],
                       timeout=300, env=env)
            t.check(mp.returncode == 3, f"Mono's profiler, {options}: exit {mp.returncode}")
            _, a, am, _ = mprof_heapshots(ours)
            _, b, bm, _ = mprof_heapshots(mono_path)
            t.check([s["live"] for s in a] == [s["live"] for s in b] and len(a) > 0,
                    f"{options}: LiveNode per heapshot, ours {[s['live'] for s in a]} vs Mono's {[s['live'] for s in b]}")
            t.check(am == bm, f"{options}: major collections, ours {am} vs Mono's {bm}")
            print(f"ok  {options}: same heapshots as Mono's profiler ({len(a)}, LiveNode {[s['live'] for s in a]})",
                  flush=True)
    t.finish("heapshot")


if __name__ == "__main__":
    main()
