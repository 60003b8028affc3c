# cmake -DFUZZER=exe -DWORK_DIR=dir -DSEEDS=dir -DSECONDS=n [-DDICT=file] -P run_fuzzer.cmake
# Runs a libFuzzer target for SECONDS on WORK_DIR/corpus (new units) plus SEEDS (read only) and fails
# on anything libFuzzer reports (crash, leak, timeout, out-of-memory): it then exits non-zero and
# leaves the reproducer in WORK_DIR/artifacts/.
foreach(v FUZZER WORK_DIR SEEDS SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: ${v} is not set")
  endif()
endforeach()
if(NOT EXISTS ${SEEDS})
  message(FATAL_ERROR "run_fuzzer.cmake: no seed corpus at ${SEEDS} (build the fuzz_seeds target)")
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
set(dict_option "")
if(DICT)
  set(dict_option -dict=${DICT})
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          ${dict_option} -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus ${SEEDS}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK_DIR}/artifacts/*)
  message(FATAL_ERROR "the fuzzer failed (${rc}); reproducers: ${found}\n"
                      "rerun one with: ${FUZZER} FILE")
endif()
