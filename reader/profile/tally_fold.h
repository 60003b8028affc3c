// The tally fold (the profile model's private header): what an allocation, a throw, an exception clause
// or a monitor event does to its thread's state (the last allocations, which type a thrown object; the
// monitor waited on) and to the model's sums (counts, bytes, by type, the monitor wait) -- written once
// for both builds of the model, the one-thread Builder (builder.h, tallies.cpp) and the parallel
// build's workers (ThreadPart, thread_part.h), as the call fold (call_fold.h) is for enters and
// leaves, so that the two agree bit for bit by construction. The state and the sums are the same
// types in both: a worker's sums of a buffer are added to the Builder's (TallySums::add), a part's
// thread state becomes the Builder's thread's as it is.
//
// fold_tally is generic in its owner's hooks H, what differs between the builds:
//   NodeId stack(const Event& e)                     the node of the event's stack (backtrace, else
//                                                    the thread's call path, else "[no backtrace]")
//   void weigh(What w, NodeId node, uint64_t v)      a weight on that node
//   void emit(TimelineKind k, NodeId node, uint8_t code, uint64_t value)   the event to a listener
// fold_tally takes any of the four kinds; fold_tally_as<K> one known kind (the Builder's other_event
// has already switched on it).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/profile.h"

namespace mlpd::profile::detail {

constexpr size_t kRecentAllocs = 16;  // per thread: objects allocated last (to type exceptions)

// alloc-sample: a sample of `size` bytes stands for 1/p allocations of its size (profile.h).
inline void alloc_sample_weight(uint64_t size, uint64_t interval, uint64_t& count, uint64_t& bytes) {
  count = 1;
  bytes = size;
  if (!interval) return;
  const double prob = -std::expm1(-static_cast<double>(size) / static_cast<double>(interval));
  const double w = prob > 1e-12 ? 1.0 / prob : 1e12;
  count = static_cast<uint64_t>(std::llround(w));
  bytes = static_cast<uint64_t>(std::llround(w * static_cast<double>(size)));
}

// A thread's state for its allocations, throws and monitors.
struct ThreadTally {
  uint64_t monitor_obj = 0, monitor_time = 0;
  bool monitor_waiting = false;
  uint64_t recent_obj[kRecentAllocs] = {};
  uint64_t recent_vtable[kRecentAllocs] = {};
  size_t recent_next = 0;

  // The thread's last allocations, which give a thrown object its type.
  void note_alloc(uint64_t obj, uint64_t vtable) {
    recent_obj[recent_next] = obj;
    recent_vtable[recent_next] = vtable;
    recent_next = (recent_next + 1) % kRecentAllocs;
  }
  uint64_t thrown_vtable(uint64_t obj) const {
    uint64_t vtable = 0;
    for (size_t i = 0; i < kRecentAllocs; ++i)
      if (recent_obj[i] == obj && obj) vtable = recent_vtable[i];
    return vtable;
  }
  // A monitor event: true for a contention (its stack is weighed); the wait it ends, if any, is added
  // to `wait_ns`.
  bool monitor_step(uint32_t code, uint64_t obj, uint64_t time, uint64_t& wait_ns) {
    if (code == format::MONITOR_CONTENTION) {
      monitor_waiting = true;
      monitor_obj = obj;
      monitor_time = time;
      return true;
    }
    if (monitor_waiting && monitor_obj == obj) {
      if (time > monitor_time) wait_ns += time - monitor_time;
      monitor_waiting = false;
    }
    return false;
  }
};

// The model's sums of those events: the Builder's for the whole file (published into the Profile by
// Builder::finish), a worker's for one buffer (added to the Builder's when the buffer is replayed).
struct TallySums {
  struct CountBytes {
    uint64_t count = 0, bytes = 0;
  };
  uint64_t alloc_samples = 0, alloc_objects = 0, alloc_bytes = 0;
  uint64_t throws = 0, clauses = 0, monitor[4] = {}, monitor_wait_ns = 0;
  bool alloc_present = false, exc_present = false, mon_present = false;
  std::unordered_map<uint64_t, CountBytes> alloc_by_vtable;  // vtable -> allocations
  std::unordered_map<uint64_t, uint64_t> throws_by_vtable;   // 0: type unknown

