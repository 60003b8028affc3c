#!/usr/bin/env bash
# Compiles every tests/programs/*.cs into the output directory given as $1.
# LogCount.cs, logprofiler_api.cs and heapshot_live.cs are compiled against Mono 6.8's Mono.Profiler.Log.dll.
# Usage: build_programs.sh OUTDIR     (exits non-zero on any failure)
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$1"
mkdir -p "$out"
MCS="${MCS:-mcs}"
PROFLOG_DLL="${PROFLOG_DLL:-/usr/lib/mono/4.5/Mono.Profiler.Log.dll}"

command -v "$MCS" >/dev/null 2>&1 || { echo "build_programs.sh: '$MCS' not found" >&2; exit 1; }

status=0
shopt -s nullglob
for src in "$here"/*.cs; do
    name="$(basename "$src" .cs)"
    extra=()
    if [ "$name" = "LogCount" ] || [ "$name" = "logprofiler_api" ] || [ "$name" = "heapshot_live" ]; then
        if [ ! -f "$PROFLOG_DLL" ]; then
            echo "build_programs.sh: $PROFLOG_DLL not found" >&2
            status=1
            continue
        fi
        extra=("-r:$PROFLOG_DLL")
    fi
    if ! "$MCS" -debug- -optimize+ -nowarn:618 "${extra[@]}" -out:"$out/$name.exe" "$src" >"$out/$name.build.log" 2>&1; then
        echo "build_programs.sh: failed to compile $src:" >&2
        cat "$out/$name.build.log" >&2
        status=1
    else
        rm -f "$out/$name.build.log"
    fi
done
exit $status
