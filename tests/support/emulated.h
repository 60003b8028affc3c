// Whether the unit tests run under qemu-user (unit_tests.arm64: the arm64 build on an x86-64 machine,
// in the arm64 root). /proc then shows qemu's view, not the program's: a child's executable and
// arguments are qemu's binfmt interpreter's, every signal is caught (qemu installs a handler for each),
// and /proc/self/stat's counts are emulated (threads, vsize and rss read 0). Tests that ask /proc such
// things skip themselves there. The test registration says so (MLPD_EMULATED=1,
// tests/integration/CMakeLists.txt); /proc/thread-self/exe is a second sign (qemu rewrites
// /proc/self/exe to the guest program, not thread-self's).
#pragma once

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace mlpd::test {

inline bool running_emulated() {
  if (const char* e = std::getenv("MLPD_EMULATED"); e && std::strcmp(e, "1") == 0) return true;
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/thread-self/exe", ec).filename().string();
  return exe.find("qemu") != std::string::npos;
}

}  // namespace mlpd::test
