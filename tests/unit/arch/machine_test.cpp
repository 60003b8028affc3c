// arch/ on every machine (the folder CMake chose, MLPD_ARCH_BUILT): the cycle counter reads forward on
// one thread, the machine description names this build's ELF machine and a libunwind that has the
// symbols sample_drain.cpp looks up, and the register numbers fit a sample record.
#include <dlfcn.h>
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <chrono>
#include <thread>

#include "mlpd/arch/cycles.h"
#include "mlpd/arch/machine.h"
#include "mlpd/arch/signal_regs.h"
#include "mlpd_catch.h"

using namespace mlpd::arch;

TEST_CASE("arch: the folder built is the one CMake chose", "[arch]") {
  CHECK(std::string(kName) == MLPD_ARCH_BUILT);
  CHECK(kNativeUnwind == (MLPD_ARCH_NATIVE_UNWIND != 0));
}

TEST_CASE("arch: the cycle counter never goes backwards on one thread", "[arch]") {
  if constexpr (!kHasCycleCounter) {
    CHECK(read_cycles() == 0);
    CHECK_FALSE(cycle_counter_invariant());
    return;
  }
  uint64_t prev = read_cycles(), rises = 0, backwards = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const uint64_t now = read_cycles();
    backwards += now < prev;
    rises += now > prev;
    prev = now;
    if ((i & 0xffff) == 0) std::this_thread::yield();  // let the thread move to another core
  }
  CHECK(backwards == 0);
  CHECK(rises > 0);
  const uint64_t before = read_cycles();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(read_cycles() > before);
}

TEST_CASE("arch: the ELF machine is this program's", "[arch]") {
  FILE* f = std::fopen("/proc/self/exe", "rb");
  REQUIRE(f);
  Elf64_Ehdr h;
  const size_t got = std::fread(&h, 1, sizeof h, f);
  std::fclose(f);
  REQUIRE(got >= EI_NIDENT + 4);
  REQUIRE(std::memcmp(h.e_ident, ELFMAG, SELFMAG) == 0);
  uint16_t machine = 0;
  std::memcpy(&machine, reinterpret_cast<const unsigned char*>(&h) + EI_NIDENT + 2, 2);  // same in ELF32
  CHECK(machine == kElfMachine);
}

TEST_CASE("arch: libunwind's library and symbol names, and the register numbers", "[arch]") {
  CHECK(kRegIp >= 0);
  CHECK(static_cast<uint32_t>(kRegIp) < kSignalRegs);
  if constexpr (!kNativeUnwind) {
    CHECK(std::string(kUnwindLibrary).empty());
    CHECK(kRegSp == -1);
    return;
  }
  CHECK(kRegSp >= 0);
  CHECK(static_cast<uint32_t>(kRegSp) < kSignalRegs);
  CHECK(kRegFp < static_cast<int>(kSignalRegs));
  CHECK(kRegLr < static_cast<int>(kSignalRegs));
  CHECK(std::string(kUnwindLibrary).rfind("libunwind-", 0) == 0);
  CHECK(std::string(kUnwindPrefix).rfind("_U", 0) == 0);
  void* h = dlopen(kUnwindLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    WARN("libunwind is not installed here: " << kUnwindLibrary << " not checked");
    return;
  }
  for (const char* name : {"create_addr_space", "set_caching_policy", "flush_cache", "init_remote", "step",
                           "get_reg", "dwarf_search_unwind_table"}) {
    const std::string symbol = std::string(kUnwindPrefix) + name;
    INFO(symbol);
    CHECK(dlsym(h, symbol.c_str()) != nullptr);
  }
  dlclose(h);
}
