#!/usr/bin/env python3
"""`mlpd dump`'s fast formatter writes exactly what the old one wrote.

mlpd_dump_reference (tests/tools/dump_reference/) is the formatter as it was before session 5's fast
one, kept verbatim. Mono 6.8's log profiler records the test programs with options that together
produce every event kind Mono writes (calls, allocations, exceptions, samples and unmanaged symbols,
counters, heapshots, GC moves and handles, finalization, monitors, threads with names, appdomains
and contexts), one file each; plus a gzip copy, a cut copy and a damaged copy (problems in the
middle). For each file, text and JSON, `mlpd dump` must write the reference's bytes and exit with its
status, whatever the number of threads (MLPD_DUMP_THREADS=1, 2, the default) and also when each
worker's text block is tiny (MLPD_DUMP_JOB_TEXT=4096, 300: most buffers are then finished in file
order, from the event where the worker stopped).
"""
import gzip
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

REFERENCE = os.path.join(t.TOOLS, "mlpd_dump_reference")

RECORDINGS = [
    ("calls", "calls,alloc"),
    ("alloc", "alloc"),
    ("exceptions", "exception,calls"),
    ("sample", "sample,counter"),
    ("heapshot", "heapshot"),
    ("gcmoves", "gc,gcmove"),
    ("threads", "alloc"),
    ("appdomain", "alloc"),
    ("monitors", "monitor"),
    ("gchandles", "gchandle"),
    ("finalizers", "finalization"),
]

MODES = [
    {"MLPD_DUMP_THREADS": "1"},
    {"MLPD_DUMP_THREADS": "2"},
    {},
    {"MLPD_DUMP_THREADS": "2", "MLPD_DUMP_JOB_TEXT": "4096"},
    {"MLPD_DUMP_THREADS": "3", "MLPD_DUMP_JOB_TEXT": "300"},
]


def run_bytes(cmd, env_extra=None):
    env = dict(os.environ)
    env.pop("MLPD_DUMP_THREADS", None)
    env.pop("MLPD_DUMP_JOB_TEXT", None)
    env.update(env_extra or {})
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, env=env)
    return p.returncode, p.stdout


def first_difference(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i:i + 65536] == b[i:i + 65536]:
        i += 65536
    i = next((k for k in range(i, min(n, i + 65536)) if a[k] != b[k]), min(n, i + 65536))
    line = a.count(b"\n", 0, i) + 1
    return f"first difference at byte {i} (line {line}): {a[i - 80:i + 80]!r} vs {b[i - 80:i + 80]!r}"


def compare(label, path):
    for json_flag in ([], ["--json"]):
        rc_ref, ref = run_bytes([REFERENCE, *json_flag, path])
        what = f"{label}{' --json' if json_flag else ''}"
        t.check(len(ref) > 0, f"{what}: the reference wrote nothing (exit {rc_ref})")
        for mode in MODES:
            rc, out = run_bytes([t.MLPD, "dump", *json_flag, path], mode)
            desc = " ".join(f"{k}={v}" for k, v in mode.items()) or "default threads"
            ok = t.check(rc == rc_ref, f"{what} ({desc}): exit {rc}, the reference's {rc_ref}")
            ok = t.check(out == ref, f"{what} ({desc}): {len(out)} bytes differ from the reference's "
                         f"{len(ref)}: {first_difference(out, ref)}") and ok
            if not ok:
                return
        print(f"ok  {what}: {len(ref)} bytes identical in {len(MODES)} modes (exit {rc_ref})", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-dumpref-") as workdir:
        files = []
        for prog, options in RECORDINGS:
            path = os.path.join(workdir, f"{prog}.mlpd")
            p = t.mono_log_profile(prog, options, path)
            if t.check(p.returncode == 0 and os.path.exists(path),
                       f"{prog} under log:{options} failed: {p.stderr[:300]}"):
                files.append((f"{prog} ({options})", path))
        # Damaged copies of the threads file (several threads' buffers): gzip, cut, flipped bytes.
        with open(os.path.join(workdir, "threads.mlpd"), "rb") as f:
            data = f.read()
        gz = os.path.join(workdir, "threads.mlpd.gz")
        with open(gz, "wb") as f:
            f.write(gzip.compress(data))
        files.append(("threads gzip", gz))
        cut = os.path.join(workdir, "cut.mlpd")
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        files.append(("threads cut at 2/3", cut))
        flipped = bytearray(data)
        for k in range(1, 40):  # bytes inside buffers' events: problems in the middle, decoding goes on
            flipped[len(data) * k // 41] ^= 0x5A
        bad = os.path.join(workdir, "flipped.mlpd")
        with open(bad, "wb") as f:
            f.write(bytes(flipped))
        files.append(("threads with flipped bytes", bad))
        for label, path in files:
            compare(label, path)
    t.finish("dump_reference")


if __name__ == "__main__":
    main()
