// arm64's signal registers: what the sampling signal handler reads from the interrupted thread's
// ucontext_t. Every arch/<isa>/ has this header with the same names. Signal context: inline, no
// call, no allocation, no lock.
#pragma once

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <cstdint>
#include <cstring>

#include "mlpd/arch/machine.h"

namespace mlpd::arch {

// Registers a sample record keeps, in libunwind's order (UNW_AARCH64_*): x0..x30, sp, pc.
inline constexpr uint32_t kSignalRegs = 33;

// The interrupted registers, in libunwind's order (kRegSp, kRegIp... index `out`).
inline void signal_registers(const ucontext_t& uc, uint64_t* out) noexcept {
  const mcontext_t& m = uc.uc_mcontext;
  for (uint32_t i = 0; i < 31; ++i) out[i] = m.regs[i];
  out[31] = m.sp;
  out[32] = m.pc;
}

namespace aarch64_detail {

inline constexpr uint32_t kSvc0 = 0xd4000001;  // svc #0: every system call of glibc (and of Mono)

// The instruction word at `pc + 4 * delta`, or 0 (no instruction) when it would be outside pc's page
// (the only page known to be mapped: the thread executes there). pc is 4-aligned (A64).
inline uint32_t insn_at(uint64_t pc, int delta) noexcept {
  const uint64_t page = pc & ~uint64_t{0xfff};
  const uint64_t a = pc + static_cast<uint64_t>(static_cast<int64_t>(delta) * 4);
  if ((pc & 3) != 0 || a < page || a + 4 > page + 4096) return 0;
  uint32_t w;
  std::memcpy(&w, reinterpret_cast<const void*>(a), 4);
  return w;
}

}  // namespace aarch64_detail

// True when the signal interrupted a blocking system call: the thread was waiting in the kernel,
// not running. The kernel then hands the handler either the restart form (pc back on the `svc #0`,
// x0 its first argument again, to run it again: SA_RESTART or restart_syscall) or the EINTR form (pc
// after it, x0 = -EINTR). A thread running user code, or returning from a system call that did not
// block, shows neither. Not enough on its own: a thread that a futex wake or time-out has just made
// runnable shows neither form (x0 0 or -ETIMEDOUT) although it waited until then; the sampler's CPU
// clock test catches that.
inline bool blocked_in_kernel(const ucontext_t& uc) noexcept {
  using aarch64_detail::insn_at;
  using aarch64_detail::kSvc0;
  const uint64_t pc = uc.uc_mcontext.pc;
  if (insn_at(pc, 0) == kSvc0) return true;  // rewound for a restart
  constexpr int64_t kMinusEintr = -EINTR;
  return insn_at(pc, -1) == kSvc0 && static_cast<int64_t>(uc.uc_mcontext.regs[0]) == kMinusEintr;
}

// True when the signal found the thread right back from a futex wait or a sleep that has ended
// (x0 0, -ETIMEDOUT or -EAGAIN): woken by another thread or its time-out, it was waiting until then,
// and on a busy machine may have waited for a CPU since (the signal is handled when it gets one). Not
// running: its CPU was used elsewhere, and a sample here would blame the wait. Unlike x86-64, the
// system call's number is still there: arm64 passes it in x8, which the kernel leaves as it was
// (glibc 2.36's inline wrappers `mov x8, #NR; svc #0`, its syscall() and Mono's own calls alike), and
// the futex operation is in x1 (an argument register the kernel keeps; only x0 returns).
inline bool back_from_wait(const ucontext_t& uc) noexcept {
  const mcontext_t& m = uc.uc_mcontext;
  if (aarch64_detail::insn_at(m.pc, -1) != aarch64_detail::kSvc0) return false;
  const auto x0 = static_cast<int64_t>(m.regs[0]);
  if (x0 != 0 && x0 != -ETIMEDOUT && x0 != -EAGAIN) return false;
  const uint64_t nr = m.regs[8];
  if (nr == SYS_futex) {
    const uint64_t op = m.regs[1] & FUTEX_CMD_MASK;
    return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
  }
  return nr == SYS_clock_nanosleep || nr == SYS_nanosleep;
}

}  // namespace mlpd::arch
