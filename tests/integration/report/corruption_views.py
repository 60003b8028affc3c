#!/usr/bin/env python3
"""The corruption corpus (tests/integration/corruption: truncations, byte flips and hand-made hostile
files, from Mono's own files) through `mlpd report`, `mlpd report --json`, `mlpd export` (collapsed
and html): never a crash (signal), a hang (10 s) or unbounded memory (1 GiB address space); exit 0, 1
or 2 only; every line on stderr is a problem with its offset or one 'mlpd CMD: ...' message; JSON
output parses. Each case goes through one of the four commands in turn (a subset of the corpus
keeps the test short)."""
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "corruption"))
import corruption_test as ct  # noqa: E402

WORK = os.path.join(os.getcwd(), "corruption-work")
ct.WORK = WORK
ct.FAILED_DIR = os.path.join(WORK, "failures")
COMMANDS = [
    ["report"],
    ["report", "--json"],
    ["export", "--format", "collapsed"],
    ["export", "--format", "html", "--what", "alloc"],
]
failures = []


def run_case(index, case):
    path = os.path.join(WORK, f"case-{index}.mlpd")
    with open(path, "wb") as f:
        f.write(case.data)
    cmd = COMMANDS[index % len(COMMANDS)]
    try:
        p = subprocess.run([ct.MLPD, *cmd, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=ct.RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{case.group} {case.name}: mlpd {' '.join(cmd)}: no answer within {ct.RUN_TIMEOUT} s", path
    rc = p.returncode
    err = p.stderr.decode("utf-8", "replace").splitlines()
    problem = None
    if rc < 0:
        problem = f"killed by signal {-rc}"
    elif rc not in (0, 1, 2):
        problem = f"exit code {rc}"
    else:
        rx = re.compile(r"^" + re.escape(path) + r": (offset \d+ \((buffer \d+|header)\): \S|\.\.\. \d+ problems)")
        for line in err:
            if not rx.match(line) and not line.startswith(f"mlpd {cmd[0]}: "):
                problem = f"unexpected stderr line {line!r}"
                break
        if problem is None and cmd == ["report", "--json"] and rc in (0, 1):
            try:
                json.loads(p.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as e:
                problem = f"report --json output is not JSON: {e}"
    if problem:
        return f"{case.group} {case.name}: mlpd {' '.join(cmd)}: {problem}", path
    os.remove(path)
    return None, None


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    plain = ct.mono_profile("exceptions", "calls,alloc,exception", "plain.mlpd")
    heap = ct.mono_profile("heapshot", "heapshot", "heap.mlpd")
    sample = ct.mono_profile("sample", "sample,alloc", "sample.mlpd")
    data = {}
    for name, path in (("plain", plain), ("heap", heap), ("sample", sample)):
        with open(path, "rb") as f:
            data[name] = f.read()
    rng = random.Random(ct.SEED + 10)
    header_end, _ = ct.layout(data["plain"])
    cases = []
    cases += ct.truncations("truncate-plain", data["plain"], rng, 60)[:120]
    cases += ct.truncations("truncate-sample", data["sample"], rng, 30)[:60]
    cases += ct.flips("flip-plain", data["plain"], rng, 160)
    cases += ct.flips("flip-sample", data["sample"], rng, 80)
    cases += ct.flips("flip-heapshot", data["heap"], rng, 40)
    cases += ct.hostile_cases(data["plain"][:header_end])
    ct.limit_memory()
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=ct.WORKERS) as pool:
        for message, path in pool.map(lambda ic: run_case(*ic), enumerate(cases)):
            if message:
                bad += 1
                print("FAIL: " + message, flush=True)
                os.makedirs(ct.FAILED_DIR, exist_ok=True)
                shutil.move(path, os.path.join(ct.FAILED_DIR, os.path.basename(path)))
    print(f"{len(cases)} cases through report/export, {bad} failed", flush=True)
    if bad:
        sys.exit(1)
    shutil.rmtree(WORK, ignore_errors=True)
    print("report_corruption: all checks passed")


if __name__ == "__main__":
    main()
