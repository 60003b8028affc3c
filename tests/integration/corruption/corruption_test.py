#!/usr/bin/env python3
"""Truncated, corrupted and hostile files: `mlpd verify` reports them, never crashes or hangs.

Real files come from Mono 6.8's own log profiler (plain, `zip`, and a heapshot run). Then:
  (a) truncations: every offset of the file header, offsets in and around every buffer header and
      ~200 spread offsets of the plain file, ~130 offsets of the gzip file, ~80 of the heapshot file.
      `mlpd verify` must exit 1 and print `FILE: offset N (header|buffer K): ...` with N <= the
      truncated length (for the gzip file: N <= the uncompressed size). A cut exactly at a buffer
      boundary leaves a valid shorter file (the format has no end marker): exit 0 is expected there.
      A gzip file cut inside a member (a killed `zip` run), and the zip file's data cut inside a buffer
      and gzipped again (a kill inside a flush round of more than 32 MiB): exit 0 with one warning line.
  (b) ~500 random single- and multi-byte changes of the plain file (plus 100 of the heapshot file),
      fixed seed: exit 0 or 1 only (no signal, no other code), within a per-run timeout, nothing on
      stderr, and with exit 1 every line has the offset form with an offset inside the file.
  (c) hand-made hostile files: huge buffer lengths, counts of 2^60, a 1 GB claimed header string,
      endless LEB128 continuations, ...: exit 1 with an offset line, quickly, in bounded memory.
The truncated and changed heapshot files also go through `mlpd heapshots --retained`, `--dominators` and
`--paths Leaf` (the retention analysis, issue 24): exit 0 or 1 only, no hang, every stderr line either
the offset form or one line naming a heapshot too large.
Every `mlpd verify` runs with a 10 s timeout and (unless mlpd is built with a sanitizer) a 1 GiB
address-space limit, two at a time. A failing case's file is kept in corruption-work/failures/.
Environment: MLPD, MLPD_PROGRAMS, MONO (set by tests/integration/CMakeLists.txt).
"""
import concurrent.futures
import gzip
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import time

MLPD = os.environ.get("MLPD", "mlpd")
MONO = os.environ.get("MONO", "mono")
PROGRAMS = os.environ.get("MLPD_PROGRAMS", ".")
WORK = os.path.join(os.getcwd(), "corruption-work")
FAILED_DIR = os.path.join(WORK, "failures")
SEED = 20170317
RUN_TIMEOUT = 10  # seconds per `mlpd verify`: more than that is a hang
WORKERS = 2
MEMORY_LIMIT = 1 << 30  # address space of each `mlpd verify` (bytes)

FILE_ID = 0x4D505A01
BUFFER_ID = 0x4D504C01
BUFFER_HEADER = 48

failures = []
stats = {}  # group -> [cases, detected]


def fail(message):
    failures.append(message)
    print("FAIL: " + message, flush=True)


# ---------------------------------------------------------------------------------------------
# Real files


def mono_profile(program, options, out):
    path = os.path.join(WORK, out)
    cmd = [MONO, f"--profile=log:{options},output={path}", os.path.join(PROGRAMS, program + ".exe")]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0 or not os.path.exists(path):
        sys.exit(f"cannot produce {out}: {' '.join(cmd)} exited {p.returncode}: "
                 f"{p.stderr.decode('utf-8', 'replace')[-2000:]}")
    return path


def layout(data):
    """(end of the file header, [(offset, length) of every buffer]) of a valid plain file."""
    if struct.unpack_from("<I", data, 0)[0] != FILE_ID:
        sys.exit("not a plain mlpd file")
    pos = 38
    for _ in range(3):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4 + n
    header_end = pos
    buffers = []
    while pos < len(data):
        ident, length = struct.unpack_from("<II", data, pos)
        if ident != BUFFER_ID:
            sys.exit(f"unexpected buffer id at {pos}")
        buffers.append((pos, length))
        pos += BUFFER_HEADER + length
    if pos != len(data):
        sys.exit("the last buffer runs past the end of the file")
    return header_end, buffers


# ---------------------------------------------------------------------------------------------
# Running `mlpd verify` on one case


class Case:
    """One file to verify. expect: "error" (exit 1 with offset lines), "ok" (exit 0),
    "any" (exit 0 or 1; lines checked either way), "truncated" (a cut gzip file: exit 0 with one warning line,
    or exit 1 when the cut leaves no file header), "warned" (exit 0 with one warning line). max_offset bounds
    the reported offsets."""

    def __init__(self, group, name, data, expect, max_offset):
        self.group, self.name, self.data = group, name, data
        self.expect, self.max_offset = expect, max_offset


