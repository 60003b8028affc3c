#!/usr/bin/env python3
"""`mlpd export` does not fill the disk (issue 22.8).

- An export estimated above --max-output is refused before anything is written, with one line that
  names the estimate and the formats that fit (html, pprof, collapsed for a --what calls timeline).
- The estimates are close: speedscope (evented calls), trace and collapsed within 0.5x..2x of what is
  then written; html and pprof not below it.
- An export that fails while writing (here: the file size limit, RLIMIT_FSIZE) leaves no partial file
  and no temporary file, and an OUT that existed before is left as it was.
"""
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
EST_RE = re.compile(r"the (\S+) export would be about ([\d.]+) (KiB|MiB|GiB)")
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def estimate(path, fmt, what, work):
    out = os.path.join(work, "never." + fmt)
    p = t.run([t.MLPD, "export", "--format", fmt, "--what", what, "--max-output", "1K", "-o", out, path])
    m = EST_RE.search(p.stderr)
    t.check(p.returncode == 1 and m is not None and not os.path.exists(out),
            f"{fmt} {what} under --max-output 1K: exit {p.returncode}, {p.stderr[-300:]!r}")
    return float(m.group(2)) * UNITS[m.group(3)] if m else None


def leftovers(work, name):
    return [f for f in os.listdir(work) if f.startswith("." + name) or f == name]


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-limits-") as work:
        path = os.path.join(work, "calls.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"calls,sample,output={path}")
        p = t.run([t.MONO, t.program("calls")], env=env, timeout=180)
        if not t.check(p.returncode == 0 and os.path.exists(path), f"calls.exe: {p.stderr[-300:]}"):
            t.finish("exports_limits")

        # Refused, with the formats that fit.
        actual = {}
        for fmt, what in [("speedscope", "calls"), ("trace", "calls"), ("collapsed", "calls"), ("html", "calls"),
                          ("pprof", "calls")]:
            out = os.path.join(work, f"all.{fmt}")
            q = t.run([t.MLPD, "export", "--format", fmt, "--what", what, "--max-output", "0", "-o", out, path])
            t.check(q.returncode == 0, f"{fmt}: {q.stderr[-300:]}")
            actual[fmt] = os.path.getsize(out) if os.path.exists(out) else 0
        limit = actual["speedscope"] // 2
        out = os.path.join(work, "calls.speedscope.json")
        q = t.run([t.MLPD, "export", "--what", "calls", "--max-output", str(limit), "-o", out, path])
        lines = q.stderr.strip().splitlines()
        t.check(q.returncode == 1 and len(lines) == 1 and "speedscope" in lines[0] and "--max-output" in lines[0],
                f"speedscope above --max-output {limit}: exit {q.returncode}, {q.stderr!r}")
        fits = lines[0].split("formats that fit:")[-1] if lines else ""
        for fmt in ("html", "pprof", "collapsed"):
            t.check(fmt in fits, f"the refusal does not name {fmt} as fitting: {lines[:1]}")
        t.check(not leftovers(work, "calls.speedscope.json"), f"refused export left {leftovers(work, 'calls.speedscope.json')}")
        print(f"ok  refused: {lines[:1]}", flush=True)

        # The estimates.
        for fmt, lo, hi in [("speedscope", 0.5, 2), ("trace", 0.5, 2), ("collapsed", 0.5, 2), ("html", 1, 50),
                            ("pprof", 1, 200)]:
            est = estimate(path, fmt, "calls", work)
            if est is not None:
                t.check(lo * actual[fmt] <= est * 1.1 and est <= hi * actual[fmt] * 1.1 + 4096,
                        f"{fmt}: estimate {est:.0f} bytes, wrote {actual[fmt]}")
                print(f"ok  {fmt}: estimated {est:.0f} bytes, wrote {actual[fmt]}", flush=True)

        # A failure while writing (the output itself for collapsed; the temporary spill of the events
        # first for speedscope) leaves nothing behind, and OUT as it was.
        for name, cap in [("fsize.collapsed", actual["collapsed"] // 2), ("fsize.speedscope.json", 64 << 10)]:
            out = os.path.join(work, name)
            with open(out, "w") as f:
                f.write("old")

            def limit_fsize(cap=cap):
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
            r = subprocess.run([t.MLPD, "export", "--what", "calls", "-o", out, path], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=limit_fsize, timeout=120)
            err = r.stderr.decode(errors="replace")
            t.check(r.returncode == 1 and err.count("\n") == 1 and "mlpd export:" in err,
                    f"{name}: write failure: exit {r.returncode}, {err[-300:]!r}")
            t.check(open(out).read() == "old", f"{name}: a failed export changed the OUT that was there")
            t.check(leftovers(work, name) == [name], f"{name}: a failed export left {leftovers(work, name)}")
            print(f"ok  {name}: a write failure leaves no partial file: {err.strip()!r}", flush=True)

        # A special file is written in place, never renamed over.
        q = t.run([t.MLPD, "export", "--format", "collapsed", "--what", "calls", "-o", "/dev/null", path])
        t.check(q.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode),
                f"-o /dev/null: exit {q.returncode}, {q.stderr[-200:]!r}")
    t.finish("exports_limits")


if __name__ == "__main__":
    main()
