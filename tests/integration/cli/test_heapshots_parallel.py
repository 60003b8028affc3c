#!/usr/bin/env python3
"""`mlpd heapshots` on every core (issue 25: `--jobs N`) gives what the one-thread read (`--jobs 1`)
gives, byte for byte: the listing (text and `--json`) and `--diff 0 1` (text and `--json`, `--all`)
with --jobs 1, 2 and 4 -- standard output, standard error and exit code -- on
  * heapshot files of Mono's own log profiler and of our agent (several heapshots; with allocations
    in between; a large heap of heapshot_live.exe), also through standard input and as gzip;
  * a hand-made file of two threads whose heapshots span buffers, with objects outside any heapshot,
    a second heap_start that replaces the open heapshot of its thread, continuation chunks and roots
    (more buffers than the read-ahead ring holds);
  * the corruption corpus's damage on the heapshot file (truncations, byte flips, hostile files).
"""
import gzip
import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "corruption"))
from mlpdtest import MLPD, MONO, check, finish, mono_log_profile, program, run  # noqa: E402
import corruption_test as ct  # noqa: E402

AGENT = os.environ.get("MLPD_AGENT", "libmlpd.so")
WORK = os.path.join(os.getcwd(), "heapshots-parallel-work")
JOBS = ("1", "2", "4")
compared = 0


def outcome(args, path, jobs, stdin=None):
    p = run([MLPD, "heapshots", "--jobs", jobs, *args, path], timeout=300, input_bytes=stdin)
    return p.returncode, p.stdout, p.stderr


def compare(name, args, path, stdin=None):
    global compared
    first = outcome(args, path, JOBS[0], stdin)
    for jobs in JOBS[1:]:
        other = outcome(args, path, jobs, stdin)
        what = f"{name}: mlpd heapshots {' '.join(args)}: --jobs {jobs} vs --jobs 1"
        check(other[0] == first[0], f"{what}: exit {other[0]} vs {first[0]}")
        check(other[1] == first[1], f"{what}: standard output differs ({len(other[1])} vs {len(first[1])} chars)")
        check(other[2] == first[2], f"{what}: standard error differs: {other[2][:200]!r} vs {first[2][:200]!r}")
        compared += 1
    return first


def compare_all(name, path, stdin=None):
    r = compare(name, ["--json"], path, stdin)
    check(r[0] in (0, 1), f"{name}: heapshots --json: exit {r[0]}: {r[2][:200]}")
    compare(name, [], path, stdin)
    shots = sum(1 for line in r[1].splitlines() if line.startswith("{"))
    if shots >= 2:
        compare(name, ["--diff", "0", "1", "--json", "--all"], path, stdin)
        compare(name, ["--diff", "0", str(shots - 1)], path, stdin)
    return shots


def log_profile(prog, options, out, args=(), env=None):
    p = mono_log_profile(prog, options, out, timeout=300, args=args, extra_env=env)
    check(p.returncode in (0, 3) and os.path.exists(out), f"{prog} under Mono's profiler: exit {p.returncode}")
    return out


def agent_profile(prog, options, out, args=(), env=None):
    e = dict(os.environ)
    e["LD_PRELOAD"] = AGENT
    e["MLPD_OPTIONS"] = f"{options},output={out}"
    if env:
        e.update(env)
    p = run([MONO, program(prog), *args], env=e, timeout=300)
    check(p.returncode in (0, 3) and os.path.exists(out), f"{prog} under the agent: exit {p.returncode}: {p.stderr[:300]}")
    return out


