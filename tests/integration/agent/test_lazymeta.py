#!/usr/bin/env python3
"""Metadata described lazily (issue 11, docs/design.md "Metadata described lazily"): with no sampling,
no `jit` events and no jitdump/perfmap, a JIT'd method is described only when an event first references
it (with the code range its jit_done gave); while no heapshot can be taken, a class only at its first
vtable. Checked here: such files hold no method the events do not name and no class without a vtable,
are strict-clean (everything an event references is described before it) and read by mprof-report;
`jit` and MLPD_EAGER_METADATA (every method and class at load, as before) bring them back, so the
counts below can fail; lazily described methods keep their code range; a program that unloads an
AppDomain (classes named at load after it) is strict-clean too."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def profile(work, prog, options, name, eager=False):
    out = os.path.join(work, f"{name}.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    env.pop("MLPD_EAGER_METADATA", None)
    if eager:
        env["MLPD_EAGER_METADATA"] = "1"
    p = t.run([t.MONO, t.program(prog)], env=env, timeout=300)
    what = f"{prog} ({options}{', eager' if eager else ''})"
    t.check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr[-300:]}")
    rc, obj, v = t.verify_json(out, strict=True)
    t.check(rc == 0 and obj and obj.get("ok"), f"{what}: verify --strict failed: {v.stdout[-500:]} {v.stderr[-300:]}")
    mrc, _, _ = t.mprof_report(out)
    t.check(mrc == 0, f"{what}: mprof-report exit {mrc}")
    counts = (obj or {}).get("counts", {})
    print(f"ok  {what}: {counts.get('method_jit', 0)} methods, {counts.get('class_load', 0)} classes, "
          f"{counts.get('vtable_load', 0)} vtables", flush=True)
    return out, counts


def main():
    with tempfile.TemporaryDirectory() as work:
        _, lazy = profile(work, "exceptions", "nodefaults", "lazy")
        t.check(lazy.get("method_jit", 0) == 0, f"nodefaults: {lazy.get('method_jit')} methods described, none expected")
        t.check(lazy.get("class_load", 0) <= lazy.get("vtable_load", 0),
                f"nodefaults: {lazy.get('class_load')} classes for {lazy.get('vtable_load')} vtables")

        _, eager = profile(work, "exceptions", "nodefaults", "eager", eager=True)
        t.check(eager.get("method_jit", 0) >= 100, f"eager: only {eager.get('method_jit')} methods described")
        t.check(eager.get("class_load", 0) > eager.get("vtable_load", 0),
                f"eager: {eager.get('class_load')} classes for {eager.get('vtable_load')} vtables")

        _, jit = profile(work, "exceptions", "nodefaults,jit", "jit")
        t.check(jit.get("method_jit", 0) >= 100, f"jit: only {jit.get('method_jit')} methods described")

        # Exception events with backtraces: the methods of the frames and clauses, described lazily
        # before the events, with the code range of their jit_done.
        out, exc = profile(work, "exceptions", "nodefaults,exception", "exception")
        t.check(0 < exc.get("method_jit", 0) < eager.get("method_jit", 0),
                f"exception: {exc.get('method_jit')} methods described (eager: {eager.get('method_jit')})")
        p = t.run([t.MLPD, "dump", out], timeout=120)
        jitted = [l for l in p.stdout.splitlines() if " method_jit " in l and "ExceptionsProgram:Thrower " in l]
        t.check(bool(jitted) and not any("code=0x0 " in l or " size=0 " in l for l in jitted),
                f"exception: Thrower's description lacks its code range: {jitted[:2]}")

        profile(work, "appdomain", "nodefaults,gcalloc", "appdomain")
    t.finish("agent_lazymeta")


if __name__ == "__main__":
    main()
