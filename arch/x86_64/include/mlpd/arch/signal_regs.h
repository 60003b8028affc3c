// x86-64's signal registers: what the sampling signal handler reads from the interrupted thread's
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

// Registers a sample record keeps, in libunwind's order: RAX RDX RCX RBX RSI RDI RBP RSP R8..R15 RIP.
inline constexpr uint32_t kSignalRegs = 17;

// The interrupted registers, in libunwind's order (kRegSp, kRegIp... index `out`).
inline void signal_registers(const ucontext_t& uc, uint64_t* out) noexcept {
  static constexpr int kMap[kSignalRegs] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                            REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                            REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  const greg_t* g = uc.uc_mcontext.gregs;
  for (uint32_t i = 0; i < kSignalRegs; ++i) out[i] = static_cast<uint64_t>(g[kMap[i]]);
}

// True when the signal interrupted a blocking system call: the thread was waiting in the kernel,
// not running. The kernel then hands the handler either the restart form (RIP back on the `syscall`
// instruction, to run it again: SA_RESTART or restart_syscall) or the EINTR form (RIP after it, RAX
// = -EINTR). A thread running user code, or returning from a system call that did not block, shows
// neither. Reads code bytes at and before RIP only within RIP's page (mapped: the thread executes
// there). Not enough on its own: a thread that a futex wake or time-out has just made runnable
// shows neither form (RAX 0 or -ETIMEDOUT) although it waited until then; the sampler's CPU clock
// test catches that.
inline bool blocked_in_kernel(const ucontext_t& uc) noexcept {
  const greg_t* gregs = uc.uc_mcontext.gregs;
  const auto rip = static_cast<uint64_t>(gregs[REG_RIP]);
  const auto* at = reinterpret_cast<const unsigned char*>(rip);
  if ((rip & 0xfff) != 0xfff && at[0] == 0x0f && at[1] == 0x05) return true;  // rewound for a restart
  constexpr int64_t kMinusEintr = -EINTR;
  return (rip & 0xfff) >= 2 && at[-2] == 0x0f && at[-1] == 0x05 && static_cast<int64_t>(gregs[REG_RAX]) == kMinusEintr;
}

// True when the signal found the thread right back from a futex wait or a sleep that has ended
// (RAX 0, -ETIMEDOUT or -EAGAIN): woken by another thread or its time-out, it was waiting until
// then, and on a busy machine may have waited for a CPU since (the signal is handled when it gets
// one). Not running: its CPU was used elsewhere, and a sample here would blame the wait. The system
// call is known from the `mov $NR, %eax` that glibc puts just before the `syscall` (directly, or
// with one 4-byte instruction between: __lll_lock_wait), the futex operation from RSI (kept across
// the call). Reads code bytes before RIP only within RIP's page.
inline bool back_from_wait(const ucontext_t& uc) noexcept {
  const greg_t* gregs = uc.uc_mcontext.gregs;
  const auto rip = static_cast<uint64_t>(gregs[REG_RIP]);
  const auto* at = reinterpret_cast<const unsigned char*>(rip);
  if ((rip & 0xfff) < 11 || at[-2] != 0x0f || at[-1] != 0x05) return false;
  const auto rax = static_cast<int64_t>(gregs[REG_RAX]);
  if (rax != 0 && rax != -ETIMEDOUT && rax != -EAGAIN) return false;
  uint32_t nr = 0;
  if (at[-7] == 0xb8) {
    std::memcpy(&nr, at - 6, 4);
  } else if (at[-11] == 0xb8) {
    std::memcpy(&nr, at - 10, 4);
  } else if (at[-7] == 0x4c && at[-6] == 0x89 && at[-5] == 0x5c && at[-4] == 0x24 && at[-3] == 0x08) {
    // glibc 2.41's __syscall_cancel_arch (Debian 13), through which every cancellable system call
    // goes: `mov %r11,8(%rsp); syscall`, the number passed in a register and gone. What is left are
    // the arguments the kernel keeps: a futex wait has its operation in RSI (a pointer or a count
    // in the other calls almost never masks to 0 or 9; nanosleep's NULL `rem` does, and is a wait).
    const auto op = static_cast<uint64_t>(gregs[REG_RSI]) & FUTEX_CMD_MASK;
    return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
  } else {
    return false;
  }
  if (nr == SYS_futex) {
    const auto op = static_cast<uint64_t>(gregs[REG_RSI]) & FUTEX_CMD_MASK;
    return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
  }
  return nr == SYS_clock_nanosleep || nr == SYS_nanosleep;
}

}  // namespace mlpd::arch
