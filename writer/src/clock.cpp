#include "mlpd/rt/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace mlpd::rt {

ClockState g_clock;

namespace {

bool has_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d >> 8) & 1;
#else
  return false;
#endif
}

#if defined(__x86_64__)
// One (tsc, monotonic ns) pair, the TSC taken on both sides of the clock read to halve its error.
void sample(uint64_t& tsc, uint64_t& ns) {
  const uint64_t before = __rdtsc();
  ns = monotonic_ns();
  const uint64_t after = __rdtsc();
  tsc = before + (after - before) / 2;
}
#endif

}  // namespace

const char* init_clock(bool prefer_tsc) {
  g_clock = ClockState{};
#if defined(__x86_64__)
  if (prefer_tsc && has_invariant_tsc()) {
    uint64_t t0, n0, t1, n1;
    sample(t0, n0);
    do {
      sample(t1, n1);
    } while (n1 - n0 < 2000000);  // 2 ms: the scale is then good to a few parts in 10^5
    if (t1 > t0) {
      g_clock.mult = static_cast<uint64_t>((static_cast<u128>(n1 - n0) << 32) / (t1 - t0));
      g_clock.tsc0 = t1;
      g_clock.ns0 = n1;
      g_clock.tsc = g_clock.mult != 0;
    }
  }
#endif
  (void)prefer_tsc;
  return g_clock.tsc ? "tsc" : "monotonic";
}

uint32_t measure_clock_overhead() {
  constexpr int kCalls = 256;
  const uint64_t start = now_ns();
  uint64_t sink = 0;
  for (int i = 0; i < kCalls; ++i) sink += now_ns();
  const uint64_t elapsed = now_ns() - start;
  (void)sink;
  return static_cast<uint32_t>(elapsed / kCalls);
}

}  // namespace mlpd::rt
