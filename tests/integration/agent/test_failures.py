#!/usr/bin/env python3
"""The agent never disturbs the host: output errors stop profiling with one message while the program
runs on unchanged; child processes (fork + exec) neither corrupt the parent's file nor lose its data; a fork
child that does not exec does not hold an `output=|CMD` pipe open (the parent's exit is not delayed)."""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def env_with(**kw):
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD")}
    env.update(kw)
    return env


def mlpd_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("mlpd:")]


def check_output_errors(workdir):
    plain = t.run([t.MONO, t.program("alloc")], env=env_with())
    cases = [
        ("/dev/full", "No space left on device"),
        ("|head -c 1000 >/dev/null", "Broken pipe"),
        (os.path.join(workdir, "missing", "x.mlpd"), "No such file or directory"),
    ]
    for output, reason in cases:
        p = t.run([t.MONO, t.program("alloc")], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"alloc,calls,output={output}"))
        label = f"output={output}"
        t.check(p.stdout == plain.stdout and p.returncode == plain.returncode,
                f"{label}: program output or status changed ({p.returncode})")
        lines = mlpd_lines(p.stderr)
        t.check(len(lines) == 1 and reason in lines[0], f"{label}: expected one line with '{reason}', got {lines}")
        print(f"ok  {label}: program unchanged; {lines[0] if lines else ''}", flush=True)


