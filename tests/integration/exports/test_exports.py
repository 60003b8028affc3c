#!/usr/bin/env python3
"""`mlpd export` to pprof, speedscope and Chrome trace files, each checked by the tools it is for.

Usage: test_exports.py pprof|speedscope|trace   (one part per ctest test, so that they run in parallel)

Profiles come from Mono's own log profiler and from our agent, for the programs of tests/programs/:
sample.exe (`sample`: one hot spot, SampleProgram:Spin), calls.exe (`calls`), alloc.exe (`alloc`),
threads.exe (`alloc,calls`: three named threads, collections).

- pprof: `go tool pprof -top` (the real tool, Debian golang-go) reads every export; the hottest
  function (first -top row) and the total equal `mlpd report --json`'s (samples, calls, objects,
  bytes); SampleProgram:Spin is first for sample.exe; the thread label is there (-tags).
- speedscope: every export validates against the JSON schema shipped in speedscope's npm package
  (python3-jsonschema; the first 1000 events of each evented profile); evented profiles (calls) are balanced (each close matches the innermost open
  frame, times never go back) and open as many frames as the report counts calls; and a few exports
  open in speedscope's own offline viewer in headless Chromium with no console error, the hot method's
  name on the page (a screenshot is kept next to the test's build directory).
- trace: the file parses as JSON; each thread's spans nest properly (checked after sorting by start,
  as the viewers do); the spans count the calls; GC pauses are on the GC track, one per collection the
  model saw; thread names are there (alpha, beta, gamma for threads.exe); samples are instant events.
- Errors: --what that the file lacks is a one-line error naming the option.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

MLPD = t.MLPD
AGENT = os.environ.get("MLPD_AGENT", "")
SOURCE = os.environ.get("MLPD_SOURCE", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
NODE_DIR = os.path.join(SOURCE, "tests", "tools", "node", "node_modules")
SPEEDSCOPE_DIR = os.path.join(NODE_DIR, "speedscope", "dist", "release")
HERE = os.path.dirname(os.path.abspath(__file__))
GO = shutil.which("go")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")
SCHEMA_EVENTS = 1000


def agent_profile(prog, options, out):
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    return t.run([t.MONO, t.program(prog)], env=env, timeout=180)


def make_profiles(work, wanted):
    """{(who, prog): path} for who in (mono, ours); profiles that fail to record are checked as failures."""
    files = {}
    for prog, options in wanted:
        for who in ("mono", "ours"):
            out = os.path.join(work, f"{prog}-{who}.mlpd")
            start = time.monotonic()
            p = (t.mono_log_profile(prog, options, out, timeout=180) if who == "mono"
                 else agent_profile(prog, options, out))
            print(f"  {time.monotonic() - start:5.1f} s  {who} profile of {prog} ({options})", flush=True)
            if t.check(p.returncode == 0 and os.path.exists(out),
                       f"{who} profile of {prog} ({options}): rc {p.returncode} {p.stderr[-300:]}"):
                files[(who, prog)] = out
    return files


def report(path):
    p = t.run([MLPD, "report", "--json", "--top", "1000", path], timeout=300)
    t.check(p.returncode in (0, 1), f"report {path}: rc {p.returncode} {p.stderr[-300:]}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        t.check(False, f"report --json {path}: not JSON")
        return {}


def export(path, fmt, what, out, *extra):
    cmd = [MLPD, "export", "--format", fmt, "--what", what, "-o", out, *extra, path]
    start = time.monotonic()
    p = t.run(cmd, timeout=300)
    print(f"  {time.monotonic() - start:5.1f} s  mlpd export --format {fmt} --what {what} {' '.join(extra)} "
          f"{os.path.basename(path)}", flush=True)
    ok = t.check(p.returncode == 0 and os.path.exists(out) and os.path.getsize(out) > 0 and not p.stderr.strip(),
                 f"{' '.join(cmd)}: rc {p.returncode}, stderr {p.stderr[-400:]!r}")
    return ok


def top_name(section, key):
    """Name of the first entry of the report's ranking `key` in `section` (a list of {name,...})."""
    rows = (section or {}).get(key) or []
    return rows[0]["name"] if rows else None


