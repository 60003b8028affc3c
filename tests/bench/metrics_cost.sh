#!/usr/bin/env bash
# What `metrics=PORT` costs (docs/fleet.md): a CPU-bound Mono program of fixed work
# (tests/bench/programs/workload.cs, ITER iterations) runs under `nodefaults,sample` and under
# `nodefaults,sample,metrics=0` with a scraper fetching /metrics every second for the whole run (as a
# Prometheus with a 1 s scrape interval does), alternating the two, ROUNDS times. Prints the median CPU
# seconds (user+sys of the program) and wall seconds of each and the difference; and the scrapes made.
# Usage: tests/bench/metrics_cost.sh [BUILD_DIR] [ROUNDS] [ITER]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-7}"
iter="${3:-3000}"
agent="$build/agent/libmlpd.so"
[ -f "$agent" ] || { echo "metrics_cost: $agent not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -debug- -optimize+ -out:"$work/workload.exe" "$here/programs/workload.cs" >/dev/null

# Runs the program (with a scraper when SCRAPE=1) and prints "CPU WALL SCRAPES".
measure() {
  local opts=$1 scrape=$2
  rm -f "$work/out.mlpd" "$work/err"
  LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$work/out.mlpd" \
    python3 "$here/cputime.py" "$work/t" mono "$work/workload.exe" "$iter" 2>"$work/err" &
  local runner=$! scrapes=0
  if [ "$scrape" = 1 ]; then
    local port=""
    for _ in $(seq 200); do
      port=$(sed -n 's|^mlpd: metrics at http://127\.0\.0\.1:\([0-9]*\)/metrics$|\1|p' "$work/err" 2>/dev/null || true)
      [ -n "$port" ] && break
      sleep 0.01
    done
    scrapes=$(python3 - "$port" "$runner" <<'PY'
import os, sys, time, urllib.request
port, pid, n = sys.argv[1], int(sys.argv[2]), 0
while True:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            r.read()
            n += 1
    except OSError:
        pass
    time.sleep(1)
print(n)
PY
)
  fi
  wait "$runner"
  awk -v s="$scrapes" '{printf "%.3f %.3f %d\n", $1, $2, s}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$work/sample"; : >"$work/metrics"
for r in $(seq "$rounds"); do
  measure nodefaults,sample 0 >>"$work/sample"
  measure nodefaults,sample,metrics=0 1 >>"$work/metrics"
  echo "round $r: sample $(tail -1 "$work/sample")  sample+metrics $(tail -1 "$work/metrics")" >&2
done
cs=$(cut -d' ' -f1 "$work/sample" | median); ws=$(cut -d' ' -f2 "$work/sample" | median)
cm=$(cut -d' ' -f1 "$work/metrics" | median); wm=$(cut -d' ' -f2 "$work/metrics" | median)
sm=$(cut -d' ' -f3 "$work/metrics" | median)
echo "workload $iter, $rounds rounds, medians:"
echo "  nodefaults,sample            CPU $cs s  wall $ws s"
echo "  nodefaults,sample,metrics=0  CPU $cm s  wall $wm s  ($sm scrapes, one a second)"
awk -v a="$cs" -v b="$cm" -v c="$ws" -v d="$wm" 'BEGIN {printf "  metrics: CPU %+.3f s (%+.2f%%), wall %+.3f s (%+.2f%%)\n", b-a, (b-a)/a*100, d-c, (d-c)/c*100}'
