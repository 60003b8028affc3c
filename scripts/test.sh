#!/usr/bin/env bash
# Builds mlpd and runs every test: unit tests, integration tests against real Mono 6.8, .NET, Mono 6.12 (a
# Debian 13 root) and arm64 (a Debian 12 arm64 root under qemu-user), a clang Release build and a short
# libFuzzer run of the decoder. Installs missing Debian packages first.
# Usage: scripts/test.sh              (from anywhere; builds in build/, build-arm64/, build-clang-release/, build-fuzz/)
#        MLPD_EXTRA=1 scripts/test.sh  also the slow extras: g++ Release, clang RelWithDebInfo, arch/generic
#                                     with its unit tests, and the sanitizer runs (scripts/sanitize.sh)
# Kept between runs, so that a clean clone does not start from nothing (about 60 minutes cold on 2 cores,
# 35 warm): the roots in ${XDG_CACHE_HOME:-~/.cache}/mlpd/roots (MLPD_ROOTS sets another place) and the
# compiler's results in ccache's own cache (MLPD_CCACHE=0: no ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { echo "== $* [$(( $(date +%s) - start )) s since the start] =="; }

scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
export MLPD_ROOTS="${MLPD_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/mlpd/roots}"
if [ "${MLPD_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  # CMake's default launcher for every build configured below (and by build-arm64.sh, sanitize.sh); paths
  # relative to the checkout, so that clones elsewhere share the cache.
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
fi

# Debian 13's Mono 6.12 in a root of its own (scripts/mono-root.sh: made once, about 4 minutes, then
# reused): every integration test runs there too (ctest label mono612). MLPD_MONO612=0 skips it.
# On Debian 13 itself the host's Mono is 6.12 already.
mono612_root=""
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "${MLPD_MONO612:-1}" != 0 ] && [ "$codename" != trixie ]; then
  stage "Debian 13 root with Mono 6.12 (scripts/mono-root.sh trixie)"
  mono612_root="$(scripts/mono-root.sh trixie)"
fi

# arm64 (issue 23): a Debian 12 arm64 root with Mono 6.8 run under qemu-user (scripts/mono-root.sh arm64:
# made once, about 9 minutes, then reused), the cross build of the agent, the reader and the unit tests
# into out-arm64/ and build-arm64/ (scripts/build-arm64.sh, the root as its sysroot), and the tests marked
# ARM64 run there (ctest label arm64, below). On an x86-64 machine; MLPD_ARM64=0 skips it.
arm64_root=""
arm64_start=$(date +%s)
if [ "${MLPD_ARM64:-1}" != 0 ] && [ "$(uname -m)" = x86_64 ]; then
  stage "arm64: Debian 12 arm64 root (scripts/mono-root.sh arm64) and cross build (scripts/build-arm64.sh)"
  arm64_root="$(scripts/mono-root.sh arm64)"
  scripts/build-arm64.sh -DMLPD_WERROR=ON
fi
arm64_setup=$(( $(date +%s) - arm64_start ))

stage "build (g++)"
cmake -S . -B build -G Ninja -DMLPD_WERROR=ON -DMLPD_MONO612_ROOT="$mono612_root" -DMLPD_ARM64_ROOT="$arm64_root"
cmake --build build -j "$jobs"

stage "install check"
rm -rf build/install-check
cmake --install build --prefix build/install-check >/dev/null
test -x build/install-check/bin/mlpd
test -f build/install-check/lib/libmlpd.so

stage "tests"
ctest --test-dir build --output-on-failure -j "$jobs" -LE 'mono612|arm64|dotnet'

# .NET (CoreCLR, issue 35; docs/dotnet.md): the agent in real `dotnet` running tests/programs/dotnet/
# (ctest label dotnet), where the .NET SDK is on the PATH.
if command -v dotnet >/dev/null 2>&1; then
  stage ".NET tests (dotnet $(dotnet --version 2>/dev/null || echo '?'), ctest label dotnet)"
  ctest --test-dir build --output-on-failure -j "$jobs" -L dotnet
else
  echo "== .NET tests SKIPPED: no dotnet (the .NET SDK) on the PATH =="
fi

if [ -n "$mono612_root" ]; then
  stage "integration tests against Mono 6.12 (Debian 13 root)"
  ctest --test-dir build --output-on-failure -j "$jobs" -L mono612
fi

if [ -n "$arm64_root" ]; then
  stage "tests on arm64 (the arm64 root under qemu-user)"
  t0=$(date +%s)
  ctest --test-dir build --output-on-failure -j "$jobs" -L arm64
  echo "arm64 stage: root and cross build ${arm64_setup} s, tests $(( $(date +%s) - t0 )) s"
fi

# An optimised build with the other compiler and -Werror: optimised builds warn differently (clang's extra
# warnings, inlining). The g++ RelWithDebInfo build is the one above; more configurations in the extras.
release() {  # compiler, build type
  local cxx=$1 type=$2 cc=gcc
  [ "$cxx" = clang++ ] && cc=clang
  local dir="build-$cc-$(echo "$type" | tr '[:upper:]' '[:lower:]')"
  stage "build ($cxx, $type, products only)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DMLPD_WERROR=ON -DMLPD_BUILD_TESTS=OFF -DMLPD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$jobs"
}
release clang++ Release

if [ "${MLPD_EXTRA:-0}" != 0 ]; then
  release g++ Release
  release clang++ RelWithDebInfo
  # arch/generic, the fallback of any machine without an arch/ folder (CLOCK_MONOTONIC, leaf-only native
  # samples, Mono's walk for every backtrace), built on this one: products and unit tests. Its integration
  # tests (those that need native frames are registered disabled: label native_frames) run with
  # MLPD_GENERIC_INTEGRATION=1.
  stage "build (arch/generic: products and unit tests)"
  cmake -S . -B build-generic -G Ninja -DMLPD_ARCH=generic -DMLPD_WERROR=ON -DMLPD_BENCH=OFF >/dev/null
  cmake --build build-generic -j "$jobs"
  build-generic/tests/unit/unit_tests
  if [ "${MLPD_GENERIC_INTEGRATION:-0}" != 0 ]; then
    ctest --test-dir build-generic --output-on-failure -j "$jobs" -L integration
  fi
  # Sanitizers (scripts/sanitize.sh, in build-asan/ and build-tsan/): ASan+UBSan on the unit tests and a
  # few agent runs in real Mono, TSan on the writer's lock-free tests.
  stage "sanitizers (scripts/sanitize.sh)"
  scripts/sanitize.sh
else
  stage "extras SKIPPED (MLPD_EXTRA=1 runs them; about 30 minutes cold): g++ Release, clang RelWithDebInfo, arch/generic build and unit tests, sanitizers (scripts/sanitize.sh)"
fi

stage "fuzz (clang, libFuzzer)"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMLPD_FUZZ=ON -DMLPD_BUILD_TESTS=OFF -DMLPD_BENCH=OFF
cmake --build build-fuzz -j "$jobs" --target decoder_fuzz profile_fuzz
ctest --test-dir build-fuzz --output-on-failure
stage "all passed"
