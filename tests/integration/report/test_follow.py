#!/usr/bin/env python3
"""mlpd report --follow (issue 14.4): on a file that a running program writes (flush=200), the
command waits while the program runs, then prints the final report -- the same figures as a report
of the finished file; a file cut inside a buffer by a writer that is gone ends with a clear message
and exit status 1, without waiting."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-follow-") as workdir:
        out = os.path.join(workdir, "live.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=200,flush=200,output={out}")
        prog = subprocess.Popen([t.MONO, t.program("spike")], stdout=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 20
        while not os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        follow = subprocess.Popen([t.MLPD, "report", "--json", "--follow", out], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        time.sleep(1.0)
        t.check(prog.poll() is None and follow.poll() is None, "--follow ended while the program still ran")
        prog.communicate(timeout=60)
        try:
            fo, fe = follow.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            follow.kill()
            fo, fe = follow.communicate()
            t.check(False, "--follow did not end after the program exited")
        t.check(follow.returncode == 0, f"--follow: exit {follow.returncode}: {fe.decode()[-300:]}")
        after = t.run([t.MLPD, "report", "--json", out])
        if fo and after.stdout:
            a, b = json.loads(fo), json.loads(after.stdout)
            t.check(a.get("samples", {}).get("total") == b.get("samples", {}).get("total") and
                    a["header"]["events"] == b["header"]["events"],
                    f"--follow report differs: {a.get('samples', {}).get('total')} vs {b.get('samples', {}).get('total')}")
            t.check(a.get("samples", {}).get("total", 0) > 20, "--follow: too few samples")
            print(f"ok  --follow: {a['header']['events']} events, {a['samples']['total']} samples, as the finished file", flush=True)
        # Cut inside a buffer; the writer (the pid in the header) is gone.
        data = open(out, "rb").read()
        cut = os.path.join(workdir, "cut.mlpd")
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        start = time.monotonic()
        p = t.run([t.MLPD, "report", "--follow", cut], timeout=30)
        t.check(p.returncode == 1 and "has exited and left the file incomplete" in p.stderr and "truncated" in p.stderr,
                f"cut file: exit {p.returncode}, stderr {p.stderr[-300:]!r}")
        t.check(time.monotonic() - start < 10, "cut file: --follow waited for a writer that is gone")
        print("ok  a cut file of a gone writer ends with a message", flush=True)
    t.finish("report_follow")


if __name__ == "__main__":
    main()
