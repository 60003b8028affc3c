#!/usr/bin/env python3
"""mlpd as a CoreCLR profiler, loaded (docs/dotnet.md, "Loading"): through the runtime's own variables
(CORECLR_ENABLE_PROFILING, CORECLR_PROFILER=mlpd's CLSID, CORECLR_PROFILER_PATH); through LD_PRELOAD in
the `dotnet` muxer and in an apphost, where the ELF constructor sets those variables; never over another
profiler's variables; a bad option refused with one line; a process that is neither Mono nor .NET left
exactly as it was. In every run the program's output and exit code are unchanged."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, APPHOST, CLSID, DLL, DOTNET, OUR_VARS, PROGRAMS, env_with, require_programs  # noqa: E402,F401


def mlpd_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("mlpd:")]


def same_as_plain(label, p, plain):
    t.check(p.stdout == plain.stdout, f"{label}: the program's output changed: {p.stdout!r} vs {plain.stdout!r}")
    t.check(p.returncode == plain.returncode, f"{label}: exit code {p.returncode}, plain {plain.returncode}")


def main():
    require_programs("dotnet_loading")
    plain = t.run([DOTNET, DLL, "hello"], env=env_with())
    t.check(plain.returncode == 7 and "hello from .NET" in plain.stdout, f"plain run: {plain.returncode} {plain.stdout!r}")
    plain_apphost = t.run([APPHOST, "hello"], env=env_with())
    t.check(plain_apphost.stdout == plain.stdout and plain_apphost.returncode == 7, "plain apphost run differs")

    # 1. The runtime's own variables: DllGetClassObject, the class factory, Initialize with the
    #    runtime's ICorProfilerInfo (12 on .NET 8 and later).
    p = t.run([DOTNET, DLL, "hello"], env=env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                   CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS="verbose"))
    same_as_plain("CORECLR_* variables", p, plain)
    loaded = [l for l in mlpd_lines(p.stderr) if l.startswith("mlpd: runtime: .NET ") and "ICorProfilerInfo12" in l]
    t.check(len(loaded) == 1, f"CORECLR_* variables: no 'loaded' line: {p.stderr[-500:]!r}")
    print(f"ok  CORECLR_* variables: {loaded[0] if loaded else ''}", flush=True)

    # The same without verbose: nothing said (the defaults: output.PID.mlpd here).
    p = t.run([DOTNET, DLL, "hello"], env=env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                   CORECLR_PROFILER_PATH=AGENT))
    same_as_plain("CORECLR_* without MLPD_OPTIONS", p, plain)
    t.check(not mlpd_lines(p.stderr), f"CORECLR_* without MLPD_OPTIONS: the agent spoke: {p.stderr[-300:]!r}")

    # 2. LD_PRELOAD in the dotnet muxer and in the apphost: the constructor sets the three variables.
    for label, cmd in (("LD_PRELOAD dotnet", [DOTNET, DLL, "hello"]), ("LD_PRELOAD apphost", [APPHOST, "hello"])):
        p = t.run(cmd, env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="verbose"))
        same_as_plain(label, p, plain)
        lines = mlpd_lines(p.stderr)
        t.check(any("a .NET host: CORECLR_ENABLE_PROFILING, CORECLR_PROFILER and CORECLR_PROFILER_PATH set" in l
                    for l in lines), f"{label}: the variables were not set: {lines}")
        t.check(any(l.startswith("mlpd: runtime: .NET ") for l in lines), f"{label}: the runtime did not load mlpd: {lines}")
        print(f"ok  {label}: {lines}", flush=True)

    # 3. Another profiler configured: mlpd stays out (verbose says why), its variables untouched.
    other = "{846F5F1C-F9AE-4B07-969E-05C26BC060D8}"
    p = t.run([DOTNET, DLL, "hello"], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="verbose",
                                                   CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=other,
                                                   CORECLR_PROFILER_PATH="/nonexistent/other-profiler.so"))
    same_as_plain("another profiler", p, plain)
    lines = mlpd_lines(p.stderr)
    t.check(any("another .NET profiler is configured" in l and other in l for l in lines),
            f"another profiler: verbose did not say why mlpd stays out: {lines}")
    t.check(not any(l.startswith("mlpd: runtime: .NET ") for l in lines), f"another profiler: mlpd was loaded: {lines}")
    print(f"ok  another profiler: {lines}", flush=True)
    # CORECLR_ENABLE_PROFILING=0: the user turned .NET profiling off; left as it is.
    p = t.run([DOTNET, DLL, "hello"], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="verbose",
                                                   CORECLR_ENABLE_PROFILING="0"))
    same_as_plain("CORECLR_ENABLE_PROFILING=0", p, plain)
    lines = mlpd_lines(p.stderr)
    t.check(any("CORECLR_ENABLE_PROFILING=0" in l for l in lines) and
            not any(l.startswith("mlpd: runtime: .NET ") for l in lines), f"CORECLR_ENABLE_PROFILING=0: {lines}")

    # nochildren: the program (and so its children) no longer sees the profiler's variables once the
    # agent runs; without it, they stay (a .NET child is profiled into its own file).
    for options, expected in (("nochildren", "CORECLR_PROFILER=(unset)"), ("", "CORECLR_PROFILER=" + CLSID)):
        p = t.run([DOTNET, DLL, "env"], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=options or "output=env.mlpd"))
        t.check(p.stdout.strip() == expected, f"MLPD_OPTIONS={options!r}: the program sees {p.stdout.strip()!r}")
    print("ok  nochildren takes the CORECLR_ variables out", flush=True)

    # 4. A bad option: one line, the program unchanged.
    p = t.run([DOTNET, DLL, "hello"], env=env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                   CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS="nosuchoption"))
    same_as_plain("bad option", p, plain)
    lines = mlpd_lines(p.stderr)
    t.check(len(lines) == 1 and "nosuchoption" in lines[0] and "profiling is off" in lines[0],
            f"bad option: expected one line naming it: {lines}")
    print(f"ok  bad option: {lines}", flush=True)

    # 5. Neither Mono nor .NET: nothing at all (no line, no variable set for its children).
    p = t.run(["/bin/sh", "-c", "echo hi; env"], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS="verbose"))
    t.check(p.returncode == 0 and p.stdout.startswith("hi\n"), f"sh: {p.returncode} {p.stdout[:100]!r}")
    t.check(p.stderr == "", f"sh: the agent spoke: {p.stderr!r}")
    t.check("CORECLR_" not in p.stdout, "sh: CORECLR_ variables were set in a process that is not .NET")
    print("ok  /bin/sh: untouched", flush=True)
    t.finish("dotnet_loading")


if __name__ == "__main__":
    main()
