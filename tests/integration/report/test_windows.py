#!/usr/bin/env python3
"""Time windows and several files (issue 16.2): `mlpd report --from/--to` counts exactly the sample
hits whose times are in the window, as `mlpd dump` prints them (+SECONDS from the first buffer), and
as wall-clock HH:MM:SS from the header's start; `mlpd export --from/--to` exports the same hits;
several FILEs are read as one profile, among them the files of one rotated run (rotate=1s), where the
windows cross file boundaries; bad times are usage errors."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def record(workdir, name):
    out = os.path.join(workdir, name)
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=200,output={out}", TZ="UTC")
    p = t.run([t.MONO, t.program("spike")], env=env, timeout=120)
    t.check(p.returncode == 0 and p.stdout.strip() == "done", f"spike failed: {p.stderr[-300:]}")
    return out


def buffers_and_samples(path):
    """([buffer time_base], [sample hit time]) of one file, in file order, from mlpd dump --json."""
    p = t.run([t.MLPD, "dump", "--json", path])
    bases, hits = [], []
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        if isinstance(ev.get("buffer"), dict):
            bases.append(ev["buffer"]["time_base"])
        elif ev.get("kind") == "sample_hit":
            hits.append(ev["time"])
    return bases, hits


def rotated(workdir):
    """One run rotated every second into numbered files: report --from/--to over all of them, in
    order, counts exactly the hits of every file whose time is in the window, the window measured from
    the first file's first buffer (as `mlpd dump` of the first file prints +SECONDS)."""
    pattern = os.path.join(workdir, "rot-%n.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=200,rotate=1s,flush=200,output={pattern}")
    p = t.run([t.MONO, t.program("spike")], env=env, timeout=120)
    t.check(p.returncode == 0 and p.stdout.strip() == "done", f"spike (rotated) failed: {p.stderr[-300:]}")
    files = sorted((f for f in os.listdir(workdir) if f.startswith("rot-")),
                   key=lambda f: int(f[len("rot-"):-len(".mlpd")]))
    files = [os.path.join(workdir, f) for f in files]
    # A file ends at the first flush round after each second; on a machine loaded beyond its cores the
    # profiler's helper thread can miss the rounds of the run's last second (a Debian 13 run beside
    # other builds: 2 files), so 2 files are accepted then, and the windows still cross a boundary.
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    least = 2 if loaded else 3
    if not t.check(len(files) >= least, f"rotate=1s over a ~3 s run: only {len(files)} files "
                                        f"(load average {os.getloadavg()[0]:.1f})"):
        return
    per_file = [buffers_and_samples(f) for f in files]
    base = per_file[0][0][0]
    hits = [h - base for _, hs in per_file for h in hs]
    t.check(sum(1 for _, hs in per_file if hs) >= least, f"samples in fewer than {least} of {len(files)} files")
    whole, _ = report_total(files)
    t.check(whole == len(hits), f"rotated, no window: {whole} != {len(hits)}")
    for lo, hi in ((0.5, 1.5), (0.9, 2.1), (1.7, None), (None, 1.2), (0.0, 10.0)):
        args = (["--from", str(lo)] if lo is not None else []) + (["--to", str(hi)] if hi is not None else [])
        want = sum(1 for h in hits if (lo is None or h >= lo * 1e9) and (hi is None or h < hi * 1e9))
        got, _ = report_total(args + files)
        t.check(got == want, f"rotated window {lo}..{hi}: report {got}, dump {want}")
        print(f"ok  rotated ({len(files)} files) window {lo}..{hi}: {got} samples", flush=True)
    # Files out of order are still one profile (the window is then measured from the first given file).
    whole_rev, _ = report_total(list(reversed(files)))
    t.check(whole_rev == len(hits), f"rotated files reversed: {whole_rev} != {len(hits)}")


