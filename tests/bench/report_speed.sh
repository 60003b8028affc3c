#!/usr/bin/env bash
# Speed and memory of `mlpd report`, `mlpd export -o x.collapsed`, `mlpd export -o x.pb.gz` and `mlpd verify` on a file of at
# least 150 MB of `calls` written by Mono's own log profiler on a multi-threaded program (bench_threads.cs:
# four threads calling concurrently), side by side with Mono 6.8's mprof-report on the same file.
# Runs are alternated; each figure is the median of RUNS (wall seconds, CPU = user+sys, user alone) and
# the largest peak RSS seen (/usr/bin/time -v "Maximum resident set size"). Not a test: a benchmark (see
# docs/performance.md). On a shared machine wall time also counts waiting for a core: compare CPU too.
# Goals (issue 25, the profile model on every core): report and collapsed <= 0.5x mprof-report's wall
# time, pprof <= 0.6x, peak RSS <= 100 MB; (issue 11.5) verify at least 2x mprof-report's speed.
# Usage: tests/bench/report_speed.sh [BUILD_DIR] [MILLIONS_OF_CALLS_PER_THREAD] [RUNS]
# (MILLIONS=60 makes a 2 GB file in about 2 minutes; mprof-report then takes ~5 s a run.)
# FILE=path reuses an existing file instead of recording one. BEFORE=path/to/mlpd adds the same three
# commands of another build (e.g. main's) side by side; JOBS=N passes --jobs N (default: one per core).
# Every command runs under `nice` (the machine is shared).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
millions="${2:-5}"
runs="${3:-3}"
mlpd="$build/reader/mlpd"
[ -x "$mlpd" ] || { echo "report_speed: $mlpd not built" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "report_speed: /usr/bin/time missing (Debian package 'time')" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
big="${FILE:-$work/big.mlpd}"
if [ -z "${FILE:-}" ]; then
  mcs -optimize+ -out:"$work/bench_threads.exe" "$here/programs/bench_threads.cs" >/dev/null
  mono --profile=log:calls,output="$big" "$work/bench_threads.exe" "$millions" >/dev/null
fi
bytes=$(stat -c %s "$big")
echo "file: $bytes bytes ($(( bytes / 1000000 )) MB) of calls by Mono's log profiler, bench_threads.exe $millions"
[ "$bytes" -ge 150000000 ] || echo "report_speed: warning: the file is under 150 MB (raise MILLIONS)" >&2

# measure NAME CMD...: appends "wall_seconds peak_rss_kb cpu_seconds" of one run to $work/NAME (output
# discarded). CPU (user+sys) is shown too: on a shared machine wall time also counts waiting for a core.
measure() {
  local name="$1"
  shift
  /usr/bin/time -v -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    echo "report_speed: $* failed: $(tail -n 3 "$work/stderr")" >&2
  }
  awk -F': ' '/Elapsed \(wall clock\)/ {
                n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; wall = s }
              /Maximum resident set size/ { rss = $2 }
              /User time \(seconds\)/ { cpu += $2; user = $2 }
              /System time \(seconds\)/ { cpu += $2 }
              END { printf "%.3f %d %.3f %.3f\n", wall, rss, cpu, user }' "$work/time" >> "$work/$name"
}

jobs=()
[ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
names=(report collapsed pprof)
for ((i = 0; i < runs; i++)); do
  measure mprof nice mprof-report "$big"
  if [ -n "${BEFORE:-}" ]; then
    measure b_report nice "$BEFORE" report "$big"
    measure b_collapsed nice "$BEFORE" export -o "$work/out.collapsed" "$big"
    measure b_pprof nice "$BEFORE" export -o "$work/out.pb.gz" "$big"
  fi
  measure report nice "$mlpd" report "${jobs[@]}" "$big"
  measure collapsed nice "$mlpd" export "${jobs[@]}" -o "$work/out.collapsed" "$big"
  measure pprof nice "$mlpd" export "${jobs[@]}" -o "$work/out.pb.gz" "$big"
  measure verify nice "$mlpd" verify "$big"
done
# median NAME COLUMN: the median of a column over the runs; peak NAME: the largest RSS.
median() { sort -n -k"$2","$2" "$work/$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { sort -n -k2,2 "$work/$1" | tail -n1 | cut -d' ' -f2; }
# spread NAME: the least and the largest wall time.
spread() { sort -n -k1,1 "$work/$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
row() { echo "$1 $(median "$2" 1) $(median "$2" 3) $(median "$2" 4) $(peak "$2") $(spread "$2")"; }
{
  row mprof mprof
  if [ -n "${BEFORE:-}" ]; then
    for n in "${names[@]}"; do row "before_$n" "b_$n"; done
  fi
  for n in "${names[@]}"; do row "$n" "$n"; done
  row verify verify
} | awk -v b="$bytes" -v runs="$runs" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '{ name[NR] = $1; w[NR] = $2; c[NR] = $3; u[NR] = $4; r[NR] = $5; sp[NR] = $6 }
END {
  printf "%-34s %7s %8s %7s %7s %9s %8s %8s  (median of %d)\n", "command", "wall s", "MB/s", "CPU s", "user s", "peak MB",
         "wall/mp", "CPU/mp", runs;
  for (i = 1; i <= NR; i++)
    printf "%-34s %7.2f %8.1f %7.2f %7.2f %9.1f %8.2f %8.2f\n", name[i], w[i], b / w[i] / 1e6, c[i], u[i], r[i] / 1024,
           w[i] / w[1], c[i] / c[1];
  for (i = 1; i <= NR; i++) printf "  %s wall %s s\n", name[i], sp[i];
  printf "load average at the end: %s\n", load;
  print "goals: report and collapsed <= 0.5x mprof-report wall, pprof <= 0.6x; peak RSS <= 100 MB; verify >= 2x faster"
}'