def check_children(workdir):
    # Default output names carry the pid: parent and Mono child each write their own file.
    run_dir = os.path.join(workdir, "spawn")
    os.makedirs(run_dir)
    env = env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="nodefaults,gcalloc")
    p = t.run([t.MONO, t.program("spawn"), t.program("alloc")], env=env)
    plain = t.run([t.MONO, t.program("spawn"), t.program("alloc")], env=env_with())
    t.check(p.stdout == plain.stdout and p.returncode == 0, f"spawn: output changed: {p.stdout!r}")
    t.check(not mlpd_lines(p.stderr), f"spawn: the agent complained: {p.stderr[-300:]}")
    files = sorted(f for f in os.listdir(".") if re.match(r"^output\.\d+\.mlpd$", f))
    t.check(len(files) == 2, f"spawn: expected a file for the parent and one for the Mono child, got {files}")
    parents = 0
    for f in files:
        rc, v, _ = t.verify_json(f, strict=True)
        t.check(rc == 0 and v["ok"], f"spawn: {f} does not verify: {v and v['errors'][:3]}")
        d = t.run([t.MLPD, "dump", f]).stdout
        n = sum(1 for line in d.splitlines() if " alloc " in line and " Parent " in line)
        if n:
            parents += 1
            t.check(n == 200, f"spawn: parent file has {n} Parent allocations, expected 200")
    t.check(parents == 1, f"spawn: {parents} files hold the parent's allocations")
    for f in files:
        os.remove(f)
    print("ok  child processes: one file each, parent's data complete", flush=True)

    # Issue 12: a fixed output=FILE. The parent holds the file; the Mono child finds it taken and writes
    # FILE.PID (it once truncated and overwrote the parent's file). Issue 22: silently -- the child's
    # stderr may be a build's output (xbuild prints its compiler's); with `verbose` it says so.
    fixed = os.path.join(run_dir, "fixed.mlpd")
    for verbose in (True, False):
        for f in os.listdir(run_dir):
            os.remove(os.path.join(run_dir, f))
        p = t.run([t.MONO, t.program("spawn"), t.program("alloc")],
                  env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc{',verbose' if verbose else ''},output={fixed}"))
        lines = [l for l in mlpd_lines(p.stderr) if "instead" in l]
        if verbose:
            m = len(lines) == 1 and re.fullmatch(
                rf"mlpd: output file '{re.escape(fixed)}' is being written by another process; writing "
                rf"'{re.escape(fixed)}\.(\d+)' instead", lines[0])
            t.check(m, f"fixed, verbose: expected one line about the taken file, got {lines}")
    t.check(p.stdout == plain.stdout and p.returncode == 0, f"fixed: output changed: {p.stdout!r}")
    t.check(not mlpd_lines(p.stderr), f"fixed: the agent wrote to stderr: {mlpd_lines(p.stderr)}")
    children = [f for f in os.listdir(run_dir) if re.fullmatch(r"fixed\.mlpd\.\d+", f)]
    t.check(len(children) == 1, f"fixed: expected the child's file fixed.mlpd.PID, got {os.listdir(run_dir)}")
    m = re.fullmatch(r".*\.(\d+)", children[0]) if len(children) == 1 else None
    rc, v, _ = t.verify_json(fixed, strict=True)
    t.check(rc == 0 and v["ok"], f"fixed: the parent's file does not verify: {v and v['errors'][:3]}")
    d = t.run([t.MLPD, "dump", fixed]).stdout
    n = sum(1 for line in d.splitlines() if " alloc " in line and " Parent " in line)
    t.check(n == 200, f"fixed: the parent's file has {n} Parent allocations, expected 200")
    if m:
        child = f"{fixed}.{m.group(1)}"
        rc, v, _ = t.verify_json(child, strict=True)
        t.check(rc == 0 and v["ok"], f"fixed: the child's file {child} does not verify")
    # nochildren: the child is not profiled at all; one file.
    for f in os.listdir(run_dir):
        os.remove(os.path.join(run_dir, f))
    p = t.run([t.MONO, t.program("spawn"), t.program("alloc")],
              env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,nochildren,output={fixed}"))
    t.check(p.stdout == plain.stdout and p.returncode == 0 and not mlpd_lines(p.stderr),
            f"nochildren: output {p.stdout!r}, stderr {p.stderr[-300:]!r}")
    t.check(os.listdir(run_dir) == ["fixed.mlpd"], f"nochildren: files {os.listdir(run_dir)} (the child was profiled?)")
    rc, v, _ = t.verify_json(fixed, strict=True)
    t.check(rc == 0 and v["ok"], "nochildren: the file does not verify")
    print("ok  child processes, fixed output=FILE: the child writes FILE.PID, silently (a line with verbose); "
          "nochildren", flush=True)


def check_fork_without_exec(workdir):
    # forker.exe forks (no exec); the child sleeps 8 s in native code. The parent's output goes through
    # `|cat > FILE`: cat sees end of input only when every copy of the pipe's write end is closed, so if
    # the child kept its copy, the parent's exit would wait for cat (up to the 5 s bound) and then give
    # up on it with a message.
    out = os.path.join(workdir, "forked.mlpd")
    env = env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,output=|cat > '{out}'")
    # The child inherits stdout and stderr: files, so that the parent's end is not the child's end.
    with open(os.path.join(workdir, "forker.out"), "wb") as so, open(os.path.join(workdir, "forker.err"), "wb") as se:
        start = time.monotonic()
        p = subprocess.Popen([t.MONO, t.program("forker"), "8"], stdout=so, stderr=se, env=env)
        rc = p.wait(timeout=60)
        elapsed = time.monotonic() - start
    with open(os.path.join(workdir, "forker.out")) as f:
        stdout = f.read()
    with open(os.path.join(workdir, "forker.err")) as f:
        stderr = f.read()
    t.check(rc == 0 and stdout == "forked\n", f"fork: program output or status changed: {rc} {stdout!r}")
    t.check(not mlpd_lines(stderr), f"fork: the agent complained: {mlpd_lines(stderr)}")
    t.check(elapsed < 3.0, f"fork: the parent took {elapsed:.1f} s to exit (the child held the output pipe?)")
    # cat has exited (its input ended when the parent closed it): the file is complete now.
    vrc, v, _ = t.verify_json(out, strict=True)
    t.check(vrc == 0 and v and v["ok"], f"fork: {out} does not verify: {v and v['errors'][:3]}")
    d = t.run([t.MLPD, "dump", out]).stdout
    n = sum(1 for line in d.splitlines() if " alloc " in line and " Forked " in line)
    t.check(n == 200, f"fork: the file has {n} Forked allocations, expected 200 (all the parent's)")
    r = t.run([t.MPROF_REPORT, out])
    t.check(r.returncode == 0 and "Forked" in r.stdout, f"fork: mprof-report failed ({r.returncode})")
    print(f"ok  fork without exec, output=|cat: parent exited in {elapsed:.2f} s, file complete", flush=True)


def check_option_precedence(workdir):
    """Issue 22: MLPD_OPTIONS and --profile=mlpd:OPTS together. The non-empty one is used (an empty
    MLPD_OPTIONS once won silently, the file going to output.PID.mlpd); both non-empty: --profile's,
    with one line saying MLPD_OPTIONS is ignored."""
    sub = os.path.join(workdir, "precedence")
    os.makedirs(sub)
    a, b = os.path.join(sub, "a.mlpd"), os.path.join(sub, "b.mlpd")
    agent_dir = os.path.dirname(AGENT)
    preload = {"LD_PRELOAD": AGENT}
    module = {"LD_LIBRARY_PATH": agent_dir}  # mono finds libmono-profiler-mlpd.so by itself
    ignored = re.escape("mlpd: using the options of --profile=mlpd:nodefaults,gcalloc,output=") + ".*a\\.mlpd" + \
        re.escape("; MLPD_OPTIONS='nodefaults,gcalloc,output=") + ".*b\\.mlpd' is ignored"
    cases = [
        # (what, extra env, mono options before the program, program args after it, expected file, stderr line)
        ("empty MLPD_OPTIONS, preloaded", dict(preload, MLPD_OPTIONS=""), [f"--profile=mlpd:nodefaults,gcalloc,output={a}"], [], a, None),
        ("empty MLPD_OPTIONS, module", dict(module, MLPD_OPTIONS=""), [f"--profile=mlpd:nodefaults,gcalloc,output={a}"], [], a, None),
        ("no MLPD_OPTIONS, preloaded", dict(preload), [f"--profile=mlpd:nodefaults,gcalloc,output={a}"], [], a, None),
        ("empty MLPD_OPTIONS, MONO_ENV_OPTIONS", dict(preload, MLPD_OPTIONS="", MONO_ENV_OPTIONS=f"--profile=mlpd:nodefaults,gcalloc,output={a}"), [], [], a, None),
        ("both", dict(preload, MLPD_OPTIONS=f"nodefaults,gcalloc,output={b}"), [f"--profile=mlpd:nodefaults,gcalloc,output={a}"], [], a, ignored),
        ("--profile=mlpd without options", dict(preload, MLPD_OPTIONS=f"nodefaults,gcalloc,output={b}"), ["--profile=mlpd"], [], b, None),
        ("--profile=mlpd: as the program's argument", dict(preload, MLPD_OPTIONS=f"nodefaults,gcalloc,output={b}"), [], [f"--profile=mlpd:output={a}"], b, None),
    ]
    plain = t.run([t.MONO, t.program("exitcode")], env=env_with())
    for what, extra, mono_opts, prog_args, expected, line in cases:
        for f in os.listdir(sub):
            os.remove(os.path.join(sub, f))
        env = env_with(**extra)
        if "MONO_ENV_OPTIONS" not in extra:
            env.pop("MONO_ENV_OPTIONS", None)
        p = t.run([t.MONO, *mono_opts, t.program("exitcode"), *prog_args], env=env, cwd=sub)
        t.check(p.returncode == 3 and p.stdout == plain.stdout, f"{what}: program changed: {p.returncode} {p.stdout!r}")
        t.check(os.listdir(sub) == [os.path.basename(expected)], f"{what}: files {os.listdir(sub)}, expected {expected}")
        lines = mlpd_lines(p.stderr)
        if line is None:
            t.check(not lines, f"{what}: the agent wrote {lines}")
        else:
            t.check(len(lines) == 1 and re.fullmatch(line, lines[0]), f"{what}: expected one line, got {lines}")
        if os.path.exists(expected):
            rc, v, _ = t.verify_json(expected, strict=True)
            t.check(rc == 0 and v["ok"] and v["counts"].get("alloc", 0) >= 500, f"{what}: {expected} does not verify")
    print("ok  option precedence: the non-empty one; both: --profile=mlpd's, one line", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-failures-") as workdir:
        check_output_errors(workdir)
        check_option_precedence(workdir)
        os.chdir(workdir)
        check_children(workdir)
        check_fork_without_exec(workdir)
    t.finish("failures")


if __name__ == "__main__":
    main()
