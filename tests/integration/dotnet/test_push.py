#!/usr/bin/env python3
"""`push=URL` on .NET (CoreCLR; docs/fleet.md): DotnetPrograms.dll busy 3000 spins for 3 CPU-seconds
under `nodefaults,sample,push=...,push-interval=1` (the agent loaded by the runtime's CORECLR_
variables) against a loopback Pyroscope-style ingest receiver (tests/integration/lib/
pyroscope_receiver.py): at least 3 pushes, each decoded by `go tool pprof -raw`; the samples pushed
sum to the samples of the run's file (`mlpd report --json`) within 1%; labels service_name=
DotnetPrograms, runtime=coreclr, the pid; the spinning method (MlpdTests.Busy:Spin) is the hottest
function pushed; the program's output and exit status are those of a run without push.
"""
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402
from dotnettest import AGENT, CLSID, DLL, DOTNET, env_with  # noqa: E402


def main():
    if not DOTNET or not os.path.exists(DLL):
        print("dotnet or the .NET test programs are missing: skipped")
        sys.exit(77)
    if not pr.GO:
        print("go (golang-go) not found: scripts/install-deps.sh installs it")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as work:
        plain = t.run([DOTNET, DLL, "busy", "3000"], env=env_with(), timeout=300)
        r = pr.Receiver()
        out = os.path.join(work, "busy.mlpd")
        p = t.run([DOTNET, DLL, "busy", "3000"], timeout=300,
                  env=env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID, CORECLR_PROFILER_PATH=AGENT,
                               MLPD_OPTIONS=f"nodefaults,sample,push={r.url},push-interval=1,output={out}"))
        time.sleep(0.5)
        reqs = r.taken()
        r.stop()
        t.check(p.returncode == plain.returncode == 0 and p.stdout == plain.stdout,
                f"rc {p.returncode} (without push {plain.returncode}), stdout {p.stdout!r} ({plain.stdout!r})")
        t.check(len(reqs) >= 3, f"{len(reqs)} pushes in a 3 CPU-s run with push-interval=1")
        rep = t.run([t.MLPD, "report", "--json", out])
        total = json.loads(rep.stdout)["samples"]["total"] if rep.returncode == 0 else None
        pushed, hot = 0, {}
        for i, q in enumerate(reqs):
            service, labels = q.name_labels()
            t.check(service == "DotnetPrograms" and labels.get("runtime") == "coreclr" and
                    re.fullmatch(r"\d+", labels.get("pid", "")), f"push {i}: {service} {labels}")
            rc, sums, text = pr.decode(q.profile or b"", work, f"p{i}")
            if not t.check(rc == 0 and "samples" in sums, f"push {i} does not decode: {text[-300:]}"):
                continue
            pushed += sums["samples"]
            # -raw's sample lines: "VALUE: LOC LOC ..." (leaf first); the leaf's function from the
            # Locations section ("ID: 0x0 M=1 FUNCTION :0 s=0()").
            funcs = dict(re.findall(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (.+?) :\d+ s=\d+\(.*\)$", text, re.M))
            for value, locs in re.findall(r"^\s*(\d+): ((?:\d+ ?)+)$", text, re.M):
                leaf = funcs.get(locs.split()[0], "?")
                hot[leaf] = hot.get(leaf, 0) + int(value)
        top = max(hot, key=hot.get) if hot else None
        t.check(top is not None and "Busy:Spin" in top, f"hottest function pushed {top!r}: {sorted(hot.items(), key=lambda x: -x[1])[:3]}")
        t.check(total and abs(pushed - total) <= 0.01 * total, f"{pushed} samples pushed, {total} in the file")
        print(f"{len(reqs)} pushes, {pushed} samples pushed, {total} in the file; hottest {top!r}", flush=True)
    t.finish("dotnet_push")


if __name__ == "__main__":
    main()
