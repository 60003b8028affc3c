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
    ("unhandled", "alloc,calls", ["alloc", "method_exc_leave"], ("Crumb",)),
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
    if own:
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
        plain = t.run(cmd, env=env_with())
        before = set(os.listdir(workdir))
        pre = t.run(cmd, env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="calls,alloc"))
        t.check((pre.stdout, pre.stderr, pre.returncode) == (plain.stdout, plain.stderr, plain.returncode),
                f"non-Mono {cmd[0]}: behaviour changed under LD_PRELOAD")
        t.check(set(os.listdir(workdir)) == before, f"non-Mono {cmd[0]}: files were created")
    print("ok  non-Mono processes unchanged", flush=True)


def check_bad_option_and_help(workdir):
    plain = run_plain("calls")
    bad = t.run([t.MONO, t.program("calls")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="calls,bogus=1"))
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


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-agent-") as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda c: check_case(c, workdir), CASES))
        check_non_mono(workdir)
        check_bad_option_and_help(workdir)
        check_profile_switch(workdir)
        check_default_name(workdir)
    t.finish("agent")


if __name__ == "__main__":
    main()
