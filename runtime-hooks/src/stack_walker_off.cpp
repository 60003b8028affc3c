// The stack walker's interface on a machine our walker does not read (stack_walker.cpp reads
// x86-64 frames; CMake builds this file instead elsewhere): our walker is permanently off and every
// backtrace is Mono's walk (mono_stack_walk_no_il), exactly as with MLPD_WALKER=mono on x86-64.
#include <cstdint>
#include <string>

#include "mlpd/arch/machine.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/hooks/stack_walker.h"

namespace mlpd::hooks::walker {

namespace {

struct MonoWalk {
  MonoMethod** frames;
  uint32_t max;
  uint32_t n;
};

mono_bool mono_frame(MonoMethod* m, int32_t, int32_t, mono_bool, void* data) {
  auto* w = static_cast<MonoWalk*>(data);
  if (m) w->frames[w->n++] = m;
  return w->n >= w->max;
}

}  // namespace

void init(bool, bool, bool) {}

void code_added(MonoMethod*, const MonoJitInfo*, MonoMethod*, MonoDomain*, uint64_t, uint64_t) {}

void domain_unloading(MonoDomain*) {}

void method_freed(MonoMethod*) {}

uint32_t collect(MonoMethod** frames, uint32_t max, bool) {
  if (max == 0) return 0;
  MonoWalk w{frames, max, 0};
  mono.mono_stack_walk_no_il(mono_frame, &w);
  return w.n;
}

std::string summary() {
  return std::string("mlpd: backtraces: 0 by our stack walker, all by mono_stack_walk_no_il; our walker off "
                     "(not built for this machine: arch/") +
         arch::kName + ")";
}

}  // namespace mlpd::hooks::walker
