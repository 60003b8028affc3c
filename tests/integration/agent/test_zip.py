#!/usr/bin/env python3
"""`zip` stays bounded in memory when the helper thread is starved of CPU (docs/design.md, "zip").

Four threads making calls as fast as they can, all pinned to one CPU with the helper: the helper gets
about a fifth of it, far less than compressing their events takes. Before the threads helped, full
buffers waited for it by the hundred (the pool grew to tens of MiB). Now, beyond 4 MiB (64 buffers)
waiting, each thread compresses its own full buffers: the agent's `verbose` summary must show at most
that many waiting (plus one per thread) and no more buffers allocated than that needs; the file must be
compressed (not stored), read clean (`verify --strict`) and hold every call (mprof-report's counts),
and the process's peak RSS as the kernel counts it (wait4) must be within 16 MiB of the same pinned run
without zip (the issue's goal; not only the agent's own accounting).
A second run has the threads compress every buffer (MLPD_ZIP_PACK_ABOVE=0, for testing): the file
is then nearly all their members and must read exactly as well. A third, with the help off, only
prints the backlog it reaches on this machine (the bound's effect; not checked: it depends on the
machine's speed)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
THOUSANDS = 1000  # calls to B per thread, in thousands (each calls A): 16M events, ~1000 buffers
BOUND = 64        # the agent's kPackAboveBytes / 64 KiB
SLACK = 16        # one per thread racing past the bound, buffers pushed while a claim was held
RSS_MARGIN_MIB = 16  # issue 11: peak RSS with zip within 16 MiB of the run without it


def run_measured(cmd, env, workdir, name):
    """Runs cmd to its end; returns (exit status, stdout, stderr, peak RSS in KiB as the kernel counted
    it for that process: wait4's ru_maxrss, not the agent's own accounting)."""
    with open(os.path.join(workdir, name + ".out"), "w+") as out, \
         open(os.path.join(workdir, name + ".err"), "w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), usage.ru_maxrss


def run(name, workdir, pin, extra_env=None, zip_on=True):
    out = os.path.join(workdir, name + (".mlpd.gz" if zip_on else ".mlpd"))
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"calls,{'zip,' if zip_on else ''}verbose,output={out}")
    env.update(extra_env or {})
    cmd = [t.MONO, t.program("zipthreads"), str(THOUSANDS)]
    if pin:
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd  # taskset execs: same process
    rc, stdout, stderr, rss_kib = run_measured(cmd, env, workdir, name)
    t.check(rc == 0 and stdout.startswith("zipthreads"), f"{name}: exit {rc}: {stderr[-500:]}")
    stats = {"rss_mib": round(rss_kib / 1024, 1)}
    if not zip_on:
        return out, stats
    p = subprocess.CompletedProcess(cmd, rc, stdout, stderr)
    m = re.search(r"mlpd: wrote (\d+) bytes in (\d+) buffers; (\d+) buffers of 64 KiB allocated", p.stderr)
    if t.check(m, f"{name}: no verbose summary: {p.stderr[-500:]}"):
        stats["bytes"], stats["buffers"], stats["allocated"] = (int(g) for g in m.groups())
    m = re.search(r"mlpd: zip: (\d+) buffers compressed by the program's threads .* (\d+) left to the helper .*"
                  r"at most (\d+) full buffers waiting", p.stderr)
    if t.check(m, f"{name}: no zip summary: {p.stderr[-500:]}"):
        stats["members"], stats["left"], stats["waiting"] = (int(g) for g in m.groups())
    stats["file"] = os.path.getsize(out) if os.path.exists(out) else 0
    return out, stats


def reads_whole(name, path):
    """verify --strict clean, and every call there for mprof-report: 4 threads x THOUSANDS x 1000 each."""
    rc, obj, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and obj and obj["ok"] and not obj.get("warnings"),
            f"{name}: verify --strict: rc {rc}: {p.stdout[-400:]}")
    rep = t.run([t.MPROF_REPORT, "--reports=call", path], timeout=300)
    t.check(rep.returncode == 0, f"{name}: mprof-report exit {rep.returncode}: {rep.stderr[-300:]}")
    calls = {}
    for line in rep.stdout.splitlines():
        m = re.match(r"^\s*\d+\s+\d+\s+(\d+)\s+ZipThreads:(A|B) ", line)
        if m:
            calls[m.group(2)] = int(m.group(1))
    want = 4 * THOUSANDS * 1000
    t.check(calls.get("A") == want and calls.get("B") == want,
            f"{name}: mprof-report counts {calls}, expected {want} calls of A and of B")
    events = sum(obj["counts"].values()) if obj else 0
    return events


def main():
    with tempfile.TemporaryDirectory() as workdir:
        # 1. Starved helper, the agent as shipped.
        path, s = run("starved", workdir, pin=True)
        events = reads_whole("starved", path)
        if s.get("waiting") is not None and s.get("allocated") is not None:
            t.check(s["waiting"] <= BOUND + SLACK,
                    f"starved: {s['waiting']} full buffers waited at a round (bound {BOUND} + {SLACK})")
            t.check(s["allocated"] <= BOUND + 2 * SLACK,
                    f"starved: {s['allocated']} buffers allocated (bound {BOUND} + {2 * SLACK})")
        per_event = s["file"] / events if events else 99
        t.check(per_event < 1.0, f"starved: {per_event:.2f} bytes per event: stored, not compressed?")
        print(f"ok  starved helper: {s}; {events} events, {per_event:.2f} bytes per event", flush=True)
        # The goal, in the kernel's figures: peak RSS with zip within 16 MiB of the same run
        # without it (measured: +7-9 MiB; with the help off, +40 MiB and more).
        _, plain = run("starved-nozip", workdir, pin=True, zip_on=False)
        extra = s["rss_mib"] - plain["rss_mib"]
        t.check(extra <= RSS_MARGIN_MIB,
                f"starved: peak RSS {s['rss_mib']} MiB with zip, {plain['rss_mib']} MiB without: "
                f"+{extra:.1f} MiB (goal within {RSS_MARGIN_MIB})")
        print(f"ok  peak RSS with zip {s['rss_mib']} MiB, without {plain['rss_mib']} MiB (+{extra:.1f})", flush=True)

        # 2. The threads compress every full buffer.
        path, s = run("all-members", workdir, pin=False, extra_env={"MLPD_ZIP_PACK_ABOVE": "0"})
        events = reads_whole("all-members", path)
        if s.get("members") is not None:
            t.check(s["members"] >= 0.9 * s["buffers"] - 50,
                    f"all-members: only {s['members']} of {s['buffers']} buffers came compressed by the threads")
        print(f"ok  every buffer compressed by its thread: {s}; {events} events", flush=True)

        # 3. Without the threads' help (only printed: the backlog a starved helper lets grow here).
        _, s = run("no-help", workdir, pin=True, extra_env={"MLPD_ZIP_PACK_ABOVE": "4096"})
        print(f"    for comparison, the threads not helping: at most {s.get('waiting')} full buffers waiting, "
              f"{s.get('allocated')} allocated, peak RSS {s.get('rss_mib')} MiB", flush=True)
    t.finish("agent_zip_memory")


if __name__ == "__main__":
    main()
