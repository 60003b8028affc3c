// EventCounts: how many events of each kind a writer has put into the file's stream. Every ThreadLog
// has one (counted at commit), the MetaLog has one (counted under its lock), and the helper sums them
// for the profiler counters ("Event: KIND"), which therefore describe the file exactly.
//
// A ThreadLog's counts have a single writer (the owning thread) and one reader (the helper): the
// increment is a relaxed load and a relaxed store, on x86 a plain load/add/store on the thread's own
// cache line -- no read-modify-write, no fence. The helper's relaxed loads may see a count a little
// behind; the final sample is taken after the last event is committed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mlpd/event.h"

namespace mlpd::rt {

class EventCounts {
 public:
  // Owner only (one writer).
  void add(EventKind k) {
    std::atomic<uint64_t>& c = n_[static_cast<size_t>(k)];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Owner only: takes back one count (an event removed before it was published: calls-min).
  void remove(EventKind k) {
    std::atomic<uint64_t>& c = n_[static_cast<size_t>(k)];
    c.store(c.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  uint64_t get(EventKind k) const { return n_[static_cast<size_t>(k)].load(std::memory_order_relaxed); }
  // Adds every count to `out[kind]` (any thread).
  void add_to(uint64_t (&out)[kEventKindCount]) const {
    for (size_t i = 0; i < kEventKindCount; ++i) out[i] += n_[i].load(std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> n_[kEventKindCount] = {};
};

}  // namespace mlpd::rt
