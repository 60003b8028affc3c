#!/usr/bin/env python3
"""Synthetic mlpd files read back by Mono 6.8's own readers.

For a few seeds / thread counts / scales, plain and gzip, this runs
`$MLPD_TOOLS/mlpd_synth` (which writes a consistent file with every v17 event kind and prints the
expected per-kind counts and mprof-report totals), then checks:

 (a) mprof-report (6.8): `--verbose`, `--traces --verbose`, `--traces`, no options, and every report
     on its own (`--verbose --reports=R`) exit 0 and print none of the decoder diagnostics
     ("unhandled", "unresolved", "unknown method", "went backwards", "unmatched leave",
     "Incorrect buffer id", ...). The totals it prints (calls, allocations, exceptions and clauses,
     heapshots incl. roots with --traces, GC collections/resizes/moves/handles, locks, JIT, samples,
     metadata, thread/domain/context summaries, counters) equal the synth's expected totals, and its
     undocumented `stats` report shows exactly the expected number of events per type/subtype.
 (b) `mono $MLPD_PROGRAMS/LogCount.exe FILE --detail` (Mono.Profiler.Log) exits 0, prints exactly the
     expected count for every kind and no kind we did not write, and its detail totals equal ours.
 (c) `$MLPD verify --strict --json FILE` is ok and its counts equal the expected counts.

Mono reader quirks the synth works around (see tests/tools/mlpd_synth.cpp), asserted here:
 * mprof-report 6.8 reads an mvid string after image *unload* events too (FORMAT-NOTES 7.3) and
   swallows everything up to the next NUL. The synth puts the aot_id event right behind the
   image_unload, so mprof-report swallows exactly that event (which it ignores anyway): its stats
   report therefore shows TYPE_AOT_ID count 0, while Mono.Profiler.Log and mlpd see it.
 * mprof-report crashes (SIGSEGV) printing a non-null STRING counter value with --verbose; like
   Mono itself, the synth only writes null string values.
 * mprof-report never prints pinned GC handles (its loop covers types 0-2) and omits a handle type
   whose max live count is 0; pinned handles are checked through LogCount --detail instead.
Mono.Profiler.Log represents every v17 event kind (all 44 are counted by LogCount).
"""
import json
import os
import re
import subprocess
import sys

CONFIGS = [  # (seed, app threads, scale)
    (1, 3, 1),
    (2, 1, 1),
    (7, 5, 2),
    (11, 8, 3),
]

FORBIDDEN = [
    "unhandled", "unresolved", "unknown method", "went backwards", "unmatched leave",
    "Incorrect buffer id", "callee time bigger", "incorrect gc gen", "Cannot load backtrace",
    "duplicate object", "failed revref store", "failed heap class store", "failed heap obj update",
    "failed trace store", "failed heap obj store", "Not a log profiler data file",
]

REPORTS = ["header", "jit", "gc", "sample", "alloc", "call", "metadata", "exception", "monitor",
           "thread", "domain", "context", "heapshot", "counters", "stats"]