def samples_of(path):
    """(header, [(seconds, time_ns)]) of the sample hits, from mlpd dump --json."""
    p = t.run([t.MLPD, "dump", "--json", path])
    header, hits = None, []
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        if "header" in ev:
            header = ev["header"]
        elif ev.get("kind") == "sample_hit":
            hits.append((ev["seconds"], ev["time"]))
    return header, hits


def report_total(args):
    p = t.run([t.MLPD, "report", "--json", *args], env=dict(os.environ, TZ="UTC"))
    if not t.check(p.returncode == 0, f"report {args}: exit {p.returncode}: {p.stderr[-300:]}"):
        return None, None
    d = json.loads(p.stdout)
    s = d.get("samples", {})
    return s.get("total", 0), s


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-windows-") as workdir:
        a = record(workdir, "a.mlpd")
        header, hits = samples_of(a)
        t.check(len(hits) > 30, f"too few samples: {len(hits)}")
        whole, _ = report_total([a])
        t.check(whole == len(hits), f"no window: {whole} != {len(hits)}")
        for lo, hi in ((1.0, 2.0), (0.25, 0.75), (1.5, None), (None, 0.5), (2.5, 2.5)):
            args = (["--from", str(lo)] if lo is not None else []) + (["--to", str(hi)] if hi is not None else [])
            want = sum(1 for s, _ in hits if (lo is None or s >= lo) and (hi is None or s < hi))
            got, s = report_total(args + [a])
            t.check(got == want, f"window {lo}..{hi}: report {got}, dump {want}")
            print(f"ok  window {lo}..{hi}: {got} samples", flush=True)
        # The spike: Hot() is the hot path of the window [1, 2) and absent from [0, 0.9).
        _, s = report_total(["--from", "1", "--to", "2", a])
        names = json.dumps(s)
        t.check("SpikeProgram:Hot" in names, "window 1..2: Hot() not in the samples")
        _, s = report_total(["--to", "0.9", a])
        t.check("SpikeProgram:Hot" not in json.dumps(s), "window ..0.9: Hot() in the samples")
        # Wall clock: HH:MM:SS (UTC here) from the header's start, counted against the absolute times.
        start_ms, start_ns = header["startup_ms"], header["startup_ns"]
        wall_lo = (start_ms // 1000 + 2)  # a whole second, 1-2 s after the start
        tod = time.strftime("%H:%M:%S", time.gmtime(wall_lo))
        lo_ns = start_ns + (wall_lo * 1000 - start_ms) * 1000000
        want = sum(1 for _, tn in hits if tn >= lo_ns)
        got, _ = report_total(["--from", tod, a])
        t.check(got == want, f"--from {tod}: report {got}, dump {want}")
        print(f"ok  --from {tod} (wall clock): {got} samples", flush=True)
        # export --from/--to: the collapsed stacks weigh exactly the window's hits.
        p = t.run([t.MLPD, "export", "--format", "collapsed", "--from", "1", "--to", "2", a])
        weight = sum(int(l.rsplit(" ", 1)[1]) for l in p.stdout.splitlines() if l.strip())
        want = sum(1 for s, _ in hits if 1 <= s < 2)
        t.check(p.returncode == 0 and weight == want, f"export --from 1 --to 2: {weight} != {want}")
        # Several files, read in order as one profile.
        b = record(workdir, "b.mlpd")
        _, hits_b = samples_of(b)
        both, _ = report_total([a, b])
        t.check(both == len(hits) + len(hits_b), f"two files: {both} != {len(hits)} + {len(hits_b)}")
        rotated(workdir)
        # Bad times.
        for bad in ("x", "1:2", "25:00:00", "-1", "12:00:61"):
            p = t.run([t.MLPD, "report", "--from", bad, a])
            t.check(p.returncode == 2 and "--from" in p.stderr, f"--from {bad!r}: exit {p.returncode} {p.stderr!r}")
    t.finish("report_windows")


if __name__ == "__main__":
    main()
