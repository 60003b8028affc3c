#!/usr/bin/env bash
# A GUI-like start (issue 22, item 6: KeePass's window appeared after 3x its plain time under
# `sample,alloc`): tests/bench/gen_startup.py writes a program that JIT-compiles thousands of methods
# (some with frames over 4 KiB, as a form's InitializeComponent), allocates, and compiles and frees
# dynamic methods (Expressions, DynamicMethods, a compiled Regex). Runs it plain and under the agent
# with OPTIONS (default sample,alloc), alternating, ROUNDS times; with BASE_BUILD set, also under that
# build's agent (e.g. main's, for a before/after in one run). Prints the median CPU (user+sys) and
# wall seconds and the ratios to the plain run; where `perf record` works, also the share of the
# process's CPU samples in the agent (libmlpd.so, the libunwind it opens, and libstdc++, which Mono
# does not link: its samples are the agent's std::map and friends).
# Usage: [OPTIONS=...] [BASE_BUILD=dir] tests/bench/startup.sh [BUILD_DIR] [ROUNDS] [CLASSES] [DYNAMIC]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
classes="${3:-1500}"
dynamic="${4:-1500}"
opts="${OPTIONS:-sample,alloc}"
agent="$build/agent/libmlpd.so"
[ -f "$agent" ] || { echo "startup: $agent not built" >&2; exit 1; }
base=""
[ -n "${BASE_BUILD:-}" ] && base="$(cd "$BASE_BUILD" && pwd)/agent/libmlpd.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/gen_startup.py" "$classes" > "$work/startup.cs"
mcs -optimize+ -nowarn:414 -out:"$work/startup.exe" "$work/startup.cs" >/dev/null

kinds=(plain ours)
[ -n "$base" ] && kinds+=(base)
run() {  # KIND -> "cpu wall" of one run
  case $1 in
    plain) "$here/cputime.py" "$work/t" env -u LD_PRELOAD mono "$work/startup.exe" "$dynamic" ;;
    ours)  "$here/cputime.py" "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$work/o.mlpd" mono "$work/startup.exe" "$dynamic" ;;
    base)  "$here/cputime.py" "$work/t" env LD_PRELOAD="$base" MLPD_OPTIONS="$opts,output=$work/b.mlpd" mono "$work/startup.exe" "$dynamic" ;;
  esac
  cut -d' ' -f1,2 "$work/t"
}
for k in "${kinds[@]}"; do : > "$work/$k"; done
for ((r = 0; r < rounds; r++)); do
  for k in "${kinds[@]}"; do run "$k" >> "$work/$k"; done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
pc=$(cut -d' ' -f1 "$work/plain" | median); pw=$(cut -d' ' -f2 "$work/plain" | median)
echo "startup ($classes classes, $dynamic dynamic methods pairs), $opts, $rounds rounds: median CPU s / wall s"
printf "%-6s %8.3f %8.3f\n" plain "$pc" "$pw"
for k in "${kinds[@]:1}"; do
  c=$(cut -d' ' -f1 "$work/$k" | median); w=$(cut -d' ' -f2 "$work/$k" | median)
  share="-"
  a="$agent"; [ "$k" = base ] && a="$base"
  if perf record -q -o "$work/perf.data" env LD_PRELOAD="$a" MLPD_OPTIONS="$opts,output=$work/p.mlpd" \
       mono "$work/startup.exe" "$dynamic" >/dev/null 2>&1; then
    share=$(perf report -i "$work/perf.data" --no-children --sort dso 2>/dev/null |
      awk '/libmlpd|libunwind|libstdc\+\+/ {s += $1} END {printf "%.1f%%", s}')
  fi
  printf "%-6s %8.3f %8.3f   CPU x%.2f  wall x%.2f  agent's share of samples %s\n" "$k" "$c" "$w" \
    "$(awk -v a="$c" -v b="$pc" 'BEGIN {print a / b}')" "$(awk -v a="$w" -v b="$pw" 'BEGIN {print a / b}')" "$share"
done
