#!/usr/bin/env python3
"""`mlpd heapshots --retained / --paths / --dominators / --diff --retained / --suspects` on real Mono.

tests/programs/retention.cs builds leaks with known holders; each is run under Mono's own log profiler
(`heapshot`) and under our agent (`heapshot`); the event and cache leaks also under Mono's
`heapshot-on-shutdown`; port_service.cs's 100,000 PortLive under the agent with a heapshot asked for
over the command port (`mlpd heapshot --port`), analysed while the program still runs. In the heapshot taken after the leak is complete (the last one in which the
leak's classes have their full counts):
- the holder's class is first in `--retained` (JSON and text agree), with exactly the retained size
  the program gives: the bytes of the leak's own classes (listed by `mlpd heapshots`, which agrees
  with mprof-report) -- for the cache, the List's backing array is CacheItem[4096] (32 + 8 * 4096
  bytes on a 64-bit Mono), not counting the empty-array singleton;
- `--paths HOLDER` starts at the right root kind (static for the event and the cache, stack for the
  list, gc_handle for the handle, finalizer_queue for objects kept only by finalization) and ends at
  the holder; the first step has no offset, the others do;
- `--dominators` has the holder's subtree first, held by that kind of root, with the same bytes;
- grow: `--diff 0 2 --retained` lists the cache and the event first (by class and by subtree) and
  never the dropped Garbage; `--suspects` names the cache's subtree first; a diff across two files.
- a static leak touched by request threads (tests/programs/staticleak.cs: one request holds the list's
  array in a local, a different thread at each heapshot, another iterates the list), under Mono's
  profiler and under the agent: in every heapshot the array is below the List held by the static
  field (stack slots are transient copies), `--paths Item[]` starts at the static field, `--suspects`
  names the list first; the port's list (a stale stack word may hold its array) retains all of it.
- errors: a heapshot index out of range (exit 2), a file without heapshots, a truncated file (its
  problems, exit 1), usage errors (exit 2).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

MLPD = t.MLPD
AGENT = os.environ["MLPD_AGENT"]
LIST_CACHE = "System.Collections.Generic.List<CacheItem>"

# mode: (holder class, root kind of its paths, {class: expected objects} of the leak)
LEAKS = {
    "event": ("LeakHandler", "static", {"LeakHandler": 401, "EventSubscriber": 400, "SubscriberData": 400}),
    "cache": (LIST_CACHE, "static", {"CacheItem": 3000, "CacheData": 3000, LIST_CACHE: 1}),
    "list": ("ListNode", "stack", {"ListNode": 20000}),
    "handle": ("HandleTarget", "gc_handle", {"HandleTarget": 1, "HandleData": 2000, "HandleData[]": 1}),
    "finalizer": ("FinalObject", "finalizer_queue", {"FinalObject": 500, "FinalData": 500}),
}


def mlpd(*args, input_bytes=None):
    return t.run([MLPD, "heapshots", *args], timeout=300, input_bytes=input_bytes)


def json_lines(p, label):
    try:
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    except ValueError as e:
        t.check(False, f"{label}: output is not JSON Lines ({e}): {p.stdout[:300]!r}")
        return []


def expected_retained(mode, classes):
    """The holder's retained size, from the program: the bytes of the leak's own classes."""
    b = {name: c["bytes"] for name, c in classes.items()}
    if mode == "event":  # the event's multicast delegate, its invocation list, handlers and their data
        return b["LeakHandler"] + b["System.Delegate[]"] + b["EventSubscriber"] + b["SubscriberData"]
    if mode == "cache":  # List<CacheItem>, its CacheItem[4096], the items and their data
        return b[LIST_CACHE] + 32 + 8 * 4096 + b["CacheItem"] + b["CacheData"]
    if mode == "list":
        return b["ListNode"]
    if mode == "handle":
        return b["HandleTarget"] + b["HandleData[]"] + b["HandleData"]
    return b["FinalObject"] + b["FinalData"]


def pick_heapshot(label, path, counts):
    """The last heapshot in which the leak's classes have their full counts: (index, {class: row})."""
    p = mlpd("--json", path)
    t.check(p.returncode == 0, f"{label}: heapshots --json exit {p.returncode}: {p.stderr[:300]}")
    found = None
    for shot in json_lines(p, label):
        classes = {c["name"]: c for c in shot["classes"]}
        if all(classes.get(k, {}).get("objects") == v for k, v in counts.items()):
            found = (shot["index"], classes)
    t.check(found is not None, f"{label}: no heapshot has the leak's full counts {counts}")
    return found


