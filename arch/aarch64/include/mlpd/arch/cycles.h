// arm64's cycle counter: the generic timer's virtual count, CNTVCT_EL0 (constant rate by the
// architecture, the same on every core; its frequency is CNTFRQ_EL0, ~1-100 MHz: one tick is 10-1000 ns
// coarser than x86-64's TSC but still finer than an event's cost). Every arch/<isa>/ has this header
// with the same names; the writer's clock (writer/src/clock.cpp) calibrates the counter against
// CLOCK_MONOTONIC and checks it while it runs, exactly as the TSC.
#pragma once

#include <cstdint>

namespace mlpd::arch {

// The machine has a counter read_cycles() can read (whether it is usable: cycle_counter_invariant()).
inline constexpr bool kHasCycleCounter = true;

// The ISB keeps the read in program order (without it the counter may be read early, out of order with
// the code around it, and two reads on one thread could go backwards): what Linux's own reads do.
// Linux lets user space read the register; where an erratum makes it trap instead, the kernel emulates
// the read (slow, still right: the clock's checks see its rate).
inline uint64_t read_cycles() noexcept {
  uint64_t v;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
  return v;
}

// The counter's nominal frequency in Hz (CNTFRQ_EL0, set by the firmware; 0 where it was not).
uint64_t cycle_counter_frequency() noexcept;

// True when the counter can be the clock: the generic timer always runs at a constant rate, so when
// its frequency is set and it advances. The rate itself is measured (calibration), not taken from
// CNTFRQ_EL0, which firmware sometimes gets wrong.
bool cycle_counter_invariant() noexcept;

}  // namespace mlpd::arch
