#!/usr/bin/env python3
"""The `counter` events of the agent on real Mono programs.

For each option set that records counters (the defaults, `counter` with other events, several samples
through a short flush interval):
* `mlpd verify --strict` passes (every sampled counter described before, with its type);
* mprof-report's counters section (`--reports=counters --verbose`) shows Mono's runtime counters --
  "Methods JITted using mono JIT" within a tolerance of what Mono's own log profiler reports for the
  same deterministic program -- and our profiler counters: "Event: KIND" equal, exactly, to the number
  of KIND events `mlpd verify --json` counts in the same file (they describe the file), no events
  dropped, buffers and bytes written;
* Mono.Profiler.Log.dll (LogCount) reads the file and counts the same counter events;
* `mlpd dump` names the counters in its sample lines, with the same running totals.
And `nodefaults` (without `counter`) writes no counter event at all.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
PROGRAM = "counters"
JIT_COUNTER = "Methods JITted using mono JIT"


def env_with(**kw):
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    env.pop("LD_PRELOAD", None)
    env.update(kw)
    return env


def run_agent(options, out, args=()):
    opts = f"{options},output={out}" if options else f"output={out}"
    return t.run([t.MONO, t.program(PROGRAM), *args], env=env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=opts))


def counters_report(path):
    """mprof-report's counters, by category: {(section, name): [values as printed, in time order]}."""
    p = t.run([t.MPROF_REPORT, "--reports=counters", "--verbose", "--counters-sort=category", path], timeout=300)
    result, section, name = {}, None, None
    for line in p.stdout.splitlines():
        m = re.match(r"^\t(\S.*):$", line)
        if m:
            section, name = m.group(1), None
            continue
        m = re.match(r"^\t\t(\S.*): \[type: .*\]$", line)
        if m:
            name = m.group(1)
            result[(section, name)] = []
            continue
        m = re.match(r"^\t\t\t[\d:.]+ : (.*)$", line)
        if m and name is not None:
            result[(section, name)].append(m.group(1))
    return p, result


def last_int(values):
    return int(values[-1]) if values else None


