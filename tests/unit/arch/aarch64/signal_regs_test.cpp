// arch/aarch64's signal registers: the ucontext_t's registers in libunwind's order, the
// interrupted-syscall tests on hand-made code words, and the counter's frequency. Runs as an arm64
// binary (the cross build's unit tests, in the arm64 root under qemu-user).
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <cstdint>
#include <cstring>

#include <libunwind.h>

#include "mlpd/arch/cycles.h"
#include "mlpd/arch/machine.h"
#include "mlpd/arch/signal_regs.h"
#include "mlpd_catch.h"

using namespace mlpd::arch;

TEST_CASE("arch aarch64: the signal registers come out in libunwind's order", "[arch]") {
  ucontext_t uc;
  std::memset(&uc, 0, sizeof uc);
  for (int i = 0; i < 31; ++i) uc.uc_mcontext.regs[i] = 0x1000 + i;  // each register its own value
  uc.uc_mcontext.sp = 0x2000;
  uc.uc_mcontext.pc = 0x3000;
  uint64_t out[kSignalRegs];
  signal_registers(uc, out);
  STATIC_REQUIRE(kSignalRegs == UNW_AARCH64_PC + 1);
  for (int r = UNW_AARCH64_X0; r <= UNW_AARCH64_X30; ++r) {
    INFO("libunwind register " << r);
    CHECK(out[r] == static_cast<uint64_t>(0x1000 + r));
  }
  CHECK(out[UNW_AARCH64_SP] == 0x2000);
  CHECK(out[UNW_AARCH64_PC] == 0x3000);
  CHECK(kRegIp == UNW_AARCH64_PC);
  CHECK(kRegSp == UNW_AARCH64_SP);
  CHECK(kRegFp == UNW_AARCH64_X29);
  CHECK(kRegLr == UNW_AARCH64_X30);
  CHECK(kElfMachine == EM_AARCH64);
  CHECK(std::string(kHeaderArch) == "armv8");
}

TEST_CASE("arch aarch64: the counter has a frequency and is the clock", "[arch]") {
  CHECK(cycle_counter_frequency() > 0);
  CHECK(cycle_counter_invariant());
}

namespace {

constexpr uint32_t kSvc = 0xd4000001;  // svc #0
constexpr uint32_t kNop = 0xd503201f;

// A page of code words (never run: only read by the tests), pc at word `at`.
struct Code {
  alignas(4096) uint32_t page[1024];
  ucontext_t uc;
  Code() {
    for (uint32_t& w : page) w = kNop;
    std::memset(&uc, 0, sizeof uc);
  }
  void at(size_t word, int64_t x0, uint64_t x8 = 0, uint64_t x1 = 0) {
    uc.uc_mcontext.pc = reinterpret_cast<uintptr_t>(page + word);
    uc.uc_mcontext.regs[0] = static_cast<uint64_t>(x0);
    uc.uc_mcontext.regs[1] = x1;
    uc.uc_mcontext.regs[8] = x8;
  }
};

// glibc 2.36's inline system call: `mov x8, #nr` (movz), `svc #0`.
constexpr uint32_t movz_x8(uint32_t nr) { return 0xd2800008u | (nr << 5); }

}  // namespace

TEST_CASE("arch aarch64: a signal in a blocking system call is seen in both of the kernel's forms", "[arch]") {
  static Code c;
  c.page[100] = kSvc;
  c.at(100, 3, SYS_futex);  // restart form: pc back on the instruction, x0 the argument again
  CHECK(blocked_in_kernel(c.uc));
  c.at(101, -EINTR, SYS_futex);  // EINTR form: pc after it, x0 = -EINTR
  CHECK(blocked_in_kernel(c.uc));
  c.at(101, 0, SYS_futex);  // returned without blocking
  CHECK_FALSE(blocked_in_kernel(c.uc));
  c.at(200, -EINTR);  // running user code
  CHECK_FALSE(blocked_in_kernel(c.uc));
  c.page[1023] = kNop;
  c.at(0, -EINTR);  // at the page's first word: the word before it is not read
  CHECK_FALSE(blocked_in_kernel(c.uc));
}

TEST_CASE("arch aarch64: back from a futex wait or a sleep, from x8 and x1", "[arch]") {
  static Code c;
  c.page[99] = movz_x8(SYS_futex);
  c.page[100] = kSvc;
  c.at(101, 0, SYS_futex, FUTEX_WAIT);
  CHECK(back_from_wait(c.uc));
  c.at(101, -ETIMEDOUT, SYS_futex, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG);
  CHECK(back_from_wait(c.uc));
  c.at(101, -EAGAIN, SYS_futex, FUTEX_WAIT_PRIVATE);
  CHECK(back_from_wait(c.uc));
  c.at(101, 0, SYS_futex, FUTEX_WAKE);
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(101, -EINTR, SYS_futex, FUTEX_WAIT);  // interrupted: blocked_in_kernel's case
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(101, 0, SYS_clock_nanosleep);
  CHECK(back_from_wait(c.uc));
  c.at(101, 0, SYS_nanosleep);
  CHECK(back_from_wait(c.uc));
  c.at(101, 0, SYS_write);
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(101, 4096, SYS_read);  // a read that returned data
  CHECK_FALSE(back_from_wait(c.uc));
  c.at(300, 0, SYS_futex, FUTEX_WAIT);  // not right after an svc: running
  CHECK_FALSE(back_from_wait(c.uc));
}

namespace {

std::atomic<int> g_seen{-1};
void on_signal(int, siginfo_t*, void* ctx) {
  g_seen.store(blocked_in_kernel(*static_cast<const ucontext_t*>(ctx)) ? 1 : 0);
}

}  // namespace

TEST_CASE("arch aarch64: a thread waiting in a real futex is seen blocked in the kernel", "[arch]") {
  struct sigaction sa{}, old{};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR2, &sa, &old) == 0);
  static std::atomic<int> word{0};
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    while (word.load() == 0) syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  });
  while (tid.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // well inside the wait
  syscall(SYS_tgkill, getpid(), tid.load(), SIGUSR2);
  for (int i = 0; i < 500 && g_seen.load() < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  word.store(1);
  syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  waiter.join();
  sigaction(SIGUSR2, &old, nullptr);
  CHECK(g_seen.load() == 1);
}
