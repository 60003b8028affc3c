// Mono's own walk of the current thread's managed frames (mono_stack_walk_no_il), as Mono's log
// profiler makes its backtraces: what stack_walker.cpp falls back to and checks against, and all that
// stack_walker_off.cpp (machines without our walker) does.
#pragma once

#include <cstdint>

#include "mlpd/hooks/mono_api.h"

namespace mlpd::hooks::walker {

// Up to `max` frames into `frames`, innermost first; returns how many.
inline uint32_t mono_walk(MonoMethod** frames, uint32_t max) {
  struct Walk {
    MonoMethod** frames;
    uint32_t max;
    uint32_t n;
  } w{frames, max, 0};
  mono.mono_stack_walk_no_il(
      [](MonoMethod* m, int32_t, int32_t, mono_bool, void* data) -> mono_bool {
        auto* walk = static_cast<Walk*>(data);
        if (m) walk->frames[walk->n++] = m;
        return walk->n >= walk->max;
      },
      &w);
  return w.n;
}

}  // namespace mlpd::hooks::walker
