#!/usr/bin/env python3
"""The HTML flame graph in a real browser (Debian's chromium, headless): for sample.exe profiled by
our agent, the page renders frames, the hot frame (SampleProgram:Spin) is on the page and is the
widest frame at its depth, and searching for it (the page's #search= address) highlights it and
reports its share. A screenshot is kept as flamegraph.png next to this test's output."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mlpdtest import MLPD, MONO, check, chromium, finish, program, run  # noqa: E402

AGENT = os.environ.get("MLPD_AGENT", "libmlpd.so")
WORK = os.path.join(os.getcwd(), "flamegraph-work")
def main():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "sample.mlpd")
    env = dict(os.environ, LD_PRELOAD=AGENT, MLPD_OPTIONS=f"sample=1000,output={path}")
    p = run([MONO, program("sample")], env=env)
    check(p.returncode == 0, f"sample.exe under the agent: exit {p.returncode}")
    html = os.path.join(WORK, "sample.html")
    p = run([MLPD, "export", "-o", html, path])
    check(p.returncode == 0, f"export html: exit {p.returncode}: {p.stderr[:300]}")
    page = open(html, encoding="utf-8").read()
    check("<script src" not in page and "http://" not in page and "https://" not in page,
          "the page refers to something outside itself")
    url = "file://" + html

    dom = chromium(["--window-size=1400,800", "--dump-dom", url])
    check(dom.returncode == 0, f"chromium --dump-dom: exit {dom.returncode}: {dom.stderr[-500:]}")
    frames = re.findall(r'<div class="f[^"]*"[^>]*>([^<]*)</div>', dom.stdout)
    check(len(frames) >= 3, f"the page rendered {len(frames)} frames")
    check(any("SampleProgram:Spin" in f for f in frames), f"the hot frame is not on the page: {frames[:10]}")
    check(not re.search(r'class="f match"', dom.stdout), "frames highlighted without a search")
    # The hot frame is the widest of its row.
    boxes = re.findall(r'<div class="f[^"]*" data-i="\d+" style="left: ([\d.]+)px; width: ([\d.]+)px; '
                       r'top: ([\d.]+)px;[^"]*">([^<]*)</div>', dom.stdout)
    spin = [b for b in boxes if "SampleProgram:Spin" in b[3]]
    if check(spin, f"no box for the hot frame among {len(boxes)}"):
        row = [b for b in boxes if b[2] == spin[0][2]]
        widest = max(row, key=lambda b: float(b[1]))
        check(widest is spin[0] or float(widest[1]) == float(spin[0][1]),
              f"the widest frame of the hot frame's row is {widest[3]!r}, not Spin")

    dom = chromium(["--window-size=1400,800", "--dump-dom", url + "#search=SampleProgram:Spin"])
    matches = re.findall(r'<div class="f match"[^>]*>([^<]*)</div>', dom.stdout)
    check(matches and all("SampleProgram:Spin" in m for m in matches if m),
          f"search did not highlight Spin: {matches[:5]}")
    m = re.search(r'<span id="matched">matched: ([^<]*)</span>', dom.stdout)
    share = re.search(r"\(([\d.]+)%\)", m.group(1)) if m else None
    check(share and float(share.group(1)) > 50, f"Spin's matched share: {m.group(1) if m else None}")

    shot = os.path.join(os.getcwd(), "flamegraph.png")
    if os.path.exists(shot):
        os.remove(shot)
    s = chromium(["--window-size=1400,700", f"--screenshot={shot}", url + "#search=Spin"])
    check(s.returncode == 0 and os.path.exists(shot) and os.path.getsize(shot) > 10000,
          f"screenshot: exit {s.returncode}, {s.stderr[-300:]}")
    print(f"screenshot: {shot}")
    finish("report_flamegraph")


if __name__ == "__main__":
    main()
