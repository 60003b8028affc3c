#!/usr/bin/env python3
"""Flight recorder (ring=SIZE): dumps over the command port and at exit are complete files that hold
only the last events; a dump to a directory that cannot be written answers ERR and profiling goes on;
the program's output and exit status are unchanged; RSS stays bounded."""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]


def ask(port, line, timeout=30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode().strip()


def first_time_ns(path):
    """The earliest buffer time of a file (from mlpd dump's buffer lines) and the header start."""
    p = t.run([t.MLPD, "dump", "--json", path], timeout=300)
    return p


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-ring-") as workdir:
        exit_dump = os.path.join(workdir, "exit-%n.mlpd")
        opts = f"nodefaults,calls,alloc,ring=4m,port=0,output={exit_dump}"
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=opts)
        plain = t.run([t.MONO, t.program("service"), "1"])
        proc = subprocess.Popen([t.MONO, t.program("service"), "7"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, text=True)
        port = None
        line = proc.stderr.readline()
        m = re.search(r"command port \S+:(\d+)", line)
        t.check(m is not None, f"no command port line: {line!r}")
        port = int(m.group(1)) if m else 0
        ready = proc.stdout.readline().strip()
        t.check(ready == "ready", f"program said {ready!r}")
        start = time.monotonic()
        time.sleep(2.5)
        d1 = os.path.join(workdir, "d1.mlpd")
        a1 = ask(port, f"dump {d1}")
        peak = rss_kb(proc.pid)
        time.sleep(1.5)
        a2 = ask(port, "dump " + os.path.join(workdir, "d-%n.mlpd"))
        # A directory that cannot be written: read-only for a normal user; as root (CI) a path under a
        # regular file, which no user can create.
        ro = os.path.join(workdir, "ro")
        os.mkdir(ro)
        os.chmod(ro, 0o555)
        bad = os.path.join(ro, "x.mlpd") if os.geteuid() != 0 else os.path.join(d1, "x.mlpd")
        a3 = ask(port, "dump " + bad)
        a4 = ask(port, "stats")
        for _ in range(10):
            peak = max(peak, rss_kb(proc.pid))
            time.sleep(0.2)
        out, err = proc.communicate(timeout=120)
        t.check(proc.returncode == 0 and out.startswith("done"), f"program exit {proc.returncode} {out!r}")
        t.check(re.fullmatch(r"OK dump \S+d1\.mlpd \d+", a1) is not None, f"first dump answered {a1!r}")
        # The first dump was named without %n: it took no number (issue 22).
        t.check(re.fullmatch(r"OK dump \S+d-0000\.mlpd \d+", a2) is not None, f"second dump answered {a2!r}")
        t.check(a3.startswith("ERR dump: cannot create output file") and ("Permission denied" in a3 or "Not a directory" in a3),
                f"dump into a directory that cannot be written answered {a3!r}")
        t.check(not os.path.exists(bad), "a failed dump left a file")
        t.check(a4.startswith("OK "), f"stats after the failed dump: {a4!r} (profiling goes on)")
        dumps = [d1, os.path.join(workdir, "d-0000.mlpd")]
        exits = sorted(f for f in os.listdir(workdir) if f.startswith("exit-"))
        t.check(len(exits) == 1, f"exit dumps: {exits}")
        dumps += [os.path.join(workdir, f) for f in exits]
        for d in dumps:
            if not os.path.exists(d):
                t.check(False, f"{d} missing")
                continue
            rc, obj, p = t.verify_json(d, strict=True)
            t.check(rc == 0 and obj and obj["ok"], f"{d}: verify --strict: {p.stdout[-400:]}")
            n = obj["counts"].get("method_enter", 0) if obj else 0
            t.check(n > 1000, f"{d}: only {n} method enters")
            size = os.path.getsize(d)
            t.check(size < 4 * 1024 * 1024 + 2 * 1024 * 1024, f"{d}: {size} bytes for ring=4m")
            r = t.run([t.MPROF_REPORT, d], timeout=300)
            t.check(r.returncode == 0 and "unresolved" not in r.stdout, f"{d}: mprof-report rc {r.returncode} or unresolved names")
        # Only the last events: the program made calls from its start, the dumps hold the last ones.
        for d, after in ((dumps[0], 1.5), (dumps[1], 3.0)):
            head = subprocess.run(f"'{t.MLPD}' dump '{d}' | head -1", shell=True, stdout=subprocess.PIPE, text=True).stdout
            enter = subprocess.run(f"'{t.MLPD}' dump '{d}' | grep -m1 ' method_enter '", shell=True,
                                   stdout=subprocess.PIPE, text=True).stdout
            m0 = re.search(r"startup_ns=(\d+)", head)
            m1 = re.match(r"(\d+) ", enter)
            t.check(m0 is not None and m1 is not None, f"{d}: no header or no method_enter in mlpd dump: {head[:100]!r} {enter[:100]!r}")
            if m0 and m1:
                first = (int(m1.group(1)) - int(m0.group(1))) / 1e9
                t.check(first > after, f"{d}: first call at {first:.2f} s after the start: not late in the run")
        t.check(peak < 120 * 1024, f"peak RSS {peak} KiB with ring=4m")
        print(f"ok  ring=4m: dumps {a1!r}, {a2!r}; read-only: {a3!r}; exit dump {exits}; peak RSS {peak // 1024} MiB "
              f"(unprofiled program: {plain.returncode})", flush=True)
        # An unhandled exception ends the program through the runtime's exit: the exit dump holds the throw.
        plain_u = t.run([t.MONO, t.program("unhandled")])
        udump = os.path.join(workdir, "unhandled-%n.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,alloc,exception,ring=1m,output={udump}")
        u = t.run([t.MONO, t.program("unhandled")], env=env)
        t.check(u.returncode == plain_u.returncode and u.stdout == plain_u.stdout,
                f"unhandled: exit {u.returncode} vs {plain_u.returncode} unprofiled")
        ufile = udump.replace("%n", "0000")
        rc, obj, p = t.verify_json(ufile, strict=True)
        t.check(rc == 0 and obj and obj["counts"].get("exception_throw", 0) >= 1,
                f"unhandled: dump {ufile}: rc {rc}, {obj and obj['counts']}")
        print(f"ok  unhandled exception: exit status {u.returncode} as unprofiled, the exit dump holds the throw", flush=True)
        numbering(workdir)
        refused_at_start(workdir)
        zip_default_names(workdir)
    t.finish("ring")


def start_service(options, seconds, cwd=None):
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=options)
    proc = subprocess.Popen([t.MONO, t.program("service"), str(seconds)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True, cwd=cwd)
    line = proc.stderr.readline()
    m = re.search(r"command port \S+:(\d+)", line)
    t.check(m is not None, f"{options}: no command port line: {line!r}")
    t.check(proc.stdout.readline().strip() == "ready", f"{options}: program not ready")
    return proc, int(m.group(1)) if m else 0


def numbering(workdir):
    """%n counts the dumps written under a name that has it: a dump named without %n, and one that
    failed, take no number (they once did: e-0000, e-0003, exit e-0004)."""
    sub = os.path.join(workdir, "num")
    os.mkdir(sub)
    pattern = os.path.join(sub, "e-%n.mlpd")
    proc, port = start_service(f"nodefaults,calls,ring=1m,port=0,output={pattern}", 3)
    time.sleep(0.5)
    answers = [ask(port, "dump"), ask(port, "dump " + os.path.join(sub, "named.mlpd")),
               ask(port, "dump " + os.path.join(sub, "named.mlpd", "d-%n.mlpd")), ask(port, "dump")]
    out, err = proc.communicate(timeout=120)
    t.check(proc.returncode == 0, f"numbering: program exit {proc.returncode}")
    t.check(answers[2].startswith("ERR dump:"), f"numbering: dump under a file answered {answers[2]!r}")
    files = sorted(os.listdir(sub))
    t.check(files == ["e-0000.mlpd", "e-0001.mlpd", "e-0002.mlpd", "named.mlpd"],
            f"numbering: files {files} (answers {answers})")
    for f in files:
        rc, obj, p = t.verify_json(os.path.join(sub, f), strict=True)
        t.check(rc == 0 and obj and obj["ok"], f"numbering: {f}: {p.stdout[-300:]}")
    print(f"ok  dump numbers: {files} (a named and a failed dump take no number; the exit dump is the next)", flush=True)


def refused_at_start(workdir):
    """ring= with output= in a directory that cannot take files: one line at start, profiling off,
    the program unchanged (it once ran profiled and lost everything at exit: 'mlpd: exit ERR dump')."""
    plain = t.run([t.MONO, t.program("exitcode")])
    a_file = os.path.join(workdir, "a-file")
    open(a_file, "w").close()
    for where in (os.path.join(workdir, "missing", "x-%n.mlpd"), os.path.join(a_file, "x-%n.mlpd")):
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"nodefaults,alloc,ring=1m,output={where}")
        p = t.run([t.MONO, t.program("exitcode")], env=env)
        lines = [l for l in p.stderr.splitlines() if l.startswith("mlpd:")]
        t.check(p.returncode == plain.returncode and p.stdout == plain.stdout, f"ring refused: program changed {p.returncode}")
        t.check(len(lines) == 1 and "cannot write dumps into" in lines[0] and lines[0].endswith("; profiling is off"),
                f"ring with output={where}: expected one line at start, got {lines}")
    print(f"ok  ring= into a directory that cannot take dumps: refused at start ({lines[0] if lines else ''})", flush=True)


