#!/usr/bin/env python3
"""Issue 15 with real Mono and the real agent: CPU usage counters, pause/resume, sampled allocations.

* CPU counters (cputhreads.exe: a "busy" thread spinning until it has used 1 s of CPU, which it
  measures itself with clock_gettime(CLOCK_THREAD_CPUTIME_ID), a "sleeper" sleeping meanwhile): the
  busy thread's counter (user + system) grows by one second per second of the thread's own CPU time
  (its final value within 5% + 20 ms of what the thread measured; the rate per wall second is printed,
  it is ~1 on an idle machine), the sleeper's stays under 50 ms, the process's CPU time (user + system)
  at the last sample equals the sum of the threads' within 10%, mprof-report's counters report lists
  them, `mlpd verify --strict` passes.
* Pause/resume (phases.exe, three phases with their own methods and classes), with `calls,alloc`:
  (a) start-paused + port `resume` before phase 2 + port `pause` after it, (b) port `pause` before
  phase 1 + `resume`/`pause` around phase 2: the file holds exactly phase 2's calls (7 enters and 7
  leaves of Work2) and allocations (7000 Phase2Obj), none of phases 1 and 3; the answers are right; the
  "Profiling paused" counter reads 1 then 0 then 1; sync points mark the changes; verify --strict passes.
* alloc-sample (allocheavy.exe): with alloc-sample=4k the estimated bytes per class (each sample of
  size s weighs s / (1 - exp(-s/4096)), computed here from `mlpd dump --json`) are within 10% of the
  exact totals of a full `gcalloc` run (100 blocks of allocheavy.exe, 31 MB) for the classes that hold 90% of the bytes; the file is at
  least 20x smaller; the header args and the "Allocation sample interval" counter carry the interval;
  `mlpd report` says its allocation numbers are estimates and they are within 10% too; mprof-report
  reads the file.
"""
import json
import math
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def env_with(**kw):
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    env.pop("LD_PRELOAD", None)
    env.update(kw)
    return env


