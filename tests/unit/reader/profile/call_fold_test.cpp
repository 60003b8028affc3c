// The call fold (reader/profile/call_fold.h), the one fold of enters and leaves that both builds of the
// profile model use, on its own with hooks that record what it does: enter/leave and their times,
// nested recursion, unmatched leaves (no open call; none within the search), exception leaves that
// unwind the calls opened after the one they end, the depth bound, the end of the file; the same
// events through a CallStack and through LocalCalls (the workers' stack in locals); and the time spans
// the parallel build applies later, against touch() event by event, at the times 0 and 2^64-1.
#include "mlpd_catch.h"

#include <cstdint>
#include <random>
#include <vector>

#include "call_fold.h"

using namespace mlpd::profile;
using namespace mlpd::profile::detail;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000, kC = 0x3000;

struct Closed {
  NodeId node;
  uint64_t method, time, dur, self;
  uint8_t code;
  bool operator==(const Closed&) const = default;
};

// Hooks that give each (parent, method) a node of its own and record every call ended.
struct Hooks {
  std::vector<std::pair<NodeId, uint64_t>> nodes{{0, 0}, {0, 0}};  // [1]: the thread's root
  std::vector<Closed> closed_calls;
  uint64_t counted_enters = 0, unmatched_leaves = 0, entered_calls = 0;
  void counted(uint64_t) { ++counted_enters; }
  NodeId root() const { return 1; }
  NodeId child(NodeId parent, uint64_t method, FrameId& frame) {
    frame = static_cast<FrameId>(method >> 12);
    for (NodeId n = 2; n < nodes.size(); ++n)
      if (nodes[n] == std::make_pair(parent, method)) return n;
    nodes.emplace_back(parent, method);
    return static_cast<NodeId>(nodes.size() - 1);
  }
  void entered(const CallEntry& c) {
    ++entered_calls;
    CHECK(c.frame == static_cast<FrameId>(c.method >> 12));
  }
  void closed(NodeId node, FrameId frame, uint64_t time, uint64_t dur, uint64_t self, uint8_t code) {
    closed_calls.push_back({node, static_cast<uint64_t>(frame) << 12, time, dur, self, code});
  }
  void unmatched() { ++unmatched_leaves; }
};

struct Thread {
  CallStack calls;
  uint64_t deep = 0;
  Hooks h;
  size_t max_depth = 2048;
  void enter(uint64_t m, uint64_t t) { fold_enter(calls, deep, max_depth, t, m, h); }
  void leave(uint64_t m, uint64_t t, uint8_t code = kLeft) { fold_leave(calls, deep, t, m, code, h); }
};

}  // namespace

TEST_CASE("call fold: enter/leave give each call its duration and self time", "[call_fold]") {
  Thread th;
  th.enter(kA, 100);
  th.enter(kB, 110);
  th.leave(kB, 150);  // B: 40 ns, all its own
  th.enter(kC, 160);
  th.leave(kC, 170);  // C: 10 ns
  th.leave(kA, 200);  // A: 100 ns, 50 in callees
  REQUIRE(th.h.closed_calls.size() == 3);
  CHECK(th.h.closed_calls[0] == Closed{3, kB, 150, 40, 40, kLeft});
  CHECK(th.h.closed_calls[1] == Closed{4, kC, 170, 10, 10, kLeft});
  CHECK(th.h.closed_calls[2] == Closed{2, kA, 200, 100, 50, kLeft});
  CHECK(th.h.nodes[3].first == 2);  // B under A
  CHECK(th.h.counted_enters == 3);
  CHECK(th.h.entered_calls == 3);
  CHECK(th.h.unmatched_leaves == 0);
  CHECK(th.calls.empty());
}

