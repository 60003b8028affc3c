#!/usr/bin/env bash
# Speed and memory of `mlpd heapshots --retained` on a heapshot of over 5 million objects (issue 24),
# against `mlpd verify` of the same file: a heapshot taken by Mono's own log profiler
# (`heapshot-on-shutdown`) of bench_graph.cs (N nodes with a leaf and cross references each, plus
# chains). Runs alternate; each figure is the median of RUNS (wall and CPU seconds) and the largest peak
# RSS seen. The baseline RSS is `mlpd heapshots --retained` on a file without heapshots.
# Goals: --retained <= 3x verify's wall time; peak RSS <= 64 bytes per object above the baseline.
# Usage: tests/bench/retained_speed.sh [BUILD_DIR] [NODES] [RUNS]; FILE=path reuses a recorded file;
# BASE=path/to/an/older/mlpd measures its --retained too, in the same runs ("before").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
nodes="${2:-2500000}"
runs="${3:-3}"
mlpd="$build/reader/mlpd"
[ -x "$mlpd" ] || { echo "retained_speed: $mlpd not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
big="${FILE:-$work/graph.mlpd}"
mcs -optimize+ -out:"$work/bench_graph.exe" "$here/programs/bench_graph.cs" >/dev/null
if [ -z "${FILE:-}" ]; then
  MONO_GC_PARAMS=nursery-size=256m mono --profile=log:heapshot-on-shutdown,output="$big" "$work/bench_graph.exe" "$nodes" >/dev/null
fi
mono --profile=log:output="$work/empty.mlpd" "$work/bench_graph.exe" 10 >/dev/null
objects=$("$mlpd" heapshots --json "$big" | python3 -c 'import json,sys; print(max(json.loads(l)["objects"] for l in sys.stdin))')
echo "file: $(stat -c %s "$big") bytes, heapshot of $objects objects"

# measure NAME CMD...: appends "wall_seconds peak_rss_kb cpu_seconds" of one run to $work/NAME.
measure() {
  local name="$1"
  shift
  /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    echo "retained_speed: $* failed: $(tail -n 3 "$work/stderr")" >&2
  }
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$work/time" >>"$work/$name"
}
names="verify retained baseline"
[ -n "${BASE:-}" ] && names="verify before retained baseline"
for _ in $(seq "$runs"); do
  measure verify "$mlpd" verify "$big"
  [ -n "${BASE:-}" ] && measure before "$BASE" heapshots --max-memory=0 --retained "$big"
  measure retained "$mlpd" heapshots --max-memory=0 --retained "$big"
  measure baseline "$mlpd" heapshots --retained "$work/empty.mlpd"
done
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for name in $names; do
  wall=$(cut -d' ' -f1 "$work/$name" | median)
  cpu=$(cut -d' ' -f3 "$work/$name" | median)
  rss=$(cut -d' ' -f2 "$work/$name" | sort -n | tail -1)
  printf '%-9s wall %6.2f s  cpu %6.2f s  peak RSS %7d KiB\n' "$name" "$wall" "$cpu" "$rss"
  eval "${name}_wall=$wall ${name}_cpu=$cpu ${name}_rss=$rss"
done
python3 - "$objects" "$verify_wall" "$retained_wall" "$verify_cpu" "$retained_cpu" "$retained_rss" "$baseline_rss" <<'PY'
import sys
objects, vw, rw, vc, rc, rss, base = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"--retained / verify: wall {rw / vw:.2f}x, cpu {rc / vc:.2f}x (goal <= 3x)")
print(f"objects per second (--retained wall): {objects / rw:,.0f}")
print(f"peak RSS above the baseline: {(rss - base) * 1024 / objects:.1f} bytes per object (goal <= 64)")
PY
if [ -n "${BASE:-}" ]; then
  python3 - "$objects" "$verify_cpu" "$before_cpu" "$retained_cpu" "$before_rss" "$baseline_rss" <<'PY'
import sys
objects, vc, bc, rc, brss, base = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"before: cpu {bc / vc:.2f}x verify, {(brss - base) * 1024 / objects:.1f} bytes per object; "
      f"now {bc / rc:.2f}x less CPU than before")
PY
fi