# mprof-report --reports=stats rows (TYPE, SUBTYPE) -> the event kinds they count. Root
# register/unregister and the metadata name events have no row.
STATS_ROWS = {
    "alloc": [("TYPE_ALLOC", "TYPE_ALLOC_NO_BT"), ("TYPE_ALLOC", "TYPE_ALLOC_BT")],
    "gc_event": [("TYPE_GC", "TYPE_GC_EVENT")],
    "gc_resize": [("TYPE_GC", "TYPE_GC_RESIZE")],
    "gc_move": [("TYPE_GC", "TYPE_GC_MOVE")],
    "gc_handle_created": [("TYPE_GC", "TYPE_GC_HANDLE_CREATED"), ("TYPE_GC", "TYPE_GC_HANDLE_CREATED_BT")],
    "gc_handle_destroyed": [("TYPE_GC", "TYPE_GC_HANDLE_DESTROYED"), ("TYPE_GC", "TYPE_GC_HANDLE_DESTROYED_BT")],
    "gc_finalize_start": [("TYPE_GC", "TYPE_GC_FINALIZE_START")],
    "gc_finalize_end": [("TYPE_GC", "TYPE_GC_FINALIZE_END")],
    "gc_finalize_object_start": [("TYPE_GC", "TYPE_GC_FINALIZE_OBJECT_START")],
    "gc_finalize_object_end": [("TYPE_GC", "TYPE_GC_FINALIZE_OBJECT_END")],
    "method_leave": [("TYPE_METHOD", "TYPE_LEAVE")],
    "method_enter": [("TYPE_METHOD", "TYPE_ENTER")],
    "method_exc_leave": [("TYPE_METHOD", "TYPE_EXC_LEAVE")],
    "method_jit": [("TYPE_METHOD", "TYPE_JIT")],
    "exception_throw": [("TYPE_EXCEPTION", "TYPE_THROW_NO_BT"), ("TYPE_EXCEPTION", "TYPE_THROW_BT")],
    "exception_clause": [("TYPE_EXCEPTION", "TYPE_CLAUSE")],
    "monitor": [("TYPE_MONITOR", "TYPE_MONITOR_NO_BT"), ("TYPE_MONITOR", "TYPE_MONITOR_BT")],
    "heap_start": [("TYPE_HEAP", "TYPE_HEAP_START")],
    "heap_end": [("TYPE_HEAP", "TYPE_HEAP_END")],
    "heap_object": [("TYPE_HEAP", "TYPE_HEAP_OBJECT")],
    "heap_root": [("TYPE_HEAP", "TYPE_HEAP_ROOT")],
    "sample_hit": [("TYPE_SAMPLE", "TYPE_SAMPLE_HIT")],
    "sample_usym": [("TYPE_SAMPLE", "TYPE_SAMPLE_USYM")],
    "counter_descriptors": [("TYPE_SAMPLE", "TYPE_SAMPLE_COUNTERS_DESC")],
    "counter_samples": [("TYPE_SAMPLE", "TYPE_SAMPLE_COUNTERS")],
    "jit_helper": [("TYPE_RUNTIME", "TYPE_JITHELPER")],
    "sync_point": [("TYPE_META", "TYPE_SYNC_POINT")],
}
METADATA_LOADS = ["class_load", "image_load", "assembly_load", "domain_load", "context_load",
                  "thread_start", "vtable_load"]
METADATA_UNLOADS = ["image_unload", "assembly_unload", "domain_unload", "context_unload", "thread_end"]

# LogCount --detail keys that the synth prints as total.<same key>.
DETAIL_KEY = re.compile(r"^(alloc_bytes|gc_move_objects|heap_root_entries|gc_collections\.gen\d|"
                        r"gc_handle_(created|destroyed)\.\w+|monitor\.\w+|exception_clause\.\w+|"
                        r"heapshot\.\d+\.(objects|bytes))$")


def env(name):
    value = os.environ.get(name)
    if not value:
        sys.exit(f"environment variable {name} is not set (run through ctest)")
    return value


MLPD = env("MLPD")
MONO = env("MONO")
MPROF_REPORT = env("MPROF_REPORT")
SYNTH = os.path.join(env("MLPD_TOOLS"), "mlpd_synth")
LOGCOUNT = os.path.join(env("MLPD_PROGRAMS"), "LogCount.exe")
SOURCE = env("MLPD_SOURCE")


def all_kinds():
    with open(os.path.join(SOURCE, "codec/include/mlpd/event.h"), encoding="utf-8") as f:
        kinds = re.findall(r'^\s*X\(\w+, "(\w+)"\)', f.read(), re.M)
    if len(kinds) != 44:
        sys.exit(f"expected 44 event kinds in event.h, found {len(kinds)}")
    return kinds


KINDS = all_kinds()


