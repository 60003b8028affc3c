#!/usr/bin/env python3
"""What the report tells the user about the file it reads (issue 33.4, 33.5), on real runs of the agent:

* hot path: a server whose main thread sleeps (Thread.Sleep, then Join) while request threads do the
  work (sleepyserver.exe under `calls`): the calls report's hot path starts at the request threads'
  Worker and goes through Handle, not Main -> Thread.Sleep (the rule: docs/reports.md);
* threads: `report` and `verify` on the same file count the threads writing events the same way and
  say what they count (text and JSON);
* defaults: `sample` without `nodefaults` on a program that throws and catches (exceptions.exe)
  records Mono's default events, more of them than samples: the report's header says so in one line
  and so does the agent's `verbose` summary; with `nodefaults,sample` neither does."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
NOTE = "also recorded Mono's default events"
VERBOSE_NOTE = "also records Mono's default events"


def profile(workdir, name, prog, options, args=()):
    out = os.path.join(workdir, name + ".mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    p = t.run([t.MONO, t.program(prog), *args], timeout=120, env=env)
    t.check(p.returncode == 0, f"{prog} under {options}: exit {p.returncode}: {p.stderr[-300:]}")
    return out, p


def hot_path_and_threads(workdir):
    out, _ = profile(workdir, "server", "sleepyserver", "nodefaults,calls", ("2", "2500", "1200"))
    rep = t.run([t.MLPD, "report", "--json", out])
    t.check(rep.returncode == 0, f"report: exit {rep.returncode}: {rep.stderr[-300:]}")
    r = json.loads(rep.stdout)
    path = [s["name"] for s in r.get("calls", {}).get("hot_path", [])]
    # (Its first step may be the runtime's invoke wrapper that starts the thread.)
    t.check(any("SleepyServer:Worker" in n for n in path[:2]), f"hot path does not start at the request threads: {path}")
    t.check(any("SleepyServer:Handle" in n for n in path), f"hot path misses Handle: {path}")
    t.check(not any("Thread:Sleep" in n or "SleepyServer:Main" in n for n in path),
            f"hot path goes through the sleeping main thread: {path}")
    steps = r.get("calls", {}).get("hot_path", [])
    t.check(steps and all(s["busy_ns"] <= s["total_ns"] for s in steps), f"busy time above inclusive time: {steps[:2]}")
    text = t.run([t.MLPD, "report", out]).stdout
    t.check("hot path (busiest callee at each level" in text, "the text does not say how the hot path is chosen")
    print(f"ok  hot path: {' -> '.join(path[:4])}", flush=True)

    # Threads: what each counts, and the same count of threads writing events.
    rc, v, vp = t.verify_json(out)
    h = r["header"]
    t.check(rc == 0 and v is not None, f"verify --json: exit {rc}: {vp.stderr[-300:]}")
    if v is not None:
        t.check(v["threads_writing"] == h["threads_writing"] == v["threads"],
                f"threads writing events: verify {v['threads_writing']} (threads {v['threads']}), "
                f"report {h['threads_writing']}")
        t.check(h["threads"] >= h["threads_writing"] >= 3,  # main, two request threads
                f"report threads {h['threads']}, writing {h['threads_writing']}")
    m = re.search(r" events, (\d+) threads \((\d+) writing events\)", text)
    vt = t.run([t.MLPD, "verify", out]).stdout
    mv = re.search(r", (\d+) threads writing events, ", vt)
    t.check(m is not None and mv is not None and m.group(2) == mv.group(1) and int(m.group(1)) == h["threads"],
            f"report says {m and m.group(0)!r}, verify {mv and mv.group(0)!r}")
    print(f"ok  threads: report {m and m.group(0).strip()!r}, verify {mv and mv.group(0).strip(', ')!r}", flush=True)


def defaults(workdir):
    noisy, p = profile(workdir, "noisy", "exceptions", "sample,verbose")
    quiet, q = profile(workdir, "quiet", "exceptions", "nodefaults,sample,verbose")
    t.check(VERBOSE_NOTE in p.stderr, f"verbose summary of 'sample' lacks the defaults line: {p.stderr[-600:]}")
    t.check(VERBOSE_NOTE not in q.stderr, "verbose summary of 'nodefaults,sample' has the defaults line")
    line = next((l for l in p.stderr.splitlines() if VERBOSE_NOTE in l), "")
    m = re.search(r": (\d+) exception throws and clauses beside (\d+) samples", line)
    t.check(m is not None and int(m.group(1)) > int(m.group(2)), f"verbose line: {line!r}")
    text = t.run([t.MLPD, "report", noisy]).stdout
    note = next((l for l in text.splitlines() if l.startswith("note:")), "")
    t.check(NOTE in note and "'nodefaults,sample'" in note, f"report of a 'sample' file: no note ({text[:600]!r})")
    # The report's count is the file's: the throws and clauses the agent counted.
    rc, v, _ = t.verify_json(noisy)
    n = re.search(r"events: (\d+) exception throws", note)
    if v is not None and n:
        counts = v["counts"]
        t.check(int(n.group(1)) == counts.get("exception_throw", 0) + counts.get("exception_clause", 0),
                f"note counts {n.group(1)}, the file {counts.get('exception_throw')} + {counts.get('exception_clause')}")
    r = json.loads(t.run([t.MLPD, "report", "--json", noisy]).stdout)
    t.check(r["header"].get("default_events", 0) > 0, "report --json lacks default_events")
    quiet_text = t.run([t.MLPD, "report", quiet]).stdout
    t.check(NOTE not in quiet_text, "report of a 'nodefaults,sample' file has the defaults note")
    print(f"ok  defaults: {note.strip()}", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-notes-") as workdir:
        hot_path_and_threads(workdir)
        defaults(workdir)
    t.finish("report_notes")


if __name__ == "__main__":
    main()
