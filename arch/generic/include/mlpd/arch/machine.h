// Any Linux machine: the machine description where the build knows nothing of the ISA. Native
// samples keep their leaf IP only (no libunwind), jitdump names the machine from the compiler.
// Every arch/<isa>/ has this header with the same names.
#pragma once

#include <elf.h>

#include <cstdint>

// Native samples are unwound with libunwind on the helper thread (1), or keep their leaf IP only (0).
#define MLPD_ARCH_NATIVE_UNWIND 0

namespace mlpd::arch {

inline constexpr const char* kName = "generic";

// The file header's architecture: what Mono's log profiler writes there (mono_config_get_cpu()).
#if defined(__aarch64__)
inline constexpr const char* kHeaderArch = "armv8";
#elif defined(__x86_64__)
inline constexpr const char* kHeaderArch = "x86-64";
#elif defined(__i386__)
inline constexpr const char* kHeaderArch = "x86";
#elif defined(__arm__)
inline constexpr const char* kHeaderArch = "arm";
#elif defined(__powerpc64__)
inline constexpr const char* kHeaderArch = "ppc64";
#elif defined(__s390x__)
inline constexpr const char* kHeaderArch = "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
inline constexpr const char* kHeaderArch = "riscv64";
#else
inline constexpr const char* kHeaderArch = "unknown";
#endif

// The ELF e_machine of this build (jitdump's header), EM_NONE where the compiler does not say.
#if defined(__aarch64__)
inline constexpr uint32_t kElfMachine = EM_AARCH64;
#elif defined(__i386__)
inline constexpr uint32_t kElfMachine = EM_386;
#elif defined(__arm__)
inline constexpr uint32_t kElfMachine = EM_ARM;
#elif defined(__riscv)
inline constexpr uint32_t kElfMachine = EM_RISCV;
#elif defined(__powerpc64__)
inline constexpr uint32_t kElfMachine = EM_PPC64;
#elif defined(__s390x__)
inline constexpr uint32_t kElfMachine = EM_S390;
#elif defined(__x86_64__)
inline constexpr uint32_t kElfMachine = 62;  // a generic build on x86-64 (testing the fallback)
#else
inline constexpr uint32_t kElfMachine = EM_NONE;
#endif

// No native unwinding: no libunwind library, no symbol prefix.
inline constexpr bool kNativeUnwind = false;
inline constexpr const char* kUnwindLibrary = "";
inline constexpr const char* kUnwindPrefix = "";

// Register numbers in a sample record: the IP only (index 0); no frame pointer, stack pointer or
// link register is read.
inline constexpr int kRegFp = -1;
inline constexpr int kRegSp = -1;
inline constexpr int kRegIp = 0;
inline constexpr int kRegLr = -1;

}  // namespace mlpd::arch
