#!/usr/bin/env bash
# Speed and memory of `mlpd report` and `mlpd export --format collapsed` on a file of at least 150 MB
# of `calls` written by Mono's own log profiler on a multi-threaded program (bench_threads.cs: four
# threads calling concurrently), side by side with Mono 6.8's mprof-report on the same file.
# Runs are alternated; each figure is the best of RUNS (wall seconds) and the largest peak RSS seen
# (/usr/bin/time -v "Maximum resident set size"). Not a test: a benchmark (see docs/performance.md).
# Goals (issue 10): report <= mprof-report's time, export <= 1.5x, peak RSS <= 100 MB.
# Usage: tests/bench/report_speed.sh [BUILD_DIR] [MILLIONS_OF_CALLS_PER_THREAD] [RUNS]
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
mcs -optimize+ -out:"$work/bench_threads.exe" "$here/programs/bench_threads.cs" >/dev/null
mono --profile=log:calls,output="$work/big.mlpd" "$work/bench_threads.exe" "$millions" >/dev/null
bytes=$(stat -c %s "$work/big.mlpd")
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
              /User time \(seconds\)/ { cpu += $2 }
              /System time \(seconds\)/ { cpu += $2 }
              END { printf "%.3f %d %.3f\n", wall, rss, cpu }' "$work/time" >> "$work/$name"
}

for ((i = 0; i < runs; i++)); do
  measure report "$mlpd" report "$work/big.mlpd"
  measure collapsed "$mlpd" export --format collapsed -o "$work/out.collapsed" "$work/big.mlpd"
  measure mprof mprof-report "$work/big.mlpd"
done
best() { sort -n -k1,1 "$work/$1" | head -n1 | cut -d' ' -f1; }
peak() { sort -n -k2,2 "$work/$1" | tail -n1 | cut -d' ' -f2; }
cpu() { sort -n -k3,3 "$work/$1" | head -n1 | cut -d' ' -f3; }
awk -v b="$bytes" -v r="$(best report)" -v c="$(best collapsed)" -v p="$(best mprof)" \
    -v rr="$(peak report)" -v cr="$(peak collapsed)" -v pr="$(peak mprof)" \
    -v rc="$(cpu report)" -v cc="$(cpu collapsed)" -v pc="$(cpu mprof)" 'BEGIN {
  printf "%-34s %8s %9s %8s %12s\n", "command (best of runs)", "wall s", "MB/s", "CPU s", "peak RSS MB";
  printf "%-34s %8.2f %9.1f %8.2f %12.1f\n", "mlpd report", r, b / r / 1e6, rc, rr / 1024;
  printf "%-34s %8.2f %9.1f %8.2f %12.1f\n", "mlpd export --format collapsed", c, b / c / 1e6, cc, cr / 1024;
  printf "%-34s %8.2f %9.1f %8.2f %12.1f\n", "mprof-report", p, b / p / 1e6, pc, pr / 1024;
  printf "report / mprof-report time: %.2fx wall, %.2fx CPU (goal <= 1)\n", r / p, rc / pc;
  printf "export / mprof-report time: %.2fx wall, %.2fx CPU (goal <= 1.5)\n", c / p, cc / pc;
  printf "peak RSS: report %.1f MB, export %.1f MB (goal <= 100 MB)\n", rr / 1024, cr / 1024;
}'
