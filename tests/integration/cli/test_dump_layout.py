#!/usr/bin/env python3
"""`mlpd dump --json` prints every field of every event kind the layout table lists, under the table's
name, and no field the table does not list.

The table (codec/include/mlpd/event_layout.h) is read through mlpd_layout (tests/tools), which prints
it. mlpd_synth writes files with every v17 event kind (its _BT variants and jit_helpers of every type
among them). For each event line of the dump: every field of the kind whose condition holds is a key
of the line, and every key is a field of the kind, one of the keys every line has, or a name the dump
adds to a field (a pointer's name, a vtable's class). (The walk, reader/cli/dump_walk.h, takes its
names from the table at compile time; this checks the other direction: that it prints them all.)
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

# Keys of every event line, and those the dump adds beside a field (never a field of the file).
COMMON = {"time", "seconds", "thread", "thread_name", "kind", "buffer", "offset"}
ADDED = {"name", "method_name", "class_name", "image_name", "domain_name", "tid_name", "class"}


def table():
    p = t.run([os.path.join(t.TOOLS, "mlpd_layout")])
    t.check(p.returncode == 0, f"mlpd_layout exit {p.returncode}: {p.stderr}")
    layout = {}
    for line in p.stdout.splitlines():
        kind, *fields = line.split()
        layout[kind] = [tuple(f.split(":")) for f in fields]
    return layout


def main():
    layout = table()
    t.check(len(layout) == 44, f"mlpd_layout lists {len(layout)} kinds, not the 44 of v17")
    seen = {}
    with tempfile.TemporaryDirectory() as d:
        for seed in (1, 2, 3):
            f = os.path.join(d, f"synth{seed}.mlpd")
            p = t.run([os.path.join(t.TOOLS, "mlpd_synth"), "--seed", str(seed), "--threads", "2", f])
            t.check(p.returncode == 0, f"mlpd_synth exit {p.returncode}: {p.stderr}")
            p = t.run([t.MLPD, "dump", "--json", f], timeout=300)
            t.check(p.returncode == 0, f"mlpd dump --json exit {p.returncode}: {p.stderr[:500]}")
            for line in p.stdout.splitlines():
                rec = json.loads(line)
                kind = rec.get("kind")
                if kind is None:
                    continue  # the file header and buffer lines
                if not t.check(kind in layout, f"dump kind {kind} is not in the table"):
                    continue
                keys = set(rec)
                names = {name for name, _ in layout[kind]}
                bt = "backtrace" in keys
                trampoline = rec.get("type") == "specific_trampoline"
                for name, cond in layout[kind]:
                    present = cond == "always" or (cond == "bt" and bt) or (cond == "trampoline" and trampoline)
                    if present and not t.check(name in keys, f"{kind}: field {name} missing from {line[:300]}"):
                        break
                extra = keys - names - COMMON - ADDED
                t.check(not extra, f"{kind}: keys {sorted(extra)} are not fields of the table: {line[:300]}")
                seen[kind] = seen.get(kind, 0) + 1
                if len(t.failures) > 20:
                    t.finish("dump_layout")
    missing = sorted(set(layout) - set(seen))
    t.check(not missing, f"kinds never seen in mlpd_synth's files: {missing}")
    print(f"{sum(seen.values())} events of {len(seen)} kinds checked", flush=True)
    t.finish("dump_layout")


main()
