#!/usr/bin/env python3
"""`calls` at the calldepth limit (issue 22, item 4). tests/programs/calldepth.cs recurses past the
limit, opens nested message loops (the same method as the outer loop) beyond it, and throws
exceptions that unwind across it. A run with calldepth=N must record exactly the calls of a run with
no limit that are less than N deep, in the same order: each leave with its own enter (before, a
nested loop's leave beyond the limit closed the outer loop's recorded frame, as KeePass's modal
dialogs did). Checked on the main thread's events of `mlpd dump --json` against a run with
calldepth=1000000, and in every thread of every file: each leave leaves the innermost open call
(the file is balanced), no recorded call is N or more deep, and the reader's report and mprof-report
find no unmatched leave."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
CALL_KINDS = ("method_enter", "method_leave", "method_exc_leave")


def profile(work, name, options):
    out = os.path.join(work, f"{name}.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    p = t.run([t.MONO, t.program("calldepth")], env=env, timeout=300)
    t.check(p.returncode == 0 and "calldepth done" in p.stdout,
            f"calldepth ({options}): exit {p.returncode}: {p.stdout[-200:]} {p.stderr[-300:]}")
    return out


def calls_by_thread(path):
    """{thread: [(kind, method name)]} of the call events, and the main thread's id."""
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(p.returncode == 0, f"mlpd dump {path}: exit {p.returncode}: {p.stderr[-300:]}")
    threads, main = {}, None
    for line in p.stdout.splitlines():
        if '"method_' not in line:
            continue
        e = json.loads(line)
        if e.get("kind") not in CALL_KINDS:
            continue
        name = e.get("method_name", e.get("method"))
        threads.setdefault(e["thread"], []).append((e["kind"], name))
        if main is None and e.get("thread_name") == "Main":
            main = e["thread"]
    return threads, main


def balanced(what, seq, limit):
    """Every leave leaves the innermost open call; no call is recorded `limit` or more deep."""
    stack = []
    for i, (kind, name) in enumerate(seq):
        if kind == "method_enter":
            if not t.check(len(stack) < limit, f"{what}: event {i}: {name} entered {len(stack)} deep (calldepth={limit})"):
                return False
            stack.append(name)
        elif not stack:
            return t.check(False, f"{what}: event {i}: leave of {name} with no enter")
        elif not t.check(stack[-1] == name, f"{what}: event {i}: leave of {name} while {stack[-1]} is the innermost call "
                                            f"({len(stack)} deep)"):
            return False
        else:
            stack.pop()
    return True


def truncated(seq, limit):
    """The calls of `seq` (a run with no limit) less than `limit` deep."""
    out, depth = [], 0
    for kind, name in seq:
        if kind == "method_enter":
            if depth < limit:
                out.append((kind, name))
            depth += 1
        else:
            depth -= 1
            if depth < limit:
                out.append((kind, name))
    return out


def main():
    with tempfile.TemporaryDirectory() as work:
        full_path = profile(work, "full", "calls,calldepth=1000000")
        full, full_main = calls_by_thread(full_path)
        t.check(full_main is not None, "no CallDepth:Main in the unlimited run")
        ref = full.get(full_main, [])
        balanced("calldepth=1000000 main thread", ref, 1000000)
        deepest = depth = 0
        for kind, _ in ref:
            depth += 1 if kind == "method_enter" else -1
            deepest = max(deepest, depth)
        t.check(deepest > 3000, f"the unlimited run is only {deepest} calls deep")
        for limit in (100, 37, 1):
            options = "calls" if limit == 100 else f"calls,calldepth={limit}"  # 100: the default
            path = profile(work, f"depth{limit}", options)
            threads, main = calls_by_thread(path)
            for tid, seq in threads.items():
                balanced(f"calldepth={limit} thread {tid}", seq, limit)
            got = threads.get(main, [])
            want = truncated(ref, limit)
            if got != want:
                at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                t.check(False, f"calldepth={limit}: {len(got)} call events on the main thread, {len(want)} expected "
                               f"(the unlimited run's calls less than {limit} deep); first difference at event {at}: "
                               f"{got[at] if at < len(got) else None} instead of {want[at] if at < len(want) else None}")
            else:
                print(f"ok  calldepth={limit}: {len(got)} call events on the main thread, as the unlimited run's "
                      f"{len(ref)} less than {limit} deep", flush=True)
            rep = t.run([t.MLPD, "report", "--json", path], timeout=300)
            t.check(rep.returncode == 0, f"calldepth={limit}: mlpd report exit {rep.returncode}: {rep.stderr[-300:]}")
            if rep.returncode == 0:
                calls = json.loads(rep.stdout).get("calls", {})
                t.check(calls.get("unmatched_leaves") == 0, f"calldepth={limit}: report: {calls.get('unmatched_leaves')} unmatched leaves")
            m = t.run([t.MPROF_REPORT, path], timeout=300)
            t.check(m.returncode == 0 and "unmatched" not in (m.stdout + m.stderr).lower(),
                    f"calldepth={limit}: mprof-report exit {m.returncode}: {m.stderr[-300:]}")
    t.finish("agent_calldepth")


if __name__ == "__main__":
    main()
