#!/usr/bin/env bash
# `calls,zip` on four threads (bench_threads, as overhead.sh runs it), side by side in one run: plain,
# Mono's log profiler with `calls,zip`, ours with `calls`, ours with `calls,zip` with the threads' help
# off (MLPD_ZIP_PACK_ABOVE=4096: the helper compresses everything, as before the help) and on (the agent
# as shipped). ROUNDS alternating rounds; medians of CPU (user+sys) and peak RSS (/usr/bin/time), the
# CPU ratio against Mono's overhead, bytes per event of the files (median). PIN=1 runs every process on one CPU
# (taskset), which starves the helper further.
# Usage: tests/bench/zip_memory.sh [BUILD_DIR] [ROUNDS] [MILLIONS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
millions="${3:-2}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
[ -f "$agent" ] || { echo "zip_memory: $agent not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -out:"$work/bench_threads.exe" "$here/programs/bench_threads.cs" >/dev/null
pin=()
[ "${PIN:-0}" = 1 ] && pin=(taskset -c "$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')")
prog=("$work/bench_threads.exe" "$millions")

kinds=(plain mono calls nohelp zip)
# measure KIND -> "cpu rss_kib bytes_per_event"
measure() {
  local kind=$1 out="$work/$1.mlpd"
  rm -f "$out"
  local t=(/usr/bin/time -f "%U %S %M" -o "$work/t")
  case $kind in
    plain)  "${t[@]}" "${pin[@]}" env -u LD_PRELOAD mono "${prog[@]}" >/dev/null ;;
    mono)   "${t[@]}" "${pin[@]}" mono --profile=log:calls,zip,output="$out" "${prog[@]}" >/dev/null ;;
    calls)  "${t[@]}" "${pin[@]}" env LD_PRELOAD="$agent" MLPD_OPTIONS="calls,output=$out" mono "${prog[@]}" >/dev/null ;;
    nohelp) "${t[@]}" "${pin[@]}" env LD_PRELOAD="$agent" MLPD_ZIP_PACK_ABOVE=4096 MLPD_OPTIONS="calls,zip,output=$out" \
              mono "${prog[@]}" >/dev/null ;;
    zip)    "${t[@]}" "${pin[@]}" env LD_PRELOAD="$agent" MLPD_OPTIONS="calls,zip,output=$out" mono "${prog[@]}" >/dev/null ;;
  esac
  local bpe="-"
  if [ "$kind" != plain ]; then
    bpe=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys,os; v=json.loads(sys.stdin.readline()); n=sum(v["counts"].values()); print("%.3f" % (os.path.getsize(sys.argv[1]) / max(n,1)))' "$out")
  fi
  awk -v b="$bpe" '{printf "%.3f %d %s\n", $1 + $2, $3, b}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for k in "${kinds[@]}"; do : > "$work/r.$k"; done
for ((r = 0; r < rounds; r++)); do
  for k in "${kinds[@]}"; do measure "$k" >> "$work/r.$k"; done
done
pc=$(cut -d' ' -f1 "$work/r.plain" | median)
mc=$(cut -d' ' -f1 "$work/r.mono" | median)
printf "%-28s %8s %8s %10s %9s %s\n" run "cpu s" ratio "RSS MiB" "B/event" "(rounds: cpu s / RSS MiB)"
for k in "${kinds[@]}"; do
  c=$(cut -d' ' -f1 "$work/r.$k" | median)
  m=$(cut -d' ' -f2 "$work/r.$k" | median)
  b=$(cut -d' ' -f3 "$work/r.$k" | { [ "$k" = plain ] && head -1 || median; })
  ratio=$(awk -v p="$pc" -v m="$mc" -v o="$c" -v k="$k" 'BEGIN { if (k == "plain" || k == "mono") print "-"; else printf "%.3f", (o - p) / (m - p) }')
  all=$(awk '{printf "%s%.2f/%.0f", (NR > 1 ? " " : ""), $1, $2 / 1024}' "$work/r.$k")
  case $k in
    plain) name="unprofiled" ;; mono) name="Mono log calls,zip" ;; calls) name="mlpd calls" ;;
    nohelp) name="mlpd calls,zip, help off" ;; zip) name="mlpd calls,zip" ;;
  esac
  printf "%-28s %8s %8s %10.1f %9s %s\n" "$name" "$c" "$ratio" "$(awk -v x="$m" 'BEGIN{print x/1024}')" "$b" "$all"
done
echo "ratio = (cpu - unprofiled cpu) / (Mono's cpu - unprofiled cpu); B/event: median over the rounds' files"
echo "(it varies by +-15% between runs of the same build: the events' time deltas differ)."