def check_leak(label, path, mode):
    holder, kind, counts = LEAKS[mode]
    found = pick_heapshot(label, path, counts)
    if not found:
        return
    index, classes = found
    if mode == "event":
        t.check(classes.get("System.Delegate[]", {}).get("objects") == 1,
                f"{label}: expected one Delegate[] (the invocation list): {classes.get('System.Delegate[]')}")
    want = expected_retained(mode, classes)
    hs = ["--heapshot", str(index)]

    p = mlpd("--retained", "--json", *hs, path)
    t.check(p.returncode == 0 and p.stderr == "", f"{label}: --retained exit {p.returncode}, {p.stderr[:300]!r}")
    shots = json_lines(p, label)
    if not t.check(len(shots) == 1, f"{label}: --retained --json gave {len(shots)} objects"):
        return
    r = shots[0]
    t.check(set(r) == {"index", "time", "objects", "bytes", "unreached", "classes"}, f"{label}: keys {sorted(r)}")
    t.check(r["index"] == index, f"{label}: index {r['index']}, asked {index}")
    t.check(r["objects"] == sum(c["objects"] for c in classes.values()) and
            r["bytes"] == sum(c["bytes"] for c in classes.values()),
            f"{label}: totals {r['objects']}/{r['bytes']} differ from the listing's")
    top = r["classes"][0]
    t.check(top["name"] == holder, f"{label}: top class {top['name']}, expected {holder}: {r['classes'][:3]}")
    t.check(top["retained"] == want, f"{label}: {holder} retains {top['retained']}, the program gives {want}")
    t.check(set(top) == {"name", "objects", "shallow", "retained"}, f"{label}: class keys {sorted(top)}")
    for c in r["classes"]:
        t.check(c["retained"] <= r["bytes"] and c["shallow"] == classes[c["name"]]["bytes"] and
                c["objects"] == classes[c["name"]]["objects"], f"{label}: class row {c} disagrees with the listing")
    t.check([c["retained"] for c in r["classes"]] == sorted((c["retained"] for c in r["classes"]), reverse=True),
            f"{label}: classes not sorted by retained size")
    # The text agrees with the JSON.
    p = mlpd("--retained", "--top", "3", *hs, path)
    rows = [l.split() for l in p.stdout.splitlines()[2:5]]
    t.check(p.returncode == 0 and rows and rows[0] == [str(top["retained"]), str(top["objects"]),
                                                       str(top["shallow"]), holder],
            f"{label}: text --retained first row {rows[:1]}, JSON {top}")

    # Paths from the roots.
    p = mlpd("--paths", holder, "--max", "500", "--json", *hs, path)
    out = json_lines(p, label)
    if t.check(p.returncode == 0 and len(out) == 1 and out[0]["paths"], f"{label}: --paths gave {p.stdout[:300]!r}"):
        paths = out[0]["paths"]
        kinds = [x["root"]["kind"] for x in paths]
        # A finalizer that is running holds its object from the finalizer thread's stack.
        majority = sum(k == kind for k in kinds) >= len(kinds) - 1
        t.check(kinds[0] == kind if mode != "finalizer" else majority,
                f"{label}: paths start at {kinds[:5]}, expected {kind}")
        for x in paths:
            t.check(x["steps"][-1]["class"] == holder and x["steps"][0]["offset"] is None and
                    all(isinstance(s["offset"], int) for s in x["steps"][1:]), f"{label}: bad path {x}")
        t.check(paths[0]["retained"] <= want, f"{label}: path retained {paths[0]['retained']} > {want}")
        if mode == "cache":
            t.check([s["class"] for s in paths[0]["steps"]] == [LIST_CACHE], f"{label}: {paths[0]}")
            t.check(paths[0]["root"]["name"] == "Static Fields: RetentionProgram", f"{label}: root {paths[0]['root']}")
    p = mlpd("--paths", holder, "--max", "1", *hs, path)
    line = [l for l in p.stdout.splitlines() if l.startswith("  retained ")]
    t.check(line and re.match(rf"^  retained \d+: root {kind} .* -> {re.escape(holder)}$", line[0]),
            f"{label}: text path {line[:1]}")

    # The dominator tree's first subtree: the holder, held by that kind of root.
    p = mlpd("--dominators", "--json", *hs, path)
    out = json_lines(p, label)
    if t.check(p.returncode == 0 and len(out) == 1 and out[0]["subtrees"], f"{label}: --dominators {p.stdout[:300]!r}"):
        first = out[0]["subtrees"][0]
        # The finalizer running when the heapshot is taken holds one FinalObject (and its FinalData)
        # from its thread's stack; the queue holds the others.
        one = (classes["FinalObject"]["bytes"] + classes["FinalData"]["bytes"]) // 500 if mode == "finalizer" else 0
        t.check(first["class"] == holder and first["root"]["kind"] == kind and first["retained"] in (want, want - one),
                f"{label}: first subtree {dict((k, v) for k, v in first.items() if k != 'children')}, "
                f"expected {holder} held by {kind} retaining {want}")
    p = mlpd("--dominators", *hs, path)
    t.check(p.returncode == 0 and f"{kind} " in p.stdout and f"-> {holder}" in p.stdout,
            f"{label}: text --dominators:\n{p.stdout[:600]}")


