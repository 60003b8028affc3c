#!/usr/bin/env python3
"""perf sees managed code: the agent's `jitdump` and `perfmap` options (docs/perf.md).

test_perf.py files: the files the agent writes, decoded here from the jitdump specification
  (tools/perf/Documentation/jitdump-specification.txt): well formed and closed after a normal end,
  Environment.Exit, an unhandled exception and a fork; with every other option; an unwritable
  directory is one line and the program runs on.
test_perf.py perf: real `perf record -k 1 -e cpu-clock`, `perf inject --jit`, `perf report`: the hot
  managed method is the top symbol with jitdump (and with perfmap); without the agent it is an
  anonymous [JIT] address; code JIT'd over an unloaded AppDomain's code is not blamed on the old
  code. Exits 77 (skipped) when perf cannot record on this machine.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def agent_machine():
    """The ELF e_machine of the agent under test (jitdump's elf_mach is its machine's: EM_AARCH64 for the
    arm64 agent run under qemu, whose test runs on the x86-64 host)."""
    with open(AGENT, "rb") as f:
        head = f.read(20)
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


ELF_MACHINE = agent_machine()
SKIP = 77


def env_with(**kw):
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD")}
    env.update(kw)
    return env


def mlpd_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("mlpd:")]


def decode_jitdump(path):
    """Every field in the specification's order. Returns (header, loads, closes, errors)."""
    b = open(path, "rb").read()
    errors = []
    if len(b) < 40:
        return None, [], 0, [f"{path}: shorter than the 40-byte header"]
    magic, version, total, mach, pad1, pid, ts, flags = struct.unpack_from("<IIIIIIQQ", b, 0)
    header = dict(magic=magic, version=version, total_size=total, elf_mach=mach, pad1=pad1, pid=pid,
                  timestamp=ts, flags=flags)
    if magic != 0x4A695444:
        errors.append("magic is not JiTD")
    if version != 1 or total != 40 or pad1 != 0 or flags != 0:
        errors.append(f"header fields: {header}")
    loads, closes, at, last = [], 0, total, ts
    while at < len(b):
        if closes:
            errors.append(f"offset {at}: a record after JIT_CODE_CLOSE")
        if len(b) - at < 16:
            errors.append(f"offset {at}: truncated record header")
            break
        rid, size, rts = struct.unpack_from("<IIQ", b, at)
        if size < 16 or at + size > len(b):
            errors.append(f"offset {at}: record size {size} out of the file")
            break
        if rts < last:
            errors.append(f"offset {at}: timestamp goes backwards")
        last = rts
        if rid == 0:
            lpid, tid, vma, addr, csize, index = struct.unpack_from("<IIQQQQ", b, at + 16)
            nul = b.find(b"\0", at + 56, at + size)
            if nul < 0:
                errors.append(f"offset {at}: name without NUL")
            else:
                name = b[at + 56:nul].decode("utf-8", "replace")
                code = b[nul + 1:at + size]
                if len(code) != csize:
                    errors.append(f"offset {at}: {len(code)} code bytes, code_size {csize}")
                if lpid != pid or vma != addr:
                    errors.append(f"offset {at}: pid {lpid} / vma {vma:#x} != code_addr {addr:#x}")
                loads.append(dict(ts=rts, tid=tid, addr=addr, size=csize, index=index, name=name, code=code))
        elif rid == 3:
            if size != 16:
                errors.append(f"offset {at}: JIT_CODE_CLOSE with a payload")
            closes += 1
        else:
            errors.append(f"offset {at}: unexpected record id {rid}")
        at += size
    if len({l["index"] for l in loads}) != len(loads):
        errors.append("code_index not unique")
    return header, loads, closes, errors


def check_dump(label, path, closed=True, t0=None, t1=None):
    header, loads, closes, errors = decode_jitdump(path)
    t.check(not errors, f"{label}: {path} is not well formed: {errors[:3]}")
    if header is None:
        return header, loads
    t.check(header["elf_mach"] == ELF_MACHINE, f"{label}: elf_mach {header['elf_mach']}, the agent's {ELF_MACHINE}")
    t.check(os.path.basename(path) == f"jit-{header['pid']}.dump", f"{label}: pid {header['pid']} vs {path}")
    t.check(closes == (1 if closed else 0), f"{label}: {closes} JIT_CODE_CLOSE records")
    if t0 is not None:
        # CLOCK_MONOTONIC (Python's monotonic_ns on Linux): what `perf record -k 1` stamps samples with.
        bad = [l for l in loads if not (t0 <= l["ts"] <= t1)]
        t.check(t0 <= header["timestamp"] <= t1 and not bad,
                f"{label}: timestamps outside the run on CLOCK_MONOTONIC ({len(bad)} records)")
    return header, loads


