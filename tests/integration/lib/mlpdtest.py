"""Shared helpers for mlpd's integration tests (Python 3, stdlib only).

The tools' paths come from the environment that tests/integration/CMakeLists.txt sets:
MLPD, MLPD_AGENT, MLPD_PROGRAMS, MLPD_TOOLS, MLPD_SOURCE, MONO, MPROF_REPORT, MLPD_RUNTIME, MLPD_ARCH.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MLPD = os.environ.get("MLPD", "mlpd")
MONO = os.environ.get("MONO", "mono")
MPROF_REPORT = os.environ.get("MPROF_REPORT", "mprof-report")
PROGRAMS = os.environ.get("MLPD_PROGRAMS", ".")
# The build's arch/ folder (CMake's MLPD_ARCH). x86_64's and aarch64's have native unwinding of samples
# and the interrupted-syscall test (NATIVE_FRAMES); both have our own stack walker (OWN_WALKER:
# elsewhere every backtrace is Mono's walk); arch/generic's samples keep their leaf IP only.
ARCH = os.environ.get("MLPD_ARCH", "x86_64")
NATIVE_FRAMES = ARCH in ("x86_64", "aarch64")
OWN_WALKER = ARCH in ("x86_64", "aarch64")
# Under qemu-user (the arm64 tests: MLPD_EMULATED=1) process_vm_readv is not there, so the sampler copies
# no stack and native samples keep their leaf frame only, as on arch/generic.
EMULATED = os.environ.get("MLPD_EMULATED") == "1"
STACK_COPY = NATIVE_FRAMES and not EMULATED
# Where the agent is another machine's (the arm64 tests), other programs that load it run in its root too:
# ROOT_RUN + [program, args...] (tests/integration/lib/root_exec.c); [] otherwise.
ROOT_RUN = [os.environ["MLPD_ROOT_RUN"]] if os.environ.get("MLPD_ROOT_RUN") else []
# Timeouts of the programs a test runs are multiplied by this (the arm64 tests under qemu-user: 10).
TIMEOUT_SCALE = float(os.environ.get("MLPD_TIMEOUT_SCALE", "1"))


def _runtime():
    """Which Mono the test runs against: "mono68" (Debian 12's 6.8) or "mono612" (Debian 13's 6.12, on a
    Debian 13 machine or in the root of scripts/mono-root.sh, where tests/integration/CMakeLists.txt sets
    MLPD_RUNTIME for the NAME.mono612 tests); asked of `mono --version` when not set."""
    if os.environ.get("MLPD_RUNTIME"):
        return os.environ["MLPD_RUNTIME"]
    try:
        out = subprocess.run([MONO, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=60).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return "mono68"
    m = re.search(r"version (\d+)\.(\d+)", out)
    return f"mono{m.group(1)}{m.group(2)}" if m else "mono68"


RUNTIME = _runtime()
TOOLS = os.environ.get("MLPD_TOOLS", ".")

failures = []


def check(cond, message):
    """Records a failure (the test goes on, so one run shows every problem)."""
    if not cond:
        failures.append(message)
        print("FAIL: " + message, flush=True)
    return cond


def finish(name):
    if failures:
        print(f"{name}: {len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print(f"{name}: all checks passed", flush=True)
    sys.exit(0)


def run(cmd, timeout=120, input_bytes=None, env=None, cwd=None):
    """Runs cmd; returns CompletedProcess with text stdout/stderr (bytes decoded leniently)."""
    p = subprocess.run(cmd, input=input_bytes, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout and timeout * TIMEOUT_SCALE, env=env, cwd=cwd)
    p.stdout = p.stdout.decode("utf-8", "replace")
    p.stderr = p.stderr.decode("utf-8", "replace")
    return p


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


def chromium(args, timeout=120):
    """Debian's chromium, headless, on a throw-away profile (the pages' tests: flame graphs, heat maps)."""
    profile_dir = tempfile.mkdtemp(prefix="mlpd-chromium-")
    try:
        return run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}", "--virtual-time-budget=5000",
                    *args], timeout=timeout)
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)


def program(name):
    return os.path.join(PROGRAMS, name + ".exe")


def mono_log_profile(prog, options, out, extra_env=None, timeout=120, args=()):
    """Runs a test program (with `args`) under Mono's own log profiler, writing `out`."""
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    if extra_env:
        env.update(extra_env)
    opts = f"log:{options},output={out}" if options else f"log:output={out}"
    return run([MONO, f"--profile={opts}", program(prog), *args], timeout=timeout, env=env)


def verify_json(path, strict=False):
    cmd = [MLPD, "verify", "--json"] + (["--strict"] if strict else []) + [path]
    p = run(cmd)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    obj = json.loads(lines[0]) if lines else None
    return p.returncode, obj, p