# ----------------------------------------------------------------------------------------------- pprof
PPROF_TOTAL_RE = re.compile(r"^Showing nodes accounting for .*? of (\S+) total")


def pprof_top(path, work, *args):
    """(total string, [(flat, name)]) of `go tool pprof -top`."""
    env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"), PPROF_TMPDIR=work,
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    p = t.run([GO, "tool", "pprof", "-top", "-symbolize=none", "-nodecount=1000000", *args, path], env=env,
              timeout=180)
    if not t.check(p.returncode == 0, f"go tool pprof -top {' '.join(args)} {path}: rc {p.returncode} {p.stderr[-500:]}"):
        return None, []
    total, rows, in_rows = None, [], False
    for line in p.stdout.splitlines():
        m = PPROF_TOTAL_RE.match(line)
        if m:
            total = m.group(1)
            continue
        if line.strip().startswith("flat"):
            in_rows = True
            continue
        if in_rows and line.strip():
            parts = line.split(None, 5)
            if len(parts) == 6:
                rows.append((parts[0], parts[5]))
    return total, rows


def check_pprof(files, work):
    if not t.check(GO is not None, "go (golang-go) not found: scripts/install-deps.sh installs it"):
        return
    cases = [("sample", "cpu", "samples", "total", [], "samples"),
             ("calls", "calls", "calls", "total", ["-sample_index=calls"], "calls"),
             ("alloc", "alloc", "alloc", "objects", [], "types"),
             ("alloc", "alloc-bytes", "alloc", "bytes", ["-unit=B"], "types")]
    for (who, prog), path in sorted(files.items()):
        for cprog, what, section, total_key, args, _ in cases:
            if cprog != prog:
                continue
            label = f"pprof {what} {who}/{prog}"
            out = os.path.join(work, f"{prog}-{who}-{what}.pb.gz")
            if not export(path, "pprof", what, out):
                continue
            with gzip.open(out) as f:
                t.check(len(f.read()) > 0, f"{label}: gzip stream empty")
            rep = report(path)
            expected_total = (rep.get(section) or {}).get(total_key)
            total, rows = pprof_top(out, work, *args)
            total_num = None
            if total is not None:
                m = re.match(r"^(\d+)B?$", total)
                total_num = int(m.group(1)) if m else None
            t.check(total_num is not None and total_num == expected_total,
                    f"{label}: pprof total {total!r}, report {section}.{total_key} {expected_total}")
            if what == "cpu":
                # The hottest function by self samples: first in pprof, first in the report, and the one
                # hot spot of the program.
                t.check(rows and rows[0][1] == top_name(rep.get("samples"), "methods"),
                        f"{label}: pprof's first row {rows[:1]} != report's {top_name(rep.get('samples'), 'methods')}")
                # Mono's own sampler also hits the sleeping threads (a wait function can come first
                # there); ours samples running threads: the program's one hot spot is first.
                if who == "ours":
                    t.check(rows and rows[0][1].startswith("SampleProgram:Spin"),
                            f"{label}: hottest function {rows[:1]}, expected SampleProgram:Spin")
            if what == "calls":
                names = [r[1] for r in rows]
                t.check(any(n.startswith("CallsProgram:Fib") for n in names[:3]),
                        f"{label}: CallsProgram:Fib not among the first calls rows: {rows[:3]}")
    # The thread label is on the samples.
    path = files.get(("ours", "sample"))
    if path:
        out = os.path.join(work, "sample-tags.pb.gz")
        if export(path, "pprof", "cpu", out):
            env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"), PPROF_TMPDIR=work)
            p = t.run([GO, "tool", "pprof", "-tags", "-symbolize=none", out], env=env, timeout=180)
            t.check(p.returncode == 0 and "thread:" in p.stdout, f"pprof -tags: no thread label: {p.stdout[:300]}")


