#include "mlpd/rt/clock_tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlpd::rt {

ClockPair read_pair(ClockSource& src, int tries) {
  ClockPair best;
  best.window = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < tries; ++i) {
    const uint64_t before = src.ticks();
    const uint64_t ns = src.monotonic();
    const uint64_t after = src.ticks();
    const uint64_t window = after - before;  // huge if the ticks went backwards: never the best
    if (window < best.window) best = {before + window / 2, ns, window};
  }
  return best;
}

uint64_t ClockTracker::window_ns(uint64_t window, uint64_t mult) const {
  const u128 ns = (static_cast<u128>(window) * mult) >> 32;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

bool ClockTracker::calibrate(ClockSource& src, ClockParams& out) {
  constexpr int kTries = 16;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const ClockPair a = read_pair(src, kTries);
    for (long spins = 0; src.monotonic() - a.ns < kCalibrationNs && spins < 100000000; ++spins) {
    }
    const ClockPair b = read_pair(src, kTries);
    if (b.tsc <= a.tsc || b.ns <= a.ns) return false;
    const u128 m = (static_cast<u128>(b.ns - a.ns) << 32) / (b.tsc - a.tsc);
    if (m == 0 || m > UINT64_MAX) return false;
    const uint64_t mult = static_cast<uint64_t>(m);
    const uint64_t w = std::max(window_ns(a.window, mult), window_ns(b.window, mult));
    if (w > kMaxWindowNs) continue;  // both pairs' every read preempted: hardly ever; try again
    base_ = a;
    prev_ = b;
    published_ns_ = b.ns;
    strikes_ = 0;
    stats_ = Stats{};
    stats_.calibration_window_ns = w;
    out = ClockParams{b.tsc, b.ns, mult};
    return true;
  }
  return false;
}

ClockTracker::Action ClockTracker::check(const ClockPair& now, const ClockParams& cur, ClockParams& next) {
  ++stats_.checks;
  if (window_ns(now.window, cur.mult) > kMaxWindowNs) {
    ++stats_.rejected;
    return Action::none;
  }
  if (now.ns <= prev_.ns) return Action::none;
  const auto give_up = [&] {
    next = ClockParams{0, ticks_to_ns(cur, now.tsc) + kFallbackMarginNs - now.ns, 0};
    return Action::fallback;
  };
  if (now.tsc <= prev_.tsc) {
    if (now.ns - prev_.ns > 1000000) return give_up();  // the TSC went backwards, or stood still
    return Action::none;
  }
  const int64_t err = static_cast<int64_t>(ticks_to_ns(cur, now.tsc) - now.ns);
  stats_.last_error_ns = err;
  const uint64_t abs_err = err < 0 ? 0 - static_cast<uint64_t>(err) : static_cast<uint64_t>(err);
  stats_.max_error_ns = std::max(stats_.max_error_ns, abs_err);

  // The TSC's rate over the last span against its rate over the whole run.
  const double run_rate = static_cast<double>(now.ns - base_.ns) / static_cast<double>(now.tsc - base_.tsc);
  if (now.ns - prev_.ns >= kRateSpanNs) {
    const double recent = static_cast<double>(now.ns - prev_.ns) / static_cast<double>(now.tsc - prev_.tsc);
    stats_.rate_seen = recent / run_rate;
    strikes_ = std::fabs(stats_.rate_seen - 1.0) > kFallbackRate ? strikes_ + 1 : 0;
    prev_ = now;
    if (strikes_ >= 2) return give_up();
  }

  if (now.ns - published_ns_ < kMinSpacingNs) return Action::none;
  const u128 m = (static_cast<u128>(now.ns - base_.ns) << 32) / (now.tsc - base_.tsc);
  if (m == 0 || m > UINT64_MAX) return Action::none;
  double slew = 0;
  if (abs_err > kDeadbandNs) {
    slew = std::clamp(static_cast<double>(err) / static_cast<double>(kHorizonNs), -kMaxSlew, kMaxSlew);
  }
  const uint64_t mult = static_cast<uint64_t>(static_cast<double>(m) * (1.0 - slew));
  const double cur_mult = static_cast<double>(cur.mult);
  if (mult == 0 || std::fabs(static_cast<double>(mult) - cur_mult) <= cur_mult * kRefreshRatio) return Action::none;
  // Anchored a little ahead, at the old mapping's time there: a thread still on the old mapping
  // until then reads less, one on the new mapping before then reads exactly that (ticks_to_ns).
  const uint64_t lead = static_cast<uint64_t>((static_cast<u128>(kLeadNs) << 32) / cur.mult);
  next.tsc0 = now.tsc + lead;
  next.ns0 = ticks_to_ns(cur, next.tsc0);
  next.mult = mult;
  published_ns_ = now.ns;
  ++stats_.corrections;
  return Action::corrected;
}

}  // namespace mlpd::rt
