#!/usr/bin/env python3
"""mlpd's events from real .NET programs (docs/dotnet.md, the event-kinds table): every file passes
`mlpd verify --strict` and Mono's `mprof-report` reads it; `mlpd report` names the program's own
methods in Mono's style; exact counts where the program knows them (exceptions thrown and caught,
collections against GC.CollectionCount, threads and their names); options .NET cannot honour are
refused with one line; the program's output and exit code never change."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, APPHOST, CLSID, DLL, DOTNET, OUR_VARS, PROGRAMS, env_with, check_file, mlpd_lines, profiled, require_programs  # noqa: E402,F401


def dump_events(path):
    p = t.run([t.MLPD, "dump", "--json", path])
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def main():
    require_programs("dotnet_events")

    # Exceptions: 100 thrown by MlpdTests.Exceptions:Thrower (int), 100 caught.
    plain = t.run([DOTNET, DLL, "exceptions", "100"], env=env_with())
    p = profiled(["exceptions", "100"], "nodefaults,exception,output=exceptions.mlpd")
    t.check(p.stdout == plain.stdout and p.returncode == plain.returncode, f"exceptions: program changed: {p.stdout!r}")
    t.check(not mlpd_lines(p.stderr), f"exceptions: the agent spoke: {p.stderr[-300:]}")
    totals, text = check_file("exceptions", "exceptions.mlpd")
    t.check(totals.get("throws", 0) >= 100, f"exceptions: {totals.get('throws')} throws, expected at least 100")
    t.check(totals.get("clauses.catch", 0) >= 100, f"exceptions: {totals.get('clauses.catch')} catch clauses")
    r = t.run([t.MLPD, "report", "exceptions.mlpd"])
    t.check("MlpdTests.Exceptions:Run (int)" in r.stdout or "MlpdTests.Exceptions:Thrower (int)" in r.stdout,
            f"exceptions: mlpd report does not name the program's methods: {r.stdout[:800]}")
    print(f"ok  exceptions: {totals.get('throws')} throws, {totals.get('clauses.catch')} catches", flush=True)

    # Collections: the program's own count of gen2 collections against the file's.
    p = profiled(["gc", "5"], "nodefaults,gc,output=gc.mlpd")
    m = re.search(r"gen0 (\d+) gen1 (\d+) gen2 (\d+)", p.stdout)
    t.check(m is not None and p.returncode == 0, f"gc: program output {p.stdout!r}")
    totals, text = check_file("gc", "gc.mlpd")
    if m:
        gens = {int(g): int(n) for g, n in re.findall(r"Gen(\d) collections: (\d+)", text)}
        t.check(gens.get(2, 0) == int(m.group(3)), f"gc: mprof-report counts {gens} collections, the program "
                f"{m.group(0)} (gen 2 must be equal)")
        print(f"ok  gc: mprof-report {gens}; the program {m.group(0)}", flush=True)

    # Threads and their names.
    p = profiled(["threads", "4"], "nodefaults,output=threads.mlpd")
    t.check(p.returncode == 0, f"threads: {p.returncode}")
    check_file("threads", "threads.mlpd")
    # Each worker started, named and ended once (glibc reuses a finished thread's pthread id, so the
    # file's events, not mprof-report's per-id summary, are the count).
    d = t.run([t.MLPD, "dump", "threads.mlpd"]).stdout
    for i in range(4):
        named = re.findall(rf"thread_name tid=(0x[0-9a-f]+) mlpd-worker-{i}$", d, re.M)
        t.check(len(named) == 1, f"threads: mlpd-worker-{i} named {len(named)} times")
    starts = len(re.findall(r" thread_start tid=", d))
    ends = len(re.findall(r" thread_end tid=", d))
    t.check(starts == ends and starts >= 5, f"threads: {starts} starts, {ends} ends")
    print(f"ok  threads: 4 named workers; {starts} thread starts, {ends} ends", flush=True)

    # Allocations: exactly 1000 Payload objects and 1000 int[10] (alloc is exact on .NET).
    p = profiled(["allocs", "1000"], "nodefaults,alloc,output=allocs.mlpd")
    t.check(p.returncode == 0 and "payloads 1000" in p.stdout, f"allocs: {p.returncode} {p.stdout!r}")
    totals, text = check_file("allocs", "allocs.mlpd")
    counts = {}
    for line in text.splitlines():
        mm = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S.*)$", line)
        if mm:
            counts[mm.group(4).strip()] = int(mm.group(2))
    t.check(counts.get("MlpdTests.Payload") == 1000, f"allocs: MlpdTests.Payload count {counts.get('MlpdTests.Payload')}")
    t.check(counts.get("int[]", 0) >= 1000, f"allocs: int[] count {counts.get('int[]')}")
    print(f"ok  allocs: Payload {counts.get('MlpdTests.Payload')}, int[] {counts.get('int[]')}", flush=True)

    # Backtraces from optimised code (tiered compilation off: every method fully optimised), whose
    # allocation helpers make no frame record: the allocating method is still the innermost frame, not
    # lost ([no backtrace]) nor its caller (Programs:Main).
    p = profiled(["allocs", "1000"], "nodefaults,alloc,output=allocs_opt.mlpd", DOTNET_TieredCompilation="0")
    t.check(p.returncode == 0 and "payloads 1000" in p.stdout, f"allocs (optimised): {p.returncode} {p.stdout!r}")
    check_file("allocs (optimised)", "allocs_opt.mlpd")
    ex = t.run([t.MLPD, "export", "--what", "alloc", "--format", "collapsed", "-o", "-", "allocs_opt.mlpd"])
    leaves = {}
    for line in ex.stdout.splitlines():
        frames, _, n = line.rpartition(" ")
        if n.isdigit():
            leaf = frames.split(";")[-1]
            leaves[leaf] = leaves.get(leaf, 0) + int(n)
    in_run = leaves.get("MlpdTests.Allocs:Run (int)", 0)
    t.check(in_run >= 2000, f"allocs (optimised): {in_run} allocations in Allocs:Run, expected 2000 or more; "
                            f"by innermost frame: {sorted(leaves.items(), key=lambda kv: -kv[1])[:4]}")
    t.check(leaves.get("[no backtrace]", 0) < 100 and leaves.get("MlpdTests.Programs:Main (string[])", 0) < 100,
            f"allocs (optimised): lost or charged to the caller: {sorted(leaves.items(), key=lambda kv: -kv[1])[:4]}")
    print(f"ok  allocs (optimised code): {in_run} allocations in Allocs:Run", flush=True)

    # The program's name in the header: its assembly (a .NET program is a .dll).
    r = t.run([t.MLPD, "report", "allocs.mlpd"])
    t.check("program:  " + DLL in r.stdout, f"report: the program is not named {DLL}: {r.stdout[:300]!r}")

    # Options .NET cannot honour: one line naming it, the program unchanged (walker=: Mono's own;
    # alloc-sample=100000: the runtime samples every 102400 bytes, only alloc-sample=100k is honoured).
    plain = t.run([DOTNET, DLL, "hello"], env=env_with())
    for option in ("walker=mono", "alloc-sample=100000"):
        p = profiled(["hello"], f"alloc,{option},output=refused.mlpd" if option.startswith("alloc-") else
                     f"{option},output=refused.mlpd")
        t.check(p.stdout == plain.stdout and p.returncode == plain.returncode, f"{option}: program changed")
        lines = mlpd_lines(p.stderr)
        name = option.split("=")[0]
        t.check(len(lines) == 1 and name in lines[0], f"{option}: expected one line naming it: {lines}")
        t.check(not os.path.exists("refused.mlpd"), f"{option}: a refused start left a file")
    t.finish("dotnet_events")


if __name__ == "__main__":
    main()
