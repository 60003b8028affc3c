#!/usr/bin/env python3
"""`metrics=PORT` (docs/fleet.md) with real Mono, the real agent and a real Prometheus server.

metrics_service.exe runs until told (stdin): it collects and throws on command and prints
GC.CollectionCount(0), GC.CollectionCount(1) and its own throw count, so the test knows what the
runtime's metrics must say.
- Prometheus (Debian's `prometheus`) started here on loopback (a free port, a temporary storage
  directory) scrapes the agent every second; its HTTP API (/api/v1/query) gives our series: the target
  is up; dotnet_gc_collections_total{gc_heap_generation="gen0"|"gen1"} equal GC.CollectionCount(0) and
  (1) exactly (Mono: minor and major collections) after the program's collections; dotnet_exceptions_total
  grows by exactly the program's throws; the JIT, GC pause, process CPU and mlpd_* series (the sampling
  health with `sample`: the rate asked, 100 Hz) are there;
- mlpd_gc_pause_seconds (histogram): one pause per collection, its sum Mono's GC time within 10%, and
  Prometheus' histogram_quantile reads it;
- `promtool check metrics` passes on what the endpoint serves (HELP, TYPE, names, units, lint);
- hostile clients: 64 slow connections trickling a request, 1 MB of headers, a client that is not
  speaking HTTP: refused or timed out, while the program answers its stdin at once, a direct scrape
  works at the same time, and Prometheus' target is still up afterwards;
- bad configuration: `metrics=abc` is one line and the program runs unprofiled; a port in use is one
  line and the program runs profiled without the metrics port. In every run the program's output and
  exit status are those of an unprofiled run.
"""
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SCRIPT = ["work 2 3 25", "work 1 0 10"]  # the commands every run gets (the unprofiled run too)


