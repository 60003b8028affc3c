#!/usr/bin/env bash
# Speed of `mlpd dump` to /dev/null (issue 11.5: at least 150 MB/s of input) on a file of at least
# 150 MB of `calls` written by Mono's own log profiler on a multi-threaded program (bench_threads.cs,
# the report_speed.sh recipe), side by side in one run with: dump on one thread (MLPD_DUMP_THREADS=1),
# dump --json, and the formatter as it was before session 5 (BUILD/tests/tools/mlpd_dump_reference,
# text and JSON; skipped when not built). Runs are alternated; each figure is the median of RUNS (wall
# seconds, CPU = user+sys) and the largest peak RSS seen. Not a test: a benchmark (docs/performance.md).
# On a shared machine wall time also counts waiting for a core: compare CPU too.
# Usage: tests/bench/dump_speed.sh [BUILD_DIR] [MILLIONS_OF_CALLS_PER_THREAD] [RUNS]
# FILE=path reuses an existing file instead of recording one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
millions="${2:-5}"
runs="${3:-3}"
mlpd="$build/reader/mlpd"
ref="$build/tests/tools/mlpd_dump_reference"
[ -x "$mlpd" ] || { echo "dump_speed: $mlpd not built" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "dump_speed: /usr/bin/time missing (Debian package 'time')" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
big="${FILE:-$work/big.mlpd}"
if [ -z "${FILE:-}" ]; then
  mcs -optimize+ -out:"$work/bench_threads.exe" "$here/programs/bench_threads.cs" >/dev/null
  mono --profile=log:calls,output="$big" "$work/bench_threads.exe" "$millions" >/dev/null
fi
bytes=$(stat -c %s "$big")
echo "file: $bytes bytes ($(( bytes / 1000000 )) MB) of calls by Mono's log profiler; $(nproc) cores"

# measure NAME CMD...: appends "wall_seconds peak_rss_kb cpu_seconds" of one run to $work/NAME.
measure() {
  local name="$1"
  shift
  /usr/bin/time -v -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    echo "dump_speed: $* failed: $(tail -n 3 "$work/stderr")" >&2
  }
  awk -F': ' '/Elapsed \(wall clock\)/ {
                n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; wall = s }
              /Maximum resident set size/ { rss = $2 }
              /User time \(seconds\)/ { cpu += $2 }
              /System time \(seconds\)/ { cpu += $2 }
              END { printf "%.3f %d %.3f\n", wall, rss, cpu }' "$work/time" >> "$work/$name"
}

names="dump dump1 json"
[ -x "$ref" ] && names="$names ref refjson"
for ((i = 0; i < runs; i++)); do
  measure dump "$mlpd" dump "$big"
  measure dump1 env MLPD_DUMP_THREADS=1 "$mlpd" dump "$big"
  measure json "$mlpd" dump --json "$big"
  if [ -x "$ref" ]; then
    measure ref "$ref" "$big"
    measure refjson "$ref" --json "$big"
  fi
done
median() { sort -n -k"$2","$2" "$work/$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { sort -n -k2,2 "$work/$1" | tail -n1 | cut -d' ' -f2; }
for n in $names; do echo "$n $(median "$n" 1) $(median "$n" 3) $(peak "$n")"; done |
  awk -v b="$bytes" -v runs="$runs" '{ name[NR] = $1; w[$1] = $2; c[$1] = $3; r[$1] = $4; }
END {
  label["dump"] = "mlpd dump (all cores)"; label["dump1"] = "mlpd dump, one thread";
  label["json"] = "mlpd dump --json (all cores)"; label["ref"] = "old formatter (reference)";
  label["refjson"] = "old formatter --json";
  printf "%-30s %7s %8s %7s %8s %9s  (median of %d, output to /dev/null)\n", "command", "wall s", "MB/s", "CPU s", "CPU MB/s", "peak MB", runs;
  for (i = 1; i <= NR; i++) {
    n = name[i];
    printf "%-30s %7.2f %8.1f %7.2f %8.1f %9.1f\n", label[n], w[n], b / w[n] / 1e6, c[n], b / c[n] / 1e6, r[n] / 1024;
  }
  printf "mlpd dump: %.1f MB/s wall (goal >= 150)\n", b / w["dump"] / 1e6;
  if ("ref" in w) printf "speed-up over the old formatter: %.2fx wall, %.2fx CPU; --json %.2fx wall\n", w["ref"] / w["dump"], c["ref"] / c["dump"], w["refjson"] / w["json"];
}'
