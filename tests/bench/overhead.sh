#!/usr/bin/env bash
# Whole-program overhead: each benchmark program runs plain, under Mono 6.8's log profiler and under
# the mlpd agent with the same options, alternating the three, ROUNDS times. Prints the median CPU
# time (user+sys) and wall time of each, the profilers' CPU overhead (profiled - plain) and the
# ratio of our overhead to Mono's, plus bytes per event of both files.
# Besides the micro-benchmarks: real-world workloads, `mcs` compiling a generated C# file of a few
# thousand lines (generics, LINQ, lambdas, iterators: gen_csharp.py), a string-heavy program, an
# exception-heavy one and one that compiles and frees dynamic methods (Expressions, DynamicMethod,
# Regex: bench_dynamic). For the cases with backtraces, the share of backtraces our stack walker made
# (from the agent's `verbose` counts) is printed too.
# MODE=callgrind counts instructions instead (valgrind --tool=callgrind; one run per cell: counts barely
# vary, and they are the figure to trust on a loaded machine where CPU time is noise).
# CASES=regex runs only the cases whose name matches.
# MONO=command runs another Mono (plain, its own log profiler, and ours), e.g. Mono 6.12 of a Debian 13
# root through scripts/in-root.sh (MONO=build/roots-bin/mono612/mono, the wrapper cmake writes with
# -DMLPD_MONO612_ROOT); MCS_EXE=path is the mcs.exe that command runs for the compiler cases (default:
# the host's; a root's own, e.g. /usr/lib/mono/4.5/mcs.exe, is seen at its path inside the root). The
# benchmark programs are compiled with the host's mcs either way.
# Usage: [MODE=cpu|callgrind] [CASES=regex] [MONO=cmd] [MCS_EXE=path] tests/bench/overhead.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
agent="$build/agent/libmlpd.so"
mlpd="$build/reader/mlpd"
[ -f "$agent" ] || { echo "overhead: $agent not built" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mode="${MODE:-cpu}"
mono="${MONO:-mono}"
only="${CASES:-.}"
for p in bench_calls bench_alloc bench_threads bench_strings bench_exceptions bench_dynamic; do
  mcs -optimize+ -out:"$work/$p.exe" "$here/programs/$p.cs" >/dev/null
done
# The compiler workload: mono running mcs.exe on a generated source (the "program" is mcs itself).
python3 "$here/gen_csharp.py" 60 > "$work/gen.cs"
mcs_exe=$(awk '/mcs.exe/ {for (i = 1; i <= NF; i++) if ($i ~ /mcs\.exe$/) print $i}' "$(command -v mcs)" | head -1)
[ -f "$mcs_exe" ] || mcs_exe=/usr/lib/mono/4.5/mcs.exe
mcs_exe="${MCS_EXE:-$mcs_exe}"

# name | program | args | options
cases=(
  "calls|bench_calls|5|calls"
  "calls, 4 threads|bench_threads|2|calls"
  "calls,zip, 4 threads|bench_threads|2|calls,zip"
  "alloc, no backtraces|bench_alloc|5|nodefaults,gcalloc,maxframes=0"
  "alloc, backtraces|bench_alloc|2|nodefaults,gcalloc"
  "no events (attach only)|bench_calls|1|nodefaults"
  "compiler: calls|mcs||calls"
  "compiler: alloc, backtraces|mcs||nodefaults,gcalloc"
  "compiler: attach only|mcs||nodefaults"
  "compiler: sample|mcs||nodefaults,sample"
  "strings: alloc, backtraces|bench_strings|100|nodefaults,gcalloc"
  "strings: calls|bench_strings|100|calls"
  "exceptions: exception, backtraces|bench_exceptions|50|nodefaults,exception"
  "exceptions: gcalloc,exception, backtraces|bench_exceptions|50|nodefaults,gcalloc,exception"
  "exceptions: calls|bench_exceptions|50|calls"
  "dynamic methods: alloc, backtraces|bench_dynamic|1000|nodefaults,gcalloc"
  "dynamic methods: calls|bench_dynamic|1000|calls"
)
# The command line of a case's program.
prog_cmd() {
  if [ "$1" = mcs ]; then echo "$mcs_exe -target:exe -out:$work/gen.exe $work/gen.cs"; else echo "$work/$1.exe $2"; fi
}

# measure KIND PROGRAM ARGS OPTIONS -> prints "cpu wall rss_kib"
# (MODE=callgrind: "instructions instructions 0")
measure() {
  local kind=$1 prog=$2 args=$3 opts=$4 out="$work/out.mlpd" cmd
  cmd=$(prog_cmd "$prog" "$args")
  rm -f "$out"
  if [ "$mode" = callgrind ]; then
    local vg=(valgrind --tool=callgrind --callgrind-out-file=/dev/null)
    case $kind in
      plain) env -u LD_PRELOAD "${vg[@]}" $mono $cmd >/dev/null 2>"$work/vg" ;;
      mono)  "${vg[@]}" $mono --profile=log:$opts,output="$out" $cmd >/dev/null 2>"$work/vg" ;;
      mlpd)  LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$out" "${vg[@]}" $mono $cmd >/dev/null 2>"$work/vg" ;;
    esac
    local n
    n=$(grep -o "Collected : [0-9]*" "$work/vg" | awk '{print $3}')
    echo "$n $n 0"
    return
  fi
  case $kind in
    plain) "$here/cputime.py" "$work/t" env -u LD_PRELOAD $mono $cmd ;;
    mono)  "$here/cputime.py" "$work/t" $mono --profile=log:$opts,output="$out" $cmd ;;
    mlpd)  "$here/cputime.py" "$work/t" env LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,output=$out" $mono $cmd ;;
  esac
  awk '{printf "%.4f %.4f %d\n", $1, $2, $3}' "$work/t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

