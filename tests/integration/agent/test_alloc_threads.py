#!/usr/bin/env python3
"""Allocation backtraces while threads allocate together (issue 22, item 3). Four threads allocate
1.5M small arrays each, so that collections happen all the time while the others allocate. Every
allocation a thread makes outside its own collection must have its backtrace: a process-wide "in GC"
flag dropped 43-49% of them (Mono's own profiler: ~60, the runtime's allocations with no managed
frame). Counted by Mono's own reader (LogCount.exe, Mono.Profiler.Log.dll): at most 0.1% without one."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
THREADS, PER_THREAD = 4, 1500000


def main():
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "threads.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"alloc,output={out}")
        p = t.run([t.MONO, t.program("allocthreads"), str(THREADS), str(PER_THREAD)], env=env, timeout=600)
        t.check(p.returncode == 0 and f"allocated {THREADS * PER_THREAD}" in p.stdout,
                f"allocthreads: exit {p.returncode}: {p.stdout[-200:]} {p.stderr[-300:]}")
        rc, counts, detail, lc = t.log_count(out)
        t.check(rc == 0, f"LogCount exit {rc}: {lc.stderr[-300:]}")
        allocs = counts.get("alloc", 0)
        missing = detail.get("alloc_no_backtrace", 0)
        share = missing / allocs if allocs else 1.0
        print(f"{allocs} allocations, {missing} without a backtrace ({100 * share:.4f}%), "
              f"{detail.get('gc_collections.gen0', 0)} minor collections", flush=True)
        t.check(allocs >= THREADS * PER_THREAD, f"only {allocs} allocations recorded")
        t.check(detail.get("gc_collections.gen0", 0) >= 10, "too few collections to test anything")
        t.check(share <= 0.001, f"{missing} of {allocs} allocations ({100 * share:.2f}%) have no backtrace (at most 0.1%)")
        rc, obj, v = t.verify_json(out, strict=True)
        t.check(rc == 0 and obj and obj.get("ok"), f"verify --strict: {v.stdout[-300:]} {v.stderr[-300:]}")
    t.finish("agent_alloc_threads")


if __name__ == "__main__":
    main()
