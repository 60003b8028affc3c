// The call fold (the profile model's private header): what a method enter or leave does to a thread's
// open calls and to the call tree's numbers, and how the events' times make a thread's first and last
// times -- written once for both builds of the model, the one-thread Builder (builder.h) and the
// parallel build's workers (ThreadPart, thread_part.h), so that the two agree bit for bit by
// construction rather than by two copies kept alike.
//
// The fold is generic in two things:
//   S, the stack of open calls: a CallStack (call_tree.h), or a LocalCalls over one, which keeps the
//     stack's pointer and size in locals (registers) through a run of events and stores them back;
//   H, its owner's hooks, what differs between the builds -- which node a call path is, where calls
//     and times are summed, whether a listener hears of it:
//       void counted(uint64_t time)                  an enter (Profile::call_count, the window)
//       NodeId root()                                the thread's root node
//       NodeId child(NodeId parent, uint64_t method, FrameId& frame)   the node of `method` under
//                                                    `parent` (and its frame; 0 where none is kept)
//       void entered(const CallEntry& c)             after the push
//       void closed(NodeId node, FrameId frame, uint64_t time, uint64_t dur, uint64_t self, uint8_t code)
//                                                    a call ended (CallStat, in the window; listener)
//       void unmatched()                             a leave with no open call to match
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "call_tree.h"
#include "mlpd/profile.h"

namespace mlpd::profile::detail {

constexpr size_t kMaxUnwindSearch = 64;  // how deep a leave looks for its enter

// How a call ended (TimelineEvent::code of a leave).
enum LeaveCode : uint8_t {
  kLeft = 0,        // its leave
  kLeftThrow = 1,   // its exception leave
  kUnwound = 2,     // a leave of an outer call came first
  kLeftAtEnd = 3,   // still open at the end of the file
};

// A CallStack's pointer and size in locals for a run of events (ThreadPart's hot loop: the stores into
// the stack and the stats might alias any member, so members would be loaded and stored again at every
// event). store() puts the size back; room() is the depth bound and the stack's room in one test.
class LocalCalls {
 public:
  LocalCalls(CallStack& s, size_t max_depth)
      : s_(s), st_(s.data()), sz_(s.size()), max_depth_(max_depth), full_(std::min(max_depth, s.capacity())) {}
  void store() { s_.set_size(sz_); }
  bool empty() const { return sz_ == 0; }
  size_t size() const { return sz_; }
  CallEntry& back() { return st_[sz_ - 1]; }
  CallEntry& operator[](size_t i) { return st_[i]; }
  void pop_back() { --sz_; }
  [[gnu::always_inline]] bool room(size_t) {
    if (sz_ >= full_) [[unlikely]] {
      if (sz_ >= max_depth_) return false;
      s_.grow_from(sz_);
      st_ = s_.data();
      full_ = std::min(max_depth_, s_.capacity());
    }
    return true;
  }
  void push(const CallEntry& c) { st_[sz_++] = c; }

