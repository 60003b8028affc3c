#!/usr/bin/env python3
"""The mlpd command line: `mlpd dump` on real Mono files, and usage errors of every command.

- Runs Mono 6.8's log profiler (`calls,alloc`) on calls.exe and alloc.exe.
- `mlpd dump` and `mlpd dump --json` on the file, on a gzip copy and through standard input (plain
  and gzip): exit 0, nothing on stderr, identical output whatever the input path.
- Every JSON line parses; the header, buffer and event lines have the documented shape; event
  counts per kind (text and JSON) equal `mlpd verify --json`'s; the buffer count too.
- Names: the enter events of calls.exe's methods carry their names (with exact call counts), and
  allocations of alloc.exe's own classes carry the class name (exact object counts).
- Damaged files: the problems appear in sequence, spelled like `mlpd verify`'s, exit status 1.
- `mlpd --help`, `mlpd dump --help`, `mlpd verify --help` exit 0; unknown options, missing FILE,
  unknown commands exit 2 and missing/unreadable files exit 1, each with one line on stderr.
"""
import collections
import gzip
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

MLPD = t.MLPD

# One text event line: TIME +SECONDS THREAD ["THREAD NAME"] KIND FIELDS...
EVENT_RE = re.compile(r'^(\d+) ([+-]\d+\.\d{9}) (0x[0-9a-f]+)(?: "((?:[^"\\]|\\.)*)")? ([a-z_]+)(.*)$')
PROBLEM_RE = re.compile(r"^offset (\d+) \((?:buffer (\d+)|header)\): (.+)$")
HEX_RE = re.compile(r"^0x[0-9a-f]+$")

# Exact per-method call counts of calls.cs (tests/programs/README.md).
CALLS = {"CallsProgram:Fib (int)": 21891, "CallsProgram:Leaf (int)": 1000, "CallsProgram:Middle (int)": 100,
         "CallsProgram:Outer (int)": 10, "CallsProgram:Main ()": 1}
# Exact per-class allocation counts of alloc.cs.
ALLOCS = {"Node": 10000, "Pair": 2500, "Node[]": 100}


def one_line(s):
    return len(s.strip().splitlines()) == 1


def dump(args, input_bytes=None, label=""):
    p = t.run([MLPD, "dump", *args], input_bytes=input_bytes, timeout=300)
    return p


def parse_text(text, label):
    """Returns (header line, buffer lines, [(kind, thread_name, rest)], problems) of a text dump."""
    lines = text.splitlines()
    header, buffers, events, problems = None, [], [], []
    for i, line in enumerate(lines):
        if line.startswith("header "):
            t.check(i == 0 and header is None, f"{label}: header line at line {i + 1}")
            header = line
            continue
        if line.startswith("buffer "):
            buffers.append(line)
            continue
        m = PROBLEM_RE.match(line)
        if m:
            problems.append((int(m.group(1)), int(m.group(2)) if m.group(2) else None, m.group(3)))
            continue
        m = EVENT_RE.match(line)
        if not t.check(m is not None, f"{label}: line {i + 1} has an unexpected shape: {line[:200]!r}"):
            continue
        events.append((m.group(5), m.group(4), m.group(6)))
    return header, buffers, events, problems


def parse_json(text, label):
    """Returns (header, buffers, events, errors) of a JSON Lines dump; checks every line parses."""
    header, buffers, events, errors = None, [], [], []
    for i, line in enumerate(text.splitlines()):
        try:
            obj = json.loads(line)
        except ValueError as e:
            t.check(False, f"{label}: line {i + 1} is not JSON ({e}): {line[:200]!r}")
            continue
        if not t.check(isinstance(obj, dict), f"{label}: line {i + 1} is not an object"):
            continue
        # Events also carry "buffer" (their buffer's index), so they are recognised by "kind".
        if "kind" in obj:
            events.append(obj)
        elif "header" in obj:
            t.check(i == 0, f"{label}: header object at line {i + 1}")
            header = obj["header"]
        elif "error" in obj:
            errors.append(obj["error"])
        elif "buffer" in obj and isinstance(obj["buffer"], dict):
            buffers.append(obj["buffer"])
        else:
            t.check(False, f"{label}: line {i + 1} is neither header, buffer, error nor event: {line[:200]!r}")
    return header, buffers, events, errors