def run_agent(prog_args, options, workdir, timeout=120):
    env = env_with(LD_PRELOAD=AGENT, MLPD_OPTIONS=options)
    t0 = time.monotonic_ns()
    p = t.run([t.MONO] + prog_args, env=env, cwd=workdir, timeout=timeout)
    return p, t0, time.monotonic_ns()


def one_dump(d):
    dumps = glob.glob(os.path.join(d, "jit-*.dump"))
    t.check(len(dumps) == 1, f"expected one jit-PID.dump in {d}, got {dumps}")
    return dumps[0] if dumps else None


# ---- files ------------------------------------------------------------------------------------


def check_basic(workdir):
    d = os.path.join(workdir, "basic")
    os.makedirs(d)
    p, t0, t1 = run_agent([t.program("perfhot"), "200"], f"nodefaults,jitdump={d},perfmap,output={d}/o.mlpd", workdir)
    t.check(p.returncode == 0 and p.stdout == "done 1\n", f"basic: program changed: {p.returncode} {p.stdout!r}")
    t.check(not mlpd_lines(p.stderr), f"basic: the agent said {mlpd_lines(p.stderr)}")
    path = one_dump(d)
    if not path:
        return
    header, loads = check_dump("basic", path, True, t0, t1)
    spin = [l for l in loads if l["name"] == "PerfHot:Spin (long)"]
    t.check(len(spin) == 1 and spin[0]["size"] > 0 and len(spin[0]["code"]) == spin[0]["size"],
            f"basic: PerfHot:Spin with its code: {[(l['name'], l['size']) for l in spin]}")
    buffers = [l for l in loads if l["name"].startswith("[mono] ")]
    t.check(any("trampoline" in l["name"] for l in buffers), "basic: no trampoline code buffers")
    t.check(not any(l["name"] == "[mono] method" for l in buffers), "basic: methods' own code buffers duplicated")
    # The perf map: "START SIZE name", hex, the same ranges.
    map_path = f"/tmp/perf-{header['pid']}.map"
    try:
        lines = open(map_path).read().splitlines()
    except OSError as e:
        t.check(False, f"basic: {map_path}: {e}")
        return
    finally:
        if os.path.exists(map_path):
            os.unlink(map_path)
    entries = {}
    for line in lines:
        m = re.match(r"^([0-9a-f]+) ([0-9a-f]+) (.*)$", line)
        t.check(m is not None, f"basic: perf map line {line!r}")
        if m:
            entries[(int(m.group(1), 16), m.group(3))] = int(m.group(2), 16)
    t.check(len(lines) == len(loads), f"basic: {len(lines)} map lines for {len(loads)} jitdump loads")
    if spin:
        t.check(entries.get((spin[0]["addr"], spin[0]["name"])) == spin[0]["size"], "basic: Spin's map line")
    print(f"ok  basic: {len(loads)} code loads ({len(buffers)} code buffers), {os.path.getsize(path)} bytes; "
          f"perf map {len(lines)} lines", flush=True)


def check_with_everything(workdir):
    d = os.path.join(workdir, "all")
    os.makedirs(d)
    opts = f"jitdump={d},perfmap,calls,alloc,sample=1000,heapshot,monitor,gchandle,finalization,jit,counter,output={d}/all.mlpd"
    p, t0, t1 = run_agent([t.program("perfhot"), "200"], opts, workdir, timeout=300)
    t.check(p.returncode == 0 and p.stdout == "done 1\n", f"all options: program changed: {p.returncode} {p.stdout!r}")
    path = one_dump(d)
    if path:
        header, loads = check_dump("all options", path, True, t0, t1)
        t.check(any(l["name"] == "PerfHot:Spin (long)" for l in loads), "all options: no PerfHot:Spin")
        if header and os.path.exists(f"/tmp/perf-{header['pid']}.map"):
            os.unlink(f"/tmp/perf-{header['pid']}.map")
    rc, v, _ = t.verify_json(f"{d}/all.mlpd")
    t.check(rc == 0 and v and v["ok"], f"all options: the .mlpd does not verify: {v and v.get('errors', [])[:3]}")
    print("ok  jitdump with every other option", flush=True)


