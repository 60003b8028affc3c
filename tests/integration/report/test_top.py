#!/usr/bin/env python3
"""mlpd top (issue 14.3) on a file that a running program writes (flush=300), stdout to a file:
snapshots while the program runs show its hot method, the last one is the final figures after it
exited (exit 0); a file cut inside a buffer by a writer that is gone ends with a clear message."""
import os
import re
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
            top = subprocess.Popen([t.MLPD, "top", "--stats", "--interval", "0.5", out], stdout=snaps,
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
        p = t.run([t.MLPD, "top", cut], timeout=30)
        t.check(p.returncode == 1 and "has exited and left the file incomplete" in p.stderr,
                f"cut file: exit {p.returncode}, {p.stderr[-300:]!r}")
        print("ok  a cut file of a gone writer ends with a message", flush=True)
    t.finish("report_top")


if __name__ == "__main__":
    main()
