// The tally fold (reader/profile/tally_fold.h), the one fold of allocations, throws, clauses and monitor
// events that both builds of the profile model use, on its own with hooks that record what it does: the
// alloc-sample weights, a thrown object typed by the thread's last allocations (and not past the last
// 16), monitor waits (a contention's stack weighed, its end's wait summed), and sums of parts added
// together equal to the sums of the whole.
#include "mlpd_catch.h"

#include <cstdint>
#include <tuple>
#include <vector>

#include "tally_fold.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::profile::detail;

namespace {

// Hooks that give every event a node of its own (its time) and record the weights and the emits.
struct Hooks {
  std::vector<std::tuple<What, NodeId, uint64_t>> weights;
  std::vector<std::tuple<TimelineKind, NodeId, uint8_t, uint64_t>> emitted;
  uint64_t stacks = 0;
  NodeId stack(const Event& e) {
    ++stacks;
    return static_cast<NodeId>(e.time);
  }
  void weigh(What w, NodeId n, uint64_t v) { weights.emplace_back(w, n, v); }
  void emit(TimelineKind k, NodeId n, uint8_t code, uint64_t value) { emitted.emplace_back(k, n, code, value); }
};

Event alloc(uint64_t t, uint64_t obj, uint64_t vtable, uint64_t size) {
  Event e;
  e.kind = EventKind::alloc;
  e.time = t;
  e.obj = obj;
  e.ptr = vtable;
  e.size = size;
  return e;
}
Event thrown(uint64_t t, uint64_t obj) {
  Event e;
  e.kind = EventKind::exception_throw;
  e.time = t;
  e.obj = obj;
  return e;
}
Event monitor(uint64_t t, uint32_t code, uint64_t obj) {
  Event e;
  e.kind = EventKind::monitor;
  e.time = t;
  e.code = code;
  e.obj = obj;
  return e;
}

bool same(const TallySums& a, const TallySums& b) {
  if (a.alloc_by_vtable.size() != b.alloc_by_vtable.size()) return false;
  for (const auto& [vt, cb] : a.alloc_by_vtable) {
    auto it = b.alloc_by_vtable.find(vt);
    if (it == b.alloc_by_vtable.end() || it->second.count != cb.count || it->second.bytes != cb.bytes) return false;
  }
  for (size_t k = 0; k < 4; ++k)
    if (a.monitor[k] != b.monitor[k]) return false;
  return a.alloc_samples == b.alloc_samples && a.alloc_objects == b.alloc_objects && a.alloc_bytes == b.alloc_bytes &&
         a.throws == b.throws && a.clauses == b.clauses && a.monitor_wait_ns == b.monitor_wait_ns &&
         a.alloc_present == b.alloc_present && a.exc_present == b.exc_present && a.mon_present == b.mon_present &&
         a.throws_by_vtable == b.throws_by_vtable;
}

}  // namespace

TEST_CASE("tally fold: allocations weighed by alloc-sample, summed by type", "[profile][tally]") {
  ThreadTally s;
  TallySums t;
  Hooks h;
  fold_tally(alloc(10, 0x100, 0xA0, 48), s, t, 0, h);  // not sampled: one object of its size
  CHECK(t.alloc_samples == 1);
  CHECK(t.alloc_objects == 1);
  CHECK(t.alloc_bytes == 48);
  CHECK(t.alloc_present);
  CHECK_FALSE(t.exc_present);
  REQUIRE(h.weights.size() == 2);
  CHECK(h.weights[0] == std::make_tuple(What::alloc, NodeId{10}, uint64_t{1}));
  CHECK(h.weights[1] == std::make_tuple(What::alloc_bytes, NodeId{10}, uint64_t{48}));
  REQUIRE(h.emitted.size() == 1);
  CHECK(h.emitted[0] == std::make_tuple(TimelineKind::alloc, NodeId{10}, uint8_t{0}, uint64_t{48}));
  // alloc-sample=512: a sample of 512 bytes stands for 1/(1-e^-1) = 1.58 allocations (2, rounded).
  fold_tally(alloc(20, 0x200, 0xA0, 512), s, t, 512, h);
  uint64_t count = 0, bytes = 0;
  alloc_sample_weight(512, 512, count, bytes);
  CHECK(count == 2);
  CHECK(bytes == 810);
  CHECK(t.alloc_samples == 2);
  CHECK(t.alloc_objects == 1 + count);
  CHECK(t.alloc_bytes == 48 + bytes);
  REQUIRE(t.alloc_by_vtable.size() == 1);
  CHECK(t.alloc_by_vtable[0xA0].count == 1 + count);
  CHECK(t.alloc_by_vtable[0xA0].bytes == 48 + bytes);
}