def problem_regex(path):
    return re.compile(r"^" + re.escape(path) + r": offset (\d+) \((?:buffer \d+|header)\): \S")


def run_case(index, case):
    """Returns (case, detected, offsets reported, error message or None)."""
    path = os.path.join(WORK, f"case-{index}.mlpd")
    with open(path, "wb") as f:
        f.write(case.data)
    try:
        p = subprocess.run([MLPD, "verify", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return case, False, [], keep(path, case, f"no answer within {RUN_TIMEOUT} s (hang)")
    out = p.stdout.decode("utf-8", "replace").splitlines()
    err = p.stderr.decode("utf-8", "replace").strip()
    rc = p.returncode
    problem = None
    offsets = []
    if rc < 0:
        problem = f"killed by signal {-rc}"
    elif rc not in (0, 1):
        problem = f"exit code {rc}"
    elif err:
        problem = f"wrote to stderr: {err[:500]}"
    elif rc == 0 and case.expect in ("truncated", "warned"):
        # A gzip file cut inside a member (a killed `zip` run): valid up to the cut, one warning line
        # naming the offset, then the ok line.
        warn = re.compile(r"^" + re.escape(path) + r": warning: offset (\d+) \((?:buffer \d+|header)\): truncated: ")
        m = warn.match(out[0]) if out else None
        if len(out) != 2 or not m or not out[1].startswith(path + ": ok: "):
            problem = f"a cut gzip file without exactly one warning and the ok line: {out[:3]}"
        elif int(m.group(1)) > case.max_offset:
            problem = f"warning offset {m.group(1)} beyond {case.max_offset}: {out[0]!r}"
    elif rc == 0:
        if case.expect == "error":
            problem = "not detected (exit 0)"
        elif len(out) != 1 or not out[0].startswith(path + ": ok: "):
            problem = f"exit 0 without the ok line: {out[:3]}"
    else:
        if case.expect in ("ok", "warned"):
            problem = f"a valid file (or one cut as a killed writer leaves it) was rejected: {out[:3]}"
        elif not out:
            problem = "exit 1 without a problem line"
        else:
            rx = problem_regex(path)
            for line in out:
                m = rx.match(line)
                if not m:
                    problem = f"line without the offset form: {line!r}"
                    break
                offsets.append(int(m.group(1)))
                if offsets[-1] > case.max_offset:
                    problem = f"offset {m.group(1)} beyond {case.max_offset}: {line!r}"
                    break
    if not problem and case.group.endswith("-heapshot"):
        problem = run_retention(path)
    if problem:
        return case, rc == 1, offsets, keep(path, case, problem)
    os.remove(path)
    return case, rc == 1, offsets, None


RETENTION_VIEWS = (["--retained"], ["--dominators", "--min-bytes", "0"], ["--paths", "Leaf", "--max", "3"])


def run_retention(path):
    """The retention views on a damaged heapshot file: a problem description, or None."""
    rx = problem_regex(path)
    for view in RETENTION_VIEWS:
        try:
            p = subprocess.run([MLPD, "heapshots", *view, path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"heapshots {' '.join(view)}: no answer within {RUN_TIMEOUT} s (hang)"
        if p.returncode not in (0, 1):
            return f"heapshots {' '.join(view)}: exit code {p.returncode}"
        for line in p.stderr.decode("utf-8", "replace").splitlines():
            if not rx.match(line) and not re.match(r"^mlpd heapshots: heapshot \d+ (has|is too large)", line):
                return f"heapshots {' '.join(view)}: unexpected stderr line {line!r}"
    return None


def keep(path, case, problem):
    os.makedirs(FAILED_DIR, exist_ok=True)
    kept = os.path.join(FAILED_DIR, f"{case.group}-{case.name}.mlpd".replace("/", "_").replace(" ", "_"))
    shutil.move(path, kept)
    return f"{case.group} {case.name}: {problem} (file kept: {kept})"


def run_all(cases):
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for case, detected, offsets, error in pool.map(lambda ic: run_case(*ic), enumerate(cases)):
            s = stats.setdefault(case.group, [0, 0, 0, 0])
            s[0] += 1
            s[1] += detected
            if error:
                s[2] += 1
                fail(error)
            # A truncated plain file should be reported right where it ends.
            s[3] += bool(offsets) and max(offsets) == case.max_offset


# ---------------------------------------------------------------------------------------------
# (a) truncations


def truncations(group, data, rng, spread, around_buffers=None, max_buffers=None):
    header_end, buffers = layout(data)
    boundaries = {header_end} | {off + BUFFER_HEADER + n for off, n in buffers}
    offsets = set(range(0, header_end + 1))
    for off, _ in buffers[:max_buffers]:
        for d in around_buffers or (-1, 0, 1, 2, 4, 7, 8, 16, 24, 32, 40, 47, 48, 49, 50):
            offsets.add(off + d)
    offsets |= set(rng.sample(range(header_end, len(data)), spread))
    cases = []
    for n in sorted(o for o in offsets if 0 <= o < len(data)):
        expect = "ok" if n in boundaries else "error"
        cases.append(Case(group, f"truncated-at-{n}", data[:n], expect, n))
    return cases


def gzip_truncations(group, compressed, uncompressed_size, rng, spread):
    offsets = set(range(0, 40)) | set(range(len(compressed) - 10, len(compressed)))
    offsets |= set(rng.sample(range(40, len(compressed) - 10), spread))
    # Cut inside the gzip data: a truncation warning with exit 0 (the data before the cut is read), or an
    # error when the cut leaves no complete file header.
    return [Case(group, f"truncated-at-{n}", compressed[:n], "truncated", uncompressed_size) for n in sorted(offsets)]


def regzipped_cuts(group, uncompressed, rng, count):
    """A `zip` run killed inside a flush round of more than 32 MiB: the agent writes such a round through
    member by member (each member ends where its 1 MiB stage filled, mid-buffer), so the file is a complete
    gzip stream whose last mlpd buffer is cut. The data of the zip file, cut inside a buffer and gzipped
    again as one member and as two (the first ending mid-buffer): exit 0 with one truncation warning."""
    header_end, buffers = layout(uncompressed)
    cases = []
    for off, n in rng.sample(buffers, min(count, len(buffers))):
        cut = off + rng.randrange(1, BUFFER_HEADER + n)  # inside the buffer's header or data
        split = rng.randrange(header_end, cut)
        one = gzip.compress(uncompressed[:cut])
        two = gzip.compress(uncompressed[:split]) + gzip.compress(uncompressed[split:cut])
        cases.append(Case(group, f"one-member-cut-at-{cut}", one, "warned", cut))
        cases.append(Case(group, f"two-members-cut-at-{cut}", two, "warned", cut))
    return cases


# ---------------------------------------------------------------------------------------------
# (b) random changes


def flips(group, data, rng, count):
    cases = []
    for i in range(count):
        b = bytearray(data)
        kind = i % 4
        if kind == 0:  # one byte, one bit
            pos = rng.randrange(len(b))
            b[pos] ^= 1 << rng.randrange(8)
            what = f"bit-{pos}"
        elif kind == 1:  # one byte, any new value
            pos = rng.randrange(len(b))
            b[pos] ^= rng.randrange(1, 256)
            what = f"byte-{pos}"
        elif kind == 2:  # several scattered bytes
            positions = sorted(rng.sample(range(len(b)), rng.randrange(2, 9)))
            for pos in positions:
                b[pos] ^= rng.randrange(1, 256)
            what = "bytes-" + "-".join(map(str, positions))
        else:  # a run of random bytes
            pos = rng.randrange(len(b))
            run = min(rng.randrange(2, 33), len(b) - pos)
            b[pos:pos + run] = bytes(rng.randrange(256) for _ in range(run))
            what = f"run-{pos}+{run}"
        cases.append(Case(group, f"{i}-{what}", bytes(b), "any", len(data)))
    return cases


# ---------------------------------------------------------------------------------------------
# (c) hostile files


def uleb(v):
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def buffer(payload, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IIQqqQq", BUFFER_ID, n, 1000, 0x7F0000000000, 0, 0x1234, 0x7F0000004000) + payload


def header_with_strings(args_len=None, args=b"log:calls\0"):
    fixed = struct.pack("<IBBBBQQiiiH", FILE_ID, 3, 0, 17, 8, 1700000000000, 5000000, 0, 0, 4321, 40000)
    head = fixed + struct.pack("<I", len(args) if args_len is None else args_len) + args
    if args_len is not None:
        return head
    for s in (b"x86-64\0", b"linux\0"):
        head += struct.pack("<I", len(s)) + s
    return head


def hostile_cases(real_header):
    h = real_header
    big = 1 << 60
    cases = {
        "buffer-length-4G": h + buffer(b"\x00" * 64, 0xFFFFFFFF),
        "buffer-length-64M-present-100": h + buffer(b"\x00" * 100, (64 << 20) - 1),
        "buffer-length-2G": h + buffer(b"", 0x80000000),
        "second-buffer-length-4G": h + buffer(b"\x0a\x00\x00") + buffer(b"", 0xFFFFFFFE),
        "gc-move-count-2^60": h + buffer(b"\x31\x00" + uleb(big) + b"\x00" * 32),
        "alloc-backtrace-count-2^60": h + buffer(b"\x10\x00\x00\x00\x20" + uleb(big) + b"\x00" * 32),
        "heap-object-refs-2^60": h + buffer(b"\x26\x00\x00\x00\x20\x00" + uleb(big) + b"\x00" * 32),
        "heap-root-count-2^60": h + buffer(b"\x36\x00" + uleb(big) + b"\x00" * 32),
        "sample-hit-ips-2^60": h + buffer(b"\x07\x00\x00" + uleb(big) + b"\x00" * 32),
        "counter-descs-2^60": h + buffer(b"\x37\x00" + uleb(big) + b"\x00" * 32),
        "count-2^64-1": h + buffer(b"\x31\x00" + uleb((1 << 64) - 1) + b"\x00" * 32),
        "count-just-past-buffer": h + buffer(b"\x36\x00" + uleb(1000) + b"\x00" * 1000),
        "header-string-1G": header_with_strings(1 << 30) + b"log:calls\0" * 10,
        "header-string-4G": header_with_strings(0xFFFFFFFF) + b"\0" * 64,
        "header-string-0": header_with_strings(0, b"") + b"\0" * 64,
        "header-string-no-nul": header_with_strings(args=b"log:calls") + buffer(b"\x0a\x00\x00"),
        "leb-endless-time": h + buffer(b"\x23" + b"\x80" * 100000),
        "leb-endless-whole-buffer": h + buffer(b"\x23" + b"\x80" * ((1 << 20) - 1)),
        "leb-continuation-at-buffer-end": h + buffer(b"\x23\x00\x80\x80\x80") + buffer(b"\x0a\x00\x00"),
        "all-0xff-buffer": h + buffer(b"\xff" * (1 << 20)),
        "leb-11-bytes": h + buffer(b"\x23\x00" + b"\xff" * 10 + b"\x01"),
        "leb-endless-to-eof": h + buffer(b"\x23" + b"\x80" * 4096, 1 << 20),
        "counter-samples-endless": h + buffer(b"\x47\x00" + b"\x01\x01\x05" * 50000),
        "unterminated-string": h + buffer(b"\x43\x00\x00\x00\x10" + b"A" * 100000),
        "bad-file-id": b"\x00" * 4 + h[4:] + buffer(b"\x0a\x00\x00"),
        "bad-version": h[:4] + b"\x02" + h[5:],
        "bad-data-version": h[:6] + b"\x10" + h[7:],
        "bad-pointer-size": h[:7] + b"\x05" + h[8:],
        "bad-flags": h[:28] + b"\x01" + h[29:],
        "bad-buffer-id": h + b"\x00\x00\x00\x00" + buffer(b"\x0a\x00\x00")[4:],
        "header-only-fixed": h[:38],
        "empty": b"",
        "not-mlpd": b"garbage\n" * 100,
    }
    # Compressed variants: the same hostile content behind gzip, and a broken gzip stream.
    gz = {
        "gzip-buffer-length-4G": gzip.compress(cases["buffer-length-4G"]),
        "gzip-count-2^60": gzip.compress(cases["gc-move-count-2^60"]),
        "gzip-leb-endless": gzip.compress(cases["leb-endless-whole-buffer"]),
        "gzip-header-string-1G": gzip.compress(cases["header-string-1G"]),
        "gzip-only-magic": b"\x1f\x8b",
        "gzip-bad-method": b"\x1f\x8b\x07\x00" + b"\x00" * 60,
    }
    good = h + buffer(b"\x0a\x00\x00")
    bad_crc = bytearray(gzip.compress(good))
    bad_crc[-8] ^= 0xFF
    gz["gzip-bad-crc"] = bytes(bad_crc)
    bad_size = bytearray(gzip.compress(good))
    bad_size[-1] ^= 0xFF
    gz["gzip-bad-isize"] = bytes(bad_size)
    bad_data = bytearray(gzip.compress(good + buffer(b"\x0a\x00\x00" * 100)))
    bad_data[len(bad_data) // 2] ^= 0x55
    gz["gzip-corrupt-deflate"] = bytes(bad_data)
    cases.update(gz)
    limit = 1 << 40  # offsets only need to be present here; exact positions are checked in (a)
    return [Case("hostile", name, data, "error", max(len(data), 100) if not name.startswith("gzip")
                 else limit) for name, data in cases.items()]


# ---------------------------------------------------------------------------------------------


def limit_memory():
    """Caps the address space of the verify runs (inherited from this process) unless mlpd is built
    with a sanitizer, whose shadow memory needs terabytes of address space."""
    with open(MLPD, "rb") as f:
        binary = f.read()
    if any(s in binary for s in (b"__asan_init", b"__tsan_init", b"__msan_init")):
        print("mlpd is built with a sanitizer: no address-space limit", flush=True)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > MEMORY_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))


def main():
    started = time.monotonic()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    plain = mono_profile("exceptions", "calls,alloc,exception", "plain.mlpd")
    zipped = mono_profile("exceptions", "calls,alloc,exception,zip", "zip.mlpd")
    heap = mono_profile("heapshot", "heapshot", "heap.mlpd")
    for path in (plain, zipped, heap):
        p = subprocess.run([MLPD, "verify", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        print(p.stdout.decode("utf-8", "replace").strip(), flush=True)
        if p.returncode != 0:
            sys.exit(f"the unmodified file {path} does not verify (exit {p.returncode}): "
                     f"{p.stderr.decode('utf-8', 'replace')}")
    with open(plain, "rb") as f:
        plain_data = f.read()
    with open(zipped, "rb") as f:
        zip_data = f.read()
    with open(heap, "rb") as f:
        heap_data = f.read()
    if zip_data[:2] != b"\x1f\x8b":
        sys.exit("the zip run did not write a gzip file")
    zip_plain = gzip.decompress(zip_data)
    zip_size = len(zip_plain)
    header_end, plain_buffers = layout(plain_data)
    print(f"plain: {len(plain_data)} bytes, {len(plain_buffers)} buffers; zip: {len(zip_data)} bytes "
          f"({zip_size} uncompressed); heapshot: {len(heap_data)} bytes", flush=True)

    rng = random.Random(SEED)
    cases = []
    cases += truncations("truncate-plain", plain_data, rng, 200)
    cases += gzip_truncations("truncate-zip", zip_data, zip_size, rng, 80)
    cases += regzipped_cuts("cut-buffer-regzip", zip_plain, rng, 8)
    cases += truncations("truncate-heapshot", heap_data, rng, 50, around_buffers=(-1, 1, 8, 47, 49),
                         max_buffers=6)
    cases += flips("flip-plain", plain_data, rng, 500)
    cases += flips("flip-heapshot", heap_data, rng, 100)
    cases += hostile_cases(plain_data[:header_end])
    limit_memory()
    run_all(cases)

    print("\nsummary (cases / detected (exit 1) / failed checks):", flush=True)
    total = [0, 0, 0]
    for group, (n, detected, failed, exact) in stats.items():
        note = f"  ({exact} at exactly the cut)" if group in ("truncate-plain", "truncate-heapshot") else ""
        print(f"  {group:18} {n:5} cases  {detected:5} detected  {failed:3} failed{note}")
        total = [total[0] + n, total[1] + detected, total[2] + failed]
    print(f"  {'all':18} {total[0]:5} cases  {total[1]:5} detected  {total[2]:3} failed")
    boundary = sum(1 for c in cases if c.expect == "ok")
    print(f"  ({boundary} truncations fall exactly on a buffer boundary: valid shorter files, exit 0 "
          f"expected; flips that leave the structure intact are undetectable by design)")
    print(f"  time: {time.monotonic() - started:.1f} s", flush=True)
    if failures:
        print(f"corruption: {len(failures)} case(s) failed", flush=True)
        sys.exit(1)
    shutil.rmtree(WORK, ignore_errors=True)
    print("corruption: all checks passed", flush=True)


if __name__ == "__main__":
    main()
