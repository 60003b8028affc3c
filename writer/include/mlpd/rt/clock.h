// The agent's clock, read once per event. Nanoseconds on one timeline for all threads:
// * the invariant TSC (rdtsc, ~10 ns) scaled to ns, when the CPU has one (CPUID 0x80000007 EDX[8])
//   and init_clock() was asked to use it; calibrated against CLOCK_MONOTONIC at start, and anchored
//   at CLOCK_MONOTONIC's value then, so times stay comparable with Mono's own clock;
// * CLOCK_MONOTONIC otherwise (the vDSO: no syscall, but ~30 ns here).
#pragma once

#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace mlpd::rt {

__extension__ typedef unsigned __int128 u128;

struct ClockState {
  bool tsc = false;
  uint64_t tsc0 = 0;
  uint64_t ns0 = 0;
  uint64_t mult = 0;  // ns per tick << 32
};
extern ClockState g_clock;

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t now_ns() {
#if defined(__x86_64__)
  if (g_clock.tsc) [[likely]] {
    const uint64_t ticks = __rdtsc() - g_clock.tsc0;
    if (static_cast<int64_t>(ticks) < 0) [[unlikely]] return g_clock.ns0;  // a core read tsc0 late
    return g_clock.ns0 + static_cast<uint64_t>((static_cast<u128>(ticks) * g_clock.mult) >> 32);
  }
#endif
  return monotonic_ns();
}

// now_ns() when the TSC is the clock (no call: for hot paths that leave the other case to a slower
// path); false otherwise.
inline bool now_ns_tsc(uint64_t& t) {
#if defined(__x86_64__)
  if (!g_clock.tsc) [[unlikely]] return false;
  const uint64_t ticks = __rdtsc() - g_clock.tsc0;
  t = static_cast<int64_t>(ticks) < 0 ? g_clock.ns0
                                      : g_clock.ns0 + static_cast<uint64_t>((static_cast<u128>(ticks) * g_clock.mult) >> 32);
  return true;
#else
  (void)t;
  return false;
#endif
}

// Chooses the clock (call once, before any event): the TSC if `prefer_tsc` and the CPU has an
// invariant one (calibration spins ~2 ms), else CLOCK_MONOTONIC. Returns the clock's name.
const char* init_clock(bool prefer_tsc);

// Mean cost of one now_ns() call in ns, for the file header's timer overhead field.
uint32_t measure_clock_overhead();

}  // namespace mlpd::rt
