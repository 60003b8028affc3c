#!/usr/bin/env bash
# Prints the Debian archive this machine's apt is configured with (for debootstrap: scripts/mono-root.sh,
# scripts/check-fresh-debian.sh), so that a machine behind a local mirror or an apt proxy makes its roots
# from the same place. Order: $MLPD_DEBIAN_MIRROR; the first Debian archive (a URI whose path ends in
# /debian, not debian-security) of an enabled entry in /etc/apt/sources.list, then
# /etc/apt/sources.list.d/*.list (one-line form) and *.sources (deb822 form); else the Debian default,
# http://deb.debian.org/debian. Usage: mirror=$(scripts/debian-mirror.sh)   (APT_ETC: another /etc/apt)
set -uo pipefail
if [ -n "${MLPD_DEBIAN_MIRROR:-}" ]; then echo "$MLPD_DEBIAN_MIRROR"; exit 0; fi
etc="${APT_ETC:-/etc/apt}"
is_archive() { [[ "$1" =~ ^(https?|ftp|file):// ]] && [[ "${1%/}" =~ /debian$ ]]; }
one_line() {  # deb [options] URI suite components...
  awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } print $i }' "$1" 2>/dev/null
}
deb822() {  # stanzas with Types: deb, Enabled: not no; every URI of their URIs: field
  awk 'BEGIN { RS = ""; FS = "\n" }
       { deb = 0; on = 1; uris = ""
         for (i = 1; i <= NF; i++) {
           if ($i ~ /^#/) continue
           split($i, kv, ":[ \t]*"); k = tolower(kv[1]); v = substr($i, length(kv[1]) + 2); sub(/^[ \t]+/, "", v)
           if (k == "types" && v ~ /(^| )deb( |$)/) deb = 1
           if (k == "enabled" && tolower(v) == "no") on = 0
           if (k == "uris") uris = v }
         if (deb && on) { n = split(uris, u, /[ \t]+/); for (j = 1; j <= n; j++) print u[j] } }' "$1" 2>/dev/null
}
for f in "$etc/sources.list" "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  case "$f" in *.sources) uris=$(deb822 "$f") ;; *) uris=$(one_line "$f") ;; esac
  for u in $uris; do
    if is_archive "$u"; then echo "${u%/}"; exit 0; fi
  done
done
echo "http://deb.debian.org/debian"
