#!/usr/bin/env python3
"""CPU sampling on .NET (issue 35; docs/dotnet.md, "Sampling"): `sample` on per-thread CPU timers in a
real `dotnet` program, every frame unwound by the helper from the stack copy (native frames by
libunwind, JIT'd frames through their frame records) and named by the file's JIT ranges.
Checks: the file verifies --strict and mprof-report reads it; the program's output and exit code are
unchanged; hits follow the program's CPU-seconds x rate; the spinning method has most of the hits
and its samples carry their managed callers (Programs:Main) and the host's native frames below them;
`sample-real` records too."""
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, CLSID, DLL, DOTNET, check_file, env_with, require_programs  # noqa: E402

SPIN = "MlpdTests.Busy:Spin (int)"
MAIN = "MlpdTests.Programs:Main (string[])"


def timed(args, options):
    """Runs the program with the agent; returns (process, CPU-seconds of the child)."""
    env = env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID, CORECLR_PROFILER_PATH=AGENT)
    if options is not None:
        env["MLPD_OPTIONS"] = options
    else:
        env = env_with()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([DOTNET, DLL] + args, env=env, capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p, cpu


def stacks(path):
    """(count, [frames root first]) per distinct stack of the file's CPU samples."""
    p = t.run([t.MLPD, "export", "--format", "collapsed", "-o", "-", path], timeout=300)
    t.check(p.returncode == 0, f"export collapsed failed: {p.stderr[-300:]}")
    out = []
    for line in p.stdout.splitlines():
        frames, _, n = line.rpartition(" ")
        if frames and n.isdigit():
            out.append((int(n), frames.split(";")))
    return out




def main():
    require_programs("dotnet_sampling")

    plain, _ = timed(["busy", "2500"], None)
    p, cpu = timed(["busy", "2500"], "nodefaults,sample,output=busy.mlpd")
    t.check(p.stdout == plain.stdout and p.returncode == plain.returncode == 0,
            f"sample: program changed: {p.returncode} {p.stdout!r} vs {plain.stdout!r}; {p.stderr[-300:]}")
    t.check(not [l for l in p.stderr.splitlines() if l.startswith("mlpd:")], f"sample: the agent spoke: {p.stderr[-300:]}")
    check_file("sample", "busy.mlpd")
    rows = stacks("busy.mlpd")
    hits = sum(n for n, _ in rows)
    # The process's CPU includes the agent's own threads (not sampled): hits may fall short of
    # CPU x 100 by that much, never exceed it by more than the timers' rounding.
    t.check(0.75 * cpu * 100 <= hits <= 1.1 * cpu * 100 + 5, f"sample: {hits} hits for {cpu:.2f} CPU-s at 100 Hz")
    spin = [(n, f) for n, f in rows if f and f[-1] == SPIN]
    spin_hits = sum(n for n, _ in spin)
    t.check(spin_hits >= 0.7 * hits, f"sample: {spin_hits} of {hits} hits have Spin as their leaf; top: "
                                     f"{sorted(rows, key=lambda r: -r[0])[:2]}")
    # Its callers through the JIT's frame records: Main (a JIT'd frame) and the host's entry below it.
    with_main = sum(n for n, f in spin if MAIN in f)
    with_host = sum(n for n, f in spin if any(x.startswith("coreclr_execute_assembly") for x in f))
    t.check(with_main >= 0.9 * spin_hits, f"sample: only {with_main} of {spin_hits} Spin samples reach Main: "
                                          f"{spin[:1]}")
    t.check(with_host >= 0.9 * spin_hits, f"sample: only {with_host} of {spin_hits} Spin samples reach the host "
                                          f"(coreclr_execute_assembly): {spin[:1]}")
    print(f"ok  sample: {hits} hits for {cpu:.2f} CPU-s; {spin_hits} in Spin, {with_main} of them under Main, "
          f"{with_host} under coreclr_execute_assembly", flush=True)

    # The report's first screen names the program's own method.
    r = t.run([t.MLPD, "report", "busy.mlpd"])
    t.check(r.returncode == 0 and SPIN in "\n".join(r.stdout.splitlines()[:12]),
            f"report: Spin not in the first lines: {r.stdout[:800]}")

    p, _ = timed(["busy", "500"], "nodefaults,sample-real,output=real.mlpd")
    t.check(p.returncode == 0 and p.stdout == "busy done\n", f"sample-real: program changed: {p.returncode} {p.stdout!r}")
    check_file("sample-real", "real.mlpd")
    real = stacks("real.mlpd")
    t.check(sum(n for n, _ in real) >= 20, f"sample-real: {sum(n for n, _ in real)} hits in 0.5 s")
    t.check(any(f and f[-1] == SPIN for _, f in real), "sample-real: no hit in Spin")
    print(f"ok  sample-real: {sum(n for n, _ in real)} hits", flush=True)
    t.finish("dotnet_sampling")


if __name__ == "__main__":
    main()
