#!/usr/bin/env python3
"""CPU samples that follow CPU time, and stacks deeper than 32 frames (issue 22, items 2, 10 and 11).

* `sample` (100 Hz) on spinpark: the main thread spins for 3 CPU-seconds while 40 threads wake from
  a timed wait every 50 ms and park again. Mono's sampler signals every thread each time the
  process has used 10 ms of CPU; before, every signal that did not find its thread visibly inside
  a system call was a hit: ~46% too many hits, a quarter of them in __futex_abstimed_wait_common.
  Now: hits within 10% of the program's CPU-seconds x 100 (the CPU time of the same program run
  without the agent, the profiler's own signal overhead excluded; and never above the profiled
  run's CPU x 100 by more than 10%), wait frames at most 5% of the hits, the spinning method first.
* Oversubscribed (3 more spinning threads, the 40 workers woken every 2 ms): a woken worker waits
  for a CPU, and the signal finds it right back from its futex wait; before, 13% of the hits were
  blamed on __futex_abstimed_wait_common there. Now at most 3%, and the hits still follow the CPU
  time (at least 75%, or what the file records as the rate delivered when the sampler thread itself
  waits for a CPU; never under 60%: the workers' own wake-and-wait CPU is not charged to the wait).
* `sample=1000`: the kernel's CPU-time timers deliver fewer ticks than that (scheduler ticks); the
  file records the rate asked for and the rate delivered (profiler counters "Sample rate asked
  (Hz)", "Sample rate delivered (Hz)", "Sampled threads' clock"), and the hits agree with the
  delivered rate x the CPU time.
* `sample-real` keeps charging waits: the parked workers' futex waits lead its summary.
* Depth: recursion 150 deep gives samples of more than 32 (150+) managed frames and no marker;
  300 deep gives 256 frames plus the `[truncated]` marker (format::kTruncatedMethod, described by a
  method_jit event) at the root of every such sample; mprof-report, verify --strict and
  Mono.Profiler.Log read the files.
* Names: no native frame is written mangled (`_Z...`), and libmlpd's own frames are `[mlpd] ...`.
"""
import json
import os
import resource
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
WAITS = t.WAITS
SKID = re.compile(r"^(__clock_gettime|clock_gettime|\?\? \(\[vdso\]\+0x[0-9a-f]+\))$")


