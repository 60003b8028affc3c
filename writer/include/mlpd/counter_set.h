// CounterSet: the state behind TYPE_SAMPLE_COUNTERS_DESC and TYPE_SAMPLE_COUNTERS events, with the
// rules Mono 6.8's log profiler writes them by (FORMAT-NOTES section 5, docs/format.md section 7), so
// that mprof-report and Mono.Profiler.Log read our counters as they read Mono's:
//
// * indices start at 1 in the order counters are added (0 ends a sample);
// * a counter is described once, in the first descriptor event after it was added;
// * a sample carries only the counters whose value changed since the previous sample -- every
//   counter in its first sample (compared against zero, as Mono does);
// * integer values are the change since the previous sample: int as the sleb of the int32 change,
//   uint as the uleb of the uint32 change (mod 2^32), long / word (64-bit) / time interval as the sleb
//   of the int64 change, ulong as the uleb of the uint64 change; doubles are absolute.
// String counters are refused: Mono 6.8 has none, and mprof-report 6.8 crashes on a non-null one.
//
// Not thread-safe: one owner (the agent's helper thread) describes and samples.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/event.h"

namespace mlpd {

class CounterSet {
 public:
  // Adds a counter (its `index` is assigned here); returns the index, or 0 for a counter that cannot
  // be sampled (string type, unknown type).
  uint64_t add(CounterDesc desc);
  size_t size() const { return counters_.size(); }
  const CounterDesc& desc(uint64_t index) const { return counters_[index - 1].desc; }

  // Fills `e` with a counter_descriptors event for the counters not described yet; false if none.
  bool describe(Event& e);

  // One counter's current value, read raw: the counter's bytes as the integer of its width (int and
  // uint: the 32-bit pattern, zero-extended; the others: 64 bits; double: the IEEE bits).
  struct Raw {
    uint64_t bits = 0;
    bool valid = false;  // false: could not be read now (it is left out of this sample)
  };
  // Fills `e` with a counter_samples event from `current[i]` = the value of the counter with index
  // i + 1 (counters beyond current.size() are not sampled this time). Returns the number of values.
  size_t sample(const std::vector<Raw>& current, Event& e);

 private:
  struct Counter {
    CounterDesc desc;
    uint64_t last = 0;
    bool sampled = false;
    bool described = false;
  };
  std::vector<Counter> counters_;
};

// The value a reader gets by adding up the deltas of one counter, as mprof-report does (`previous`
// is the accumulated value so far, in the same raw form as CounterSet::Raw; doubles replace it).
uint64_t accumulate_counter(uint64_t type, uint64_t previous, uint64_t sample_bits);

}  // namespace mlpd
