#!/usr/bin/env python3
"""Flight recorder triggers other than the command port: dumpsignal=NAME (two `kill -USR2` give two
complete dumps; the program's output and exit status are unchanged; a signal the process already
ignores is refused with one line and left alone; in file mode the signal flushes), and an unhandled
exception on any thread that ends the process dumps the ring before it dies."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def wait_for(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def verify_ok(path, what):
    rc, obj, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and obj and obj["ok"], f"{what}: {path}: verify --strict: {p.stdout[-400:]} {p.stderr[-400:]}")
    return obj["counts"] if obj else {}


def signal_dumps(workdir):
    errf = os.path.join(workdir, "sig.err")
    opts = f"nodefaults,calls,alloc,ring=4m,dumpsignal=USR2,output={workdir}/sig-%n.mlpd"
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)
    with open(errf, "w") as err:
        proc = subprocess.Popen([t.MONO, t.program("service"), "8"], stdout=subprocess.PIPE, stderr=err, env=env,
                                text=True)
    ready = proc.stdout.readline().strip()
    t.check(ready == "ready", f"program said {ready!r}")
    answers = []
    for n in (1, 2):
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGUSR2)
        ok = wait_for(lambda: len(re.findall(r"mlpd: SIGUSR2: OK dump (\S+) (\d+)", read(errf))) >= n, 30)
        t.check(ok, f"signal {n}: no dump line on stderr: {read(errf)[-500:]!r}")
    out, _ = proc.communicate(timeout=120)
    t.check(proc.returncode == 0 and out.startswith("done"), f"program exit {proc.returncode}, output {out!r}")
    err = read(errf)
    dumps = re.findall(r"mlpd: SIGUSR2: OK dump (\S+) (\d+)", err)
    t.check(len(dumps) == 2, f"two signals, dumps: {dumps} (stderr {err[-500:]!r})")
    t.check("ERR" not in err, f"stderr: {err!r}")
    names = [d[0] for d in dumps]
    t.check(names == [f"{workdir}/sig-0000.mlpd", f"{workdir}/sig-0001.mlpd"], f"dump names {names}")
    for name, size in dumps:
        t.check(os.path.exists(name) and os.path.getsize(name) == int(size), f"{name}: size {size} as answered")
        counts = verify_ok(name, "signal dump")
        t.check(counts.get("method_enter", 0) > 1000, f"{name}: {counts.get('method_enter', 0)} method enters")
    t.check(os.path.exists(f"{workdir}/sig-0002.mlpd"), "the exit dump after the two signal dumps is missing")
    print(f"ok  dumpsignal=USR2: two signals, two dumps {[os.path.basename(n) for n in names]}, program exit 0", flush=True)


def signal_refused(workdir):
    # The process already ignores SIGUSR2 (its parent said so): the agent does not take it.
    opts = f"nodefaults,alloc,ring=1m,dumpsignal=usr2,output={workdir}/ign-%n.mlpd"
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)

    def ignore():
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)

    proc = subprocess.Popen([t.MONO, t.program("quiet"), "1500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True, preexec_fn=ignore)
    t.check(proc.stdout.readline().strip() == "ready", "quiet: no ready")
    os.kill(proc.pid, signal.SIGUSR2)  # ignored, as before the agent came
    out, err = proc.communicate(timeout=60)
    t.check(proc.returncode == 0 and out.strip() == "done", f"ignored signal: exit {proc.returncode}, {out!r}")
    t.check("mlpd: dumpsignal: SIGUSR2 is already ignored in this process; going on without a dump signal" in err,
            f"ignored signal: stderr {err!r}")
    t.check(sorted(f for f in os.listdir(workdir) if f.startswith("ign-")) == ["ign-0000.mlpd"],
            f"ignored signal: files {sorted(os.listdir(workdir))}")
    # A forbidden name: one line, profiling off, the program runs.
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS="nodefaults,ring=1m,dumpsignal=PWR")
    p = t.run([t.MONO, t.program("quiet"), "10"], env=env)
    t.check(p.returncode == 0 and "bad value in 'dumpsignal=PWR': SIGPWR is Mono's (GC thread suspend)" in p.stderr,
            f"dumpsignal=PWR: exit {p.returncode}, stderr {p.stderr!r}")
    print("ok  a signal already ignored is left alone (one line); dumpsignal=PWR refused", flush=True)


def signal_flushes(workdir):
    # File mode: the signal is a flush round. The 100 allocations sit in the thread's buffer (flush
    # every 10 minutes) until the signal.
    out = os.path.join(workdir, "flush.mlpd")
    opts = f"nodefaults,alloc,flush=600000,dumpsignal=USR1,output={out}"
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)
    proc = subprocess.Popen([t.MONO, t.program("quiet"), "4000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)
    t.check(proc.stdout.readline().strip() == "ready", "quiet: no ready")
    time.sleep(0.3)

    def quiet_count():
        m = re.search(r"^\s*\S+ \S+\s+(\d+)\s+Quiet$", t.run([t.MLPD, "report", out]).stdout, re.M)
        return int(m.group(1)) if m else 0

    before = quiet_count()
    os.kill(proc.pid, signal.SIGUSR1)
    flushed = wait_for(lambda: quiet_count() == 100, 3)
    out_text, err = proc.communicate(timeout=60)
    t.check(before < 100, f"file mode: all {before} allocations were in the file before the signal")
    t.check(flushed, "file mode: the signal did not flush the allocations into the file")
    t.check(proc.returncode == 0 and out_text.strip() == "done", f"file mode: exit {proc.returncode} {out_text!r} {err!r}")
    verify_ok(out, "file mode")
    print("ok  file mode: dumpsignal=USR1 flushes the thread buffers", flush=True)


def unhandled(workdir):
    # Every way an unhandled exception ends the process goes through the runtime's exit, which dumps
    # the ring; Environment.FailFast does not (abort), but LogProfiler.TriggerHeapshot() called before
    # it returns only once the ring is dumped.
    for mode in ("main", "handler", "thread", "pool", "failfast-trigger"):
        plain = t.run([t.MONO, t.program("unhandled_modes"), mode], timeout=60)
        opts = f"nodefaults,alloc,exception,ring=1m,output={workdir}/u-{mode}-%n.mlpd"
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)
        p = t.run([t.MONO, t.program("unhandled_modes"), mode], env=env, timeout=60)
        # FailFast: Mono's crash report (addresses) follows on stdout; the program's own lines must match.
        same = p.stdout == plain.stdout if mode != "failfast-trigger" else \
            p.stdout.splitlines()[:2] == plain.stdout.splitlines()[:2]
        t.check(p.returncode == plain.returncode and same,
                f"{mode}: exit {p.returncode} {p.stdout[:300]!r} vs unprofiled {plain.returncode} {plain.stdout[:300]!r}")
        dumps = sorted(f for f in os.listdir(workdir) if f.startswith(f"u-{mode}-"))
        t.check(dumps == [f"u-{mode}-0000.mlpd"], f"{mode}: dumps {dumps}; stderr {p.stderr[-600:]!r}")
        if not dumps:
            continue
        path = os.path.join(workdir, dumps[0])
        counts = verify_ok(path, mode)
        t.check(counts.get("exception_throw", 0) >= 1, f"{mode}: no throw in the dump: {counts}")
        report = t.run([t.MLPD, "report", path]).stdout
        t.check(re.search(r"\b200\s+Crumb$", report, re.M) is not None, f"{mode}: the 200 Crumb allocations are not in the dump")
        if mode == "failfast-trigger":
            t.check(p.returncode == -signal.SIGABRT and "handler saw InvalidOperationException" in p.stdout,
                    f"failfast-trigger: exit {p.returncode}, {p.stdout[:300]!r}")
            t.check(counts.get("heap_end", 0) >= 1, f"failfast-trigger: no heapshot in the dump: {counts}")
    print("ok  unhandled exceptions (Main, with a handler, a thread, a pool item) dump the ring before the process "
          "dies; TriggerHeapshot before FailFast dumps it too", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-ring-sig-") as workdir:
        for part in (signal_dumps, signal_refused, signal_flushes, unhandled):
            sub = os.path.join(workdir, part.__name__)
            os.mkdir(sub)
            part(sub)
    t.finish("ring_signal")


if __name__ == "__main__":
    main()