def check_grow(label, path):
    p = mlpd("--diff", "0", "2", "--retained", "--json", path)
    out = json_lines(p, label)
    if not t.check(p.returncode == 0 and len(out) == 1, f"{label}: diff {p.returncode} {p.stderr[:300]}"):
        return
    d = out[0]
    names = [c["name"] for c in d["classes"]]
    # The cache's items grew; their holder is the list, even when a stale word on a stack (Mono scans
    # stacks conservatively) still points at an array the list outgrew, which holds the older items
    # too (seen with Mono 6.12's own profiler): that array's references are transient copies of the
    # list's (docs/reports.md, "Lasting and transient roots"). The cache comes first, never the
    # garbage or the event. By class, CacheItem[] may come first by the outgrown array's own bytes
    # (the stale word holds that array alone, 16 KiB: its items are the list's), with the list second.
    cache_first = (LIST_CACHE, "CacheItem[]")
    t.check(names[:1] and names[0] in cache_first and LIST_CACHE in names[:2],
            f"{label}: diff classes begin {names[:4]}")
    t.check("LeakHandler" in names[:8], f"{label}: LeakHandler not among the first growths {names[:8]}")
    # The Garbage made between the heapshots is gone (a stale stack word may keep one, 80 bytes).
    garbage = [c for c in d["classes"] if c["name"] == "Garbage"]
    t.check(not garbage or (garbage[0]["retained"] <= 160 and names.index("Garbage") >= 8),
            f"{label}: the dropped Garbage is a growth: {garbage}, order {names}")
    t.check(d["subtrees"] and d["subtrees"][0]["path"] == "static Static Fields: RetentionProgram > " + LIST_CACHE,
            f"{label}: diff subtrees {d['subtrees'][:2]}")
    growth = d["classes"][0]
    t.check(growth["retained"] == growth["to"] - growth["from"] >= 2 * 1000 * (32 + 64),
            f"{label}: cache growth {growth}")
    p = mlpd("--suspects", "--json", path)
    out = json_lines(p, label)
    if t.check(p.returncode == 0 and len(out) == 1 and out[0]["suspects"], f"{label}: suspects {p.stdout[:300]!r}"):
        s = out[0]["suspects"]
        t.check(s[0]["path"].endswith("> " + LIST_CACHE), f"{label}: first suspect {s[0]}")
        t.check(any(x["path"].endswith("> LeakHandler") for x in s), f"{label}: the event is no suspect: {s[:5]}")
        t.check(not any("Garbage" in x["path"] for x in s[:8]), f"{label}: Garbage among the first suspects")
    p = mlpd("--diff", "0", "2", "--retained", path)
    t.check(p.returncode == 0 and len(p.stdout.splitlines()) > 3 and
            any(c in p.stdout.splitlines()[3] for c in cache_first), f"{label}: text diff:\n{p.stdout[:500]}")


LIST_ITEM = "System.Collections.Generic.List<Item>"
STATIC_LEAK = "Static Fields: StaticLeakProgram"


