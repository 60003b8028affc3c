// Any Linux machine: no cycle counter. The writer's clock is CLOCK_MONOTONIC (the vDSO).
// Every arch/<isa>/ has this header with the same names (see arch/x86_64/ for a real counter).
#pragma once

#include <cstdint>

namespace mlpd::arch {

// The machine has a counter read_cycles() can read (whether it is usable: cycle_counter_invariant()).
inline constexpr bool kHasCycleCounter = false;

inline uint64_t read_cycles() noexcept { return 0; }

// True when the counter runs at a constant rate on every core, in every power state.
bool cycle_counter_invariant() noexcept;

}  // namespace mlpd::arch
