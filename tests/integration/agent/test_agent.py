#!/usr/bin/env python3
"""The agent (libmlpd.so) on real Mono programs.

For every program and event set: the program's output and exit status are unchanged; the file passes
`mlpd verify --strict`; mprof-report reads it (exit 0) and prints none of the words that mean a broken
file; Mono.Profiler.Log.dll counts exactly our events; and the program's own per-method call counts
and per-class allocation counts equal what Mono's own log profiler records for the same run.
Also: `--profile=mlpd:`, processes that are not Mono, a bad option, Environment.Exit, an unhandled
exception, zip, help.
"""
import concurrent.futures
import os
import subprocess
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
# mprof-report's own phrases for a broken file (exact phrases: program and domain names may contain
# words like "Unhandled").
BAD_WORDS = ["unmatched leave", "unresolved class", "unresolved method", "unknown method",
             "unhandled profiler event", "went backwards", "Incorrect buffer id", "callee time bigger"]

# (program, options, kinds that must be present, prefixes of the program's own methods/classes whose
#  per-method calls / per-class allocations must equal Mono's own profiler's)
CASES = [
    ("calls", "calls", ["method_enter", "method_leave", "method_jit"], "CallsProgram:"),
    ("calls", "calls,calldepth=3", ["method_enter"], None),
    ("alloc", "alloc", ["alloc", "vtable_load", "gc_event", "gc_move"], ("Node", "Pair")),
    ("alloc", "nodefaults,gcalloc,maxframes=8", ["alloc"], ("Node", "Pair")),
    ("alloc", "alloc,calls,zip", ["alloc", "method_enter"], ("Node", "Pair")),
    ("gcmoves", "alloc", ["gc_move", "gc_resize", "heap_root"], None),
    ("exceptions", "exception,calls", ["exception_throw", "exception_clause", "method_exc_leave"], "ExceptionsProgram:"),
    ("exceptions", "exception", ["exception_throw", "exception_clause"], None),
    ("monitors", "monitor", ["monitor"], None),
    ("gchandles", "gchandle", ["gc_handle_created", "gc_handle_destroyed"], None),
    ("finalizers", "finalization,gc", ["gc_finalize_start", "gc_finalize_end", "gc_finalize_object_start",
                                       "gc_finalize_object_end", "gc_event"], None),
    ("threads", "alloc,calls", ["thread_start", "thread_name", "thread_end", "alloc", "method_enter"], None),
    ("appdomain", "legacy,calls,alloc", ["domain_load", "domain_unload", "domain_name", "context_load"], None),
    ("calls", "jit", ["jit_helper"], None),
    ("exitcode", "alloc", ["alloc"], ("Marker",)),
    # Mono's own profiler sometimes loses this run's data (the process dies of the exception), so the
    # reference here is what the program allocates: {class: objects}.
    ("unhandled", "alloc,calls", ["alloc", "method_exc_leave"], {"Crumb": 300, "Crumb[]": 1}),
]


def env_with(**kw):
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    env.pop("LD_PRELOAD", None)
    env.update(kw)
    return env


def run_plain(prog):
    return t.run([t.MONO, t.program(prog)], env=env_with())


def run_agent(prog, options, out):
    return t.run([t.MONO, t.program(prog)],
                 env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}"))


def sections(text):
    """Splits mprof-report output into {section title: [lines]}."""
    result, current = {}, None
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Za-z ]* summary$", line):
            current = line.strip()
            result.setdefault(current, [])
        elif current:
            result[current].append(line)
    return result


def per_method_calls(text):
    rows = {}
    for line in sections(text).get("Method call summary", []):
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+) (.+)$", line)
        if m:
            rows[m.group(4)] = int(m.group(3))
    return rows


def per_class_allocs(text):
    rows = {}
    for line in sections(text).get("Allocation summary", []):
        m = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+) (\S.*)$", line)
        if m:
            rows[m.group(4)] = (int(m.group(2)), int(m.group(1)))
    return rows


