#!/usr/bin/env python3
"""The reader's memory budget (issue 12, docs/fuzzing.md): small gzip files made to be costly to read
(tests/tools/mlpd_bomb) no longer take unbounded memory. Each bomb is read without a limit
(--max-memory=0: the memory it would take) and with a small one: the command stops with exit status 1
and one problem naming the limit and the offset, and its peak RSS (/usr/bin/time) stays near the limit. A gzip
bomb of repeated buffers (deflate ~1000:1 expansion) is read in constant memory: no limit on the
decompressed size is needed."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

BOMB = os.path.join(t.TOOLS, "mlpd_bomb")
MIB = 1 << 20


def sanitized():
    with open(t.MLPD, "rb") as f:
        binary = f.read()
    return any(s in binary for s in (b"__asan_init", b"__tsan_init", b"__msan_init"))


def run_rss(args):
    """(exit status, peak RSS in bytes, the budget line and the output's tail) of `mlpd ARGS`, measured by
    /usr/bin/time (fork + exec: its peak is mlpd's own; Python's vfork would hand its own peak on)."""
    with tempfile.TemporaryDirectory() as d:
        out, err, rss_file = (os.path.join(d, n) for n in ("out", "err", "rss"))
        with open(out, "wb") as o, open(err, "wb") as e:
            rc = subprocess.call(["/usr/bin/time", "-o", rss_file, "-f", "%M", t.MLPD] + args, stdout=o, stderr=e)
        with open(rss_file) as f:
            rss = int(f.read().split()[-1]) * 1024
        text = ""
        for path in (out, err):
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                f.seek(max(0, size - 4000))
                text += f.read().decode("utf-8", "replace")
        return rc, rss, text


def bomb(workdir, kind, count):
    path = os.path.join(workdir, f"{kind}-{count}.mlpd.gz")
    p = t.run([BOMB, kind, str(count), path], timeout=120)
    t.check(p.returncode == 0, f"mlpd_bomb {kind} {count} failed: {p.stderr}")
    return path, int(p.stdout.strip() or 0), os.path.getsize(path)


BUDGET_RE = re.compile(r"offset (\d+) \(buffer \d+\): memory budget exceeded: (\d+) MiB in use, above the limit "
                       r"of (\d+) MiB \(mlpd --max-memory=SIZE raises it\)")


def check_bomb(label, args, path, limit_mib, unlimited_min_mib, unlimited_max_mib, raw_size):
    rc, rss_free, text = run_rss(args + ["--max-memory=0", path])
    t.check(rc == 0, f"{label}: without a limit, exit {rc}: {text[-300:]}")
    t.check(rss_free > unlimited_min_mib * MIB,
            f"{label}: without a limit it took only {rss_free / MIB:.0f} MiB (the bomb is too small to test)")
    # The compact tables (mlpd/id_map.h) keep the unlimited peak low.
    t.check(rss_free < unlimited_max_mib * MIB,
            f"{label}: without a limit it took {rss_free / MIB:.0f} MiB, more than {unlimited_max_mib} MiB")
    rc, rss, text = run_rss(args + [f"--max-memory={limit_mib}M", path])
    m = BUDGET_RE.search(text)
    t.check(rc == 1 and m, f"{label}: with --max-memory={limit_mib}M: exit {rc}, {text[:300]!r}")
    if m:
        t.check(int(m.group(3)) == limit_mib and 0 < int(m.group(1)) < raw_size,
                f"{label}: the problem names limit {m.group(3)} MiB at offset {m.group(1)}")
    # The check runs every 4096 events; a vector's doubling may briefly pass the limit by its own size.
    t.check(rss < 2 * limit_mib * MIB + 16 * MIB, f"{label}: peak RSS {rss / MIB:.0f} MiB with a {limit_mib} MiB budget")
    print(f"ok  {label}: {os.path.getsize(path) // 1024} KiB gz ({raw_size / MIB:.0f} MiB raw): "
          f"{rss_free / MIB:.0f} MiB unlimited, stopped at {rss / MIB:.0f} MiB peak with a {limit_mib} MiB budget",
          flush=True)


def main():
    if not os.path.exists("/usr/bin/time"):
        print("skip: /usr/bin/time missing (scripts/install-deps.sh installs it: package time)", flush=True)
        t.finish("limits")
    if sanitized():
        print("skip: mlpd is built with a sanitizer (its allocator hides the heap from the budget)", flush=True)
        t.finish("limits")
    with tempfile.TemporaryDirectory(prefix="mlpd-limits-") as workdir:
        jit, jit_raw, _ = bomb(workdir, "jit", 400000)
        # Unlimited peaks with the compact tables (mlpd/id_map.h; docs/fuzzing.md): about 46, 18 and
        # 104 MiB (89, 22 and 149 MiB with std::unordered_map/set and a hash map per heapshot).
        check_bomb("dump, distinct methods", ["dump"], jit, 16, 32, 64, jit_raw)
        check_bomb("verify --strict, distinct methods", ["verify", "--strict"], jit, 4, 12, 21, jit_raw)
        shots, shots_raw, _ = bomb(workdir, "heapshots", 1000000)
        check_bomb("heapshots, empty heapshots", ["heapshots"], shots, 32, 64, 128, shots_raw)
        # A gzip bomb: memory does not grow with the expansion.
        rep, rep_raw, rep_gz = bomb(workdir, "repeat", 64)
        rc, rss, text = run_rss(["verify", rep])
        t.check(rc == 0 and rep_raw >= 64 * MIB, f"gzip bomb: verify exit {rc}: {text[-300:]}")
        t.check(rss < 32 * MIB, f"gzip bomb: peak RSS {rss / MIB:.0f} MiB")
        print(f"ok  gzip bomb: {rep_gz // 1024} KiB gz -> {rep_raw / MIB:.0f} MiB ({rep_raw // rep_gz}:1), "
              f"verified in {rss / MIB:.0f} MiB peak", flush=True)
        p = t.run([t.MLPD, "--help"])
        t.check("--max-memory=SIZE" in p.stdout and "default 1G" in p.stdout, "mlpd --help does not document --max-memory")
        p = t.run([t.MLPD, "verify", "--max-memory=lots", rep])
        t.check(p.returncode == 2 and "--max-memory=lots" in p.stderr, f"bad --max-memory: {p.returncode} {p.stderr!r}")
    t.finish("limits")


if __name__ == "__main__":
    main()