def check_endings(workdir):
    for prog, status in (("exitcode", 3), ("unhandled", 1)):
        d = os.path.join(workdir, prog)
        os.makedirs(d)
        p, t0, t1 = run_agent([t.program(prog)], f"nodefaults,jitdump={d},output={d}/o.mlpd", workdir)
        t.check(p.returncode == status, f"{prog}: exit status {p.returncode}, expected {status}")
        path = one_dump(d)
        if path:
            _, loads = check_dump(prog, path, True, t0, t1)
            t.check(any("Main ()" in l["name"] for l in loads), f"{prog}: Main not in the jitdump")
            print(f"ok  {prog}: exit {p.returncode}, jitdump closed and well formed ({len(loads)} loads)", flush=True)


def check_fork(workdir):
    d = os.path.join(workdir, "fork")
    os.makedirs(d)
    p, t0, t1 = run_agent([t.program("forker"), "2"], f"nodefaults,jitdump={d},perfmap,output={d}/o.mlpd", workdir)
    t.check(p.returncode == 0 and "forked" in p.stdout, f"fork: {p.returncode} {p.stdout!r}")
    path = one_dump(d)  # the child writes none
    if not path:
        return
    header, loads = check_dump("fork", path, True, t0, t1)
    size = os.path.getsize(path)
    time.sleep(2.5)  # the child (sleeping 2 s after the fork) has ended: it must not have touched the file
    t.check(os.path.getsize(path) == size, "fork: the parent's jitdump changed after the parent ended")
    check_dump("fork (after the child)", path, True)
    t.check(len(glob.glob(os.path.join(d, "jit-*.dump"))) == 1, "fork: the child wrote a jitdump")
    if header:
        for f in (f"/tmp/perf-{header['pid']}.map",):
            if os.path.exists(f):
                os.unlink(f)
    print(f"ok  fork: the parent's jitdump is whole ({len(loads)} loads), the child wrote none", flush=True)


def check_unwritable(workdir):
    plain = t.run([t.MONO, t.program("perfhot"), "50"], env=env_with())
    for opts in ("nodefaults,jitdump=/sys", f"jitdump={workdir}/missing/dir"):  # not writable (even by root), missing
        p, _, _ = run_agent([t.program("perfhot"), "50"], opts + f",output={workdir}/unwritable.mlpd", workdir)
        lines = mlpd_lines(p.stderr)
        t.check(p.returncode == plain.returncode and p.stdout == plain.stdout, f"{opts}: program changed")
        t.check(len(lines) == 1 and "jitdump" in lines[0], f"{opts}: expected one line about the jitdump, got {lines}")
        print(f"ok  {opts}: {lines[0] if lines else ''}", flush=True)
    rc, v, _ = t.verify_json(f"{workdir}/unwritable.mlpd")
    t.check(rc == 0 and v and v["ok"], "unwritable jitdump dir: the .mlpd profile is still written")


def check_off(workdir):
    d = os.path.join(workdir, "off")
    os.makedirs(d)
    p, _, _ = run_agent([t.program("perfhot"), "20"], f"output={d}/o.mlpd", d)
    t.check(p.returncode == 0 and not glob.glob(os.path.join(d, "jit-*.dump")), "without jitdump: a jitdump was written")


# ---- perf -------------------------------------------------------------------------------------


def perf_env(home):
    env = env_with()
    env["HOME"] = home  # perf's build-id cache (~/.debug) stays in the test's directory
    return env


def perf_top(data, home):
    """(symbol, percent) lines of `perf report --sort sym`, the top first."""
    p = t.run(["perf", "report", "-q", "-i", data, "--stdio", "--sort", "sym"], env=perf_env(home), timeout=120)
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*([\d.]+)%\s+\[[.k]\]\s+(.*?)\s*$", line)
        if m:
            out.append((m.group(2), float(m.group(1))))
    return out, p


def perf_record(workdir, name, prog_args, options=None):
    data = os.path.join(workdir, name + ".data")
    env = perf_env(workdir)
    if options:
        env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=options)
    p = t.run(["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-o", data, "--", t.MONO] + prog_args,
              env=env, timeout=120)
    t.check(p.returncode == 0, f"{name}: perf record failed: {p.stderr[-400:]}")
    return data, p


def perf_inject(workdir, data):
    out = data.replace(".data", ".jit.data")
    p = t.run(["perf", "inject", "--jit", "-i", data, "-o", out], env=perf_env(workdir), timeout=120)
    t.check(p.returncode == 0, f"perf inject --jit failed: {p.stderr[-400:]}")
    return out


def perf_can_record(workdir):
    if not shutil.which("perf"):
        return "perf is not installed (Debian: linux-perf)"
    data = os.path.join(workdir, "probe.data")
    p = t.run(["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-o", data, "--", "true"],
              env=perf_env(workdir), timeout=60)
    if p.returncode != 0 or not os.path.exists(data):
        return f"perf record cannot record here: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def show(label, top):
    print(f"    {label}: " + "; ".join(f"{pct:.1f}% {sym}" for sym, pct in top[:3]), flush=True)