# ------------------------------------------------------------------------------------------ speedscope
def speedscope_schema_validator():
    try:
        import jsonschema
    except ImportError:
        t.check(False, "python3-jsonschema not installed (scripts/install-deps.sh installs it)")
        return None
    path = os.path.join(SPEEDSCOPE_DIR, "file-format-schema.json")
    if not t.check(os.path.exists(path), f"{path} missing: scripts/install-deps.sh installs speedscope from npm"):
        return None
    with open(path) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def check_evented(doc, label, expected_calls):
    nframes = len(doc["shared"]["frames"])
    opens = 0
    for prof in doc["profiles"]:
        t.check(prof["type"] == "evented", f"{label}: profile {prof.get('name')} is {prof['type']}, not evented")
        stack, last = [], None
        for e in prof.get("events", []):
            if not (0 <= e["frame"] < nframes):
                t.check(False, f"{label}: {prof['name']}: frame {e['frame']} out of range")
                break
            if last is not None and e["at"] < last:
                t.check(False, f"{label}: {prof['name']}: time goes back ({e['at']} < {last})")
                break
            last = e["at"]
            if not (prof["startValue"] <= e["at"] <= prof["endValue"]):
                t.check(False, f"{label}: {prof['name']}: event at {e['at']} outside [{prof['startValue']}, {prof['endValue']}]")
                break
            if e["type"] == "O":
                stack.append(e["frame"])
                opens += 1
            elif not stack or stack[-1] != e["frame"]:
                t.check(False, f"{label}: {prof['name']}: close of frame {e['frame']} with {stack[-1:]} innermost")
                break
            else:
                stack.pop()
        t.check(not stack, f"{label}: {prof['name']}: {len(stack)} frames left open")
    t.check(opens == expected_calls, f"{label}: {opens} frames opened, report counts {expected_calls} calls")


def view_in_speedscope(jobs):
    """Opens each (path, expected text, screenshot) in speedscope's offline viewer in headless Chromium
    (one browser); checks each loaded with no console or page error and shows the expected text."""
    if not jobs:
        return
    cmd = [NODE, os.path.join(HERE, "speedscope_view.mjs"), SPEEDSCOPE_DIR] + [a for j in jobs for a in j]
    env = dict(os.environ, PLAYWRIGHT_CORE=os.path.join(NODE_DIR, "playwright-core"), CHROMIUM=CHROMIUM)
    for attempt in range(2):  # the browser's start-up can time out on a loaded machine: one retry
        start = time.monotonic()
        try:
            p = t.run(cmd, env=env, timeout=300)
        except subprocess.TimeoutExpired:
            p = None
        print(f"  {time.monotonic() - start:5.1f} s  speedscope viewer on {len(jobs)} files", flush=True)
        if p is not None and (p.returncode == 0 or '"driver:' not in p.stdout):
            break
    if not t.check(p is not None, "speedscope viewer timed out"):
        return
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    t.check(len(results) == len(jobs), f"speedscope viewer: {len(results)} results for {len(jobs)} files: "
                                       f"{p.stdout[-600:]} {p.stderr[-400:]}")
    for r in results:
        t.check(r.get("loaded") and r.get("found") and not r.get("errors"),
                f"speedscope viewer on {os.path.basename(r.get('profile', '?'))}: {json.dumps(r)[:800]}")
        # Our collapsed (folded) stacks must be taken for what they are, not for another text format.
        if r.get("profile", "").endswith(".collapsed"):
            t.check(r.get("importer") == "Importing as collapsed stack format",
                    f"speedscope read {os.path.basename(r['profile'])} as {r.get('importer')!r}")


