#!/usr/bin/env python3
"""Backtraces through dynamic methods that are compiled and freed all the time (issue 22, item 6).
tests/programs/dynfree.cs emits 2400 DynamicMethods MakeLongs_K, each allocating a long[K], and frees
them every 8 rounds (with compiled Expressions and Regexes), so later methods reuse the freed code
memory and MonoMethod addresses. The code ranges of freed methods leave the stack walker's table by
its method index (code_index.h), and every thread's cached lookup of them goes stale then: each
long[K] allocated in a dynamic method must name MakeLongs_K in its backtrace, never a freed method
that had the same code or MonoMethod address. With MLPD_WALKER=check every backtrace of ours is also
compared with Mono's walk of the same event. Last, 100 int[] allocated in a frame over 4 KiB (a
prologue that probes the stack page by page, which our walker reads since issue 22) must name
DynFree:BigFrame."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
COUNTS = re.compile(r"backtraces: (\d+) by our stack walker, (\d+) by mono_stack_walk_no_il")
DYN = re.compile(r"MakeLongs_(\d+) ")


def run(work, name, walker=None):
    out = os.path.join(work, f"{name}.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,verbose,output={out}")
    env.pop("MLPD_WALKER", None)
    if walker:
        env["MLPD_WALKER"] = walker
    p = t.run([t.MONO, t.program("dynfree")], env=env, timeout=600)
    t.check(p.returncode == 0 and "dynfree 2400 methods" in p.stdout,
            f"dynfree ({name}): exit {p.returncode}: {p.stdout[-200:]} {p.stderr[-300:]}")
    t.check("disagreed" not in p.stderr, f"dynfree ({name}): our walker differed from Mono's: {p.stderr[-400:]}")
    rc, v, _ = t.verify_json(out, strict=True)
    t.check(rc == 0 and v and v["ok"], f"dynfree ({name}): does not verify: {v and v['errors'][:3]}")
    m = COUNTS.search(p.stderr)
    t.check(m is not None, f"dynfree ({name}): no walker counts: {p.stderr[-300:]}")
    return out, (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def check_names(name, path):
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(p.returncode == 0, f"dump ({name}): exit {p.returncode}")
    arrays = named = wrong = big = 0
    first_wrong = None
    for line in p.stdout.splitlines():
        if '"kind":"alloc"' in line and '"System.Int32[]"' in line and "DynFree:BigFrame" in line:
            big += 1
        if '"kind":"alloc"' not in line or '"System.Int64[]"' not in line:
            continue
        e = json.loads(line)
        k = (e["size"] - 32) // 8
        frames = [f.get("name", "") for f in e.get("backtrace", [])]
        dyn = [int(m.group(1)) for f in frames for m in [DYN.search(f)] if m]
        arrays += 1
        if not dyn:
            continue
        named += 1
        if dyn != [k]:
            wrong += 1
            first_wrong = first_wrong or (k, frames[-4:])
    print(f"{name}: {arrays} long[] allocations, {named} with a MakeLongs_K frame, {wrong} naming another K", flush=True)
    t.check(arrays >= 7200, f"{name}: only {arrays} long[] allocations (7200 made in dynamic methods)")
    t.check(named >= 7200 * 0.99, f"{name}: only {named} of the dynamic methods' allocations name one")
    t.check(big == 100, f"{name}: {big} int[] allocations name DynFree:BigFrame (100 made there)")
    t.check(wrong == 0, f"{name}: {wrong} backtraces name another dynamic method than the one that allocated, "
                        f"e.g. long[{first_wrong and first_wrong[0]}] in {first_wrong and first_wrong[1]}")


def main():
    with tempfile.TemporaryDirectory() as work:
        out, (ours, mono) = run(work, "ours")
        t.check(ours > 0.9 * (ours + mono), f"our walker made only {ours} of {ours + mono} backtraces")
        check_names("ours", out)
        out, (ours, mono) = run(work, "check", walker="check")
        check_names("check", out)
        print(f"ok  MLPD_WALKER=check: each of our {ours} backtraces equal to Mono's walk of the same event", flush=True)
    t.finish("agent_dynamic_methods")


if __name__ == "__main__":
    main()
