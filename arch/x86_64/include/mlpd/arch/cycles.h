// x86-64's cycle counter: the TSC (rdtsc, ~10 ns; one instruction on the events' hot path).
// Every arch/<isa>/ has this header with the same names; the writer's clock (writer/src/clock.cpp)
// calibrates the counter against CLOCK_MONOTONIC and checks it while it runs.
#pragma once

#include <x86intrin.h>

#include <cstdint>

namespace mlpd::arch {

// The machine has a counter read_cycles() can read (whether it is usable: cycle_counter_invariant()).
inline constexpr bool kHasCycleCounter = true;

inline uint64_t read_cycles() noexcept { return __rdtsc(); }

// True when the counter runs at a constant rate on every core, in every power state: the invariant
// TSC (CPUID 0x80000007 EDX[8]).
bool cycle_counter_invariant() noexcept;

}  // namespace mlpd::arch
