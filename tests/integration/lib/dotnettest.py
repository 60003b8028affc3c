"""What the .NET integration tests (tests/integration/dotnet/) share: the agent, the SDK's `dotnet`,
the test programs built by tests/programs/dotnet/build.sh, mlpd's CLSID, and an environment without
any profiler variable of ours or the runtime's."""
import os
import shutil

import mlpdtest as t

AGENT = os.path.realpath(os.environ["MLPD_AGENT"])
DOTNET = os.environ.get("DOTNET") or shutil.which("dotnet")
PROGRAMS = os.environ.get("MLPD_DOTNET_PROGRAMS", "")
DLL = os.path.join(PROGRAMS, "DotnetPrograms.dll")
APPHOST = os.path.join(PROGRAMS, "DotnetPrograms")
CLSID = "{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"  # docs/dotnet.md
OUR_VARS = ("MLPD_OPTIONS", "LD_PRELOAD", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",
            "CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64")


def env_with(**kw):
    """The test's environment without OUR_VARS, plus `kw`."""
    env = {k: v for k, v in os.environ.items() if k not in OUR_VARS}
    env.update(kw)
    return env


def profiled(args, options, **extra):
    """`dotnet DLL args` with the agent (the CORECLR_ variables) and MLPD_OPTIONS=options, plus `extra`."""
    return t.run([DOTNET, DLL] + args, env=env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                    CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS=options, **extra))


def mlpd_lines(stderr):
    """The agent's lines in a program's standard error."""
    return [l for l in stderr.splitlines() if l.startswith("mlpd:")]


def check_file(label, path):
    """`path` passes mlpd verify --strict and Mono's mprof-report reads it; returns mprof-report's
    totals and text."""
    rc, v, p = t.verify_json(path, strict=True)
    t.check(rc == 0 and v and v["ok"], f"{label}: {path} does not verify --strict: {v and v.get('errors', [])[:3]} {p.stderr[-300:]}")
    rc, totals, p = t.mprof_report(path, "--traces")
    t.check(rc == 0, f"{label}: mprof-report failed on {path}: {p.stdout[-300:]} {p.stderr[-300:]}")
    return totals, p.stdout


# The runtime's major version the programs run on: 10 (the SDK's, framework-dependent) or 8 (the same
# programs published self-contained for .NET 8; the ctest variants NAME_net8, label dotnet8).
MAJOR = int(os.environ.get("MLPD_DOTNET_MAJOR", "10"))


def require_programs(name):
    """Skips the test (exit 77, saying why) without dotnet or the programs; checks that the programs run
    on the runtime version the test was registered for."""
    import sys
    if not DOTNET or not os.path.exists(DLL):
        why = os.path.join(os.path.dirname(PROGRAMS.rstrip("/")), "not-built.txt")
        reason = open(why).read().strip() if os.path.exists(why) else "no dotnet or no .NET test programs (tests/programs/dotnet)"
        print(f"{name}: {reason}: skipped")
        sys.exit(77)
    p = t.run([DOTNET, DLL, "hello"], env=env_with())
    t.check(p.stdout.startswith(f"hello from .NET {MAJOR}."), f"{name}: the programs should run on .NET {MAJOR}: {p.stdout!r}")
    print(f"{name}: {p.stdout.strip()[len('hello from '):]}", flush=True)


def mprof_heap_classes(path, shot):
    """Mono's mprof-report's heapshot summary of `path` against `shot` (the same heapshot in `mlpd
    heapshots --json`, the file's last): every class it lists is named (no "unresolved class"), with
    mlpd's object count and bytes; it lists them all (--verbose). Returns the problems found (empty
    when none) and mprof-report's classes {name: (objects, bytes)} of that heapshot."""
    r = t.run([t.MPROF_REPORT, "--verbose", "--reports=heapshot", path], timeout=300)
    if r.returncode != 0:
        return [f"mprof-report failed: {r.stderr[-300:]}"], {}
    blocks, cur = [], None
    for line in r.stdout.splitlines():
        if line.startswith("\tHeap shot "):
            cur = {}
            blocks.append(cur)
            continue
        w = line.split(None, 3)
        if cur is not None and len(w) == 4 and w[0].isdigit() and w[1].isdigit():
            objects, nbytes, name = int(w[1]), int(w[0]), w[3]
            if name.endswith(")") and " (bytes: " in name:  # a later heapshot's change since the one before
                name = name[:name.rindex(" (bytes: ")]
            o, b = cur.get(name, (0, 0))
            cur[name] = (o + objects, b + nbytes)
    if not blocks:
        return ["mprof-report shows no heapshot"], {}
    theirs = blocks[-1]
    problems = [f"{n} ({o} objects)" for n, (o, _) in theirs.items() if n.startswith("unresolved class")]
    mine = {}
    for c in shot["classes"]:
        o, b = mine.get(c["name"], (0, 0))
        mine[c["name"]] = (o + c["objects"], b + c["bytes"])
    differ = [(n, mine.get(n), theirs.get(n)) for n in sorted(set(mine) | set(theirs))
              if not n.startswith("unresolved class") and mine.get(n) != theirs.get(n)]
    if differ:
        problems.append(f"{len(differ)} classes counted otherwise (name, mlpd, mprof-report): {differ[:5]}")
    return problems, theirs