 private:
  CallStack& s_;
  CallEntry* st_;
  size_t sz_;
  const size_t max_depth_;
  size_t full_;  // the lesser of max_depth and the stack's capacity
};

// The index of the innermost open call of `method` within kMaxUnwindSearch of the top, or
// calls.size() when there is none (an unmatched leave).
template <class S>
[[gnu::always_inline]] inline size_t open_call_of(S& calls, uint64_t method) {
  const size_t n = calls.size();
  for (size_t i = n; i > 0 && n - i < kMaxUnwindSearch; --i)
    if (calls[i - 1].method == method) return i - 1;
  return n;
}

// Ends the innermost open call at `time`: its duration (0 when the leave's time is before the enter's,
// a damaged file), its self time (the duration less its callees'), which its caller counts as a
// callee's.
template <class S, class H>
[[gnu::always_inline]] inline void close_top(S& calls, uint64_t time, uint8_t code, H& h) {
  const CallEntry& c = calls.back();
  const uint64_t dur = time > c.enter ? time - c.enter : 0;
  const uint64_t self = dur > c.child_ns ? dur - c.child_ns : 0;
  const NodeId node = c.node;
  const FrameId frame = c.frame;
  calls.pop_back();
  h.closed(node, frame, time, dur, self, code);
  if (!calls.empty()) calls.back().child_ns += dur;
}

// A method enter: counted, then a new open call -- unless max_depth calls are open already: it is
// then only counted as `deep` (its leave will take it off without a search).
template <class S, class H>
[[gnu::always_inline]] inline void fold_enter(S& calls, uint64_t& deep, size_t max_depth, uint64_t time,
                                              uint64_t method, H& h) {
  h.counted(time);
  if (!calls.room(max_depth)) {
    ++deep;
    return;
  }
  const NodeId parent = calls.empty() ? h.root() : calls.back().node;
  FrameId frame = 0;
  const NodeId n = h.child(parent, method, frame);
  calls.push(CallEntry{n, frame, method, time, 0});
  h.entered(calls.back());
}

// A method leave (code kLeft) or exception leave (kLeftThrow): a call beyond max_depth ends first;
// else the innermost open call of the method within kMaxUnwindSearch ends, the calls opened after it
// (whose leaves never came: unwinding) ending at the same time as kUnwound; with none, the leave is
// unmatched and nothing ends.
template <class S, class H>
[[gnu::always_inline]] inline void fold_leave(S& calls, uint64_t& deep, uint64_t time, uint64_t method, uint8_t code,
                                              H& h) {
  if (deep > 0) [[unlikely]] {
    --deep;
    return;
  }
  if (calls.empty()) [[unlikely]] {
    h.unmatched();
    return;
  }
  if (calls.back().method == method) [[likely]] {
    close_top(calls, time, code, h);
    return;
  }
  const size_t found = open_call_of(calls, method);
  if (found == calls.size()) {
    h.unmatched();
    return;
  }
  while (calls.size() > found + 1) close_top(calls, time, kUnwound, h);
  close_top(calls, time, code, h);
}

// The end of the file: every call still open ends at `time` (kLeftAtEnd). Returns how many calls were
// open, those beyond max_depth included.
template <class S, class H>
inline uint64_t close_all(S& calls, uint64_t& deep, uint64_t time, H& h) {
  const uint64_t open = calls.size() + deep;
  while (!calls.empty()) close_top(calls, time, kLeftAtEnd, h);
  deep = 0;
  return open;
}

// A thread's first and last times as its events touch them, one at a time (ThreadInfo::first_time,
// last_time): the last is the greatest; the first the least -- but a zero time sets it to zero, and
// the next time replaces that zero whatever it is.
inline void touch(ThreadInfo& ti, uint64_t time) {
  if (ti.first_time == 0 || time < ti.first_time) ti.first_time = time;
  if (time > ti.last_time) ti.last_time = time;
}

// The file's first and last times (Profile::first_time, last_time) as an event's time makes them: a
// zero time is none.
inline void file_time(uint64_t& first, uint64_t& last, uint64_t time) {
  if (time && (first == 0 || time < first)) first = time;
  if (time > last) last = time;
}

// The times of a run of events, touch()ed later in one go: apply() gives the thread's and the file's
// first and last times that touch() and file_time() would have given event by event (the parallel
// build: a worker folds a thread's events, the replay applies their times where they were in the file).
struct TimeSpan {
  size_t before = 0;                     // (ThreadPart) applies before records[before]
  uint64_t min_all = UINT64_MAX;         // least non-zero time (with nonzero)
  uint64_t min_after_zero = UINT64_MAX;  // least non-zero time after the last zero time (with nonzero_after_zero)
  uint64_t max = 0;
  bool zero = false;                     // a time was zero
  bool any = false;
  // Whether min_all / min_after_zero hold a time: UINT64_MAX is a time too (a damaged file's wrapped
  // delta; the fuzzer found the two builds apart there), so it cannot also mean "none".
  bool nonzero = false, nonzero_after_zero = false;
  void add(uint64_t t) {
    any = true;
    if (t > max) max = t;
    if (t == 0) {
      zero = true;
      min_after_zero = UINT64_MAX;
      nonzero_after_zero = false;
      return;
    }
    nonzero = nonzero_after_zero = true;
    if (t < min_all) min_all = t;
    if (t < min_after_zero) min_after_zero = t;
  }
  // touch(ti, t) for every t added, in order.
  void apply(ThreadInfo& ti) const {
    if (zero)  // touch(0) sets the first time to 0; the next non-zero time replaces it
      ti.first_time = nonzero_after_zero ? min_after_zero : 0;
    else if (nonzero && (ti.first_time == 0 || min_all < ti.first_time))
      ti.first_time = min_all;
    if (max > ti.last_time) ti.last_time = max;
  }
  // file_time(first, last, t) for every t added.
  void apply_file(uint64_t& first, uint64_t& last) const {
    if (nonzero && (first == 0 || min_all < first)) first = min_all;
    if (max > last) last = max;
  }
};

}  // namespace mlpd::profile::detail