def check_perf(workdir):
    ms = "1500"
    # Without the agent: the hot code is an anonymous address.
    data, _ = perf_record(workdir, "plain", [t.program("perfhot"), ms])
    top, _ = perf_top(data, workdir)
    show("without the agent", top)
    t.check(bool(top) and re.match(r"^0x[0-9a-f]+$", top[0][0]) is not None,
            f"without the agent the top symbol was expected to be an anonymous address: {top[:2]}")

    # jitdump: perf record, perf inject --jit, perf report.
    d = os.path.join(workdir, "jd")
    os.makedirs(d)
    data, _ = perf_record(workdir, "jitdump", [t.program("perfhot"), ms], f"nodefaults,jitdump={d},output={d}/o.mlpd")
    top, rep = perf_top(perf_inject(workdir, data), workdir)
    show("jitdump", top)
    t.check(bool(top) and top[0][0] == "PerfHot:Spin (long)" and top[0][1] > 30,
            f"jitdump: the top symbol is not PerfHot:Spin: {top[:3]} {rep.stderr[-300:]}")

    # perfmap: perf report reads /tmp/perf-PID.map itself.
    data, _ = perf_record(workdir, "perfmap", [t.program("perfhot"), ms], f"nodefaults,perfmap,output=+{workdir}/pm")
    top, _ = perf_top(data, workdir)
    show("perfmap", top)
    t.check(bool(top) and top[0][0] == "PerfHot:Spin (long)" and top[0][1] > 30,
            f"perfmap: the top symbol is not PerfHot:Spin: {top[:3]}")
    for f in glob.glob(os.path.join(workdir, "pm.*")):  # output=+FILE: FILE.PID
        pid = f.rsplit(".", 1)[1]
        if pid.isdigit() and os.path.exists(f"/tmp/perf-{pid}.map"):
            os.unlink(f"/tmp/perf-{pid}.map")

    # Code JIT'd where an unloaded AppDomain's code was: perf must name the new code.
    d = os.path.join(workdir, "domains")
    os.makedirs(d)
    data, _ = perf_record(workdir, "domains", [t.program("perfhot"), "domains", ms], f"nodefaults,jitdump={d},output={d}/o.mlpd")
    path = one_dump(d)
    top, _ = perf_top(perf_inject(workdir, data), workdir)
    show("domains", top)
    t.check(bool(top) and top[0][0] == "DomainWork:Hot (long)" and top[0][1] > 30,
            f"domains: the top symbol is not DomainWork:Hot: {top[:3]}")
    if path:
        _, loads = check_dump("domains", path, True)
        hot = [l for l in loads if l["name"] == "DomainWork:Hot (long)"]
        if hot:
            h = hot[0]
            before = {l["name"] for l in loads if l["ts"] < h["ts"] and l["name"] != h["name"] and
                      l["addr"] < h["addr"] + h["size"] and h["addr"] < l["addr"] + l["size"]}
            print(f"    domains: Hot's code range held before: {sorted(before)[:3]}", flush=True)
            t.check(bool(before), "domains: Hot's code did not land on reused addresses (the test proves nothing)")
            blamed = [(s, p) for s, p in top if s in before and p > 1.0]
            t.check(not blamed, f"domains: old code blamed for Hot's samples: {blamed}")
    print("ok  perf names the managed code (jitdump, perfmap, reused addresses)", flush=True)


def scratch_parent():
    """perf inject --jit writes one small ELF file per code load (thousands): on a file system mounted
    with `discard` creating and removing them takes minutes. A tmpfs is used when one allows exec
    mappings (the jitdump must be mapped PROT_EXEC) and has room."""
    try:
        st = os.statvfs("/dev/shm")
        if not (st.f_flag & os.ST_NOEXEC) and st.f_bavail * st.f_frsize > (512 << 20) and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "files"
    with tempfile.TemporaryDirectory(prefix="mlpd_perf_", dir=scratch_parent()) as workdir:
        if mode == "perf":
            why = perf_can_record(workdir)
            if why:
                print(f"SKIP: {why}", flush=True)
                sys.exit(SKIP)
            check_perf(workdir)
        else:
            check_basic(workdir)
            check_with_everything(workdir)
            check_endings(workdir)
            check_fork(workdir)
            check_unwritable(workdir)
            check_off(workdir)
    t.finish("agent_perf_" + mode)


if __name__ == "__main__":
    main()
