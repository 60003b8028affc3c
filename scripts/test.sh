#!/usr/bin/env bash
# Builds mlpd and runs every test: unit tests, integration tests against real Mono 6.8 and (in a Debian 13
# root) Mono 6.12, and a short libFuzzer run of the decoder (clang build). Installs missing Debian packages
# first.
# Usage: scripts/test.sh            (from anywhere; builds in build/ and build-fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)

# Debian 13's Mono 6.12 in a root of its own (scripts/mono-root.sh: made once, about 4 minutes, then
# reused): every integration test runs there too (ctest label mono612). MLPD_MONO612=0 skips it.
# On Debian 13 itself the host's Mono is 6.12 already.
mono612_root=""
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "${MLPD_MONO612:-1}" != 0 ] && [ "$codename" != trixie ]; then
  echo "== Debian 13 root with Mono 6.12 (scripts/mono-root.sh trixie) =="
  mono612_root="$(scripts/mono-root.sh trixie)"
fi

# arm64 (issue 23): a Debian 12 arm64 root with Mono 6.8 run under qemu-user (scripts/mono-root.sh arm64:
# made once, about 9 minutes, then reused), the cross build of the agent, the reader and the unit tests
# into out-arm64/ and build-arm64/ (scripts/build-arm64.sh, the root as its sysroot), and the tests marked
# ARM64 run there (ctest label arm64, below). On an x86-64 machine; MLPD_ARM64=0 skips it.
arm64_root=""
arm64_start=$(date +%s)
if [ "${MLPD_ARM64:-1}" != 0 ] && [ "$(uname -m)" = x86_64 ]; then
  echo "== arm64: Debian 12 arm64 root (scripts/mono-root.sh arm64) and cross build (scripts/build-arm64.sh) =="
  arm64_root="$(scripts/mono-root.sh arm64)"
  scripts/build-arm64.sh -DMLPD_WERROR=ON
fi
arm64_setup=$(( $(date +%s) - arm64_start ))

echo "== build (g++) =="
cmake -S . -B build -G Ninja -DMLPD_WERROR=ON -DMLPD_MONO612_ROOT="$mono612_root" -DMLPD_ARM64_ROOT="$arm64_root"
cmake --build build -j "$jobs"

echo "== install check =="
rm -rf build/install-check
cmake --install build --prefix build/install-check >/dev/null
test -x build/install-check/bin/mlpd
test -f build/install-check/lib/libmlpd.so

echo "== tests =="
ctest --test-dir build --output-on-failure -j "$jobs" -LE 'mono612|arm64|dotnet'

# .NET (CoreCLR, issue 35; docs/dotnet.md): the agent in real `dotnet` running tests/programs/dotnet/
# (ctest label dotnet), where the .NET SDK is on the PATH.
if command -v dotnet >/dev/null 2>&1; then
  echo "== .NET tests (dotnet $(dotnet --version 2>/dev/null || echo '?'), ctest label dotnet) =="
  ctest --test-dir build --output-on-failure -j "$jobs" -L dotnet
else
  echo "== .NET tests SKIPPED: no dotnet (the .NET SDK) on the PATH =="
fi

if [ -n "$mono612_root" ]; then
  echo "== integration tests against Mono 6.12 (Debian 13 root) =="
  ctest --test-dir build --output-on-failure -j "$jobs" -L mono612
fi

if [ -n "$arm64_root" ]; then
  echo "== tests on arm64 (the arm64 root under qemu-user) =="
  t0=$(date +%s)
  ctest --test-dir build --output-on-failure -j "$jobs" -L arm64
  echo "arm64 stage: root and cross build ${arm64_setup} s, tests $(( $(date +%s) - t0 )) s"
fi

# Release and RelWithDebInfo builds of the products (no tests, no benchmarks) with g++ and clang and
# -Werror: optimised builds warn differently (GCC 12's -Wrestrict at -O2, clang's extra warnings).
# g++ RelWithDebInfo is the build above.
for cfg in "g++ Release" "clang++ Release" "clang++ RelWithDebInfo"; do
  set -- $cfg
  cxx=$1 type=$2
  cc=gcc
  [ "$cxx" = clang++ ] && cc=clang
  dir="build-$cc-$(echo "$type" | tr '[:upper:]' '[:lower:]')"
  echo "== build ($cxx, $type, products only) =="
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DMLPD_WERROR=ON -DMLPD_BUILD_TESTS=OFF -DMLPD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$jobs"
done

# arch/generic, the fallback of any machine without an arch/ folder (CLOCK_MONOTONIC, leaf-only native
# samples, Mono's walk for every backtrace), built on this one: products and unit tests. Its integration
# tests (those that need native frames are registered disabled: label native_frames) run with
# MLPD_GENERIC_INTEGRATION=1.
echo "== build (arch/generic: products and unit tests) =="
cmake -S . -B build-generic -G Ninja -DMLPD_ARCH=generic -DMLPD_WERROR=ON -DMLPD_BENCH=OFF >/dev/null
cmake --build build-generic -j "$jobs"
build-generic/tests/unit/unit_tests
if [ "${MLPD_GENERIC_INTEGRATION:-0}" != 0 ]; then
  ctest --test-dir build-generic --output-on-failure -j "$jobs" -L integration
fi

# Sanitizers (scripts/sanitize.sh, in build-asan/ and build-tsan/): ASan+UBSan on the unit tests and a few
# agent runs in real Mono, TSan on the writer's lock-free tests. On by default; MLPD_SANITIZE=0 skips them.
if [ "${MLPD_SANITIZE:-1}" != 0 ]; then
  echo "== sanitizers (scripts/sanitize.sh) =="
  scripts/sanitize.sh
fi

echo "== fuzz (clang, libFuzzer) =="
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMLPD_FUZZ=ON -DMLPD_BUILD_TESTS=OFF -DMLPD_BENCH=OFF
cmake --build build-fuzz -j "$jobs" --target decoder_fuzz profile_fuzz
ctest --test-dir build-fuzz --output-on-failure