def run(cmd, timeout=300):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def show(cmd):
    return " ".join(cmd)


def diff_dicts(expected, actual, what, default=None):
    """Lines describing every key whose value differs (missing keys: default, or 'missing')."""
    out = []
    for key in sorted(set(expected) | set(actual)):
        e = expected.get(key, default)
        a = actual.get(key, default)
        if e != a:
            out.append(f"  {what} {key}: expected {e if e is not None else '(absent)'}, "
                       f"got {a if a is not None else '(absent)'}")
    return out


class Checker:
    def __init__(self, label):
        self.label = label
        self.problems = []

    def fail(self, msg):
        self.problems.append(msg)

    def expect_run(self, cmd, rc, out, err):
        if rc != 0:
            self.fail(f"{show(cmd)} exited with {rc}\n  stderr: {err.strip()[-2000:]}\n"
                      f"  stdout tail: {out.strip()[-1000:]}")
            return False
        return True


def parse_synth(text):
    counts, totals = {}, {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("total."):
            totals[name[len("total."):]] = value
        else:
            counts[name] = int(value)
    return counts, totals


def ints(totals):
    out = {}
    for k, v in totals.items():
        if not k.startswith("counter."):
            out[k] = int(v)
    return out


# ----------------------------------------------------------------------------------------------
# (a) mprof-report

def parse_report(text):
    """The totals an mprof-report run prints, keyed like mlpd_synth's total.* lines."""
    got = {}
    heapshots = 0
    for line in text.splitlines():
        m = re.match(r"^Total calls: (\d+)$", line)
        if m:
            got["calls"] = int(m[1])
        m = re.match(r"^Total memory allocated: (\d+) bytes in (\d+)d? objects$", line)
        if m:
            got["alloc_bytes"], got["alloc_objects"] = int(m[1]), int(m[2])
        m = re.match(r"^\tThrows: (\d+)$", line)
        if m:
            got["throws"] = int(m[1])
        m = re.match(r"^\tExecuted (catch|filter|finally|fault) clauses: (\d+)$", line)
        if m:
            got[f"exception_clause.{m[1]}"] = int(m[2])
        m = re.match(r"^\tHeap shot (\d+) at ([\d.]+) secs: size: (\d+), object count: (\d+), "
                     r"class count: (\d+), roots: (\d+)d?$", line)
        if m:
            heapshots += 1
            p = f"heapshot.{m[1]}."
            got[p + "bytes"], got[p + "objects"] = int(m[3]), int(m[4])
            got[p + "classes"], got[p + "roots"] = int(m[5]), int(m[6])
        for key, pat in (("gc_resizes", r"^\tGC resizes: (\d+)$"),
                         ("gc_max_heap_size", r"^\tMax heap size: (\d+)$"),
                         ("gc_move_objects", r"^\tObject moves: (\d+)$"),
                         ("jit.methods", r"^\tCompiled methods: (\d+)$"),
                         ("jit.code_size", r"^\tGenerated code size: (\d+)$"),
                         ("jit.helpers", r"^\tJIT helpers: (\d+)$"),
                         ("jit.helpers_code_size", r"^\tJIT helpers code size: (\d+)$"),
                         ("samples.unmanaged", r"^\tUnmanaged hits:\s+(\d+) "),
                         ("samples.managed", r"^\tManaged hits:\s+(\d+) "),
                         ("samples.unresolved", r"^\tUnresolved hits:\s+(\d+) "),
                         ("images", r"^\tLoaded images: (\d+)$"),
                         ("assemblies", r"^\tLoaded assemblies: (\d+)$"),
                         ("monitor.contention", r"^\tLock contentions: (\d+)$"),
                         ("monitor.done", r"^\tLock acquired: (\d+)$"),
                         ("monitor.fail", r"^\tLock failures: (\d+)$")):
            m = re.match(pat, line)
            if m:
                got[key] = int(m[1])
        m = re.match(r"^\tGen(\d) collections: (\d+), ", line)
        if m:
            got[f"gc_collections.gen{m[1]}"] = int(m[2])
        m = re.match(r"^\tGC handles (weak|weaktrack|normal|pinned): created: (\d+), destroyed: (\d+), "
                     r"max: (\d+)$", line)
        if m:
            got[f"gc_handle_created.{m[1]}"] = int(m[2])
            got[f"gc_handle_destroyed.{m[1]}"] = int(m[3])
            got[f"gc_handle_max.{m[1]}"] = int(m[4])
    got["heapshots"] = heapshots
    return got


def expected_report(totals, traces):
    exp = {}
    for k, v in totals.items():
        if k.startswith("heapshot.") and k.endswith(".roots"):
            exp[k] = v if traces else 0  # roots are only collected with --traces
        elif re.match(r"^gc_handle_\w+\.pinned$", k):
            continue  # never printed by mprof-report
        elif re.match(r"^gc_handle_\w+\.(weak|weaktrack|normal)$", k):
            t = k.rsplit(".", 1)[1]
            if totals[f"gc_handle_max.{t}"]:  # a type with max live 0 is omitted
                exp[k] = v
        elif k in ("unmatched_leaves", "heap_root_entries"):
            continue
        else:
            exp[k] = v
    return exp


def parse_stats(text):
    rows = {}
    for m in re.finditer(r"^\t\s*(TYPE_\w+)\t\s*(TYPE_\w+)\tcount\s+(\d+)\t", text, re.M):
        rows[(m[1], m[2])] = int(m[3])
    return rows


def check_stats(ck, text, counts):
    rows = parse_stats(text)
    if not rows:
        ck.fail("mprof-report --reports=stats printed no event rows")
        return
    exp, got = {}, {}
    for kind, keys in STATS_ROWS.items():
        exp[kind] = counts.get(kind, 0)
        got[kind] = sum(rows.get(k, 0) for k in keys)
    exp["metadata END_LOAD"] = sum(counts.get(k, 0) for k in METADATA_LOADS)
    got["metadata END_LOAD"] = rows.get(("TYPE_METADATA", "TYPE_END_LOAD"), 0)
    exp["metadata END_UNLOAD"] = sum(counts.get(k, 0) for k in METADATA_UNLOADS)
    got["metadata END_UNLOAD"] = rows.get(("TYPE_METADATA", "TYPE_END_UNLOAD"), 0)
    # The aot_id event is the one mprof-report swallows as the image unload's "mvid" (workaround
    # for its image-unload bug): it must not be decoded as an event of its own.
    exp["aot_id (swallowed by the image unload)"] = 0
    got["aot_id (swallowed by the image unload)"] = rows.get(("TYPE_META", "TYPE_AOT_ID"), 0)
    d = diff_dicts(exp, got, "stats")
    if d:
        ck.fail("mprof-report --reports=stats event counts differ:\n" + "\n".join(d))


def check_summaries(ck, text, counts):
    threads = re.findall(r'^\tThread: (\S+), name: "(.*)"$', text, re.M)
    if len(threads) != counts["thread_start"] or any(not name for _, name in threads):
        ck.fail(f"thread summary: expected {counts['thread_start']} named threads, got {threads}")
    domains = re.findall(r'^\tDomain: (\S+), friendly name: "(.*)"$', text, re.M)
    if len(domains) != counts["domain_load"] or any(name in ("", "(null)") for _, name in domains):
        ck.fail(f"domain summary: expected {counts['domain_load']} named domains, got {domains}")
    contexts = re.findall(r"^\tContext: (\S+), domain: (\S+)$", text, re.M)
    if len(contexts) != counts["context_load"]:
        ck.fail(f"context summary: expected {counts['context_load']} contexts, got {contexts}")


def check_counters(ck, text, totals):
    """Without --verbose mprof-report prints the last value of 14 well-known counters."""
    section = text.split("\nCounters:\n", 1)
    if len(section) != 2:
        ck.fail("mprof-report printed no Counters section")
        return
    got = {}
    for line in section[1].splitlines():
        if not line.strip():
            break
        m = re.match(r"^\t\t(.+?)\s+: (.*)$", line)
        if m:
            got[m[1]] = m[2]
    exp = {k[len("counter."):].replace("_", " "): v for k, v in totals.items() if k.startswith("counter.")}
    if not exp:
        ck.fail("mlpd_synth printed no expected counter values")
    d = diff_dicts(exp, got, "counter")
    if d:
        ck.fail("mprof-report counter values differ:\n" + "\n".join(d))


def check_mprof(ck, path, counts, totals):
    runs = [["--verbose"], ["--traces", "--verbose"], ["--traces"], []]
    runs += [["--verbose", f"--reports={r}"] for r in REPORTS]
    outputs = {}
    for opts in runs:
        cmd = [MPROF_REPORT] + opts + [path]
        rc, out, err = run(cmd)
        if not ck.expect_run(cmd, rc, out, err):
            continue
        for bad in FORBIDDEN:
            for text, stream in ((out, "stdout"), (err, "stderr")):
                if bad in text:
                    lines = [l for l in text.splitlines() if bad in l][:5]
                    ck.fail(f"{show(cmd)}: {stream} contains {bad!r}:\n  " + "\n  ".join(lines))
        outputs[" ".join(opts)] = out
    num = ints(totals)
    for key, traces in (("--verbose", False), ("--traces --verbose", True), ("--traces", True)):
        if key not in outputs:
            continue
        got = parse_report(outputs[key])
        exp = expected_report(num, traces)
        d = diff_dicts(exp, got, "total", default=0)
        if d:
            ck.fail(f"mprof-report {key}: totals differ from mlpd_synth's:\n" + "\n".join(d))
    if "--verbose" in outputs:
        check_summaries(ck, outputs["--verbose"], counts)
    if "--verbose --reports=stats" in outputs:
        check_stats(ck, outputs["--verbose --reports=stats"], counts)
    if "" in outputs:
        check_counters(ck, outputs[""], totals)
    # The perfcounter-section descriptor (0x8000 + category name) is accepted and shown.
    verbose_counters = outputs.get("--verbose --reports=counters", "")
    for needle in ("\t\tSynth Category:\n", "Requests served"):
        if needle not in verbose_counters:
            ck.fail(f"mprof-report --verbose --reports=counters does not show {needle.strip()!r} "
                    "(the perfcounter-section counter)")


# ----------------------------------------------------------------------------------------------
# (b) Mono.Profiler.Log via LogCount.exe

def check_logcount(ck, path, counts, totals):
    cmd = [MONO, LOGCOUNT, path, "--detail"]
    rc, out, err = run(cmd)
    if not ck.expect_run(cmd, rc, out, err):
        return
    got_counts, details = {}, {}
    for line in out.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("detail."):
            details[name[len("detail."):]] = int(value)
        else:
            got_counts[name] = int(value)
    extra = sorted(set(got_counts) - set(counts))
    if extra:
        ck.fail(f"LogCount reports kinds the synth did not write: {extra}")
    d = diff_dicts(counts, got_counts, "kind", default=0)
    if d:
        ck.fail("LogCount (Mono.Profiler.Log) counts differ from mlpd_synth's:\n" + "\n".join(d))
    num = ints(totals)
    exp = {k: v for k, v in num.items() if DETAIL_KEY.match(k)}
    got = {k: v for k, v in details.items() if DETAIL_KEY.match(k)}
    d = diff_dicts(exp, got, "detail", default=0)
    if got_counts.get("alloc", 0) != num["alloc_objects"]:
        d.append(f"  alloc events {got_counts.get('alloc', 0)} != total.alloc_objects {num['alloc_objects']}")
    if d:
        ck.fail("LogCount --detail totals differ from mlpd_synth's:\n" + "\n".join(d))


# ----------------------------------------------------------------------------------------------
# (c) mlpd verify --strict --json

def check_verify(ck, path, counts):
    cmd = [MLPD, "verify", "--strict", "--json", path]
    rc, out, err = run(cmd)
    try:
        result = json.loads(out)
    except ValueError:
        ck.fail(f"{show(cmd)} (rc {rc}) printed no JSON: {out[:500]!r} {err[:500]!r}")
        return
    if rc != 0 or not result.get("ok") or result.get("errors"):
        errors = "\n  ".join(f"offset {e['offset']} buffer {e['buffer']}: {e['message']}"
                             for e in result.get("errors", [])[:20])
        ck.fail(f"{show(cmd)} is not ok (rc {rc}):\n  {errors}")
    d = diff_dicts(counts, result.get("counts", {}), "kind", default=0)
    if d:
        ck.fail("mlpd verify counts differ from mlpd_synth's:\n" + "\n".join(d))
    threads, buffers = result.get("threads", 0), result.get("buffers", 0)
    if buffers < 2 * threads:
        ck.fail(f"expected several buffers per thread, got {buffers} buffers for {threads} threads")


# ----------------------------------------------------------------------------------------------

def check_synth_output(ck, counts, totals):
    missing = [k for k in KINDS if counts.get(k, 0) <= 0]
    if missing:
        ck.fail(f"mlpd_synth wrote no events of kinds {missing} (every v17 kind must be present)")
    unknown = sorted(set(counts) - set(KINDS))
    if unknown:
        ck.fail(f"mlpd_synth printed unknown kinds {unknown}")
    num = ints(totals)
    for key, want in (("unmatched_leaves", 0), ("samples.unresolved", 0)):
        if num.get(key) != want:
            ck.fail(f"mlpd_synth model: total.{key} is {num.get(key)}, expected {want}")
    if num.get("calls") != counts.get("method_enter"):
        ck.fail(f"mlpd_synth: total.calls {num.get('calls')} != method_enter {counts.get('method_enter')}")
    if num.get("heapshots") != counts.get("heap_start"):
        ck.fail("mlpd_synth: total.heapshots != heap_start events")


def main():
    workdir = os.path.join(os.getcwd(), "synth_files")
    os.makedirs(workdir, exist_ok=True)
    failed = 0
    for seed, threads, scale in CONFIGS:
        for gz in (False, True):
            name = f"synth_s{seed}_t{threads}_k{scale}{'_gz' if gz else ''}.mlpd"
            path = os.path.join(workdir, name)
            ck = Checker(name)
            cmd = [SYNTH, "--seed", str(seed), "--threads", str(threads), "--scale", str(scale)]
            cmd += (["--gzip"] if gz else []) + [path]
            rc, out, err = run(cmd)
            if ck.expect_run(cmd, rc, out, err):
                with open(path, "rb") as f:
                    magic = f.read(2)
                if (magic == b"\x1f\x8b") != gz:
                    ck.fail(f"{path}: gzip magic {'missing' if gz else 'unexpected'}")
                counts, totals = parse_synth(out)
                check_synth_output(ck, counts, totals)
                check_verify(ck, path, counts)
                check_logcount(ck, path, counts, totals)
                check_mprof(ck, path, counts, totals)
            if ck.problems:
                failed += 1
                print(f"FAIL {name}")
                for p in ck.problems:
                    print("  " + p.replace("\n", "\n  "))
            else:
                n = sum(counts.values())
                print(f"ok   {name}: {n} events, {len(counts)} kinds, "
                      f"{os.path.getsize(path)} bytes")
            sys.stdout.flush()
    if failed:
        print(f"{failed} file(s) failed")
        return 1
    print("all synthetic files read cleanly by mprof-report, Mono.Profiler.Log and mlpd verify")
    return 0


if __name__ == "__main__":
    sys.exit(main())