def check_case(case, workdir):
    prog, opts, must, own = case
    label = f"{prog} [{opts}]"
    ext = ".mlpd.gz" if "zip" in opts else ".mlpd"
    ours = os.path.join(workdir, f"ours-{prog}-{abs(hash(opts))}{ext}")
    theirs = os.path.join(workdir, f"mono-{prog}-{abs(hash(opts))}{ext}")
    plain = run_plain(prog)
    agent = run_agent(prog, opts, ours)
    t.check(agent.stdout == plain.stdout, f"{label}: program output changed under the agent")
    t.check(agent.returncode == plain.returncode,
            f"{label}: exit status {agent.returncode} under the agent, {plain.returncode} without")
    t.check("mlpd:" not in agent.stderr, f"{label}: the agent complained: {agent.stderr.strip()[:300]}")
    if not t.check(os.path.exists(ours), f"{label}: no output file"):
        return
    rc, v, _ = t.verify_json(ours, strict=True)
    t.check(rc == 0 and v and v["ok"], f"{label}: verify --strict: {v and v['errors'][:3]}")
    counts = v["counts"] if v else {}
    for k in must:
        t.check(counts.get(k, 0) > 0, f"{label}: no {k} events")
    rep = t.run([t.MPROF_REPORT, "--verbose", "--traces", ours], timeout=300)
    t.check(rep.returncode == 0, f"{label}: mprof-report exited {rep.returncode}")
    for word in BAD_WORDS:
        t.check(word not in rep.stdout + rep.stderr, f"{label}: mprof-report says '{word}'")
    lrc, lcounts, _, lp = t.log_count(ours)
    if t.check(lrc == 0, f"{label}: Mono.Profiler.Log failed: {lp.stderr.strip()[:300]}"):
        t.check(lcounts == counts, f"{label}: Mono.Profiler.Log counts differ: "
                f"ours-only {sorted(set(counts.items()) - set(lcounts.items()))}, "
                f"theirs-only {sorted(set(lcounts.items()) - set(counts.items()))}")
    if isinstance(own, dict):
        got = {k: n for k, (n, _) in per_class_allocs(rep.stdout).items() if k in own}
        t.check(got == own, f"{label}: allocations {got}, the program makes {own}")
    elif own:
        mono = t.mono_log_profile(prog, opts, theirs)
        t.check(mono.returncode == plain.returncode, f"{label}: Mono's profiler run failed")
        mrep = t.run([t.MPROF_REPORT, "--verbose", theirs], timeout=300)
        if isinstance(own, str):
            a = {k: n for k, n in per_method_calls(rep.stdout).items() if k.startswith(own)}
            b = {k: n for k, n in per_method_calls(mrep.stdout).items() if k.startswith(own)}
            t.check(a and a == b, f"{label}: per-method calls differ from Mono's: ours {a}, Mono {b}")
        else:
            a = {k: n for k, n in per_class_allocs(rep.stdout).items() if k.split("[")[0] in own}
            b = {k: n for k, n in per_class_allocs(mrep.stdout).items() if k.split("[")[0] in own}
            t.check(a and a == b, f"{label}: per-class allocations differ from Mono's: ours {a}, Mono {b}")
    print(f"ok  {label}: {v['buffers'] if v else '?'} buffers, {sum(counts.values())} events", flush=True)


def check_non_mono(workdir):
    for cmd in (["sh", "-c", "echo hi; exit 7"], ["python3", "-c", "print(40 + 2)"], ["ls", "/"]):
        cmd = t.ROOT_RUN + cmd  # the arm64 agent: the root's programs
        plain = t.run(cmd, env=env_with(), cwd=workdir)
        before = set(os.listdir(workdir))
        # Run inside workdir: a default output file (output.<pid>.mlpd) would appear there.
        pre = t.run(cmd, env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="calls,alloc"), cwd=workdir)
        t.check((pre.stdout, pre.stderr, pre.returncode) == (plain.stdout, plain.stderr, plain.returncode),
                f"non-Mono {cmd[0]}: behaviour changed under LD_PRELOAD")
        t.check(set(os.listdir(workdir)) == before, f"non-Mono {cmd[0]}: files were created")
    print("ok  non-Mono processes unchanged", flush=True)


def check_bad_option_and_help(workdir):
    plain = run_plain("calls")
    bad = t.run([t.MONO, t.program("calls")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="calls,bogus=1"),
                cwd=workdir)
    t.check(bad.stdout == plain.stdout and bad.returncode == plain.returncode, "bad option: program changed")
    lines = [l for l in bad.stderr.splitlines() if l.strip()]
    t.check(len(lines) == 1 and "bogus" in lines[0], f"bad option: expected one line naming it, got {lines}")
    t.check(not [f for f in os.listdir(workdir) if f.startswith("output.")], "bad option: a file was written")
    hlp = t.run([t.MONO, t.program("calls")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="help"))
    t.check(hlp.stdout == plain.stdout and hlp.returncode == plain.returncode, "help: program changed")
    t.check("calldepth" in hlp.stderr and "output" in hlp.stderr, "help: no option list on stderr")
    print("ok  bad option refused in one line; help lists the options", flush=True)


