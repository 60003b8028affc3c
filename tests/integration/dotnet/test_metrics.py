#!/usr/bin/env python3
"""`metrics=PORT` on .NET (docs/fleet.md): the endpoint serves the runtime's metrics from CoreCLR
with the real agent. The program (`gcwait 4`) makes full and gen0 collections, prints
GC.CollectionCount(0..2) and waits; the scrape's dotnet_gc_collections_total{gc_heap_generation} equal
.NET's own definition (collections whose oldest generation was that one: CollectionCount(g) -
CollectionCount(g + 1)); mlpd_info says coreclr; `promtool check metrics` passes; the program's output
and exit status are unchanged."""
import os
import re
import select
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, CLSID, DLL, DOTNET, env_with, require_programs  # noqa: E402


def main():
    require_programs("dotnet_metrics")
    promtool = shutil.which("promtool")
    env = env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID, CORECLR_PROFILER_PATH=AGENT,
                   MLPD_OPTIONS="nodefaults,gc,metrics=0,output=metrics.mlpd")
    with open("metrics.stderr", "wb") as err:
        proc = subprocess.Popen([DOTNET, DLL, "gcwait", "4"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=env)
        try:
            r, _, _ = select.select([proc.stdout], [], [], 60)
            line = proc.stdout.readline().decode().strip() if r else ""
            m = re.match(r"counts (\d+) (\d+) (\d+)$", line)
            t.check(m, f"program said {line!r}")
            port = None
            with open("metrics.stderr", encoding="utf-8", errors="replace") as f:
                pm = re.search(r"mlpd: metrics at http://127\.0\.0\.1:(\d+)/metrics", f.read())
                port = int(pm.group(1)) if pm else None
            if t.check(port and m, "no 'mlpd: metrics at' line on stderr") and m:
                c0, c1, c2 = (int(x) for x in m.groups())
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                    body = resp.read().decode()
                    t.check(resp.headers.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8",
                            f"content type {resp.headers.get('Content-Type')}")
                got = {g: float(v) for g, v in re.findall(r'^dotnet_gc_collections_total\{gc_heap_generation="(gen\d)"\} (\S+)$',
                                                            body, re.M)}
                want = {"gen0": float(c0 - c1), "gen1": float(c1 - c2), "gen2": float(c2)}
                t.check(got == want, f"dotnet_gc_collections_total {got}, the program's counts say {want}")
                t.check('mlpd_info{runtime="coreclr"} 1' in body, "no mlpd_info{runtime=\"coreclr\"}")
                for name in ("dotnet_jit_compiled_methods_total", "dotnet_gc_pause_time_seconds_total",
                             "process_cpu_seconds_total"):
                    t.check(re.search(rf"^{name} [0-9.e+-]+$", body, re.M), f"no {name} in {body[:1500]}")
                if promtool:
                    p = subprocess.run([promtool, "check", "metrics"], input=body.encode(), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=60)
                    t.check(p.returncode == 0 and not p.stdout.strip(), f"promtool: {p.stdout.decode()[:1500]}")
                print(f"ok  dotnet_gc_collections_total {got} (program: {c0} {c1} {c2})", flush=True)
        finally:
            try:
                proc.stdin.write(b"\n")
                proc.stdin.close()
            except OSError:
                pass
            rc = proc.wait(timeout=60)
    t.check(rc == 5, f"exit status {rc}, expected 5")
    t.finish("dotnet_metrics")


if __name__ == "__main__":
    main()