def check_file(label, path, expect_samples_at_least=1):
    rc, v, vp = t.verify_json(path, strict=True)
    if not t.check(rc == 0 and v and v.get("ok"), f"{label}: verify --strict failed: {vp.stdout} {vp.stderr}"):
        return None
    counts = v["counts"]
    t.check(counts.get("counter_descriptors", 0) >= 1, f"{label}: no counter_descriptors event")
    t.check(counts.get("counter_samples", 0) >= expect_samples_at_least,
            f"{label}: {counts.get('counter_samples', 0)} counter samples, expected >= {expect_samples_at_least}")

    p, rep = counters_report(path)
    t.check(p.returncode == 0, f"{label}: mprof-report exit {p.returncode}: {p.stderr}")
    t.check("Counters:" in p.stdout, f"{label}: mprof-report printed no counters section")
    # Our profiler counters: "Event: KIND" is exactly the number of KIND events in the file.
    kinds = [name[len("Event: "):] for (section, name) in rep if section == "Mono Profiler" and name.startswith("Event: ")]
    t.check(len(kinds) >= 40, f"{label}: only {len(kinds)} 'Event: KIND' counters in mprof-report")
    for kind in kinds:
        got = last_int(rep[("Mono Profiler", "Event: " + kind)])
        want = counts.get(kind, 0)
        t.check(got == want, f"{label}: counter 'Event: {kind}' = {got}, the file has {want} {kind} events")
    for kind, n in counts.items():
        t.check(kind in kinds, f"{label}: the file has {n} {kind} events but no 'Event: {kind}' counter")
    t.check(last_int(rep.get(("Mono Profiler", "Events dropped"), [])) == 0, f"{label}: events dropped")
    t.check((last_int(rep.get(("Mono Profiler", "Buffers allocated"), [])) or 0) >= 1, f"{label}: no buffer allocated")
    for name in ("Buffers written", "Bytes written", "Flush latency (last)", "Flush latency (max)"):
        t.check(("Mono Profiler", name) in rep, f"{label}: no '{name}' counter")
    # Mono's runtime counters.
    jit = last_int(rep.get(("Mono JIT", JIT_COUNTER), []))
    t.check(jit is not None and jit > 10, f"{label}: '{JIT_COUNTER}' = {jit}")
    for name in ("User Time", "Working Set"):
        t.check(("Mono System", name) in rep, f"{label}: no Mono System counter '{name}'")

    # Mono.Profiler.Log reads it, counter events included.
    lrc, lcounts, _, lp = t.log_count(path)
    t.check(lrc == 0, f"{label}: LogCount failed: {lp.stderr}")
    for kind in ("counter_descriptors", "counter_samples"):
        t.check(lcounts.get(kind) == counts.get(kind),
                f"{label}: LogCount sees {lcounts.get(kind)} {kind}, verify {counts.get(kind)}")

    # mlpd dump names the counters in its sample lines and adds their deltas up as mprof-report does.
    d = t.run([t.MLPD, "dump", path])
    t.check(d.returncode == 0 and f"({JIT_COUNTER}) =" in d.stdout, f"{label}: mlpd dump does not name the counters")
    totals = re.findall(r"\(" + re.escape(JIT_COUNTER) + r"\) = -?\d+ \(total (\d+)\)", d.stdout)
    t.check(bool(totals) and int(totals[-1]) == last_int(rep.get(("Mono JIT", JIT_COUNTER), [])),
            f"{label}: mlpd dump's total for '{JIT_COUNTER}' {totals[-1:]} differs from mprof-report's")
    return rep


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # Mono's own log profiler on the same program: the reference for the runtime counter.
        mono_file = os.path.join(tmp, "mono.mlpd")
        mp = t.mono_log_profile(PROGRAM, "counter", mono_file)
        t.check(mp.returncode == 0, f"Mono's log profiler run failed: {mp.stderr}")
        _, mono_rep = counters_report(mono_file)
        mono_jit = last_int(mono_rep.get(("Mono JIT", JIT_COUNTER), []))
        t.check(mono_jit is not None and mono_jit > 10, f"Mono's profiler: '{JIT_COUNTER}' = {mono_jit}")

        plain = t.run([t.MONO, t.program(PROGRAM)], env=env_with())
        cases = [
            ("defaults", "", 1),
            ("counter", "counter", 1),
            ("calls,alloc,counter,flush=100", "calls,alloc,counter,flush=100", 3),
            ("sample,counter", "sample,counter,flush=100", 3),
        ]
        for label, options, min_samples in cases:
            out = os.path.join(tmp, re.sub(r"[^a-z0-9]+", "_", label) + ".mlpd")
            p = run_agent(options, out)
            t.check(p.returncode == plain.returncode and p.stdout == plain.stdout,
                    f"{label}: program output changed: {p.stdout!r} / {p.stderr!r}")
            rep = check_file(label, out, min_samples)
            if rep is None:
                continue
            ours = last_int(rep.get(("Mono JIT", JIT_COUNTER), []))
            if mono_jit is not None and ours is not None:
                t.check(abs(ours - mono_jit) <= max(5, mono_jit // 10),
                        f"{label}: '{JIT_COUNTER}' = {ours}, Mono's own profiler says {mono_jit}")
            if "sample" in options:
                # Sampling's accounting: the sample counters are there, "Samples written" equals the
                # file's sample_hit events, and nothing is dropped with the default pool.
                rc, obj, _ = t.verify_json(out)
                hits = (obj or {}).get("counts", {}).get("sample_hit", 0) if rc == 0 else None
                written = last_int(rep.get(("Mono Profiler", "Samples written"), []))
                t.check(hits is not None and written == hits,
                        f"{label}: counter 'Samples written' = {written}, the file has {hits} sample hits")
                for name in ("Samples taken", "Samples skipped (thread idle)", "Samples dropped (pool full)",
                             "Samples dropped (profiling stopped)", "Samples dropped (unfinished at exit)"):
                    t.check(("Mono Profiler", name) in rep, f"{label}: no '{name}' counter in mprof-report")
                t.check(last_int(rep.get(("Mono Profiler", "Samples dropped (pool full)"), [])) in (0, None),
                        f"{label}: samples dropped with the default pool")
            if min_samples > 1:
                values = rep.get(("Mono JIT", JIT_COUNTER), [])
                t.check(len(values) >= 2 and int(values[0]) < int(values[-1]),
                        f"{label}: '{JIT_COUNTER}' did not grow between samples: {values}")

        # Without counter events: none written.
        for options in ("nodefaults", "nodefaults,calls", "nocounter"):
            out = os.path.join(tmp, "none.mlpd")
            run_agent(options, out)
            rc, v, vp = t.verify_json(out, strict=True)
            t.check(rc == 0 and v and v.get("ok"), f"{options}: verify --strict failed: {vp.stdout}")
            counts = (v or {}).get("counts", {})
            t.check("counter_descriptors" not in counts and "counter_samples" not in counts,
                    f"{options}: counter events written: {counts}")
    t.finish("agent_counters")


if __name__ == "__main__":
    main()
