#!/usr/bin/env bash
# The main job: build and install mlpd, profile a bundled sample Mono program with the mlpd agent
# (LD_PRELOAD, no change to the program or its command line), and show the result: our reader's
# verdict and event counts, Mono's own mprof-report on our file, a few events as mlpd dump prints
# them, and at the end our report and flame graph of the program. Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh >/dev/null

# MLPD_DEMO_BUILD / MLPD_DEMO_OUT: another build directory / install prefix (the demo test uses its own).
build=${MLPD_DEMO_BUILD:-build}
out=${MLPD_DEMO_OUT:-$PWD/out}
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" >/dev/null
cmake --install "$build" --prefix "$out" >/dev/null
MLPD=$out/bin/mlpd

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -debug- -optimize+ -out:"$work/sample.exe" examples/sample.cs >/dev/null

echo "== the program, profiled: LD_PRELOAD=out/lib/libmlpd.so MLPD_OPTIONS=calls,alloc mono sample.exe =="
LD_PRELOAD="$out/lib/libmlpd.so" MLPD_OPTIONS="calls,alloc,output=$work/sample.mlpd" \
  mono "$work/sample.exe"
echo
echo "== mlpd verify --strict (every reference described before use) =="
"$MLPD" verify --strict "$work/sample.mlpd"
echo
echo "== mlpd verify --json =="
"$MLPD" verify --json "$work/sample.mlpd"
echo
echo "== Mono's mprof-report on our file =="
mprof-report --reports=header,gc,alloc,exception "$work/sample.mlpd" |
  awk '/Allocation summary/ {a = 1} a && /^ / && ++n > 10 {next} {print}'
echo
# awk, not head: head would close the pipe early and the writer's SIGPIPE fail the script (pipefail).
mprof-report --reports=call --verbose --method-sort=calls "$work/sample.mlpd" | awk 'NR <= 12'
echo
echo "== mlpd dump: the program's own methods and classes =="
"$MLPD" dump "$work/sample.mlpd" | awk '/method_enter .*SampleApp|alloc .*SampleApp/ && n++ < 8'
echo
echo "== mlpd report: where the time and the memory went =="
"$MLPD" report --top 5 "$work/sample.mlpd"
echo
echo "== mlpd export: the flame graph of the calls (self time per call path) =="
"$MLPD" export -o "$out/sample-flamegraph.html" "$work/sample.mlpd"
echo "wrote $out/sample-flamegraph.html: open it in a browser (click to zoom, search, icicle/flame)"
echo
echo "(installed: $out/bin/mlpd, $out/lib/libmlpd.so, $out/lib/libmono-profiler-mlpd.so)"
