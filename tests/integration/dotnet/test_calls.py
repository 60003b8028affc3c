#!/usr/bin/env python3
"""`calls` on .NET (issue 36; docs/dotnet.md, "Exact calls"): the enter/leave hooks against a program
that counts its own calls (`DotnetPrograms calls N DEPTH`).
- Every method's enter count equals the program's own count: small methods the JIT would inline, a
  recursion DEPTH deep, exceptions thrown through DEPTH frames, IL tail calls (TailRec/TailPong tail
  calling each other, TailLeaf tail calling Leaf), async methods resuming on the thread pool, a worker
  thread; and System.Console:WriteLine (string), ReadyToRun code in the framework, once per line the
  program printed (precompiled code has no hooks: the agent has it compiled again).
- Per thread, every leave and exceptional leave closes the innermost open enter of the same method;
  frames unwound by an exception are closed when they are unwound (the main thread never holds more
  than the deepest real chain), each unwound Deep frame with an exceptional leave.
- calldepth=50: nothing deeper than 50 is recorded, the stream still balanced; calls-min=2000 (2 ms)
  elides short calls (the file still balanced and strict).
- callspec (Mono's syntax, evaluated on our names): `program` with one method excluded and one
  framework method added: exactly those counts, nothing else; a malformed one: one line, the program
  runs unprofiled.
- The output and exit code are the program's own; every file passes mlpd verify --strict and Mono's
  mprof-report reads it without "unmatched leave"."""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import DLL, DOTNET, env_with, profiled, require_programs  # noqa: E402

N, DEPTH = 1000, 200
ARGS = ["calls", str(N), str(DEPTH)]
DEEP = "MlpdTests.CallCounts:Deep (int)"
WRITELINE = "System.Console:WriteLine (string)"


def events(path):
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(p.returncode == 0, f"dump --json {path} failed: {p.stderr[-300:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def calls_of(evs):
    """(enter counts by name, exceptional leaves by name, unmatched leaves, deepest open chain per thread)"""
    enters, exc = collections.Counter(), collections.Counter()
    stacks, deepest, unmatched = collections.defaultdict(list), collections.Counter(), []
    for e in evs:
        k = e.get("kind")
        if k == "method_enter":
            enters[e["method_name"]] += 1
            st = stacks[e["thread"]]
            st.append(e["method"])
            deepest[e["thread"]] = max(deepest[e["thread"]], len(st))
        elif k in ("method_leave", "method_exc_leave"):
            st = stacks[e["thread"]]
            if not st or st[-1] != e["method"]:
                unmatched.append(f"{k} {e.get('method_name')} on {e['thread']} (open: {len(st)})")
            else:
                st.pop()
            if k == "method_exc_leave":
                exc[e["method_name"]] += 1
    return enters, exc, unmatched, deepest


def check_readers(label, path):
    rc, v, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and v and v["ok"], f"{label}: {path} does not verify --strict: {v and v.get('errors', [])[:3]}")
    p = t.run([t.MPROF_REPORT, "--traces", path], timeout=300)
    t.check(p.returncode == 0, f"{label}: mprof-report failed: {p.stderr[-300:]}")
    t.check("unmatched leave" not in p.stdout + p.stderr, f"{label}: mprof-report says unmatched leave")
    t.check("Method call summary" in p.stdout, f"{label}: mprof-report shows no call summary")


def run(label, options):
    plain = t.run([DOTNET, DLL] + ARGS, env=env_with())
    path = os.path.abspath(f"calls-{label}.mlpd")
    if os.path.exists(path):
        os.unlink(path)
    p = profiled(ARGS, f"{options},output={path}")
    t.check(p.returncode == plain.returncode == 0 and p.stdout == plain.stdout,
            f"{label}: the program changed: rc {p.returncode} vs {plain.returncode}, {p.stdout!r} vs {plain.stdout!r}")
    t.check(os.path.exists(path), f"{label}: no file ({p.stderr[-300:]})")
    return plain.stdout, path


