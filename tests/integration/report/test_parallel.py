#!/usr/bin/env python3
"""The parallel build of the profile model (issue 25: `--jobs N`) gives what the one-thread build
(`--jobs 1`) gives, byte for byte: `report` (text and `--json` with every line of every ranking),
every `export` format and `--what`, and `diff`, with --jobs 1, 2 and 4, on
  * files of programs with several threads, written by Mono's own log profiler and by our agent
    (calls, allocations with backtraces, samples, exceptions, monitors, heapshots), also with a time
    window, and as gzip;
  * a part of the corruption corpus (tests/integration/corruption: truncations, byte flips and
    hand-made hostile files) and cuts of an allocation file: the same problems on stderr, the same
    exit code, the same output.
"""
import gzip
import os
import random
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "corruption"))
from mlpdtest import MLPD, MONO, check, finish, mono_log_profile, program, run  # noqa: E402
import corruption_test as ct  # noqa: E402

AGENT = os.environ.get("MLPD_AGENT", "libmlpd.so")
WORK = os.path.join(os.getcwd(), "parallel-work")
JOBS = ("1", "2", "4")
compared = 0


def agent_profile(prog, options, out, args=()):
    env = dict(os.environ)
    env["LD_PRELOAD"] = AGENT
    env["MLPD_OPTIONS"] = f"{options},output={out}"
    p = run([MONO, program(prog), *args], env=env, timeout=300)
    check(p.returncode == 0 and os.path.exists(out), f"{prog} under the agent: exit {p.returncode}: {p.stderr[:300]}")
    return out


def log_profile(prog, options, out, args=()):
    p = mono_log_profile(prog, options, out, timeout=300, args=args)
    check(p.returncode == 0 and os.path.exists(out), f"{prog} under Mono's profiler: exit {p.returncode}")
    return out


def outcome(cmd, path, jobs, out_ext=None):
    """(exit code, stdout, stderr, output file bytes) of `mlpd CMD --jobs N PATH`."""
    extra = []
    out = None
    if out_ext:
        out = os.path.join(WORK, f"out-{jobs}{out_ext}")
        if os.path.exists(out):
            os.remove(out)
        extra = ["-o", out]
    paths = path if isinstance(path, list) else [path]
    p = run([MLPD, *cmd, "--jobs", jobs, *extra, *paths], timeout=300)
    data = b""
    if out and os.path.exists(out):
        with open(out, "rb") as f:
            data = f.read()
        if out_ext == ".pb.gz":
            data = gzip.decompress(data)  # the gzip header holds no time, but compare the profile itself
    return p.returncode, p.stdout, p.stderr.replace(f"--jobs {jobs}", ""), data


def compare(name, cmd, path, out_ext=None):
    global compared
    first = outcome(cmd, path, JOBS[0], out_ext)
    for jobs in JOBS[1:]:
        other = outcome(cmd, path, jobs, out_ext)
        what = f"{name}: mlpd {' '.join(cmd)}{' -o X' + out_ext if out_ext else ''}: --jobs {jobs} vs --jobs 1"
        check(other[0] == first[0], f"{what}: exit {other[0]} vs {first[0]}")
        check(other[1] == first[1], f"{what}: standard output differs ({len(other[1])} vs {len(first[1])} chars)")
        check(other[2] == first[2], f"{what}: standard error differs: {other[2][:200]!r} vs {first[2][:200]!r}")
        check(other[3] == first[3], f"{what}: the output file differs ({len(other[3])} vs {len(first[3])} bytes)")
        compared += 1
    return first


def compare_top(name, path):
    """`mlpd top` on the whole file of a gone writer (its first read on every core): the final view
    (less its heading line: time and rate), the exit code and stderr are those of --jobs 1."""
    global compared
    if isinstance(path, list):
        return
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":  # gzip (zip): its pid cannot be patched in place; read by one thread
            return
    dead = os.path.join(WORK, "top.mlpd")
    shutil.copyfile(path, dead)
    gone = subprocess.Popen(["true"])
    gone.wait()
    with open(dead, "r+b") as f:  # the header's pid (bytes 32..35): one that is surely gone
        f.seek(32)
        f.write(struct.pack("<i", gone.pid))
    seen = []
    for jobs in JOBS:
        p = run([MLPD, "top", "--jobs", jobs, "--top", "20", dead], timeout=300)
        seen.append((p.returncode, p.stdout.split("== mlpd top: ")[-1].split("\n", 1)[-1], p.stderr))
        check("program exited (final)" in p.stdout, f"{name}: top --jobs {jobs} did not end with the final view")
    for jobs, other in zip(JOBS[1:], seen[1:]):
        check(other == seen[0], f"{name}: mlpd top --jobs {jobs} vs --jobs 1: exit {other[0]} vs {seen[0][0]}, "
              f"view {len(other[1])} vs {len(seen[0][1])} chars, stderr {other[2][:200]!r} vs {seen[0][2][:200]!r}")
        compared += 1