def check_profile_switch(workdir):
    out = os.path.join(workdir, "switch.mlpd")
    env = env_with(LD_LIBRARY_PATH=os.path.dirname(AGENT))
    p = t.run([t.MONO, f"--profile=mlpd:calls,output={out}", t.program("calls")], env=env)
    t.check(p.returncode == 0 and os.path.exists(out), f"--profile=mlpd: failed: {p.stderr[-300:]}")
    if os.path.exists(out):
        rc, v, _ = t.verify_json(out, strict=True)
        t.check(rc == 0 and v["counts"].get("method_enter", 0) > 20000, "--profile=mlpd: bad file")
        hdr = t.run([t.MPROF_REPORT, "--reports=header", out]).stdout
        t.check("Arguments: mlpd:calls" in hdr, f"--profile=mlpd: header args wrong: {hdr}")
    print("ok  --profile=mlpd:", flush=True)


def check_default_name(workdir):
    p = t.run([t.MONO, t.program("calls")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="nodefaults"))
    t.check(p.returncode == 0, "default output: program failed")
    names = [f for f in os.listdir(".") if re.match(r"^output\.\d+\.mlpd$", f)]
    t.check(len(names) == 1, f"default output: expected one output.<pid>.mlpd, got {names}")
    for n in names:
        os.remove(n)
    print("ok  default output name carries the pid", flush=True)


def check_logprofiler_api(workdir):
    """Mono.Profiler.Log.LogProfiler (the icalls of runtime-hooks/src/mono/icalls.cpp) under our agent."""
    label = "logprofiler_api [alloc]"
    ours = os.path.join(workdir, "logprofiler_api.mlpd")
    p = t.run([t.MONO, t.program("logprofiler_api"), "raw"],
              env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"alloc,output={ours}"))
    lines = p.stdout.splitlines()
    t.check(p.returncode == 0, f"{label}: exit status {p.returncode}: {p.stderr.strip()[-300:]}")
    t.check("mlpd:" not in p.stderr, f"{label}: the agent complained: {p.stderr.strip()[:300]}")
    t.check("attached: True" in lines, f"{label}: LogProfiler.IsAttached is not true: {lines[:3]}")
    sets = [re.match(r"^set (\w+) (\S+) -> (\S+)$", l) for l in lines]
    sets = [m.groups() for m in sets if m]
    for name, value, read in sets:
        t.check(value == read, f"{label}: set {name} {value} but read back {read}")
    names = {name for name, _, _ in sets}
    for name in ("CallDepth", "StackTraceFrames", "GCAllocationEventsEnabled", "HeapshotMode", "SampleMode",
                 "JitEventsEnabled"):
        t.check(name in names, f"{label}: no read-back of {name}")
    t.check("alloc Hidden 1500 Visible 2000" in lines, f"{label}: allocation phases did not run")
    # Bad values reached through reflection: integers clamped to 0 (frames to 32), bad enums ignored.
    for want in ("raw SetCallDepth(-1) -> 0", "raw SetStackTraceFrames(-3) -> 0",
                 "raw SetStackTraceFrames(1000) -> 32", "raw SetHeapshotMillisecondsFrequency(-5) -> 0",
                 "raw SetHeapshotCollectionsFrequency(MinValue) -> 0", "raw SetHeapshotMode(9) -> 0",
                 "raw SetSampleMode(9, 100) returned False -> 0 100",
                 "raw SetSampleMode(Process, 0) returned False -> None 100"):
        t.check(want in lines, f"{label}: expected '{want}'")
    if t.check(os.path.exists(ours), f"{label}: no output file"):
        rc, v, _ = t.verify_json(ours, strict=True)
        t.check(rc == 0 and v and v["ok"], f"{label}: verify --strict: {v and v['errors'][:3]}")
        rep = t.run([t.MPROF_REPORT, "--verbose", ours], timeout=300)
        t.check(rep.returncode == 0, f"{label}: mprof-report exited {rep.returncode}")
        allocs = per_class_allocs(rep.stdout)
        t.check(allocs.get("Visible", (0, 0))[0] == 2000,
                f"{label}: expected 2000 Visible allocations, got {allocs.get('Visible')}")
        t.check("Hidden" not in allocs, f"{label}: Hidden allocations recorded: {allocs.get('Hidden')}")
    plain = run_plain("logprofiler_api")
    t.check(plain.returncode == 0, f"logprofiler_api without a profiler: exit status {plain.returncode}")
    t.check("attached: False" in plain.stdout.splitlines() and
            "without a profiler: MissingMethodException" in plain.stdout,
            f"logprofiler_api without a profiler: {plain.stdout[-300:]}")
    # For comparison only (not asserted): Mono's own log profiler, without the `raw` part (which can
    # abort Mono: it stores bad values unchecked).
    theirs = os.path.join(workdir, "logprofiler_api-mono.mlpd")
    try:
        mono = t.mono_log_profile("logprofiler_api", "alloc", theirs)
    except subprocess.TimeoutExpired:
        # Mono's own profiler (the reference, not under test) has been seen to hang here once in CI.
        print("note: Mono's log profiler did not finish logprofiler_api within the time limit", flush=True)
        return
    mallocs = per_class_allocs(t.run([t.MPROF_REPORT, "--verbose", theirs], timeout=300).stdout) \
        if os.path.exists(theirs) else {}
    # Up to the final settings, which our `raw` part changed.
    upto = lambda ls: ls[:ls.index("settings final")] if "settings final" in ls else ls  # noqa: E731
    ours_lines = [l for l in upto(lines) if not l.startswith("raw ")]
    differ = [l for l in upto(mono.stdout.splitlines()) if l not in ours_lines]
    print(f"note: under Mono's log profiler: exit {mono.returncode}, "
          f"attached {'attached: True' in mono.stdout.splitlines()}, Visible {mallocs.get('Visible')}, "
          f"Hidden {mallocs.get('Hidden')}, lines unlike ours: {differ}", flush=True)
    print(f"ok  {label}: attached, {len(sets)} settings read back, 2000 Visible / 0 Hidden; plain run unattached",
          flush=True)


