#!/usr/bin/env python3
"""`heapshot-on-shutdown` on .NET (issue 36; docs/dotnet.md "Heapshots"): one heapshot as the program ends,
for each way a .NET program ends: a return from Main, `Environment.Exit` from a worker thread while the
main thread allocates, and an unhandled exception on the main thread and on a worker thread (the runtime
aborts the process).

`DotnetPrograms heapexit MODE N` keeps known objects alive to its end (N ExitKept held by a static
array, N ExitCycle in a cycle held only by a GC handle, N ExitLate made just before the end; for
`unhandled`, N ExitCarried held by the exception) and drops N ExitDropped before the end. Checks, per
mode: the program's output, standard error and exit code are those of a run without the agent; the
file holds exactly one heapshot, complete, with exactly N objects and N x (the program's own bytes per
object) of each kept type, no ExitDropped, and ExitCarried only where the exception holds them;
`--paths` gives each its holder (the cycle's GC handle, retaining all N; the statics array; the
exception); the
file passes `mlpd verify --strict`, Mono's mprof-report reads it and names every class of the heapshot
with mlpd's counts. Without heapshot-on-shutdown the file has no heapshot (so the checks fail without
the feature: before it, the option was refused and no file was written). `Environment.FailFast` gives
the profiler no callback: no heapshot, and the exit as without the agent."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import (AGENT, CLSID, DLL, DOTNET, check_file, env_with, mlpd_lines, mprof_heap_classes,  # noqa: E402
                        require_programs)

N = 1000
MODES = {"return": 5, "exit": 6, "unhandled": 134, "unhandled-thread": 134}
KEPT = ("MlpdTests.ExitKept", "MlpdTests.ExitCycle", "MlpdTests.ExitLate")


def run(mode, options):
    env = env_with() if options is None else env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                      CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS=options)
    p = subprocess.run([DOTNET, DLL, "heapexit", mode, str(N)], capture_output=True, text=True, env=env,
                       timeout=120)
    # A SIGABRT (the unhandled exception) is the shell's 134.
    rc = 128 - p.returncode if p.returncode < 0 else p.returncode
    return rc, p.stdout, p.stderr


def sizes(stdout):
    out = {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "size":
            out[w[1]] = int(w[2])
    return out


def heapshots(path):
    r = t.run([t.MLPD, "heapshots", "--json", path])
    t.check(r.returncode == 0, f"mlpd heapshots failed on {path}: {r.stderr[-300:]}")
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


def main():
    require_programs("dotnet_heapshot_exit")
    with tempfile.TemporaryDirectory() as d:
        for mode, want_rc in MODES.items():
            rc0, out0, err0 = run(mode, None)
            t.check(rc0 == want_rc, f"{mode}: plain run exit {rc0}, want {want_rc}: {err0[-300:]}")
            t.check(out0.endswith(f"end {mode}\n"), f"{mode}: plain output {out0!r}")
            size = sizes(out0)

            out = os.path.join(d, f"{mode}.mlpd")
            rc, stdout, stderr = run(mode, f"nodefaults,heapshot-on-shutdown,verbose,output={out}")
            t.check(rc == rc0 and stdout == out0, f"{mode}: exit {rc} or output changed: {stdout!r} against {out0!r}")
            # The program's lines (verbose's summary at the end has an empty line of its own).
            theirs = [l for l in stderr.splitlines() if l and not l.startswith("mlpd:")]
            t.check(theirs == [l for l in err0.splitlines() if l],
                    f"{mode}: the program's standard error changed: {theirs[:5]}")
            said = [l for l in mlpd_lines(stderr) if l.startswith("mlpd: heapshot-on-shutdown (")]
            when = "unhandled exception" if mode.startswith("unhandled") else "runtime shutdown"
            t.check(len(said) == 1 and said[0].startswith(f"mlpd: heapshot-on-shutdown ({when}): heapshot 1 taken"),
                    f"{mode}: verbose says {said}")
            if not os.path.exists(out):
                t.check(False, f"{mode}: no file: {mlpd_lines(stderr)}")
                continue
            shots = heapshots(out)
            t.check(len(shots) == 1 and shots[0]["complete"],
                    f"{mode}: heapshots {[(s['index'], s['complete']) for s in shots]}")
            if not shots:
                continue
            classes = {c["name"]: c for c in shots[0]["classes"]}
            kept = KEPT + (("MlpdTests.ExitCarried",) if mode.startswith("unhandled") else ())
            for c in kept:
                t.check(c in classes and classes[c]["objects"] == N and classes[c]["bytes"] == N * size[c],
                        f"{mode}: {c}: {classes.get(c)} against {N} objects of {size.get(c)} bytes")
            for c in ("MlpdTests.ExitDropped",) + (() if mode.startswith("unhandled") else ("MlpdTests.ExitCarried",)):
                t.check(c not in classes, f"{mode}: {c} is not live at the end: {classes.get(c)}")
            # Why each is held at the end (--paths): the cycle by its GC handle alone (one instance retains
            # all N), the statics through the runtime's statics array (a strong handle), the carried objects
            # through the exception being thrown.
            for c, through in (("MlpdTests.ExitCycle", None), ("MlpdTests.ExitLate", "object[]"),
                               ("MlpdTests.ExitCarried", "MlpdTests.ExitException")):
                if c not in classes:
                    continue
                r = t.run([t.MLPD, "heapshots", "--paths", c, "--max", "1", "--json", out])
                paths = json.loads(r.stdout.splitlines()[0])["paths"] if r.returncode == 0 and r.stdout else []
                first = paths[0] if paths else {}
                steps = [x["class"] for x in first.get("steps", [])]
                t.check(first.get("root", {}).get("kind") == "gc_handle" and (through is None or through in steps),
                        f"{mode}: --paths {c}: {first}")
                if c == "MlpdTests.ExitCycle":
                    t.check(first.get("retained") == N * size[c], f"{mode}: the cycle's retained bytes {first.get('retained')}")
            check_file(mode, out)
            problems, _ = mprof_heap_classes(out, shots[0])
            t.check(not problems, f"{mode}: mprof-report's heapshot summary: {problems}")
            print(f"dotnet_heapshot_exit: {mode}: exit {rc}, one heapshot at the end, {shots[0]['objects']} objects, "
                  f"{N} of each kept type; {said[0][len('mlpd: '):]}", flush=True)

        # Environment.FailFast: the runtime aborts with no callback to a profiler: no heapshot (docs/dotnet.md
        # says so), the program's output and exit code unchanged, the file still verifies.
        rc0, out0, _ = run("failfast", None)
        out = os.path.join(d, "failfast.mlpd")
        rc, stdout, stderr = run("failfast", f"nodefaults,heapshot-on-shutdown,output={out}")
        t.check(rc0 == 134 and rc == rc0 and stdout == out0, f"failfast: exit {rc} against {rc0}, output {stdout!r}")
        t.check(not mlpd_lines(stderr), f"failfast: agent lines {mlpd_lines(stderr)}")
        t.check(os.path.exists(out) and not heapshots(out), "failfast: a heapshot without a callback?")
        rc_v, v, _ = t.verify_json(out, strict=True)
        t.check(rc_v == 0 and v and v["ok"], f"failfast: the file does not verify: {v}")

        # Without the option: no heapshot at the end.
        out = os.path.join(d, "none.mlpd")
        rc, _, _ = run("return", f"nodefaults,output={out}")
        t.check(rc == 5 and os.path.exists(out) and not heapshots(out), f"without heapshot-on-shutdown: exit {rc}")
    t.finish("dotnet_heapshot_exit")


if __name__ == "__main__":
    main()
