#!/usr/bin/env bash
# Speed and memory of `mlpd report`, `mlpd export --format collapsed` and `mlpd verify` on a file of at
# least 150 MB of `calls` written by Mono's own log profiler on a multi-threaded program (bench_threads.cs:
# four threads calling concurrently), side by side with Mono 6.8's mprof-report on the same file.
# Runs are alternated; each figure is the median of RUNS (wall seconds, CPU = user+sys, user alone) and
# the largest peak RSS seen (/usr/bin/time -v "Maximum resident set size"). Not a test: a benchmark (see
# docs/performance.md). On a shared machine wall time also counts waiting for a core: compare CPU too.
# Goals (issue 10): report <= mprof-report's time, export <= 1.5x, peak RSS <= 100 MB; (issue 11.5)
# verify at least 2x mprof-report's speed.
# Usage: tests/bench/report_speed.sh [BUILD_DIR] [MILLIONS_OF_CALLS_PER_THREAD] [RUNS]
# FILE=path reuses an existing file instead of recording one.
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

for ((i = 0; i < runs; i++)); do
  measure report "$mlpd" report "$big"
  measure collapsed "$mlpd" export --format collapsed -o "$work/out.collapsed" "$big"
  measure verify "$mlpd" verify "$big"
  measure mprof mprof-report "$big"
done
# median NAME COLUMN: the median of a column over the runs; peak NAME: the largest RSS.
median() { sort -n -k"$2","$2" "$work/$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { sort -n -k2,2 "$work/$1" | tail -n1 | cut -d' ' -f2; }
row() { echo "$1 $(median "$2" 1) $(median "$2" 3) $(median "$2" 4) $(peak "$2")"; }
{
  row report report
  row collapsed collapsed
  row verify verify
  row mprof mprof
} | awk -v b="$bytes" -v runs="$runs" '{ name[NR] = $1; w[NR] = $2; c[NR] = $3; u[NR] = $4; r[NR] = $5 }
END {
  label["report"] = "mlpd report"; label["collapsed"] = "mlpd export --format collapsed";
  label["verify"] = "mlpd verify"; label["mprof"] = "mprof-report";
  printf "%-32s %7s %8s %7s %7s %9s  (median of %d)\n", "command", "wall s", "MB/s", "CPU s", "user s", "peak MB", runs;
  for (i = 1; i <= NR; i++)
    printf "%-32s %7.2f %8.1f %7.2f %7.2f %9.1f\n", label[name[i]], w[i], b / w[i] / 1e6, c[i], u[i], r[i] / 1024;
  p = 4;
  printf "report / mprof-report:    %.2fx wall, %.2fx CPU (goal <= 1)\n", w[1] / w[p], c[1] / c[p];
  printf "collapsed / mprof-report: %.2fx wall, %.2fx CPU (goal <= 1.5)\n", w[2] / w[p], c[2] / c[p];
  printf "mprof-report / verify:    %.2fx wall (goal >= 2: verify twice as fast), %.2fx CPU\n", w[p] / w[3], c[p] / c[3];
  printf "peak RSS: report %.1f MB, export %.1f MB (goal <= 100 MB)\n", r[1] / 1024, r[2] / 1024;
}'
