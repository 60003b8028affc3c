#!/usr/bin/env python3
"""A `calls` profile records exactly the calls Mono's own log profiler records for the same program and
options: per method (by full name), the number of method_enter events in our file equals the number in
Mono's, on a multi-threaded program that allocates (collections stop the threads) and on an
allocation-heavy one (objects, boxes, arrays, strings). Left out or allowed, as what Mono's own profiler
threads cause: the calls made on those threads (named "Profiler ..."); the finalization of their thread
objects on the finalizer thread (up to one Thread_free_internal and two runtime-invoke wrappers more in
Mono's file per profiler thread); safepoint polls their suspend requests cause (up to one more
`__icall_wrapper_mono_threads_state_poll` in Mono's file per profiler thread); and the allocators' slow path (`__icall_wrapper_mono_gc_alloc_*`,
called when a thread's allocation buffer is used up: where that happens shifts with every object the
process allocates and with the threads' interleaving, Mono's profiler threads' own included), within
10% or 32 calls (502 against 517 seen on four threads). This fails when the agent makes the program call anything
it would not call under Mono's profiler: e.g. the allocation callback installed without `alloc` (the
allocators then call `__icall_wrapper_mono_profiler_raise_gc_allocation`), or safepoint polls
(`__icall_wrapper_mono_threads_state_poll`) caused by the agent's own threads or signals. Each of our
files must also pass `mlpd verify --strict`; the threaded run is repeated with MLPD_CLOCK=monotonic,
where every enter and leave takes the callbacks' full path instead of the inline one."""
import collections
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
NAME = re.compile(r'^\S+ \S+ 0x[0-9a-f]+(?: "[^"]*")? thread_name tid=(0x[0-9a-f]+) (.*)$')
ENTER = re.compile(r'^\S+ \S+ (0x[0-9a-f]+)(?: "[^"]*")? method_enter method=0x[0-9a-f]+ (.*)$')


def enters(path):
    """method name -> enter count, leaving out the threads of Mono's own profiler."""
    d = t.run([t.MLPD, "dump", path], timeout=300)
    t.check(d.returncode == 0, f"mlpd dump {path}: exit {d.returncode}: {d.stderr[-300:]}")
    per_thread = collections.defaultdict(collections.Counter)
    names = {}
    for line in d.stdout.splitlines():
        m = ENTER.match(line)
        if m:
            per_thread[m.group(1)][m.group(2)] += 1
            continue
        m = NAME.match(line)
        if m:
            names[m.group(1)] = m.group(2)
    total = collections.Counter()
    profiler_threads = 0
    for tid, c in per_thread.items():
        if names.get(tid, "").startswith("Profiler"):
            profiler_threads += 1
            continue
        total.update(c)
    profiler_threads += sum(1 for tid, n in names.items() if n.startswith("Profiler") and tid not in per_thread)
    return total, profiler_threads


def allowed(method, ours, mono, profiler_threads):
    """True when a difference is one the test allows (see the top of this file)."""
    if "Thread_free_internal" in method:
        return 0 <= mono - ours <= profiler_threads
    if "(wrapper runtime-invoke) object:runtime_invoke_virtual_void__this__" in method:
        return 0 <= mono - ours <= 2 * profiler_threads
    if "__icall_wrapper_mono_threads_state_poll" in method:
        # A safepoint poll Mono's own profiler threads caused (a suspend request of theirs met the
        # program's thread at a poll): seen once, 1 in Mono's file and 0 in ours. More in ours fails.
        return 0 <= mono - ours <= profiler_threads
    if "__icall_wrapper_mono_gc_alloc_" in method:
        return abs(mono - ours) <= max(32, 0.10 * max(mono, ours))
    return False


def compare(workdir, prog, arg, options, extra_env=None):
    ours = os.path.join(workdir, f"{prog}-{arg}-mlpd.mlpd")
    theirs = os.path.join(workdir, f"{prog}-{arg}-mono.mlpd")
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD")}
    p = t.run([t.MONO, f"--profile=log:{options},output={theirs}", t.program(prog), arg], env=env, timeout=300)
    t.check(p.returncode == 0, f"{prog} {arg} under Mono's profiler: exit {p.returncode}: {p.stderr[-300:]}")
    env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={ours}", **(extra_env or {}))
    q = t.run([t.MONO, t.program(prog), arg], env=env, timeout=300)
    t.check(q.returncode == 0, f"{prog} {arg} under mlpd: exit {q.returncode}: {q.stderr[-300:]}")
    t.check(p.stdout == q.stdout, f"{prog} {arg}: output differs: {p.stdout!r} vs {q.stdout!r}")
    v = t.run([t.MLPD, "verify", "--strict", ours], timeout=300)
    t.check(v.returncode == 0, f"{prog} {arg} ({options}): mlpd verify --strict: {v.stdout[-300:]}{v.stderr[-300:]}")
    (a, _), (b, nprof) = enters(ours), enters(theirs)
    t.check(sum(b.values()) > 10000, f"{prog} {arg}: only {sum(b.values())} calls in Mono's file")
    diff = sorted(((m, a[m], b[m]) for m in set(a) | set(b) if a[m] != b[m] and not allowed(m, a[m], b[m], nprof)),
                  key=lambda x: -abs(x[1] - x[2]))
    for m, x, y in diff[:10]:
        t.check(False, f"{prog} {arg} ({options}): {m}: {x} calls in ours, {y} in Mono's")
    print(f"ok  {prog} {arg} ({options}{', ' + str(extra_env) if extra_env else ''}): {sum(a.values())} calls in ours, {sum(b.values())} in Mono's, "
          f"{len(diff)} methods differ", flush=True)


def main():
    with tempfile.TemporaryDirectory() as work:
        compare(work, "callcounts", "threads", "calls")
        compare(work, "callcounts", "alloc", "calls")
        compare(work, "callcounts", "alloc", "nodefaults,calls")
        # The enter/leave callbacks' full path for every event: without the TSC the fast path
        # (docs/design.md, "The calls hot path") is never taken.
        compare(work, "callcounts", "threads", "calls", {"MLPD_CLOCK": "monotonic"})
    t.finish("agent_callcounts")


if __name__ == "__main__":
    main()
