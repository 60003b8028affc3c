// arm64's machine description: what the agent names about the machine outside the clock and the
// signal registers. Every arch/<isa>/ has this header with the same names.
#pragma once

#include <elf.h>

#include <cstdint>

// Native samples are unwound with libunwind on the helper thread (1), or keep their leaf IP only (0).
// A macro as well as kNativeUnwind: sample_drain.cpp leaves libunwind's header out without it.
#define MLPD_ARCH_NATIVE_UNWIND 1

namespace mlpd::arch {

inline constexpr const char* kName = "aarch64";

// The file header's architecture: what Mono's log profiler writes there (mono_config_get_cpu()).
inline constexpr const char* kHeaderArch = "armv8";

// The ELF e_machine of this build (jitdump's header).
inline constexpr uint32_t kElfMachine = EM_AARCH64;

// libunwind's remote interface for this machine, opened with dlopen (never linked), and the prefix
// of its symbols (`unw_step` is `_Uaarch64_step` there).
inline constexpr bool kNativeUnwind = true;
inline constexpr const char* kUnwindLibrary = "libunwind-aarch64.so.8";
inline constexpr const char* kUnwindPrefix = "_Uaarch64_";

// libunwind's register numbers (UNW_AARCH64_*) of the frame pointer (x29), the stack pointer, the
// instruction pointer (pc) and the link register (x30: a call leaves the return address there).
inline constexpr int kRegFp = 29;
inline constexpr int kRegSp = 31;
inline constexpr int kRegIp = 32;
inline constexpr int kRegLr = 30;

}  // namespace mlpd::arch
