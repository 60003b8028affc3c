"""A loopback stand-in for a Pyroscope server's HTTP ingest API (docs/fleet.md), for the push tests.

`POST /ingest?name=SERVICE{k=v,...}&from=UNIX&until=UNIX&format=pprof[&spyName=...]` with a
multipart/form-data body whose "profile" part is a (gzipped) pprof, optionally with a
"sample_type_config" part (JSON), or the pprof as the whole body: what Grafana Pyroscope's /ingest
takes (pkg/og/convert/pprof in its source: a multipart form, else the raw body). Every request is
recorded (query, headers, the profile's bytes, when it came); the answer is 200, or what `mode` says:
  "ok"       200
  "status"   `status` (e.g. 500) with a short body
  "slow"     waits `delay` seconds, then 200 (a slow server)
Profiles are decoded by the real decoder, `go tool pprof -raw` (Debian's golang-go): decode() gives
the sample types and the sum of each value over the samples.
"""
import email.parser
import email.policy
import http.server
import os
import re
import shutil
import socketserver
import subprocess
import threading
import time
import urllib.parse

GO = shutil.which("go")


class Request:
    def __init__(self, path, query, headers, profile, config, raw_len, at):
        self.path = path
        self.query = query  # {name: value}, each given once
        self.headers = headers  # {lower-case name: value}
        self.profile = profile  # bytes of the pprof (None when the body had none)
        self.config = config  # the sample_type_config part (bytes) or None
        self.raw_len = raw_len
        self.at = at

    def name_labels(self):
        """(service, {label: value}) from name=SERVICE{k=v,...}."""
        m = re.fullmatch(r"([^{]*)(?:\{(.*)\})?", self.query.get("name", ""))
        service, inner = m.group(1), m.group(2) or ""
        labels = {}
        for kv in filter(None, inner.split(",")):
            k, _, v = kv.partition("=")
            labels[k] = v
        return service, labels


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Receiver:
    def __init__(self, mode="ok", status=500, delay=10.0):
        self.mode, self.status, self.delay = mode, status, delay
        self.requests = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
                headers = {k.lower(): v for k, v in self.headers.items()}
                profile, config = None, None
                ctype = headers.get("content-type", "")
                if ctype.startswith("multipart/form-data"):
                    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
                    for part in msg.iter_parts():
                        name = part.get_param("name", header="content-disposition")
                        if name == "profile":
                            profile = part.get_payload(decode=True)
                        elif name == "sample_type_config":
                            config = part.get_payload(decode=True)
                elif body:
                    profile = body
                with receiver.lock:
                    receiver.requests.append(Request(url.path, query, headers, profile, config, len(body),
                                                     time.monotonic()))
                if receiver.mode == "slow":
                    time.sleep(receiver.delay)
                code = receiver.status if receiver.mode == "status" else 200
                answer = b"" if code == 200 else b"ingestion refused: the test says so\n"
                try:
                    self.send_response(code)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the client gave up (a slow server's timeout)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def taken(self):
        with self.lock:
            return list(self.requests)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def decode(profile_bytes, work, tag="p"):
    """Decodes a pprof with `go tool pprof -raw`: (rc, {sample type: sum of its values}, text)."""
    path = os.path.join(work, f"{tag}-{time.monotonic_ns()}.pb.gz")
    with open(path, "wb") as f:
        f.write(profile_bytes)
    env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"), PPROF_TMPDIR=work,
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    p = subprocess.run([GO, "tool", "pprof", "-raw", "-symbolize=none", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=180)
    text = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        return p.returncode, {}, p.stderr.decode("utf-8", "replace")
    # -raw: "Samples:" then a header line of the sample types ("samples/count" or
    # "alloc_objects/count alloc_space/bytes"), then one line per sample: "VALUES...: LOCATION IDS".
    lines = text.splitlines()
    sums, types = {}, []
    i = 0
    while i < len(lines) and lines[i].strip() != "Samples:":
        i += 1
    if i + 1 < len(lines):
        types = [t.split("/")[0] for t in lines[i + 1].split()]
        sums = {t: 0 for t in types}
        for line in lines[i + 2:]:
            if not line.strip() or line.strip().startswith(("Locations", "Mappings")):
                break
            if ":" not in line:
                continue  # a label line ("thread:[...]") under its sample
            values = line.split(":", 1)[0].split()
            if len(values) != len(types) or not all(re.fullmatch(r"-?\d+", v) for v in values):
                continue
            for t, v in zip(types, values):
                sums[t] += int(v)
    return 0, sums, text
