#!/usr/bin/env bash
# What `push=URL` costs (docs/fleet.md): a CPU-bound Mono program of fixed work
# (tests/bench/programs/workload.cs, ITER iterations) runs under `nodefaults,sample` and under
# `nodefaults,sample,push=URL,push-interval=1` (a push every second: 15 times the default rate) to a
# loopback Pyroscope-style receiver (tests/integration/lib/pyroscope_receiver.py), alternating the
# two, ROUNDS times. Prints the median CPU seconds (user+sys of the program) and wall seconds of each
# and the differences, and the helper's own figures for push (the agent's verbose summary).
# Usage: tests/bench/push_cost.sh [BUILD_DIR] [ROUNDS] [ITER]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-7}"
iter="${3:-3000}"
agent="$build/agent/libmlpd.so"
[ -f "$agent" ] || { echo "push_cost: $agent not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill "$receiver" 2>/dev/null || true; rm -rf "$work"' EXIT
mcs -debug- -optimize+ -out:"$work/workload.exe" "$here/programs/workload.cs" >/dev/null
python3 - "$here/../integration/lib" "$work/port" <<'PY' &
import sys, time
sys.path.insert(0, sys.argv[1])
import pyroscope_receiver as pr
r = pr.Receiver()
open(sys.argv[2], "w").write(str(r.port))
while True:
    time.sleep(60)
PY
receiver=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$work/port")"

# Runs the program; prints "CPU WALL".
measure() {
  rm -f "$work/out.mlpd"
  LD_PRELOAD="$agent" MLPD_OPTIONS="$1,output=$work/out.mlpd" \
    python3 "$here/cputime.py" "$work/t" mono "$work/workload.exe" "$iter" >/dev/null 2>>"$work/err"
  awk '{printf "%.3f %.3f\n", $1, $2}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$work/sample"; : >"$work/push"; : >"$work/err"
for r in $(seq "$rounds"); do
  measure nodefaults,sample >>"$work/sample"
  measure "nodefaults,sample,push=$url,push-interval=1,verbose" >>"$work/push"
done
cs=$(cut -d' ' -f1 "$work/sample" | median); ws=$(cut -d' ' -f2 "$work/sample" | median)
cp=$(cut -d' ' -f1 "$work/push" | median); wp=$(cut -d' ' -f2 "$work/push" | median)
echo "rounds $rounds, workload $iter iterations"
echo "sample alone:      CPU $cs s, wall $ws s (each round: $(cut -d' ' -f1 "$work/sample" | tr '\n' ' '))"
echo "sample + push=1s:  CPU $cp s, wall $wp s (each round: $(cut -d' ' -f1 "$work/push" | tr '\n' ' '))"
awk -v a="$cs" -v b="$cp" -v c="$ws" -v d="$wp" 'BEGIN {printf "difference: CPU %+.3f s (%+.1f%%), wall %+.3f s (%+.1f%%)\n", b-a, 100*(b-a)/a, d-c, 100*(d-c)/c}'
grep "mlpd: push: " "$work/err" | tail -2
