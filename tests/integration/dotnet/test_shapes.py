#!/usr/bin/env python3
"""Program shapes on .NET (issue 35's test programs): dynamic methods and deep recursion, sampled.
- `dynamic 40`: 40 System.Linq.Expressions lambdas compiled one after the other (dynamic methods), each
  run for about 20 million steps and dropped, with collections between them: the runtime unloads the
  dropped ones and gives their code and their FunctionIDs to the next. Every lambda is described in the
  file under its own name; each sample in a lambda names the one running then (the last compiled), not
  one that was unloaded; the file is strict and mprof-report reads it.
- `recurse 100`: samples at the bottom of 100 frames of Down keep the whole chain up to Main and the
  host; `recurse 3000`: every sample in Down reaches Main or is rooted at an explicit marker
  ([truncated]: deeper than the frames kept; [stack cut]: beyond the stack copy).
- `osr 1500`: Hot, entered once, loops 1.5 s: the runtime replaces its tier-0 code mid-run by an OSR
  body running over the tier-0 frame, whose frame record returns into the tier-0 body and links past
  the tier-0 frame's own record: at least 95% of the samples in Hot keep Hot <- Outer <- Run <- Main,
  and none shows Hot twice (before: Outer was lost from every sample in the OSR body); the same for
  the backtraces of the objects Hot allocates (`alloc`).
- `frameless 1500`: Round -> Outer -> Wrap -> Work and Round -> MakeItem, where Outer, Wrap and MakeItem
  are so small that their tier-1 code makes no frame record: the record chain skips their callers.
  At least 95% of the samples in Work keep Main, Run, Round, Outer, Wrap, Work, and of the objects
  MakeItem allocates, Main, Run, Round, MakeItem (before: 55 of 66 samples lost Round and Outer, 19,453
  of 22,040 allocations lost Round)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import DLL, DOTNET, check_file, env_with, mlpd_lines, profiled, require_programs  # noqa: E402

MAIN = "MlpdTests.Programs:Main (string[])"
DOWN = "MlpdTests.Recursion:Down (int,int)"
MARKERS = ("[truncated]", "[stack cut]")


def stacks(path):
    p = t.run([t.MLPD, "export", "--format", "collapsed", "-o", "-", path], timeout=300)
    t.check(p.returncode == 0, f"export collapsed failed: {p.stderr[-300:]}")
    out = []
    for line in p.stdout.splitlines():
        frames, _, n = line.rpartition(" ")
        if frames and n.isdigit():
            out.append((int(n), frames.split(";")))
    return out


def run_checked(label, args, options):
    plain = t.run([DOTNET, DLL] + args, env=env_with())
    p = profiled(args, options, )
    t.check(p.returncode == plain.returncode == 0 and p.stdout == plain.stdout,
            f"{label}: the program changed: {p.returncode} {p.stdout!r} vs {plain.stdout!r}")
    t.check(not mlpd_lines(p.stderr), f"{label}: the agent spoke: {p.stderr[-300:]}")


def dynamic_methods():
    rounds = 40
    run_checked("dynamic", ["dynamic", str(rounds)], "nodefaults,sample,output=dynamic.mlpd")
    check_file("dynamic", "dynamic.mlpd")
    d = t.run([t.MLPD, "dump", "dynamic.mlpd"], timeout=300)
    t.check(d.returncode == 0, f"dynamic: dump failed: {d.stderr[-300:]}")
    jits = []  # (time, number) of each lambda's description
    in_lambda = []  # (time, number named) of each sample whose innermost frame is a lambda
    lam = re.compile(r"\(dynamic\) lambda_method(\d+)")
    for line in d.stdout.splitlines():
        parts = line.split(" ", 4)
        if len(parts) < 4 or not parts[1].startswith("+"):
            continue
        when = float(parts[1])
        if parts[3] == "method_jit":
            m = lam.search(line)
            if m:
                jits.append((when, int(m.group(1))))
        elif parts[3] == "sample_hit" and "ips=[" in line:
            first = line.split("ips=[", 1)[1].split("|", 1)[0]
            m = lam.search(first)
            if m:
                in_lambda.append((when, int(m.group(1))))
    numbers = {n for _, n in jits}
    t.check(len(numbers) == rounds and len(jits) == rounds,
            f"dynamic: {len(jits)} lambda descriptions, {len(numbers)} names, for {rounds} lambdas compiled")
    # The lambda running at time T is the last one compiled before T (one at a time, in order).
    jits.sort()
    wrong = []
    for when, n in in_lambda:
        before = [k for w, k in jits if w <= when]
        if not before or before[-1] != n:
            wrong.append((when, n, before[-1] if before else None))
    t.check(len(in_lambda) >= rounds, f"dynamic: only {len(in_lambda)} samples in the lambdas")
    ok = t.check(not wrong, f"dynamic: {len(wrong)} of {len(in_lambda)} samples name another lambda than the "
                       f"one running (time, named, running): {wrong[:5]}")
    named = {f[-1] for _, f in stacks("dynamic.mlpd") if f and f[-1].startswith("(dynamic) lambda_method")}
    if t.check(len(named) >= rounds * 3 // 4, f"dynamic: samples name only {len(named)} of {rounds} lambdas") and ok:
        print(f"ok  dynamic: {len(jits)} lambdas described, {len(in_lambda)} samples each in the lambda running, "
          f"{len(named)} lambdas named in the profile", flush=True)


def recursion():
    # Spin runs 1.5 s of wall time: on a loaded machine (tests beside it) 30-50 of its samples, not 150.
    run_checked("recurse 100", ["recurse", "100", "1500"], "nodefaults,sample,output=recurse.mlpd")
    check_file("recurse 100", "recurse.mlpd")
    down = [(n, f) for n, f in stacks("recurse.mlpd") if f and f[-1] in (DOWN, "MlpdTests.Busy:Spin (int)") and DOWN in f]
    hits = sum(n for n, _ in down)
    whole = sum(n for n, f in down if MAIN in f and any(x.startswith("coreclr_execute_assembly") for x in f)
                and f.count(DOWN) >= 100)
    t.check(hits >= 20 and whole >= 0.9 * hits, f"recurse 100: {whole} of {hits} samples in Down keep the whole "
                                                 f"chain (101 Down frames, Main, the host): {down[:1]}")
    print(f"ok  recurse 100: {whole} of {hits} samples keep the whole chain", flush=True)

    run_checked("recurse 3000", ["recurse", "3000", "1500"], "nodefaults,sample,output=deep.mlpd")
    check_file("recurse 3000", "deep.mlpd")
    down = [(n, f) for n, f in stacks("deep.mlpd") if DOWN in f]
    hits = sum(n for n, _ in down)
    rootless = [(n, f[:3]) for n, f in down if MAIN not in f and f[0] not in MARKERS]
    marked = sum(n for n, f in down if f[0] in MARKERS)
    t.check(hits >= 20 and not rootless and marked >= 0.9 * hits,
            f"recurse 3000: {hits} samples in Down, {marked} rooted at a marker, without Main or a marker: {rootless[:3]}")
    print(f"ok  recurse 3000: {hits} samples in Down, {marked} rooted at {MARKERS}, none lost its root silently",
          flush=True)


def osr():
    run_checked("osr 1500", ["osr", "1500"], "nodefaults,sample,alloc,output=osr.mlpd")
    check_file("osr 1500", "osr.mlpd")
    hot = [(n, f) for n, f in stacks("osr.mlpd") if f and f[-1] == "MlpdTests.Osr:Hot (int)"]
    hits = sum(n for n, _ in hot)
    whole = sum(n for n, f in hot if f[-4:] == [MAIN, "MlpdTests.Osr:Run (int)", "MlpdTests.Osr:Outer (int)",
                                                 "MlpdTests.Osr:Hot (int)"])
    twice = sum(n for n, f in hot if f.count("MlpdTests.Osr:Hot (int)") > 1)
    t.check(hits >= 15 and whole >= 0.95 * hits and twice == 0,
            f"osr 1500: {whole} of {hits} samples in Hot keep Main, Run, Outer ({twice} show Hot twice): "
            f"{sorted(hot, key=lambda x: -x[0])[:2]}")
    print(f"ok  osr 1500: {whole} of {hits} samples in Hot (OSR body) keep Outer and Main", flush=True)
    # The OsrItems Hot allocates (in its tier-0 body first, then in its OSR body): their backtraces
    # too (before: Main, Run, Hot, Hot once the OSR body ran).
    p = t.run([t.MLPD, "export", "--format", "collapsed", "--what", "alloc", "-o", "-", "osr.mlpd"], timeout=300)
    allocs = []
    for line in p.stdout.splitlines():
        frames, _, n = line.rpartition(" ")
        if frames and n.isdigit() and frames.split(";")[-1] == "MlpdTests.Osr:Hot (int)":
            allocs.append((int(n), frames.split(";")))
    made = sum(n for n, _ in allocs)
    kept = sum(n for n, f in allocs if f[-3:] == ["MlpdTests.Osr:Run (int)", "MlpdTests.Osr:Outer (int)",
                                                  "MlpdTests.Osr:Hot (int)"] and MAIN in f)
    t.check(made >= 100 and kept >= 0.95 * made,
            f"osr 1500: {kept} of {made} allocations in Hot keep Outer and Main: {sorted(allocs, key=lambda x: -x[0])[:2]}")
    print(f"ok  osr 1500: {kept} of {made} allocations in Hot keep Outer and Main", flush=True)


def frameless():
    run_checked("frameless 1500", ["frameless", "1500"], "nodefaults,sample,alloc,output=frameless.mlpd")
    check_file("frameless 1500", "frameless.mlpd")
    c = "MlpdTests.Frameless:"
    chain = [MAIN, c + "Run (int)", c + "Round (long,int)", c + "Outer (long)", c + "Wrap (long)", c + "Work (long)"]
    work = [(n, f) for n, f in stacks("frameless.mlpd") if f and f[-1] == chain[-1]]
    hits = sum(n for n, _ in work)
    whole = sum(n for n, f in work if f[-len(chain):] == chain)
    t.check(hits >= 15 and whole >= 0.95 * hits, f"frameless 1500: {whole} of {hits} samples in Work keep "
                                                  f"Main, Run, Round, Outer, Wrap: {sorted(work, key=lambda x: -x[0])[:2]}")
    print(f"ok  frameless 1500: {whole} of {hits} samples in Work keep the frames without records", flush=True)
    p = t.run([t.MLPD, "export", "--format", "collapsed", "--what", "alloc", "-o", "-", "frameless.mlpd"], timeout=300)
    allocs = []
    for line in p.stdout.splitlines():
        frames, _, n = line.rpartition(" ")
        if frames and n.isdigit() and frames.split(";")[-1] == c + "MakeItem (long)":
            allocs.append((int(n), frames.split(";")))
    made = sum(n for n, _ in allocs)
    want = chain[:3] + [c + "MakeItem (long)"]
    kept = sum(n for n, f in allocs if f[-4:] == want)
    t.check(made >= 1000 and kept >= 0.95 * made,
            f"frameless 1500: {kept} of {made} allocations in MakeItem keep Round and Main: "
            f"{sorted(allocs, key=lambda x: -x[0])[:2]}")
    print(f"ok  frameless 1500: {kept} of {made} allocations in MakeItem keep Round and Main", flush=True)


def main():
    require_programs("dotnet_shapes")
    dynamic_methods()
    recursion()
    osr()
    frameless()
    t.finish("dotnet_shapes")


if __name__ == "__main__":
    main()