class Service:
    """metrics_service.exe, under the agent when `options` is given; stdin/stdout pipes, stderr to a file."""

    def __init__(self, workdir, name, options):
        self.name = name
        self.err_path = os.path.join(workdir, name + ".stderr")
        env = dict(os.environ)
        env.pop("MLPD_OPTIONS", None)
        env.pop("LD_PRELOAD", None)
        if options is not None:
            env.update(LD_PRELOAD=AGENT, MLPD_OPTIONS=f"{options},output={os.path.join(workdir, name + '.mlpd')}")
        self.err_file = open(self.err_path, "wb")
        self.proc = subprocess.Popen([t.MONO, t.program("metrics_service")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err_file, env=env)
        self.stdout = []
        ready = self.line(30)
        t.check(ready == "ready", f"{name}: program said {ready!r} instead of ready")

    def line(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return None
        l = self.proc.stdout.readline().decode().rstrip("\n")
        self.stdout.append(l)
        return l

    def ask(self, command, timeout=10):
        self.proc.stdin.write((command + "\n").encode())
        self.proc.stdin.flush()
        return self.line(timeout)

    def stderr(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def finish(self, code):
        self.proc.stdin.write(f"exit {code}\n".encode())
        self.proc.stdin.close()
        self.stdout += self.proc.stdout.read().decode().splitlines()
        rc = self.proc.wait(timeout=60)
        self.err_file.close()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def counts(line):
    m = re.match(r"counts gen0=(\d+) gen1=(\d+) thrown=(\d+)$", line or "")
    return tuple(int(x) for x in m.groups()) if m else None


def metrics_port(svc):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        m = re.search(r"mlpd: metrics at http://127\.0\.0\.1:(\d+)/metrics", svc.stderr())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    return None


def scrape(port, timeout=10):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def parse_text(text):
    """{(name, frozenset(labels)): value} of an exposition text."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        series[(m.group(1), labels)] = float(m.group(4))
    return series


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, workdir, target_port):
        self.port = free_port()
        self.dir = os.path.join(workdir, "prometheus")
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: mlpd\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target_port}']\n")
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.dir}/data",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 60
        self.ready = False
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        self.ready = True
                        break
            except OSError:
                pass
            time.sleep(0.2)

    def query(self, expr):
        """[(labels dict, value)] of an instant query."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read().decode())
        if body.get("status") != "success":
            return []
        return [(x["metric"], float(x["value"][1])) for x in body["data"]["result"]]

    def value(self, expr):
        r = self.query(expr)
        return r[0][1] if len(r) == 1 else None

    def wait_value(self, expr, want, timeout=30):
        """The query's value once it equals `want` (or the last one seen after `timeout` s)."""
        end = time.monotonic() + timeout
        v = None
        while time.monotonic() < end:
            v = self.value(expr)
            if v is not None and (want is None or v == want):
                return v
            time.sleep(0.25)
        return v

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def unprofiled(workdir):
    svc = Service(workdir, "plain", None)
    for c in SCRIPT:
        svc.ask(c)
    rc = svc.finish(7)
    return svc.stdout, rc


def hostile_clients(port, svc, label):
    """64 slow connections, 1 MB of headers, a non-HTTP client; a scrape and the program at the same time."""
    stop = threading.Event()
    slow = []
    for _ in range(64):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            slow.append(s)
        except OSError:
            pass

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass
            stop.wait(0.5)
    trickler = threading.Thread(target=trickle)
    trickler.start()

    big = {"status": None}

    def big_headers():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
                chunk = b"X-Filler: " + b"a" * 1000 + b"\r\n"
                sent = 0
                while sent < 1024 * 1024:
                    s.sendall(chunk)
                    sent += len(chunk)
                s.sendall(b"\r\n")
                big["status"] = s.recv(64).decode("latin-1")
        except OSError as e:  # reset: refused while still sending
            big["status"] = "error " + type(e).__name__
    big_thread = threading.Thread(target=big_headers)
    big_thread.start()

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 32)
        try:
            answer = s.recv(64).decode("latin-1")
        except OSError as e:
            answer = "error " + type(e).__name__
    t.check(answer.startswith("HTTP/1.1 400 ") or answer == "" or answer.startswith("error"),
            f"{label}: a TLS client hello got {answer!r}")

    # While all of that goes on: the program answers at once, a scrape works.
    start = time.monotonic()
    line = svc.ask("work 0 1 0")
    t.check(counts(line) is not None and time.monotonic() - start < 5,
            f"{label}: the program answered {line!r} after {time.monotonic() - start:.1f} s under hostile clients")
    try:
        status, _, body = scrape(port)
        t.check(status == 200 and "dotnet_gc_collections_total" in body, f"{label}: scrape during the attack: {status}")
    except OSError as e:
        t.check(False, f"{label}: scrape during the attack failed: {e}")
    big_thread.join(60)
    t.check(big["status"] is not None and (big["status"].startswith("HTTP/1.1 431 ") or big["status"].startswith("error")
                                           or big["status"] == ""),
            f"{label}: 1 MB of headers got {big['status']!r}")
    # The slow ones are cut within the read timeout (5 s) or evicted.
    time.sleep(6.5)
    stop.set()
    trickler.join()
    alive = 0
    for s in slow:
        s.settimeout(0.5)
        try:
            d = s.recv(4096)
            alive += 0 if (d == b"" or d.startswith(b"HTTP/1.1 408")) else 1
        except socket.timeout:
            alive += 1
        except OSError:
            pass
        s.close()
    t.check(alive == 0, f"{label}: {alive} of 64 slow connections still open after the read timeout")


def with_prometheus(workdir):
    svc = Service(workdir, "scraped", "nodefaults,exception,sample,metrics=0")
    prom = None
    try:
        port = metrics_port(svc)
        if not t.check(port, f"scraped: no 'metrics at' line on stderr: {svc.stderr()!r}"):
            return
        status, ctype, body = scrape(port)
        t.check(status == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8", f"scrape: {status} {ctype}")
        path = os.path.join(workdir, "metrics.txt")
        with open(path, "w") as f:
            f.write(body)
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=body.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        t.check(p.returncode == 0 and not p.stdout.strip(),
                f"promtool check metrics: exit {p.returncode}: {p.stdout.decode()[:2000]}")

        prom = Prometheus(workdir, port)
        if not t.check(prom.ready, "prometheus did not become ready"):
            return
        t.check(prom.wait_value('up{job="mlpd"}', 1.0) == 1.0, "prometheus: target not up")
        base_exc = prom.wait_value("dotnet_exceptions_total", None)
        t.check(base_exc is not None, "prometheus: no dotnet_exceptions_total")
        results = [counts(svc.ask(c)) for c in SCRIPT]
        t.check(all(results), f"program counts: {results}")
        gen0, gen1, thrown = results[-1]
        g0 = prom.wait_value('dotnet_gc_collections_total{gc_heap_generation="gen0"}', float(gen0))
        g1 = prom.wait_value('dotnet_gc_collections_total{gc_heap_generation="gen1"}', float(gen1))
        t.check(g0 == gen0, f"prometheus: gen0 collections {g0}, GC.CollectionCount(0) {gen0}")
        t.check(g1 == gen1, f"prometheus: gen1 collections {g1}, GC.CollectionCount(1) {gen1}")
        exc = prom.wait_value("dotnet_exceptions_total", (base_exc or 0) + thrown)
        t.check(base_exc is not None and exc == base_exc + thrown,
                f"prometheus: exceptions {exc} - {base_exc} at start, the program threw {thrown}")
        # Every collection stopped the world once (forced collections are not concurrent): the pause
        # histogram's count is the collections' (no other stop in this idle program), its sum Mono's
        # own GC time within 10%.
        pauses = prom.wait_value("mlpd_gc_pause_seconds_count", float(gen0 + gen1))
        t.check(pauses == gen0 + gen1, f"prometheus: {pauses} GC pauses, {gen0 + gen1} collections")
        inf = prom.value('mlpd_gc_pause_seconds_bucket{le="+Inf"}')
        t.check(inf == pauses, f"prometheus: +Inf bucket {inf}, count {pauses}")
        psum, gctime = prom.value("mlpd_gc_pause_seconds_sum"), prom.value("dotnet_gc_pause_time_seconds_total")
        t.check(psum and gctime and abs(psum - gctime) <= 0.1 * gctime + 0.001,
                f"prometheus: pauses sum {psum} s, Mono's GC time {gctime} s")
        q = prom.value("histogram_quantile(0.5, mlpd_gc_pause_seconds_bucket)")
        t.check(q is not None and 0 < q <= 1, f"prometheus: median GC pause {q}")
        for expr in ("dotnet_jit_compiled_methods_total", "dotnet_gc_pause_time_seconds_total",
                     "process_cpu_seconds_total", "process_resident_memory_bytes", 'mlpd_info{runtime="mono"}',
                     "mlpd_written_bytes_total", "mlpd_helper_cpu_seconds_total"):
            v = prom.value(expr)
            t.check(v is not None and v > 0, f"prometheus: {expr} = {v}")
        t.check(prom.value("mlpd_events_dropped_total") == 0, "prometheus: events dropped")
        t.check(prom.value("mlpd_sample_rate_asked_hertz") == 100, "prometheus: sample rate asked is not 100")
        for expr in ("mlpd_samples_taken_total", "mlpd_samples_written_total", "mlpd_sample_rate_delivered_hertz",
                     'mlpd_samples_dropped_total{reason="pool_full"}'):
            t.check(prom.value(expr) is not None, f"prometheus: no {expr}")
        print(f"prometheus: gen0 {g0} gen1 {g1} (program {gen0} {gen1}), exceptions +{exc - base_exc if exc else None} "
              f"(program {thrown}), jit {prom.value('dotnet_jit_compiled_methods_total')}, "
              f"pause {prom.value('dotnet_gc_pause_time_seconds_total')} s", flush=True)

        hostile_clients(port, svc, "hostile")
        time.sleep(2.5)
        t.check(prom.value('up{job="mlpd"}') == 1.0, "prometheus: target down after the hostile clients")
        refused = prom.wait_value("mlpd_metrics_refused_total >= 60", None, timeout=10)
        t.check(refused is not None, "prometheus: mlpd_metrics_refused_total did not count the hostile clients")
        svc.ask(SCRIPT[0])  # keep the stdout comparable: the plain run does not see "work 0 1 0"
    finally:
        if prom:
            prom.stop()
        rc = svc.finish(7) if svc.proc.poll() is None else svc.proc.returncode
    plain_out, plain_rc = unprofiled(workdir)
    # The outputs differ only in the counts (the profiled run had more commands): compare their shape.
    shape = [re.sub(r"\d+", "N", l) for l in svc.stdout if l != "" ]
    t.check(rc == plain_rc == 7, f"exit status {rc}, unprofiled {plain_rc}")
    t.check(shape[0] == "ready" and shape[-1] == "bye" and all(l.startswith("counts") for l in shape[1:-1]),
            f"program output: {svc.stdout}")
    errs = [l for l in svc.stderr().splitlines() if l.strip()]
    t.check(len(errs) == 1 and errs[0].startswith("mlpd: metrics at "), f"stderr: {errs}")


def bad_config(workdir):
    plain_out, plain_rc = unprofiled(workdir)
    svc = Service(workdir, "bad", "metrics=abc")
    for c in SCRIPT:
        svc.ask(c)
    rc = svc.finish(7)
    errs = [l for l in svc.stderr().splitlines() if l.strip()]
    t.check(len(errs) == 1 and "metrics=abc" in errs[0] and "profiling is off" in errs[0], f"metrics=abc: stderr {errs}")
    t.check(svc.stdout == plain_out and rc == plain_rc, f"metrics=abc: output {svc.stdout} rc {rc}")
    t.check(not os.path.exists(os.path.join(workdir, "bad.mlpd")), "metrics=abc: a file was written")

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        svc = Service(workdir, "busy", f"metrics={port}")
        for c in SCRIPT:
            svc.ask(c)
        rc = svc.finish(7)
    errs = [l for l in svc.stderr().splitlines() if l.strip()]
    want = f"mlpd: metrics: cannot listen on 127.0.0.1:{port}: Address already in use; profiling goes on without the metrics port"
    t.check(errs == [want], f"busy port: stderr {errs}")
    t.check(svc.stdout == plain_out and rc == plain_rc, f"busy port: output {svc.stdout} rc {rc}")
    rc, v, vp = t.verify_json(os.path.join(workdir, "busy.mlpd"), strict=True)
    t.check(rc == 0, f"busy port: the file does not verify: {vp.stdout} {vp.stderr}")


def main():
    if not os.path.exists(PROMETHEUS) or not os.path.exists(PROMTOOL):
        print("prometheus/promtool not installed (scripts/install-deps.sh installs them)")
        sys.exit(1)
    workdir = tempfile.mkdtemp(prefix="mlpd-metrics-")
    try:
        with_prometheus(workdir)
        bad_config(workdir)
    finally:
        if not t.failures:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept {workdir}")
    t.finish("agent_metrics")


if __name__ == "__main__":
    main()
