#!/usr/bin/env python3
"""Stacks through AOT-compiled code, and what `calls` cannot see (issue 33, items 1 and 5).

Debian AOT-compiles mscorlib (`mscorlib.dll.so`); its methods send no jit_done, so the sample drain,
which keeps a managed frame only when its method was described, cut every sample at the first
mscorlib frame: on an HttpListener server 9-13% of the hits were `[truncated];...` with 1-10 frames
and the request handler's inclusive share read 62% instead of 75%. With `mono -O=-aot` nothing was
cut. Now the drain has the runtime's finalizer thread describe such frames (by their method, or by
their code start when the walk could not name them), and every cut of a stack is counted by reason.

The program (aotwork.cs): 2 threads whose request handler runs List<T>, Dictionary, LINQ, string
formatting and sorting, nearly all of it mscorlib code. Its AOT mscorlib: the system's when Mono
loads one, else one compiled here once (mono --aot -O=all, as Debian's postinst does) and loaded
through MONO_PATH, next to a copy of mscorlib.dll.

* `sample` under LD_PRELOAD with the AOT mscorlib loaded (the counter "AOT image loaded:
  mscorlib.dll.so" says so) and the same run with -O=-aot: cut samples ([truncated] or [stack cut])
  at most 0.5% of the request threads' hits, and within 1 point of the -O=-aot run; the handler's
  inclusive share of those hits within 2 points of the -O=-aot run; mscorlib frames are named in both.
* `calls`: the report's calls section says in one line that AOT-compiled images hide methods (and
  to use -O=-aot), `verbose` too; not with -O=-aot.
* The report's CPU section names each kind of cut with its count when there is one (an unnamed
  frame cannot be forced here; the depth cut is test_cpu_sampling's).
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
HANDLER = "AotWork:Handle"
SECONDS = "8"


def corlib_paths():
    """mscorlib.dll of the Mono under test, and the AOT image Mono would load next to it."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which(t.MONO) or t.MONO)))
    dll = os.path.join(prefix, "lib", "mono", "4.5", "mscorlib.dll")
    return dll, dll + ".so"


def aot_corlib_env(work):
    """Environment additions under which Mono loads an AOT-compiled mscorlib ({} when the system's is
    loaded already); None when none can be had."""
    dll, so = corlib_paths()
    if os.path.exists(so):
        return {}
    if not os.path.exists(dll):
        return None
    # A cache next to the compiled test programs: compiling mscorlib takes a minute or more.
    base = os.path.join(t.PROGRAMS, "aot-corlib")
    lib = os.path.join(base, "mono", "4.5")
    env = {"MONO_PATH": base}
    mine = os.path.join(lib, "mscorlib.dll")
    if os.path.exists(mine + ".so") and os.path.getsize(mine) == os.path.getsize(dll):
        return env
    os.makedirs(lib, exist_ok=True)
    shutil.copyfile(dll, mine)
    cached = glob.glob("/usr/lib/mono/aot-cache/*/mscorlib.dll.so")  # Debian's postinst output
    if cached:
        shutil.copyfile(cached[0], mine + ".so")
        return env
    e = dict(os.environ, MONO_PATH=lib)
    e.pop("LD_PRELOAD", None)
    p = t.run([t.MONO, "--aot=outfile=" + mine + ".so", "-O=all", mine], timeout=1800, env=e)
    if p.returncode != 0 or not os.path.exists(mine + ".so"):
        print(f"could not AOT-compile mscorlib: {p.stdout[-300:]} {p.stderr[-300:]}", flush=True)
        return None
    return env


def run(args, options, out, extra_env, mono_args=()):
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    env.update(extra_env)
    env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={out}")
    return t.run([t.MONO, *mono_args, t.program("aotwork"), *args], timeout=600, env=env)


def hits(path):
    """The managed frames (innermost first) of every sample_hit of the request threads (req-N), as
    `mlpd dump` names them. The main thread's hits are left out: with -O=-aot it also JIT-compiles
    the start-up path (runtime start, Main), which the AOT run does not, and on this short run that
    would move the handler's share for a reason that is not the stacks'."""
    p = t.run([t.MLPD, "dump", path], timeout=600)
    t.check(p.returncode == 0, f"{path}: mlpd dump exit {p.returncode}: {p.stderr[:200]}")
    out = []
    for m in re.finditer(r"sample_hit tid=\S+ (\S+) .*?ips=\[([^\]]*)\] frames=\[(.*)\]$", p.stdout, re.M):
        if m.group(1).startswith("req-"):
            out.append([f.strip() for f in m.group(3).split(" | ")] if m.group(3) else [])
    return out


