#!/usr/bin/env bash
# The main job: build and install mlpd, profile a bundled sample Mono program, show the result.
# Until the mlpd agent records events (issue 3), the profile is taken with Mono's own log profiler
# and this shows what mlpd's reader does with it. Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh >/dev/null

cmake -S . -B build -G Ninja >/dev/null
cmake --build build >/dev/null
cmake --install build --prefix out >/dev/null
MLPD=out/bin/mlpd

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mcs -debug- -optimize+ -out:"$work/sample.exe" examples/sample.cs >/dev/null

echo "== the program, profiled (calls, allocations, exceptions) =="
mono --profile=log:calls,alloc,output="$work/sample.mlpd" "$work/sample.exe"
echo
echo "== mlpd verify =="
"$MLPD" verify "$work/sample.mlpd"
echo
echo "== mlpd verify --strict (Mono's own profiler writes some vtables after their first use) =="
"$MLPD" verify --strict "$work/sample.mlpd" | head -n 5 || true
echo
echo "== mlpd verify --json =="
"$MLPD" verify --json "$work/sample.mlpd"
echo
echo "== mlpd dump (the program's own methods) =="
"$MLPD" dump "$work/sample.mlpd" | grep -E "Sample(App)?[.:]" | head -n 15 || true
echo
echo "(installed: out/bin/mlpd and out/lib/libmlpd.so)"
