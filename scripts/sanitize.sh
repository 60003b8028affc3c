#!/usr/bin/env bash
# Sanitizer runs (part of scripts/test.sh):
#  * ASan+UBSan build (build-asan/): every unit test, then the agent in real Mono runs (allocations and
#    calls, heapshots, sampling, the command port) with the reader checking each file, under ASan+UBSan;
#  * TSan build (build-tsan/): the writer's lock-free buffer pool and flush queue tests.
# Any sanitizer report fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

asan="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
echo "-- ASan+UBSan build"
# No -Werror here: GCC's -Wmaybe-uninitialized is unreliable with sanitizers (false positives in
# <regex> through Catch2); the warnings are checked by the normal builds.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLPD_WERROR=OFF -DMLPD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$asan" -DCMAKE_CXX_FLAGS="$asan" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-asan -j "$jobs" --target unit_tests mlpd mlpd_agent test_programs

echo "-- unit tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build-asan/tests/unit/unit_tests

echo "-- the agent in Mono under ASan+UBSan"
# Mono is not instrumented: the ASan runtime is preloaded before our agent. Mono's own allocations are
# not leaks of ours (detect_leaks=0); Mono handles SIGSEGV itself (null references).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
preload="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so) $PWD/build-asan/agent/libmlpd.so"
programs=build-asan/tests/programs
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {  # run NAME OPTIONS PROGRAM [ARGS...]: profiled run, sanitizer-clean stderr, file verified
  local name=$1 options=$2
  shift 2
  if ! LD_PRELOAD="$preload" MLPD_OPTIONS="$options,output=$work/$name.mlpd" mono "$@" \
      >"$work/$name.out" 2>"$work/$name.err" </dev/null; then
    echo "sanitize: $name: the program failed"; tail -n 40 "$work/$name.err"; exit 1
  fi
  if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$work/$name.err"; then
    echo "sanitize: $name: sanitizer report"; head -n 60 "$work/$name.err"; exit 1
  fi
  build-asan/reader/mlpd verify --strict "$work/$name.mlpd" >/dev/null
  echo "ok  $name ($options)"
}
run alloc-calls "alloc,calls" "$programs/alloc.exe"
run heapshot "heapshot,gcalloc" "$programs/heapshot.exe"
run sampling "sample=1000,maxframes=16" "$programs/samplecalls.exe"
run threads "alloc,zip" "$programs/threads.exe"

echo "-- TSan build: the writer's lock-free tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLPD_WERROR=OFF -DMLPD_BENCH=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build build-tsan -j "$jobs" --target writer_concurrency_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/writer_concurrency_tests