def zip_default_names(workdir):
    """`zip` without output=: the default names end in .mlpd.gz (gzip once went into output.PID.mlpd)."""
    sub = os.path.join(workdir, "zipnames")
    os.mkdir(sub)
    p = t.run([t.MONO, t.program("exitcode")], env=dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS="nodefaults,alloc,zip"),
              cwd=sub)
    files = os.listdir(sub)
    t.check(p.returncode == 3 and len(files) == 1 and re.fullmatch(r"output\.\d+\.mlpd\.gz", files[0]) is not None,
            f"zip, default output: files {files}")
    for f in files:
        path = os.path.join(sub, f)
        t.check(open(path, "rb").read(2) == b"\x1f\x8b", f"{f}: not gzip")
        rc, obj, _ = t.verify_json(path, strict=True)
        t.check(rc == 0 and obj and obj["counts"].get("alloc", 0) >= 500, f"{f}: does not verify")
        r = t.run([t.MPROF_REPORT, path])
        t.check(r.returncode == 0 and "Marker" in r.stdout, f"{f}: mprof-report rc {r.returncode}")
        os.unlink(path)
    proc, port = start_service("nodefaults,calls,ring=1m,zip,port=0", 2, cwd=sub)
    time.sleep(0.3)
    a = ask(port, "dump")
    proc.communicate(timeout=120)
    m = re.fullmatch(r"OK dump (mlpd-dump\.\d+\.0000\.mlpd\.gz) \d+", a)
    t.check(m is not None, f"zip, ring, default dump name: answered {a!r}")
    if m:
        rc, obj, _ = t.verify_json(os.path.join(sub, m.group(1)), strict=True)
        t.check(rc == 0 and obj and obj["ok"], f"{m.group(1)}: does not verify")
    print(f"ok  zip default names: {files}, {a.split()[2] if m else a}", flush=True)


if __name__ == "__main__":
    main()