def main():
    require_programs("dotnet_calls")

    # Exact counts, every call recorded (calldepth above the program's deepest chain).
    out, path = run("exact", "calls,calldepth=100000")
    enters, exc, unmatched, deepest = calls_of(events(path))
    expected = {}
    for line in out.splitlines():
        if line.startswith("calls "):
            name, _, n = line[len("calls "):].rpartition(" ")
            expected[name] = int(n)
    expected[WRITELINE] = len(out.splitlines())  # each line one call, ReadyToRun code in System.Console
    t.check(len(expected) == 12, f"exact: the program's counts are missing: {expected}")
    wrong = {m: (n, enters[m]) for m, n in expected.items() if enters[m] != n}
    t.check(not wrong, f"exact: enter counts differ from the program's (expected, seen): {wrong}")
    t.check(not unmatched, f"exact: {len(unmatched)} leaves without their enter: {unmatched[:5]}")
    t.check(exc[DEEP] == 10 * (DEPTH + 1), f"exact: {exc[DEEP]} exceptional leaves of Deep, expected {10 * (DEPTH + 1)}")
    main_thread = max(deepest, key=lambda th: deepest[th])
    t.check(DEPTH < deepest[main_thread] < DEPTH + 40,
            f"exact: the deepest chain is {deepest[main_thread]} frames: unwound frames were not closed "
            f"(the program's deepest is about {DEPTH + 10})")
    t.check(len(deepest) >= 2, f"exact: calls on only {len(deepest)} thread(s): the worker's are missing")
    check_readers("exact", path)
    all_calls = sum(enters.values())
    print(f"ok  exact: {len(expected)} methods' enter counts equal the program's ({sum(expected.values())} calls), "
          f"{sum(enters.values())} enters in all, every leave matched on {len(deepest)} threads, "
          f"{exc[DEEP]} exceptional leaves of Deep, deepest chain {deepest[main_thread]}", flush=True)

    # calldepth: nothing recorded deeper than 50, still balanced.
    _, path = run("depth", "calls,calldepth=50")
    enters, exc, unmatched, deepest = calls_of(events(path))
    t.check(max(deepest.values()) == 50, f"depth: deepest recorded chain {max(deepest.values())}, expected 50")
    t.check(not unmatched, f"depth: {len(unmatched)} leaves without their enter: {unmatched[:5]}")
    t.check(0 < enters["MlpdTests.CallCounts:Rec (int)"] < 10 * (DEPTH + 1),
            f"depth: {enters['MlpdTests.CallCounts:Rec (int)']} enters of Rec (only those within 50 frames)")
    check_readers("depth", path)
    print(f"ok  calldepth=50: deepest recorded chain {max(deepest.values())}, balanced", flush=True)

    # calls-min: short calls elided, the rest balanced and strict.
    _, path = run("min", "calls,calldepth=100000,calls-min=2000")
    enters, exc, unmatched, deepest = calls_of(events(path))
    t.check(not unmatched, f"min: {len(unmatched)} leaves without their enter: {unmatched[:5]}")
    t.check(0 < sum(enters.values()) < all_calls // 2,
            f"min: {sum(enters.values())} enters kept of {all_calls} with calls-min=2ms")
    t.check(enters["MlpdTests.CallCounts:Run (int,int)"] == 1, "min: Run (longer than 2 ms) was elided")
    check_readers("min", path)
    print(f"ok  calls-min=2000: {sum(enters.values())} of about {all_calls} calls kept, balanced", flush=True)

    # callspec (Mono's syntax, evaluated on our names): the program's own methods but Small, and one
    # framework method; a later item overrides an earlier one, as in Mono.
    spec = 'callspec="program,-M:MlpdTests.CallCounts:Small,M:Console:WriteLine(string)"'
    _, path = run("spec", f"calls,calldepth=100000,{spec}")
    enters, exc, unmatched, deepest = calls_of(events(path))
    want = dict(expected)
    want["MlpdTests.CallCounts:Small (int)"] = 0
    for m in ("MlpdTail.Tails:TailRec (int)", "MlpdTail.Tails:TailPong (int)", "MlpdTail.Tails:TailLeaf (int)"):
        want[m] = 0  # the Reflection.Emit assembly is not the program's
    wrong = {m: (n, enters[m]) for m, n in want.items() if enters[m] != n}
    t.check(not wrong, f"spec: enter counts differ (expected, seen): {wrong}")
    others = {m for m in enters if not m.startswith("MlpdTests.") and m != WRITELINE}
    t.check(not others, f"spec: methods outside the callspec recorded: {sorted(others)[:5]}")
    t.check(not unmatched, f"spec: {len(unmatched)} leaves without their enter: {unmatched[:5]}")
    check_readers("spec", path)
    print(f"ok  {spec}: {sum(enters.values())} calls of {len(enters)} methods, Small left out, WriteLine kept",
          flush=True)
    p = profiled(["hello"], "calls,callspec=M:nomethod")
    lines = [l for l in p.stderr.splitlines() if l.startswith("mlpd:")]
    t.check(p.returncode == 7 and len(lines) == 1 and "callspec" in lines[0],
            f"bad callspec: expected one line naming it and the program's exit code 7: {p.returncode} {lines}")

    # Dynamic methods get no hooks from the runtime: `verbose` says how many ran without events.
    p = profiled(["dynamic", "3"], "calls,verbose,output=" + os.path.abspath("calls-dynamic.mlpd"))
    notice = [l for l in p.stderr.splitlines() if l.startswith("mlpd: calls: ")]
    t.check(p.returncode == 0 and notice and notice[0].startswith("mlpd: calls: 3 dynamic methods"),
            f"dynamic: expected the notice of 3 dynamic methods without events: rc {p.returncode} {notice}")
    rc, v, _ = t.verify_json(os.path.abspath("calls-dynamic.mlpd"), strict=True)
    t.check(rc == 0 and v and v["ok"], "dynamic: the file does not verify --strict")

    # Without calls: no enter/leave at all.
    _, path = run("off", "nodefaults,exception")
    enters, _, _, _ = calls_of(events(path))
    t.check(sum(enters.values()) == 0, f"off: {sum(enters.values())} enters without calls")
    t.finish("dotnet_calls")


if __name__ == "__main__":
    main()
