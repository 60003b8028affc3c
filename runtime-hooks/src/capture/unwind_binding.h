// libunwind, bound once for both of its uses: the stack walker's local unwinding (learning the native
// chains around managed frames: walker/native_chains.cpp) and the sample drain's remote unwinding of
// copied stacks (sample_drain.cpp). Opened with dlopen(RTLD_LOCAL) when first needed and never linked:
// linked, libunwind.so.8 would put its _Unwind_* into the host's global scope, in front of libgcc_s's
// (the host's C++ exceptions). One struct, one opener; a library gives the functions of the interface
// it is opened for (a cursor is stepped by the library that made it).
// Only where the machine unwinds natively (MLPD_ARCH_NATIVE_UNWIND, arch/<isa>/machine.h).
#pragma once

#include "mlpd/arch/machine.h"

#if MLPD_ARCH_NATIVE_UNWIND
#include <libunwind.h>

#pragma GCC visibility push(hidden)
namespace mlpd::hooks {

struct UnwindLib {
  // Both interfaces.
  decltype(&unw_step) step = nullptr;
  decltype(&unw_get_reg) get_reg = nullptr;
  // Local (open_local): the calling thread's own stack.
  // (unw_getcontext is a macro on some machines, an inline asm block on arm64: typed by hand.)
  int (*getcontext)(unw_context_t*) = nullptr;
  decltype(&unw_init_local) init_local = nullptr;
  decltype(&unw_get_save_loc) get_save_loc = nullptr;
  // Remote (open_remote): a stack read through accessors.
  decltype(&unw_create_addr_space) create_addr_space = nullptr;
  decltype(&unw_set_caching_policy) set_caching_policy = nullptr;
  decltype(&unw_flush_cache) flush_cache = nullptr;
  decltype(&unw_init_remote) init_remote = nullptr;
  // Exported (libunwind's ptrace and coredump back ends use it) but not declared in its headers:
  // the binary search of an .eh_frame_hdr table through the address space's accessors.
  int (*search_unwind_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t*, unw_proc_info_t*, int, void*) = nullptr;

  // The remote interface: the machine's libunwind (arch::kUnwindLibrary), symbols arch::kUnwindPrefix + name.
  bool open_remote();
  // The local interface from `library` (symbols `prefix` + name; getcontext's own symbol): the
  // walker's machine names them (walker/<isa>/frame_shapes.h).
  bool open_local(const char* library, const char* prefix, const char* getcontext_symbol);
};

}  // namespace mlpd::hooks
#pragma GCC visibility pop
#endif
