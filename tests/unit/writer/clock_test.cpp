// ClockTracker (writer/include/mlpd/rt/clock_tracker.h) driven by a fake clock source: a calibration
// read that is preempted does not set the scale; the helper's checks correct a wrong scale, with
// every published mapping continuous with the one before (no time goes backwards, for a reader on
// either mapping), publications spaced, the slew bounded; a TSC whose rate changes is given up
// for CLOCK_MONOTONIC without a step backwards.
#include "mlpd_catch.h"

#include <cmath>
#include <cstdint>
#include <deque>
#include <vector>

#include "mlpd/rt/clock.h"
#include "mlpd/rt/clock_tracker.h"

using namespace mlpd::rt;

namespace {

// True time in ns (what CLOCK_MONOTONIC reads); ticks at `rate` per ns from `tick_base`. Every read
// takes `step` ns; a stall queued in `stalls` happens just before the next CLOCK_MONOTONIC read, as
// a preemption inside the read would.
class FakeClock final : public ClockSource {
 public:
  double ns = 5e9;
  double rate = 2.5;  // ticks per ns: a 2.5 GHz TSC
  double tick_base = 1e6;
  double step = 15;
  std::deque<double> stalls;

  uint64_t ticks() override {
    ns += step;
    return tick();
  }
  uint64_t monotonic() override {
    ns += step;
    if (!stalls.empty()) {
      ns += stalls.front();
      stalls.pop_front();
    }
    return static_cast<uint64_t>(ns);
  }
  uint64_t tick() const { return static_cast<uint64_t>(tick_base + ns * rate); }
  // The TSC's rate changes from now on (ticks continuous).
  void set_rate(double r) {
    tick_base += ns * (rate - r);
    rate = r;
  }
};

double scale_of(const ClockParams& p) { return static_cast<double>(p.mult) / 4294967296.0; }  // ns per tick

// Every reader's view around a publication: old mapping up to a little after the anchor's read,
// new mapping from the publication on. The times one thread can see in order must not decrease:
// old(t) for t up to `late` ticks after `at`, then new(t') for every t' >= t.
void require_continuous(const ClockParams& old_map, const ClockParams& new_map, uint64_t at, uint64_t late) {
  uint64_t backwards = 0;
  for (uint64_t t = at - 1000; t <= at + late; t += 7) {
    const uint64_t seen = ticks_to_ns(old_map, t);
    for (uint64_t t2 = t; t2 <= t + 4000; t2 += 13) backwards += ticks_to_ns(new_map, t2) < seen;
  }
  REQUIRE(backwards == 0);
}

}  // namespace

TEST_CASE("clock: the shortest of several reads is used, so a preempted read does not set the scale", "[clock]") {
  FakeClock c;
  c.stalls = {3e6};  // 3 ms inside the very first read: the old single-read calibration got 1.75x
  ClockTracker tr;
  ClockParams p;
  REQUIRE(tr.calibrate(c, p));
  REQUIRE(p.mult != 0);
  CHECK(std::fabs(scale_of(p) * c.rate - 1.0) < 1e-4);
  CHECK(tr.stats().calibration_window_ns < 100);

  // The same read taken alone (as before the fix): the scale is far off.
  FakeClock alone;
  alone.stalls = {3e6};
  const ClockPair a = read_pair(alone, 1);
  while (alone.monotonic() - a.ns < ClockTracker::kCalibrationNs) {
  }
  const ClockPair b = read_pair(alone, 1);
  const double bad = static_cast<double>(b.ns - a.ns) / static_cast<double>(b.tsc - a.tsc) * alone.rate;
  CHECK(std::fabs(bad - 1.0) > 0.3);
}

TEST_CASE("clock: every read preempted: calibration retries, and a check ignores a preempted read", "[clock]") {
  FakeClock c;
  for (int i = 0; i < 16; ++i) c.stalls.push_back(1e6);  // every read of the first pair
  ClockTracker tr;
  ClockParams p;
  REQUIRE(tr.calibrate(c, p));
  CHECK(std::fabs(scale_of(p) * c.rate - 1.0) < 1e-4);

  c.ns += 5e8;
  c.stalls = {1e6, 1e6, 1e6, 1e6};
  ClockParams next;
  CHECK(tr.check(read_pair(c, 4), p, next) == ClockTracker::Action::none);
  CHECK(tr.stats().rejected == 1);
}

namespace {
// 30 s of flush rounds every 10 ms from a mapping `factor` times too fast; checks every publication
// and returns the mapping's offset from CLOCK_MONOTONIC at the end and after the first second.
struct Converged {
  double first_ns, end_ns, end_scale_error;
  int corrections;
};
Converged correct_from(double factor) {
  FakeClock c;
  ClockTracker tr;
  ClockParams cur;
  REQUIRE(tr.calibrate(c, cur));
  cur.mult = static_cast<uint64_t>(static_cast<double>(cur.mult) * factor);  // as a preempted calibration left it
  Converged r{0, 0, 0, 0};
  uint64_t last_publication = 0;
  const double true_scale = 1.0 / c.rate;
  const auto offset = [&] {
    const ClockPair p = read_pair(c, 4);
    return static_cast<double>(static_cast<int64_t>(ticks_to_ns(cur, p.tsc) - p.ns));
  };
  for (int round = 0; round < 3000; ++round) {
    c.ns += 1e7;
    const ClockPair now = read_pair(c, 4);
    ClockParams next;
    const ClockTracker::Action a = tr.check(now, cur, next);
    REQUIRE(a != ClockTracker::Action::fallback);
    if (a == ClockTracker::Action::corrected) {
      ++r.corrections;
      if (last_publication) CHECK(now.ns - last_publication >= ClockTracker::kMinSpacingNs);
      last_publication = now.ns;
      // The publication lands up to 50 us after the pair was read (the helper was preempted).
      require_continuous(cur, next, now.tsc, static_cast<uint64_t>(5e4 * c.rate));
      // Every interval after the first correction is within the slew bound of the truth.
      CHECK(std::fabs(scale_of(next) / true_scale - 1.0) <= ClockTracker::kMaxSlew + 1e-5);
      cur = next;
    }
    if (round == 99) r.first_ns = offset();
  }
  r.end_ns = offset();
  r.end_scale_error = std::fabs(scale_of(cur) / true_scale - 1.0);
  return r;
}
}  // namespace