TEST_CASE("tally fold: a thrown object's type from the thread's last 16 allocations", "[profile][tally]") {
  ThreadTally s;
  TallySums t;
  Hooks h;
  fold_tally(alloc(1, 0x500, 0xE1, 64), s, t, 0, h);
  fold_tally(thrown(2, 0x500), s, t, 0, h);
  fold_tally(thrown(3, 0x999), s, t, 0, h);  // never seen allocated: type unknown (0)
  CHECK(t.throws == 2);
  CHECK(t.exc_present);
  CHECK(t.throws_by_vtable.at(0xE1) == 1);
  CHECK(t.throws_by_vtable.at(0) == 1);
  CHECK(h.weights.back() == std::make_tuple(What::exceptions, NodeId{3}, uint64_t{1}));
  CHECK(h.emitted.back() == std::make_tuple(TimelineKind::exception, NodeId{3}, uint8_t{0}, uint64_t{0}));
  // The same address allocated again with another type: the later one.
  fold_tally(alloc(4, 0x500, 0xE2, 64), s, t, 0, h);
  CHECK(s.thrown_vtable(0x500) == 0xE2);
  // Sixteen allocations later it is forgotten; object 0 never has a type.
  for (uint64_t i = 0; i < kRecentAllocs; ++i) fold_tally(alloc(10 + i, 0x1000 + i, 0xF0, 8), s, t, 0, h);
  CHECK(s.thrown_vtable(0x500) == 0);
  CHECK(s.thrown_vtable(0x1000) == 0xF0);
  CHECK(s.thrown_vtable(0) == 0);
  // A clause is counted, nothing more.
  const size_t w = h.weights.size(), em = h.emitted.size();
  Event clause;
  clause.kind = EventKind::exception_clause;
  fold_tally(clause, s, t, 0, h);
  CHECK(t.clauses == 1);
  CHECK(h.weights.size() == w);
  CHECK(h.emitted.size() == em);
}

TEST_CASE("tally fold: monitor contentions weighed, their waits summed", "[profile][tally]") {
  ThreadTally s;
  TallySums t;
  Hooks h;
  fold_tally(monitor(100, format::MONITOR_CONTENTION, 0x42), s, t, 0, h);
  CHECK(s.monitor_waiting);
  fold_tally(monitor(150, format::MONITOR_DONE, 0x43), s, t, 0, h);  // another object: no end
  CHECK(s.monitor_waiting);
  fold_tally(monitor(170, format::MONITOR_DONE, 0x42), s, t, 0, h);
  CHECK_FALSE(s.monitor_waiting);
  CHECK(t.monitor_wait_ns == 70);
  CHECK(t.monitor[format::MONITOR_CONTENTION] == 1);
  CHECK(t.monitor[format::MONITOR_DONE] == 2);
  CHECK(t.mon_present);
  REQUIRE(h.weights.size() == 1);  // only the contention's stack
  CHECK(h.weights[0] == std::make_tuple(What::monitor, NodeId{100}, uint64_t{1}));
  CHECK(h.stacks == 1);
  REQUIRE(h.emitted.size() == 3);
  CHECK(h.emitted[1] == std::make_tuple(TimelineKind::monitor, NodeId{0}, uint8_t{format::MONITOR_DONE}, uint64_t{0}));
  // An end before its start (times from another clock) adds no wait.
  fold_tally(monitor(500, format::MONITOR_CONTENTION, 0x42), s, t, 0, h);
  fold_tally(monitor(400, format::MONITOR_FAIL, 0x42), s, t, 0, h);
  CHECK(t.monitor_wait_ns == 70);
  CHECK_FALSE(s.monitor_waiting);
}

TEST_CASE("tally fold: sums of parts added equal the sums of the whole", "[profile][tally]") {
  std::vector<Event> events;
  for (uint64_t i = 0; i < 200; ++i) {
    events.push_back(alloc(i * 10, 0x100 + i % 23, 0xA0 + i % 5, 16 + i));
    // Objects allocated three events before (typed), or never (unknown).
    if (i % 7 == 0) events.push_back(thrown(i * 10 + 1, i % 14 ? 0x100 + (i + 20) % 23 : 0x9999));
    if (i % 11 == 0) events.push_back(monitor(i * 10 + 2, format::MONITOR_CONTENTION, i % 3));
    if (i % 11 == 5) events.push_back(monitor(i * 10 + 3, format::MONITOR_DONE, (i - 5) % 3));
  }
  ThreadTally s_whole, s_parts;
  TallySums whole, sum;
  Hooks h1, h2;
  for (const Event& e : events) fold_tally(e, s_whole, whole, 1024, h1);
  // The parts one after another on one thread state (a worker's buffers), each into sums of its own.
  for (size_t from = 0; from < events.size(); from += 37) {
    TallySums part;
    for (size_t i = from; i < std::min(events.size(), from + 37); ++i) fold_tally(events[i], s_parts, part, 1024, h2);
    sum.add(part);
  }
  CHECK(same(whole, sum));
  CHECK(whole.monitor_wait_ns > 0);
  CHECK(whole.throws_by_vtable.size() > 1);
  CHECK(h1.weights == h2.weights);
  CHECK(h1.emitted == h2.emitted);
  TallySums empty;
  CHECK_FALSE(same(whole, empty));
  whole.clear();
  CHECK(same(whole, empty));
}
