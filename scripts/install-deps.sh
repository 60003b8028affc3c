#!/usr/bin/env bash
# Installs every build and test dependency of mlpd from Debian's packages. Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  zlib1g-dev libunwind-dev catch2 libbenchmark-dev
  libc6-dbg  # libc's full symbol table: sampled waits named __futex_abstimed_wait_common, not a gap
  libmono-2.0-dev
  mono-runtime mono-mcs mono-utils libmono-profiler
  clang libclang-rt-14-dev
  python3 procps
  chromium  # headless: the HTML flame graph test (tests/integration/report) and docs/reports.md's picture
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
