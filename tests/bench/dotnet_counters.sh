#!/usr/bin/env bash
# Counters on .NET side by side (issue 35, "Peers"): one program of fixed work runs plain, with mlpd
# recording only counters (`nodefaults,counter`: the runtime's counters named after .NET's metrics,
# the agent's own, each second), with mlpd's default options (MLPD_OPTIONS unset: the defaults, which
# include the counters), and under `dotnet-counters collect` (its default System.Runtime counters,
# refreshed each second, written as CSV), alternating all four, ROUNDS times. Prints the median CPU
# seconds (user+sys of the whole process tree: dotnet-counters' own process counts, as our helper
# thread does), the overhead against plain, and the values each recorded (counter samples in mlpd's
# file; CSV rows of dotnet-counters). The program's output and exit code are checked in every run of
# ours (dotnet-counters does not pass its child's output on).
# dotnet-counters is installed from NuGet by name into BUILD_DIR/tools when missing.
# Usage: tests/bench/dotnet_counters.sh [BUILD_DIR] [ROUNDS] [PROGRAM ARGS...] (default: crunch 300)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
shift $(( $# >= 2 ? 2 : $# ))
program=("${@:-crunch}")
[ $# -eq 0 ] && program=(crunch 300)
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
dll="$build/tests/programs/dotnet/bin/DotnetPrograms.dll"
clsid="{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"
[ -f "$agent" ] || { echo "dotnet_counters: $agent not built" >&2; exit 1; }
[ -f "$dll" ] || { echo "dotnet_counters: $dll not built (needs dotnet on the PATH)" >&2; exit 1; }
counters="$build/tools/dotnet-counters"
if [ ! -x "$counters" ]; then
  dotnet tool install --tool-path "$build/tools" dotnet-counters >/dev/null
fi
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configs=(plain mlpd_counters mlpd_defaults dotnet_counters)
expected=$(dotnet "$dll" "${program[@]}")

measure() {  # CONFIG -> "cpu values"
  local kind=$1 out="$work/out.mlpd" values=0
  rm -f "$out" "$work/out.csv"
  export CPUTIME_STDOUT="$work/stdout"
  case $kind in
    plain) python3 "$here/cputime.py" "$work/t" dotnet "$dll" "${program[@]}" ;;
    mlpd_counters)
      CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER="$clsid" CORECLR_PROFILER_PATH="$agent" \
        MLPD_OPTIONS="nodefaults,counter,output=$out" \
        python3 "$here/cputime.py" "$work/t" dotnet "$dll" "${program[@]}" ;;
    mlpd_defaults)  # no MLPD_OPTIONS: the defaults, output to the default file name in $work
      (cd "$work" && env -u MLPD_OPTIONS CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER="$clsid" CORECLR_PROFILER_PATH="$agent" \
        python3 "$here/cputime.py" "$work/t" dotnet "$dll" "${program[@]}")
      mv "$work"/output*.mlpd "$out" 2>/dev/null || true ;;
    dotnet_counters)
      python3 "$here/cputime.py" "$work/t" "$counters" collect --format csv -o "$work/out.csv" \
        -- dotnet "$dll" "${program[@]}"
      echo "$expected" >"$work/stdout" ;;  # the tool does not pass its child's output on: not comparable
  esac
  [ "$(cat "$work/stdout")" = "$expected" ] || { echo "dotnet_counters: $kind changed the output: $(head -c 300 "$work/stdout")" >&2; exit 1; }
  if [ -f "$out" ]; then
    values=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"].get("counter_samples",0))')
  elif [ -f "$work/out.csv" ]; then
    values=$(($(wc -l <"$work/out.csv") - 1))
  fi
  awk -v v="$values" '{printf "%.3f %d\n", $1, v}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for c in "${configs[@]}"; do : > "$work/$c"; done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do measure "$c" >> "$work/$c"; done
done
plain=$(cut -d' ' -f1 "$work/plain" | median)
echo "program: ${program[*]}, median of $rounds rounds"
printf "%-24s %9s %9s %9s\n" "config" "cpu s" "overhead" "values"
for c in "${configs[@]}"; do
  cpu=$(cut -d' ' -f1 "$work/$c" | median)
  values=$(cut -d' ' -f2 "$work/$c" | median)
  awk -v l="$c" -v c="$cpu" -v p="$plain" -v h="$values" 'BEGIN {printf "%-24s %9.3f %8.1f%% %9d\n", l, c, (c / p - 1) * 100, h}'
done