def check_static_leak(label, path):
    """tests/programs/staticleak.cs: a static List<Item> that request threads touch (one holds its array in
    a local, a different thread each heapshot; another is in a foreach over it). In every heapshot with
    items the array is below the List, held by the static field (the stack slots are transient copies,
    docs/reports.md "Lasting and transient roots"); --paths Item[] starts at the static field; --suspects
    names the list first, not the timers' small growth."""
    p = mlpd("--json", path)
    shots = [s for s in json_lines(p, label)
             if any(c["name"] == "Item" and c["objects"] >= 2000 for c in s["classes"])]
    t.check(p.returncode == 0 and len(shots) >= 6, f"{label}: {len(shots)} heapshots with items, expected 6 or more")
    static_root = {"kind": "static", "name": STATIC_LEAK}
    for shot in shots:
        hs = ["--heapshot", str(shot["index"])]
        items = next(c for c in shot["classes"] if c["name"] == "Item")
        array_bytes = 32 + 8 * items["objects"]  # the array at least: a reference per item
        r = json_lines(mlpd("--dominators", "--depth", "2", "--min-bytes", "1", "--top", "1000", "--json", *hs, path),
                       label)
        subtrees = r[0]["subtrees"] if r else []
        lists = [x for x in subtrees if x["class"] == LIST_ITEM and x["root"] == static_root]
        t.check(len(lists) == 1 and any(c["class"] == "Item[]" and c["retained"] >= array_bytes
                                        for c in lists[0]["children"]),
                f"{label} heapshot {shot['index']}: the list's subtree {lists[:1]}")
        t.check(not any(x["class"] == "Item[]" and x["retained"] >= array_bytes for x in subtrees),
                f"{label} heapshot {shot['index']}: the array held apart: "
                f"{[(x['root'], x['retained']) for x in subtrees if x['class'] == 'Item[]']}")
        t.check(lists and lists[0]["retained"] >= array_bytes + items["bytes"],
                f"{label} heapshot {shot['index']}: the list retains {lists[0]['retained'] if lists else None}, "
                f"its items alone are {items['bytes']} bytes")
        r = json_lines(mlpd("--paths", "Item[]", "--max", "1", "--json", *hs, path), label)
        paths = r[0]["paths"] if r else []
        t.check(paths and paths[0]["root"] == static_root and
                [x["class"] for x in paths[0]["steps"]] == [LIST_ITEM, "Item[]"],
                f"{label} heapshot {shot['index']}: path to the array {paths[:1]}")
    last = ["--heapshot", str(shots[-1]["index"])] if shots else []
    p = mlpd("--paths", "Item[]", "--max", "1", *last, path)
    t.check(p.returncode == 0 and f'root static "{STATIC_LEAK}" -> {LIST_ITEM} -> Item[] (+' in p.stdout,
            f"{label}: text --paths:\n{p.stdout[:600]}")
    p = mlpd("--suspects", "--json", path)
    out = json_lines(p, label)
    if t.check(p.returncode == 0 and len(out) == 1 and out[0]["suspects"], f"{label}: suspects {p.stdout[:300]!r}"):
        first = out[0]["suspects"][0]
        t.check(first["path"] == f"static {STATIC_LEAK} > {LIST_ITEM}", f"{label}: first suspect {first}")
        t.check(first["growth"] >= 5 * 2000 * 8, f"{label}: the list's growth {first}")


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def check_export(work, path):
    found = pick_heapshot("export", path, LEAKS["cache"][2])
    if not found:
        return
    index = str(found[0])
    collapsed = os.path.join(work, "retained.collapsed")
    p = t.run([MLPD, "export", "--what", "retained", "--heapshot", index, "-o", collapsed, path])
    t.check(p.returncode == 0 and p.stderr == "", f"export collapsed: {p.returncode} {p.stderr[:300]}")
    lines = open(collapsed).read().splitlines()
    total = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
    r = json_lines(mlpd("--retained", "--json", "--heapshot", index, path), "export")[0]
    t.check(total == r["bytes"] - r["unreached"]["bytes"], f"collapsed total {total}, reached {r}")
    t.check(any(l.startswith('static "Static Fields: RetentionProgram";' + LIST_CACHE + ";CacheItem[]") for l in lines),
            f"no stack for the cache: {lines[:5]}")
    html = os.path.join(work, "retained.html")
    p = t.run([MLPD, "export", "--what=retained", "--heapshot", index, "-o", html, path])
    t.check(p.returncode == 0, f"export html: {p.returncode} {p.stderr[:300]}")
    profile_dir = tempfile.mkdtemp(prefix="mlpd-chromium-")
    dom = t.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile_dir}", "--virtual-time-budget=5000", "--window-size=1400,800",
                 "--dump-dom", "file://" + html + "#search=CacheItem"], timeout=120)
    shutil.rmtree(profile_dir, ignore_errors=True)
    frames = re.findall(r'<div class="f[^"]*"[^>]*>([^<]*)</div>', dom.stdout)
    t.check(dom.returncode == 0 and any("List&lt;CacheItem&gt;" in f or "List<CacheItem>" in f for f in frames),
            f"chromium: the holder is not on the page: exit {dom.returncode}, frames {frames[:10]}")
    t.check(any('Static Fields: RetentionProgram' in f for f in frames), f"chromium: no root frame: {frames[:10]}")
    m = re.search(r'<span id="matched">matched: ([^<]*)</span>', dom.stdout)
    t.check(m and "bytes" in m.group(1), f"search for CacheItem: {m.group(1) if m else None}")
    # pprof, read by the real tool: the total is the reached bytes, the cache's root and classes lead -cum.
    pb = os.path.join(work, "retained.pb.gz")
    p = t.run([MLPD, "export", "--what", "retained", "--heapshot", index, "-o", pb, path])
    t.check(p.returncode == 0, f"export pprof: {p.returncode} {p.stderr[:300]}")
    p = t.run(["go", "tool", "pprof", "-top", "-cum", "-unit=B", "-nodefraction=0", pb], timeout=120)
    m = re.search(r"accounting for (\d+)B, 100% of (\d+)B total", p.stdout)
    t.check(p.returncode == 0 and m and int(m.group(2)) == r["bytes"] - r["unreached"]["bytes"],
            f"go tool pprof: {p.returncode} {p.stdout[:400]!r} {p.stderr[-300:]!r}")
    t.check("Static Fields: RetentionProgram" in p.stdout and "CacheItem[]" in p.stdout, f"pprof -top: {p.stdout[:600]}")
    # Generic class names whole: a function with a system name is C++ to pprof, which cuts `<...>` out.
    t.check(LIST_CACHE in p.stdout, f"pprof -top: {LIST_CACHE} not whole: {p.stdout[:600]}")
    p = t.run([MLPD, "export", "--what", "retained", "-o", os.path.join(work, "x.json"), path])
    t.check(p.returncode == 2, f"export --what retained to .json: {p.returncode}")


