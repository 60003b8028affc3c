#!/usr/bin/env python3
"""Our stack walker's coverage (issue 11): the share of backtraces our walker makes, from the agent's
`verbose` counts, must stay at least MIN_SHARE on the paths it was taught: strings the runtime allocates
in native code (FastAllocateString's icall wrapper, whose jit_done names the icall while the code is the
wrapper's), exception throws (the frame of Mono's throw trampoline, read from its code), allocations in
shared generic code (frames named from the generic context each frame keeps, learned from Mono's walks)
and allocations whose native chain below was never learned (started from the thread's LMF, as Mono's
walk starts). Measured when written: 99.7% on the strings (the rest: start-up, before the LMF can be
found), 99.97% on the throws and 99.8% on the generics; MIN_SHARE leaves room for a slower machine's
start-up, not for a lost chain or generic frames left to Mono (those give ~40%, 0% and a few %). Some
runs have MLPD_WALKER=check (each backtrace of ours compared with Mono's walk, which switches ours off on
any difference): our walker must still be on at the end, and the allocation runs must have started
backtraces from the LMF."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
MIN_SHARE = 0.97
LINE = re.compile(r"backtraces: (\d+) by our stack walker, (\d+) by mono_stack_walk_no_il .*our walker (on|off)")
LMF = re.compile(r"(\d+) of ours started from the LMF")


def coverage(work, mode, thousands, options, check):
    out = os.path.join(work, f"{mode}.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},verbose,output={out}")
    env.pop("MLPD_WALKER", None)
    if check:
        env["MLPD_WALKER"] = "check"
    p = t.run([t.MONO, t.program("walkcover"), mode, str(thousands)], env=env, timeout=300)
    what = f"walkcover {mode} ({options}{', MLPD_WALKER=check' if check else ''})"
    t.check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr[-300:]}")
    m = LINE.search(p.stderr)
    if not t.check(m is not None, f"{what}: no backtrace summary in: {p.stderr[-500:]}"):
        return
    ours, mono, state = int(m.group(1)), int(m.group(2)), m.group(3)
    share = ours / max(ours + mono, 1)
    t.check(ours + mono >= thousands * 500, f"{what}: only {ours + mono} backtraces")
    t.check(share >= MIN_SHARE, f"{what}: our walker made {ours} of {ours + mono} backtraces "
            f"({100 * share:.1f}%, at least {100 * MIN_SHARE:.0f}% expected): {m.group(0)}")
    t.check(state == "on", f"{what}: our walker was switched off (it disagreed with Mono's): {p.stderr[-500:]}")
    t.check("disagreed" not in p.stderr, f"{what}: {p.stderr[-500:]}")
    lmf = LMF.search(p.stderr)
    via_lmf = int(lmf.group(1)) if lmf else 0
    if check and "gcalloc" in options:
        # Allocations whose native chain was not learned start from the thread's LMF: that path must
        # have run (and, under MLPD_WALKER=check, agreed with Mono's walk every time).
        t.check(via_lmf > 0, f"{what}: no backtrace of ours started from the LMF: {p.stderr[-500:]}")
    print(f"ok  {what}: {ours} of {ours + mono} backtraces by our walker ({100 * share:.2f}%; "
          f"{via_lmf} started from the LMF)", flush=True)


def main():
    with tempfile.TemporaryDirectory() as work:
        coverage(work, "strings", 10, "nodefaults,gcalloc", False)
        coverage(work, "strings", 8, "nodefaults,gcalloc", True)
        coverage(work, "exceptions", 4, "nodefaults,exception", False)
        coverage(work, "exceptions", 2, "nodefaults,exception", True)
        coverage(work, "generics", 10, "nodefaults,gcalloc", False)
        coverage(work, "generics", 4, "nodefaults,gcalloc", True)
    t.finish("agent_walkcover")


if __name__ == "__main__":
    main()
