#!/usr/bin/env python3
"""Files that are complete on their own (docs/design.md): `zip` that survives a kill (one gzip member
per flush round), and rotation (rotate=, rotate-size=, rotate-keep=), each file readable alone.

The issue's service test runs ~20 s with rotate=5s; here it is shortened to rotate=2s over ~8 s to keep
CI fast (same mechanism, more rotations per second)."""
import glob
import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def start(options, seconds, extra_env=None):
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=options)
    env.update(extra_env or {})
    proc = subprocess.Popen([t.MONO, t.program("service"), str(seconds)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    ready = proc.stdout.readline().strip()
    t.check(ready == "ready", f"{options}: program said {ready!r}")
    return proc


def strict_ok(path, what, allow_truncation=False):
    rc, obj, p = t.verify_json(path, strict=True)
    ok = t.check(rc == 0 and obj and obj["ok"], f"{what}: verify --strict {path}: rc {rc}: {p.stdout[-400:]}")
    if obj and not allow_truncation:
        t.check(not obj.get("warnings"), f"{what}: {path}: unexpected warnings {obj.get('warnings')}")
    return obj if ok else None


def mprof_clean(path, what):
    p = t.run([t.MPROF_REPORT, path], timeout=300)
    t.check(p.returncode == 0, f"{what}: mprof-report {path} exit {p.returncode}: {p.stderr[-300:]}")
    t.check("unresolved" not in p.stdout, f"{what}: mprof-report {path} has unresolved names")
    return p


def events(obj, kind):
    return obj["counts"].get(kind, 0) if obj else 0


def zip_kill(workdir):
    """kill -9 (and SIGTERM) of a zipped run: the file reads up to its last flush round.

    Limitation (noted on the hardening issue): the gzip sink holds a round's members until the round's
    flush only up to 4 MiB of members (~30 MiB of input at level 1; 4 MiB while a round is stored
    because the helper is behind); a larger round is written through mid-round, and a kill inside it
    leaves a complete gzip stream whose last mlpd buffer is cut ("truncated buffer data", exit 1). With
    8 MiB this was seen under the parallel test run; rounds here are about 5 MiB.

    Also with every full buffer compressed by its own thread (MLPD_ZIP_PACK_ABOVE=0: rounds made of
    the threads' members, docs/design.md "zip"), killed the same way."""
    variants = [(signal.SIGKILL, {}), (signal.SIGTERM, {}), (signal.SIGKILL, {"MLPD_ZIP_PACK_ABOVE": "0"})]
    for sig, extra_env in variants:
        how = sig.name + (" (threads' members)" if extra_env else "")
        out = os.path.join(workdir, f"killed-{sig.name}{'-packed' if extra_env else ''}.mlpd.gz")
        proc = start(f"nodefaults,sample,alloc,zip,flush=200,output={out}", 30, extra_env)
        time.sleep(3)
        proc.send_signal(sig)
        proc.wait()
        raw = open(out, "rb").read()
        t.check(raw[:2] == b"\x1f\x8b", f"{how}: not gzip")
        obj = strict_ok(out, f"zip + {how}", allow_truncation=True)
        allocs = events(obj, "alloc")
        t.check(allocs > 1000, f"{how}: only {allocs} allocations read from the killed zipped run")
        # The members before the cut are a complete gzip file (Python's gzip stops at a cut member).
        d = zlib_members(raw)
        t.check(len(d) > 1000, f"{how}: complete members hold only {len(d)} bytes")
        print(f"ok  zip + {how}: {len(raw)} compressed bytes, {allocs} allocations read, "
              f"{len(obj.get('warnings', []))} truncation warning(s)", flush=True)
        # A kill in the middle of writing a member (forced: the file cut 1000 bytes before its end): the
        # reader keeps everything before the cut, warns once with the offsets, exit status 0.
        cut = out + ".cut.gz"
        with open(cut, "wb") as f:
            f.write(raw[:len(raw) - 1000])
        rc, cobj, p = t.verify_json(cut, strict=True)
        warnings = cobj.get("warnings", []) if cobj else []
        t.check(rc == 0 and cobj and cobj["ok"] and len(warnings) == 1 and "truncated" in warnings[0]["message"]
                and "gzip member" in warnings[0]["message"], f"{how}: cut file: rc {rc}: {p.stdout[-500:]}")
        t.check(events(cobj, "alloc") > allocs // 2, f"{how}: cut file kept only {events(cobj, 'alloc')} allocations")
        text = t.run([t.MLPD, "verify", cut])
        t.check(text.returncode == 0 and "warning: offset" in text.stdout, f"{how}: verify text: {text.stdout[-300:]}")


def zlib_members(raw):
    """The bytes of the complete gzip members at the start of raw (a cut last member is not counted).
    Fed in 64 KiB pieces so that thousands of small members (zip with the threads' members) stay linear."""
    import zlib
    view = memoryview(raw)
    out = []
    pos = 0
    while pos < len(raw):
        d = zlib.decompressobj(16 + 15)
        parts = []
        fed = pos
        try:
            while not d.eof and fed < len(raw):
                piece = view[fed:fed + 65536]
                fed += len(piece)
                parts.append(d.decompress(piece))
        except zlib.error:
            break
        if not d.eof:
            break  # a cut member: what it held is not counted
        out.extend(parts)
        pos = fed - len(d.unused_data)
    return b"".join(out)


def rotation(workdir):
    sub = os.path.join(workdir, "rot")
    os.mkdir(sub)
    pattern = os.path.join(sub, "svc-%n.mlpd")
    proc = start(f"nodefaults,sample,alloc,rotate=2s,rotate-keep=3,output={pattern}", 8)
    stdout, stderr = proc.communicate(timeout=120)
    t.check(proc.returncode == 0 and stdout.startswith("done"), f"rotation: program exit {proc.returncode} {stdout!r} {stderr!r}")
    files = sorted(glob.glob(os.path.join(sub, "svc-*.mlpd")))
    t.check(len(files) == 3, f"rotation: {len(files)} files remain, expected 3: {files}")
    numbers = [int(os.path.basename(f)[4:8]) for f in files]
    t.check(numbers[0] >= 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))),
            f"rotation: file numbers {numbers} (expected the newest three of at least four)")
    total = 0
    for f in files:
        obj = strict_ok(f, "rotation")
        mprof_clean(f, "rotation")
        total += events(obj, "alloc")
        t.check(events(obj, "alloc") > 0, f"rotation: {f} holds no allocation")
        t.check(events(obj, "method_jit") > 0 and events(obj, "class_load") > 0,
                f"rotation: {f} does not describe methods and classes itself")
    print(f"ok  rotation: files {numbers} remain, each verify --strict and mprof-report clean, "
          f"{total} allocations", flush=True)


