#!/usr/bin/env python3
"""Runs a command (its output to /dev/null) and prints "CPU WALL MAXRSS_KIB": user+sys CPU seconds of
the command and its children (wait4's rusage: microseconds, where /usr/bin/time prints hundredths,
too coarse for overheads of a few hundredths of a second), wall seconds and peak RSS.
With CPUTIME_STDOUT=FILE in the environment, the command's output goes to FILE instead.
Usage: cputime.py OUTFILE CMD..."""
import os
import subprocess
import sys
import time

out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
sink = open(os.environ["CPUTIME_STDOUT"], "w") if os.environ.get("CPUTIME_STDOUT") else subprocess.DEVNULL
p = subprocess.Popen(cmd, stdout=sink)
_, status, ru = os.wait4(p.pid, 0)
wall = time.monotonic() - t0
with open(out, "w") as f:
    f.write(f"{ru.ru_utime + ru.ru_stime:.6f} {wall:.6f} {ru.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
