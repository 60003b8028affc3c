#!/usr/bin/env bash
# Sampling overhead: a CPU-bound program (bench_calls, fixed work, no instrumentation) runs plain,
# under mlpd `sample` at 100 Hz and 1 kHz, and under Mono 6.8's log profiler `sample` at the same
# rates, alternating all five, ROUNDS times. Prints the median CPU time (user+sys) of each and the
# CPU overhead ratio (profiled / plain - 1), side by side, plus the sample hits each file holds.
# `mlpd nodefaults` (attached, nothing recorded) separates the cost of being attached from sampling.
# Usage: tests/bench/sampling.sh [BUILD_DIR] [ROUNDS] [MILLIONS_OF_CALLS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
work_arg="${3:-6000}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
[ -f "$agent" ] || { echo "sampling: $agent not built" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -out:"$work/bench_calls.exe" "$here/programs/bench_calls.cs" >/dev/null

# kind|rate
configs=("plain|0" "mlpd|0" "mlpd|100" "mlpd|1000" "mono|100" "mono|1000")

measure() {  # KIND RATE -> "cpu hits"
  local kind=$1 rate=$2 out="$work/out.mlpd" hits=0
  rm -f "$out"
  case $kind in
    plain) /usr/bin/time -f "%U %S" -o "$work/t" env -u LD_PRELOAD mono "$work/bench_calls.exe" "$work_arg" >/dev/null ;;
    mlpd)  local opts="nodefaults"; [ "$rate" != 0 ] && opts="nodefaults,sample=$rate"
           /usr/bin/time -f "%U %S" -o "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$out" \
             mono "$work/bench_calls.exe" "$work_arg" >/dev/null ;;
    mono)  /usr/bin/time -f "%U %S" -o "$work/t" mono --profile=log:nodefaults,sample=$rate,output="$out" \
             "$work/bench_calls.exe" "$work_arg" >/dev/null ;;
  esac
  if [ -f "$out" ]; then
    hits=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"].get("sample_hit",0))')
  fi
  awk -v h="$hits" '{printf "%.3f %d\n", $1 + $2, h}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for c in "${configs[@]}"; do : > "$work/${c/|/_}"; done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do
    IFS='|' read -r kind rate <<<"$c"
    measure "$kind" "$rate" >> "$work/${c/|/_}"
  done
done
plain=$(cut -d' ' -f1 "$work/plain_0" | median)
printf "%-22s %9s %9s %9s\n" "config" "cpu s" "overhead" "hits"
for c in "${configs[@]}"; do
  IFS='|' read -r kind rate <<<"$c"
  cpu=$(cut -d' ' -f1 "$work/${c/|/_}" | median)
  hits=$(cut -d' ' -f2 "$work/${c/|/_}" | median)
  label="$kind"; [ "$rate" != 0 ] && label="$kind sample=$rate"; [ "$c" = "mlpd|0" ] && label="mlpd nodefaults"
  awk -v l="$label" -v c="$cpu" -v p="$plain" -v h="$hits" 'BEGIN {printf "%-22s %9.3f %8.1f%% %9d\n", l, c, (c / p - 1) * 100, h}'
done
