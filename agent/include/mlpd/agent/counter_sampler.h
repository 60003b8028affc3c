// CounterSampler: the `counter` events of the agent. The helper thread calls sample() at every
// flush-interval round and once at shutdown (after the last user events, before the final flush);
// each call writes, into the MetaLog (so it reaches the file in the helper's next round, after
// everything it may describe):
//   1. a counter_descriptors event for the counters that appeared since the last call, then
//   2. a counter_samples event with the counters whose value changed (CounterSet's rules, which are
//      Mono's: FORMAT-NOTES section 5).
// Counters come from two places: the profiler's own (add(), section Profiler; profiler_counters.h)
// and a discovery function called before each sample (Mono's runtime counters, found by the hooks).
//
// The "Event: KIND" profiler counters read a snapshot of the per-kind event totals taken in step 2,
// after the descriptor event was counted and with the sample event itself included, so the final
// sample states exactly how many events of each kind the file holds (docs/format.md).
//
// Helper thread only (not thread-safe).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "mlpd/counter_set.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::agent {

class CounterSampler {
 public:
  // Reads a counter's current raw value (CounterSet::Raw form); false when it cannot be read now.
  using Read = bool (*)(const void* ctx, uint64_t arg, uint64_t& bits);
  struct Source {
    CounterDesc desc;  // index ignored
    Read read = nullptr;
    const void* ctx = nullptr;
    uint64_t arg = 0;
  };
  // Called at the start of each sample to add counters that appeared since the last one.
  using Discover = void (*)(CounterSampler& sampler, void* ctx);

  CounterSampler(rt::ThreadRegistry& registry, rt::MetaLog& meta) : registry_(registry), meta_(meta) {}

  // Adds a counter (string counters are refused: false).
  bool add(const Source& s);
  // Adds a counter of section Profiler whose value is `read(ctx, arg)` (always readable).
  void add_profiler(std::string name, uint64_t type, uint64_t unit, uint64_t variance,
                    uint64_t (*read)(const void* ctx, uint64_t arg), const void* ctx, uint64_t arg = 0);
  void set_discover(Discover fn, void* ctx) {
    discover_ = fn;
    discover_ctx_ = ctx;
  }

  // Per-kind event totals as of the current sample (the "Event: KIND" counters read them).
  const uint64_t* event_totals() const { return totals_; }

  // One sample (see above); returns the number of values written.
  size_t sample();

  size_t counters() const { return set_.size(); }
  uint64_t samples() const { return samples_; }

 private:
  struct Profiler {
    uint64_t (*read)(const void*, uint64_t);
    const void* ctx;
    uint64_t arg;
  };
  static bool read_profiler(const void* ctx, uint64_t arg, uint64_t& bits);

  rt::ThreadRegistry& registry_;
  rt::MetaLog& meta_;
  CounterSet set_;
  std::vector<Source> sources_;    // sources_[i] has index i + 1
  std::deque<Profiler> profiler_;  // contexts of add_profiler counters (a deque: addresses stay put)
  std::vector<CounterSet::Raw> raw_;
  Discover discover_ = nullptr;
  void* discover_ctx_ = nullptr;
  uint64_t totals_[kEventKindCount] = {};
  uint64_t samples_ = 0;
  Event event_;
};

}  // namespace mlpd::agent
