#!/usr/bin/env bash
# Whole-program overhead: each benchmark program runs plain, under Mono 6.8's log profiler and under
# the mlpd agent with the same options, alternating the three, ROUNDS times. Prints the median CPU
# time (user+sys) and wall time of each, the profilers' CPU overhead (profiled - plain) and the
# ratio of our overhead to Mono's, plus bytes per event of both files.
# Usage: tests/bench/overhead.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
[ -f "$agent" ] || { echo "overhead: $agent not built" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in bench_calls bench_alloc bench_threads; do
  mcs -optimize+ -out:"$work/$p.exe" "$here/programs/$p.cs" >/dev/null
done

# name | program | args | options
cases=(
  "calls|bench_calls|5|calls"
  "calls, 4 threads|bench_threads|2|calls"
  "alloc, no backtraces|bench_alloc|5|nodefaults,gcalloc,maxframes=0"
  "alloc, backtraces|bench_alloc|2|nodefaults,gcalloc"
  "no events (attach only)|bench_calls|1|nodefaults"
)

# measure KIND PROGRAM ARGS OPTIONS -> prints "cpu wall"
measure() {
  local kind=$1 prog=$2 args=$3 opts=$4 out="$work/out.mlpd"
  rm -f "$out"
  case $kind in
    plain) /usr/bin/time -f "%U %S %e" -o "$work/t" env -u LD_PRELOAD mono "$work/$prog.exe" $args >/dev/null ;;
    mono)  /usr/bin/time -f "%U %S %e" -o "$work/t" mono --profile=log:$opts,output="$out" "$work/$prog.exe" $args >/dev/null ;;
    mlpd)  /usr/bin/time -f "%U %S %e" -o "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$out" \
             mono "$work/$prog.exe" $args >/dev/null ;;
  esac
  awk '{printf "%.3f %.3f\n", $1 + $2, $3}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf "%-26s %9s %9s %9s | %9s %9s %9s | %7s %8s\n" "benchmark" "plain" "mono-log" "mlpd" \
  "wall" "wall" "wall" "ovh" "B/event"
printf "%-26s %9s %9s %9s | %9s %9s %9s | %7s %8s\n" "" "cpu s" "cpu s" "cpu s" "plain" "mono" "mlpd" \
  "ratio" "mono/us"
for c in "${cases[@]}"; do
  IFS='|' read -r name prog args opts <<<"$c"
  : > "$work/plain"; : > "$work/mono"; : > "$work/mlpd"
  for ((r = 0; r < rounds; r++)); do
    for kind in plain mono mlpd; do measure $kind $prog "$args" "$opts" >> "$work/$kind"; done
  done
  # bytes per event of each profiler's file (one more run each, outside the timing)
  mono --profile=log:$opts,output="$work/m.mlpd" "$work/$prog.exe" $args >/dev/null
  LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$work/o.mlpd" mono "$work/$prog.exe" $args >/dev/null
  bpe() { "$mlpd" verify --json "$1" | python3 -c 'import json,sys,os; v=json.loads(sys.stdin.readline()); n=sum(v["counts"].values()); print("%.2f" % (os.path.getsize(sys.argv[1]) / max(n,1)))' "$1"; }
  pc=$(cut -d' ' -f1 "$work/plain" | median); mc=$(cut -d' ' -f1 "$work/mono" | median); oc=$(cut -d' ' -f1 "$work/mlpd" | median)
  pw=$(cut -d' ' -f2 "$work/plain" | median); mw=$(cut -d' ' -f2 "$work/mono" | median); ow=$(cut -d' ' -f2 "$work/mlpd" | median)
  ratio=$(awk -v p="$pc" -v m="$mc" -v o="$oc" 'BEGIN { d = m - p; if (d < 0.05) print "n/a"; else printf "%.3f", (o - p) / d }')
  printf "%-26s %9s %9s %9s | %9s %9s %9s | %7s %8s\n" "$name" "$pc" "$mc" "$oc" "$pw" "$mw" "$ow" "$ratio" \
    "$(bpe "$work/m.mlpd")/$(bpe "$work/o.mlpd")"
done
echo "ovh ratio = (mlpd cpu - plain cpu) / (mono-log cpu - plain cpu): our CPU overhead as a fraction of Mono's"
echo "(n/a where Mono's CPU overhead is below 0.05 s, i.e. within noise: compare the wall columns there)."