def check_speedscope(files, work):
    validator = speedscope_schema_validator()
    viewer_ok = t.check(NODE is not None and os.path.isdir(os.path.join(NODE_DIR, "playwright-core")),
                        "node or playwright-core missing: scripts/install-deps.sh installs them")
    shots = os.environ.get("MLPD_ARTEFACTS", os.getcwd())
    viewed = {("ours", "sample", "cpu"): "SampleProgram:Spin", ("mono", "calls", "calls"): "CallsProgram:Fib",
              ("ours", "threads", "calls"): "ThreadsProgram"}
    cases = [("sample", "cpu"), ("calls", "calls"), ("alloc", "alloc"), ("alloc", "alloc-bytes"),
             ("threads", "calls"), ("threads", "alloc")]
    jobs = []
    for (who, prog), path in sorted(files.items()):
        rep = None
        for cprog, what in cases:
            if cprog != prog:
                continue
            for threads in ([], ["--threads"]) if what != "calls" else ([],):
                label = f"speedscope {what} {who}/{prog}{' --threads' if threads else ''}"
                out = os.path.join(work, f"{prog}-{who}-{what}{'-t' if threads else ''}.speedscope.json")
                if not export(path, "speedscope", what, out, *threads):
                    continue
                with open(out, "rb") as f:
                    try:
                        doc = json.loads(f.read())
                    except ValueError as e:
                        t.check(False, f"{label}: not JSON: {e}")
                        continue
                if validator is not None:
                    # jsonschema takes ~0.2 ms per evented event here: the schema sees the first
                    # SCHEMA_EVENTS events of each profile, check_evented all of them.
                    shown = dict(doc, profiles=[dict(p, events=p["events"][:SCHEMA_EVENTS]) if "events" in p else p
                                                for p in doc["profiles"]])
                    errors = sorted(validator.iter_errors(shown), key=lambda e: list(e.path))[:3]
                    t.check(not errors, f"{label}: schema: {[e.message[:200] + ' at ' + str(list(e.path)) for e in errors]}")
                rep = rep or report(path)
                if what == "calls":
                    check_evented(doc, label, (rep.get("calls") or {}).get("total"))
                    if prog == "threads":
                        names = " ".join(p["name"] for p in doc["profiles"])
                        t.check(all(n in names for n in ("alpha", "beta", "gamma")),
                                f"{label}: thread names missing from the profiles: {names}")
                else:
                    total = sum(sum(p["weights"]) for p in doc["profiles"])
                    key = {"cpu": ("samples", "total"), "alloc": ("alloc", "objects"),
                           "alloc-bytes": ("alloc", "bytes")}[what]
                    t.check(total == (rep.get(key[0]) or {}).get(key[1]),
                            f"{label}: weights sum to {total}, report {key[0]}.{key[1]} {(rep.get(key[0]) or {}).get(key[1])}")
                    if threads:
                        t.check(len(doc["profiles"]) >= 1 and all(p["name"] != "all threads" for p in doc["profiles"]),
                                f"{label}: not one profile per thread")
                expect = viewed.get((who, prog, what))
                if expect and not threads and viewer_ok:
                    jobs.append((out, expect, os.path.join(shots, f"speedscope-{prog}-{who}-{what}.png")))
                    # The collapsed export of the same profile, read by speedscope's importer of
                    # FlameGraph's folded-stack format (the format flamegraph.pl and inferno read):
                    # it must be recognised as such and show the same hot frame.
                    folded = os.path.join(work, f"{prog}-{who}-{what}.collapsed")
                    if export(path, "collapsed", what, folded):
                        jobs.append((folded, expect, os.path.join(shots, f"collapsed-{prog}-{who}-{what}.png")))
    view_in_speedscope(jobs)