def check_port_heapshot(work):
    """A heapshot asked for over the agent's command port, analysed while the program still runs."""
    out = os.path.join(work, "port.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"heapshot=ondemand,port=0,output={out}")
    err_path = os.path.join(work, "port.stderr")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([t.MONO, t.program("port_service"), "100000"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, env=env)
        try:
            ready = proc.stdout.readline().decode().strip()
            m = re.search(r"command port 127\.0\.0\.1:(\d+)", open(err_path).read())
            if not t.check(ready == "ready" and m, f"port: {ready!r}, stderr {open(err_path).read()!r}"):
                return
            p = t.run([MLPD, "heapshot", "--port", m.group(1)], timeout=60)
            t.check(p.returncode == 0 and p.stdout.startswith("OK heapshot"), f"port: mlpd heapshot {p.stdout!r}")
            holder = "System.Collections.Generic.List<PortLive>"
            found = pick_heapshot("port", out, {"PortLive": 100000, holder: 1})
            if found:
                index, classes = found
                want = classes[holder]["bytes"] + 32 + 8 * 131072 + classes["PortLive"]["bytes"]
                # Main's frame may still hold the list's array, or a stale word a PortLive (the stack is
                # scanned conservatively): transient copies of the static field's references, which
                # holds them all (docs/reports.md, "Lasting and transient roots").
                r = json_lines(mlpd("--retained", "--json", out), "port")
                top = r[0]["classes"][0] if r else {}
                t.check((top.get("name"), top.get("retained")) == (holder, want),
                        f"port: --retained first {r[0]['classes'][:2] if r else None}, expected {holder} {want}")
                p = mlpd("--paths", "PortLive", "--max", "100", "--json", out)
                paths = json_lines(p, "port")
                shapes = {(x["root"]["kind"], tuple(s["class"] for s in x["steps"])) for x in paths[0]["paths"]} if paths else set()
                t.check(shapes == {("static", (holder, "PortLive[]", "PortLive"))}, f"port: --paths shapes {sorted(shapes)[:5]}")
        finally:
            proc.stdin.write(b"exit 0\n")
            proc.stdin.close()
            proc.stdout.read()
            t.check(proc.wait(timeout=60) == 0, "port: the program's exit status")


def main():
    work = tempfile.mkdtemp(prefix="mlpd_retained_")
    files = {}
    for mode in list(LEAKS) + ["grow"]:
        out = os.path.join(work, f"mono_{mode}.mlpd")
        p = t.mono_log_profile("retention", "heapshot", out, extra_env={"MONO_GC_PARAMS": "nursery-size=64m"},
                               args=[mode])
        t.check(p.returncode == 0, f"mono {mode}: exit {p.returncode}: {p.stderr[:300]}")
        files[f"mono {mode}"] = (out, mode)
        out = os.path.join(work, f"agent_{mode}.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"heapshot,output={out}",
                   MONO_GC_PARAMS="nursery-size=64m")
        p = t.run([t.MONO, t.program("retention"), mode], env=env, timeout=120)
        t.check(p.returncode == 0, f"agent {mode}: exit {p.returncode}: {p.stderr[:300]}")
        files[f"agent {mode}"] = (out, mode)
    for mode in ("event", "cache"):
        out = os.path.join(work, f"shutdown_{mode}.mlpd")
        p = t.mono_log_profile("retention", "heapshot-on-shutdown", out, args=[mode])
        t.check(p.returncode == 0, f"mono shutdown {mode}: exit {p.returncode}")
        files[f"mono heapshot-on-shutdown {mode}"] = (out, mode)

    for label, (path, mode) in files.items():
        if mode == "grow":
            check_grow(label, path)
        else:
            check_leak(label, path, mode)

    # Two files: heapshot 0 of Mono's grow run against heapshot 2 of the agent's.
    p = mlpd("--diff", "0", "2", "--retained", "--json", files["mono grow"][0], files["agent grow"][0])
    out = json_lines(p, "two files")
    t.check(p.returncode == 0 and out and out[0]["classes"][0]["name"] in ("CacheItem", "CacheItem[]", LIST_CACHE),
            f"two files: {p.returncode} {p.stdout[:300]!r} {p.stderr[:300]!r}")

    check_port_heapshot(work)

    # A static leak touched by request threads, under Mono's profiler and under the agent.
    out = os.path.join(work, "mono_staticleak.mlpd")
    p = t.mono_log_profile("staticleak", "heapshot", out)
    t.check(p.returncode == 0 and p.stdout.startswith("items 12000 "), f"mono staticleak: {p.returncode} {p.stderr[:300]}")
    check_static_leak("mono staticleak", out)
    out = os.path.join(work, "agent_staticleak.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"heapshot,output={out}")
    p = t.run([t.MONO, t.program("staticleak")], env=env, timeout=120)
    t.check(p.returncode == 0 and p.stdout.startswith("items 12000 "), f"agent staticleak: {p.returncode} {p.stderr[:300]}")
    check_static_leak("agent staticleak", out)

    # The flame graph: collapsed stacks add up to the reached bytes; the page shows the holder.
    check_export(work, files["mono cache"][0])

    # The report's "Held by" section: the last heapshot, the cache first, held by a static field.
    p = t.run([MLPD, "report", files["mono heapshot-on-shutdown cache"][0]])
    held = p.stdout.split("== Held by: heapshot ", 1)
    rows = held[1].splitlines()[2:] if len(held) == 2 else []
    t.check(p.returncode == 0 and rows and re.match(
        rf"^ +\d+ +1  {re.escape(LIST_CACHE)}  <- static \"Static Fields: RetentionProgram\"$", rows[0]),
        f"report: held by section {held[1][:400] if len(held) == 2 else p.stdout[-400:]!r}")

    # The same section in `report --json` ("held_by"): the text's rows, and the classes of
    # `heapshots --retained --json` of that heapshot (the first ones, with something retained).
    shutdown = files["mono heapshot-on-shutdown cache"][0]
    for top in ("10", "3"):
        text = t.run([MLPD, "report", "--top", top, shutdown])
        p = t.run([MLPD, "report", "--json", "--top", top, shutdown])
        try:
            held_by = json.loads(p.stdout).get("held_by")
        except ValueError:
            held_by = None
        t.check(p.returncode == 0 and isinstance(held_by, dict) and held_by.get("classes"),
                f"report --json --top {top}: no held_by: {p.returncode} {p.stdout[-400:]!r}")
        if not isinstance(held_by, dict) or not held_by.get("classes"):
            continue
        section = text.stdout.split("== Held by: heapshot ", 1)[1]
        lines = section.splitlines()
        t.check(lines[0].startswith(f"{held_by['index']}, the last "), f"top {top}: index {held_by['index']} {lines[0]!r}")
        rows = [line for line in lines[2:] if not line.startswith("  (unreached")]
        as_text = []
        for c in held_by["classes"]:
            row = f"  {c['retained']:>12} {c['objects']:>10}  {c['name']}"
            if c["root"] is not None:
                row += f"  <- {c['root']['kind']}" + (f" \"{c['root']['name']}\"" if c["root"]["name"] else "")
            as_text.append(row)
        t.check(rows == as_text, f"top {top}: text rows {rows!r} != JSON rows {as_text!r}")
        t.check(held_by["classes"][0]["name"] == LIST_CACHE and held_by["classes"][0]["root"] ==
                {"kind": "static", "name": "Static Fields: RetentionProgram"}, f"top {top}: {held_by['classes'][0]!r}")
        r = mlpd("--retained", "--json", "--heapshot", str(held_by["index"]), shutdown)
        shot = json_lines(r, "retained json")
        t.check(r.returncode == 0 and len(shot) == 1, f"--retained --json: {r.returncode} {r.stdout[:200]!r}")
        if len(shot) == 1:
            want = [c for c in shot[0]["classes"] if c["retained"] > 0][: int(top)]
            got = [{k: c[k] for k in ("name", "objects", "shallow", "retained")} for c in held_by["classes"]]
            t.check(got == want, f"top {top}: held_by {got!r} != --retained {want!r}")
            for k in ("objects", "bytes", "unreached"):
                t.check(held_by[k] == shot[0][k], f"top {top}: held_by.{k} {held_by[k]!r} != {shot[0][k]!r}")

    # Errors.
    cache = files["mono cache"][0]
    p = mlpd("--retained", "--heapshot", "99", cache)
    t.check(p.returncode == 2 and "no heapshot 99" in p.stderr and len(p.stderr.splitlines()) == 1,
            f"index out of range: {p.returncode} {p.stderr!r}")
    for bad in (["--paths"], ["--retained", "--dominators"], ["--max", "3", "--retained"],
                ["--retained", "--heapshot", "x"], ["--suspects", "--heapshot", "1"], ["--depth", "0", "--dominators"]):
        p = mlpd(*bad, cache)
        t.check(p.returncode == 2 and len(p.stderr.splitlines()) == 1, f"usage {bad}: {p.returncode} {p.stderr!r}")
    plain = os.path.join(work, "plain.mlpd")
    t.mono_log_profile("retention", "", plain, args=["event"])
    p = mlpd("--retained", plain)
    t.check(p.returncode == 0 and p.stdout == f"{plain}: no heapshots\n", f"no heapshots: {p.returncode} {p.stdout!r}")
    data = open(cache, "rb").read()
    cut = os.path.join(work, "cut.mlpd")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    for view in (["--retained"], ["--dominators"], ["--paths", "CacheItem"]):
        p = mlpd(*view, cut)
        t.check(p.returncode == 1 and re.search(r": offset \d+ \(buffer \d+\): ", p.stderr),
                f"truncated {view}: {p.returncode} {p.stderr[:300]!r}")
    p = mlpd("--retained", "--json", "-", input_bytes=data)
    t.check(p.returncode == 0 and json_lines(p, "stdin"), f"stdin: {p.returncode} {p.stderr[:200]}")
    p = t.run([MLPD, "heapshots", "--max-memory=1M", "--retained", cache])
    t.check(p.returncode == 1 and "memory budget" in p.stderr, f"1M budget: {p.returncode} {p.stderr[:300]!r}")
    t.finish("cli_retained")


if __name__ == "__main__":
    main()
