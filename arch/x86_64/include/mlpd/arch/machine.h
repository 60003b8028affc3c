// x86-64's machine description: what the agent names about the machine outside the clock and the
// signal registers. Every arch/<isa>/ has this header with the same names.
#pragma once

#include <elf.h>

#include <cstdint>

// Native samples are unwound with libunwind on the helper thread (1), or keep their leaf IP only (0).
// A macro as well as kNativeUnwind: sample_drain.cpp leaves libunwind's header out without it.
#define MLPD_ARCH_NATIVE_UNWIND 1

namespace mlpd::arch {

inline constexpr const char* kName = "x86_64";

// The file header's architecture: what Mono's log profiler writes there (mono_config_get_cpu()).
inline constexpr const char* kHeaderArch = "x86-64";

// The ELF e_machine of this build (jitdump's header).
inline constexpr uint32_t kElfMachine = EM_X86_64;

// libunwind's remote interface for this machine, opened with dlopen (never linked), and the prefix
// of its symbols (`unw_step` is `_Ux86_64_step` there).
inline constexpr bool kNativeUnwind = true;
inline constexpr const char* kUnwindLibrary = "libunwind-x86_64.so.8";
inline constexpr const char* kUnwindPrefix = "_Ux86_64_";

// libunwind's register numbers (UNW_X86_64_*) of the frame pointer, the stack pointer and the
// instruction pointer; the link register's, -1: x86-64 has none (a call pushes the return address).
inline constexpr int kRegFp = 6;   // RBP
inline constexpr int kRegSp = 7;   // RSP
inline constexpr int kRegIp = 16;  // RIP
inline constexpr int kRegLr = -1;

}  // namespace mlpd::arch
