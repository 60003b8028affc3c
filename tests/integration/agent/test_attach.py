"""mlpd attach / mlpd detach (issue 28, docs/attach.md): a program started with plain `mono`, profiled
from outside and left as it was.

- attach sample,heapshot=ondemand,gc,counter,port=0 to attach_service.exe (a service loop with a hot
  method and a growing list): the samples name AttachHot:Spin, a heapshot over the command port counts
  the AttachGrowing nodes, detach; the program finishes with its normal output ("done ...") and exit
  status 7; the file passes verify --strict and mprof-report reads it;
- attach, detach, attach with other options, detach, attach, detach: valid files; after each detach no
  thread of ours is left (no mlpd-helper, mlpd-sampler, mlpd-control, no Attach receiver), the control
  socket is gone and the park file there; the program exits by itself within a second of its Main
  returning, with its normal output and status;
- attach --for: waits, detaches, prints the verify line;
- a program that allocates (collections) while attached and detached ten times: no hang, normal output;
- refusals, each one line and a non-zero status, the target untouched (no trigger file, no thread dump
  in its output, exits normally): neither Mono nor .NET, `mono --attach=disable`, another user's process
  (the CLI run as nobody), a process profiled already (LD_PRELOAD, and a second attach), refused
  options (alloc);
- calls after attach: only methods compiled after it are instrumented (AttachLate.Step), with a notice;
- attach/detach cycles: the resident size stays bounded (the detached sessions' pages given back);
- workers (issue 33.3, 33.5): attach `sample,counter` to attach_workers.exe (threads req-0..req-3 busy,
  started before the attach): every sampled thread named, the CPU-time section within 10% of the CPU
  the process used in the window (/proc/PID/stat around attach and detach), at most 3% of the hits
  ending in an unnamed native leaf, and (mono-runtime-dbg installed) at most 2% of the self hits in
  `[runtime, unnamed]`; the same program with MLPD_TEST_DEBUG_DIR pointing at an empty directory (a
  machine without the debug symbols): the report's line names the package.
Prints the figures: time from `mlpd attach` to the first sample, the target's longest pause, and the
CPU cost of sampling after attach against the same options with LD_PRELOAD (work done in a fixed time).
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402
from attachtest import finish_program, first_sample_ms, out_file, refused, threads  # noqa: E402

WORK = os.path.abspath("attach_work")
AGENT = os.environ.get("MLPD_AGENT", "libmlpd.so")


def start(seconds, extra=(), env=None, prog="attach_service", args=()):
    e = dict(os.environ)
    e.pop("MLPD_OPTIONS", None)
    e.pop("LD_PRELOAD", None)
    if env:
        e.update(env)
    p = subprocess.Popen([t.MONO, *extra, t.program(prog), str(seconds), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=e, cwd=WORK)
    # "ready": the runtime runs Main (attaching before that would race the runtime's start).
    line = p.stdout.readline().decode()
    t.check(line.strip() == "ready", f"{prog}: first line {line!r}")
    time.sleep(0.3)
    return p


def program_lines(out):
    """The program's own output: Mono 6.8's listener prints 'attach: ...' lines on stdout (docs)."""
    return [l for l in out.splitlines() if not l.startswith("attach: ")]


def control_paths(pid):
    import pwd
    d = "/tmp/mono-" + pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    return d + f"/.mlpd-{pid}", d + f"/.mlpd-park-{pid}"


def park_file(pid):
    return control_paths(pid)[1]


def nothing_of_ours_left(pid, what):
    """Detached: no thread of ours (the control thread ends within a moment), the control socket gone,
    and the wake signal's handler the only thing left (docs/attach.md)."""
    ours = []
    for _ in range(100):
        ours = [n for n in threads(pid) if n.startswith("mlpd") or n == "Attach receiver"]
        if not ours and not os.path.exists(control_paths(pid)[0]):
            break
        time.sleep(0.02)
    t.check(not ours, f"{what}: threads of ours left: {ours}")
    t.check(not os.path.exists(control_paths(pid)[0]), f"{what}: control socket {control_paths(pid)[0]} left")
    return ours


def attach(pid, options, *extra):
    return t.run([t.MLPD, "attach", str(pid), *extra, options], timeout=120, cwd=WORK)


def detach(pid):
    return t.run([t.MLPD, "detach", str(pid)], timeout=120, cwd=WORK)


def strict_ok(path, what):
    rc, obj, p = t.verify_json(path, strict=True)
    t.check(rc == 0, f"{what}: verify --strict {path}: {p.stdout[:400]} {p.stderr[:200]}")


