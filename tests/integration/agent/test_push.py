#!/usr/bin/env python3
"""`push=URL` (docs/fleet.md): the agent pushes each interval's CPU samples to a Pyroscope-style server.

A loopback receiver (tests/integration/lib/pyroscope_receiver.py) speaks Pyroscope's HTTP ingest
protocol; each pushed profile is decoded by the real decoder, `go tool pprof -raw`. cputhreads.exe
spins a thread for a known CPU time, under `nodefaults,sample,push=...,push-interval=1`:
- a receiver that takes everything: one request per interval (at least 3), POST /ingest with
  format=pprof and from <= until; every profile decodes; the sum of the samples over the pushes equals
  the samples of the same run's file (`mlpd report --json`) within 1%; labels service_name=cputhreads,
  pid, runtime=mono and push-labels' (quoted list); the push-token-file's token as a Bearer header; the
  spinning method is the hottest function of the pushes together;
- allocheavy.exe under `alloc` and under `alloc-sample=64k`: the allocation profiles pushed
  (alloc_objects, alloc_space) sum to the file's allocated objects and bytes exactly (estimates
  weighed as the reader weighs them);
- a receiver that is down (nothing listening), slow (10 s per request) or answering 500: the program's
  output and exit status are those of a run without push, its exit (from its last line to its end)
  within 1.5 s of that run's (the agent waits at most 1 s for the last push), its peak memory within 16 MiB (libcurl and its TLS library are about 9 MiB of it); the failures are
  counted (the exit's verbose summary: failed, dropped when the queue was full or at exit), and said
  once on stderr (one line), the metrics endpoint serves mlpd_push_* (500: mlpd_push_failed_total > 0,
  mlpd_push_last_status 500);
- bad configuration (push=ftp://..., a token file that cannot be read, push-interval=0, push-labels=
  without push=): one line, the program runs unprofiled with its output and exit status unchanged.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
TIME = "/usr/bin/time"
SPIN_MS = "3000"


def run(work, name, options, spin=SPIN_MS, metrics_at=None):
    """cputhreads.exe SPIN under the agent with `options` (None: unprofiled). Returns (rc, stdout,
    stderr, wall seconds, peak RSS KiB, metrics text or None, exit seconds: from the program's last
    line to the process's end, the part of the run a push could hold)."""
    env = dict(os.environ)
    env.pop("MLPD_OPTIONS", None)
    env.pop("LD_PRELOAD", None)
    if options is not None:
        env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={os.path.join(work, name + '.mlpd')}")
    rss_file = os.path.join(work, name + ".rss")
    start = time.monotonic()
    p = subprocess.Popen([TIME, "-f", "%M", "-o", rss_file, t.MONO, t.program("cputhreads"), spin], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err, last_line = [], [], [None]

    def read_out():
        for line in p.stdout:
            out.append(line)
            last_line[0] = time.monotonic()

    def read_err():
        for line in p.stderr:
            err.append(line)

    threads = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for th in threads:
        th.start()
    metrics = None
    if metrics_at is not None:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            for line in list(err):
                m = re.search(rb"metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
                if m:
                    port = int(m.group(1))
            time.sleep(0.05)
        time.sleep(max(0, metrics_at - (time.monotonic() - start)))
        if t.check(port is not None, f"{name}: no metrics line: {err!r}"):
            try:
                metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            except OSError as e:
                t.check(False, f"{name}: scrape failed: {e}")
    rc = p.wait(timeout=180)
    end = time.monotonic()
    for th in threads:
        th.join()
    with open(rss_file) as f:
        rss = int(f.read().split()[-1])
    exit_s = end - last_line[0] if last_line[0] else None
    return (rc, b"".join(out).decode(), b"".join(err).decode("utf-8", "replace"), end - start, rss, metrics, exit_s)


def file_samples(path):
    p = t.run([t.MLPD, "report", "--json", path])
    return json.loads(p.stdout)["samples"]["total"] if p.returncode == 0 else None


def metric(text, name, labels=""):
    m = re.search(r"^" + re.escape(name) + re.escape(labels) + r" (\S+)$", text or "", re.M)
    return float(m.group(1)) if m else None


def summary(stderr):
    m = re.search(r"mlpd: push: (\d+) profiles sent \((\d+) samples, (\d+) bytes\), (\d+) failed, (\d+) dropped "
                  r"\(queue full\), (\d+) dropped at exit", stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def main():
    if not pr.GO:
        print("go (golang-go) not found: scripts/install-deps.sh installs it")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as work:
        rc0, out0, err0, wall0, rss0, _, _ = run(work, "plain", None)
        spin_line = out0.strip()
        t.check(rc0 == 0 and spin_line.startswith("busy "), f"unprofiled run: rc {rc0} {out0!r} {err0[-300:]}")
        _, _, _, wall_s, rss_s, _, _ = run(work, "sample", "nodefaults,sample")
        print(f"unprofiled: {wall0:.2f} s, {rss0} KiB; sample alone: {wall_s:.2f} s, {rss_s} KiB", flush=True)

        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write("agent-token-1\n")

        # A receiver that takes everything.
        r = pr.Receiver()
        rc, out, err, wall, rss, _, _ = run(
            work, "ok", f"nodefaults,sample,push={r.url},push-interval=1,push-labels='env=test,dc=eu-1',"
                        f"push-token-file={token},verbose")
        time.sleep(0.5)
        reqs = r.taken()
        r.stop()
        t.check(rc == rc0 and out.strip().startswith("busy "), f"ok: rc {rc} out {out!r}")
        total = file_samples(os.path.join(work, "ok.mlpd"))
        pushed, hot = 0, {}
        t.check(len(reqs) >= 3, f"ok: {len(reqs)} pushes in a {SPIN_MS} ms run with push-interval=1")
        for i, q in enumerate(reqs):
            service, labels = q.name_labels()
            t.check(service == "cputhreads", f"ok: service {service!r}")
            want = {"env": "test", "dc": "eu-1", "runtime": "mono"}
            t.check(all(labels.get(k) == v for k, v in want.items()) and re.fullmatch(r"\d+", labels.get("pid", "")),
                    f"ok: labels {labels}")
            t.check(q.path == "/ingest" and q.query.get("format") == "pprof", f"ok: {q.path} {q.query}")
            frm, until = int(q.query.get("from", "0")), int(q.query.get("until", "0"))
            t.check(0 < frm < until, f"ok: from {frm} until {until}")
            t.check(q.headers.get("authorization") == "Bearer agent-token-1", f"ok: auth {q.headers.get('authorization')!r}")
            rc_d, sums, text = pr.decode(q.profile or b"", work, f"ok{i}")
            if not t.check(rc_d == 0 and "samples" in sums, f"ok: push {i} does not decode: {text[-300:]}"):
                continue
            pushed += sums["samples"]
        # The hottest function over all pushes (go tool pprof -top of each).
        for i, q in enumerate(reqs):
            path = os.path.join(work, f"top{i}.pb.gz")
            with open(path, "wb") as f:
                f.write(q.profile or b"")
            env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"), PPROF_TMPDIR=work)
            p = t.run([pr.GO, "tool", "pprof", "-top", "-symbolize=none", "-nodecount=1000", path], env=env, timeout=180)
            rows = False
            for line in p.stdout.splitlines():
                if line.strip().startswith("flat"):
                    rows = True
                    continue
                parts = line.split(None, 5)
                if rows and len(parts) == 6:
                    hot[parts[5]] = hot.get(parts[5], 0) + int(float(parts[0]))
        top = max(hot, key=hot.get) if hot else None
        t.check(top is not None and "CpuThreads" in top, f"ok: hottest function {top!r} ({sorted(hot.items(), key=lambda x: -x[1])[:3]})")
        t.check(total and abs(pushed - total) <= 0.01 * total,
                f"ok: {pushed} samples pushed, {total} in the file")
        s = summary(err)
        t.check(s is not None and s[0] == len(reqs) and s[1] == pushed and s[3] == 0,
                f"ok: summary {s} for {len(reqs)} requests, {pushed} samples")
        print(f"ok: {len(reqs)} pushes, {pushed} samples pushed, {total} in the file; {wall:.2f} s, {rss} KiB", flush=True)

        # Allocations: every one (alloc) and sampled (alloc-sample=64k, estimates): the objects and bytes
        # pushed over the run equal the file's, as `mlpd report` weighs them.
        for opts in ("alloc", "alloc-sample=64k"):
            r = pr.Receiver()
            env = dict(os.environ, LD_PRELOAD=AGENT,
                       MLPD_OPTIONS=f"nodefaults,{opts},push={r.url},push-interval=1,output={work}/allocs.mlpd")
            p = t.run([t.MONO, t.program("allocheavy"), "300"], env=env, timeout=180)
            time.sleep(0.5)
            reqs = r.taken()
            r.stop()
            objects = space = 0
            for i, q in enumerate(reqs):
                rc_d, sums, text = pr.decode(q.profile or b"", work, f"alloc{i}")
                t.check(rc_d == 0 and "alloc_objects" in sums and "alloc_space" in sums,
                        f"{opts}: push {i} is not an allocation profile: {sums} {text[-200:]}")
                objects += sums.get("alloc_objects", 0)
                space += sums.get("alloc_space", 0)
            rep = t.run([t.MLPD, "report", "--json", f"{work}/allocs.mlpd"])
            a = json.loads(rep.stdout)["alloc"] if rep.returncode == 0 else {}
            t.check(p.returncode == 0 and len(reqs) >= 1 and (objects, space) == (a.get("objects"), a.get("bytes")),
                    f"{opts}: rc {p.returncode}, {len(reqs)} pushes, pushed {objects} objects {space} bytes, "
                    f"file {a.get('objects')} {a.get('bytes')}")
            print(f"{opts}: {len(reqs)} pushes, {objects} objects and {space} bytes pushed, the file "
                  f"{a.get('objects')} and {a.get('bytes')}", flush=True)

        # Down, slow, 500: the program as without push, failures counted.
        down = pr.Receiver()
        down_url = down.url
        down.stop()
        cases = [("down", None, down_url, "6000"), ("slow", pr.Receiver(mode="slow", delay=10), None, "6000"),
                 ("refusing", pr.Receiver(mode="status", status=500), None, "6000")]
        for name, recv, url, spin in cases:
            url = url or recv.url
            rc_b, out_b, _, wall_b, rss_b, _, exit_b = run(work, name + "-base", "nodefaults,sample", spin=spin)
            rc, out, err, wall, rss, metrics, exit_p = run(
                work, name, f"nodefaults,sample,push={url},push-interval=1,verbose,metrics=0", spin=spin, metrics_at=4.5)
            n = len(recv.taken()) if recv else 0
            t.check(rc == rc_b == 0 and out.startswith("busy ") and out_b.startswith("busy "),
                    f"{name}: rc {rc} (without push {rc_b}), out {out!r}")
            # The exit (from the program's last line to the process's end) is where a push could
            # hold the program: at most 1 s more, here with 0.5 s for the machine's noise. The whole
            # run only loosely (the machine is shared: runs of the same command vary by seconds).
            t.check(exit_p is not None and exit_b is not None and exit_p <= exit_b + 1.5,
                    f"{name}: exit took {exit_p} s with push, {exit_b} s without")
            t.check(wall <= wall_b * 1.5 + 2, f"{name}: {wall:.2f} s with push, {wall_b:.2f} s without")
            t.check(rss <= rss_b + 16 * 1024, f"{name}: peak RSS {rss} KiB with push, {rss_b} KiB without")
            s = summary(err)
            fail_lines = [l for l in err.splitlines() if l.startswith("mlpd: push: ") and
                          ("dropped" in l and "no retries" in l or "slower than they come" in l)]
            if name == "slow":
                t.check(s is not None and s[0] == 0 and s[4] + s[5] > 0, f"slow: summary {s}")
                t.check(n >= 1, f"slow: {n} requests reached the receiver")
                t.check(metric(metrics, "mlpd_push_queued") is not None, f"slow: no mlpd_push_queued in {metrics!r:.200}")
            else:
                t.check(s is not None and s[0] == 0 and s[3] >= 3, f"{name}: summary {s}")
                t.check(len(fail_lines) == 1, f"{name}: {len(fail_lines)} failure lines: {fail_lines}")
                t.check((metric(metrics, "mlpd_push_failed_total") or 0) >= 2,
                        f"{name}: mlpd_push_failed_total {metric(metrics, 'mlpd_push_failed_total')}")
            if name == "refusing":
                # Each request reached it and failed; the last may have been aborted by the exit (the
                # server failed last: it gets none of the exit's time), counted dropped at exit.
                t.check(s is not None and s[3] <= n <= s[3] + s[5], f"refusing: {n} requests, summary {s}")
                t.check(metric(metrics, "mlpd_push_last_status") == 500,
                        f"refusing: mlpd_push_last_status {metric(metrics, 'mlpd_push_last_status')}")
                t.check(any("500" in l for l in fail_lines), f"refusing: {fail_lines}")
            print(f"{name}: {wall:.2f} s ({wall_b:.2f} s without push), exit {exit_p:.2f} s ({exit_b:.2f} s), "
                  f"{rss} KiB ({rss_b}), {n} requests, summary {s}",
                  flush=True)
            if recv:
                recv.stop()

        # Bad configuration: one line, the program runs unprofiled.
        bad = [("push=ftp://host", "push=ftp://host"), (f"push=http://127.0.0.1:1,push-token-file={work}/none", "token file"),
               ("push=http://127.0.0.1:1,push-interval=0", "push-interval=0"), ("push-labels='a=b'", "without push=")]
        for opts, what in bad:
            rc, out, err, _, _, _, _ = run(work, "bad", "nodefaults,sample," + opts)
            lines = [l for l in err.splitlines() if l.strip()]
            t.check(rc == rc0 and out.startswith("busy ") and len(lines) == 1 and what in lines[0] and "profiling is off" in lines[0],
                    f"bad {opts}: rc {rc} out {out!r} err {lines}")
    t.finish("agent_push")


if __name__ == "__main__":
    main()
