#!/usr/bin/env python3
"""mlpd top (issue 14.3) on a file that a running program writes (flush=300), stdout to a file:
snapshots while the program runs show its hot method, the last one is the final figures after it
exited (exit 0; --from-start: the same figures as the report); a file cut inside a buffer by a writer
that is gone ends with a clear message.

Streaming (issue 22.7): a large generated file (mlpd_synth, larger than the memory budget) is read
under a small --max-memory with the same figures as the report, exit 0 and no false "incomplete";
a live server (service.exe under sample,alloc,flush=200, a file of many MB by then) watched from where
its file is: its data within two intervals, counting only what came after top started.

Header (issue 33.4): a service watched from where its file is: at every view, the program and the rate
delivered are what `mlpd report` says of the file as far as that view read it (--stats names the byte)."""
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-top-") as workdir:
        out = os.path.join(workdir, "live.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=200,flush=300,output={out}")
        prog = subprocess.Popen([t.MONO, t.program("spike")], stdout=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 20
        while not os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        snap_path = os.path.join(workdir, "top.txt")
        with open(snap_path, "w") as snaps:
            top = subprocess.Popen([t.MLPD, "top", "--stats", "--from-start", "--interval", "0.5", out], stdout=snaps,
                                   stderr=subprocess.PIPE)
            prog.communicate(timeout=60)
            try:
                _, err = top.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                top.kill()
                _, err = top.communicate()
                t.check(False, "top did not end after the program exited")
        t.check(top.returncode == 0, f"top: exit {top.returncode}: {err.decode()[-300:]}")
        text = open(snap_path).read()
        parts = text.split("== mlpd top: ")[1:]
        live = [s for s in parts if "program exited (final)" not in s.splitlines()[0]]
        final = [s for s in parts if "program exited (final)" in s.splitlines()[0]]
        t.check(len(live) >= 2, f"only {len(live)} snapshots while the program ran")
        t.check(any("SpikeProgram:Burn" in s for s in live), "no live snapshot shows the hot method")
        t.check(len(final) == 1 and parts[-1] is final[0], "the last snapshot is not the final one")
        if final:
            after = t.run([t.MLPD, "report", "--top", "5", out]).stdout
            hits = [l for l in after.splitlines() if l.startswith("== CPU samples")]
            t.check(hits and hits[0] in final[0], f"final snapshot differs from the report: {hits}")
        # Incremental: every byte decoded once, and only a partly written buffer held back at a time.
        m = re.search(r"mlpd top: read (\d+) bytes, decoded (\d+) bytes, held at most (\d+) bytes", err.decode())
        size = os.path.getsize(out)
        t.check(m is not None and int(m.group(1)) == size and int(m.group(2)) == size and int(m.group(3)) < size,
                f"top --stats: {m and m.group(0)!r} for a file of {size} bytes")
        print(f"ok  {len(live)} live snapshots, then the final one; {m and m.group(0)}", flush=True)
        data = open(out, "rb").read()
        cut = os.path.join(workdir, "cut.mlpd")
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        p = t.run([t.MLPD, "top", "--jobs", "2", cut], timeout=30)
        t.check(p.returncode == 1 and "has exited and left the file incomplete" in p.stderr,
                f"cut file: exit {p.returncode}, {p.stderr[-300:]!r}")
        # Its whole buffers read on every core first, the cut one after: what one thread shows.
        p1 = t.run([t.MLPD, "top", "--jobs", "1", cut], timeout=30)
        t.check(p1.returncode == 1 and final_view(p1.stdout) == final_view(p.stdout) and p1.stderr == p.stderr,
                f"cut file: top --jobs 1 differs from --jobs 2: {p1.stderr[-200:]!r} / {p.stderr[-200:]!r}")
        print("ok  a cut file of a gone writer ends with a message (--jobs 1 and 2 alike)", flush=True)
        header_every_view(workdir)
        big_file(workdir)
        live_server(workdir)
    t.finish("report_top")


def final_view(out):
    """The last view without its heading line (time and rate): the figures themselves."""
    return out.split("== mlpd top: ")[-1].split("\n", 1)[-1]


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def big_file(workdir):
    """A file larger than the memory budget, of a writer that is gone: read whole, in bounded memory."""
    big = os.path.join(workdir, "big.mlpd")
    p = t.run([os.path.join(t.TOOLS, "mlpd_synth"), "--scale", "300", big], timeout=300)
    if not t.check(p.returncode == 0, f"mlpd_synth: {p.stderr[-300:]}"):
        return
    with open(big, "r+b") as f:  # the header's pid (bytes 32..35): one that is surely gone
        f.seek(32)
        f.write(struct.pack("<i", dead_pid()))
    size = os.path.getsize(big)
    rep = t.run([t.MLPD, "report", "--max-memory", "0", big], timeout=300).stdout
    want = [l for l in rep.splitlines() if l.startswith("== CPU samples") or l.startswith("== Calls")]
    ev = re.search(r"(\d+) events, \d+ threads", rep)
    zipped = big + ".gz"  # the same file gzipped (as `zip` writes it, inflated as it is read)
    with open(big, "rb") as src, gzip.open(zipped, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    for path in (big, zipped):
        name = os.path.basename(path)
        p = t.run([t.MLPD, "top", "--max-memory", "32M", "--stats", path], timeout=300)
        t.check(p.returncode == 0 and "incomplete" not in p.stderr and "budget" not in p.stderr,
                f"top on {name} ({size >> 20} MiB) under --max-memory 32M: exit {p.returncode}, {p.stderr[-400:]!r}")
        final = p.stdout.split("== mlpd top: ")[-1]
        t.check(len(want) == 2 and all(w in final for w in want), f"{name}: top's final view lacks {want}")
        t.check(ev is not None and re.search(r"^[^\n]*?, %s events," % ev.group(1), final) is not None,
                f"{name}: top's event count is not the report's ({ev and ev.group(1)}): {final[:120]!r}")
        m = re.search(r"held at most (\d+) bytes", p.stderr)
        t.check(m is not None and int(m.group(1)) < (4 << 20), f"{name}: held {m and m.group(1)} bytes")
        print(f"ok  {name} ({size >> 20} MiB uncompressed) under --max-memory 32M: {want}", flush=True)
        if path == big:  # a whole plain file of a gone writer: read on every core first (issue 25)
            views = {}
            for jobs in ("1", "2", "4"):
                q = t.run([t.MLPD, "top", "--jobs", jobs, "--max-memory", "32M", path], timeout=300)
                t.check(q.returncode == 0, f"top --jobs {jobs}: exit {q.returncode}, {q.stderr[-300:]!r}")
                views[jobs] = final_view(q.stdout)
            t.check(views["1"] == views["2"] == views["4"] and views["1"] == final_view(p.stdout),
                    f"{name}: top's final view differs between --jobs 1, 2 and 4")
            print(f"ok  {name}: top's final view the same with --jobs 1, 2 and 4", flush=True)


def header_every_view(workdir):
    """Issue 33.4: top's header (program, rate delivered) is the file's at every view, never a stale or
    partial value: each view equals `mlpd report` on the file as far as that view read it (--stats
    gives the byte), though top counts only what came after it started (its history is read for
    names, and for the counters' sums)."""
    out = os.path.join(workdir, "header.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample,flush=200,output={out}")
    prog = subprocess.Popen([t.MONO, t.program("service"), "5"], stdout=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 30
    started = time.monotonic()
    while time.monotonic() < deadline and prog.poll() is None and (
            not os.path.exists(out) or os.path.getsize(out) < (256 << 10) or time.monotonic() - started < 1.5):
        time.sleep(0.05)
    snap_path = os.path.join(workdir, "header-top.txt")
    with open(snap_path, "w") as snaps:
        top = subprocess.Popen([t.MLPD, "top", "--stats", "--interval", "0.5", out], stdout=snaps,
                               stderr=subprocess.PIPE)
        prog.communicate(timeout=120)
        try:
            _, err = top.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            top.kill()
            _, err = top.communicate()
            t.check(False, "header: top did not end after the program exited")
    err = err.decode()
    t.check(top.returncode == 0, f"header: top exit {top.returncode}: {err[-400:]}")
    views = open(snap_path).read().split("== mlpd top: ")[1:]
    reads = [(int(m.group(1)), m.group(2) is not None) for m in
             re.finditer(r"^mlpd top: view at \+[\d.]+ s: the file up to byte (\d+)( \(its start still being read)?",
                         err, re.M)]
    t.check(len(views) == len(reads) and len(views) >= 3, f"header: {len(views)} views, {len(reads)} --stats lines")
    data = open(out, "rb").read()
    prefix = os.path.join(workdir, "header-prefix.mlpd")

    def header_of(text):
        program = next((l for l in text.splitlines() if l.startswith("program:")), None)
        cpu = next((l for l in text.splitlines() if l.startswith("== CPU samples")), "")
        rate = re.search(r"delivered rate[^,=]*", cpu)
        return program, rate.group(0).strip() if rate else None

    compared = with_rate = 0
    for view, (upto, partial) in zip(views, reads):
        program, rate = header_of(view)
        if partial:  # the counters' sums lack part of the file: no rate shown, and said so
            t.check(rate in (None, "delivered rate: the file's start is still being read"),
                    f"header: a view reading the file's start shows {rate!r}")
            continue
        with open(prefix, "wb") as f:
            f.write(data[:upto])
        rep = t.run([t.MLPD, "report", prefix]).stdout
        want_program, want_rate = header_of(rep)
        t.check(program == want_program and "(unknown)" not in (program or ""),
                f"header: top's {program!r}, the report's {want_program!r} at byte {upto}")
        if "== CPU samples" in view:  # top's counted part has samples: its heading gives the rate
            t.check(rate == want_rate, f"header: top's {rate!r}, the report's {want_rate!r} at byte {upto}")
            with_rate += rate is not None
        compared += 1
    t.check(compared >= 3 and with_rate >= 2, f"header: {compared} views compared, {with_rate} with a rate")
    print(f"ok  header: {compared} views equal to the report on the file as far as each read ({with_rate} "
          f"with the rate delivered)", flush=True)


def live_server(workdir):
    """top on a busy live file, from where the file is: the program's data within two intervals."""
    out = os.path.join(workdir, "server.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample,alloc,flush=200,output={out}")
    prog = subprocess.Popen([t.MONO, t.program("service"), "9"], stdout=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 30
    # Until the file is large (tens of MB: more than --max-memory), or the program has run for a while.
    while time.monotonic() < deadline and prog.poll() is None and (
            not os.path.exists(out) or os.path.getsize(out) < (80 << 20)):
        time.sleep(0.05)
    size_at_start = os.path.getsize(out) if os.path.exists(out) else 0
    snap_path = os.path.join(workdir, "server-top.txt")
    with open(snap_path, "w") as snaps:
        top = subprocess.Popen([t.MLPD, "top", "--max-memory", "64M", "--stats", "--interval", "1", out],
                               stdout=snaps, stderr=subprocess.PIPE)
        prog.communicate(timeout=120)
        try:
            _, err = top.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            top.kill()
            _, err = top.communicate()
            t.check(False, "server: top did not end after the program exited")
    err = err.decode()
    t.check(top.returncode == 0, f"server: top exit {top.returncode}: {err[-400:]}")
    parts = open(snap_path).read().split("== mlpd top: ")[1:]
    live = [s for s in parts if "program exited (final)" not in s.splitlines()[0]]

    def has_data(s):
        m = re.search(r"== Allocations: (\d+) objects", s)
        return m is not None and int(m.group(1)) > 0

    def at(s):
        m = re.match(r"\+([\d.]+) s", s)
        return float(m.group(1)) if m else 1e9
    first = next((s for s in live if has_data(s)), None)
    t.check(first is not None and at(first) <= 3.0,  # two intervals, and some slack for a loaded machine
            f"server: no live view with allocations within two intervals of 1 s (file {size_at_start >> 20} MiB "
            f"at the start; views at {[at(s) for s in live][:5]} s)")
    t.check(any("counting since top started" in s.splitlines()[0] for s in live),
            "server: the heading does not say that it counts since top started")
    if parts:
        final = parts[-1]
        full = t.run([t.MLPD, "report", "--max-memory", "0", out], timeout=300).stdout
        got = re.search(r"== Allocations: (\d+) objects", final)
        whole = re.search(r"== Allocations: (\d+) objects", full)
        t.check(got is not None and whole is not None and 0 < int(got.group(1)) < int(whole.group(1)),
                f"server: top counted {got and got.group(1)} objects, the whole file {whole and whole.group(1)}")
        t.check("[unknown method" not in final.split("== Allocations")[0],
                "server: the final view has unnamed methods (the names before the start were not read)")
    m = re.search(r"decoded (\d+) bytes", err)
    t.check(m is not None and int(m.group(1)) == os.path.getsize(out), f"server: {m and m.group(0)}")
    print(f"ok  live server: file {size_at_start >> 20} MiB when top started; first view with data at "
          f"{first and at(first)} s", flush=True)


if __name__ == "__main__":
    main()