def dump_json(path):
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(p.returncode == 0, f"dump {path}: exit {p.returncode}: {p.stderr[:300]}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def counter_series(events):
    """{counter name: [(seconds, total)]} from the counter_samples events."""
    series = {}
    for e in events:
        if e.get("kind") != "counter_samples":
            continue
        for v in e.get("values", []):
            if "name" in v and "total" in v:
                series.setdefault(v["name"], []).append((e["seconds"], v["total"]))
    return series


def report_json(label, path, *args):
    p = t.run([t.MLPD, "report", "--json", *args, path], timeout=300)
    t.check(p.returncode == 0, f"{label}: mlpd report exit {p.returncode}: {p.stderr[:300]}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        t.check(False, f"{label}: mlpd report --json is not JSON: {p.stdout[:300]}")
        return {}


def verify_strict(label, path):
    rc, v, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and v and v.get("ok"), f"{label}: verify --strict failed: {p.stdout[:400]} {p.stderr[:400]}")
    return v


# ---- CPU usage counters ------------------------------------------------------------------------

def cpu_counters(work):
    out = os.path.join(work, "cpu.mlpd")
    p = t.run([t.MONO, t.program("cputhreads"), "1000"],
              env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,counter,flush=100,output={out}"))
    m = re.search(r"busy (\d+) (\d+)", p.stdout)
    if not t.check(p.returncode == 0 and m, f"cpu: program failed: {p.returncode} {p.stdout} {p.stderr[:300]}"):
        return
    own_cpu, own_wall = int(m.group(1)) / 1000, int(m.group(2)) / 1000
    verify_strict("cpu", out)
    s = counter_series(dump_json(out))
    UNIT = 1e7  # 100 ns units per second

    def thread_total(pattern):
        names = [n for n in s if re.fullmatch(r"Thread CPU time \(user\): " + pattern + r" \[\d+\]", n)]
        if not t.check(len(names) == 1, f"cpu: {len(names)} user CPU counters for thread '{pattern}': "
                                        f"{sorted(n for n in s if n.startswith('Thread CPU'))}"):
            return None, None
        user = s[names[0]]
        sysname = names[0].replace("(user)", "(system)")
        system = dict(s.get(sysname, []))
        # (seconds, user+system) at each sample of the user counter (system: last value so far)
        out_series, last_sys = [], 0
        sys_samples = sorted(s.get(sysname, []))
        for sec, u in user:
            for ss, sv in sys_samples:
                if ss <= sec:
                    last_sys = sv
            out_series.append((sec, (u + last_sys) / UNIT))
        del system
        return names[0], out_series

    busy_name, busy = thread_total("busy")
    sleeper_name, sleeper = thread_total("sleeper")
    if busy:
        # The steepest stretch of at least 0.5 s: the spinning one.
        best = 0.0
        for i in range(len(busy)):
            for j in range(i + 1, len(busy)):
                dt = busy[j][0] - busy[i][0]
                if dt >= 0.5:
                    best = max(best, (busy[j][1] - busy[i][1]) / dt)
        print(f"cpu: busy thread: counter {busy[-1][1]:.3f} s, measured by itself {own_cpu:.3f} s CPU in {own_wall:.3f} s "
              f"wall; the counter grew at up to {best:.2f} s per wall second", flush=True)
        t.check(abs(busy[-1][1] - own_cpu) <= 0.05 * own_cpu + 0.02,
                f"cpu: the busy thread's counter says {busy[-1][1]:.3f} s, the thread measured {own_cpu:.3f} s")
        t.check(best <= 1.1, f"cpu: the busy thread's CPU time grows at {best:.2f} s/s, more than one CPU")
    if sleeper:
        t.check(sleeper[-1][1] < 0.05, f"cpu: the sleeper used {sleeper[-1][1]:.3f} s of CPU")
    # Process total vs the sum of every thread's last values.
    proc = sum(s[n][-1][1] for n in ("CPU time (user)", "CPU time (system)") if n in s) / UNIT
    threads = sum(v[-1][1] for n, v in s.items() if n.startswith("Thread CPU time")) / UNIT
    print(f"cpu: process {proc:.3f} s, sum of threads {threads:.3f} s", flush=True)
    t.check(proc > 0 and abs(proc - threads) <= 0.1 * proc,
            f"cpu: process CPU {proc:.3f} s vs sum of threads {threads:.3f} s: more than 10% apart")
    # mlpd report's CPU table.
    rep = report_json("cpu", out, "--top", "50").get("cpu_threads", {})
    rows = {r["name"]: r for r in rep.get("threads", [])}
    busy_row = next((r for n, r in rows.items() if n.startswith("busy [")), None)
    if t.check(busy_row, f"cpu: mlpd report has no busy thread in its CPU table: {rep}") and busy:
        t.check(abs(busy_row["user_s"] + busy_row["system_s"] - busy[-1][1]) < 0.011,
                f"cpu: report says busy used {busy_row}, the counters {busy[-1][1]}")
    t.check(abs(rep.get("process_user_s", 0) + rep.get("process_system_s", 0) - proc) < 0.011,
            f"cpu: report's process CPU {rep} vs {proc}")
    # mprof-report lists them.
    p = t.run([t.MPROF_REPORT, "--reports=counters", "--verbose", out], timeout=120)
    t.check(p.returncode == 0, f"cpu: mprof-report exit {p.returncode}")
    for name in ("CPU time (user)", "CPU time (system)", busy_name, sleeper_name):
        if name:
            t.check(name in p.stdout, f"cpu: mprof-report does not list the counter {name!r}")


# ---- pause / resume ----------------------------------------------------------------------------

class Phases:
    def __init__(self, work, name, options):
        self.out = os.path.join(work, name + ".mlpd")
        self.err_path = os.path.join(work, name + ".stderr")
        self.err = open(self.err_path, "wb")
        env = env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},port=0,output={self.out}")
        self.proc = subprocess.Popen([t.MONO, t.program("phases")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env=env)
        self.port = None

    def line(self, timeout=60):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().decode().strip() if r else None

    def connect(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            m = re.search(r"mlpd: command port 127\.0\.0\.1:(\d+)", f.read())
        if not t.check(m, "phases: no command port line on stderr"):
            return False
        self.sock = socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=10)
        self.rfile = self.sock.makefile("rb")
        return True

    def ask(self, command):
        self.sock.sendall((command + "\n").encode())
        return self.rfile.readline().decode().strip()

    def go(self):
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()

    def finish(self):
        self.sock.close()
        self.proc.stdin.close()
        rest = self.proc.stdout.read().decode()
        rc = self.proc.wait(timeout=60)
        self.err.close()
        return rc, rest


def phase_counts(events):
    """{'enter Work1': n, 'leave Work1': n, 'alloc Phase1Obj': n, ...} and the paused counter's values."""
    counts = {}
    paused = []
    syncs = 0
    for e in events:
        k = e.get("kind")
        if k in ("method_enter", "method_leave", "method_exc_leave"):
            name = e.get("method_name") or e.get("name") or ""
            m = re.search(r"Work(\d)", name)
            if m:
                key = f"{'enter' if k == 'method_enter' else 'leave'} Work{m.group(1)}"
                counts[key] = counts.get(key, 0) + 1
        elif k == "alloc":
            name = e.get("class_name") or e.get("name") or ""
            m = re.fullmatch(r"Phase(\d)Obj", name)
            if m:
                counts[f"alloc Phase{m.group(1)}Obj"] = counts.get(f"alloc Phase{m.group(1)}Obj", 0) + 1
        elif k == "counter_samples":
            for v in e.get("values", []):
                if v.get("name") == "Profiling paused":
                    paused.append(v.get("total"))
        elif k == "sync_point":
            syncs += 1
    return counts, paused, syncs


def pause_resume(work, name, start_paused):
    opts = "nodefaults,calls,alloc,counter,flush=100" + (",start-paused" if start_paused else "")
    ph = Phases(work, name, opts)
    try:
        t.check(ph.line() == "phase 1", f"{name}: no 'phase 1'")
        if not ph.connect():
            return
        if not start_paused:
            t.check(ph.ask("pause") == "OK paused", f"{name}: pause answer")
        t.check(ph.ask("pause") == "OK paused (already)", f"{name}: second pause answer")
        ph.go()
        t.check(ph.line() == "phase 2", f"{name}: no 'phase 2'")
        time.sleep(0.3)  # a counter sample while paused
        t.check(ph.ask("resume") == "OK resumed", f"{name}: resume answer")
        ph.go()
        t.check(ph.line() == "phase 3", f"{name}: no 'phase 3'")
        time.sleep(0.3)
        t.check(ph.ask("pause") == "OK paused", f"{name}: pause answer after phase 2")
        t.check(ph.ask("events") .startswith("OK events: "), f"{name}: events answer while paused")
        ph.go()
        t.check(ph.line() == "end", f"{name}: no 'end'")
        time.sleep(0.3)
        ph.go()
        rc, rest = ph.finish()
        t.check(rc == 0 and "done True" in rest, f"{name}: program exit {rc} {rest!r}")
    finally:
        if ph.proc.poll() is None:
            ph.proc.kill()
    verify_strict(name, ph.out)
    counts, paused, syncs = phase_counts(dump_json(ph.out))
    print(f"{name}: {counts}, paused counter {paused}, {syncs} sync points", flush=True)
    want = {"enter Work2": 7, "leave Work2": 7, "alloc Phase2Obj": 7000}
    t.check(counts == want, f"{name}: recorded {counts}, expected exactly {want}")
    # The counter: paused (1) ... resumed (0) ... paused (1); no 0 before the resume.
    # (Without start-paused a sample may come before the first pause: a leading 0.)
    squeezed = [v for i, v in enumerate(paused) if i == 0 or paused[i - 1] != v]
    if not start_paused and squeezed[:1] == [0]:
        squeezed = squeezed[1:]
    t.check(squeezed[:3] == [1, 0, 1], f"{name}: 'Profiling paused' went {squeezed}, expected 1, 0, 1")
    t.check(syncs >= (2 if start_paused else 3), f"{name}: {syncs} sync points")
    rc, _, p = t.mprof_report(ph.out)
    t.check(rc == 0, f"{name}: mprof-report exit {rc}: {p.stderr[:300]}")
    # mlpd report: the recorded intervals (phase 2; without start-paused also the start-up before the
    # first pause), and the allocations are exact (not sampled).
    rep = report_json(name, ph.out, "--top", "50")
    iv = rep.get("recorded", {}).get("intervals", [])
    t.check(len(iv) == (1 if start_paused else 2), f"{name}: mlpd report's recorded intervals {iv}")
    types = {x["name"]: x["objects"] for x in rep.get("alloc", {}).get("types", [])}
    t.check(types.get("Phase2Obj") == 7000 and "Phase1Obj" not in types and "Phase3Obj" not in types,
            f"{name}: mlpd report's allocation types {types}")


# ---- sampled allocations -----------------------------------------------------------------------

def alloc_bytes(events, interval):
    """{class: (bytes, count)}: exact (interval 0) or estimated from samples."""
    out = {}
    for e in events:
        if e.get("kind") != "alloc":
            continue
        name = e.get("class_name") or e.get("name") or "?"
        size = e["size"]
        w = 1.0 if not interval else 1.0 / (-math.expm1(-size / interval))
        b, c = out.get(name, (0.0, 0.0))
        out[name] = (b + size * w, c + w)
    return out


def alloc_sample(work):
    INTERVAL = 4096
    full = os.path.join(work, "full.mlpd")
    sampled = os.path.join(work, "sampled.mlpd")
    p = t.run([t.MONO, t.program("allocheavy"), "100"],
              env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,output={full}"))
    t.check(p.returncode == 0, f"alloc: full run exit {p.returncode}")
    p = t.run([t.MONO, t.program("allocheavy"), "100"],
              env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,counter,alloc-sample=4k,output={sampled}"))
    t.check(p.returncode == 0, f"alloc: sampled run exit {p.returncode}")
    verify_strict("alloc sampled", sampled)
    ev_full, ev_s = dump_json(full), dump_json(sampled)
    header = next((e["header"] for e in ev_s if "header" in e), {})
    t.check("alloc-sample=4k" in header.get("args", ""), f"alloc: header args {header.get('args')!r}")
    s = counter_series(ev_s)
    t.check(s.get("Allocation sample interval", [(0, 0)])[-1][1] == INTERVAL,
            f"alloc: counter 'Allocation sample interval' = {s.get('Allocation sample interval')}")
    exact, est = alloc_bytes(ev_full, 0), alloc_bytes(ev_s, INTERVAL)
    total = sum(b for b, _ in exact.values())
    acc = 0.0
    for name, (b, c) in sorted(exact.items(), key=lambda kv: -kv[1][0]):
        if acc >= 0.9 * total:
            break
        acc += b
        e = est.get(name, (0.0, 0.0))[0]
        print(f"alloc: {name}: exact {int(b)} bytes ({int(c)} objects), estimated {int(e)} ({(e - b) / b * 100:+.1f}%)",
              flush=True)
        t.check(abs(e - b) <= 0.1 * b, f"alloc: {name}: estimated {int(e)} bytes vs exact {int(b)}: more than 10% off")
    # mlpd report's estimates: the same weights, in the model.
    rep = report_json("alloc", sampled, "--top", "50").get("alloc", {})
    t.check(rep.get("estimated") is True and rep.get("sample_interval") == INTERVAL,
            f"alloc: mlpd report does not say its numbers are estimates: { {k: v for k, v in rep.items() if k != 'types' and k != 'sites'} }")
    rtypes = {x["name"]: x["bytes"] for x in rep.get("types", [])}
    acc = 0.0
    for name, (b, c) in sorted(exact.items(), key=lambda kv: -kv[1][0]):
        if acc >= 0.9 * total:
            break
        acc += b
        r = rtypes.get(name, 0)
        t.check(abs(r - b) <= 0.1 * b, f"alloc: mlpd report estimates {name} at {r} bytes, exact {int(b)}")
    fs, ss = os.path.getsize(full), os.path.getsize(sampled)
    print(f"alloc: file {fs} bytes (every allocation) vs {ss} bytes (alloc-sample=4k): {fs / max(ss, 1):.1f}x", flush=True)
    t.check(fs >= 20 * ss, f"alloc: sampled file only {fs / max(ss, 1):.1f}x smaller")
    rc, _, p = t.mprof_report(sampled)
    t.check(rc == 0, f"alloc: mprof-report exit {rc}: {p.stderr[:300]}")


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-i15-") as work:
        for name, fn in (("cpu", lambda: cpu_counters(work)),
                         ("pause (start-paused)", lambda: pause_resume(work, "paused_start", True)),
                         ("pause (port)", lambda: pause_resume(work, "paused_port", False)),
                         ("alloc-sample", lambda: alloc_sample(work))):
            start = time.monotonic()
            fn()
            print(f"{name}: {time.monotonic() - start:.1f} s", flush=True)
    t.finish("agent_issue15")


if __name__ == "__main__":
    main()
