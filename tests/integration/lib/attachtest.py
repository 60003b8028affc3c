"""What the attach tests of both runtimes share (tests/integration/agent/test_attach.py for Mono,
tests/integration/dotnet/test_attach.py for .NET): the target's threads, its end, the output file an
answer names, the time from `mlpd attach` to the file's first sample, and the one-line refusal."""
import glob
import re
import subprocess

import mlpdtest as t


def threads(pid):
    """The OS names of the process's threads (/proc/PID/task/*/comm)."""
    names = []
    for f in glob.glob(f"/proc/{pid}/task/*/comm"):
        try:
            names.append(open(f).read().strip())
        except OSError:
            pass
    return names


def finish_program(p, timeout=60):
    """The target's exit status, output and error output once it ends by itself (killed, and a failed
    check, after `timeout` seconds)."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        t.check(False, f"pid {p.pid}: still running {timeout} s later (killed)")
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def out_file(p):
    """The output file `mlpd attach`'s or `mlpd detach`'s answer names."""
    m = re.search(r"(?:profiling into|wrote) (\S+)", p.stdout)
    return m.group(1) if m else None


def first_sample_ms(path, attach_started):
    """Wall milliseconds from `mlpd attach` being run (time.time() then) to the file's first sample."""
    p = t.run([t.MLPD, "dump", path], timeout=300)
    head = p.stdout.splitlines()[0] if p.stdout else ""
    m = re.search(r"startup_ms=(\d+) .*startup_ns=(\d+)", head)
    first = None
    for line in p.stdout.splitlines():
        if " sample_hit " in line:
            first = int(line.split()[0])
            break
    if not m or first is None:
        return None
    return int(m.group(1)) - attach_started * 1000 + (first - int(m.group(2))) / 1e6


def refused(r, what, word):
    """`r` (a finished `mlpd attach`/`detach`) was refused: a non-zero status and one line naming `word`."""
    t.check(r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and word in r.stderr,
            f"{what}: exit {r.returncode}, stderr {r.stderr!r} (want one line with {word!r})")
