// libunwind's one binding (unwind_binding.h).
#include "unwind_binding.h"

#if MLPD_ARCH_NATIVE_UNWIND
#include <dlfcn.h>

#include <cstdio>
#include <type_traits>

namespace mlpd::hooks {

namespace {

// Binds `fn` to `prefix` + `name` (or to `name` when prefix is null) in `h`.
template <class Fn>
bool get(void* h, Fn& fn, const char* prefix, const char* name) {
  char symbol[64];
  std::snprintf(symbol, sizeof symbol, "%s%s", prefix ? prefix : "", name);
  fn = reinterpret_cast<Fn>(dlsym(h, symbol));
  return fn != nullptr;
}

}  // namespace

bool UnwindLib::open_remote() {
  void* h = dlopen(arch::kUnwindLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  const char* p = arch::kUnwindPrefix;
  return get(h, create_addr_space, p, "create_addr_space") && get(h, set_caching_policy, p, "set_caching_policy") &&
         get(h, flush_cache, p, "flush_cache") && get(h, init_remote, p, "init_remote") && get(h, step, p, "step") &&
         get(h, get_reg, p, "get_reg") && get(h, search_unwind_table, p, "dwarf_search_unwind_table");
}

bool UnwindLib::open_local(const char* library, const char* prefix, const char* getcontext_symbol) {
  void* h = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  // No getcontext symbol: the library has none (arm64's is an inline-asm macro); the caller gives its own.
  return (!getcontext_symbol || get(h, getcontext, nullptr, getcontext_symbol)) && get(h, init_local, prefix, "init_local") &&
         get(h, step, prefix, "step") && get(h, get_reg, prefix, "get_reg") &&
         get(h, get_save_loc, prefix, "get_save_loc");
}

}  // namespace mlpd::hooks
#endif
