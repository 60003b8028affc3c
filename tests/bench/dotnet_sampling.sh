#!/usr/bin/env bash
# CPU sampling overhead on .NET (issue 35): a CPU-bound program of fixed work on two threads
# (tests/programs/dotnet `crunch`) runs plain, with mlpd loaded and recording nothing (`nodefaults`),
# under mlpd `sample` at 100 Hz, and under dotnet-trace's managed sampler (`collect --profile
# dotnet-sampled-thread-time`, EventPipe's sample profiler, ~100 Hz: it suspends every managed thread
# and walks every stack each interval), alternating all four, ROUNDS times. Prints the median CPU
# seconds (user+sys of the whole process tree: dotnet-trace's own process counts, as our helper thread
# does) and the overhead against plain, plus the sample hits in mlpd's file.
# dotnet-trace is installed from NuGet by name into BUILD_DIR/tools when missing.
# Usage: tests/bench/dotnet_sampling.sh [BUILD_DIR] [ROUNDS] [ROUNDS_OF_WORK]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
work_arg="${3:-400}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
dll="$build/tests/programs/dotnet/bin/DotnetPrograms.dll"
clsid="{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"
[ -f "$agent" ] || { echo "dotnet_sampling: $agent not built" >&2; exit 1; }
[ -f "$dll" ] || { echo "dotnet_sampling: $dll not built (needs dotnet on the PATH)" >&2; exit 1; }
trace="$build/tools/dotnet-trace"
if [ ! -x "$trace" ]; then
  dotnet tool install --tool-path "$build/tools" dotnet-trace >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(plain mlpd_loaded mlpd_sample dotnet_trace)

measure() {  # CONFIG -> "cpu hits"
  local kind=$1 out="$work/out.mlpd" hits=0
  rm -f "$out" "$work/out.nettrace"
  case $kind in
    plain) python3 "$here/cputime.py" "$work/t" dotnet "$dll" crunch "$work_arg" ;;
    mlpd_loaded|mlpd_sample)
      local opts=nodefaults
      [ "$kind" = mlpd_sample ] && opts=nodefaults,sample=100
      CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER="$clsid" CORECLR_PROFILER_PATH="$agent" MLPD_OPTIONS="$opts,output=$out" \
        python3 "$here/cputime.py" "$work/t" dotnet "$dll" crunch "$work_arg" ;;
    dotnet_trace)
      python3 "$here/cputime.py" "$work/t" "$trace" collect --profile dotnet-sampled-thread-time -o "$work/out.nettrace" \
        -- dotnet "$dll" crunch "$work_arg" ;;
  esac
  if [ -f "$out" ]; then
    hits=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"].get("sample_hit",0))')
  fi
  awk -v h="$hits" '{printf "%.3f %d\n", $1, h}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for c in "${configs[@]}"; do : > "$work/$c"; done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do measure "$c" >> "$work/$c"; done
done
plain=$(cut -d' ' -f1 "$work/plain" | median)
printf "%-24s %9s %9s %9s\n" "config" "cpu s" "overhead" "hits"
for c in "${configs[@]}"; do
  cpu=$(cut -d' ' -f1 "$work/$c" | median)
  hits=$(cut -d' ' -f2 "$work/$c" | median)
  awk -v l="$c" -v c="$cpu" -v p="$plain" -v h="$hits" 'BEGIN {printf "%-24s %9.3f %8.1f%% %9d\n", l, c, (c / p - 1) * 100, h}'
done
