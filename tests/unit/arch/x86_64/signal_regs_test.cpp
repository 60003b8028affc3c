// arch/x86_64's signal registers: the ucontext_t's general registers in libunwind's order, and the
// interrupted-syscall tests on hand-made code bytes.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <libunwind.h>

#include "mlpd/arch/machine.h"
#include "mlpd/arch/signal_regs.h"
#include "mlpd_catch.h"

using namespace mlpd::arch;

TEST_CASE("arch x86_64: the signal registers come out in libunwind's order", "[arch]") {
  ucontext_t uc;
  std::memset(&uc, 0, sizeof uc);
  for (int i = 0; i < NGREG; ++i) uc.uc_mcontext.gregs[i] = 0x1000 + i;  // each register its own value
  uint64_t out[kSignalRegs];
  signal_registers(uc, out);
  const struct {
    int unw, greg;
  } want[] = {{UNW_X86_64_RAX, REG_RAX}, {UNW_X86_64_RDX, REG_RDX}, {UNW_X86_64_RCX, REG_RCX},
              {UNW_X86_64_RBX, REG_RBX}, {UNW_X86_64_RSI, REG_RSI}, {UNW_X86_64_RDI, REG_RDI},
              {UNW_X86_64_RBP, REG_RBP}, {UNW_X86_64_RSP, REG_RSP}, {UNW_X86_64_R8, REG_R8},
              {UNW_X86_64_R9, REG_R9},   {UNW_X86_64_R10, REG_R10}, {UNW_X86_64_R11, REG_R11},
              {UNW_X86_64_R12, REG_R12}, {UNW_X86_64_R13, REG_R13}, {UNW_X86_64_R14, REG_R14},
              {UNW_X86_64_R15, REG_R15}, {UNW_X86_64_RIP, REG_RIP}};
  STATIC_REQUIRE(sizeof want / sizeof want[0] == kSignalRegs);
  for (const auto& w : want) {
    INFO("libunwind register " << w.unw);
    REQUIRE(w.unw < static_cast<int>(kSignalRegs));
    CHECK(out[w.unw] == static_cast<uint64_t>(0x1000 + w.greg));
  }
  CHECK(kRegIp == UNW_X86_64_RIP);
  CHECK(kRegSp == UNW_X86_64_RSP);
  CHECK(kRegFp == UNW_X86_64_RBP);
  CHECK(kElfMachine == EM_X86_64);
}

namespace {

// A page of code bytes (never run: only read by the tests), RIP at offset `at`.
struct Code {
  alignas(4096) unsigned char page[4096];
  ucontext_t uc;
  Code() {
    std::memset(page, 0x90, sizeof page);  // nop
    std::memset(&uc, 0, sizeof uc);
  }
  void at(size_t offset, int64_t rax, uint64_t rsi = 0) {
    uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(reinterpret_cast<uintptr_t>(page + offset));
    uc.uc_mcontext.gregs[REG_RAX] = static_cast<greg_t>(rax);
    uc.uc_mcontext.gregs[REG_RSI] = static_cast<greg_t>(rsi);
  }
};

}  // namespace

TEST_CASE("arch x86_64: a signal in a blocking system call is seen in both of the kernel's forms", "[arch]") {
  static Code c;
  c.page[100] = 0x0f;  // syscall
  c.page[101] = 0x05;
  c.at(100, 0);  // restart form: RIP back on the instruction
  CHECK(blocked_in_kernel(c.uc));
  c.at(102, -EINTR);  // EINTR form: RIP after it, RAX = -EINTR
  CHECK(blocked_in_kernel(c.uc));
  c.at(102, 0);  // returned without blocking
  CHECK_FALSE(blocked_in_kernel(c.uc));
  c.at(200, -EINTR);  // running user code
  CHECK_FALSE(blocked_in_kernel(c.uc));
  c.page[4094] = 0x0f;  // at the page's last byte: the next one is not read
  c.at(4095, 0);
  CHECK_FALSE(blocked_in_kernel(c.uc));
}

TEST_CASE("arch x86_64: back from a futex wait or a sleep, from glibc's code bytes", "[arch]") {
  static Code c;
  const auto put = [&](size_t at, uint32_t nr) {  // mov $nr, %eax; syscall
    c.page[at] = 0xb8;
    std::memcpy(c.page + at + 1, &nr, 4);
    c.page[at + 5] = 0x0f;
    c.page[at + 6] = 0x05;
  };
  put(100, SYS_futex);
  c.at(107, 0, FUTEX_WAIT);
  CHECK(back_from_wait(c.uc));
  c.at(107, -ETIMEDOUT, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG);
  CHECK(back_from_wait(c.uc));
  c.at(107, 0, FUTEX_WAKE);
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(107, -EINTR, FUTEX_WAIT);
  CHECK_FALSE(back_from_wait(c.uc));
  put(300, SYS_clock_nanosleep);
  c.at(307, 0);
  CHECK(back_from_wait(c.uc));
  put(500, SYS_write);
  c.at(507, 0);
  CHECK_FALSE(back_from_wait(c.uc));
  // One 4-byte instruction between the mov and the syscall (__lll_lock_wait).
  c.page[700] = 0xb8;
  const uint32_t nr = SYS_futex;
  std::memcpy(c.page + 701, &nr, 4);
  c.page[709] = 0x0f;
  c.page[710] = 0x05;
  c.at(711, 0, FUTEX_WAIT);
  CHECK(back_from_wait(c.uc));
  // glibc 2.41's __syscall_cancel_arch: `mov %r11,0x8(%rsp); syscall`, no number left; RSI the futex op.
  const unsigned char cancel[] = {0x4c, 0x89, 0x5c, 0x24, 0x08, 0x0f, 0x05};
  std::memcpy(c.page + 900, cancel, sizeof cancel);
  c.at(907, 0, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG);
  CHECK(back_from_wait(c.uc));
  c.at(907, -ETIMEDOUT, FUTEX_WAIT);
  CHECK(back_from_wait(c.uc));
  c.at(907, 0, FUTEX_WAKE);
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(907, 4096, FUTEX_WAIT);  // a read that returned data
  CHECK_FALSE(back_from_wait(c.uc));
}
