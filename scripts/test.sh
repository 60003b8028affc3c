#!/usr/bin/env bash
# Builds mlpd and runs every test: unit tests, integration tests against real Mono 6.8, and a short
# libFuzzer run of the decoder (clang build). Installs missing Debian packages first.
# Usage: scripts/test.sh            (from anywhere; builds in build/ and build-fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (g++) =="
cmake -S . -B build -G Ninja -DMLPD_WERROR=ON
cmake --build build -j "$jobs"

echo "== install check =="
rm -rf build/install-check
cmake --install build --prefix build/install-check >/dev/null
test -x build/install-check/bin/mlpd
test -f build/install-check/lib/libmlpd.so

echo "== tests =="
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== fuzz (clang, libFuzzer) =="
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMLPD_FUZZ=ON -DMLPD_BUILD_TESTS=OFF -DMLPD_BENCH=OFF
cmake --build build-fuzz -j "$jobs" --target decoder_fuzz profile_fuzz
ctest --test-dir build-fuzz --output-on-failure
