#!/usr/bin/env python3
"""The cost of a heapshot of 100000 objects, ours vs Mono's log profiler, side by side.

Runs tests/programs/heapshot_live.exe (100000 live LiveNode objects, ~100270 objects in all; 3 forced
major collections and one at shutdown) with `nodefaults,gc,heapshot` under the mlpd agent and under
Mono 6.8's log profiler, alternating, ROUNDS times each, with a 64 MiB nursery (no collection while the
graph is built). From each file's own timestamps, per heapshot:
  walk    = GC event pre_start_world -> heap_end (the heap walk: writing ~100270 heap_object events)
  stopped = GC event post_stop_world -> post_start_world (the whole pause of the heapshot collection)
Prints the medians over all heapshots of all rounds.

Usage: tests/bench/heapshot_cost.py BUILD_DIR [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import tempfile


def shots(mlpd, path):
    out = subprocess.run([mlpd, "dump", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    res, pre, stop, walk, inshot = [], None, None, None, False
    for line in out.splitlines():
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        t = int(f[0])
        if "event=post_stop_world " in line:
            stop = t
        elif " heap_start" in line:
            inshot = True
        elif "event=pre_start_world " in line:
            pre = t
        elif " heap_end" in line and inshot:
            walk = (t - pre) / 1e6
        elif "event=post_start_world " in line and inshot and walk is not None:
            res.append((walk, (t - stop) / 1e6))
            inshot, walk = False, None
    return res


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    mlpd = os.path.join(build, "reader", "mlpd")
    agent = os.path.join(build, "agent", "libmlpd.so")
    prog = os.path.join(build, "tests", "programs", "heapshot_live.exe")
    env = dict(os.environ, MONO_GC_PARAMS="nursery-size=64m")
    results = {"mlpd": [], "mono": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(rounds):
            for who in ("mlpd", "mono"):
                out = os.path.join(d, f"{who}{r}.mlpd")
                if who == "mlpd":
                    e = dict(env, LD_PRELOAD=agent, MLPD_OPTIONS=f"nodefaults,gc,heapshot,output={out}")
                    cmd = ["mono", prog, "collect", "3"]
                else:
                    e = env
                    cmd = ["mono", f"--profile=log:nodefaults,gc,heapshot,output={out}", prog, "collect", "3"]
                subprocess.run(cmd, env=e, stdout=subprocess.DEVNULL, check=False)
                results[who] += shots(mlpd, out)
    for who, rs in results.items():
        print(f"{who}: {len(rs)} heapshots, walk median {statistics.median(w for w, _ in rs):.1f} ms, "
              f"pause median {statistics.median(s for _, s in rs):.1f} ms")


if __name__ == "__main__":
    main()