TEST_CASE("clock: a wrong scale is corrected, continuously, with spaced publications and a bounded slew", "[clock]") {
  // 1.5x: 125 ms ahead at the first correction (250 ms); from then on slowed by 0.1%, never stepped back.
  const Converged big = correct_from(1.5);
  CHECK(big.corrections >= 1);
  CHECK(big.first_ns > 1e8);
  CHECK(big.first_ns - big.end_ns > 0.9 * 29e9 * ClockTracker::kMaxSlew);
  CHECK(big.end_ns > 0);
  // 0.7x: behind, so sped up by at most 0.1% (the continuity check covers a faster new mapping too).
  const Converged slow = correct_from(0.7);
  CHECK(slow.first_ns < -5e7);
  CHECK(slow.end_ns - slow.first_ns > 0.9 * 29e9 * ClockTracker::kMaxSlew);
  CHECK(slow.end_ns < 0);
  // 2e-4 (a calibration read preempted for 800 ns): 50 us off at the first correction, slewed away.
  const Converged small = correct_from(1.0002);
  CHECK(std::fabs(small.end_ns) <= ClockTracker::kDeadbandNs + 1000);
  CHECK(small.end_scale_error < 1e-5);
}

TEST_CASE("clock: a right scale is left alone", "[clock]") {
  FakeClock c;
  ClockTracker tr;
  ClockParams cur;
  REQUIRE(tr.calibrate(c, cur));
  for (int round = 0; round < 1000; ++round) {
    c.ns += 1e7;
    ClockParams next;
    if (tr.check(read_pair(c, 4), cur, next) == ClockTracker::Action::corrected) cur = next;
  }
  CHECK(tr.stats().corrections <= 1);  // the 2 ms calibration's last digits, refined once at most
  CHECK(tr.stats().max_error_ns < 2000);
}

TEST_CASE("clock: a TSC whose rate changes is given up for CLOCK_MONOTONIC, without a step back", "[clock]") {
  FakeClock c;
  ClockTracker tr;
  ClockParams cur;
  REQUIRE(tr.calibrate(c, cur));
  for (int round = 0; round < 200; ++round) {
    c.ns += 1e7;
    ClockParams next;
    REQUIRE(tr.check(read_pair(c, 4), cur, next) != ClockTracker::Action::fallback);
  }
  c.set_rate(c.rate * 1.05);
  ClockTracker::Action a = ClockTracker::Action::none;
  ClockParams next;
  ClockPair at;
  for (int round = 0; round < 100 && a != ClockTracker::Action::fallback; ++round) {
    c.ns += 1e7;
    at = read_pair(c, 4);
    a = tr.check(at, cur, next);
    if (a == ClockTracker::Action::corrected) cur = next;
  }
  REQUIRE(a == ClockTracker::Action::fallback);
  CHECK(next.mult == 0);
  // CLOCK_MONOTONIC + offset from here: never before what the TSC mapping said at the switch.
  const uint64_t last_tsc_time = ticks_to_ns(cur, c.tick());
  CHECK(c.monotonic() + next.ns0 >= last_tsc_time);
  CHECK(c.monotonic() + next.ns0 <= last_tsc_time + 2 * ClockTracker::kFallbackMarginNs);
}

TEST_CASE("clock: a TSC that goes backwards is given up", "[clock]") {
  FakeClock c;
  ClockTracker tr;
  ClockParams cur;
  REQUIRE(tr.calibrate(c, cur));
  c.ns += 1e8;
  ClockParams next;
  REQUIRE(tr.check(read_pair(c, 4), cur, next) == ClockTracker::Action::none);
  c.ns += 1e7;
  c.tick_base -= 1e9;  // the TSC jumps back (a core with another TSC, a restored VM)
  CHECK(tr.check(read_pair(c, 4), cur, next) == ClockTracker::Action::fallback);
}

TEST_CASE("clock: the published clock reads forwards, and MLPD_CLOCK's monotonic choice still works", "[clock]") {
  CHECK(std::string(init_clock(false)) == "monotonic");
  uint64_t t0 = now_ns(), t;
  CHECK(!now_ns_tsc(t));
  CHECK(now_ns() >= t0);
  const std::string name = init_clock(true);
  CHECK((name == "tsc" || name == "monotonic"));
  t0 = now_ns();
  for (int i = 0; i < 1000; ++i) {
    const uint64_t t1 = now_ns();
    REQUIRE(t1 >= t0);
    t0 = t1;
  }
  CHECK(check_clock().empty());
  CHECK(clock_summary().rfind("mlpd: clock:", 0) == 0);
  init_clock(false);
}
