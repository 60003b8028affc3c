#!/usr/bin/env python3
"""Statistical sampling (`sample`, `sample-real`), checked with mprof-report, `mlpd verify --strict`
and Mono.Profiler.Log (LogCount):

* a call-heavy C# program: the sample summary names the hot managed method first;
* a program that spends its time in a native library through P/Invoke: the hot native function is
  named first, with its real start and size (not "unresolved", not a neighbouring symbol);
* CPU-time mode never reports a thread blocked in the kernel; wall-clock mode names a sleeping
  thread's leaf by the function it is in (not __nptl_death_event, as Mono's profiler does);
* the pool: with maxsamples=1 samples are dropped and counted, never silently lost; the largest pool
  (16384 records, ~17 KiB each) is not faulted in at start (the process's RSS grows by a few MiB, not
  by one page per record);
* fork while sampling: the pthread_atfork guard around the helper's unwinding chunks lets a forking
  program (no exec) run and exit normally;
* stress: dlopen/dlclose, malloc and threads in loops, sampled at 5 kHz wall clock with `calls`:
  normal output and exit status on every one of 20 runs, every file valid.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
WAITS = t.WAITS


def profile(prog, args, options, out, timeout=120):
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},verbose,output={out}")
    return t.run([t.MONO, t.program(prog), *args], env=env, timeout=timeout)


def sample_stats(stderr):
    m = re.search(r"mlpd: samples: (\d+) taken, (\d+) written, (\d+) idle skipped; dropped: (\d+) pool full, "
                  r"(\d+) after stop, (\d+) unfinished", stderr)
    if not m:
        return None
    keys = ("taken", "written", "idle", "pool_full", "after_stop", "unfinished")
    return dict(zip(keys, map(int, m.groups())))


def summary(path):
    return t.mprof_sample_summary(path)


def valid(label, path, expect_hits=True):
    """verify --strict, a full mprof-report and LogCount all accept the file and agree on the hits."""
    rc, obj, p = t.verify_json(path, strict=True)
    ok = t.check(rc == 0 and obj and obj.get("ok"), f"{label}: verify --strict failed: {(obj or {}).get('errors', [])[:5]} {p.stdout[:200]} {p.stderr[:200]}")
    hits = (obj or {}).get("counts", {}).get("sample_hit", 0)
    if expect_hits:
        t.check(hits > 0, f"{label}: no sample_hit events")
    rep = t.run([t.MPROF_REPORT, path], timeout=300)
    t.check(rep.returncode == 0, f"{label}: mprof-report exit {rep.returncode}: {rep.stderr[:300]}")
    lrc, lcounts, _, lp = t.log_count(path)
    t.check(lrc == 0 and lcounts.get("sample_hit", 0) == hits,
            f"{label}: Mono.Profiler.Log read {lcounts.get('sample_hit')} sample hits, verify {hits} ({lp.stderr[:200]})")
    return ok


def nm_symbol(lib, name):
    p = t.run(["nm", "-S", "--defined-only", lib])
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            return int(parts[0], 16), int(parts[1], 16)
    return None


def check_managed(workdir):
    out = os.path.join(workdir, "calls.mlpd")
    p = profile("samplecalls", ["1500"], "sample=1000", out)
    t.check(p.returncode == 0 and p.stdout == "calls: many True\n", f"managed: program output/status changed: {p.returncode} {p.stdout!r}")
    st = sample_stats(p.stderr)
    t.check(st is not None and st["taken"] == st["written"] and st["taken"] > 20, f"managed: sample accounting {st}")
    valid("managed", out)
    rc, rows, text = summary(out)
    t.check(rc == 0 and rows and rows[0][1] == "Work:Hot (ulong)", f"managed: first in the summary is {rows[:3]}")
    # CPU-time mode: a thread blocked in the kernel is not reported (the finalizer thread waits all
    # along; Mono's profiler gives it as many hits as the busy thread). A signal can still land on it
    # in the few instructions it runs after a real wake-up (it is running then): allow a trace of that.
    # arch/generic does not read the interrupted instruction (the system-call test is the machine's):
    # only the CPU clock tells a waiting thread there, and a wake-up's CPU may be charged to the wait.
    waiting = [r for r in rows if WAITS.search(r[1])]
    total = sum(h for h, _ in rows)
    t.check(max((h for h, _ in waiting), default=0) <= (max(2, total // 100) if t.NATIVE_FRAMES else max(10, total // 20)),
            f"managed: blocked threads reported in CPU-time mode: {waiting} of {total} hits")
    # Signalled every thread (the fallback engine): the blocked ones are recognised and skipped. On
    # per-thread CPU timers a blocked thread gets no signal at all: nothing to skip.
    timers = "engine: per-thread CPU timers" in p.stderr
    t.check(st is not None and (st["idle"] > 0 or timers), f"managed: no blocked thread was recognised as idle: {st}")
    print(f"ok  managed: {rows[0]} first of {sum(r[0] for r in rows)} hits; idle skipped {st and st['idle']}", flush=True)


def check_native(workdir):
    lib = os.path.join(t.PROGRAMS, "libmlpdhot.so")
    out = os.path.join(workdir, "native.mlpd")
    p = profile("samplenative", ["1500"], "sample=1000", out)
    t.check(p.returncode == 0 and p.stdout == "native: done True\n", f"native: program output/status changed: {p.returncode} {p.stdout!r}")
    valid("native", out)
    rc, rows, text = summary(out)
    t.check(rc == 0 and rows and rows[0][1] == "mlpd_hot_spin", f"native: first in the summary is {rows[:3]}")
    for cold in ("mlpd_cold_before", "mlpd_cold_after"):
        n = sum(h for h, name in rows if name == cold)
        hot = rows[0][0] if rows else 0
        t.check(n * 10 < hot, f"native: neighbour {cold} got {n} hits against {hot}")
    m = re.search(r"Unresolved hits:\s+(\d+)", text)
    total = sum(h for h, _ in rows)
    t.check(m is not None and int(m.group(1)) * 5 < max(total, 1), f"native: too many unresolved hits: {m and m.group(0)}")
    # The USYM carries the symbol's real start and size (module offset from the lib's own .symtab).
    expect = nm_symbol(lib, "mlpd_hot_spin")
    dump = t.run([t.MLPD, "dump", out]).stdout
    usym = re.findall(r'sample_usym address=0x([0-9a-f]+) size=(\d+) name="mlpd_hot_spin"', dump)
    t.check(len(usym) == 1, f"native: mlpd_hot_spin described {len(usym)} times (want once)")
    if expect and usym:
        t.check(int(usym[0][1]) == expect[1], f"native: size {usym[0][1]}, the library says {expect[1]}")
        t.check((int(usym[0][0], 16) - expect[0]) % 4096 == 0, "native: start is not the symbol's start (page offset differs)")
    # Metadata before use: the first hit comes after the USYM that names it.
    first_usym = dump.find('name="mlpd_hot_spin"')
    t.check(first_usym != -1 and first_usym < dump.find("sample_hit", first_usym - 1 if first_usym > 0 else 0) + 1,
            "native: the symbol is not described before its hits")
    print(f"ok  native: {rows[0] if rows else None} first; usym size {usym[0][1] if usym else None}", flush=True)


def check_wall_clock_leaf(workdir):
    out = os.path.join(workdir, "sleep.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample-real=500,output={out}")
    p = t.run([t.MONO, t.program("quiet"), "1500"], env=env)
    t.check(p.returncode == 0 and p.stdout == "ready\ndone\n", f"sleep: program output changed: {p.stdout!r}")
    valid("sleep", out)
    rc, rows, _ = summary(out)
    names = [n for _, n in rows]
    t.check("__nptl_death_event" not in names, f"sleep: a sleeping thread blamed on __nptl_death_event: {rows[:5]}")
    t.check(rows and WAITS.search(rows[0][1]) is not None, f"sleep: the sleeping leaf is not named as a wait: {rows[:5]}")
    t.check(not any(n.startswith("?? (libc") for n in names[:3]), f"sleep: libc leaf unnamed: {rows[:5]}")
    # Native unwinding works: blocked threads' stacks go down through libc into the runtime, every
    # frame named (a symbol, or a gap of a stripped module) by the USYMs written before the hit.
    dump = t.run([t.MLPD, "dump", out]).stdout
    stacks = [m.group(1).split(" | ") for m in re.finditer(r"sample_hit tid=.*? ips=\[([^\]]*)\]", dump)]
    deep = [s for s in stacks if len(s) >= 4]
    if not t.STACK_COPY:  # arch/generic, or qemu-user (no process_vm_readv): the leaf IP only
        t.check(len(stacks) > 0 and not deep, f"sleep: {len(deep)} of {len(stacks)} hits have native frames on arch/{t.ARCH}"
                f"{' (emulated)' if t.EMULATED else ''}")
    else:
        t.check(len(deep) * 2 >= len(stacks) > 0, f"sleep: {len(deep)} of {len(stacks)} hits have 4+ native frames")
    unnamed = sum(1 for s in deep for f in s if " " not in f.strip())
    t.check(unnamed == 0, f"sleep: {unnamed} native frames without a name, e.g. {deep[:1]}")
    print(f"ok  wall clock: sleeping threads named {rows[:2]}", flush=True)


def check_pool_full(workdir):
    out = os.path.join(workdir, "pool.mlpd")
    p = profile("samplestress", ["10"], "sample-real=5000,maxsamples=1", out)
    t.check(p.returncode == 7, f"pool: exit status {p.returncode}")
    st = sample_stats(p.stderr)
    t.check(st is not None and st["pool_full"] > 0 and st["taken"] == st["written"],
            f"pool: a one-record pool dropped nothing (or lost some): {st}")
    valid("pool", out)
    print(f"ok  pool: maxsamples=1 dropped {st and st['pool_full']} (counted), wrote {st and st['written']}", flush=True)


def resident_kib(options, out):
    """VmRSS of `quiet` (sleeping, sampled) once it is running."""
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    p = subprocess.Popen([t.MONO, t.program("quiet"), "1500"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.stdout.readline()
        time.sleep(0.5)
        with open(f"/proc/{p.pid}/status") as f:
            kib = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), None)
    finally:
        p.communicate(timeout=60)
    return kib, p.returncode


def check_pool_resident(workdir):
    out = os.path.join(workdir, "rss.mlpd")
    base, rc0 = resident_kib("nodefaults", out)
    big, rc1 = resident_kib("sample-real=100,maxsamples=0", out)
    t.check(rc0 == 0 and rc1 == 0 and base and big, f"rss: runs failed ({rc0}, {rc1}, {base}, {big})")
    # One page per record (the record's header) would be 16384 * 4 KiB = 64 MiB.
    t.check(base and big and big - base < 24 * 1024,
            f"rss: a 16384-record pool made the process {(big or 0) - (base or 0)} KiB larger")
    print(f"ok  pool: 16384 records add {(big or 0) - (base or 0)} KiB resident", flush=True)


def check_fork(workdir):
    out = os.path.join(workdir, "fork.mlpd")
    for i in range(3):
        p = profile("forker", ["1"], "sample-real=2000", out)
        t.check(p.returncode == 0 and p.stdout == "forked\n", f"fork run {i}: status {p.returncode} output {p.stdout!r} {p.stderr[-300:]!r}")
    valid("fork", out, expect_hits=False)
    print("ok  fork while sampling: normal output and status", flush=True)


def check_logprofiler(workdir):
    """Mono.Profiler.Log.LogProfiler.SetSampleParameters applies when sampling was set up at start."""
    out = os.path.join(workdir, "api.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=100,output={out}")
    p = t.run([t.MONO, t.program("logprofiler_api")], env=env)
    lines = p.stdout.splitlines()
    t.check(p.returncode == 0, f"api: exit status {p.returncode}: {p.stderr[-300:]}")
    t.check("SetSampleParameters(Real, 250) returned True" in lines, f"api: sample mode change not applied: {lines[-12:]}")
    t.check("mlpd:" not in p.stderr, f"api: the agent complained: {p.stderr[:300]}")
    valid("api", out, expect_hits=False)
    print("ok  LogProfiler.SetSampleParameters applies with sampling on", flush=True)


def check_stress(workdir, runs=20):
    plain = t.run([t.MONO, t.program("samplestress"), "30"])
    t.check(plain.returncode == 7, f"stress: plain run exit {plain.returncode}: {plain.stderr[:300]}")
    bad = 0
    for i in range(runs):
        out = os.path.join(workdir, f"stress-{i}.mlpd")
        p = profile("samplestress", ["30"], "sample-real=5000,calls", out, timeout=300)
        same = p.returncode == plain.returncode and p.stdout == plain.stdout
        if not t.check(same, f"stress run {i}: status {p.returncode} output {p.stdout!r} stderr {p.stderr[-600:]!r}"):
            bad += 1
            continue
        st = sample_stats(p.stderr)
        t.check(st is not None and st["taken"] == st["written"] and st["taken"] > 0, f"stress run {i}: accounting {st}")
        if not valid(f"stress run {i}", out):
            bad += 1
        os.unlink(out)
    print(f"ok  stress: {runs - bad}/{runs} runs with normal output, status and valid files", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-sampling-") as workdir:
        check_managed(workdir)
        check_native(workdir)
        check_wall_clock_leaf(workdir)
        check_pool_full(workdir)
        check_pool_resident(workdir)
        check_fork(workdir)
        check_logprofiler(workdir)
        check_stress(workdir)
    t.finish("sampling")


if __name__ == "__main__":
    main()
