#!/usr/bin/env python3
"""`mlpd push URL FILE...` (docs/fleet.md): files' profiles sent to a Pyroscope-compatible ingest API.

A loopback receiver (tests/integration/lib/pyroscope_receiver.py) speaks Pyroscope's HTTP ingest
protocol and records every request; each pushed profile is decoded by the real decoder,
`go tool pprof -raw`.
- Two files of the agent (exceptions.exe and alloc.exe with sample, alloc, exception): one request
  per kind each file holds (cpu, alloc, exceptions), POST /ingest with format=pprof, from <= until
  within the file's time; each profile decodes, its sample types are the kind's (samples;
  alloc_objects+alloc_space; exceptions) and its totals equal `mlpd report --json`'s (samples,
  allocated objects and bytes, throws) exactly; the labels: service_name the program's name, pid the
  file's, runtime=mono, the --label ones (a --label service_name=... replaces the program's name);
  the token of --token-file as 'Authorization: Bearer', --tenant as X-Scope-OrgID.
- A server answering 500: exit 1, one line with the status and the start of the server's answer.
- Nothing listening: exit 1, one line naming the URL and the reason; nothing else on stderr.
- Bad usage (a URL that is not http(s), a bad label, a token file that cannot be read): exit 2.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def profile(prog, out):
    env = dict(os.environ, LD_PRELOAD=AGENT,
               MLPD_OPTIONS=f"nodefaults,sample=1000,alloc,exception,output={out}")
    p = t.run([t.MONO, t.program(prog)], env=env, timeout=180)
    t.check(p.returncode == 0 and os.path.exists(out), f"{prog}: rc {p.returncode} {p.stderr[-300:]}")


def report(path):
    p = t.run([t.MLPD, "report", "--json", path])
    return json.loads(p.stdout)


def main():
    if not pr.GO:
        print("go (golang-go) not found: scripts/install-deps.sh installs it")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as work:
        files = []
        for prog in ("exceptions", "alloc"):
            out = os.path.join(work, prog + ".mlpd")
            profile(prog, out)
            files.append(out)
        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write("s3cret-token\n")

        # Two files, labels, token, tenant.
        r = pr.Receiver()
        p = t.run([t.MLPD, "push", "--label", "host=box-1", "--label", "env=test", "--token-file", token,
                   "--tenant", "team-a", r.url, *files])
        t.check(p.returncode == 0, f"push: rc {p.returncode}: {p.stderr}")
        t.check(p.stderr == "", f"push: stderr {p.stderr!r}")
        reqs = r.taken()
        r.stop()
        by_file = {}
        for q in reqs:
            by_file.setdefault(q.query.get("name"), []).append(q)
        expect_total = 0
        for path in files:
            rep = report(path)
            hdr = rep["header"]
            prog = os.path.basename(hdr["program"])[:-4]
            kinds = {}
            if rep["samples"]["total"]:
                kinds["samples"] = {"samples": rep["samples"]["total"]}
            if rep["alloc"].get("objects"):
                kinds["alloc_objects"] = {"alloc_objects": rep["alloc"]["objects"], "alloc_space": rep["alloc"]["bytes"]}
            if rep["exceptions"].get("throws"):
                kinds["exceptions"] = {"exceptions": rep["exceptions"]["throws"]}
            expect_total += len(kinds)
            t.check("samples" in kinds and "alloc_objects" in kinds, f"{prog}: the file lacks samples or allocations: {kinds}")
            mine = [q for q in reqs if q.name_labels()[0] == prog]
            t.check(len(mine) == len(kinds), f"{prog}: {len(mine)} requests for {len(kinds)} kinds ({list(kinds)})")
            seen = {}
            for q in mine:
                service, labels = q.name_labels()
                t.check(q.path == "/ingest", f"{prog}: path {q.path}")
                t.check(q.query.get("format") == "pprof", f"{prog}: format {q.query.get('format')}")
                want_labels = {"pid": str(hdr["pid"]), "runtime": "mono", "host": "box-1", "env": "test"}
                t.check(labels == want_labels, f"{prog}: labels {labels} != {want_labels}")
                t.check(q.headers.get("authorization") == "Bearer s3cret-token",
                        f"{prog}: authorization {q.headers.get('authorization')!r}")
                t.check(q.headers.get("x-scope-orgid") == "team-a", f"{prog}: tenant {q.headers.get('x-scope-orgid')!r}")
                frm, until = int(q.query.get("from", "0")), int(q.query.get("until", "0"))
                t.check(0 < frm <= until and until - frm < 600, f"{prog}: from {frm} until {until}")
                t.check(q.profile is not None and q.profile[:2] == b"\x1f\x8b", f"{prog}: no gzipped profile part")
                t.check(q.config is not None and json.loads(q.config).get("alloc_objects") is not None,
                        f"{prog}: sample_type_config {q.config!r}")
                rc, sums, text = pr.decode(q.profile, work, prog)
                if not t.check(rc == 0 and sums, f"{prog}: go tool pprof -raw failed: {text[-300:]}"):
                    continue
                first = next(iter(sums))
                seen[first] = sums
            for first, want in kinds.items():
                t.check(seen.get(first) == want, f"{prog}: pushed {first} profile {seen.get(first)} != report {want}")
        t.check(len(reqs) == expect_total, f"{len(reqs)} requests, expected {expect_total}")

        # --label service_name replaces the program's name.
        r = pr.Receiver()
        p = t.run([t.MLPD, "push", "--label", "service_name=checkout", r.url + "/ingest", files[0]])
        reqs = r.taken()
        r.stop()
        t.check(p.returncode == 0 and reqs and all(q.name_labels()[0] == "checkout" for q in reqs),
                f"service_name: rc {p.returncode} {[q.query.get('name') for q in reqs]} {p.stderr}")

        # A server answering 500.
        r = pr.Receiver(mode="status", status=500)
        p = t.run([t.MLPD, "push", r.url, files[0]])
        n = len(r.taken())
        r.stop()
        lines = p.stderr.splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and "500" in lines[0] and "ingestion refused" in lines[0],
                f"500: rc {p.returncode} stderr {p.stderr!r}")
        t.check(n == 1, f"500: {n} requests (the first failure stops the command)")

        # Nothing listening.
        port = pr.Receiver()
        url = port.url
        port.stop()
        p = t.run([t.MLPD, "push", url, files[0]])
        lines = p.stderr.splitlines()
        t.check(p.returncode == 1 and len(lines) == 1 and url in lines[0] and "connect" in lines[0].lower(),
                f"down: rc {p.returncode} stderr {p.stderr!r}")
        t.check(p.stdout == "", f"down: stdout {p.stdout!r}")

        # Bad usage.
        for args, what in ((["ftp://host", files[0]], "bad URL"), (["--label", "a b=c", "http://h", files[0]], "bad --label"),
                           (["--token-file", os.path.join(work, "none"), "http://h", files[0]], "token-file"),
                           (["http://h"], "no FILE")):
            p = t.run([t.MLPD, "push", *args])
            t.check(p.returncode == 2 and what in p.stderr and len(p.stderr.splitlines()) == 1,
                    f"usage {args}: rc {p.returncode} {p.stderr!r}")
    t.finish("cli_push")


if __name__ == "__main__":
    main()
