// The TSC's calibration against CLOCK_MONOTONIC and its upkeep (docs/design.md, "Clock"), apart
// from where the mapping is published (clock.h) and from the real clocks (a ClockSource), so that
// tests can drive it with a fake one.
//
// * A pair is (TSC, CLOCK_MONOTONIC) with the TSC read on both sides of the clock read; its window is
//   the ticks between the two. A preempted read has a long window: of several reads the one with
//   the shortest window is used, and a pair whose window is still long is not used at all.
// * Calibration: two pairs ~2 ms apart give the scale (good to ~1e-5 with windows of ~100 ticks).
// * Each check (the helper's flush rounds) takes a pair and compares the published mapping's time
//   with CLOCK_MONOTONIC. The scale is refined over the whole run (from the first calibration pair
//   to now: seconds, then minutes). When the refined scale and the published one differ by more
//   than 2 ppm, or the time is more than 20 us off, a new mapping is published: the refined scale,
//   slowed or sped up by at most 0.1% (the offset divided by 1 s) so that the time converges back
//   to CLOCK_MONOTONIC without any interval being stretched by more than 0.1%, anchored a little in
//   the future at the old mapping's time there (continuous: no thread's time goes backwards).
//   Publications are at least 250 ms apart (clock.h: the slots' reuse).
// * A TSC that disagrees with CLOCK_MONOTONIC's rate by more than 1% over two checks in a row (a TSC
//   that is not really invariant, a virtual machine moved), or that went backwards, is given up:
//   CLOCK_MONOTONIC plus an offset that keeps the time continuous (plus 1 ms: forwards, never back).
#pragma once

#include <cstdint>

#include "mlpd/rt/clock.h"

namespace mlpd::rt {

class ClockSource {
 public:
  virtual uint64_t ticks() = 0;
  virtual uint64_t monotonic() = 0;

 protected:
  ~ClockSource() = default;
};

struct ClockPair {
  uint64_t tsc = 0;     // the middle of the read
  uint64_t ns = 0;      // CLOCK_MONOTONIC
  uint64_t window = 0;  // ticks from before to after the clock read
};

// Of `tries` reads, the one with the shortest window.
ClockPair read_pair(ClockSource& src, int tries);

class ClockTracker {
 public:
  static constexpr uint64_t kCalibrationNs = 2000000;    // between the two calibration pairs
  static constexpr uint64_t kMaxWindowNs = 20000;        // a longer read was preempted: not used
  static constexpr uint64_t kMinSpacingNs = 250000000;   // between two publications
  static constexpr uint64_t kDeadbandNs = 20000;         // an offset this small is left alone
  static constexpr uint64_t kHorizonNs = 1000000000;     // an offset is slewed away over ~this
  static constexpr double kMaxSlew = 1e-3;               // at most 0.1% faster or slower
  static constexpr double kRefreshRatio = 2e-6;          // a scale this close is left alone
  static constexpr uint64_t kLeadNs = 100000;            // a new mapping's anchor is this far ahead
  static constexpr double kFallbackRate = 1e-2;          // a TSC rate off by this much ...
  static constexpr uint64_t kRateSpanNs = 100000000;     // ... over at least this long, twice: given up
  static constexpr uint64_t kFallbackMarginNs = 1000000; // the switch moves the time forwards by this

  enum class Action { none, corrected, fallback };

  // The mapping from pairs read from `src`; false when the TSC is not usable (not increasing, or
  // every read preempted in three attempts).
  bool calibrate(ClockSource& src, ClockParams& out);
  // One check with a fresh pair against the published mapping `cur` (mult != 0). On `corrected` or
  // `fallback`, `next` is the mapping to publish (fallback: mult 0, ns0 the offset to add to
  // CLOCK_MONOTONIC).
  Action check(const ClockPair& now, const ClockParams& cur, ClockParams& next);

  struct Stats {
    uint64_t checks = 0, rejected = 0, corrections = 0;
    int64_t last_error_ns = 0;      // the published mapping's time minus CLOCK_MONOTONIC at the last check
    uint64_t max_error_ns = 0;      // the largest |error| seen
    uint64_t calibration_window_ns = 0;  // the longer window of the two calibration pairs
    double rate_seen = 0;           // at a fallback: the TSC's rate over the last span relative to the run's
  };
  const Stats& stats() const { return stats_; }

 private:
  uint64_t window_ns(uint64_t window, uint64_t mult) const;

  ClockPair base_;        // the first calibration pair: the refined scale's start
  ClockPair prev_;        // the last accepted check's pair (rate changes)
  uint64_t published_ns_ = 0;  // CLOCK_MONOTONIC at the last publication
  int strikes_ = 0;       // consecutive checks with a rate off by kFallbackRate
  Stats stats_;
};

}  // namespace mlpd::rt
