#!/usr/bin/env python3
"""Backtraces from our own stack walker equal mono_stack_walk_no_il's (MLPD_WALKER=mono), event for event:
the same frames, in the same order, for every allocation, throw and monitor event of each thread, on
programs with deep recursion (beyond maxframes), frames with and without a frame pointer, generic code,
interface and virtual calls, delegates, iterators, static constructors, reflection, boxing, strings and
arrays. Our walker must actually have made most of the backtraces (the `verbose` count), and both files
pass `mlpd verify --strict` and mprof-report.
Multi-threaded and AppDomain programs (whose event sequences vary from run to run) run once with
MLPD_WALKER=check: every backtrace of ours is compared with Mono's walk of the same event, and one
difference would switch our walker off with a message."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
BT_LINE = re.compile(r"^\S+ \S+ (0x[0-9a-f]+)(?: \"[^\"]*\")? (\S+) (.*backtrace=\[.*\].*)$")
HEX = re.compile(r"0x[0-9a-f]+")
COUNTS = re.compile(r"backtraces: (\d+) by our stack walker, (\d+) by mono_stack_walk_no_il")


def env_with(**kw):
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD", "MLPD_WALKER")}
    env.update(kw)
    return env


def per_thread_backtraces(path):
    """Each thread's events with backtraces, in order, addresses removed (names stay): sorted by length."""
    d = t.run([t.MLPD, "dump", path], timeout=300).stdout
    threads = {}
    for line in d.splitlines():
        m = BT_LINE.match(line)
        if m:
            threads.setdefault(m.group(1), []).append(m.group(2) + " " + HEX.sub("X", m.group(3)))
    return sorted(threads.values(), key=lambda s: (len(s), s))


def check_program(workdir, prog, args, options, min_ours):
    files, outputs, counts = {}, {}, {}
    for walker in ("ours", "mono"):
        out = os.path.join(workdir, f"{prog}-{walker}.mlpd")
        env = env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},verbose,output={out}")
        if walker == "mono":
            env["MLPD_WALKER"] = "mono"
        p = t.run([t.MONO, t.program(prog)] + args, env=env, timeout=300)
        t.check(p.returncode == 0, f"{prog} ({walker} walker): exit status {p.returncode}: {p.stderr[-300:]}")
        t.check("disagreed" not in p.stderr, f"{prog}: our walker switched itself off: {p.stderr[-400:]}")
        m = COUNTS.search(p.stderr)
        counts[walker] = (int(m.group(1)), int(m.group(2))) if m else None
        files[walker], outputs[walker] = out, p.stdout
        rc, v, _ = t.verify_json(out, strict=True)
        t.check(rc == 0 and v and v["ok"], f"{prog} ({walker}): does not verify: {v and v['errors'][:3]}")
        r = t.run([t.MPROF_REPORT, "--traces", out], timeout=300)
        t.check(r.returncode == 0, f"{prog} ({walker}): mprof-report exit {r.returncode}")
        for bad in ("unresolved", "unknown method", "unhandled"):
            t.check(bad not in r.stdout, f"{prog} ({walker}): mprof-report prints '{bad}'")
    t.check(outputs["ours"] == outputs["mono"], f"{prog}: program output differs between runs")
    ours, mono = counts["ours"], counts["mono"]
    t.check(ours is not None and mono is not None, f"{prog}: no walker counts in the verbose output")
    if ours and mono:
        t.check(mono[0] == 0, f"{prog}: MLPD_WALKER=mono still used our walker ({mono[0]})")
        total = ours[0] + ours[1]
        if not t.OWN_WALKER:  # arch/generic, aarch64: our walker is not built, every backtrace is Mono's
            min_ours = 0
            t.check(ours[0] == 0, f"{prog}: our walker made {ours[0]} backtraces on arch/{t.ARCH}")
        t.check(total > 0 and ours[0] >= min_ours * total,
                f"{prog}: our walker made {ours[0]} of {total} backtraces, expected at least {min_ours:.0%}")
    a, b = per_thread_backtraces(files["ours"]), per_thread_backtraces(files["mono"])
    n = sum(len(s) for s in a)
    t.check(n > 0, f"{prog}: no backtraces in the file")
    t.check(len(a) == len(b), f"{prog}: {len(a)} threads with backtraces vs {len(b)}")
    for x, y in zip(a, b):
        if x != y:
            i = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            t.check(False, f"{prog}: backtraces differ at event {i} of a thread:\n  ours: "
                    f"{x[i] if i < len(x) else '(none)'}\n  mono: {y[i] if i < len(y) else '(none)'}")
            break
    print(f"ok  {prog}: {n} backtraces equal to mono_stack_walk_no_il's; ours made {ours and ours[0]}, "
          f"Mono's {ours and ours[1]}", flush=True)


def check_every_event(workdir, prog, expected_rc=0):
    out = os.path.join(workdir, f"{prog}-check.mlpd")
    env = env_with(LD_PRELOAD=AGENT, MLPD_WALKER="check",
                   MLPD_OPTIONS=f"nodefaults,gcalloc,exception,monitor,gchandle,verbose,output={out}")
    p = t.run([t.MONO, t.program(prog)], env=env, timeout=600)
    t.check(p.returncode == expected_rc, f"{prog} (check): exit status {p.returncode}")
    t.check("disagreed" not in p.stderr, f"{prog}: our walker differed from Mono's: {p.stderr[-400:]}")
    m = COUNTS.search(p.stderr)
    t.check(m is not None and (int(m.group(1)) > 0 or not t.OWN_WALKER),
            f"{prog} (check): our walker made no backtrace: {p.stderr[-300:]}")
    rc, v, _ = t.verify_json(out, strict=True)
    t.check(rc == 0 and v and v["ok"], f"{prog} (check): does not verify: {v and v['errors'][:3]}")
    print(f"ok  {prog}: each of our {m and m.group(1)} backtraces equal to Mono's walk of the same event", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-backtraces-") as workdir:
        check_program(workdir, "backtraces", [], "nodefaults,gcalloc,exception,monitor", 0.3)
        check_program(workdir, "backtraces", [], "nodefaults,gcalloc,maxframes=5", 0.3)
        check_program(workdir, "alloc", [], "nodefaults,gcalloc", 0.8)
        check_program(workdir, "exceptions", [], "nodefaults,gcalloc,exception", 0.1)
        for prog in ("stress", "threads", "monitors", "gchandles", "finalizers", "appdomain", "domainloop"):
            check_every_event(workdir, prog)
        check_every_event(workdir, "unhandled", expected_rc=1)
    t.finish("backtraces")


if __name__ == "__main__":
    main()
