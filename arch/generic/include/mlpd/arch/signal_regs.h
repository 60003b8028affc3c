// Any Linux machine: the signal handler reads nothing from the ucontext_t (its layout is the ISA's);
// a sample keeps the IP Mono hands the callback. Every arch/<isa>/ has this header with the same names.
#pragma once

#include <ucontext.h>

#include <cstdint>

#include "mlpd/arch/machine.h"

namespace mlpd::arch {

// Registers a sample record keeps: the IP (kRegIp), which the sampler fills from Mono's argument.
inline constexpr uint32_t kSignalRegs = 1;

// Nothing is read: `out` is left as it is.
inline void signal_registers(const ucontext_t&, uint64_t*) noexcept {}

// Not known here (the syscall instruction and the return register are the ISA's): never. The
// sampler's CPU clock test alone then tells a thread that waited from one that ran.
inline bool blocked_in_kernel(const ucontext_t&) noexcept { return false; }
inline bool back_from_wait(const ucontext_t&) noexcept { return false; }

}  // namespace mlpd::arch
