#!/usr/bin/env bash
# Cross build for arm64 (issue 23): the agent, the CLI and the unit tests for aarch64, with Debian's
# g++-aarch64-linux-gnu and a Debian 12 arm64 root as the sysroot (scripts/mono-root.sh arm64: Mono 6.8
# arm64 and the development packages; the same root runs the arm64 tests under qemu-user). Installs what
# is missing (cross compiler, CMake, qemu-user, debootstrap) on a Debian 12 machine; reuses the root, the
# build directory and what is installed. As root (debootstrap, binfmt_misc).
#   scripts/build-arm64.sh     -> out-arm64/{bin/mlpd,lib/libmlpd.so,lib/libmono-profiler-mlpd.so},
#                                 out-arm64/mlpd_VERSION_arm64.deb; build tree in build-arm64/
# MLPD_ARM64_BUILD / MLPD_ARM64_OUT: other build / output directories. MLPD_ROOTS: where roots live.
# CMake options for the cross build may follow on the command line (e.g. -DMLPD_WERROR=ON).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
build="${MLPD_ARM64_BUILD:-$here/build-arm64}"
out="${MLPD_ARM64_OUT:-$here/out-arm64}"
log() { echo "build-arm64.sh: $*" >&2; }

# This machine's tools: the cross compiler, CMake and Ninja, pkg-config, protoc (the same protobuf as
# the root's library), help2man (the man page, running the arm64 mlpd under qemu-user), dpkg-dev.
host_pkgs=(g++-aarch64-linux-gnu cmake ninja-build pkg-config protobuf-compiler qemu-user-static
           binfmt-support debootstrap dpkg-dev help2man file)
missing=()
for p in "${host_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The arm64 root (made once, ~8 minutes; reused) is the sysroot: headers and libraries of Debian 12 arm64.
root="$(scripts/mono-root.sh arm64)"
export MLPD_SYSROOT="$root"
# Programs the build runs for arm64 (help2man on mlpd, Catch2's test listing) go through qemu-user with
# the root's loader and libraries.
export QEMU_LD_PREFIX="$root"

log "configuring $build (sysroot $root)"
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$here/cmake/toolchain-aarch64.cmake" \
  -DMLPD_SYSROOT="$root" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLPD_BENCH=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  "$@" >/dev/null
# The products, the man page, the unit tests, the fuzz targets' seed runners and the test programs
# (the C# ones beside their arm64 native libraries, which samplenative.exe's DllImport finds next to
# it); not the test tools, whose x86-64 builds serve the arm64 tests as they are.
log "building"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target mlpd mlpd_agent mlpd_attach_agent mlpd_man unit_tests fuzz_seed_runners test_programs
rm -rf "$out"
cmake --install "$build" --prefix "$out" >/dev/null
# The package's Depends: dpkg-shlibdeps reads this machine's package database, so the cross build names
# the packages of the libraries the products need (their DT_NEEDED) from the root's shlibs files.
deps=()
for soname in $(aarch64-linux-gnu-readelf -d "$out/bin/mlpd" "$out/lib/libmlpd.so" "$out/lib/libmono-profiler-mlpd.so" |
                sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
  name="${soname%%.so.*}" ver="${soname##*.so.}"
  dep="$(awk -v n="$name" -v v="$ver" '$1 == n && $2 == v && !seen { $1 = ""; $2 = ""; sub(/^ +/, ""); print; seen = 1 }' \
        "$root"/var/lib/dpkg/info/*.shlibs)"
  [ -n "$dep" ] || { log "no package in the root provides $soname (its shlibs)"; exit 1; }
  deps+=("$dep")
done
depends="$(printf '%s\n' "${deps[@]}" | sort -u | paste -sd, | sed 's/,/, /g'), mono-runtime (>= 6.8)"
(cd "$build" && cpack -G DEB -D CPACK_DEBIAN_PACKAGE_DEPENDS="$depends" >/dev/null)
cp "$build"/mlpd_*_arm64.deb "$out"/
for f in bin/mlpd lib/libmlpd.so lib/libmono-profiler-mlpd.so; do
  case "$(file -L "$out/$f")" in *"ARM aarch64"*) ;; *) log "$out/$f is not an arm64 ELF file"; exit 1 ;; esac
done
log "made $out: $(cd "$out" && echo bin/mlpd lib/libmlpd.so lib/libmono-profiler-mlpd.so mlpd_*_arm64.deb)"
