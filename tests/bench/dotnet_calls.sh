#!/usr/bin/env bash
# The cost of `calls` (exact enter/leave events) on .NET and on Mono, side by side (issue 36): one IL
# program, tests/bench/programs/bench_calls.cs compiled once by mcs (small methods called in a tight
# loop: MILLIONS million calls), runs under `dotnet` (a runtimeconfig.json beside it naming
# Microsoft.NETCore.App) and under `mono`, each plain, with mlpd loaded and recording nothing
# (`nodefaults`), and with mlpd `calls`; all six alternating, ROUNDS times. Prints the median CPU
# seconds (user+sys of the process), the ratio to the same runtime's plain run, the overhead per call
# in ns ((calls - plain) / calls made) and the enter events in mlpd's file.
# Usage: tests/bench/dotnet_calls.sh [BUILD_DIR] [ROUNDS] [MILLIONS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
millions="${3:-20}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
clsid="{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"
[ -f "$agent" ] || { echo "dotnet_calls: $agent not built" >&2; exit 1; }
command -v dotnet >/dev/null || { echo "dotnet_calls: no dotnet on the PATH" >&2; exit 1; }
command -v mono >/dev/null || { echo "dotnet_calls: no mono on the PATH" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -out:"$work/bench_calls.exe" "$here/programs/bench_calls.cs" >/dev/null
cat > "$work/bench_calls.runtimeconfig.json" <<'EOF'
{"runtimeOptions": {"tfm": "net8.0", "rollForward": "LatestMajor",
                    "framework": {"name": "Microsoft.NETCore.App", "version": "8.0.0"}}}
EOF
exe="$work/bench_calls.exe"
configs=(dotnet_plain dotnet_loaded dotnet_calls mono_plain mono_loaded mono_calls)

measure() {  # CONFIG -> "cpu enters"
  local kind=$1 out="$work/out.mlpd" enters=0 opts=nodefaults
  rm -f "$out"
  [ "${kind#*_}" = calls ] && opts=nodefaults,calls
  case $kind in
    dotnet_plain) python3 "$here/cputime.py" "$work/t" env -u LD_PRELOAD dotnet "$exe" "$millions" ;;
    dotnet_*)
      CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER="$clsid" CORECLR_PROFILER_PATH="$agent" MLPD_OPTIONS="$opts,output=$out" \
        python3 "$here/cputime.py" "$work/t" dotnet "$exe" "$millions" ;;
    mono_plain) python3 "$here/cputime.py" "$work/t" env -u LD_PRELOAD mono "$exe" "$millions" ;;
    mono_*)
      python3 "$here/cputime.py" "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$out" mono "$exe" "$millions" ;;
  esac
  if [ -f "$out" ]; then
    enters=$("$mlpd" verify --json "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"].get("method_enter",0))')
  fi
  awk -v e="$enters" '{printf "%.3f %d\n", $1, e}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for c in "${configs[@]}"; do : > "$work/$c"; done
for ((r = 0; r < rounds; r++)); do
  for c in "${configs[@]}"; do measure "$c" >> "$work/$c"; done
done
printf "%-16s %9s %9s %12s %12s\n" "config" "cpu s" "x plain" "ns/call" "enters"
for c in "${configs[@]}"; do
  plain=$(cut -d' ' -f1 "$work/${c%%_*}_plain" | median)
  cpu=$(cut -d' ' -f1 "$work/$c" | median)
  enters=$(cut -d' ' -f2 "$work/$c" | median)
  awk -v l="$c" -v c="$cpu" -v p="$plain" -v e="$enters" -v m="$millions" \
    'BEGIN {printf "%-16s %9.3f %9.2f %12.1f %12d\n", l, c, c / p, (c - p) / (m * 1e6) * 1e9, e}'
done
