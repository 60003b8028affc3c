#!/usr/bin/env python3
"""Short-call elision (calls-min=USEC, issue 14.2): on a program with many tiny calls and a few long
ones (tests/programs/callsmin.cs), the file shrinks by the share of calls elided, the long calls and
their nesting are all there with exact call counts, every enter left has its leave, and the
"Calls elided" counter accounts for the enters that are gone."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def profile(workdir, name, options):
    out = os.path.join(workdir, name + ".mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    p = t.run([t.MONO, t.program("callsmin")], env=env, timeout=300)
    t.check(p.returncode == 0 and p.stdout.strip() == "done", f"{options}: program changed: {p.returncode} {p.stdout!r} {p.stderr[-300:]}")
    return out


def scan(path):
    """Per-method enter counts of the program's methods, per-thread balance, nesting, last counter values."""
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(p.returncode == 0, f"dump failed: {p.stderr[-300:]}")
    stacks, enters, nesting, problems, counters = {}, {}, {}, [], {}
    for line in p.stdout.splitlines():
        ev = json.loads(line)
        kind = ev.get("kind")
        if kind == "counter_samples":
            for v in ev["values"]:
                counters[v["name"]] = v.get("total", v["value"])  # value: the change since the last sample
            continue
        if kind not in ("method_enter", "method_leave", "method_exc_leave"):
            continue
        name = ev.get("method_name", ev.get("method"))
        st = stacks.setdefault(ev["thread"], [])
        if kind == "method_enter":
            if name.startswith("CallsMinProgram:"):
                enters[name] = enters.get(name, 0) + 1
                parent = next((f for f in reversed(st) if f.startswith("CallsMinProgram:")), None)
                nesting.setdefault(name, {}).setdefault(parent, 0)
                nesting[name][parent] += 1
            st.append(name)
        else:
            if not st or st[-1] != name:
                problems.append(f"leave of {name} with {st[-1:] or 'nothing'} on top")
                continue
            st.pop()
    for th, st in stacks.items():
        if st:
            problems.append(f"thread {th}: enters without a leave: {st[-3:]}")
    return enters, nesting, problems, counters


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-callsmin-") as workdir:
        full = profile(workdir, "full", "nodefaults,counter,calls")
        short = profile(workdir, "min", "nodefaults,counter,calls,calls-min=1000")
        rc, v_full, _ = t.verify_json(full, strict=True)
        t.check(rc == 0, "calls: verify --strict failed")
        rc, v_min, p = t.verify_json(short, strict=True)
        t.check(rc == 0, f"calls-min: verify --strict failed: {p.stdout[-300:]}")
        if not (v_full and v_min):
            t.finish("calls_min")
        enters_full = v_full["counts"].get("method_enter", 0)
        enters_min = v_min["counts"].get("method_enter", 0)
        enters, nesting, problems, counters = scan(short)
        t.check(not problems, f"calls-min: unbalanced: {problems[:5]}")
        elided = counters.get("Calls elided")
        t.check(elided is not None, "calls-min: no 'Calls elided' counter")
        t.check(counters.get("Event: method_enter") == enters_min,
                f"calls-min: 'Event: method_enter' {counters.get('Event: method_enter')} != {enters_min} in the file")
        # The calls are the same in both runs (the program and the runtime's own calls are
        # deterministic up to a few): what is not in the file was elided and counted.
        if elided is not None:
            t.check(abs(enters_min + elided - enters_full) <= enters_full // 200,
                    f"calls-min: {enters_min} kept + {elided} elided != {enters_full} calls")
        # Long() 5, Inner() 10 (twice per Long), Spin() 15 (once per Inner and Long): longer than 1 ms.
        t.check(enters.get("CallsMinProgram:Long ()") == 5, f"Long: {enters.get('CallsMinProgram:Long ()')}")
        t.check(enters.get("CallsMinProgram:Inner ()") == 10, f"Inner: {enters.get('CallsMinProgram:Inner ()')}")
        t.check(enters.get("CallsMinProgram:Spin (int)") == 15, f"Spin: {enters.get('CallsMinProgram:Spin (int)')}")
        t.check(nesting.get("CallsMinProgram:Inner ()") == {"CallsMinProgram:Long ()": 10},
                f"Inner nested in: {nesting.get('CallsMinProgram:Inner ()')}")
        t.check(nesting.get("CallsMinProgram:Spin (int)") == {"CallsMinProgram:Long ()": 5, "CallsMinProgram:Inner ()": 10},
                f"Spin nested in: {nesting.get('CallsMinProgram:Spin (int)')}")
        # 205000 calls of Tiny(): at most a handful outlast 1 ms (a GC, a preemption).
        t.check(enters.get("CallsMinProgram:Tiny (int)", 0) < 100, f"Tiny kept: {enters.get('CallsMinProgram:Tiny (int)')}")
        # The file shrinks with the events: the kept share of the calls, plus the metadata.
        size_full, size_min = os.path.getsize(full), os.path.getsize(short)
        kept = enters_min / max(1, enters_full)
        print(f"calls: {size_full} bytes, {enters_full} enters; calls-min=1000: {size_min} bytes, "
              f"{enters_min} enters, {elided} elided (kept {kept:.4%}, size ratio {size_min / size_full:.4%})", flush=True)
        t.check(size_min < size_full * kept * 4 + 200000, f"calls-min: file {size_min} bytes, expected about {size_full * kept:.0f} + metadata")
        t.check(size_min * 10 < size_full, f"calls-min: file {size_min} not 10x smaller than {size_full}")
    t.finish("calls_min")


if __name__ == "__main__":
    main()