TEST_CASE("call fold: nested recursion ends the innermost call of the method first", "[call_fold]") {
  Thread th;
  th.enter(kA, 0);
  th.enter(kA, 10);
  th.enter(kA, 20);
  th.leave(kA, 25);
  th.leave(kA, 40);
  th.leave(kA, 100);
  REQUIRE(th.h.closed_calls.size() == 3);
  // Three call paths A, A/A, A/A/A; the inner ones' time is the outer ones' callees'.
  CHECK(th.h.closed_calls[0] == Closed{4, kA, 25, 5, 5, kLeft});
  CHECK(th.h.closed_calls[1] == Closed{3, kA, 40, 30, 25, kLeft});
  CHECK(th.h.closed_calls[2] == Closed{2, kA, 100, 100, 70, kLeft});
}

TEST_CASE("call fold: a leave with no open call of its method is unmatched and ends nothing", "[call_fold]") {
  Thread th;
  th.leave(kA, 5);  // nothing open
  CHECK(th.h.unmatched_leaves == 1);
  th.enter(kA, 10);
  th.leave(kB, 20);  // B was never entered
  CHECK(th.h.unmatched_leaves == 2);
  CHECK(th.h.closed_calls.empty());
  CHECK(th.calls.size() == 1);
  // An enter of A below 64 other open calls is out of the search's reach: its leave is unmatched.
  for (uint64_t i = 0; i < kMaxUnwindSearch; ++i) th.enter(kC + 0x1000 * (i + 1), 30);
  th.leave(kA, 40);
  CHECK(th.h.unmatched_leaves == 3);
  CHECK(th.h.closed_calls.empty());
  // One call fewer on top, and A is found: the 63 calls opened after it end as unwound.
  th.leave(kC + 0x1000 * kMaxUnwindSearch, 50);
  th.leave(kA, 60);
  CHECK(th.h.unmatched_leaves == 3);
  REQUIRE(th.h.closed_calls.size() == 1 + kMaxUnwindSearch);
  for (size_t i = 1; i < kMaxUnwindSearch; ++i) CHECK(th.h.closed_calls[i].code == kUnwound);
  CHECK(th.h.closed_calls.back().method == kA);
  CHECK(th.h.closed_calls.back().code == kLeft);
  CHECK(th.calls.empty());
}

TEST_CASE("call fold: an exception leave unwinds the calls opened after its own", "[call_fold]") {
  Thread th;
  th.enter(kA, 0);
  th.enter(kB, 10);
  th.enter(kC, 20);
  th.leave(kA, 50, kLeftThrow);  // B and C never left: they end at the same time, unwound
  REQUIRE(th.h.closed_calls.size() == 3);
  CHECK(th.h.closed_calls[0] == Closed{4, kC, 50, 30, 30, kUnwound});
  CHECK(th.h.closed_calls[1] == Closed{3, kB, 50, 40, 10, kUnwound});
  CHECK(th.h.closed_calls[2] == Closed{2, kA, 50, 50, 10, kLeftThrow});
  CHECK(th.h.unmatched_leaves == 0);
}

TEST_CASE("call fold: times at the edges (a leave before its enter, 2^64-1)", "[call_fold]") {
  Thread th;
  th.enter(kA, 100);
  th.enter(kB, 200);
  th.leave(kB, 150);  // before its enter (a damaged file): lasts 0
  th.enter(kC, UINT64_MAX - 10);
  th.leave(kC, UINT64_MAX);
  th.leave(kA, UINT64_MAX);
  REQUIRE(th.h.closed_calls.size() == 3);
  CHECK(th.h.closed_calls[0].dur == 0);
  CHECK(th.h.closed_calls[1].dur == 10);
  CHECK(th.h.closed_calls[2].dur == UINT64_MAX - 100);
  CHECK(th.h.closed_calls[2].self == UINT64_MAX - 110);
}