def check_file(prog, path, workdir):
    label = f"{prog}.mlpd"
    rc, v, vp = t.verify_json(path)
    if not t.check(rc == 0 and v and v["ok"], f"{label}: mlpd verify failed: {vp.stdout[:500]} {vp.stderr[:300]}"):
        return
    counts = v["counts"]

    # --- text --------------------------------------------------------------------------------
    p = dump([path])
    t.check(p.returncode == 0, f"{label}: mlpd dump exited {p.returncode}: {p.stderr[:300]}")
    t.check(p.stderr == "", f"{label}: mlpd dump wrote to stderr: {p.stderr[:300]}")
    text = p.stdout
    header, buffers, events, problems = parse_text(text, label)
    t.check(header is not None, f"{label}: no header line")
    if header:
        t.check("args=\"log:calls,alloc,output=" in header, f"{label}: header lacks the profiler args: {header}")
        t.check(re.search(r"startup_ms=\d+ \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)", header) is not None,
                f"{label}: header lacks the ISO-8601 startup time: {header}")
        for key in ("version=3.0", "data_version=17", "ptr_size=8", "startup_ns=", "timer_overhead=", "flags=0",
                    "pid=", "port=", "arch=", "os="):
            t.check(key in header, f"{label}: header lacks {key}: {header}")
    t.check(problems == [], f"{label}: problems in a valid file: {problems[:3]}")
    t.check(len(buffers) == v["buffers"], f"{label}: {len(buffers)} buffer lines, verify counts {v['buffers']}")
    for b in buffers[:3]:
        t.check(re.match(r"^buffer \d+ offset=\d+ thread=0x[0-9a-f]+( \"[^\"]*\")? time_base=\d+ \([+-]\d+\.\d{9}\) "
                         r"ptr_base=0x[0-9a-f]+ obj_base=0x[0-9a-f]+ method_base=0x[0-9a-f]+ length=\d+$", b),
                f"{label}: unexpected buffer line: {b}")
    text_counts = dict(collections.Counter(k for k, _, _ in events))
    t.check(text_counts == counts, f"{label}: text dump counts differ from verify: "
            f"dump-only {sorted(set(text_counts.items()) - set(counts.items()))}, "
            f"verify-only {sorted(set(counts.items()) - set(text_counts.items()))}")

    # --- JSON --------------------------------------------------------------------------------
    p = dump(["--json", path])
    t.check(p.returncode == 0, f"{label}: mlpd dump --json exited {p.returncode}: {p.stderr[:300]}")
    t.check(p.stderr == "", f"{label}: mlpd dump --json wrote to stderr: {p.stderr[:300]}")
    jtext = p.stdout
    jheader, jbuffers, jevents, errors = parse_json(jtext, label + " (json)")
    t.check(jheader is not None, f"{label}: no JSON header")
    if jheader:
        for key in ("major", "minor", "data_version", "ptr_size", "startup_ms", "startup", "startup_ns",
                    "timer_overhead", "flags", "pid", "port", "args", "arch", "os"):
            t.check(key in jheader, f"{label}: JSON header lacks {key}")
        t.check(jheader.get("major") == 3 and jheader.get("data_version") == 17, f"{label}: JSON header {jheader}")
        t.check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", str(jheader.get("startup"))) is not None,
                f"{label}: JSON startup is not ISO-8601: {jheader.get('startup')}")
    t.check(errors == [], f"{label}: JSON errors in a valid file: {errors[:3]}")
    t.check(len(jbuffers) == v["buffers"], f"{label}: {len(jbuffers)} JSON buffers, verify counts {v['buffers']}")
    t.check([b.get("index") for b in jbuffers] == list(range(len(jbuffers))), f"{label}: buffer indexes not 0..n-1")
    for b in jbuffers:
        for key in ("thread", "ptr_base", "obj_base", "method_base"):
            if not t.check(HEX_RE.match(str(b.get(key))), f"{label}: buffer {key} is not a hex string: {b}"):
                break
        if not t.check(isinstance(b.get("time_base"), int) and isinstance(b.get("length"), int)
                       and isinstance(b.get("offset"), int), f"{label}: buffer fields: {b}"):
            break
    json_counts = dict(collections.Counter(e["kind"] for e in jevents))
    t.check(json_counts == counts, f"{label}: JSON dump counts differ from verify: "
            f"dump-only {sorted(set(json_counts.items()) - set(counts.items()))}, "
            f"verify-only {sorted(set(counts.items()) - set(json_counts.items()))}")
    t.check([e["kind"] for e in jevents] == [k for k, _, _ in events], f"{label}: text and JSON event order differ")
    bad_shape = [e for e in jevents if not (isinstance(e.get("time"), int) and isinstance(e.get("seconds"), (int, float))
                                            and HEX_RE.match(str(e.get("thread"))) and isinstance(e.get("buffer"), int)
                                            and isinstance(e.get("offset"), int))]
    t.check(not bad_shape, f"{label}: events without time/seconds/thread/buffer/offset: {bad_shape[:2]}")
    for key in ("method", "vtable", "obj", "class", "image"):
        bad = [e for e in jevents if key in e and not HEX_RE.match(str(e[key]))]
        t.check(not bad, f"{label}: JSON {key} fields that are not \"0x...\" strings: {bad[:2]}")
    # Thread names reach the thread column once a thread_name event has named the thread.
    t.check(any(e.get("thread_name") == "Profiler Writer" and e["kind"] == "method_jit" for e in jevents),
            f"{label}: no method_jit event attributed to the thread named 'Profiler Writer'")
    t.check(any(n == "Profiler Writer" and k == "method_jit" for k, n, _ in events),
            f"{label}: no text method_jit line with thread \"Profiler Writer\"")

    # --- names -------------------------------------------------------------------------------
    if prog == "calls":
        enter_json = collections.Counter(e.get("method_name") for e in jevents if e["kind"] == "method_enter")
        enter_text = collections.Counter()
        for k, _, rest in events:
            if k == "method_enter":
                m = re.match(r"^ method=0x[0-9a-f]+(?: (.*))?$", rest)
                if t.check(m is not None, f"{label}: method_enter line shape: {rest[:200]!r}"):
                    enter_text[m.group(1)] += 1
        for name, n in CALLS.items():
            t.check(enter_json.get(name) == n, f"{label}: JSON method_enter {name}: {enter_json.get(name)} != {n}")
            t.check(enter_text.get(name) == n, f"{label}: text method_enter {name}: {enter_text.get(name)} != {n}")
        jits = [e for e in jevents if e["kind"] == "method_jit" and e.get("name") == "CallsProgram:Fib (int)"]
        t.check(len(jits) == 1, f"{label}: {len(jits)} method_jit events for CallsProgram:Fib (int)")
    if prog == "alloc":
        alloc_json = collections.Counter(e.get("class_name") for e in jevents if e["kind"] == "alloc")
        alloc_text = collections.Counter()
        for k, _, rest in events:
            if k == "alloc":
                m = re.match(r"^ vtable=0x[0-9a-f]+(?: (\S+))? obj=0x[0-9a-f]+ size=\d+", rest)
                if t.check(m is not None, f"{label}: alloc line shape: {rest[:200]!r}"):
                    alloc_text[m.group(1)] += 1
        for name, n in ALLOCS.items():
            t.check(alloc_json.get(name) == n, f"{label}: JSON allocations of {name}: {alloc_json.get(name)} != {n}")
            t.check(alloc_text.get(name) == n, f"{label}: text allocations of {name}: {alloc_text.get(name)} != {n}")
        named = [e for e in jevents if e["kind"] == "alloc" and e.get("class_name") == "Node"]
        t.check(all(HEX_RE.match(str(e.get("class"))) for e in named), f"{label}: Node allocations lack the class pointer")
        t.check(any(e["kind"] == "class_load" and e.get("name") == "Node" and e.get("image_name", "").endswith("alloc.exe")
                    for e in jevents), f"{label}: class_load of Node without its image name")

    # --- the same bytes through other paths give the same output -------------------------------
    with open(path, "rb") as f:
        data = f.read()
    gz = os.path.join(workdir, prog + ".mlpd.gz")
    with open(gz, "wb") as f:
        f.write(gzip.compress(data))
    for what, args, inp, ref in [
        ("gzip file", [gz], None, text),
        ("gzip file --json", ["--json", gz], None, jtext),
        ("stdin", ["-"], data, text),
        ("stdin --json", ["--json", "-"], data, jtext),
        ("gzip on stdin", ["-"], gzip.compress(data), text),
        ("gzip on stdin --json", ["--json", "-"], gzip.compress(data), jtext),
    ]:
        p = dump(args, input_bytes=inp)
        t.check(p.returncode == 0 and p.stderr == "", f"{label}: {what}: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        t.check(p.stdout == ref, f"{label}: {what}: output differs from the plain file's")
    print(f"ok  {label}: {len(buffers)} buffers, {len(events)} events, text {len(text)} bytes, "
          f"json {len(jtext)} bytes", flush=True)
    return data


def check_damaged(data, workdir):
    """Problems are printed in sequence like verify's and make the exit status 1."""
    # Find the offset of some event in the middle of the file and make its event byte invalid.
    p = dump(["--json", "-"], input_bytes=data)
    offsets = [json.loads(l)["offset"] for l in p.stdout.splitlines() if l.startswith('{"time"')]
    target = offsets[len(offsets) // 2]
    bad = bytearray(data)
    bad[target] = 0x0C  # type 12: no such event type
    cases = [("bad event byte", bytes(bad)), ("truncated", data[: len(data) * 2 // 3]),
             ("not mlpd", b"garbage that is not an mlpd file at all" * 2)]
    for what, blob in cases:
        path = os.path.join(workdir, what.replace(" ", "_") + ".mlpd")
        with open(path, "wb") as f:
            f.write(blob)
        rc, v, _ = t.verify_json(path)
        t.check(rc == 1 and v and not v["ok"], f"damaged ({what}): verify did not fail")
        expected = [(e["offset"], e["buffer"], e["message"]) for e in (v["errors"] if v else [])]
        p = dump([path])
        t.check(p.returncode == 1, f"damaged ({what}): dump exited {p.returncode}, expected 1")
        _, buffers, events, problems = parse_text(p.stdout, f"damaged ({what})")
        t.check(problems == expected, f"damaged ({what}): text problems {problems} != verify's {expected}")
        pj = dump(["--json", path])
        t.check(pj.returncode == 1, f"damaged ({what}): dump --json exited {pj.returncode}, expected 1")
        _, _, _, errors = parse_json(pj.stdout, f"damaged ({what}) json")
        got = [(e.get("offset"), e.get("buffer"), e.get("message")) for e in errors]
        t.check(got == expected, f"damaged ({what}): JSON errors {got} != verify's {expected}")
        if what == "bad event byte":
            # The problem line sits where the bad event was: after the events before it and
            # followed by the next buffer, whose events are still dumped.
            lines = p.stdout.splitlines()
            idx = [i for i, l in enumerate(lines) if l.startswith("offset ")]
            t.check(len(idx) == 1 and 0 < idx[0] < len(lines) - 1 and lines[idx[0] + 1].startswith("buffer "),
                    f"damaged ({what}): the problem line is not followed by the next buffer")
            t.check(f"offset {target} " in (lines[idx[0]] if idx else ""),
                    f"damaged ({what}): problem not reported at offset {target}")
        print(f"ok  damaged ({what}): {expected[0][2] if expected else '?'}", flush=True)


def check_usage(workdir, some_file):
    cases = [
        # (args, expected exit, what must be where)
        (["--help"], 0, "stdout"),
        (["dump", "--help"], 0, "stdout"),
        (["dump", "-h"], 0, "stdout"),
        (["verify", "--help"], 0, "stdout"),
        (["dump", "--bogus", some_file], 2, "line"),
        (["dump"], 2, "line"),
        (["dump", "--json"], 2, "line"),
        (["dump", some_file, some_file], 2, "line"),
        (["verify", "--bogus", some_file], 2, "line"),
        (["verify"], 2, "line"),
        (["frobnicate"], 2, "line"),
        (["dump", os.path.join(workdir, "does-not-exist.mlpd")], 1, "line"),
        (["dump", "--json", os.path.join(workdir, "does-not-exist.mlpd")], 1, "line"),
        (["dump", workdir], 1, "line"),
    ]
    for args, code, where in cases:
        p = t.run([MLPD, *args])
        label = "mlpd " + " ".join(a.replace(workdir, "$TMP") for a in args)
        t.check(p.returncode == code, f"{label}: exit {p.returncode}, expected {code} (stderr {p.stderr[:200]!r})")
        if where == "stdout":
            t.check(p.stdout.lower().startswith("usage: mlpd"), f"{label}: no usage text on stdout")
            t.check(p.stderr == "", f"{label}: wrote to stderr: {p.stderr[:200]!r}")
        else:
            t.check(one_line(p.stderr) and p.stderr.startswith("mlpd"),
                    f"{label}: expected a one-line message on stderr, got {p.stderr!r}")
            t.check(p.stdout == "", f"{label}: wrote to stdout: {p.stdout[:200]!r}")
    # Unreadable (permission denied) — only meaningful when not running as root.
    if os.geteuid() != 0:
        locked = os.path.join(workdir, "locked.mlpd")
        shutil.copy(some_file, locked)
        os.chmod(locked, 0)
        p = t.run([MLPD, "dump", locked])
        t.check(p.returncode == 1 and one_line(p.stderr), f"mlpd dump (unreadable): exit {p.returncode}, {p.stderr!r}")
    print("ok  usage and help", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-cli-") as workdir:
        files = {}
        for prog in ("calls", "alloc"):
            out = os.path.join(workdir, prog + ".mlpd")
            p = t.mono_log_profile(prog, "calls,alloc", out)
            if t.check(p.returncode == 0 and os.path.exists(out),
                       f"mono --profile=log:calls,alloc on {prog}.exe failed ({p.returncode}): {p.stderr[-500:]}"):
                files[prog] = out
        data = None
        for prog, out in files.items():
            d = check_file(prog, out, workdir)
            data = data or d
        if data:
            check_damaged(data, workdir)
        check_usage(workdir, next(iter(files.values()), os.path.join(workdir, "none.mlpd")))
    t.finish("cli")


if __name__ == "__main__":
    main()