def rotation_zip_kill(workdir):
    sub = os.path.join(workdir, "rotz")
    os.mkdir(sub)
    pattern = os.path.join(sub, "svc-%n-%p.mlpd.gz")
    proc = start(f"nodefaults,sample,alloc,zip,rotate=1s,flush=250,output={pattern}", 30)
    time.sleep(4.5)
    proc.kill()
    proc.wait()
    files = sorted(glob.glob(os.path.join(sub, "svc-*.mlpd.gz")))
    t.check(len(files) >= 3, f"rotation+zip: only {len(files)} files after 4.5 s with rotate=1s")
    for f in files[:-1]:
        raw = open(f, "rb").read()
        try:
            gzip.decompress(raw)  # a closed file is a complete gzip stream
        except Exception as e:  # noqa: BLE001
            t.check(False, f"rotation+zip: closed file {f} is not complete gzip: {e}")
        strict_ok(f, "rotation+zip (closed file)")
        mprof_clean(f, "rotation+zip (closed file)")
    strict_ok(files[-1], "rotation+zip (file being written at the kill)", allow_truncation=True)
    print(f"ok  rotation+zip+SIGKILL: {len(files) - 1} closed files intact, the last one reads to the kill", flush=True)


def rotation_size(workdir):
    sub = os.path.join(workdir, "size")
    os.mkdir(sub)
    pattern = os.path.join(sub, "s-%n.mlpd")
    proc = start(f"nodefaults,alloc,rotate-size=256k,output={pattern}", 3)
    proc.communicate(timeout=120)
    files = sorted(glob.glob(os.path.join(sub, "s-*.mlpd")))
    t.check(len(files) >= 2, f"rotate-size: {len(files)} files")
    for f in files:
        strict_ok(f, "rotate-size")
    print(f"ok  rotate-size=256k: {len(files)} files, sizes {[os.path.getsize(f) for f in files[:5]]}...", flush=True)


def bad_options(workdir):
    out = os.path.join(workdir, "norot.mlpd")
    for opts, needle in ((f"alloc,rotate=2s,output={out}", "needs %n or %t"),
                         ("alloc,rotate=2s,output=|cat", "needs output=FILE"),
                         (f"alloc,rotate-keep=2,output={out}", "rotate-keep"),
                         (f"alloc,rotate=0s,output={out}", "rotate=0s")):
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)
        p = t.run([t.MONO, t.program("exitcode"), "3"], env=env)
        lines = [l for l in p.stderr.splitlines() if l.startswith("mlpd:")]
        t.check(p.returncode == 3, f"{opts}: program exit {p.returncode}")
        t.check(len(lines) == 1 and needle in lines[0] and "profiling is off" in lines[0],
                f"{opts}: expected one line about {needle!r}, got {lines}")
        t.check(not os.path.exists(out), f"{opts}: a file was written")
    print("ok  rotation option errors: one line each, agent off", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-files-") as workdir:
        bad_options(workdir)
        zip_kill(workdir)
        rotation(workdir)
        rotation_size(workdir)
        rotation_zip_kill(workdir)
    t.finish("files")


if __name__ == "__main__":
    main()
