#!/usr/bin/env python3
"""The runtime's version, read at start, picks the readers of Mono's internals (issue 26): a known runtime
says so in one `verbose` line (`runtime: Mono 6.8.0.105, internals v6_8`) and our stack walker makes the
backtraces; a runtime the agent does not know (MLPD_TEST_MONO_VERSION stands in for the runtime's answer)
says `internals off` once, our walker stays off, and the file is still complete and strictly valid, its
allocation backtraces made by Mono's own walk."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
RUNTIME_LINE = re.compile(r"^mlpd: runtime: Mono (\S+), internals (\S+?)(?::|$)(.*)$", re.M)
WALK = re.compile(r"backtraces: (\d+) by our stack walker")


def run(work, name, version):
    out = os.path.join(work, name + ".mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,gcalloc,verbose,output={out}")
    env.pop("MLPD_WALKER", None)
    env.pop("MLPD_TEST_MONO_VERSION", None)
    if version is not None:
        env["MLPD_TEST_MONO_VERSION"] = version
    p = t.run([t.MONO, t.program("alloc")], env=env)
    return p, out


def sites(path):
    p = t.run([t.MLPD, "report", "--json", path])
    if not t.check(p.returncode == 0, f"report {path}: exit {p.returncode}: {p.stderr[:300]}"):
        return {}
    import json
    return {s["name"]: s["objects"] for s in json.loads(p.stdout)["alloc"]["sites"]}


def main():
    plain = t.run([t.MONO, t.program("alloc")])
    t.check(plain.returncode == 0, f"plain run: exit {plain.returncode}")
    with tempfile.TemporaryDirectory() as work:
        # The runtime as it is: known, internals on.
        p, out = run(work, "known", None)
        lines = RUNTIME_LINE.findall(p.stderr)
        t.check(len(lines) == 1, f"known: one runtime line expected, got {lines}: {p.stderr[-400:]}")
        if lines:
            version, internals, _ = lines[0]
            prefix = "6.12." if t.RUNTIME == "mono612" else "6.8."
            t.check(version.startswith(prefix), f"known: version {version}, expected {prefix}*")
            t.check(internals == "v6_8", f"known: internals {internals}")
        m = WALK.search(p.stderr)
        t.check(m is not None and int(m.group(1)) > 10000, f"known: our walker made too few backtraces: {m and m.group(0)}")
        t.check(p.stdout == plain.stdout and p.returncode == 0, "known: output or exit status changed")
        rc, obj, _ = t.verify_json(out, strict=True)
        t.check(rc == 0, f"known: verify --strict: {obj}")
        known_sites = sites(out)

        # An unknown runtime: internals off, Mono's walk for every backtrace.
        p, out = run(work, "unknown", "7.0.0.1 (a runtime from the future)")
        lines = RUNTIME_LINE.findall(p.stderr)
        t.check(len(lines) == 1 and lines[0][0] == "7.0.0.1" and lines[0][1] == "off"
                and "no layout readers" in lines[0][2], f"unknown: runtime lines {lines}")
        t.check(p.stderr.count("internals off") == 1, f"unknown: 'internals off' said {p.stderr.count('internals off')} times")
        m = WALK.search(p.stderr)
        t.check(m is not None and int(m.group(1)) == 0, f"unknown: our walker made backtraces: {m and m.group(0)}")
        t.check(p.stdout == plain.stdout and p.returncode == 0, "unknown: output or exit status changed")
        rc, obj, _ = t.verify_json(out, strict=True)
        t.check(rc == 0, f"unknown: verify --strict: {obj}")
        unknown_sites = sites(out)
        make = "AllocProgram:MakeNode (int,Node)"
        t.check(unknown_sites.get(make) == 10000 == known_sites.get(make),
                f"unknown: {make} allocated {unknown_sites.get(make)} objects by Mono's walk, "
                f"{known_sites.get(make)} by ours; 10000 expected")

        # A version string the agent cannot read is the same as an unknown one.
        p, _ = run(work, "garbled", "garbled")
        t.check("runtime: Mono unknown, internals off: unreadable version 'garbled'" in p.stderr,
                f"garbled: {p.stderr[-300:]}")
        t.check(p.returncode == 0 and p.stdout == plain.stdout, "garbled: output or exit status changed")
    t.finish("runtime_version")


if __name__ == "__main__":
    main()