# ----------------------------------------------------------------------------------------------- trace
def check_trace(files, work):
    for (who, prog), path in sorted(files.items()):
        label = f"trace {who}/{prog}"
        out = os.path.join(work, f"{prog}-{who}.trace.json")
        if not export(path, "trace", "calls" if prog != "sample" else "cpu", out):
            continue
        try:
            with open(out, "rb") as f:
                doc = json.loads(f.read())
        except ValueError as e:
            t.check(False, f"{label}: not JSON: {e}")
            continue
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        rep = report(path)
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        spans = {}
        for i, e in enumerate(events):
            t.check("ph" in e and "pid" in e, f"{label}: event without ph/pid: {e}")
            if e.get("ph") == "X":
                if not (isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
                    t.check(False, f"{label}: bad X event {e}")
                    continue
                spans.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"], i, e))
        # Nesting per thread: sorted by start, longer first (and, for equal ones, the later-written one
        # first: a span is written when it closes, so an enclosing one comes after what it holds).
        bad = 0
        for key, lst in spans.items():
            lst.sort(key=lambda s: (s[0], -s[1], -s[2]))
            stack = []
            for ts, dur, _, e in lst:
                end = ts + dur
                while stack and (ts > stack[-1] + 1e-6 or (ts >= stack[-1] - 1e-6 and dur > 1e-6)):
                    stack.pop()  # the span starts after the innermost open one ended: a sibling
                if stack and end > stack[-1] + 1e-6:
                    bad += 1
                    if bad <= 3:
                        t.check(False, f"{label}: span {e['name']} [{ts}, {end}] crosses its parent's end "
                                       f"{stack[-1]} on {names.get(key, key)}")
                    continue
                stack.append(end)
        gc_tracks = [k for k, n in names.items() if n == "GC"]
        gc_spans = [s for k in gc_tracks for s in spans.get(k, [])]
        call_spans = sum(len(v) for k, v in spans.items() if names.get(k) not in ("GC", "Heapshots"))
        if prog != "sample":
            t.check(call_spans == (rep.get("calls") or {}).get("total"),
                    f"{label}: {call_spans} call spans, report counts {(rep.get('calls') or {}).get('total')} calls")
        gc = rep.get("gc") or {}
        pauses = gc.get("pauses") if isinstance(gc.get("pauses"), int) else (gc.get("pause") or {}).get("count")
        if pauses is None and isinstance(gc.get("pauses"), dict):
            pauses = gc["pauses"].get("count")
        t.check(len(gc_tracks) == 1, f"{label}: {len(gc_tracks)} GC tracks")
        if prog == "threads":
            t.check(len(gc_spans) > 0, f"{label}: no GC pause (threads.exe collects)")
            t.check(all(any(v.startswith(n + " ") for v in names.values()) for n in ("alpha", "beta", "gamma")),
                    f"{label}: thread names missing: {sorted(set(names.values()))}")
        if pauses is not None:
            t.check(len(gc_spans) == pauses, f"{label}: {len(gc_spans)} GC spans, report counts {pauses} pauses")
        if prog == "sample":
            instants = [e for e in events if e.get("ph") == "i" and e.get("cat") == "sample"]
            t.check(len(instants) == (rep.get("samples") or {}).get("total"),
                    f"{label}: {len(instants)} sample instants, report counts {(rep.get('samples') or {}).get('total')}")
            t.check(any(e["name"].startswith("SampleProgram:Spin") for e in instants), f"{label}: no Spin sample")


def check_errors(files, work):
    path = files.get(("mono", "sample"))
    if not path:
        return
    out = os.path.join(work, "nothing.pb.gz")
    p = t.run([MLPD, "export", "--format", "pprof", "--what", "calls", "-o", out, path])
    t.check(p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "calls" in p.stderr,
            f"--what calls on a file without calls: rc {p.returncode}, stderr {p.stderr!r}")


def main():
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    wanted = {"pprof": [("sample", "sample"), ("calls", "calls"), ("alloc", "alloc")],
              "speedscope": [("sample", "sample"), ("calls", "calls"), ("alloc", "alloc"), ("threads", "alloc,calls")],
              "trace": [("sample", "sample"), ("calls", "calls"), ("threads", "alloc,calls")]}
    work = tempfile.mkdtemp(prefix=f"mlpd-exports-{part}-")
    try:
        parts = [part] if part != "all" else list(wanted)
        progs = []
        for p in parts:
            for w in wanted[p]:
                if w not in progs:
                    progs.append(w)
        files = make_profiles(work, progs)
        if "pprof" in parts:
            check_pprof(files, work)
            check_errors(files, work)
        if "speedscope" in parts:
            check_speedscope(files, work)
        if "trace" in parts:
            check_trace(files, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t.finish(f"exports_{part}")


if __name__ == "__main__":
    main()
