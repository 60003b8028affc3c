"""mlpd attach / mlpd detach on .NET (issue 36.3; docs/attach.md, ".NET"): a program started with plain
`dotnet`, no profiler variable, profiled from outside through the runtime's diagnostics socket and
left as it was.

- attach_service (two worker threads req-0/req-1 in AttachHot.Spin, a growing list, a ticker that
  measures its longest gap): attach `sample,gc,exception,heapshot=ondemand,port=0` while it runs; the
  samples name AttachHot:Spin and both worker threads by name; a heapshot over the command port counts
  the AttachGrowing nodes; detach: no thread of ours left (mlpd-helper,
  mlpd-ctimer, mlpd-control, ...), the command port closed; attach again with other options, detach;
  the program then finishes by itself with its own output ("done ...") and exit status 7; both files
  pass verify --strict and Mono's mprof-report reads them;
- refusals, each one line and a non-zero status, the program untouched (exits 7 with its output):
  `calls` and `alloc` (what .NET forbids after attach), a process that is neither Mono nor .NET, a
  .NET process without a diagnostics socket (DOTNET_EnableDiagnostics=0), a process profiled already
  (started with the profiler), another user's process (root and setpriv only), detach of a process
  with no attached agent.
Prints the figures: `mlpd attach` to the first sample, the target's longest pause over attach, heapshot,
detach, attach, detach.
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
import dotnettest as d  # noqa: E402

WORK = os.path.abspath("dotnet_attach_work")


def start(seconds, env=None, program="attach_service"):
    e = d.env_with(**(env or {}))
    p = subprocess.Popen([d.DOTNET, d.DLL, program, str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=e, cwd=WORK)
    line = p.stdout.readline().decode()
    t.check(line.strip() == "ready", f"{program}: first line {line!r}")
    time.sleep(0.3)
    return p


def ours(pid):
    return [n for n in threads(pid) if n.startswith("mlpd")]


def attach(pid, options, *extra):
    return t.run([t.MLPD, "attach", str(pid), *extra, options], timeout=120, cwd=WORK)


def detach(pid):
    return t.run([t.MLPD, "detach", str(pid)], timeout=120, cwd=WORK)


def nothing_of_ours_left(pid, what):
    left = []
    for _ in range(150):  # the control thread ends right after its answer
        left = ours(pid)
        if not left:
            break
        time.sleep(0.02)
    t.check(not left, f"{what}: threads of ours left after detach: {left}")


def port_closed(port):
    s = socket.socket()
    try:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        s.close()


def check_session(path, what, share=0.5):
    """The file verifies --strict, mprof-report reads it, and our report puts more than `share` of the
    self hits in AttachHot:Spin and names both worker threads (started, and named, before the attach)."""
    import json
    d.check_file(what, path)
    p = t.run([t.MLPD, "report", "--json", "--top", "100", path], timeout=300)
    t.check(p.returncode == 0, f"{what}: report {path}: {p.stderr[-300:]}")
    whole = json.loads(p.stdout) if p.returncode == 0 else {}
    samples = whole.get("samples", {"methods": [], "threads": [], "total": 0})
    hot = sum(m["self"] for m in samples["methods"] if "AttachHot:Spin" in m["name"])
    total = samples["total"]
    t.check(total > 0 and hot > share * total, f"{what}: self hits in AttachHot:Spin {hot} of {total}: {samples['methods'][:4]}")
    names = [th["name"].split(" (")[0] for th in samples["threads"]]
    for name in ("req-0", "req-1"):
        t.check(name in names, f"{what}: thread {name} not named: {samples['threads'][:5]}")
    return hot, total, whole


def main_scenario():
    p = start(9)
    began = time.time()
    a = attach(p.pid, "sample,gc,exception,heapshot=ondemand,port=0")
    t.check(a.returncode == 0, f"attach: exit {a.returncode}: {a.stdout} {a.stderr}")
    path = out_file(a)
    t.check(path and path.startswith(WORK), f"attach: output file {path!r} (default name in the caller's directory)")
    port = re.search(r"command port 127\.0\.0\.1:(\d+)", a.stdout)
    t.check(port, f"attach: no command port line: {a.stdout!r}")
    t.check("mlpd-helper" in threads(p.pid), f"attach: no mlpd-helper thread: {threads(p.pid)}")
    again = attach(p.pid, "sample")
    t.check(again.returncode != 0 and "profiled already" in again.stderr, f"second attach: {again.returncode} {again.stderr!r}")
    time.sleep(1.5)
    if port:  # a heapshot over the command port while attached (the runtime's collection, forced)
        h = t.run([t.MLPD, "heapshot", "--port", port.group(1)], timeout=60)
        t.check(h.returncode == 0 and h.stdout.startswith("OK heapshot"), f"heapshot over the port: {h.stdout!r} {h.stderr!r}")
    dt = detach(p.pid)
    t.check(dt.returncode == 0 and "detached" in dt.stdout, f"detach: exit {dt.returncode}: {dt.stdout} {dt.stderr}")
    nothing_of_ours_left(p.pid, "first detach")
    if port:
        t.check(port_closed(int(port.group(1))), "the command port is still open after detach")
    # Again, with other options and an output named by the caller; on .NET 10 with sampled
    # allocations (the runtime's AllocationSampled events through our EventPipe session, which an
    # attached profiler may start).
    second = os.path.join(WORK, "second.mlpd")
    sampled_allocs = d.MAJOR >= 10
    a2 = attach(p.pid, "sample-real,gc," + ("gcalloc,alloc-sample=100k," if sampled_allocs else "") + "output=second.mlpd")
    t.check(a2.returncode == 0 and out_file(a2) == second, f"second attach: exit {a2.returncode}: {a2.stdout} {a2.stderr}")
    time.sleep(1.5)
    d2 = detach(p.pid)
    t.check(d2.returncode == 0 and "detached" in d2.stdout, f"second detach: {d2.stdout} {d2.stderr}")
    nothing_of_ours_left(p.pid, "second detach")
    nd = detach(p.pid)
    t.check(nd.returncode != 0 and len(nd.stderr.strip().splitlines()) == 1 and "not being profiled" in nd.stderr,
            f"detach with nothing attached: {nd.returncode} {nd.stderr!r}")
    rc, out, err = finish_program(p)
    lines = out.splitlines()
    t.check(rc == 7, f"attached program: exit status {rc} (want 7); stderr {err[-500:]!r}")
    t.check(len(lines) == 1 and lines[0].startswith("done "), f"attached program's output: {lines}")
    t.check(not err.strip(), f"attached program's standard error: {err[-500:]!r}")
    gap = re.search(r"longest gap (\d+) ms", out)
    if path:
        hot, total, _ = check_session(path, "first session")
        # The heapshot: the workers' AttachGrowing nodes, held by the static list, counted.
        import json
        hs = t.run([t.MLPD, "heapshots", "--json", path], timeout=300)
        grown = 0
        for line in hs.stdout.splitlines():  # one JSON object per heapshot
            try:
                shot = json.loads(line)
            except ValueError:
                continue
            grown = max(grown, sum(c.get("objects", 0) for c in shot.get("classes", [])
                                   if c.get("name") == "MlpdTests.AttachGrowing"))
        t.check(grown > 10, f"heapshot after attach: {grown} AttachGrowing objects: {hs.stdout[:300]} {hs.stderr[:200]}")
        ms = first_sample_ms(path, began)
        print(f"figure: attach to first sample {ms:.0f} ms; {hot} of {total} hits in AttachHot:Spin" if ms is not None
              else "figure: no sample", flush=True)
    if os.path.exists(second):
        # Wall clock: every thread is sampled alike; the two workers (of a dozen threads) spin.
        samples = check_session(second, "second session (sample-real)", share=0.1)[2]
        if sampled_allocs:
            # Each step allocates an AttachGrowing and its byte[64] (about 120 bytes): a few samples of
            # 100 KB in the window, of either type.
            grown = [ty for ty in samples.get("alloc", {}).get("types", [])
                     if ty["name"] in ("MlpdTests.AttachGrowing", "byte[]") and ty["objects"] > 0]
            t.check(grown, f"second session: no sampled allocations of the program's loop: "
                           f"{samples.get('alloc', {}).get('types', [])[:4]}")
    print(f"figure: target's longest pause over attach, heapshot, detach, attach, detach: {gap.group(1) if gap else '?'} ms",
          flush=True)


def untouched(p, what):
    t.check(not ours(p.pid), f"{what}: threads of ours in the process: {ours(p.pid)}")
    rc, out, err = finish_program(p)
    t.check(rc == 7 and len(out.splitlines()) == 1 and out.startswith("done ") and not err.strip(),
            f"{what}: exit {rc}, output {out[-300:]!r}, stderr {err[-300:]!r}")


def refusals():
    sleeper = subprocess.Popen(["sleep", "30"])
    refused(attach(sleeper.pid, "sample"), "neither Mono nor .NET", "neither a Mono nor a .NET")
    sleeper.kill()
    sleeper.wait()

    p = start(4)
    refused(attach(p.pid, "calls"), "calls after attach", "calls")
    refused(attach(p.pid, "alloc"), "alloc after attach", "alloc")
    refused(detach(p.pid), "detach without an agent", "not being profiled")
    untouched(p, "calls/alloc refused")

    p = start(4, env={"DOTNET_EnableDiagnostics": "0"})
    refused(attach(p.pid, "sample"), "no diagnostics socket", "diagnostics socket")
    untouched(p, "no diagnostics socket")

    p = start(4, env={"CORECLR_ENABLE_PROFILING": "1", "CORECLR_PROFILER": d.CLSID, "CORECLR_PROFILER_PATH": d.AGENT,
                      "MLPD_OPTIONS": "output=" + os.path.join(WORK, "startup.mlpd")})
    refused(attach(p.pid, "sample"), "profiled from the start", "profiled already")
    finish_program(p)

    if os.geteuid() == 0 and shutil.which("setpriv"):
        p = start(4)
        r = t.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", t.MLPD, "attach", str(p.pid), "sample"])
        refused(r, "another user's process", "another user")
        untouched(p, "another user")
    else:
        print("skipped: another user's process (needs root and setpriv)", flush=True)


def main():
    d.require_programs("dotnet_attach")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    main_scenario()
    refusals()
    t.finish("dotnet_attach")


if __name__ == "__main__":
    main()
