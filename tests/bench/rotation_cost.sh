#!/usr/bin/env bash
# Issue 16's measurement: the CPU and disk cost of rotation on a service-like program. Runs
# tests/programs/service.cs (two worker threads serving "requests" for SECONDS seconds) with no
# profiler, with `nodefaults,sample` (100 Hz) into one file, and with `nodefaults,sample,rotate=ROTATE`
# into numbered files, alternating, ROUNDS times. The workers run for a fixed time, not a fixed amount of work, so the cost
# is CPU seconds (user+sys) per million requests; disk is bytes written per hour of run time.
# Usage: tests/bench/rotation_cost.sh [BUILD_DIR] [ROUNDS] [SECONDS] [ROTATE]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-3}"
seconds="${3:-130}"
rotate="${4:-1m}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
[ -f "$agent" ] || { echo "rotation_cost: $agent not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -nowarn:649,414 -out:"$work/service.exe" "$here/../programs/service.cs" >/dev/null

# measure KIND -> "cpu_seconds requests bytes files"
measure() {
  rm -rf "$work/out" && mkdir "$work/out"
  local opts=""
  case $1 in
    plain)  ;;
    sample) opts="nodefaults,sample,output=$work/out/one.mlpd" ;;
    rotate) opts="nodefaults,sample,rotate=$rotate,output=$work/out/svc-%n.mlpd" ;;
  esac
  if [ -z "$opts" ]; then
    /usr/bin/time -f "%U %S" -o "$work/t" env -u LD_PRELOAD mono "$work/service.exe" "$seconds" >"$work/stdout"
  else
    /usr/bin/time -f "%U %S" -o "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts" \
      mono "$work/service.exe" "$seconds" >"$work/stdout"
  fi
  local req bytes files
  req=$(awk '/^done/ {print $2}' "$work/stdout")
  bytes=$(find "$work/out" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  files=$(find "$work/out" -type f | wc -l)
  if [ "$1" != plain ]; then
    for f in "$work/out"/*; do "$mlpd" verify --strict "$f" >/dev/null || { echo "rotation_cost: $f fails verify" >&2; exit 1; }; done
  fi
  awk -v r="$req" -v b="$bytes" -v f="$files" '{printf "%.3f %d %d %d\n", $1 + $2, r, b, f}' "$work/t"
}

kinds=(plain sample rotate)
declare -A per size nfiles
for ((r = 0; r < rounds; r++)); do
  for k in "${kinds[@]}"; do
    read -r c q b f < <(measure "$k")
    per[$k]+="$(awk -v c="$c" -v q="$q" 'BEGIN {printf "%.4f", c / q * 1e6}') "
    size[$k]=$b
    nfiles[$k]=$f
    echo "  round $r $k: cpu $c s, $q requests, $b bytes in $f files" >&2
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
plain=$(echo "${per[plain]}" | median)
sample=$(echo "${per[sample]}" | median)
printf "service.exe %s s, %d rounds, median CPU seconds per million requests (user+sys):\n" "$seconds" "$rounds"
for k in "${kinds[@]}"; do
  m=$(echo "${per[$k]}" | median)
  awk -v k="$k" -v m="$m" -v p="$plain" -v s="$sample" -v b="${size[$k]}" -v f="${nfiles[$k]}" -v sec="$seconds" -v runs="${per[$k]}" \
    'BEGIN {printf "  %-7s %7.3f s/Mreq  x%.3f of plain  x%.3f of sample  disk %6.1f MiB/h (%d files)   (runs: %s)\n",
            k, m, m / p, m / s, b / sec * 3600 / 1048576, f, runs}'
done