def compare_all(name, path, whats):
    r = compare(name, ["report", "--json", "--top", "1000000"], path)
    check(r[0] in (0, 1) and r[1].startswith("{"), f"{name}: report --json: exit {r[0]}: {r[2][:200]}")
    compare(name, ["report", "--top", "50"], path)
    for what in whats:
        compare(name, ["export", "--what", what], path, ".collapsed")
        compare(name, ["export", "--what", what, "--threads"], path, ".collapsed")
        compare(name, ["export", "--what", what], path, ".pb.gz")
    compare(name, ["export", "--what", whats[0]], path, ".html")
    compare(name, ["export", "--what", whats[0]], path, ".speedscope.json")
    compare(name, ["export"], path, ".trace.json")
    compare_top(name, path)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    files = [
        ("mono threads calls,alloc", log_profile("threads", "calls,alloc", os.path.join(WORK, "threads.mlpd")),
         ["calls", "alloc", "alloc-bytes"]),
        ("mono allocthreads alloc", log_profile("allocthreads", "alloc", os.path.join(WORK, "allocthreads.mlpd"),
                                                 ("4", "20000")), ["alloc", "alloc-bytes"]),
        ("mono exceptions", log_profile("exceptions", "calls,alloc,exception", os.path.join(WORK, "exc.mlpd")),
         ["calls", "exceptions", "alloc"]),
        ("mono monitors", log_profile("monitors", "monitor,calls", os.path.join(WORK, "monitors.mlpd")),
         ["monitor", "calls"]),
        ("mono sample", log_profile("sample", "sample,alloc", os.path.join(WORK, "sample.mlpd")), ["cpu", "alloc"]),
        ("mono heapshot", log_profile("heapshot", "heapshot,alloc", os.path.join(WORK, "heap.mlpd")), ["alloc"]),
        ("agent threads calls,alloc", agent_profile("threads", "calls,alloc", os.path.join(WORK, "a-threads.mlpd")),
         ["calls", "alloc"]),
        ("agent allocthreads", agent_profile("allocthreads", "alloc", os.path.join(WORK, "a-allocthreads.mlpd"),
                                             ("4", "20000")), ["alloc", "alloc-bytes"]),
        ("agent samplecalls", agent_profile("samplecalls", "sample=1000,calls", os.path.join(WORK, "a-sample.mlpd")),
         ["cpu", "calls"]),
        ("agent zip", agent_profile("threads", "calls,zip", os.path.join(WORK, "a-zip.mlpd")), ["calls"]),
    ]
    for name, path, whats in files:
        compare_all(name, path, whats)
    # A time window, several files of one run read as one, and diff.
    threads = files[0][1]
    compare("window", ["report", "--json", "--top", "1000000", "--from", "0.05", "--to", "0.5"], threads)
    compare("window", ["export", "--what", "calls", "--from", "0.05"], threads, ".collapsed")
    compare("two files", ["report", "--json", "--top", "1000000"], [threads, files[6][1]])
    compare("diff", ["diff", "--what", "calls"], [threads, files[6][1]])

    # The corruption corpus (a part of it: every kind of damage, kept short).
    plain = files[2][1]
    with open(plain, "rb") as f:
        data = f.read()
    with open(files[4][1], "rb") as f:
        sample = f.read()
    rng = random.Random(ct.SEED + 25)
    header_end, _ = ct.layout(data)
    cases = ct.truncations("truncate-plain", data, rng, 60)[:20]
    cases += ct.flips("flip-plain", data, rng, 30)
    cases += ct.flips("flip-sample", sample, rng, 15)
    cases += ct.hostile_cases(data[:header_end])
    # Cuts of the allocation file (Mono's log:alloc, no calls): a thread's first and last times and the
    # file's come from its allocations, folded on the workers (their times applied at the replay).
    with open(files[1][1], "rb") as f:
        allocs = f.read()
    for n in sorted(rng.sample(range(len(allocs) // 4, len(allocs)), 6)):
        cases.append(ct.Case("cut-alloc", f"truncated-at-{n}", allocs[:n], "error", n))
    for i, case in enumerate(cases):
        path = os.path.join(WORK, f"case-{i}.mlpd")
        with open(path, "wb") as f:
            f.write(case.data)
        name = f"corpus {case.group} {case.name}"
        compare(name, ["report", "--json", "--top", "1000000"], path)
        compare(name, ["export", "--what", "calls"], path, ".collapsed")
        compare(name, ["export", "--what", "alloc"], path, ".pb.gz")
        os.remove(path)
    print(f"{compared} comparisons of --jobs 2 and 4 against --jobs 1 ({len(files)} files, {len(cases)} corpus cases)")
    finish("report_parallel")


if __name__ == "__main__":
    main()
