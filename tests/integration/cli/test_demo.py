#!/usr/bin/env python3
"""scripts/demo.sh, the README's main command: exits 0 when everything worked (it once exited 141, `head`
closing a pipe under `pipefail`), and prints each step's result. Reuses this build directory
(argv[1]; nothing is rebuilt when it is up to date) and installs into a scratch prefix."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mlpdtest as t  # noqa: E402


def main():
    build = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, MLPD_DEMO_BUILD=build, MLPD_DEMO_OUT=out)
        env.pop("LD_PRELOAD", None)
        env.pop("MLPD_OPTIONS", None)
        p = subprocess.run(["bash", os.path.join(os.environ["MLPD_SOURCE"], "scripts", "demo.sh")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=280)
        text = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        t.check(p.returncode == 0, f"demo.sh exited {p.returncode}; stderr: {err[-600:]}")
        for want in ("== mlpd verify --strict", "== mlpd verify --json", "\"ok\":true",
                     "== Mono's mprof-report on our file ==", "Allocation summary", "Method call summary",
                     "== mlpd dump: the program's own methods and classes =="):
            t.check(want in text, f"demo.sh output lacks {want!r}:\n{text[-1500:]}")
        dump = text.split("== mlpd dump: the program's own methods and classes ==", 1)[-1].split("\n== ", 1)[0]
        lines = [l for l in dump.splitlines() if "SampleApp" in l]
        t.check(1 <= len(lines) <= 8, f"demo.sh: expected 1 to 8 dump lines naming SampleApp, got {len(lines)}")
        t.check("== mlpd report: where the time and the memory went ==" in text and "SampleApp" in
                text.split("== mlpd report:", 1)[-1], "demo.sh: the report of the sample program is missing")
        graph = os.path.join(out, "sample-flamegraph.html")
        t.check(os.path.isfile(graph) and os.path.getsize(graph) > 1000 and
                "SampleApp" in open(graph, encoding="utf-8", errors="replace").read(),
                "demo.sh: no flame graph naming SampleApp in the install prefix")
        t.check("mlpd:" not in err, f"demo.sh: the agent complained: {err[-600:]}")
    t.finish("scripts/demo.sh")


if __name__ == "__main__":
    main()
