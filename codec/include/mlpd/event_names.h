// The event vocabulary: the names of the event-mask bits (format::MASK_*) as the agent's options and
// the command port's `events +NAME -NAME` spell them, and as Mono.Profiler.Log.LogProfiler's
// properties do (`GCAllocationEvents` is Get/SetGCAllocationEvents). One table for the option
// parser (agent/src/option_table.cpp, which adds the aliases alloc and legacy), the command server
// and the LogProfiler icalls (runtime-hooks/src/mono/icalls.cpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "mlpd/format.h"

namespace mlpd::format {

struct EventBitName {
  std::string_view option;        // agent option / command port name
  std::string_view log_profiler;  // LogProfiler's property, without Get/Set and "Events"; empty: none
  uint32_t mask;                  // one MASK_* bit
};

// In the order the options, `events` answers and the help list them. MASK_SAMPLE has no name: it is
// set by sample/sample-real.
inline constexpr EventBitName kEventBitNames[] = {
    {"exception", "Exception", MASK_EXCEPTION},
    {"monitor", "Monitor", MASK_MONITOR},
    {"gc", "GC", MASK_GC},
    {"gcalloc", "GCAllocation", MASK_GC_ALLOC},
    {"gcmove", "GCMove", MASK_GC_MOVE},
    {"gcroot", "GCRoot", MASK_GC_ROOT},
    {"gchandle", "GCHandle", MASK_GC_HANDLE},
    {"finalization", "GCFinalization", MASK_GC_FINALIZATION},
    {"counter", "Counter", MASK_COUNTER},
    {"jit", "Jit", MASK_JIT},
};

}  // namespace mlpd::format
