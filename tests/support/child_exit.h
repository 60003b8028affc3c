// Test support: how a forked test child ends. _exit skips the exit handlers, among them gcc's coverage
// writer, so in a coverage build (scripts/unit-coverage.sh; MLPD_COVERAGE, tests/unit/CMakeLists.txt) the
// child writes its counts first, or code that runs only in children would count as untouched.
#pragma once

#include <unistd.h>

#ifdef MLPD_COVERAGE
extern "C" void __gcov_dump(void);
#endif

namespace mlpd::test {

[[noreturn]] inline void child_exit(int code) {
#ifdef MLPD_COVERAGE
  __gcov_dump();
#endif
  ::_exit(code);
}

}  // namespace mlpd::test
