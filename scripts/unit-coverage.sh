#!/usr/bin/env bash
# The unit tests' coverage of the product's files, measured: builds unit_tests (and, so that every
# product file's code lines are known, the mlpd executable and libmlpd.so) with gcc's --coverage at -O0
# in a build directory of its own (default build-cov/; ccache used when installed), runs unit_tests
# once, and lists, per product file (agent/, codec/, writer/, runtime-hooks/, reader/; not tests/, not
# generated or third-party code):
#
#   status     lines  code  executed  file
#   touched      412   230       201  writer/src/buffer_pool.cpp
#   untouched    180    95         0  reader/cli/cmd_diff.cpp
#
# lines: the file's length; code: its lines with code that some object of the build compiled (gcov's
# executable lines, merged over every object that includes it); executed: those of them the unit tests
# ran. "touched": at least one line executed. Files without a code line are listed as "no code" (headers
# of declarations only) or "not built" (another machine's or a configuration's sources, assembly) and
# left out of the counts. The last lines:
#
#   N of M product files touched; K of L files of 100 lines or more
#   untouched, 100 lines or more: ...
#
# Not part of CI's default run (scripts/test.sh): a measure for whoever adds tests (README.md, "Building by
# hand").
# Usage: scripts/unit-coverage.sh [BUILD_DIR]; the table is also kept in BUILD_DIR/unit-coverage.txt.
# Uses gcc's gcov (JSON intermediate format: gcc 9 or later) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-cov}
jobs=$(nproc 2>/dev/null || echo 2)

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Debug: no -O flag (so -O0), -g; the coverage flags on every target, the product's and the tests'.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMLPD_WERROR=OFF -DMLPD_BENCH=OFF \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ "${launcher[@]}" \
  -DCMAKE_C_FLAGS="--coverage -O0" -DCMAKE_CXX_FLAGS="--coverage -O0" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage >/dev/null
cmake --build "$dir" -j "$jobs" --target unit_tests mlpd mlpd_agent

# Counts from this run only.
find "$dir" -name '*.gcda' -delete
echo "-- unit tests ($SECONDS s)"
rc=0
"$dir/tests/unit/unit_tests" >"$dir/unit-coverage-tests.log" 2>&1 || rc=$?
tail -n 3 "$dir/unit-coverage-tests.log"
[ "$rc" -eq 0 ] || echo "unit-coverage: unit_tests exited with $rc (the figures are of this run; see $dir/unit-coverage-tests.log)"

echo "-- coverage ($SECONDS s)"
python3 - "$PWD" "$dir" "$jobs" <<'PY' | tee "$dir/unit-coverage.txt"
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

root, build, jobs = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), int(sys.argv[3])
ROOMS = ("agent/", "codec/", "writer/", "runtime-hooks/", "reader/")
SUFFIXES = (".cpp", ".cc", ".c", ".h", ".hpp", ".S")

tracked = subprocess.run(["git", "ls-files", "--", *ROOMS], cwd=root, check=True, capture_output=True,
                         text=True).stdout.split()
product = sorted(p for p in tracked if p.endswith(SUFFIXES))
product_set = set(product)

known = {}
def relative(path, cwd):
    """The repository path of a source file named in a gcov record, or None (outside the product). A
    path from another checkout of the same sources (a .gcno that ccache shared) is matched by its
    longest tail that names a product file."""
    key = (path, cwd)
    if key not in known:
        full = os.path.realpath(os.path.join(cwd, path))
        rel = full[len(root) + 1:] if full.startswith(root + os.sep) else None
        if rel is None:
            parts = full.split(os.sep)
            rel = next((t for t in (os.sep.join(parts[i:]) for i in range(1, len(parts))) if t in product_set), None)
        known[key] = rel if rel in product_set else None
    return known[key]

gcnos = []
for d, _, files in os.walk(build):
    gcnos += [os.path.join(d, f) for f in files if f.endswith(".gcno")]
gcnos.sort()

code = {}      # file -> set of line numbers with code
executed = {}  # file -> set of line numbers run

def run_gcov(batch):
    # JSON intermediate format on stdout, one document per object; a .gcno without .gcda (an object the
    # tests never ran) gives its lines with count 0.
    out = subprocess.run(["gcov", "--json-format", "--stdout", *batch], cwd=build, capture_output=True, text=True)
    return out.stdout

batches = [gcnos[i:i + 40] for i in range(0, len(gcnos), 40)]
with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
    for text in pool.map(run_gcov, batches):
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            doc = json.loads(line)
            cwd = doc.get("current_working_directory", build)
            for f in doc.get("files", []):
                rel = relative(f["file"], cwd)
                if rel is None:
                    continue
                c = code.setdefault(rel, set())
                e = executed.setdefault(rel, set())
                for ln in f.get("lines", []):
                    c.add(ln["line_number"])
                    if ln.get("count", 0) > 0:
                        e.add(ln["line_number"])

def length(p):
    with open(os.path.join(root, p), "rb") as fh:
        return fh.read().count(b"\n")

rows, counted, touched, big, big_touched, untouched_big = [], 0, 0, 0, 0, []
for p in product:
    n = length(p)
    c = len(code.get(p, ()))
    e = len(executed.get(p, ()))
    if c == 0:
        status = "no code" if p.endswith((".h", ".hpp")) else "not built"
    else:
        status = "touched" if e > 0 else "untouched"
        counted += 1
        touched += e > 0
        if n >= 100:
            big += 1
            big_touched += e > 0
            if e == 0:
                untouched_big.append(p)
    rows.append((status, n, c, e, p))

print(f"{'status':<10} {'lines':>6} {'code':>6} {'executed':>8}  file")
for status, n, c, e, p in rows:
    print(f"{status:<10} {n:>6} {c:>6} {e:>8}  {p}")
print()
print(f"{touched} of {counted} product files touched; {big_touched} of {big} files of 100 lines or more")
print(f"untouched: {counted - touched} files, {big - big_touched} of them 100 lines or more")
print("untouched, 100 lines or more: " + (" ".join(untouched_big) if untouched_big else "none"))
PY
exit "$rc"