def main_scenario():
    p = start(8)
    began = time.time()
    a = attach(p.pid, "sample,heapshot=ondemand,gc,counter,port=0")
    t.check(a.returncode == 0, f"attach: exit {a.returncode}: {a.stdout} {a.stderr}")
    path = out_file(a)
    t.check(path and path.startswith(WORK), f"attach: output file {path!r} (default name in the caller's directory)")
    port = re.search(r"command port 127\.0\.0\.1:(\d+)", a.stdout)
    t.check(port, f"attach: no command port line: {a.stdout!r}")
    time.sleep(1.5)
    if port:
        h = t.run([t.MLPD, "heapshot", "--port", port.group(1)], timeout=60)
        t.check(h.returncode == 0 and h.stdout.startswith("OK heapshot"), f"heapshot over the port: {h.stdout!r} {h.stderr!r}")
    d = detach(p.pid)
    t.check(d.returncode == 0 and "detached" in d.stdout, f"detach: exit {d.returncode}: {d.stdout} {d.stderr}")
    left = threads(p.pid)
    t.check(not any(n in ("mlpd-helper", "mlpd-sampler", "Attach receiver") for n in left), f"threads after detach: {left}")
    if port:
        s = socket.socket()
        try:
            s.settimeout(2)
            closed = s.connect_ex(("127.0.0.1", int(port.group(1)))) != 0
        finally:
            s.close()
        t.check(closed, "the command port is still open after detach")
    rc, out, err = finish_program(p)
    lines = program_lines(out)
    t.check(rc == 7, f"attached program: exit status {rc} (want 7); stderr {err[-500:]!r}")
    t.check(len(lines) == 1 and lines[0].startswith("done "), f"attached program's output: {lines}")
    t.check("Full thread dump" not in out + err, "a thread dump was printed")
    gap = re.search(r"longest gap (\d+) ms", out)
    if not path:
        return
    strict_ok(path, "attach")
    rc, rows, text = t.mprof_sample_summary(path)
    hot = sum(h for h, name in rows if "AttachHot:Spin" in name)
    total = sum(h for h, _ in rows)
    t.check(rc == 0 and total > 0 and hot * 2 > total, f"samples: AttachHot:Spin {hot} of {total}: {rows[:5]}")
    r = t.run([t.MPROF_REPORT, "--reports=heapshot", path], timeout=300)
    m = re.search(r"^\s+\d+\s+(\d+)\s+\d+ AttachGrowing$", r.stdout, re.M)
    t.check(m and int(m.group(1)) > 10, f"heapshot: AttachGrowing count: {r.stdout[:800]}")
    ms = first_sample_ms(path, began)
    print(f"figure: attach to first sample {ms:.0f} ms; target's longest pause {gap.group(1) if gap else '?'} ms"
          if ms is not None else "figure: no sample", flush=True)


def heapshot_now(attach_result, what):
    port = re.search(r"command port 127\.0\.0\.1:(\d+)", attach_result.stdout)
    h = t.run([t.MLPD, "heapshot", "--port", port.group(1)], timeout=60) if port else None
    t.check(h and h.returncode == 0 and h.stdout.startswith("OK heapshot"),
            f"{what}: heapshot over the port: {h.stdout if h else attach_result.stdout!r}")


