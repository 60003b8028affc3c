#!/usr/bin/env bash
# Sanitizer runs (part of scripts/test.sh):
#  * ASan+UBSan build (build-asan/): every unit test, then the agent in six real Mono runs (allocations
#    and calls, heapshots, sampling, threads with zip, zip with the threads compressing every buffer, the
#    command port with on-demand heapshots) with the reader (also under ASan+UBSan) checking each file;
#  * TSan build (build-tsan/): the writer's lock-free tests (buffer pool, flush queue, zip's producers'
#    help with the flush rounds' claims), the .NET code map's lock-free cache (threads sharing a slot)
#    and the reader's parallel profile build (its workers and replay).
# Any sanitizer report fails the script. Mono itself is not instrumented: the ASan and UBSan runtimes are
# preloaded before our agent (docs/fuzzing.md, "Sanitizer runs"). About 10 minutes on 2 cores, mostly
# the two builds.
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

echo "-- unit tests under ASan+UBSan ($SECONDS s)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$PWD/tests/support/lsan.supp" \
  build-asan/tests/unit/unit_tests

echo "-- the agent in Mono under ASan+UBSan ($SECONDS s)"
# Mono is not instrumented: the ASan runtime is preloaded before our agent. Mono's own allocations are
# not leaks of ours (detect_leaks=0); Mono handles SIGSEGV itself (null references).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
preload="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so) $PWD/build-asan/agent/libmlpd.so"
programs=build-asan/tests/programs
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {  # [expect_rc=N] run NAME OPTIONS PROGRAM [ARGS...]: profiled run, sanitizer-clean stderr, file verified
  local name=$1 options=$2 rc=0
  shift 2
  LD_PRELOAD="$preload" MLPD_OPTIONS="$options,output=$work/$name.mlpd" mono "$@" \
    >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
  if [ "$rc" != "${expect_rc:-0}" ]; then
    echo "sanitize: $name: the program exited with $rc"; tail -n 40 "$work/$name.err"; exit 1
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
# zip with every full buffer compressed by its own thread (the producers' help, forced).
MLPD_ZIP_PACK_ABOVE=0 run zip-members "calls,zip" "$programs/zipthreads.exe" 200
# heapshot_live exits with 3 by design; heapshot=ondemand starts the command server.
expect_rc=3 run port "heapshot=ondemand,port=0" "$programs/heapshot_live.exe" trigger 2

echo "-- TSan build: the writer's lock-free tests, the parallel profile build ($SECONDS s)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLPD_WERROR=OFF -DMLPD_BENCH=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=thread" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build build-tsan -j "$jobs" --target writer_concurrency_tests coreclr_concurrency_tests profile_parallel_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/writer_concurrency_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/coreclr_concurrency_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/profile_parallel_tests
echo "-- sanitizers: all clean ($SECONDS s)"
