#!/usr/bin/env python3
"""Stress: many short-lived threads calling, allocating, throwing, locking and creating GC handles while
collections run, under several event sets, ten times each. Every run: output and exit status unchanged,
`mlpd verify --strict` passes, mprof-report reads the file without a diagnostic."""
import concurrent.futures
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
OPTION_SETS = [
    "calls,alloc",
    "legacy,gcalloc,calls",
    "alloc,monitor,gchandle,finalization,exception",
    "nodefaults,gcalloc,gchandle,monitor,exception,flush=10",
    "calls,alloc,zip",
]
RUNS = 10
BAD = ["unmatched leave", "unresolved class", "unknown method", "unhandled profiler event", "went backwards",
       "Incorrect buffer id"]


def one(args):
    opts, i, workdir, expected = args
    out = os.path.join(workdir, f"stress-{abs(hash(opts))}-{i}.mlpd" + (".gz" if "zip" in opts else ""))
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD")}
    env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{opts},output={out}")
    p = t.run([t.MONO, t.program("stress"), "10"], env=env, timeout=120)
    label = f"[{opts}] run {i}"
    t.check((p.stdout, p.returncode) == expected, f"{label}: output/status changed: {p.returncode} {p.stdout!r}")
    t.check("mlpd:" not in p.stderr, f"{label}: agent message: {p.stderr[-200:]}")
    rc, v, _ = t.verify_json(out, strict=True)
    t.check(rc == 0 and v and v["ok"], f"{label}: verify --strict: {v and v['errors'][:3]}")
    rep = t.run([t.MPROF_REPORT, out], timeout=120)
    t.check(rep.returncode == 0, f"{label}: mprof-report exited {rep.returncode}")
    for word in BAD:
        t.check(word not in rep.stdout + rep.stderr, f"{label}: mprof-report says '{word}'")
    os.remove(out)


def main():
    plain = t.run([t.MONO, t.program("stress"), "10"], timeout=120)
    expected = (plain.stdout, plain.returncode)
    t.check(plain.returncode == 0, "stress: plain run failed")
    with tempfile.TemporaryDirectory(prefix="mlpd-stress-") as workdir:
        jobs = [(o, i, workdir, expected) for o in OPTION_SETS for i in range(RUNS)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(one, jobs))
    print(f"{len(OPTION_SETS) * RUNS} stress runs", flush=True)
    t.finish("stress")


if __name__ == "__main__":
    main()