  void clear() {  // the maps keep their buckets (a worker's sums are cleared for every buffer)
    alloc_samples = alloc_objects = alloc_bytes = throws = clauses = monitor_wait_ns = 0;
    for (uint64_t& m : monitor) m = 0;
    alloc_present = exc_present = mon_present = false;
    alloc_by_vtable.clear();
    throws_by_vtable.clear();
  }
  // Sums: the order they are added in does not matter.
  void add(const TallySums& o) {
    alloc_samples += o.alloc_samples;
    alloc_objects += o.alloc_objects;
    alloc_bytes += o.alloc_bytes;
    throws += o.throws;
    clauses += o.clauses;
    for (size_t k = 0; k < 4; ++k) monitor[k] += o.monitor[k];
    monitor_wait_ns += o.monitor_wait_ns;
    alloc_present = alloc_present || o.alloc_present;
    exc_present = exc_present || o.exc_present;
    mon_present = mon_present || o.mon_present;
    for (const auto& [vt, cb] : o.alloc_by_vtable) {
      CountBytes& d = alloc_by_vtable[vt];
      d.count += cb.count;
      d.bytes += cb.bytes;
    }
    for (const auto& [vt, c] : o.throws_by_vtable) throws_by_vtable[vt] += c;
  }
};

// Whether fold_tally takes events of this kind.
inline bool tallied(EventKind k) {
  return k == EventKind::alloc || k == EventKind::exception_throw || k == EventKind::exception_clause ||
         k == EventKind::monitor;
}

// One event of kind K (tallied(K)) in the window, on thread state `s`, into `t`, with its owner's
// hooks `h` (above). `alloc_interval`: the agent's alloc-sample (Profile::alloc_sample_interval).
template <EventKind K, class H>
[[gnu::always_inline]] inline void fold_tally_as(const Event& e, ThreadTally& s, TallySums& t, uint64_t alloc_interval,
                                                 H& h) {
  if constexpr (K == EventKind::alloc) {
    uint64_t count, bytes;
    alloc_sample_weight(e.size, alloc_interval, count, bytes);
    ++t.alloc_samples;
    t.alloc_objects += count;
    t.alloc_bytes += bytes;
    t.alloc_present = true;
    const NodeId n = h.stack(e);
    h.weigh(What::alloc, n, count);
    h.weigh(What::alloc_bytes, n, bytes);
    TallySums::CountBytes& cb = t.alloc_by_vtable[e.ptr];
    cb.count += count;
    cb.bytes += bytes;
    s.note_alloc(e.obj, e.ptr);
    h.emit(TimelineKind::alloc, n, 0, e.size);
  } else if constexpr (K == EventKind::exception_throw) {
    ++t.throws;
    t.exc_present = true;
    const NodeId n = h.stack(e);
    h.weigh(What::exceptions, n, 1);
    ++t.throws_by_vtable[s.thrown_vtable(e.obj)];
    h.emit(TimelineKind::exception, n, 0, 0);
  } else if constexpr (K == EventKind::exception_clause) {
    ++t.clauses;
  } else {
    static_assert(K == EventKind::monitor, "fold_tally_as: a kind tallied() takes");
    t.mon_present = true;
    if (e.code < 4) ++t.monitor[e.code];
    NodeId n = 0;
    if (s.monitor_step(e.code, e.obj, e.time, t.monitor_wait_ns)) {
      n = h.stack(e);
      h.weigh(What::monitor, n, 1);
    }
    h.emit(TimelineKind::monitor, n, e.code, 0);
  }
}

// fold_tally_as for the event's kind (tallied(e.kind); any other is left alone).
template <class H>
[[gnu::always_inline]] inline void fold_tally(const Event& e, ThreadTally& s, TallySums& t, uint64_t alloc_interval, H& h) {
  switch (e.kind) {
    case EventKind::alloc: fold_tally_as<EventKind::alloc>(e, s, t, alloc_interval, h); break;
    case EventKind::exception_throw: fold_tally_as<EventKind::exception_throw>(e, s, t, alloc_interval, h); break;
    case EventKind::exception_clause: fold_tally_as<EventKind::exception_clause>(e, s, t, alloc_interval, h); break;
    case EventKind::monitor: fold_tally_as<EventKind::monitor>(e, s, t, alloc_interval, h); break;
    default: break;
  }
}

}  // namespace mlpd::profile::detail