def check_domain_reuse(workdir):
    """After AppDomain unloads Mono reuses vtable addresses: each new vtable is described again, as many
    times as Mono's own profiler does, and every allocation resolves to a class."""
    out = os.path.join(workdir, "domains.mlpd")
    theirs = os.path.join(workdir, "domains-mono.mlpd")
    p = t.run([t.MONO, t.program("domainloop")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"alloc,output={out}"))
    t.check(p.returncode == 0 and p.stdout.strip() == "30 domains", "domains: program failed under the agent")
    t.mono_log_profile("domainloop", "alloc", theirs)
    count = lambda f: sum(1 for l in t.run([t.MLPD, "dump", f]).stdout.splitlines()
                          if " vtable_load " in l and " Worker" in l)
    ours, mono = count(out), count(theirs)
    t.check(ours == mono and ours >= 31, f"domains: {ours} Worker vtable descriptions, Mono writes {mono}")
    rc, v, _ = t.verify_json(out, strict=True)
    t.check(rc == 0 and v["ok"], f"domains: verify --strict: {v and v['errors'][:3]}")
    rep = t.run([t.MPROF_REPORT, out]).stdout
    t.check("unresolved class" not in rep, "domains: mprof-report has unresolved classes")
    print(f"ok  30 AppDomains: {ours} Worker vtables described (Mono {mono})", flush=True)


def check_aot_id(workdir):
    """An AOT-compiled entry assembly: the file carries its AOT id (a GUID) once, as Mono's does."""
    import shutil
    exe = os.path.join(workdir, "aotcalls.exe")
    shutil.copy(t.program("calls"), exe)
    aot = t.run([t.MONO, "--aot", exe], env=env_with(), timeout=300)
    if not t.check(aot.returncode == 0 and os.path.exists(exe + ".so"), f"aot: mono --aot failed: {aot.stderr[-300:]}"):
        return
    out = os.path.join(workdir, "aot.mlpd")
    p = t.run([t.MONO, exe], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,output={out}"))
    t.check(p.returncode == 0, "aot: program failed under the agent")
    rc, v, _ = t.verify_json(out, strict=True)
    t.check(rc == 0 and v["counts"].get("aot_id") == 1, f"aot: expected one aot_id event: {v and v['counts']}")
    lrc, lcounts, _, _ = t.log_count(out)
    t.check(lrc == 0 and lcounts.get("aot_id") == 1, "aot: Mono.Profiler.Log does not read the aot_id (GUID) event")
    dump = t.run([t.MLPD, "dump", out]).stdout
    t.check(re.search(r'aot_id id="[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}"', dump) is not None,
            "aot: the aot_id is not a GUID")
    print("ok  AOT-compiled program: its AOT id is in the file", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-agent-") as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda c: check_case(c, workdir), CASES))
        check_non_mono(workdir)
        check_bad_option_and_help(workdir)
        check_profile_switch(workdir)
        check_default_name(workdir)
        check_aot_id(workdir)
        check_domain_reuse(workdir)
        check_logprofiler_api(workdir)
    t.finish("agent")


if __name__ == "__main__":
    main()
