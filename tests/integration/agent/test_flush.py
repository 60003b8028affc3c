#!/usr/bin/env python3
"""A thread that logs and then goes quiet: its events reach the file within the flush interval,
while the program is still running (the helper writes the committed part of the thread's buffer
without the thread's help)."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def count_quiet(path):
    p = t.run([t.MLPD, "dump", path])
    return sum(1 for line in p.stdout.splitlines() if " alloc " in line and " Quiet " in line)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-flush-") as workdir:
        for flush_ms in (200, 1000):
            out = os.path.join(workdir, f"quiet-{flush_ms}.mlpd")
            env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,flush={flush_ms},output={out}")
            proc = subprocess.Popen([t.MONO, t.program("quiet"), "6000"], stdout=subprocess.PIPE, env=env, text=True)
            try:
                ready = proc.stdout.readline().strip()
                t.check(ready == "ready", f"flush={flush_ms}: program said {ready!r}")
                start = time.monotonic()
                seen = 0
                # Poll the live file until the 100 allocations appear; they must, within the interval
                # plus a margin for a loaded machine, and long before the program wakes up (6 s).
                while time.monotonic() - start < flush_ms / 1000 + 2.0:
                    if os.path.exists(out):
                        seen = count_quiet(out)
                        if seen == 100:
                            break
                    time.sleep(0.05)
                elapsed = time.monotonic() - start
                t.check(seen == 100, f"flush={flush_ms}: {seen} of 100 allocations in the file after {elapsed:.2f} s")
                t.check(proc.poll() is None, f"flush={flush_ms}: the program was no longer running")
                print(f"ok  flush={flush_ms}: all 100 allocations in the file after {elapsed:.2f} s, program still asleep",
                      flush=True)
            finally:
                proc.kill()
                proc.wait()
    t.finish("flush")


if __name__ == "__main__":
    main()
