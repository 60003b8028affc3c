#!/usr/bin/env python3
"""Names as the report and the exports show them (issue 22.10), and the report's CPU groups (22.2).

names.exe (an anonymous method `NamesProgram/<Main>c__AnonStorey0:<>m__0 (long)` burning CPU while
allocating, a generic method, two threads that only wait) under our agent with sample=1000,alloc:
- every function name `go tool pprof -raw` shows (pprof's own symbolization and demangling on, as a
  user runs it) is a frame name of `mlpd report --json`, whole: the anonymous method with its
  <Main> and <>, wrappers with their "(wrapper ...)", no name padded with spaces; `-top` says
  "File: names.exe" (not [vdso]) and ranks first what the report ranks first;
- no name is left mangled (_Z...), and the agent's own frames (mlpd::...) are all marked "[mlpd] ";
- the collapsed export keeps the anonymous method's name whole;
- the text report's CPU ranking puts waits, the runtime's unnamed frames and the profiler's own frames
  each on one group line, none of their frames on a line of its own; with sample-real the waits are
  labelled as waits.
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
GO = shutil.which("go")
ANON = "NamesProgram/<Main>c__AnonStorey0:<>m__0 (long)"
RAW_LOC = re.compile(r"^\s*\d+: 0x[0-9a-f]+ (?:M=\d+ )?(.*) (\S*):\d+ s=\d+\(\)$")
GROUPS = ("[waits]", "[runtime, unnamed]", "[mlpd overhead]")


def profile(work, options, name):
    out = os.path.join(work, name)
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    p = t.run([t.MONO, t.program("names")], env=env, timeout=180)
    t.check(p.returncode == 0 and p.stdout.strip() == "done" and os.path.exists(out),
            f"names.exe ({options}): rc {p.returncode} {p.stdout[-100:]!r} {p.stderr[-300:]}")
    return out


def report_names(path):
    p = t.run([t.MLPD, "report", "--json", "--top", "1000000", path], timeout=300)
    doc = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    s = doc.get("samples") or {}
    names = {r["name"] for r in s.get("methods", []) + s.get("inclusive", [])}
    for g in s.get("groups", []):
        names.update(m["name"] for m in g.get("members", []))
    return doc, names


def go_pprof(work, *args):
    env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"), PPROF_TMPDIR=work,
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    p = t.run([GO, "tool", "pprof", *args], env=env, timeout=180)
    t.check(p.returncode == 0, f"go tool pprof {' '.join(args)}: rc {p.returncode} {p.stderr[-300:]}")
    return p.stdout


def cpu_section(text):
    m = re.search(r"^== CPU samples.*?(?=^  by thread:)", text, re.S | re.M)
    return m.group(0) if m else ""


def main():
    if not t.check(GO is not None, "go (golang-go) not found"):
        t.finish("exports_names")
    with tempfile.TemporaryDirectory(prefix="mlpd-names-") as work:
        path = profile(work, "sample=1000,alloc", "names.mlpd")
        doc, names = report_names(path)
        t.check(ANON in names, f"the report lacks {ANON!r}")
        mangled = sorted(n for n in names if n.startswith("_Z") or " _Z" in n)
        t.check(not mangled, f"mangled names in the report: {mangled[:3]}")
        unmarked = sorted(n for n in names if "mlpd::" in n and not n.startswith("[mlpd] "))
        t.check(not unmarked, f"the agent's own frames not marked [mlpd]: {unmarked[:3]}")
        t.check(any(n.startswith("[mlpd] ") for n in names), "no [mlpd] frame in a sample=1000,alloc profile")
        print(f"ok  report: {len(names)} names, {sum(n.startswith('[mlpd] ') for n in names)} marked [mlpd]",
              flush=True)

        pb = os.path.join(work, "names.pb.gz")
        p = t.run([t.MLPD, "export", "-o", pb, path])
        t.check(p.returncode == 0, f"export pprof: {p.stderr[-300:]}")
        raw = go_pprof(work, "-raw", pb)
        funcs = set()
        in_locs = False
        for line in raw.splitlines():
            if line.startswith("Locations"):
                in_locs = True
                continue
            if line.startswith("Mappings"):
                break
            m = RAW_LOC.match(line) if in_locs else None
            if m:
                funcs.add(m.group(1))
        t.check(len(funcs) > 5, f"pprof -raw: only {len(funcs)} functions read")
        strangers = sorted(funcs - names)
        t.check(not strangers, f"pprof -raw names that are not the report's: {strangers[:5]}")
        t.check(ANON in funcs, f"pprof -raw lacks {ANON!r} (cut: {[f for f in funcs if 'AnonStorey' in f]})")
        top = go_pprof(work, "-top", "-nodecount=20", pb)
        t.check("File: names.exe" in top, f"pprof -top: {top.splitlines()[:1]}")
        rows = [l.split(None, 5) for l in top.splitlines() if re.match(r"^\s+\d+\s+[\d.]+%", l)]
        first = rows[0][5] if rows and len(rows[0]) == 6 else None
        want = ((doc.get("samples") or {}).get("methods") or [{}])[0].get("name")
        t.check(first is not None and first == want, f"pprof -top first {first!r}, the report's {want!r}")
        padded = [r[5] for r in rows if len(r) == 6 and r[5] != r[5].strip()]
        t.check(not padded, f"pprof -top names padded with spaces: {padded[:3]}")
        print(f"ok  pprof -raw: {len(funcs)} functions, all the report's; -top first {first!r}", flush=True)

        col = os.path.join(work, "names.collapsed")
        t.run([t.MLPD, "export", "-o", col, path])
        t.check(os.path.exists(col) and ANON in open(col).read(), f"collapsed lacks {ANON!r}")

        # The report's CPU ranking: groups on one line each.
        text = t.run([t.MLPD, "report", "--top", "15", path]).stdout
        cpu = cpu_section(text)
        members = {m["name"] for g in (doc.get("samples") or {}).get("groups", []) for m in g.get("members", [])}
        self_lines = [l for l in cpu.splitlines()[3:] if re.match(r"^\s+[\d.]+\s+\d+\s+[\d.]+\s+\d+\s", l)]
        spread = [l for l in self_lines if any(l.rstrip().endswith(m) for m in members)]
        t.check(not spread, f"frames of a group on lines of their own: {spread[:3]}")
        t.check(any("[mlpd overhead]" in l for l in self_lines), f"no [mlpd overhead] line: {cpu[:600]}")
        for g in GROUPS:
            t.check(sum(g in l for l in self_lines) <= 1, f"{g} on more than one line")
        print("ok  report: " + "; ".join(l.strip()[:90] for l in self_lines[:4]), flush=True)

        real = profile(work, "sample-real=200", "names-real.mlpd")
        text = t.run([t.MLPD, "report", "--top", "15", real]).stdout
        cpu = cpu_section(text)
        t.check("sample-real=200" in cpu.splitlines()[0] if cpu else False, f"sample-real heading: {cpu[:100]!r}")
        waits = [l for l in cpu.splitlines() if "[waits] (threads blocked" in l]
        t.check(len(waits) == 1, f"sample-real: waits not on one labelled line: {cpu[:800]}")
        print(f"ok  sample-real: {waits[:1]}", flush=True)
    t.finish("exports_names")


if __name__ == "__main__":
    main()
