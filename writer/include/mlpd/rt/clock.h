// The agent's clock, read once per event. Nanoseconds on one timeline for all threads:
// * the machine's cycle counter (arch/<isa>/'s mlpd/arch/cycles.h: x86-64's invariant TSC, ~10 ns)
//   scaled to ns, when the machine has an invariant one and init_clock() was asked to use it. Calibrated at start from (TSC, CLOCK_MONOTONIC) pairs read
//   in a short window (a read that was preempted is not used), then checked against CLOCK_MONOTONIC
//   by the helper thread at every flush round and corrected when it drifts (clock_tracker.h);
// * CLOCK_MONOTONIC otherwise (the vDSO: no syscall, but ~30 ns here), plus an offset when the
//   agent gave up the TSC at run time (so that no thread's time goes backwards at the switch).
//
// The mapping is published as a pointer to one of kClockSlots immutable slots: a reader loads the
// pointer, then the slot's three words; the writer (init_clock, then the helper thread only) fills
// a slot that is not the current one and then swings the pointer (release). A slot is reused only
// kClockSlots publications later, and publications are at least 250 ms apart (ClockTracker), so a
// reader would have to stall for seconds between two adjacent loads to see a half-written slot.
// The hot path is the same loads as a plain struct: the pointer's load replaces the old flag's.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>

#include "mlpd/arch/cycles.h"

namespace mlpd::rt {

__extension__ typedef unsigned __int128 u128;

// One mapping from ticks to ns.
struct ClockParams {
  uint64_t tsc0 = 0;
  uint64_t ns0 = 0;   // TSC: the time at tsc0. CLOCK_MONOTONIC (mult 0): added to it (wraps: either sign)
  uint64_t mult = 0;  // ns per tick << 32; 0: the clock is CLOCK_MONOTONIC + ns0
};

// A tick count to ns under a mapping (a ClockParams or a ClockSlot; mult != 0). A tick before tsc0 (a
// core that read tsc0 late, or a reader between a correction's publication and its anchor, which is
// a little in the future) gives ns0: never a time before the previous mapping's at the same tick.
// Read through the reference (not copied into arguments), so that the compiler folds the loads into
// the arithmetic: the hot path is then the old single-struct code plus the pointer's load.
template <class Mapping>
inline uint64_t ticks_to_ns(const Mapping& p, uint64_t tsc) {
  const uint64_t ticks = tsc - p.tsc0;
  return static_cast<int64_t>(ticks) < 0 ? p.ns0 : p.ns0 + static_cast<uint64_t>((static_cast<u128>(ticks) * p.mult) >> 32);
}

// Plain fields, not atomics: written only before the slot is published (release), read only after
// its pointer was loaded (acquire); atomics would cost the hot path three more instructions (their
// loads are not folded into the arithmetic).
struct alignas(32) ClockSlot {
  uint64_t tsc0 = 0;
  uint64_t ns0 = 0;
  uint64_t mult = 0;
};
constexpr unsigned kClockSlots = 16;
extern ClockSlot g_clock_slots[kClockSlots];
extern std::atomic<const ClockSlot*> g_clock;  // never null: slot 0 (CLOCK_MONOTONIC) until init_clock

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t now_ns() {
  const ClockSlot* s = g_clock.load(std::memory_order_acquire);
  if constexpr (arch::kHasCycleCounter) {
    if (s->mult) [[likely]] return ticks_to_ns(*s, arch::read_cycles());
  }
  return monotonic_ns() + s->ns0;
}

// now_ns() when the TSC is the clock (no call: for hot paths that leave the other case to a slower
// path); false otherwise.
inline bool now_ns_tsc(uint64_t& t) {
  if constexpr (arch::kHasCycleCounter) {
    const ClockSlot* s = g_clock.load(std::memory_order_acquire);
    if (!s->mult) [[unlikely]] return false;
    t = ticks_to_ns(*s, arch::read_cycles());
    return true;
  } else {
    (void)t;
    return false;
  }
}

// Chooses the clock (call once, before any event and before the helper thread starts): the TSC if
// `prefer_tsc` and the CPU has an invariant one (calibration spins ~2 ms), else CLOCK_MONOTONIC.
// Returns the clock's name.
const char* init_clock(bool prefer_tsc);

// The helper thread's check, once per flush round (helper thread only): compares the TSC's time with
// CLOCK_MONOTONIC and publishes a corrected mapping when they drift apart, or gives the TSC up.
// Returns a line to say with `verbose` when something worth saying happened (the switch to
// CLOCK_MONOTONIC), else empty. Nothing to do when the clock is CLOCK_MONOTONIC.
std::string check_clock();

// The clock's line of the `verbose` summary at exit.
std::string clock_summary();

// Mean cost of one now_ns() call in ns, for the file header's timer overhead field.
uint32_t measure_clock_overhead();

}  // namespace mlpd::rt