def reattach_scenario():
    """Each session asks for a heapshot: the finalizer thread writes both, the second through a log
    of the second agent (a thread's log of the first, detached agent is not used again)."""
    p = start(6)
    a1 = attach(p.pid, "sample,gc,heapshot=ondemand,port=0,output=first.mlpd")
    time.sleep(0.5)
    heapshot_now(a1, "first session")
    d1 = detach(p.pid)
    a2 = attach(p.pid, "sample-real,counter,heapshot=ondemand,port=0,output=second.mlpd")
    time.sleep(0.5)
    heapshot_now(a2, "second session")
    again = attach(p.pid, "sample")  # profiled already: refused, nothing changes
    t.check(again.returncode != 0 and "already" in again.stderr and len(again.stderr.strip().splitlines()) == 1,
            f"second attach: exit {again.returncode}, {again.stderr!r}")
    d2 = detach(p.pid)
    for what, r in (("attach 1", a1), ("detach 1", d1), ("attach 2", a2), ("detach 2", d2)):
        t.check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stdout} {r.stderr}")
    ours = nothing_of_ours_left(p.pid, "after the last detach")
    parked = park_file(p.pid)
    t.check(os.path.exists(parked), f"after the last detach: no park file {parked}")
    a3 = attach(p.pid, "gc,output=third.mlpd")  # woken from the park: a new control thread
    t.check(a3.returncode == 0 and "profiling into" in a3.stdout, f"attach 3 (parked): exit {a3.returncode}: {a3.stdout} {a3.stderr}")
    t.check(any(n == "mlpd-control" for n in threads(p.pid)), f"attach 3: no mlpd-control: {threads(p.pid)}")
    t.check(not os.path.exists(parked), f"attach 3: park file {parked} left")
    d3 = detach(p.pid)
    t.check(d3.returncode == 0, f"detach 3: exit {d3.returncode}: {d3.stdout} {d3.stderr}")
    nothing_of_ours_left(p.pid, "after the third detach")
    rc, out, err = finish_program(p)
    t.check(rc == 7 and program_lines(out)[-1].startswith("done "), f"reattached program: exit {rc}, {program_lines(out)}")
    gap = re.search(r"longest gap (\d+) ms", out)
    print(f"figure: longest pause of a program attached twice and detached twice, a heapshot in each: "
          f"{gap.group(1) if gap else '?'} ms", flush=True)
    for f in ("first.mlpd", "second.mlpd"):
        strict_ok(os.path.join(WORK, f), "reattach")
        r = t.run([t.MPROF_REPORT, "--reports=heapshot", os.path.join(WORK, f)], timeout=300)
        shots = re.findall(r"^\s+\d+\s+(\d+)\s+\d+ AttachGrowing$", r.stdout, re.M)
        t.check(r.returncode == 0 and len(shots) == 1 and int(shots[0]) > 10,
                f"{f}: one heapshot counting AttachGrowing, got {shots}: {r.stdout[:300]} {r.stderr[:300]}")
    strict_ok(os.path.join(WORK, "third.mlpd"), "attach 3")


def exit_promptly_scenario():
    """Main returns at 3 s; attached and detached before: gone within a second."""
    p = start(3)
    attach(p.pid, "gc")
    detach(p.pid)
    deadline = time.time() + 3 + 1.5
    rc, out, err = finish_program(p, timeout=30)
    t.check(time.time() < deadline + 1.0, f"exit: {time.time() - deadline + 1.5:.1f} s after Main's end")
    t.check(rc == 7, f"exit status {rc}")


def for_scenario():
    p = start(6)
    r = attach(p.pid, "sample,output=for.mlpd", "--for", "2")
    t.check(r.returncode == 0 and re.search(r"for\.mlpd: ok: ", r.stdout), f"attach --for: {r.returncode} {r.stdout!r} {r.stderr!r}")
    rc, out, err = finish_program(p)
    t.check(rc == 7, f"--for: exit {rc}")


def repeat_scenario():
    """Attach and detach ten times while the program allocates (collections): no hang, same output."""
    p = start(12)
    for i in range(10):
        a = attach(p.pid, f"sample,gc,output=rep{i}.mlpd")
        time.sleep(0.2)
        d = detach(p.pid)
        t.check(a.returncode == 0 and d.returncode == 0, f"round {i}: {a.stdout} {a.stderr} {d.stdout} {d.stderr}")
    rc, out, err = finish_program(p, timeout=90)
    t.check(rc == 7 and program_lines(out)[-1].startswith("done "), f"ten rounds: exit {rc}, {program_lines(out)[-1:]}")
    for i in range(10):
        strict_ok(os.path.join(WORK, f"rep{i}.mlpd"), f"round {i}")


