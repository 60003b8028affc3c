#!/usr/bin/env bash
# The README's two commands on a fresh Debian machine, made here as a root: makes a clean minimal Debian
# root (debootstrap; trixie = Debian 13 by default), clones this checkout's HEAD into it, and runs
# `scripts/demo.sh` and `scripts/test.sh` there as a new user would, printing each one's time and exit
# status. Slow (the packages, a whole build and every test): not part of scripts/test.sh.
#   scripts/check-fresh-debian.sh [trixie|bookworm]        (as root; the root is build/fresh-SUITE)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${1:-trixie}"
dir="$here/build/fresh-$suite"
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
rm -rf "$dir"
mkdir -p "$dir"
start=$(date +%s)
# The Debian archive this machine's apt uses (a local mirror or proxy), as scripts/mono-root.sh.
debootstrap --variant=minbase --include=git,ca-certificates,sudo "$suite" "$dir" "$("$here/scripts/debian-mirror.sh")" \
  > "$dir.debootstrap.log" 2>&1 || { echo "debootstrap failed: $dir.debootstrap.log"; exit 1; }
echo "check-fresh: root made in $(( $(date +%s) - start )) s"
git clone -q "$here" "$dir/src"
# What a fresh machine of this kind has that a new root has not: the machine's own local CA certificates
# (a network that inspects TLS) and its proxy and CA variables; nothing of the project's.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$dir/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
  chroot "$dir" update-ca-certificates >/dev/null 2>&1 || true
fi
passenv=""
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY NODE_EXTRA_CA_CERTS SSL_CERT_FILE; do
  [ -n "${!v:-}" ] && passenv="$passenv $v=${!v}"
done
# Inside: a private mount namespace with /proc, /dev, /dev/shm, /sys and its own /tmp.
run_in() {
  unshare --mount --propagation private /bin/sh -c '
    set -e
    r=$1; shift
    mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"; mount --rbind /sys "$r/sys"
    mount -t tmpfs tmpfs "$r/tmp"
    exec chroot "$r" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      LANG=C.UTF-8 TERM=dumb $MLPD_PASSENV /bin/bash -c "cd /src && $*"' sh "$dir" "$@"
}
export MLPD_PASSENV="$passenv"
status=0
for cmd in scripts/demo.sh scripts/test.sh; do
  t0=$(date +%s)
  # Debian 13 is the host here already: no second Debian 13 root inside it; the arm64 stage (a root
  # under qemu) is the Debian 12 CI's, not this check's.
  run_in "MLPD_MONO612=0 MLPD_ARM64=0 $cmd" > "$dir.$(basename "$cmd" .sh).log" 2>&1
  rc=$?
  echo "check-fresh: $suite: $cmd exit $rc in $(( $(date +%s) - t0 )) s (log: $dir.$(basename "$cmd" .sh).log)"
  [ $rc -eq 0 ] || status=1
done
grep -E "tests passed|tests failed" "$dir.test.log" | sed 's/^/check-fresh: /'
exit $status
