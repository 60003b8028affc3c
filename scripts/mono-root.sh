#!/usr/bin/env bash
# Makes (or reuses) a Debian root with Mono for the tests on another runtime or machine, and prints its path.
#   scripts/mono-root.sh trixie   Debian 13, amd64: Mono 6.12 (issue 27)
#   scripts/mono-root.sh arm64    Debian 12, arm64 under qemu-user: Mono 6.8 arm64 (issue 23)
# The root lives in $MLPD_ROOTS (default: build/roots in the checkout); a root whose last step finished
# (the file .mlpd-root-ok in it) is reused as it is. Runs debootstrap (installed here if missing); as root.
# For arm64 it also registers qemu-user for aarch64 programs (binfmt_misc), every time: the registration
# does not outlive the machine. Programs in the root are run with scripts/in-root.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:?usage: mono-root.sh trixie|arm64}"
roots="${MLPD_ROOTS:-$here/build/roots}"
# libc6-dbg: libc's full symbol table, so that sampled waits are named (as on the host, install-deps.sh);
# mono-runtime-dbg: the runtime's own (mono-sgen's), so that its GC and JIT frames are named (issue 33.5).
pkgs=mono-runtime,mono-mcs,mono-utils,libmono-profiler,libmono-system-net-http4.0-cil,libunwind8,libdeflate0,zlib1g,libstdc++6,libc6-dbg,mono-runtime-dbg,python3,procps,ca-certificates
case "$name" in
  trixie) suite=trixie arch=amd64 ;;
  arm64)  suite=bookworm arch=arm64
          # The arm64 development packages: the root is also the cross build's sysroot (build-arm64.sh).
          pkgs=$pkgs,libc6-dev,libstdc++-12-dev,libunwind-dev,libdeflate-dev,zlib1g-dev,libprotobuf-dev,libcurl4-openssl-dev,catch2,libmono-2.0-dev ;;
  *) echo "mono-root.sh: unknown root '$name' (trixie or arm64)" >&2; exit 2 ;;
esac
dir="$roots/$name"
log() { echo "mono-root.sh: $*" >&2; }
need() {  # package, command
  command -v "$2" >/dev/null 2>&1 && return 0
  log "installing $1"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

binfmt_arm64() {
  need qemu-user-static qemu-aarch64-static
  need binfmt-support update-binfmts
  if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  fi
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    # The line Debian ships for systemd-binfmt; its F flag opens the interpreter at registration, so it
    # works inside the root too.
    grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | head -n1 > /proc/sys/fs/binfmt_misc/register
  fi
}

[ "$arch" = arm64 ] && binfmt_arm64
if [ ! -e "$dir/.mlpd-root-ok" ]; then
  need debootstrap debootstrap
  if [ -d "$dir" ]; then
    log "removing the unfinished root $dir"
    for m in proc dev; do mountpoint -q "$dir/$m" && umount -l "$dir/$m"; done
    rm -rf "$dir"
  fi
  mkdir -p "$roots"
  log "making $dir (Debian $suite $arch; several minutes)"
  start=$(date +%s)
  mirror=$("$here/scripts/debian-mirror.sh")  # the machine's apt mirror (or proxy)
  log "from $mirror"
  debootstrap --variant=minbase --arch="$arch" --include="$pkgs" "$suite" "$dir" "$mirror" \
    > "$roots/$name.debootstrap.log" 2>&1 || { log "debootstrap failed: see $roots/$name.debootstrap.log"; tail -n 20 "$roots/$name.debootstrap.log" >&2; exit 1; }
  echo "$pkgs" > "$dir/.mlpd-root-ok"
  log "made in $(( $(date +%s) - start )) s: $(chroot "$dir" mono --version | head -n1)"
elif [ "$(cat "$dir/.mlpd-root-ok")" != "$pkgs" ]; then
  # A root made by an earlier version of this script: add what the list has gained.
  log "updating the packages of $dir"
  chroot "$dir" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(echo "$pkgs" | tr , ' ')" \
    > "$roots/$name.update.log" 2>&1 || { log "apt-get in the root failed: see $roots/$name.update.log"; exit 1; }
  echo "$pkgs" > "$dir/.mlpd-root-ok"
fi
echo "$dir"