def aot_loaded(path):
    p = t.run([t.MLPD, "dump", path], timeout=600)
    return "AOT image loaded: mscorlib.dll.so" in p.stdout


def shares(frames_list):
    n = len(frames_list)
    cut = sum(1 for f in frames_list if f and f[-1] in ("[truncated]", "[stack cut]"))
    handler = sum(1 for f in frames_list if any(HANDLER in x for x in f))
    corlib = sum(1 for f in frames_list if any(x.startswith(("System.", "Mono.")) for x in f))
    return n, 100.0 * cut / max(n, 1), 100.0 * handler / max(n, 1), corlib


def check_samples(work, env):
    results = {}
    for label, mono_args in (("aot", ()), ("noaot", ("-O=-aot",))):
        out = os.path.join(work, f"sample-{label}.mlpd")
        p = run([SECONDS, "2"], "nodefaults,sample,counter,verbose", out, env, mono_args)
        t.check(p.returncode == 0 and "requests " in p.stdout, f"{label}: exit {p.returncode}: {p.stderr[-400:]}")
        fl = hits(out)
        n, cut, handler, corlib = shares(fl)
        loaded = aot_loaded(out)
        results[label] = (n, cut, handler)
        print(f"{label}: {n} hits, {cut:.2f}% cut, handler inclusive {handler:.1f}%, {corlib} with mscorlib frames; "
              f"AOT mscorlib loaded: {loaded}", flush=True)
        samples_line = [l for l in p.stderr.splitlines() if l.startswith("mlpd: samples:")]
        if samples_line:
            print("  " + samples_line[0][:400], flush=True)
        t.check(n >= 100, f"{label}: only {n} hits of the request threads")
        t.check(loaded == (label == "aot"), f"{label}: AOT mscorlib loaded: {loaded}")
        t.check(corlib > n // 2, f"{label}: only {corlib} of {n} hits name an mscorlib frame")
        t.check(cut <= 0.5, f"{label}: {cut:.2f}% of the hits cut short (at most 0.5%)")
        rep = t.run([t.MLPD, "report", out], timeout=600)
        t.check(rep.returncode == 0, f"{label}: report exit {rep.returncode}")
    if "aot" in results and "noaot" in results:
        a, b = results["aot"], results["noaot"]
        t.check(abs(a[1] - b[1]) <= 1.0, f"cut share {a[1]:.2f}% with AOT vs {b[1]:.2f}% without (within 1 point)")
        t.check(abs(a[2] - b[2]) <= 2.0, f"handler inclusive {a[2]:.1f}% with AOT vs {b[2]:.1f}% without (within 2 points)")


def check_calls_line(work, env):
    for label, mono_args in (("aot", ()), ("noaot", ("-O=-aot",))):
        out = os.path.join(work, f"calls-{label}.mlpd")
        p = run(["0.5", "1"], "calls,verbose", out, env, mono_args)
        t.check(p.returncode == 0, f"calls {label}: exit {p.returncode}: {p.stderr[-300:]}")
        rep = t.run([t.MLPD, "report", out], timeout=600)
        t.check(rep.returncode == 0, f"calls {label}: report exit {rep.returncode}")
        line = [l for l in rep.stdout.splitlines() if "AOT-compiled images" in l]
        said = [l for l in p.stderr.splitlines() if "AOT-compiled image" in l]
        print(f"calls {label}: report: {line[:1]}; verbose: {said[:1]}", flush=True)
        if label == "aot":
            t.check(len(line) == 1 and "mscorlib.dll.so" in line[0] and "-O=-aot" in line[0],
                    f"calls with AOT mscorlib: the report's line is {line}")
            t.check(len(said) == 1 and "-O=-aot" in said[0], f"calls with AOT mscorlib: verbose said {said}")
        else:
            t.check(not line and not said, f"calls with -O=-aot: {line} {said}")
        # mprof-report still reads the file.
        mp = t.run([t.MPROF_REPORT, out], timeout=600)
        t.check(mp.returncode == 0, f"calls {label}: mprof-report exit {mp.returncode}")


def main():
    work = tempfile.mkdtemp(prefix="mlpd-aot-")
    env = aot_corlib_env(work)
    if env is None:
        print("no AOT-compiled mscorlib can be had here: skipped", flush=True)
        sys.exit(77)
    try:
        check_samples(work, env)
        check_calls_line(work, env)
    finally:
        if not t.failures:
            shutil.rmtree(work, ignore_errors=True)
    t.finish("agent_aot")


if __name__ == "__main__":
    main()
