#!/usr/bin/env python3
"""The runtime's events mlpd takes from its own in-process EventPipe session (docs/dotnet.md): `monitor`
(ContentionStart/Stop, keyword 0x4000) as Mono's monitor events, and `alloc-sample=100k` (.NET 10's
AllocationSampled, keyword 0x80000000000) as Mono's sampled allocations, weighted so that `mlpd report`'s
bytes per type are unbiased estimates. Every file passes `mlpd verify --strict` and Mono's
`mprof-report` reads it; the program's output and exit code never change."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import MAJOR, AGENT, CLSID, DLL, DOTNET, check_file, env_with, mlpd_lines, profiled, require_programs  # noqa: E402,F401








def report_json(path, top=50):
    r = t.run([t.MLPD, "report", "--json", "--top", str(top), path])
    t.check(r.returncode == 0, f"mlpd report --json {path}: {r.stderr[-300:]}")
    try:
        return json.loads(r.stdout)
    except ValueError:
        t.check(False, f"mlpd report --json {path}: not JSON: {r.stdout[:300]}")
        return {}


def main():
    require_programs("dotnet_eventpipe")

    # monitor: `contention 20` holds a lock 50 ms while a new thread waits for it, 20 times: at least
    # 20 contentions, each acquired, in MlpdTests.Contention:Waiter.
    rounds = 20
    plain = t.run([DOTNET, DLL, "contention", str(rounds)], env=env_with())
    p = profiled(["contention", str(rounds)], "nodefaults,monitor,output=monitor.mlpd")
    t.check(p.stdout == plain.stdout and p.returncode == plain.returncode == 0,
            f"monitor: program changed: {p.stdout!r} {p.returncode} (plain {plain.stdout!r})")
    t.check(not mlpd_lines(p.stderr), f"monitor: the agent spoke: {p.stderr[-300:]}")
    totals, text = check_file("monitor", "monitor.mlpd")
    d = t.run([t.MLPD, "dump", "monitor.mlpd"]).stdout
    contentions = len(re.findall(r" monitor .*contention", d))
    done = len(re.findall(r" monitor .*done", d))
    t.check(contentions >= rounds, f"monitor: {contentions} contention events, expected at least {rounds}")
    t.check(done == contentions, f"monitor: {contentions} contentions but {done} acquired")
    rep = report_json("monitor.mlpd").get("monitor", {})
    t.check(rep.get("contentions", 0) >= rounds and rep.get("acquired", 0) == rep.get("contentions"),
            f"monitor: mlpd report {rep}")
    # Each waits about 50 ms: the waits add up to about rounds x 50 ms.
    t.check(rep.get("wait_ns", 0) >= rounds * 30e6, f"monitor: waited {rep.get('wait_ns')} ns in all")
    sites = [s["name"] for s in rep.get("sites", [])]
    t.check(any("MlpdTests.Contention:Waiter" in s for s in sites),
            f"monitor: mlpd report does not name the contended method: {sites[:8]}")
    r = t.run([t.MLPD, "report", "monitor.mlpd"])
    t.check("MlpdTests.Contention:Waiter" in r.stdout, f"monitor: mlpd report's text: {r.stdout[:1200]}")
    print(f"ok  monitor: {contentions} contentions, {done} acquired, {rep.get('wait_ns', 0) / 1e6:.0f} ms waited, "
          f"sites {sites[:3]}", flush=True)

    # Exact: four threads on one lock; the runtime's own count of contentions in the run
    # (Monitor.LockContentionCount) against the file's (the runtime's own threads may add one or two
    # outside the program's window).
    p = profiled(["locks", "300000"], "nodefaults,monitor,counter,output=locks.mlpd")
    m = re.search(r"counter (\d+) contentions (\d+)", p.stdout)
    t.check(p.returncode == 0 and m is not None and int(m.group(1)) == 4 * 300000 // 8 * 28,
            f"locks: {p.returncode} {p.stdout!r}")
    check_file("locks", "locks.mlpd")
    full = report_json("locks.mlpd", top=200)  # every counter
    rep = full.get("monitor", {})
    counted = [c.get("value") for c in full.get("counters", {}).get("values", [])
               if c.get("name") == "System.Runtime/dotnet.monitor.lock_contentions"]
    t.check(counted == [rep.get("contentions")],
            f"locks: dotnet.monitor.lock_contentions {counted}, the file's contentions {rep.get('contentions')}")
    if m:
        known = int(m.group(2))
        t.check(known <= rep.get("contentions", 0) <= known + 2 and rep.get("acquired") == rep.get("contentions"),
                f"locks: the runtime counted {known} contentions, the file {rep}")
        print(f"ok  locks: the runtime counted {known} contentions, the file {rep.get('contentions')}, "
              f"dotnet.monitor.lock_contentions {counted}", flush=True)

    # alloc-sample=100k: `allocs N` makes exactly N Payload objects (32 bytes each) and N int[10] (64
    # bytes each): the estimated bytes per type within 15% of the known bytes (128 and 256 MB: one
    # standard error is about 3% and 2% at 100 KB per sample; seen up to 6% at 2 million objects).
    if MAJOR < 10:
        # .NET 8 has no AllocationSampled event: refused with one line naming the runtime's version,
        # the program unchanged, no file (docs/dotnet.md says why AllocationTick is no substitute).
        plain = t.run([DOTNET, DLL, "hello"], env=env_with())
        p = profiled(["hello"], "nodefaults,alloc-sample=100k,output=refused8.mlpd")
        lines = mlpd_lines(p.stderr)
        t.check(p.stdout == plain.stdout and p.returncode == plain.returncode, "alloc-sample on .NET 8: program changed")
        t.check(len(lines) == 1 and "alloc-sample" in lines[0] and f".NET {MAJOR}." in lines[0],
                f"alloc-sample on .NET {MAJOR}: expected one line naming the runtime's version: {lines}")
        t.check(not os.path.exists("refused8.mlpd"), "alloc-sample on .NET 8: a refused start left a file")
        print(f"ok  alloc-sample on .NET {MAJOR}: refused: {lines[0]}", flush=True)
        t.finish("dotnet_eventpipe")
        return
    n = 4_000_000
    plain = t.run([DOTNET, DLL, "allocs", str(n)], env=env_with())
    p = profiled(["allocs", str(n)], "nodefaults,alloc-sample=100k,output=sampled.mlpd")
    t.check(p.stdout == plain.stdout and p.returncode == plain.returncode == 0,
            f"alloc-sample: program changed: {p.stdout!r} (plain {plain.stdout!r})")
    t.check(not mlpd_lines(p.stderr), f"alloc-sample: the agent spoke: {p.stderr[-300:]}")
    check_file("alloc-sample", "sampled.mlpd")
    a = report_json("sampled.mlpd").get("alloc", {})
    t.check(a.get("estimated") is True and a.get("sample_interval") == 102400, f"alloc-sample: report {str(a)[:300]}")
    types = {x["name"]: x for x in a.get("types", [])}
    for name, size in (("MlpdTests.Payload", 32), ("int[]", 64)):
        known = n * size
        est = types.get(name, {}).get("bytes", 0)
        t.check(abs(est - known) <= 0.15 * known,
                f"alloc-sample: {name} estimated {est} bytes, allocated {known} (more than 15% off)")
        print(f"ok  alloc-sample: {name} estimated {est} bytes of {known} ({100.0 * (est - known) / known:+.1f}%)",
              flush=True)
    t.check(a.get("samples", 0) >= (n * 96) // 102400 // 2, f"alloc-sample: only {a.get('samples')} samples")
    sites = [s["name"] for s in a.get("sites", [])]
    t.check(any("MlpdTests.Allocs:Run (int)" in s for s in sites),
            f"alloc-sample: the allocating method is not named: {sites[:8]}")

    # Another mean: refused with one line naming the runtime's; the program unchanged, no file.
    plain = t.run([DOTNET, DLL, "hello"], env=env_with())
    p = profiled(["hello"], "alloc-sample=512k,output=refused.mlpd")
    lines = mlpd_lines(p.stderr)
    t.check(p.stdout == plain.stdout and p.returncode == plain.returncode, "alloc-sample=512k: program changed")
    t.check(len(lines) == 1 and "alloc-sample" in lines[0] and "100k" in lines[0],
            f"alloc-sample=512k: expected one line naming the runtime's mean: {lines}")
    t.check(not os.path.exists("refused.mlpd"), "alloc-sample=512k: a refused start left a file")
    t.finish("dotnet_eventpipe")


if __name__ == "__main__":
    main()
