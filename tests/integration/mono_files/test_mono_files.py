#!/usr/bin/env python3
"""Files written by Mono 6.8's own log profiler read cleanly in our reader.

For every test program and a range of profiler options: run `mono --profile=log:...`, then
- `mlpd verify --json` decodes the file with zero errors (also gzip files and the same file on stdin);
- its per-kind counts equal what Mono.Profiler.Log.dll counts (tests/programs/LogCount.cs);
- the totals our reader computes (calls, allocated objects and bytes, throws, clauses, GC moves,
  collections, handles, monitor events, heapshot object counts and sizes, samples, JIT helpers)
  equal the ones mprof-report prints for the same file.
"""
import concurrent.futures
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

# (program, log profiler options, totals that mprof-report prints for this run)
CASES = [
    ("calls", "calls", ["calls"]),
    ("calls", "calls,callspec=T:CallsProgram", ["calls"]),
    ("calls", "nodefaults,counter", []),
    ("calls", "jit", ["jit_helpers"]),
    ("alloc", "alloc", ["alloc_objects", "alloc_bytes", "gc_resizes", "gc_moved_objects", "gc_collections.gen0",
                        "gc_collections.gen1"]),
    ("alloc", "calls,alloc,zip", ["calls", "alloc_objects", "alloc_bytes"]),
    ("gcmoves", "alloc", ["alloc_objects", "alloc_bytes", "gc_moved_objects", "gc_resizes", "gc_collections.gen0",
                          "gc_collections.gen1"]),
    ("heapshot", "heapshot", ["heapshots", "heapshot.0.objects", "heapshot.0.bytes", "heapshot.1.objects",
                              "heapshot.1.bytes", "heapshot.2.objects", "heapshot.2.bytes"]),
    ("heapshot", "nodefaults,gcalloc,heapshot=2gc", ["heapshots", "heapshot.0.objects", "heapshot.0.bytes"]),
    ("heapshot", "heapshot-on-shutdown,zip", ["heapshots", "heapshot.0.objects", "heapshot.0.bytes"]),
    ("exceptions", "exception,calls", ["throws", "clauses.catch", "clauses.filter", "clauses.finally", "calls"]),
    ("exceptions", "exception", ["throws", "clauses.catch", "clauses.filter", "clauses.finally"]),
    ("monitors", "monitor", ["monitor.contention", "monitor.done", "monitor.fail"]),
    ("gchandles", "gchandle", ["gc_handles_created.weak", "gc_handles_destroyed.weak", "gc_handles_created.weaktrack",
                               "gc_handles_destroyed.weaktrack", "gc_handles_created.normal",
                               "gc_handles_destroyed.normal"]),
    ("finalizers", "finalization,gc", ["gc_collections.gen0", "gc_collections.gen1"]),
    ("threads", "alloc,calls", ["calls", "alloc_objects", "alloc_bytes"]),
    ("sample", "sample", ["sample_hits"]),
    ("sample", "sample-real=500,maxframes=8", ["sample_hits"]),
    ("appdomain", "legacy,calls,alloc", ["calls", "alloc_objects", "alloc_bytes", "throws"]),
]

# Kinds that must be present for a case to mean anything (guards against a silently empty run).
MUST_HAVE = {
    "calls": ["method_enter", "method_leave", "method_jit"],
    "jit": ["jit_helper"],
    "alloc": ["alloc", "vtable_load", "class_load"],
    "heapshot": ["heap_start", "heap_object", "heap_end", "heap_root"],
    "exception": ["exception_throw", "exception_clause"],
    "monitor": ["monitor"],
    "gchandle": ["gc_handle_created", "gc_handle_destroyed"],
    "finalization": ["gc_finalize_start", "gc_finalize_end", "gc_finalize_object_start", "gc_finalize_object_end"],
    "sample": ["sample_hit"],
    "counter": ["counter_descriptors", "counter_samples"],
}


def profile(case, workdir):
    prog, opts, _ = case
    out = os.path.join(workdir, f"{prog}-{opts.replace(',', '_').replace('=', '-').replace(':', '-')}.mlpd")
    p = t.mono_log_profile(prog, opts, out)
    return case, out, p


def check_case(case, out, proc):
    prog, opts, compare = case
    label = f"{prog} [{opts}]"
    if not t.check(proc.returncode == 0, f"{label}: mono exited {proc.returncode}: {proc.stderr[-500:]}"):
        return
    if not t.check(os.path.exists(out) and os.path.getsize(out) > 0, f"{label}: no output file"):
        return
    rc, v, _ = t.verify_json(out)
    t.check(rc == 0 and v and v["ok"], f"{label}: mlpd verify failed: {v and v['errors'][:5]}")
    if not v:
        return
    counts = v["counts"]
    for opt, kinds in MUST_HAVE.items():
        if opt in opts.split(",") or (opt == "heapshot" and "heapshot" in opts) or \
           (opt == "sample" and "sample" in opts) or (opt == "exception" and "exception" in opts):
            for k in kinds:
                t.check(counts.get(k, 0) > 0, f"{label}: no {k} events in the file")

    lrc, lcounts, _, lp = t.log_count(out)
    if t.check(lrc == 0, f"{label}: LogCount failed: {lp.stderr.strip()[:300]}"):
        t.check(lcounts == counts, f"{label}: per-kind counts differ from Mono.Profiler.Log: "
                f"ours-only {sorted(set(counts.items()) - set(lcounts.items()))}, "
                f"theirs-only {sorted(set(lcounts.items()) - set(counts.items()))}")

    orc, ours, op = t.our_totals(out)
    t.check(orc == 0, f"{label}: mlpd_totals failed: {op.stderr[:300]}")
    mrc, theirs, mp = t.mprof_report(out, "--verbose")
    t.check(mrc == 0, f"{label}: mprof-report exited {mrc}: {mp.stderr[:300]}")
    for key in compare:
        t.check(key in theirs, f"{label}: mprof-report printed no total for {key}")
        if key in theirs:
            t.check(ours.get(key) == theirs[key],
                    f"{label}: {key}: mlpd {ours.get(key)} != mprof-report {theirs[key]}")
    print(f"ok  {label}: {v['buffers']} buffers, {sum(counts.values())} events; "
          + ", ".join(f"{k}={ours.get(k)}" for k in compare), flush=True)
    return out


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-mono-files-") as workdir:
        # Mono's log profiler sleeps ~1 s at exit, so runs overlap well even on 2 cores.
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda c: profile(c, workdir), CASES))
        for case, out, proc in results:
            check_case(case, out, proc)

        # The same file through standard input, plain and gzip, gives the same counts.
        plain = results[0][1]
        rc, ref, _ = t.verify_json(plain)
        with open(plain, "rb") as f:
            data = f.read()
        p = t.run([t.MLPD, "verify", "--json", "-"], input_bytes=data)
        import json
        got = json.loads(p.stdout.splitlines()[0])
        t.check(p.returncode == 0 and got["counts"] == ref["counts"], "stdin: counts differ from the file's")
        import gzip
        p = t.run([t.MLPD, "verify", "--json", "-"], input_bytes=gzip.compress(data))
        got = json.loads(p.stdout.splitlines()[0])
        t.check(p.returncode == 0 and got["counts"] == ref["counts"], "gzip on stdin: counts differ from the file's")
    t.finish("mono_files")


if __name__ == "__main__":
    main()