def calls_scenario():
    """calls after attach: the JIT asks the instrumentation filter when it compiles a method, so the
    method first called after the attach (AttachLate.Step, at 2 s) is instrumented and AttachHot.Spin,
    compiled before, is not; the attach says so in one line. Detached, the program goes on as before."""
    p = start(4)
    a = attach(p.pid, "calls,output=calls.mlpd")
    t.check(a.returncode == 0 and "only methods compiled after the attach" in a.stdout,
            f"attach calls: exit {a.returncode}: {a.stdout!r} {a.stderr!r}")
    time.sleep(2.8)
    d = detach(p.pid)
    t.check(d.returncode == 0, f"detach calls: exit {d.returncode}: {d.stdout} {d.stderr}")
    # Again: the methods instrumented in the first session call the second one's callbacks (a frame
    # open at the attach has a leave without its enter).
    a2 = attach(p.pid, "calls,output=calls2.mlpd")
    time.sleep(0.3)
    d2 = detach(p.pid)
    t.check(a2.returncode == 0 and d2.returncode == 0, f"calls again: {a2.stdout} {a2.stderr} {d2.stdout} {d2.stderr}")
    rc, out, err = finish_program(p)
    t.check(rc == 7 and program_lines(out)[-1].startswith("done "), f"calls: exit {rc}, {program_lines(out)[-1:]}")
    path = os.path.join(WORK, "calls.mlpd")
    strict_ok(path, "calls")
    strict_ok(os.path.join(WORK, "calls2.mlpd"), "calls again")
    r2 = t.run([t.MPROF_REPORT, "--reports=call", os.path.join(WORK, "calls2.mlpd")], timeout=300)
    t.check(r2.returncode == 0 and "Total calls" in r2.stdout, f"calls again: mprof-report: {r2.stdout[:300]} {r2.stderr[:300]}")
    dump = t.run([t.MLPD, "dump", path], timeout=300).stdout
    enters = [l for l in dump.splitlines() if " method_enter " in l]
    late = sum(1 for l in enters if "AttachLate:Step" in l)
    t.check(late > 10, f"calls: {late} enters of AttachLate:Step (of {len(enters)})")
    t.check(not any("AttachHot:Spin" in l for l in enters), "calls: AttachHot:Spin (compiled before the attach) was instrumented")
    # mprof-report reads them (its summary lists only methods with 1 ms or more; its total counts all).
    r = t.run([t.MPROF_REPORT, "--reports=call", path], timeout=300)
    total = re.search(r"Total calls: (\d+)", r.stdout)
    t.check(r.returncode == 0 and total and int(total.group(1)) >= late,
            f"calls: mprof-report: {r.stdout[:600]} {r.stderr[:300]}")
    print(f"figure: calls after attach: AttachLate:Step entered {late} times, {len(enters)} enters in all", flush=True)


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cycles_scenario():
    """Attach and detach many times: the detached sessions' buffers go back to the system (their pages
    are dropped), so the resident size stays bounded (attach_service steady: the program's own memory
    does not grow)."""
    n = 16
    p = start(60, args=["steady"])
    rss = []
    for i in range(n):
        a = attach(p.pid, f"sample,gc,exception,monitor,output=cyc{i}.mlpd")
        time.sleep(0.3)
        d = detach(p.pid)
        t.check(a.returncode == 0 and d.returncode == 0, f"cycle {i}: {a.stdout} {a.stderr} {d.stdout} {d.stderr}")
        rss.append(rss_kb(p.pid))
    p.kill()
    finish_program(p)
    per_cycle = (rss[-1] - rss[3]) / (n - 4)
    # The median step: one step of the allocator's own (a new arena, ~400 KB) does not decide it.
    steps = sorted(b - a for a, b in zip(rss[3:], rss[4:]))
    median = steps[len(steps) // 2]
    print(f"figure: RSS after cycle 4 {rss[3]} KB, after cycle {n} {rss[-1]} KB: {per_cycle:.0f} KB per attach/detach "
          f"cycle, median step {median} KB ({rss})", flush=True)
    t.check(median < 150, f"RSS grows {median} KB per attach/detach cycle (median): {rss}")


def untouched(p, what):
    t.check(not os.path.exists(f"/tmp/.mono_attach_pid{p.pid}"), f"{what}: trigger file left")
    rc, out, err = finish_program(p)
    t.check(rc == 7 and "Full thread dump" not in out and not any(l.startswith("attach:") for l in out.splitlines()),
            f"{what}: exit {rc}, output {out[-300:]!r}")


def refusals():
    sleeper = subprocess.Popen(["sleep", "30"])
    refused(attach(sleeper.pid, "sample"), "not Mono", "neither a Mono nor a .NET")
    sleeper.kill()
    sleeper.wait()

    p = start(4, extra=["--attach=disable"])
    refused(attach(p.pid, "sample"), "--attach=disable", "--attach=disable")
    untouched(p, "--attach=disable")

    p = start(4, env={"LD_PRELOAD": AGENT, "MLPD_OPTIONS": "output=" + os.path.join(WORK, "preload.mlpd")})
    refused(attach(p.pid, "sample"), "LD_PRELOAD", "profiled already")
    untouched(p, "LD_PRELOAD")

    p = start(4)
    refused(attach(p.pid, "alloc"), "alloc after attach", "alloc")
    t.check(not any(n.startswith("mlpd-helper") for n in threads(p.pid)), "alloc refusal: profiling started anyway")
    finish_program(p)

    if os.geteuid() == 0 and shutil.which("setpriv"):
        p = start(4)
        r = t.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", t.MLPD, "attach", str(p.pid), "sample"])
        refused(r, "another user's process", "another user")
        untouched(p, "another user")
    else:
        print("skipped: another user's process (needs root and setpriv)", flush=True)


def proc_cpu_s(pid):
    """The process's CPU time (user + system), seconds, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report_json(path):
    import json
    r = t.run([t.MLPD, "report", "--json", path], timeout=300)
    t.check(r.returncode == 0, f"report --json {path}: {r.returncode} {r.stderr[:300]}")
    try:
        return json.loads(r.stdout)
    except ValueError:
        t.check(False, f"report --json {path}: not JSON: {r.stdout[:300]}")
        return {}


def leaf_counts(path):
    """(hits, hits whose leaf is an unnamed native address) from the collapsed export."""
    r = t.run([t.MLPD, "export", "--format", "collapsed", path], timeout=300)
    t.check(r.returncode == 0, f"export collapsed {path}: {r.returncode} {r.stderr[:300]}")
    total = unnamed = 0
    for line in r.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        if stack.split(";")[-1].startswith("[unknown native 0x"):
            unnamed += int(count)
    return total, unnamed


def runtime_debug_file():
    """The runtime's separate debug file, as the agent finds it (build id, or .gnu_debuglink under
    /usr/lib/debug); None when not installed."""
    exe = os.path.realpath(shutil.which(t.MONO) or t.MONO)
    root = ""
    with open(exe, "rb") as f:
        head = f.read(4096)
    if not head.startswith(b"\x7fELF"):  # NAME.mono612: a script running the root's mono (scripts/in-root.sh)
        m = re.search(rb"in-root\.sh' '([^']+)' (\S+)", head)
        if not m:
            return None
        root, inside = m.group(1).decode(), m.group(2).decode()
        link = os.path.join(root, inside.lstrip("/"))
        while os.path.islink(link):
            target = os.readlink(link)
            link = os.path.join(root, target.lstrip("/")) if target.startswith("/") else os.path.join(os.path.dirname(link), target)
        exe = "/" + os.path.relpath(link, root)
    r = t.run(["readelf", "-n", root + exe], timeout=30)
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    for c in ([f"/usr/lib/debug/.build-id/{m.group(1)[:2]}/{m.group(1)[2:]}.debug"] if m else []) + ["/usr/lib/debug" + exe]:
        if os.path.exists(root + c):
            return root + c
    return None


def workers_run(tag, env=None, window=6):
    """attach_workers (4 busy threads named req-N, started before the attach), attached for `window`
    seconds with sample,counter. Returns (file, CPU-s used in the window by /proc, bracket width)."""
    p = start(window + 7, env=env, prog="attach_workers")
    time.sleep(2)  # CPU used before the attach: the window's counters must leave it out
    c0 = proc_cpu_s(p.pid)
    a = attach(p.pid, f"sample,counter,output=workers_{tag}.mlpd")
    c1 = proc_cpu_s(p.pid)
    t.check(a.returncode == 0, f"workers {tag}: attach: exit {a.returncode}: {a.stdout} {a.stderr}")
    time.sleep(window)
    c2 = proc_cpu_s(p.pid)
    d = detach(p.pid)
    c3 = proc_cpu_s(p.pid)
    t.check(d.returncode == 0, f"workers {tag}: detach: exit {d.returncode}: {d.stdout} {d.stderr}")
    rc, out, err = finish_program(p)
    t.check(rc == 0 and program_lines(out)[-1:] == ["done ok"], f"workers {tag}: exit {rc}, {program_lines(out)[-2:]} {err[-300:]!r}")
    path = os.path.join(WORK, f"workers_{tag}.mlpd")
    strict_ok(path, f"workers {tag}")
    # The agent's window starts in [c0, c1] and ends in [c2, c3]: the middle of the two brackets.
    return path, ((c2 - c1) + (c3 - c0)) / 2, (c3 - c0) - (c2 - c1)


def runtime_unnamed_share(report):
    cpu = report.get("samples", {})
    hits = cpu.get("total", 0)
    self_hits = sum(g.get("self", 0) for g in cpu.get("groups", []) if g.get("name") == "[runtime, unnamed]")
    return (100.0 * self_hits / hits) if hits else 0.0, cpu


def workers_scenario():
    path, used, bracket = workers_run("dbg")
    rep = report_json(path)
    share, cpu = runtime_unnamed_share(rep)
    threads = cpu.get("threads", [])
    unnamed_threads = [th["name"] for th in threads if th["name"].startswith("thread 0x")]
    t.check(threads and not unnamed_threads, f"workers: sampled threads without a name: {unnamed_threads} of {threads}")
    names = [th["name"].split(" (")[0] for th in threads]
    t.check(all(f"req-{i}" in names for i in range(4)), f"workers: req-0..req-3 not all among the sampled threads: {names}")
    ct = rep.get("cpu_threads", {})
    reported = ct.get("process_user_s", 0) + ct.get("process_system_s", 0)
    t.check(used > 1 and abs(reported - used) <= 0.10 * used,
            f"workers: CPU-time section {reported:.2f} s, /proc says {used:.2f} s (+-{bracket / 2:.2f}) in the window")
    total, unnamed = leaf_counts(path)
    leaf_pct = 100.0 * unnamed / total if total else 100.0
    t.check(total > 100 and leaf_pct <= 3.0, f"workers: {unnamed} of {total} hits ({leaf_pct:.1f}%) end in an unnamed native leaf")
    dbg = runtime_debug_file()
    t.check(dbg is not None, "workers: the runtime's debug symbols are not installed (mono-runtime-dbg: scripts/install-deps.sh)")
    if dbg:
        t.check(share <= 2.0, f"workers: [runtime, unnamed] {share:.1f}% of the self hits with {dbg} installed: {cpu.get('groups')}")
    # Without the debug files (an empty directory stands for them): the report says what would name them.
    empty = os.path.join(WORK, "no-debug")
    os.makedirs(empty, exist_ok=True)
    path2, _, _ = workers_run("nodbg", env={"MLPD_TEST_DEBUG_DIR": empty}, window=4)
    share2, cpu2 = runtime_unnamed_share(report_json(path2))
    text = t.run([t.MLPD, "report", path2], timeout=300).stdout
    hint = [l for l in text.splitlines() if "[runtime, unnamed]:" in l]
    t.check(len(hint) == 1 and "mono-runtime-dbg" in hint[0], f"workers without debug files: the report's line: {hint} "
            f"(missing_symbols {cpu2.get('missing_symbols')})")
    print(f"figure: attach workers: CPU-time section {reported:.2f} s vs /proc {used:.2f} s; unnamed native leaves "
          f"{leaf_pct:.2f}% of {total} hits; [runtime, unnamed] {share:.2f}% of self hits with the debug symbols, "
          f"{share2:.2f}% without", flush=True)


def overhead():
    """CPU time per unit of work (attach_service's nodes, 4 s runs): plain, sampled with LD_PRELOAD, sampled
    after attach (at 0.3 s). CPU time, not wall: the machine may be shared."""
    def run_one(env=None, attach_options=None):
        p = start(4, env=env)
        if attach_options:
            attach(p.pid, attach_options)
        out = p.stdout.read().decode()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stderr.read()
        m = re.search(r"done (\d+) nodes", out)
        nodes = int(m.group(1)) if m else 0
        return (ru.ru_utime + ru.ru_stime) / nodes if nodes else None
    plain = run_one()
    pre = run_one(env={"LD_PRELOAD": AGENT, "MLPD_OPTIONS": "sample,output=" + os.path.join(WORK, "ov_pre.mlpd")})
    att = run_one(attach_options="sample,output=ov_att.mlpd")
    t.check(plain and pre and att, f"overhead runs: {plain} {pre} {att}")
    if plain and pre and att:
        print(f"figure: CPU per node: plain {plain * 1e6:.1f} us, LD_PRELOAD sample {pre * 1e6:.1f} us "
              f"({100 * (pre / plain - 1):+.1f}%), attach sample {att * 1e6:.1f} us ({100 * (att / plain - 1):+.1f}%); "
              f"attach/preload ratio {att / pre:.3f}", flush=True)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    scenarios = sys.argv[1:] or ["main", "reattach", "exit", "for", "repeat", "calls", "cycles", "refusals", "workers", "overhead"]
    table = {"main": main_scenario, "reattach": reattach_scenario, "exit": exit_promptly_scenario, "for": for_scenario,
             "repeat": repeat_scenario, "calls": calls_scenario, "cycles": cycles_scenario, "refusals": refusals,
             "workers": workers_scenario, "overhead": overhead}
    for s in scenarios:
        print(f"-- {s} ({t.RUNTIME})", flush=True)
        table[s]()
    t.finish("test_attach")


if __name__ == "__main__":
    main()
