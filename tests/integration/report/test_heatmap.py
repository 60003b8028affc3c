#!/usr/bin/env python3
"""The heatmap (mlpd export --format heatmap, issue 16.3) in headless Chromium: spike.exe burns CPU in
Hot() from 1 s to 2 s after its start; the page's data has its hottest second there, and selecting
that second (#from=1&to=2) shows Hot() among the range's frames and in the flame graph made for it."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402

AGENT = os.environ["MLPD_AGENT"]
def main():
    with tempfile.TemporaryDirectory(prefix="mlpd-heatmap-") as workdir:
        prof = os.path.join(workdir, "spike.mlpd")
        env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=200,output={prof}")
        p = t.run([t.MONO, t.program("spike")], env=env, timeout=120)
        t.check(p.returncode == 0, f"spike failed: {p.stderr[-300:]}")
        page = os.path.join(workdir, "heat.html")
        p = t.run([t.MLPD, "export", "--format", "heatmap", "-o", page, prof])
        t.check(p.returncode == 0, f"export heatmap: {p.returncode} {p.stderr[-300:]}")
        html = open(page, encoding="utf-8").read()
        t.check("http://" not in html and "https://" not in html and "src=" not in html, "the page fetches something")
        m = re.search(r'<script id="heat" type="application/json">(.*?)</script>', html, re.S)
        data = json.loads(m.group(1)) if m else {}
        rows, grid = data.get("rows", 50), data.get("grid", [])
        per_second = [sum(grid[c * rows:(c + 1) * rows]) for c in range(data.get("cols", 0))]
        print(f"samples per second: {per_second}", flush=True)
        # The columns count from the first event; the spike is 1..2 s after the program's start,
        # which is a little later: the hottest second is 1 or 2, never 0.
        hottest = max(range(len(per_second)), key=lambda c: per_second[c]) if per_second else -1
        t.check(hottest in (1, 2), f"hottest second {hottest}, expected the spike at 1-2 s")
        url = "file://" + page
        dom = t.chromium(["--window-size=1400,900", "--dump-dom", f"{url}#from={hottest}&to={hottest + 1}"])
        t.check(dom.returncode == 0, f"chromium: exit {dom.returncode}: {dom.stderr[-300:]}")
        out = dom.stdout
        cells = re.findall(r'class="cell[^"]*" id="s\d+" data-count="(\d+)"', out)
        t.check(len(cells) == len(grid), f"rendered {len(cells)} cells, data has {len(grid)}")
        top = re.search(r'<ol id="top">(.*?)</ol>', out, re.S)
        t.check(top and "SpikeProgram:Hot" in top.group(1), f"selected range: Hot() not among its frames: {top.group(1)[:300] if top else out[-300:]}")
        srcdoc = re.search(r'<iframe id="flame"[^>]*srcdoc="([^"]*)"', out, re.S)
        t.check(srcdoc and "SpikeProgram:Hot" in srcdoc.group(1), "selected range: no flame graph with Hot()")
        t.check("Selected " in out and " samples" in out, "no selection line")
        # A range away from the spike (second 0) has no Hot().
        dom = t.chromium(["--window-size=1400,900", "--dump-dom", f"{url}#from=0&to=0.9"])
        top = re.search(r'<ol id="top">(.*?)</ol>', dom.stdout, re.S)
        t.check(top is not None and "SpikeProgram:Hot" not in top.group(1), "range 0-0.9 s shows Hot()")
        shot = os.path.join(os.getcwd(), "heatmap.png")
        t.chromium(["--window-size=1400,900", f"--screenshot={shot}", f"{url}#from={hottest}&to={hottest + 1}"])
    t.finish("report_heatmap")


if __name__ == "__main__":
    main()
