#!/usr/bin/env python3
"""Heapshots on .NET (issue 36 item 2; docs/dotnet.md "Heapshots"): `DotnetPrograms heap N` keeps known
objects alive (N HeapA held by a static array, N HeapB in a cycle held only by a strong GC handle, N
HeapC held by an array in a local of Run, 3 HeapF kept only by the finalizer queue behind a blocked
finalizer thread) and waits; a heapshot is asked for on the command port (`heapshot=ondemand`).

Checks: the program's output and exit code unchanged; `mlpd heapshots --json`: exactly N objects and
N x (the program's own measure of bytes per object) bytes of each of the three types, 3 HeapF; the
root kinds (gc_handle for the cycle, finalizer_queue for HeapF, stack for the HeapC array); the file
passes `mlpd verify --strict` and Mono's mprof-report reads it (its heap summary names every class, with
mlpd's counts); and
`--retained`, `--dominators` and `--paths` equal what this test computes from `mlpd dump --json`'s heap
events by itself (its own dominator tree and breadth-first search, with the lasting/transient root rule
of docs/reports.md), independent of the reader. Also: a heapshot asked for without a heapshot option is
refused in one line; `heapshot=NUMgc` takes heapshots at the program's collections.

With `--pause` (the figure in docs/dotnet.md, not a pass/fail check beyond sanity): the longest stall a
ticking thread of the program sees while mlpd takes a heapshot against the one while `dotnet-gcdump
collect` takes its dump of the same heap, and the object counts of `dotnet-gcdump report` against
mlpd's (scripts/install-deps.sh installs dotnet-gcdump into /opt/dotnet-tools when it can)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

from dotnettest import (AGENT, CLSID, DLL, DOTNET, check_file, env_with, mlpd_lines, mprof_heap_classes,  # noqa: E402
                        require_programs)

N = int(os.environ.get("MLPD_HEAP_N", "1000"))  # objects of each type (the pause figures use more)
TYPES = ("MlpdTests.HeapA", "MlpdTests.HeapB", "MlpdTests.HeapC")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Program:
    """`DotnetPrograms heap N FILLER` with `options` (None: no agent), driven over its stdin."""

    def __init__(self, options, filler=0):
        env = env_with() if options is None else env_with(CORECLR_ENABLE_PROFILING="1", CORECLR_PROFILER=CLSID,
                                                          CORECLR_PROFILER_PATH=AGENT, MLPD_OPTIONS=options)
        self.p = subprocess.Popen([DOTNET, DLL, "heap", str(N), str(filler)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.sizes = {}
        self.pid = 0
        while True:
            line = self.p.stdout.readline()
            if not line:
                t.check(False, f"the program ended before 'ready': {self.p.stderr.read()[-500:]}")
            w = line.split()
            if w[0] == "size":
                self.sizes[w[1]] = int(w[2])
            if w[0] == "ready":
                self.pid = int(w[1])
                break

    def gap_us(self):
        self.p.stdin.write("gap\n")
        self.p.stdin.flush()
        w = self.p.stdout.readline().split()
        t.check(w and w[0] == "gap_us", f"no gap line: {w}")
        return int(w[1])

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        out, err = self.p.communicate(timeout=120)
        return self.p.returncode, out, err


def heapshot(port):
    r = t.run([t.MLPD, "heapshot", "--port", str(port)], timeout=60)
    return r.stdout.strip()


def heapshots_json(path):
    r = t.run([t.MLPD, "heapshots", "--json", path])
    t.check(r.returncode == 0, f"mlpd heapshots failed: {r.stderr[-300:]}")
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


# ---- the independent computation: the graph of the last heapshot from `mlpd dump --json`

def graph_from_dump(path):
    """(objects {addr: (class, size)}, refs {addr: [addr]}, roots [(kind, addr)]) of the file's last
    heapshot: the heap events of the thread that wrote its heap_start, up to its heap_end."""
    r = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    t.check(r.returncode == 0, f"mlpd dump failed: {r.stderr[-300:]}")
    ranges = []  # (start, end, source)
    shots = []
    cur = {}
    for line in r.stdout.splitlines():
        e = json.loads(line)
        k = e.get("kind")
        if k == "heap_root_register":
            ranges.append((int(e["start"], 16), int(e["start"], 16) + e["size"], e["source"]))
        elif k == "heap_start":
            cur[e["thread"]] = {"objects": {}, "refs": {}, "roots": [], "last": None}
        elif k == "heap_end" and e["thread"] in cur:
            shots.append(cur.pop(e["thread"]))
        elif k == "heap_object" and e["thread"] in cur:
            s = cur[e["thread"]]
            a = int(e["obj"], 16)
            if e["size"]:
                s["objects"][a] = (e["class_name"], e["size"])
                s["refs"][a] = []
            s["refs"].setdefault(a, []).extend(int(x["obj"], 16) for x in e["refs"])
        elif k == "heap_root" and e["thread"] in cur:
            for x in e["roots"]:
                cur[e["thread"]]["roots"].append((int(x["address"], 16), int(x["obj"], 16)))
    t.check(shots, "no complete heapshot in the dump")
    s = shots[-1]

    def kind(slot):
        if slot in (1, 2):
            return "finalizer_queue"
        for a, b, src in ranges:
            if a <= slot < b:
                return src
        return "unknown"

    roots = [(kind(slot), obj) for slot, obj in s["roots"] if obj in s["objects"]]
    refs = {a: [b for b in v if b in s["objects"]] for a, v in s["refs"].items()}
    return s["objects"], refs, roots


def dominators(objects, refs, roots):
    """Retained size per object, the immediate dominator, and the virtual root's successors, by the
    rule of docs/reports.md: objects a lasting (non-stack) root reaches are held by lasting roots only;
    a stack root to such an object, and a reference to one from an object only stack roots reach,
    do not count."""
    lasting = set()
    todo = [o for k, o in roots if k != "stack"]
    while todo:
        o = todo.pop()
        if o in lasting:
            continue
        lasting.add(o)
        todo.extend(refs.get(o, []))
    ROOT = -1
    succ = {ROOT: []}
    for k, o in roots:
        if k != "stack" or o not in lasting:
            succ[ROOT].append(o)
    for a, v in refs.items():
        succ[a] = v if a in lasting else [b for b in v if b not in lasting]
    # reverse postorder from the virtual root (iterative DFS)
    order, seen, stack = [], {ROOT}, [(ROOT, iter(succ[ROOT]))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(node)
            stack.pop()
        elif nxt not in seen:
            seen.add(nxt)
            stack.append((nxt, iter(succ.get(nxt, []))))
    rpo = order[::-1]
    index = {n: i for i, n in enumerate(rpo)}
    preds = {n: [] for n in rpo}
    for n in rpo:
        for m in succ.get(n, []):
            if m in index:
                preds[m].append(n)
    idom = {ROOT: ROOT}
    changed = True
    while changed:  # Cooper, Harvey and Kennedy's iteration
        changed = False
        for n in rpo[1:]:
            new = None
            for p in preds[n]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                a, b = p, new
                while a != b:
                    while index[a] > index[b]:
                        a = idom[a]
                    while index[b] > index[a]:
                        b = idom[b]
                new = a
            if idom.get(n) != new:
                idom[n] = new
                changed = True
    retained = {n: objects[n][1] for n in rpo if n != ROOT}
    for n in reversed(rpo[1:]):
        if idom[n] != ROOT:
            retained[idom[n]] += retained[n]
    return retained, idom, succ, seen


def class_retained(objects, retained, idom):
    """Per class: the retained bytes of its instances with no instance of the class above them."""
    out = {}
    for n, r in retained.items():
        c = objects[n][0]
        a, top = idom[n], True
        while a != -1:
            if objects[a][0] == c:
                top = False
                break
            a = idom[a]
        if top:
            out[c] = out.get(c, 0) + r
    return out


def shortest_paths(objects, succ, roots, target_class):
    """Breadth-first from the roots (the virtual root's successors): path length (objects) and root kind
    of every instance of `target_class` reached."""
    kind_of = {}
    for k, o in roots:
        kind_of.setdefault(o, set()).add(k)
    dist, first = {}, {}
    frontier = []
    for o in succ[-1]:
        if o not in dist:
            dist[o] = 1
            ks = kind_of.get(o, set())
            first[o] = next(iter(ks)) if len(ks) == 1 else "several"
            frontier.append(o)
    while frontier:
        nxt = []
        for o in frontier:
            for m in succ.get(o, []):
                if m not in dist:
                    dist[m] = dist[o] + 1
                    first[m] = first[o]
                    nxt.append(m)
        frontier = nxt
    return {o: (dist[o], first[o]) for o in dist if objects[o][0] == target_class}


def check_views(path, label):
    objects, refs, roots = graph_from_dump(path)
    retained, idom, succ, reached = dominators(objects, refs, roots)
    mine = class_retained(objects, retained, idom)
    r = t.run([t.MLPD, "heapshots", "--retained", "--json", path])
    t.check(r.returncode == 0, f"{label}: --retained failed: {r.stderr[-300:]}")
    theirs = json.loads(r.stdout.splitlines()[0])
    byname = {c["name"]: c for c in theirs["classes"]}
    unreached = [o for o in objects if o not in reached]
    # Every object the walk lists survived the collection: some root reaches it (frozen objects are
    # their own roots).
    t.check(not unreached, f"{label}: {len(unreached)} objects no root reaches: "
            f"{sorted(set(objects[o][0] for o in unreached))[:8]}")
    t.check(theirs["unreached"]["objects"] == len(unreached),
            f"{label}: unreached {theirs['unreached']} against {len(unreached)} computed")
    t.check(theirs["unreached"]["bytes"] == sum(objects[o][1] for o in unreached),
            f"{label}: unreached bytes {theirs['unreached']['bytes']} against the computed ones")
    differ = [(c, mine.get(c), byname[c]["retained"]) for c in byname if mine.get(c, 0) != byname[c]["retained"]]
    t.check(not differ, f"{label}: --retained differs from the independent dominator tree: {differ[:5]}")
    for c in TYPES + ("MlpdTests.HeapF",):
        t.check(c in byname, f"{label}: {c} not in --retained")
    # The cycle: one HeapB dominates all N (the one the handle holds).
    t.check(byname["MlpdTests.HeapB"]["retained"] == N * objects[next(o for o in objects if objects[o][0] == "MlpdTests.HeapB")][1],
            f"{label}: HeapB's retained {byname['MlpdTests.HeapB']['retained']}")
    # --dominators: each top-level subtree's retained bytes and root kind, against the virtual root's
    # dominated children folded by (root kind, class).
    r = t.run([t.MLPD, "heapshots", "--dominators", "--json", "--min-bytes", "1", "--top", "100000", "--depth", "1", path])
    t.check(r.returncode == 0, f"{label}: --dominators failed: {r.stderr[-300:]}")
    dom = json.loads(r.stdout.splitlines()[0])
    kind_of = {}
    for k, o in roots:
        kind_of.setdefault(o, set()).add(k)
    folded = {}
    for n, d in idom.items():
        if d == -1 and n != -1:
            ks = kind_of.get(n, set())
            k = next(iter(ks)) if len(ks) == 1 else ("several" if ks else "unknown")
            key = (k, objects[n][0])
            folded[key] = folded.get(key, 0) + retained[n]
    theirs_dom = {}
    for s in dom["subtrees"]:
        key = (s["root"]["kind"], s["class"])
        theirs_dom[key] = theirs_dom.get(key, 0) + s["retained"]
    for key in (("gc_handle", "MlpdTests.HeapB"), ("finalizer_queue", "MlpdTests.HeapF"), ("stack", "MlpdTests.HeapC[]")):
        t.check(key in theirs_dom and theirs_dom[key] == folded.get(key),
                f"{label}: --dominators {key}: {theirs_dom.get(key)} against {folded.get(key)} computed")
    # --paths: for each type, the instances' shortest path lengths and root kinds.
    for c, want_kind in (("MlpdTests.HeapB", "gc_handle"), ("MlpdTests.HeapF", "finalizer_queue"),
                         ("MlpdTests.HeapC", "stack")):
        r = t.run([t.MLPD, "heapshots", "--paths", c, "--max", "5", "--json", path])
        t.check(r.returncode == 0, f"{label}: --paths {c} failed: {r.stderr[-300:]}")
        paths = json.loads(r.stdout.splitlines()[0])["paths"]
        bfs = shortest_paths(objects, succ, roots, c)
        t.check(len(paths) == min(5, len(bfs)), f"{label}: --paths {c}: {len(paths)} paths for {len(bfs)} instances")
        by_retained = sorted(bfs, key=lambda o: -retained[o])[:5]
        want = sorted((retained[o], bfs[o][0], bfs[o][1]) for o in by_retained)
        got = sorted((p["retained"], p["length"], p["root"]["kind"]) for p in paths)
        t.check([g[0] for g in got] == [w[0] for w in want], f"{label}: --paths {c} retained {got} against {want}")
        t.check(all(g[2] == want_kind for g in got), f"{label}: --paths {c}: root kinds {got}")
        lengths = {}
        for o in bfs:
            lengths.setdefault(retained[o], set()).add(bfs[o][0])
        t.check(all(g[1] in lengths[g[0]] for g in got), f"{label}: --paths {c}: lengths {got} against BFS {want}")
    return objects


def main():
    require_programs("dotnet_heapshot")
    if "--gcdump" in sys.argv:  # dotnet_heapshot_gcdump: only the comparison with dotnet-gcdump
        if not gcdump_tool():
            print("dotnet_heapshot: no dotnet-gcdump (scripts/install-deps.sh installs it into tests/tools/dotnet): skipped")
            sys.exit(77)
        os.environ.setdefault("MLPD_PAUSE_ROUNDS", "1")
        os.environ.setdefault("MLPD_PAUSE_FILLER_MB", "0,64")
        with tempfile.TemporaryDirectory() as d:
            pause(None, d)
        t.finish("dotnet_heapshot_gcdump")
    with tempfile.TemporaryDirectory() as d:
        plain = Program(None)
        rc0, out0, _ = plain.quit()
        t.check(rc0 == 7, f"plain run: exit {rc0}")

        # 1. On demand, through the command port.
        out = os.path.join(d, "ondemand.mlpd")
        port = free_port()
        prog = Program(f"heapshot=ondemand,port={port},output={out}")
        prog.gap_us()
        answer = heapshot(port)
        gap = prog.gap_us()
        rc, stdout, stderr = prog.quit()
        t.check(answer == "OK heapshot 1", f"the port answered {answer!r}")
        t.check(rc == 7 and stdout == out0, f"exit {rc} or output changed: {stdout!r} against {out0!r}")
        t.check(all(l.startswith("mlpd: command port ") for l in mlpd_lines(stderr)), f"agent lines: {mlpd_lines(stderr)}")
        shots = heapshots_json(out)
        if not shots:
            t.check(False, "no heapshot in the file")
            t.finish("dotnet_heapshot")
        t.check(len(shots) == 1 and shots[0]["complete"], f"heapshots: {[(s['index'], s['complete']) for s in shots]}")
        classes = {c["name"]: c for c in shots[0]["classes"]}
        for c in TYPES:
            t.check(c in classes and classes[c]["objects"] == N and classes[c]["bytes"] == N * prog.sizes[c],
                    f"{c}: {classes.get(c)} against {N} objects of {prog.sizes[c]} bytes")
        t.check(classes.get("MlpdTests.HeapF", {}).get("objects") == 3, f"HeapF: {classes.get('MlpdTests.HeapF')}")
        totals, report = check_file("ondemand", out)
        # Mono's mprof-report: its heapshot summary has the heapshot's object count and names the types.
        r = t.run([t.MPROF_REPORT, "--reports=heapshot", out], timeout=300)
        t.check(r.returncode == 0 and f"object count: {shots[0]['objects']}," in r.stdout,
                f"mprof-report's heapshot summary: {r.stdout[:600]}")
        # ... and names every class, each with mlpd's counts: a buffer's base above 2^56 (the roots' made-up
        # slot addresses once were) is misread by mprof-report, and then 117-210 of the 1000 HeapB showed
        # as "unresolved class (nil)".
        problems, theirs = mprof_heap_classes(out, shots[0])
        t.check(not problems, f"mprof-report's heapshot summary: {problems}")
        for c in TYPES:
            t.check(theirs.get(c, (0, 0))[0] == N, f"mprof-report: {c}: {theirs.get(c)}")
        check_views(out, "ondemand")
        print(f"dotnet_heapshot: {N} of each type, retention views equal the independent computation; "
              f"longest stall while mlpd took the heapshot {gap} us")

        # 2. Without a heapshot option: refused in one line on the port.
        out2 = os.path.join(d, "portonly.mlpd")
        port = free_port()
        prog = Program(f"port={port},output={out2}")
        answer = heapshot(port)
        rc, stdout, _ = prog.quit()
        t.check(answer.startswith("ERR heapshot: on .NET heapshots need a heapshot option at start"),
                f"port-only answered {answer!r}")
        t.check(rc == 7 and stdout == out0, f"port-only: exit {rc}")

        # 3. heapshot=1gc: the program's full collections each bring one.
        out3 = os.path.join(d, "gc.mlpd")
        prog = Program(f"heapshot=1gc,output={out3}")
        rc, stdout, _ = prog.quit()
        t.check(rc == 7 and stdout == out0, f"1gc: exit {rc}")
        shots = heapshots_json(out3)
        t.check(len(shots) >= 1 and all(s["complete"] for s in shots), f"1gc: {len(shots)} heapshots")
        check_file("1gc", out3)
        problems, _ = mprof_heap_classes(out3, shots[-1])
        t.check(not problems, f"1gc: mprof-report's heapshot summary: {problems}")

        if "--pause" in sys.argv:
            pause(out0, d)
    t.finish("dotnet_heapshot")


def gcdump_tool():
    for c in (os.path.join(os.environ.get("MLPD_SOURCE", ""), "tests", "tools", "dotnet", "dotnet-gcdump"),
              shutil.which("dotnet-gcdump") or ""):
        if c and os.path.exists(c):
            return c
    return None


def gcdump_counts(tool, dump):
    """(objects, bytes, {type: objects}) of `dotnet-gcdump report`'s heap statistics."""
    rep = t.run([tool, "report", dump], timeout=300)
    total_objects = total_bytes = None
    types = {}
    for line in rep.stdout.splitlines():
        w = line.split()
        if len(w) >= 4 and w[1:] == ["GC", "Heap", "objects"]:
            total_objects = int(w[0].replace(",", ""))
        elif len(w) >= 4 and w[1:] == ["GC", "Heap", "bytes"]:
            total_bytes = int(w[0].replace(",", ""))
        elif len(w) >= 3 and w[0].replace(",", "").isdigit() and w[1].replace(",", "").isdigit():
            name = w[2]
            types[name] = types.get(name, 0) + int(w[1].replace(",", ""))
    return total_objects, total_bytes, types


def pause(out0, d):
    """mlpd's heapshot against dotnet-gcdump's dump of the same heap (the same program and filler):
    the longest stall the program's ticking thread saw while each was taken, and the object counts.
    Rounds alternate; prints one line per run and the medians."""
    tool = gcdump_tool()
    if not tool:
        print("dotnet_heapshot: no dotnet-gcdump (scripts/install-deps.sh installs it): the pause comparison is skipped")
        return
    rounds = int(os.environ.get("MLPD_PAUSE_ROUNDS", "3"))
    for filler in [int(x) for x in os.environ.get("MLPD_PAUSE_FILLER_MB", "0,200").split(",")]:
        ours, theirs = [], []
        for _ in range(rounds):
            out = os.path.join(d, f"pause{filler}.mlpd")
            port = free_port()
            prog = Program(f"heapshot=ondemand,port={port},output={out}", filler)
            prog.gap_us()
            answer = heapshot(port)
            ours.append(prog.gap_us())
            prog.quit()
            shot = heapshots_json(out)[-1]
            plain = Program(None, filler)
            plain.gap_us()
            dump = os.path.join(d, f"pause{filler}.gcdump")
            r = t.run([tool, "collect", "-p", str(plain.pid), "-o", dump], timeout=300)
            theirs.append(plain.gap_us())
            plain.quit()
            objects, nbytes, types = gcdump_counts(tool, dump) if os.path.exists(dump) else (None, None, {})
            mine = {c["name"]: c["objects"] for c in shot["classes"]}
            # The same heap in both: the program's types counted alike; the totals apart only by what
            # dotnet-gcdump's own EventPipe session keeps in the process (about 80 objects).
            t.check(r.returncode == 0 and objects is not None, f"dotnet-gcdump collect/report failed: {r.stderr[-300:]}")
            for ours_name, theirs_name in (("MlpdTests.HeapA", "MlpdTests.HeapA"), ("MlpdTests.HeapB", "MlpdTests.HeapB"),
                                           ("MlpdTests.HeapC", "MlpdTests.HeapC"), ("byte[]", "System.Byte[]")):
                t.check(mine.get(ours_name) == types.get(theirs_name),
                        f"{ours_name}: mlpd {mine.get(ours_name)}, dotnet-gcdump {types.get(theirs_name)}")
            t.check(objects is not None and abs(objects - shot["objects"]) <= 200,
                    f"objects: mlpd {shot['objects']}, dotnet-gcdump {objects}")
            print(f"pause filler={filler}MB: mlpd {answer!r} stall {ours[-1]} us, {shot['objects']} objects "
                  f"{shot['bytes']} bytes (HeapB {mine.get('MlpdTests.HeapB')}, byte[] {mine.get('byte[]')}); "
                  f"dotnet-gcdump (rc {r.returncode}) stall {theirs[-1]} us, {objects} objects {nbytes} bytes "
                  f"(HeapB {types.get('MlpdTests.HeapB')}, byte[] {types.get('System.Byte[]')})", flush=True)
        ours.sort()
        theirs.sort()
        print(f"pause filler={filler}MB: median stall mlpd {ours[len(ours) // 2]} us, "
              f"dotnet-gcdump {theirs[len(theirs) // 2]} us", flush=True)


if __name__ == "__main__":
    main()