unit="cpu s"; [ "$mode" = callgrind ] && unit="Minstr"
[ "$mode" = callgrind ] && rounds=1
printf "%-42s %9s %9s %9s | %9s %9s %9s | %7s %11s %6s | %14s\n" "benchmark" "plain" "mono-log" "mlpd" \
  "wall" "wall" "wall" "ovh" "B/event" "ours" "peak RSS MiB"
printf "%-42s %9s %9s %9s | %9s %9s %9s | %7s %11s %6s | %14s\n" "" "$unit" "$unit" "$unit" "plain" "mono" "mlpd" \
  "ratio" "mono/us" "walker" "plain/mono/us"
for c in "${cases[@]}"; do
  IFS='|' read -r name prog args opts <<<"$c"
  [[ "$name" =~ $only ]] || continue
  : > "$work/plain"; : > "$work/mono"; : > "$work/mlpd"
  for ((r = 0; r < rounds; r++)); do
    for kind in plain mono mlpd; do measure $kind $prog "$args" "$opts" >> "$work/$kind"; done
  done
  # bytes per event of each profiler's file (one more run each, outside the timing)
  cmd=$(prog_cmd "$prog" "$args")
  $mono --profile=log:$opts,output="$work/m.mlpd" $cmd >/dev/null
  LD_PRELOAD="$agent" MLPD_OPTIONS="$opts,verbose,output=$work/o.mlpd" $mono $cmd >/dev/null 2>"$work/verbose"
  walker=$(sed -n 's/.*backtraces: \([0-9]*\) by our stack walker, \([0-9]*\) by mono.*/\1 \2/p' "$work/verbose" |
    awk '{ if ($1 + $2 > 0) printf "%.1f%%", 100 * $1 / ($1 + $2); else print "-" }')
  bpe() { "$mlpd" verify --json "$1" | python3 -c 'import json,sys,os; v=json.loads(sys.stdin.readline()); n=sum(v["counts"].values()); print("%.2f" % (os.path.getsize(sys.argv[1]) / max(n,1)))' "$1"; }
  pc=$(cut -d' ' -f1 "$work/plain" | median); mc=$(cut -d' ' -f1 "$work/mono" | median); oc=$(cut -d' ' -f1 "$work/mlpd" | median)
  pw=$(cut -d' ' -f2 "$work/plain" | median); mw=$(cut -d' ' -f2 "$work/mono" | median); ow=$(cut -d' ' -f2 "$work/mlpd" | median)
  rss=$(for k in plain mono mlpd; do cut -d' ' -f3 "$work/$k" | median; done | awk '{printf "%s%.0f", (NR > 1 ? "/" : ""), $1 / 1024}')
  [ "$mode" = callgrind ] && rss="-"
  if [ "$mode" = callgrind ]; then
    ratio=$(awk -v p="$pc" -v m="$mc" -v o="$oc" 'BEGIN { d = m - p; if (d <= 0) print "n/a"; else printf "%.3f", (o - p) / d }')
    ovh=$(awk -v p="$pc" -v o="$oc" 'BEGIN { printf "%+.2f%%", 100 * (o - p) / p }')
    pc=$(awk -v x="$pc" 'BEGIN { printf "%.1f", x / 1e6 }'); mc=$(awk -v x="$mc" 'BEGIN { printf "%.1f", x / 1e6 }')
    oc=$(awk -v x="$oc" 'BEGIN { printf "%.1f", x / 1e6 }'); pw="-"; mw="-"; ow="$ovh"
  else
    ratio=$(awk -v p="$pc" -v m="$mc" -v o="$oc" 'BEGIN { d = m - p; if (d < 0.05) print "n/a"; else printf "%.3f", (o - p) / d }')
  fi
  printf "%-42s %9s %9s %9s | %9s %9s %9s | %7s %11s %6s | %14s\n" "$name" "$pc" "$mc" "$oc" "$pw" "$mw" "$ow" "$ratio" \
    "$(bpe "$work/m.mlpd")/$(bpe "$work/o.mlpd")" "$walker" "$rss"
done
echo "ovh ratio = (mlpd cpu - plain cpu) / (mono-log cpu - plain cpu): our CPU overhead as a fraction of Mono's"
echo "(n/a where Mono's CPU overhead is below 0.05 s, i.e. within noise: compare the wall columns there)."
echo "MODE=callgrind: columns are millions of instructions; the mlpd 'wall' column is then our instruction"
echo "overhead over the plain run. walker: share of backtraces made by our stack walker (verbose counts)."
echo "peak RSS: medians of the maximum resident set size (wait4's rusage, MiB), CPU mode only."