def log_count(path):
    """Counts per event kind as Mono.Profiler.Log.dll sees them (tests/programs/LogCount.cs)."""
    p = run([MONO, program("LogCount"), path, "--detail"])
    counts, detail = {}, {}
    for line in p.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("detail."):
            detail[name[len("detail."):]] = int(value)
        elif value:
            counts[name] = int(value)
    return p.returncode, counts, detail, p


def our_totals(path):
    p = run([os.path.join(TOOLS, "mlpd_totals"), path])
    totals = {}
    for line in p.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("total."):
            totals[name[len("total."):]] = int(value)
    return p.returncode, totals, p


# Leaf frames of a thread waiting, not running (sampled waits). glibc 2.41 (Debian 13) enters blocking
# system calls through __syscall_cancel_arch, which is then the leaf.
WAITS = re.compile(r"futex|sem_wait|nanosleep|__poll|epoll|pthread_cond|__nptl_death_event|lll_lock_wait|"
                   r"syscall_cancel")


def mprof_sample_summary(path):
    """mprof-report's sample summary: (returncode, [(hits, name)], text)."""
    p = run([MPROF_REPORT, "--reports=sample", path], timeout=300)
    rows = []
    in_table = False
    for line in p.stdout.splitlines():
        if "Hits      % Method name" in line:
            in_table = True
            continue
        m = re.match(r"^\s+(\d+)\s+[\d.]+ (.+)$", line) if in_table else None
        if m:
            rows.append((int(m.group(1)), m.group(2).strip()))
        elif in_table and line.strip():
            break
    return p.returncode, rows, p.stdout


_NOISE = re.compile(r"^(unmatched leave|time went backwards|callee time bigger)")


def mprof_report(path, *args):
    """Runs mprof-report; returns (returncode, parsed totals dict, full text)."""
    p = run([MPROF_REPORT, *args, path], timeout=300)
    text = p.stdout
    t = {}
    heapshots = []
    for line in text.splitlines():
        if _NOISE.match(line):
            continue
        m = re.match(r"^Total calls: (\d+)$", line)
        if m:
            t["calls"] = int(m.group(1))
        # Mono 6.12's mprof-report prints a stray "d" after this count and after a heapshot's roots
        # ("13255d objects", "roots: 0d": a format of PRIu64 followed by "d"); 6.8's does not.
        m = re.match(r"^Total memory allocated: (\d+) bytes in (\d+)d? objects$", line)
        if m:
            t["alloc_bytes"], t["alloc_objects"] = int(m.group(1)), int(m.group(2))
        m = re.match(r"^\tThrows: (\d+)$", line)
        if m:
            t["throws"] = int(m.group(1))
        m = re.match(r"^\tExecuted (catch|filter|finally|fault) clauses: (\d+)$", line)
        if m:
            t["clauses." + m.group(1)] = int(m.group(2))
        m = re.match(r"^\tObject moves: (\d+)$", line)
        if m:
            t["gc_moved_objects"] = int(m.group(1))
        m = re.match(r"^\tGC resizes: (\d+)$", line)
        if m:
            t["gc_resizes"] = int(m.group(1))
        m = re.match(r"^\tGen(\d) collections: (\d+),", line)
        if m:
            t["gc_collections.gen" + m.group(1)] = int(m.group(2))
        m = re.match(r"^\tGC handles (weak|weaktrack|normal): created: (\d+), destroyed: (\d+), max: (\d+)$", line)
        if m:
            t["gc_handles_created." + m.group(1)] = int(m.group(2))
            t["gc_handles_destroyed." + m.group(1)] = int(m.group(3))
        m = re.match(r"^\tLock (contentions|acquired|failures): (\d+)$", line)
        if m:
            key = {"contentions": "contention", "acquired": "done", "failures": "fail"}[m.group(1)]
            t["monitor." + key] = int(m.group(2))
        m = re.match(r"^\tJIT helpers: (\d+)$", line)
        if m:
            t["jit_helpers"] = int(m.group(1))
        # "Unresolved hits" are a subset of the unmanaged ones: managed + unmanaged = hit events.
        m = re.match(r"^\t(Unmanaged|Managed) hits:\s+(\d+)", line)
        if m:
            t["sample_hits"] = t.get("sample_hits", 0) + int(m.group(2))
        m = re.match(r"^\tHeap shot (\d+) at [\d.]+ secs: size: (\d+), object count: (\d+),", line)
        if m:
            heapshots.append((int(m.group(3)), int(m.group(2))))
    if "GC summary" in text:
        # A generation without collections gets no line at all.
        for g in range(4):
            t.setdefault(f"gc_collections.gen{g}", 0)
    if heapshots:
        t["heapshots"] = len(heapshots)
        for i, (objects, size) in enumerate(heapshots):
            t[f"heapshot.{i}.objects"] = objects
            t[f"heapshot.{i}.bytes"] = size
    return p.returncode, t, p
