#!/bin/sh
# Runs a program of a Debian root made by scripts/mono-root.sh (Mono 6.12 of Debian 13, or arm64's Mono
# under qemu-user) as if it were this machine's: same process (the PID a test signals is the program's),
# same environment (LD_PRELOAD, MLPD_OPTIONS), same working directory, and this machine's /tmp, /dev, /sys,
# /proc and the directories named in MLPD_ROOT_BINDS (the checkout and the build tree) at their own paths.
# The mounts live in a private mount namespace that ends with the program: nothing stays mounted in the
# root, so deleting the build tree never reaches through into /tmp or the checkout.
#   scripts/in-root.sh ROOT PROGRAM [ARGS...]          (as root)
set -eu
[ $# -ge 2 ] || { echo "usage: in-root.sh ROOT PROGRAM [ARGS...]" >&2; exit 2; }
root=$1; shift
[ -e "$root/.mlpd-root-ok" ] || { echo "in-root.sh: $root is not a finished root (scripts/mono-root.sh)" >&2; exit 2; }
# The preload would load into unshare, sh, mount and chroot themselves: set it again only for the program.
# A caller whose preload this machine's loader cannot load (another machine's agent) passes it as
# MLPD_ROOT_PRELOAD instead (tests/integration/lib/root_exec.c).
MLPD_ROOT_PRELOAD=${MLPD_ROOT_PRELOAD-${LD_PRELOAD-}}
export MLPD_ROOT_PRELOAD
unset LD_PRELOAD
exec unshare --mount --propagation private /bin/sh -c '
  set -e
  root=$1 wd=$2; shift 2
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount --bind /tmp "$root/tmp"
  for d in $MLPD_ROOT_BINDS; do
    [ -d "$d" ] || continue
    mkdir -p "$root$d"
    mount --bind "$d" "$root$d"
  done
  exec chroot "$root" /bin/sh -c "cd \"\$1\" 2>/dev/null || cd /; shift; [ -n \"\$MLPD_ROOT_PRELOAD\" ] && export LD_PRELOAD=\"\$MLPD_ROOT_PRELOAD\"; unset MLPD_ROOT_PRELOAD; exec \"\$@\"" sh "$wd" "$@"
' sh "$root" "$PWD" "$@"
