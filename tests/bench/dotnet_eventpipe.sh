#!/usr/bin/env bash
# The cost of the events mlpd takes from its own EventPipe session on .NET (issue 35), side by side in
# one run, alternating, ROUNDS times, median CPU seconds (user+sys of the whole process tree):
#  - allocations: `DotnetPrograms allocs N` (2 N objects, ~96 N bytes) plain, with mlpd loaded and
#    recording nothing (`nodefaults`), with `alloc-sample=100k` (the runtime's AllocationSampled events,
#    each with our backtrace), and, when dotnet-trace is in BUILD_DIR/tools, dotnet-trace collecting
#    the same AllocationSampled events (keyword 0x80000000000, with the runtime's stacks);
#  - locks: `DotnetPrograms locks N` (four threads on one lock) plain, loaded (`nodefaults`) and with
#    `monitor`, and dotnet-trace collecting the same contention events (keyword 0x4000); the file's
#    events are printed (mlpd verify: alloc + monitor events).
# Usage: tests/bench/dotnet_eventpipe.sh [BUILD_DIR] [ROUNDS] [ALLOCS] [LOCKS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
allocs="${3:-4000000}"
locks="${4:-2000000}"
agent="$build/agent/libmlpd.so"
mlpd="${MLPD:-$build/reader/mlpd}"
dll="$build/tests/programs/dotnet/bin/DotnetPrograms.dll"
clsid="{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"
trace="${DOTNET_TRACE:-$build/tools/dotnet-trace}"  # or installed: dotnet tool install --tool-path BUILD_DIR/tools dotnet-trace
[ -f "$agent" ] || { echo "dotnet_eventpipe: $agent not built" >&2; exit 1; }
[ -f "$dll" ] || { echo "dotnet_eventpipe: $dll not built (needs dotnet on the PATH)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(allocs_plain allocs_mlpd_loaded allocs_alloc_sample locks_plain locks_mlpd_loaded locks_monitor)
[ -x "$trace" ] && configs+=(allocs_dotnet_trace locks_dotnet_trace)

measure() {  # CONFIG -> "cpu events" (events: the file's alloc + monitor events)
  local kind=$1 out="$work/out.mlpd" prog args opts=""
  rm -f "$out" "$work/out.nettrace"
  case $kind in
    allocs_*) prog=allocs args=$allocs ;;
    locks_*) prog=locks args=$locks ;;
  esac
  case $kind in
    *_mlpd_loaded) opts=nodefaults ;;
    *_alloc_sample) opts=nodefaults,alloc-sample=100k ;;
    *_monitor) opts=nodefaults,monitor ;;
  esac
  if [ -n "$opts" ]; then
    CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER="$clsid" CORECLR_PROFILER_PATH="$agent" MLPD_OPTIONS="$opts,output=$out" \
      python3 "$here/cputime.py" "$work/t" dotnet "$dll" $prog $args >/dev/null
  elif [ "$kind" = allocs_dotnet_trace ] || [ "$kind" = locks_dotnet_trace ]; then
    local keyword=0x80000000000
    [ "$kind" = locks_dotnet_trace ] && keyword=0x4000
    python3 "$here/cputime.py" "$work/t" "$trace" collect --providers Microsoft-Windows-DotNETRuntime:$keyword:4 \
      -o "$work/out.nettrace" -- dotnet "$dll" $prog $args >/dev/null
  else
    python3 "$here/cputime.py" "$work/t" dotnet "$dll" $prog $args >/dev/null
  fi
  local events=0
  if [ -f "$out" ]; then
    events=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys; c=json.load(sys.stdin)["counts"]; print(c.get("alloc",0)+c.get("monitor",0))')
  fi
  awk -v e="$events" '{printf "%.3f %d\n", $1, e}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for c in "${configs[@]}"; do : > "$work/$c"; done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do measure "$c" >> "$work/$c"; done
done
printf "%-24s %9s %9s %9s\n" "config" "cpu s" "vs plain" "events"
for c in "${configs[@]}"; do
  plain=$(cut -d' ' -f1 "$work/${c%%_*}_plain" | median)
  cpu=$(cut -d' ' -f1 "$work/$c" | median)
  events=$(cut -d' ' -f2 "$work/$c" | median)
  awk -v l="$c" -v c="$cpu" -v p="$plain" -v e="$events" 'BEGIN {printf "%-24s %9.3f %8.1f%% %9d\n", l, c, (c / p - 1) * 100, e}'
done
