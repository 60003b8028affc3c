#include "mlpd/rt/clock.h"

#include <cstdio>

#include "mlpd/rt/clock_tracker.h"

#include "mlpd/arch/cycles.h"

namespace mlpd::rt {

ClockSlot g_clock_slots[kClockSlots];
std::atomic<const ClockSlot*> g_clock{&g_clock_slots[0]};

namespace {

// The machine's cycle counter (arch/), calibrated and checked by g_tracker.
class RealSource final : public ClockSource {
 public:
  uint64_t ticks() override { return arch::read_cycles(); }
  uint64_t monotonic() override { return monotonic_ns(); }
};

// Written by init_clock, then by the helper thread only.
ClockTracker g_tracker;
unsigned g_slot = 0;
bool g_tsc = false;       // the TSC is the clock now (the helper checks it)
bool g_gave_up = false;   // it was, and the helper gave it up

void publish(const ClockParams& p) {
  g_slot = (g_slot + 1) % kClockSlots;
  ClockSlot& s = g_clock_slots[g_slot];
  s.tsc0 = p.tsc0;
  s.ns0 = p.ns0;
  s.mult = p.mult;
  g_clock.store(&s, std::memory_order_release);
}

ClockParams published() {
  const ClockSlot* s = g_clock.load(std::memory_order_acquire);
  return ClockParams{s->tsc0, s->ns0, s->mult};
}

std::string us(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(ns) / 1000.0);
  return b;
}

}  // namespace

const char* init_clock(bool prefer_tsc) {
  ClockParams p;  // CLOCK_MONOTONIC
  g_tsc = false;
  g_gave_up = false;
  if (arch::kHasCycleCounter && prefer_tsc && arch::cycle_counter_invariant()) {
    RealSource src;
    g_tsc = g_tracker.calibrate(src, p);
    if (!g_tsc) p = ClockParams{};
  }
  publish(p);
  return g_tsc ? "tsc" : "monotonic";
}

std::string check_clock() {
  if (!g_tsc) return {};
  RealSource src;
  const ClockPair now = read_pair(src, 4);
  ClockParams next;
  switch (g_tracker.check(now, published(), next)) {
    case ClockTracker::Action::none:
      return {};
    case ClockTracker::Action::corrected:
      publish(next);
      return {};
    case ClockTracker::Action::fallback: {
      publish(next);
      g_tsc = false;
      g_gave_up = true;
      char b[64];
      std::snprintf(b, sizeof b, "%.4f", g_tracker.stats().rate_seen);
      return "mlpd: clock: the TSC's rate against CLOCK_MONOTONIC changed (x" + std::string(b) +
             ") or it went backwards; CLOCK_MONOTONIC from now on";
    }
  }
  return {};
}

std::string clock_summary() {
  const ClockTracker::Stats& s = g_tracker.stats();
  if (!g_tsc && !g_gave_up) return "mlpd: clock: CLOCK_MONOTONIC";
  std::string line = g_gave_up ? "mlpd: clock: the TSC, then CLOCK_MONOTONIC; " : "mlpd: clock: the TSC; ";
  line += "checked " + std::to_string(s.checks) + " times against CLOCK_MONOTONIC (" + std::to_string(s.rejected) +
          " preempted reads not used), " + std::to_string(s.corrections) + " corrections; largest difference " +
          us(static_cast<int64_t>(s.max_error_ns)) + " us, last " + us(s.last_error_ns) + " us";
  return line;
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