TEST_CASE("call fold: calls past max_depth are counted, not opened, and their leaves end them first", "[call_fold]") {
  Thread th;
  th.max_depth = 2;
  th.enter(kA, 0);
  th.enter(kB, 10);
  th.enter(kC, 20);  // the third: beyond the bound
  th.enter(kC, 30);
  CHECK(th.h.counted_enters == 4);
  CHECK(th.h.entered_calls == 2);
  CHECK(th.deep == 2);
  th.leave(kA, 40);  // takes a deep call off, whatever its method
  th.leave(kC, 50);
  CHECK(th.deep == 0);
  CHECK(th.h.closed_calls.empty());
  th.leave(kB, 60);
  th.leave(kA, 70);
  CHECK(th.h.closed_calls.size() == 2);
}

TEST_CASE("call fold: close_all ends the open calls at the end of the file", "[call_fold]") {
  Thread th;
  th.max_depth = 2;
  th.enter(kA, 0);
  th.enter(kB, 10);
  th.enter(kC, 20);
  CHECK(close_all(th.calls, th.deep, 90, th.h) == 3);
  REQUIRE(th.h.closed_calls.size() == 2);
  CHECK(th.h.closed_calls[0] == Closed{3, kB, 90, 80, 80, kLeftAtEnd});
  CHECK(th.h.closed_calls[1] == Closed{2, kA, 90, 90, 10, kLeftAtEnd});
  CHECK(th.calls.empty());
  CHECK(th.deep == 0);
}

TEST_CASE("call fold: LocalCalls folds as the CallStack does", "[call_fold]") {
  // Random enters and leaves of a few methods (unmatched, unwinding, beyond max_depth), past the
  // stack's first capacity: the same calls end with the same numbers both ways.
  std::mt19937_64 rng(38);
  for (int round = 0; round < 20; ++round) {
    Thread a, b;
    a.max_depth = b.max_depth = 40 + round * 10;
    uint64_t t = 0;
    for (int i = 0; i < 5000; ++i) {
      t += rng() % 7;
      const uint64_t m = 0x1000 * (1 + rng() % 5);
      const int what = static_cast<int>(rng() % 10);
      if (what < 6) {
        a.enter(m, t);
        LocalCalls st(b.calls, b.max_depth);
        fold_enter(st, b.deep, b.max_depth, t, m, b.h);
        st.store();
      } else {
        const uint8_t code = what == 9 ? kLeftThrow : kLeft;
        a.leave(m, t, code);
        LocalCalls st(b.calls, b.max_depth);
        fold_leave(st, b.deep, t, m, code, b.h);
        st.store();
      }
    }
    CHECK(a.h.closed_calls == b.h.closed_calls);
    CHECK(a.h.unmatched_leaves == b.h.unmatched_leaves);
    CHECK(a.deep == b.deep);
    CHECK(a.calls.size() == b.calls.size());
    CHECK(a.h.nodes == b.h.nodes);
  }
}

TEST_CASE("call fold: a time span applied at once is touch() event by event", "[call_fold]") {
  // Times drawn from the edges (0, 1, 2^64-1: a damaged file's wrapped delta) and between, applied on
  // threads and files that start empty or with times of their own.
  const uint64_t pool[] = {0, 1, 2, 5, 1000, UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX};
  std::mt19937_64 rng(2);
  for (int round = 0; round < 20000; ++round) {
    ThreadInfo one, all;
    uint64_t first1 = 0, last1 = 0;
    if (rng() % 2) {
      one.first_time = pool[rng() % 8];
      one.last_time = pool[rng() % 8];
      first1 = pool[rng() % 8];
      last1 = pool[rng() % 8];
    }
    all = one;
    uint64_t first2 = first1, last2 = last1;
    TimeSpan span;
    const size_t n = rng() % 6;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t t = pool[rng() % 8];
      touch(one, t);
      file_time(first1, last1, t);
      span.add(t);
    }
    span.apply(all);
    span.apply_file(first2, last2);
    INFO("round " << round);
    REQUIRE(all.first_time == one.first_time);
    REQUIRE(all.last_time == one.last_time);
    REQUIRE(first2 == first1);
    REQUIRE(last2 == last1);
    CHECK(span.any == (n > 0));
  }
}
