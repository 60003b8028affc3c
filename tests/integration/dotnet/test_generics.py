#!/usr/bin/env python3
"""Generics named as Mono names them (issue 35, "Names"): tests/programs/crossgen.cs, compiled once by
mcs against mscorlib, runs under `mono` and under `dotnet` with the same MLPD_OPTIONS (sample, alloc).
Its generic methods and types, instantiated over value types (a body of their own on both runtimes) and
over reference types (one shared body: Mono's `Spin<T_REF> (T_REF,int)`, CoreCLR's System.__Canon
instantiation), carry the same names in both files; `mlpd diff --managed` lines up each hot generic
method's CPU stack with weight on both sides. Both files strict, read by mprof-report."""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, CLSID, DOTNET, check_file, env_with  # noqa: E402

OPTIONS = "nodefaults,sample,alloc"
MAIN = "CrossGen.Gen:Main (string[])"
# The program's generic methods that each runtime compiles (the shared ones under Mono's names).
EXPECTED = [
    "CrossGen.Box`1<int>:Make (int)",
    "CrossGen.Box`1<long>:Make (long)",
    "CrossGen.Box`1<long>:Churn (int)",
    "CrossGen.Box`1<T_REF>:Make (T_REF)",
    "CrossGen.Gen:Fill<double> (double,int)",
    "CrossGen.Gen:Spin<int> (int,int)",
    "CrossGen.Gen:Spin<CrossGen.Pair`2<int, long>> (CrossGen.Pair`2<int, long>,int)",
    "CrossGen.Gen:Spin<T_REF> (T_REF,int)",
]
# The hot ones: CPU under Main on both sides.
HOT = ["CrossGen.Gen:Spin<int> (int,int)", "CrossGen.Gen:Spin<T_REF> (T_REF,int)",
       "CrossGen.Gen:Spin<CrossGen.Pair`2<int, long>> (CrossGen.Pair`2<int, long>,int)",
       "CrossGen.Box`1<long>:Churn (int)"]


def described(path):
    """The program's method names described by the file's method_jit events."""
    d = t.run([t.MLPD, "dump", path], timeout=300)
    t.check(d.returncode == 0, f"dump {path} failed: {d.stderr[-300:]}")
    names = set()
    for line in d.stdout.splitlines():
        if " method_jit " in line:
            m = re.search(r"(CrossGen\..*)$", line)
            if m:
                names.add(m.group(1).strip())
    return names


def main():
    exe = t.program("crossgen")
    if not DOTNET or not shutil.which("mono") or not os.path.exists(exe):
        print("dotnet_generics: needs dotnet, mono and tests/programs/crossgen.exe: skipped")
        sys.exit(77)
    shutil.copy(exe, "crossgen.exe")
    with open("crossgen.runtimeconfig.json", "w") as f:
        json.dump({"runtimeOptions": {"tfm": "net8.0", "rollForward": "LatestMajor",
                                      "framework": {"name": "Microsoft.NETCore.App", "version": "8.0.0"}}}, f)
    runs = {
        "mono": (["mono", "crossgen.exe", "5000"], env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=OPTIONS + ",output=mono.mlpd")),
        "dotnet": ([DOTNET, "crossgen.exe", "5000"],
                   env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID, CORECLR_PROFILER_PATH=AGENT,
                            MLPD_OPTIONS=OPTIONS + ",output=dotnet.mlpd")),
    }
    names = {}
    all_named = True
    for name, (cmd, env) in runs.items():
        plain = t.run(cmd, env=env_with())
        p = t.run(cmd, env=env, timeout=300)
        t.check(p.returncode == plain.returncode == 0 and p.stdout == plain.stdout == "crossgen 5000 done\n",
                f"{name}: program changed: {p.returncode} {p.stdout!r} vs {plain.stdout!r}; {p.stderr[-300:]}")
        check_file(name, f"{name}.mlpd")
        names[name] = described(f"{name}.mlpd")
        missing = [n for n in EXPECTED if n not in names[name]]
        all_named &= t.check(not missing, f"{name}: not described under Mono's names: {missing}; the file has "
                             f"{sorted(n for n in names[name] if '`' in n or '<' in n)}")
    if all_named:
        print(f"ok  names: the {len(EXPECTED)} generic methods under the same names in both files", flush=True)

    p = t.run([t.MLPD, "diff", "--managed", "--what", "cpu", "mono.mlpd", "dotnet.mlpd"], timeout=300)
    t.check(p.returncode == 0, f"diff --managed: exit {p.returncode}: {p.stderr[-300:]}")
    rows = {}
    for line in p.stdout.splitlines():
        parts = line.rsplit(" ", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            rows[parts[0]] = (int(parts[1]), int(parts[2]))
    for hot in HOT:
        a, b = rows.get(f"{MAIN};{hot}", (0, 0))
        if t.check(a >= 5 and b >= 5, f"diff: {MAIN};{hot} has {a} hits on Mono and {b} on .NET; "
                                   f"largest: {sorted(rows.items(), key=lambda kv: -sum(kv[1]))[:6]}"):
            print(f"ok  diff: {hot}: {a} hits on Mono, {b} on .NET", flush=True)
    t.finish("dotnet_generics")


if __name__ == "__main__":
    main()
