#!/usr/bin/env python3
"""A bursty server on .NET (issue 35, "Sampling ... on a bursty server"): `DotnetPrograms server PORT`,
an HttpListener (no ASP.NET Core) on 127.0.0.1, loaded by `wrk` in three one-second bursts with pauses
between them, profiled with `sample` (CPU time, 100 Hz). Checks: the output and exit code unchanged;
the file strict and read by mprof-report; the hits within 10% of the server's CPU-seconds x 100 (its
own rusage); blocked threads never charged: the thread that waits for the whole run (mlpd-idle) has no
sample and the waits of the idle listener and pool threads (epoll_wait, futex and condition waits,
accept, poll) are not leaves of more than 3% of the hits; the request handler is the hottest method,
named in the report's first screen."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, CLSID, DLL, DOTNET, check_file, env_with, mlpd_lines, require_programs  # noqa: E402

COMPUTE = "MlpdTests.Server:Compute (int)"
WAITS = ("epoll_wait", "epoll_pwait", "__futex_abstimed_wait_common", "futex_wait", "pthread_cond_wait",
         "pthread_cond_timedwait", "__pthread_cond_wait", "accept", "__libc_accept", "poll", "__poll",
         "__GI___poll", "nanosleep", "__GI___clock_nanosleep", "clock_nanosleep", "sem_wait", "do_futex_wait")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(options, label):
    """Runs the server (with the agent when `options` is given) through three wrk bursts; returns
    (stdout, exit code, CPU-seconds of the server, wrk's request count)."""
    port = free_port()
    env = env_with() if options is None else env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                      CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS=options)
    p = subprocess.Popen([DOTNET, DLL, "server", str(port)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        t.check(first == "listening\n", f"{label}: the server did not start: {first!r}")
        requests = 0
        for _ in range(3):
            w = subprocess.run(["wrk", "-t2", "-c4", "-d1s", f"http://127.0.0.1:{port}/"], capture_output=True,
                               text=True, timeout=60)
            for line in w.stdout.splitlines():
                if "requests in" in line:
                    requests += int(line.split()[0])
            time.sleep(0.7)  # the listener and pool threads idle between bursts
        # The agent's own threads (mlpd-*: not sampled, by design) live to the end: their CPU now.
        ours = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for tid in os.listdir(f"/proc/{p.pid}/task"):
            try:
                with open(f"/proc/{p.pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if stat[stat.index("(") + 1:stat.rindex(")")].startswith("mlpd-"):
                ours += (int(fields[11]) + int(fields[12])) / tick
        urllib.request.urlopen(f"http://127.0.0.1:{port}/quit", timeout=30).read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out, err = p.stdout.read(), p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return first + out, p.returncode, err, usage.ru_utime + usage.ru_stime - ours, requests, ours


def main():
    require_programs("dotnet_server")
    if not shutil.which("wrk"):
        print("dotnet_server: no wrk (scripts/install-deps.sh installs it): skipped")
        sys.exit(77)

    plain_out, plain_rc, _, _, _, _ = serve(None, "plain")
    out, rc, err, cpu, requests, ours = serve("nodefaults,sample,output=server.mlpd", "sample")
    t.check(out == plain_out == "listening\nserver done\n" and rc == plain_rc == 0,
            f"server: the program changed: {rc} {out!r} vs {plain_rc} {plain_out!r}")
    t.check(not mlpd_lines(err), f"server: the agent spoke: {err[-300:]}")
    t.check(requests >= 300, f"server: only {requests} requests served")
    check_file("server", "server.mlpd")

    p = t.run([t.MLPD, "export", "--format", "collapsed", "--threads", "-o", "-", "server.mlpd"], timeout=300)
    t.check(p.returncode == 0, f"export failed: {p.stderr[-300:]}")
    hits, per_thread, leaves = 0, {}, {}
    for line in p.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        hits += int(n)
        per_thread[frames[0]] = per_thread.get(frames[0], 0) + int(n)
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + int(n)
    # Hits against the CPU the server's threads used (the process's, less the agent's own threads'):
    # within 10% (the host's start before the runtime loads the agent is in it, not sampled).
    t.check(0.9 * cpu * 100 <= hits <= 1.1 * cpu * 100, f"server: {hits} hits for {cpu:.2f} CPU-s at 100 Hz (the agent's threads: {ours:.2f} s more)")
    idle = {k: v for k, v in per_thread.items() if k.startswith("mlpd-idle")}
    t.check(not idle, f"server: the blocked thread mlpd-idle was charged: {idle}")
    waits = {k: v for k, v in leaves.items() if k.split("@")[0] in WAITS}
    t.check(sum(waits.values()) <= 0.03 * hits, f"server: waits charged as leaves: {waits} of {hits} hits")
    top = max(leaves.items(), key=lambda kv: kv[1])
    t.check(top[0] == COMPUTE, f"server: the hottest leaf is {top}, not {COMPUTE}")
    r = t.run([t.MLPD, "report", "server.mlpd"])
    t.check(r.returncode == 0 and COMPUTE in "\n".join(r.stdout.splitlines()[:12]),
            f"report: {COMPUTE} not in the first lines: {r.stdout[:800]}")
    print(f"ok  server: {requests} requests, {hits} hits for {cpu:.2f} CPU-s ({hits / (cpu * 100):.2f}; the agent's threads {ours:.2f} s more); "
          f"{leaves[COMPUTE]} in Compute; mlpd-idle none; waits as leaves {sum(waits.values())}; "
          f"{len(per_thread)} threads sampled", flush=True)
    t.finish("dotnet_server")


if __name__ == "__main__":
    main()