def sleb(v):
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if (v == 0 and not byte & 0x40) or (v == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def handmade(header):
    """Two threads whose heapshots span buffers; strays, a replaced heapshot, chunks, roots."""
    def buf(thread, payload):
        return struct.pack("<IIQqqQq", ct.BUFFER_ID, len(payload), 1000, 0x7F0000000000, 0, thread,
                           0x7F0000004000) + payload

    def start():
        return b"\x06" + ct.uleb(5)

    def end():
        return b"\x16" + ct.uleb(5)

    def objects(rng, n):
        out = b""
        for _ in range(n):
            size = rng.choice((0, 16, 24, 32, 4000))  # 0: a continuation chunk, not counted
            out += b"\x26" + ct.uleb(1) + sleb(rng.randrange(1, 1000)) + sleb(0x100 * rng.randrange(1, 12))
            out += ct.uleb(size) + b"\x00" + ct.uleb(1) + ct.uleb(8) + sleb(3)
        return out

    def roots(n):
        return b"\x36" + ct.uleb(1) + ct.uleb(n) + (sleb(0x40) + sleb(2)) * n

    rng = random.Random(25)
    a, b = 0x1111, 0x2222
    data = header
    for _ in range(12):
        data += buf(a, start() + objects(rng, 30) + roots(3))
        data += buf(b, objects(rng, 5) + start() + objects(rng, 20))       # strays, then b's heapshot
        data += buf(a, objects(rng, 10) + start() + objects(rng, 10) + roots(2) + end() + objects(rng, 4) + roots(1))
        data += buf(b, objects(rng, 7) + roots(4) + end())
        data += buf(a, roots(1) + objects(rng, 3))                           # strays of no heapshot
    data += buf(a, start() + objects(rng, 8))                                # open at the end: incomplete
    return data


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    live_env = {"MONO_GC_PARAMS": "nursery-size=64m"}
    files = [
        ("mono heapshot", log_profile("heapshot", "heapshot", os.path.join(WORK, "heap.mlpd"))),
        ("mono heapshot,alloc", log_profile("heapshot", "heapshot,alloc", os.path.join(WORK, "heap-alloc.mlpd"))),
        ("mono heapshot_live", log_profile("heapshot_live", "heapshot", os.path.join(WORK, "live.mlpd"),
                                           ("collect", "3"), live_env)),
        ("agent heapshot", agent_profile("heapshot", "heapshot", os.path.join(WORK, "a-heap.mlpd"))),
        ("agent heapshot_live trigger", agent_profile("heapshot_live", "heapshot=ondemand",
                                                      os.path.join(WORK, "a-live.mlpd"), ("trigger", "2"), live_env)),
    ]
    for name, path in files:
        shots = compare_all(name, path)
        check(shots >= 1, f"{name}: no heapshot listed")
    heap = files[0][1]
    with open(heap, "rb") as f:
        heap_data = f.read()
    # Standard input, and gzip (read on one thread: the same again).
    compare_all("stdin", "-", heap_data)
    gz = os.path.join(WORK, "heap.mlpd.gz")
    with open(gz, "wb") as f:
        f.write(gzip.compress(heap_data))
    compare_all("gzip", gz)

    header_end, _ = ct.layout(heap_data)
    made = os.path.join(WORK, "handmade.mlpd")
    with open(made, "wb") as f:
        f.write(handmade(heap_data[:header_end]))
    shots = compare_all("handmade", made)
    check(shots == 12 * 3 + 1, f"handmade: {shots} heapshots listed, expected 37")
    listing = outcome([], made, "1")[1]
    check(listing.count("(incomplete: no heap_end)") == 13,
          f"handmade: {listing.count('(incomplete: no heap_end)')} incomplete heapshots, expected 13")

    # The corruption corpus on the heapshot file (a part of it: every kind of damage, kept short).
    rng = random.Random(ct.SEED + 2525)
    cases = ct.truncations("truncate-heapshot", heap_data, rng, 25)[:25]
    cases += ct.flips("flip-heapshot", heap_data, rng, 40)
    cases += ct.hostile_cases(heap_data[:header_end])
    with open(made, "rb") as f:
        made_data = f.read()
    cases += ct.truncations("truncate-handmade", made_data, rng, 10)[:10]
    cases += ct.flips("flip-handmade", made_data, rng, 20)
    for i, case in enumerate(cases):
        path = os.path.join(WORK, f"case-{i}.mlpd")
        with open(path, "wb") as f:
            f.write(case.data)
        compare_all(f"corpus {case.group} {case.name}", path)
        os.remove(path)
    print(f"{compared} comparisons of --jobs 2 and 4 against --jobs 1 ({len(files)} files, {len(cases)} corpus cases)")
    finish("cli_heapshots_parallel")


if __name__ == "__main__":
    main()
