#!/usr/bin/env bash
# Issue 15's measurement: alloc-sample=512k against every allocation (`alloc`) and against Mono 6.8's
# log profiler (`--profile=log:alloc`) on the same allocation-heavy program (tests/programs/
# allocheavy.cs), alternating plain / ours sampled / ours full / Mono's, ROUNDS times. Prints the
# median CPU time (user+sys) of each, the overhead ratio against the plain run, and the file sizes.
# Usage: tests/bench/alloc_sample.sh [BUILD_DIR] [ROUNDS] [BLOCKS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
blocks="${3:-2000}"
agent="$build/agent/libmlpd.so"
[ -f "$agent" ] || { echo "alloc_sample: $agent not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -nowarn:649,414 -out:"$work/allocheavy.exe" "$here/../programs/allocheavy.cs" >/dev/null

# measure KIND -> "cpu_seconds file_bytes"
measure() {
  local out="$work/out.mlpd"
  rm -f "$out"
  case $1 in
    plain)   /usr/bin/time -f "%U %S" -o "$work/t" env -u LD_PRELOAD mono "$work/allocheavy.exe" "$blocks" >/dev/null ;;
    sampled) /usr/bin/time -f "%U %S" -o "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="alloc-sample=512k,output=$out" \
               mono "$work/allocheavy.exe" "$blocks" >/dev/null ;;
    full)    /usr/bin/time -f "%U %S" -o "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="alloc,output=$out" \
               mono "$work/allocheavy.exe" "$blocks" >/dev/null ;;
    mono)    /usr/bin/time -f "%U %S" -o "$work/t" mono --profile=log:alloc,output="$out" "$work/allocheavy.exe" "$blocks" >/dev/null ;;
  esac
  local size=0
  [ -f "$out" ] && size=$(stat -c %s "$out")
  awk -v s="$size" '{printf "%.3f %d\n", $1 + $2, s}' "$work/t"
}

kinds=(plain sampled full mono)
declare -A cpu size
for ((r = 0; r < rounds; r++)); do
  for k in "${kinds[@]}"; do
    read -r c s < <(measure "$k")
    cpu[$k]+="$c "
    size[$k]=$s
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
plain=$(echo "${cpu[plain]}" | median)
printf "allocheavy.exe %s blocks (%d MB allocated), %d rounds, median CPU (user+sys):\n" "$blocks" $((blocks * 315 / 1000)) "$rounds"
for k in "${kinds[@]}"; do
  m=$(echo "${cpu[$k]}" | median)
  awk -v k="$k" -v m="$m" -v p="$plain" -v s="${size[$k]}" -v runs="${cpu[$k]}" \
    'BEGIN {printf "  %-8s %7.3f s  x%.2f of plain  overhead %+7.3f s  file %10d bytes   (runs: %s)\n", k, m, m / p, m - p, s, runs}'
done