def run_cpu(args, options=None, out=None, timeout=300):
    """Runs mono ARGS (with the agent when options is given); returns (rc, stdout, stderr)."""
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    if options is not None:
        env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},verbose,output={out}")
    p = subprocess.Popen([t.MONO, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
    return p.returncode, so.decode(errors="replace"), se.decode(errors="replace")


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(args, options=None, out=None):
    """run_cpu, and the CPU seconds the run used (RUSAGE_CHILDREN around it: the child is reaped)."""
    before = children_cpu()
    rc, so, se = run_cpu(args, options, out)
    return rc, so, se, children_cpu() - before


def hits_of(path):
    rc, obj, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and obj and obj.get("ok"), f"{path}: verify --strict: {(obj or {}).get('errors', [])[:3]} {p.stderr[:200]}")
    return (obj or {}).get("counts", {}).get("sample_hit", 0)


def summary(path):
    rc, rows, _ = t.mprof_sample_summary(path)
    t.check(rc == 0, f"{path}: mprof-report exit {rc}")
    return rows


def counters(path):
    """Last total of each counter, from mlpd dump."""
    text = t.run([t.MLPD, "dump", path], timeout=300).stdout
    last = {}
    for m in re.finditer(r"\d+ \(([^()]*(?:\([^()]*\))?[^()]*)\) = -?\d+ \(total (-?\d+)\)", text):
        last[m.group(1)] = int(m.group(2))
    return last, text


def stacks(dump_text):
    """(ips, frames) of every sample_hit, innermost first."""
    out = []
    for m in re.finditer(r"sample_hit tid=\S+ .*?ips=\[([^\]]*)\] frames=\[(.*)\]$", dump_text, re.M):
        frames = [f.strip() for f in m.group(2).split(" | ")] if m.group(2) else []
        out.append((m.group(1), frames))
    return out


def readable_by_mono(label, path):
    rep = t.run([t.MPROF_REPORT, path], timeout=300)
    t.check(rep.returncode == 0, f"{label}: mprof-report exit {rep.returncode}: {rep.stderr[:300]}")
    lrc, lcounts, _, lp = t.log_count(path)
    t.check(lrc == 0 and lcounts.get("sample_hit", 0) > 0, f"{label}: Mono.Profiler.Log: {lp.stderr[:300]}")


def check_cpu_follows_cpu_time(workdir):
    args = [t.program("spinpark"), "3000", "40", "50"]
    rc, so, _, base_cpu = timed(args)
    t.check(rc == 0 and so.startswith("spin "), f"cpu: plain run failed: {rc} {so!r}")
    out = os.path.join(workdir, "cpu.mlpd")
    rc, so, se, cpu = timed(args, "sample", out)
    t.check(rc == 0 and so.startswith("spin "), f"cpu: program output/status changed: {rc} {so!r} {se[-300:]!r}")
    hits = hits_of(out)
    want = base_cpu * 100
    # Too many hits is the bug (blocked threads charged: ~46% too many). Too few means Mono's sampler
    # thread did not get a CPU at every period: on a machine loaded beyond its cores (other tests at
    # once), it ticks late and hits fall short of the rate; allow that shortfall only then.
    # A shortfall beyond that must show in the file: the "Sample rate delivered" counter below 95 Hz
    # (as in check_oversubscribed; seen in CI at load 5-6: 192-233 hits of 311, 39-74 Hz delivered).
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    low = 0.75 if loaded else 0.90
    c, _ = counters(out)
    delivered = c.get("Sample rate delivered (Hz)") or 0
    t.check(hits <= 1.10 * want and (hits >= low * want or (loaded and 0 < delivered < 95)),
            f"cpu: {hits} hits, the program uses {base_cpu:.2f} CPU-s ({want:.0f} expected at 100 Hz; "
            f"{cpu:.2f} CPU-s profiled; {delivered} Hz delivered; load average {os.getloadavg()[0]:.1f})")
    t.check(hits <= 1.10 * cpu * 100, f"cpu: {hits} hits for {cpu:.2f} CPU-seconds profiled")
    rows = summary(out)
    total = hits or 1
    waits = max((h for h, n in rows if WAITS.search(n)), default=0)
    t.check(waits <= 0.05 * total, f"cpu: {waits} of {total} hits in wait frames: {rows[:8]}")
    # Spin reads its thread's CPU clock (a system call, 3% of its time) every 16 us. On this kind of
    # virtual machine a signal sent to a running thread is often delivered only at its next kernel
    # entry: a C program doing the same gets 35-39% of its tgkill signals right after the system
    # call, and runs of spinpark anywhere from 2% to 60% in __clock_gettime/[vdso]. Those samples
    # are Spin's (its clock read is their caller); mprof-report's summary lists leaves only, so they
    # are set aside here, and Spin must lead the rest.
    rest = [r for r in rows if not SKID.search(r[1])]
    t.check(rest and rest[0][1] == "SpinPark:Spin (int)", f"cpu: first in the summary is {rows[:3]}")
    readable_by_mono("cpu", out)
    print(f"ok  cpu: {hits} hits for {base_cpu:.2f} CPU-s plain / {cpu:.2f} profiled; "
          f"{waits} in wait frames; first {rows[:1]}", flush=True)


def check_oversubscribed(workdir):
    out = os.path.join(workdir, "busy.mlpd")
    rc, so, se, cpu = timed([t.program("spinpark"), "2000", "40", "2", "0", "3"], "sample", out)
    t.check(rc == 0 and so.startswith("spin "), f"busy: program output/status changed: {rc} {so!r} {se[-300:]!r}")
    hits = hits_of(out)
    rows = summary(out)
    waits = max((h for h, n in rows if WAITS.search(n)), default=0)
    t.check(waits <= 0.03 * max(hits, 1), f"busy: {waits} of {hits} hits in wait frames: {rows[:8]}")
    t.check(hits <= 1.10 * cpu * 100, f"busy: {hits} hits for {cpu:.2f} CPU-seconds")
    # Four spinning threads on this 2-core machine (more when other tests run at once): Mono's sampler
    # thread waits for a CPU too and ticks late, so fewer than 100 hits per CPU-second may be
    # delivered. A shortfall beyond 25% must show in the file (the "Sample rate delivered" counter
    # below 100 Hz), and it must stay a shortfall, not a loss (60%: runs under load gave 68-73%).
    c, _ = counters(out)
    delivered = c.get("Sample rate delivered (Hz)") or 0
    t.check(hits >= 0.60 * cpu * 100, f"busy: {hits} hits for {cpu:.2f} CPU-seconds")
    # (The rate delivered is per second of the sampled threads' clock, which leaves out the CPU of
    # threads Mono does not sample and the signals' own cost: not hits / process CPU exactly.)
    t.check(hits >= 0.75 * cpu * 100 or 0 < delivered < 95,
            f"busy: {hits} hits for {cpu:.2f} CPU-seconds, and the file says {delivered} Hz delivered")
    print(f"ok  busy: {hits} hits for {cpu:.2f} CPU-s ({delivered} Hz delivered, recorded), "
          f"{waits} in wait frames", flush=True)


def check_rate_recorded(workdir):
    out = os.path.join(workdir, "rate.mlpd")
    rc, so, se, cpu = timed([t.program("spinpark"), "1000", "0"], "sample=1000", out)
    t.check(rc == 0 and so.startswith("spin "), f"rate: program output/status changed: {rc} {so!r} {se[-300:]!r}")
    hits = hits_of(out)
    c, _ = counters(out)
    asked = c.get("Sample rate asked (Hz)")
    delivered = c.get("Sample rate delivered (Hz)")
    clock = c.get("Sampled threads' clock")
    t.check(asked == 1000, f"rate: the file says {asked} Hz asked")
    t.check(delivered is not None and 0 < delivered <= 1000, f"rate: the file says {delivered} Hz delivered")
    t.check(clock is not None and clock > 0, f"rate: sampled threads' clock {clock}")
    if delivered:
        want = delivered * cpu
        t.check(abs(hits - want) <= 0.15 * want,
                f"rate: {hits} hits, {delivered} Hz delivered x {cpu:.2f} CPU-s = {want:.0f}")
        # The sampled threads' clock (100 ns units) x the delivered rate gives the hits back.
        t.check(abs(hits - delivered * clock / 1e7) <= 0.02 * hits + 2,
                f"rate: {hits} hits against {delivered} Hz x {clock / 1e7:.3f} s")
    print(f"ok  rate: 1000 Hz asked, {delivered} Hz delivered (recorded), {hits} hits for {cpu:.2f} CPU-s", flush=True)


def check_real_shows_waits(workdir):
    out = os.path.join(workdir, "real.mlpd")
    rc, so, se, _ = timed([t.program("spinpark"), "1000", "40", "50"], "sample-real", out)
    t.check(rc == 0 and so.startswith("spin "), f"real: program output/status changed: {rc} {so!r} {se[-300:]!r}")
    hits = hits_of(out)
    rows = summary(out)
    waits = max((h for h, n in rows if WAITS.search(n)), default=0)
    t.check(waits >= 0.5 * hits, f"real: only {waits} of {hits} hits in waits: {rows[:6]}")
    t.check(rows and WAITS.search(rows[0][1]), f"real: first in the summary is {rows[:3]}")
    print(f"ok  sample-real: {waits} of {hits} hits in waits; first {rows[:1]}", flush=True)


def check_depth(workdir):
    results = {}
    for depth in (150, 300):
        out = os.path.join(workdir, f"deep{depth}.mlpd")
        # 1.5 CPU-seconds: at load 6 on 2 cores Mono's sampler delivers 40 of the 200 Hz asked.
        rc, so, se, _ = timed([t.program("spinpark"), "1500", "0", "50", str(depth)], "sample=200", out)
        t.check(rc == 0 and so.startswith("spin "), f"depth {depth}: output/status changed: {rc} {so!r} {se[-300:]!r}")
        hits_of(out)
        readable_by_mono(f"depth {depth}", out)
        _, text = counters(out)
        # Spin's samples: Spin innermost, or Spin under its clock read (SpinPark:ClockGettime's
        # wrapper and ThreadCpuMs, where a signal sent to a running thread often lands).
        spin = [f for _, f in stacks(text) if "SpinPark:Spin (int)" in f[:3]]
        t.check(len(spin) >= 10, f"depth {depth}: {len(spin)} samples in Spin")
        results[depth] = spin
        marker = re.findall(r'method_jit code=0x100 size=1 method=0x100 \[truncated\]', text)
        if depth == 150:
            t.check(all(len(f) > 150 and f[-1] != "[truncated]" for f in spin),
                    f"depth 150: frames per Spin sample {sorted(set(len(f) for f in spin))}, roots {set(f[-1] for f in spin)}")
            cut = [f for _, f in stacks(text) if len(f) > 256 or (f and f[-1] == "[truncated]")]
            t.check(not marker, f"depth 150: the [truncated] marker was described; {len(cut)} samples cut, "
                                f"the first: {cut[0][:12] if cut else None} ... {cut[0][-12:] if cut else None}")
        else:
            t.check(all(len(f) == 257 and f[-1] == "[truncated]" and f.count("[truncated]") == 1 for f in spin),
                    f"depth 300: frames per Spin sample {sorted(set(len(f) for f in spin))}, roots {set(f[-1] for f in spin)}")
            t.check(len(marker) == 1, f"depth 300: the marker described {len(marker)} times")
            # Issue 33: the report names the cut and its reason, from the "Samples truncated" counter;
            # nothing is cut for want of the stack copy, and at most 1% for want of a name: a sample
            # whose AOT frame the finalizer thread has not named by the last drain at exit is cut there
            # (docs/reports.md; it happened to 1 of 287 in a loaded CI run).
            rep = t.run([t.MLPD, "report", "--json", out], timeout=300)
            cut = {}
            try:
                cut = json.loads(rep.stdout)["samples"]["cut"]
            except (ValueError, KeyError, TypeError):
                pass
            hits = len(stacks(text))
            t.check(cut.get("truncated", 0) >= len(spin) and cut.get("beyond_stack_copy", 0) == 0
                    and cut.get("frame_not_named", 0) <= max(1, hits // 100),
                    f"depth 300: the report's cuts are {cut} for {hits} hits")
            rep = t.run([t.MLPD, "report", out], timeout=300)
            line = [l for l in rep.stdout.splitlines() if l.startswith("  stacks cut short: ")]
            t.check(len(line) == 1 and "deeper than the 256 frames kept, rooted at [truncated]" in line[0],
                    f"depth 300: the report's cut line is {line}")
    print(f"ok  depth: 150 deep -> {sorted(set(len(f) for f in results.get(150, [])))} frames; "
          f"300 deep -> {sorted(set(len(f) for f in results.get(300, [])))} frames ending [truncated]", flush=True)


def check_names(workdir):
    out = os.path.join(workdir, "names.mlpd")
    rc, so, se, _ = timed([t.program("allocheavy")], "sample=1000,alloc", out)
    t.check(rc == 0, f"names: exit {rc}: {se[-300:]!r}")
    text = t.run([t.MLPD, "dump", out], timeout=300).stdout
    names = re.findall(r'sample_usym address=0x[0-9a-f]+ size=\d+ name="(.*)"$', text, re.M)
    mangled = [n for n in names if n.startswith("_Z") or n.startswith("[mlpd] _Z")]
    t.check(names and not mangled, f"names: {len(mangled)} mangled of {len(names)}: {mangled[:3]}")
    ours = [n for n in names if "mlpd::" in n]
    t.check(ours and all(n.startswith("[mlpd] ") for n in ours), f"names: our frames {ours[:3]}")
    print(f"ok  names: {len(names)} native symbols, none mangled; ours e.g. {ours[:1]}", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-cpusampling-") as workdir:
        check_cpu_follows_cpu_time(workdir)
        check_oversubscribed(workdir)
        check_rate_recorded(workdir)
        check_real_shows_waits(workdir)
        check_depth(workdir)
        check_names(workdir)
    t.finish("cpu_sampling")


if __name__ == "__main__":
    main()
