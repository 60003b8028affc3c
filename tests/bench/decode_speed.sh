#!/usr/bin/env bash
# Decode speed of `mlpd verify` on a real Mono-written file of at least 100 MB, side by side with
# Mono 6.8's mprof-report on the same file (runs alternated, best of N, CPU = user+sys).
# Usage: tests/bench/decode_speed.sh [BUILD_DIR] [ITERATIONS] [RUNS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
iterations="${2:-8000}"
runs="${3:-3}"
mlpd="$build/reader/mlpd"
[ -x "$mlpd" ] || { echo "decode_speed: $mlpd not built" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -optimize+ -out:"$work/workload.exe" "$here/programs/workload.cs" >/dev/null
mono --profile=log:calls,alloc,output="$work/big.mlpd" "$work/workload.exe" "$iterations" >/dev/null
gzip -1 -c "$work/big.mlpd" > "$work/big.mlpd.gz"
bytes=$(stat -c %s "$work/big.mlpd")
echo "file: $bytes bytes ($(( bytes / 1000000 )) MB), gzip: $(stat -c %s "$work/big.mlpd.gz") bytes"

# run_seconds CMD...: "cpu wall" seconds of one run (output discarded); the figures use wall time.
run_seconds() {
  /usr/bin/time -f "%U %S %e" -o "$work/time" "$@" >/dev/null 2>&1 || true
  awk '{printf "%.3f %.3f\n", $1+$2, $3}' "$work/time"
}

best() { sort -n | head -n1; }
: > "$work/mlpd"; : > "$work/mlpdgz"; : > "$work/mprof"
for ((i = 0; i < runs; i++)); do
  run_seconds "$mlpd" verify "$work/big.mlpd" >> "$work/mlpd"
  run_seconds "$mlpd" verify "$work/big.mlpd.gz" >> "$work/mlpdgz"
  run_seconds mprof-report "$work/big.mlpd" >> "$work/mprof"
done
m=$(cut -d' ' -f2 "$work/mlpd" | best)
g=$(cut -d' ' -f2 "$work/mlpdgz" | best)
p=$(cut -d' ' -f2 "$work/mprof" | best)
awk -v b="$bytes" -v m="$m" -v g="$g" -v p="$p" 'BEGIN {
  printf "mlpd verify (plain):  %6.2f s wall  %7.1f MB/s\n", m, b / m / 1e6;
  printf "mlpd verify (gzip):   %6.2f s wall  %7.1f MB/s (uncompressed bytes)\n", g, b / g / 1e6;
  printf "mprof-report:         %6.2f s wall  %7.1f MB/s\n", p, b / p / 1e6;
  printf "mprof-report / mlpd verify time: %.1fx\n", p / m;
}'
