#!/usr/bin/env python3
"""Faults on .NET (issue 35): the agent never changes how a .NET program ends, and what it recorded is in
the file. Environment.Exit from a worker thread while the main thread allocates: exit code and output
unchanged, the file strict, the allocations up to the exit in it. SIGKILL in the middle of a run: the
file verifies up to its last whole buffer and holds the samples of the rounds before the kill. An
unhandled exception (on the main thread, and on a worker thread) after 777 allocations: the runtime
aborts the process (SIGABRT, output unchanged), and the file, strict and read by mprof-report, has the
throw (its site named) and the 777 allocations of the crashing thread (docs/dotnet.md, "Faults")."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import AGENT, CLSID, DLL, DOTNET, check_file, env_with, require_programs  # noqa: E402


def agent_env(options):
    return env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID, CORECLR_PROFILER_PATH=AGENT,
                    MLPD_OPTIONS=options)


def counts(path, strict):
    rc, v, p = t.verify_json(path, strict=strict)
    t.check(rc == 0 and v and v["ok"], f"{path} does not verify{' --strict' if strict else ''}: "
                                       f"{v and v.get('errors', [])[:3]} {p.stderr[-300:]}")
    return (v or {}).get("counts", {})


def main():
    require_programs("dotnet_faults")

    plain = t.run([DOTNET, DLL, "exit"], env=env_with())
    p = t.run([DOTNET, DLL, "exit"], env=agent_env("alloc,sample,output=exit.mlpd"))
    t.check(p.returncode == plain.returncode == 3 and p.stdout == plain.stdout == "exiting\n",
            f"exit: the program changed: {p.returncode} {p.stdout!r} vs {plain.returncode} {plain.stdout!r}")
    t.check(not [l for l in p.stderr.splitlines() if l.startswith("mlpd:")], f"exit: the agent spoke: {p.stderr[-300:]}")
    c = counts("exit.mlpd", strict=True)
    t.check(c.get("alloc", 0) >= 10000, f"exit: {c.get('alloc', 0)} allocations in the file (the main thread allocates until the exit)")
    print(f"ok  Environment.Exit: exit 3, {c.get('alloc', 0)} allocations and {c.get('sample_hit', 0)} samples in a strict file", flush=True)

    proc = subprocess.Popen([DOTNET, DLL, "crunch", "4000"], env=agent_env("nodefaults,sample,flush=200,output=killed.mlpd"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    t.check(proc.poll() is None, "kill: the program ended before the kill (make it longer)")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    c = counts("killed.mlpd", strict=False)
    t.check(c.get("sample_hit", 0) >= 50, f"kill: {c.get('sample_hit', 0)} samples in the file after about 3 s of two busy threads")
    print(f"ok  SIGKILL after 3 s: {c.get('sample_hit', 0)} samples in a file that verifies", flush=True)
    for program in ("unhandled", "unhandled-thread"):
        plain = t.run([DOTNET, DLL, program], env=env_with())
        out = f"{program}.mlpd"
        p = t.run([DOTNET, DLL, program], env=agent_env(f"alloc,output={out}"))
        t.check(p.returncode == plain.returncode == -signal.SIGABRT and p.stdout == plain.stdout == "throwing\n",
                f"{program}: the program changed: {p.returncode} {p.stdout!r} vs {plain.returncode} {plain.stdout!r}")
        t.check(not [l for l in p.stderr.splitlines() if l.startswith("mlpd:")], f"{program}: the agent spoke: {p.stderr[-300:]}")
        check_file(program, out)
        r = t.run([t.MLPD, "report", "--json", out], timeout=300)
        report = json.loads(r.stdout) if r.returncode == 0 else {}
        ex = report.get("exceptions", {})
        sites = [x["name"] for x in ex.get("sites", [])]
        payloads = sum(x.get("objects", 0) for x in report.get("alloc", {}).get("types", []) if x["name"] == "MlpdTests.Payload")
        t.check(ex.get("throws") == 1 and "MlpdTests.Unhandled:Throw ()" in sites,
                f"{program}: the unhandled throw is not in the file: {ex}")
        if t.check(payloads == 777, f"{program}: {payloads} of the crashing thread's 777 allocations in the file"):
            print(f"ok  {program}: SIGABRT, the throw (at {sites[:1]}) and {payloads} allocations in a strict file", flush=True)
    t.finish("dotnet_faults")


if __name__ == "__main__":
    main()
