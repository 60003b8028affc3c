#!/usr/bin/env python3
"""The door is a door (issue 34): a fake second runtime (door_fake.cpp) drives the runtime-neutral agent
shell with no Mono in the program -- start with options, helper rounds, the command port (stats, events,
pause/resume, heapshot, flush), detach -- and the file it wrote verifies strictly and holds what the fake
runtime emitted: its threads by name, its methods in the calls, its samples, its own counter; nothing
of the thread that ran while profiling was paused.

Usage: test_door_fake.py DOOR_FAKE MLPD
"""
import json
import os
import socket
import subprocess
import sys
import tempfile


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    fake, mlpd = sys.argv[1], sys.argv[2]
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "fake.mlpd")
        port = free_port()
        opts = f"calls,sample,counter,port={port},output={out}"
        p = subprocess.run([fake, opts, str(port)], capture_output=True, text=True, timeout=120)
        print(p.stdout, end="")
        print(p.stderr, end="", file=sys.stderr)
        check(p.returncode == 0, f"door_fake ran every step as expected (exit {p.returncode})")
        check(os.path.exists(out), "the output file exists")
        if not os.path.exists(out):
            return 1
        v = subprocess.run([mlpd, "verify", "--strict", "--json", out], capture_output=True, text=True, timeout=120)
        check(v.returncode == 0, "mlpd verify --strict accepts the file: " + v.stdout.strip()[:400])
        info = json.loads(v.stdout.splitlines()[0]) if v.stdout.strip() else {}
        counts = info.get("counts", {})
        # Two worker threads of 2000 calls and one of 1000 after resume, each call Main > Work > Leaf:
        # 3 enters and 3 leaves. The paused thread's 500 calls are not recorded.
        check(counts.get("method_enter") == 5000 * 3, f"method_enter {counts.get('method_enter')} == 15000")
        check(counts.get("method_leave") == 5000 * 3, f"method_leave {counts.get('method_leave')} == 15000")
        check(counts.get("method_jit") == 3, f"method_jit {counts.get('method_jit')} == 3")
        check(counts.get("thread_start") == 4 and counts.get("thread_end") == 4,
              f"4 threads started and ended ({counts.get('thread_start')}, {counts.get('thread_end')})")
        check(counts.get("sync_point", 0) >= 2, f"pause and resume wrote sync points ({counts.get('sync_point')})")
        check(counts.get("counter_samples", 0) >= 2, f"counter samples ({counts.get('counter_samples')})")
        check(counts.get("sample_hit", 0) >= 1, f"sample hits from the fake's rounds ({counts.get('sample_hit')})")
        r = subprocess.run([mlpd, "report", out], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "mlpd report reads it")
        check("Fake.Program:Work (int)" in r.stdout, "the report names the fake runtime's methods")
        check("fake-worker-1" in r.stdout, "the report shows the fake's thread names")
        d = subprocess.run([mlpd, "dump", out], capture_output=True, text=True, timeout=120)
        # 5500 calls of Main > Work > Leaf, paused ones included: the fake counts every call it made.
        check(d.returncode == 0 and 'section=runtime name="Fake widgets made"' in d.stdout and
              "(Fake widgets made) = " in d.stdout and "(total 16500)" in d.stdout,
              "the fake runtime's own counter is described and sampled, 16500 in all")
    print("test_door_fake: " + ("FAILED: " + "; ".join(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
