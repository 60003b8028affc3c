// One thread's part of the profile model on a worker (thread_part.h). Its enters and leaves go through
// the call fold of the one-thread Builder (call_fold.h), on local nodes.
#include "thread_part.h"

#include <cmath>

#include "mlpd/budget.h"
#include "mlpd/format.h"

namespace mlpd::profile::detail {

namespace {
constexpr size_t kFrameSlots = 1024;
// The "[no backtrace]" node's local frame (local frames of methods count up from 0).
constexpr uint64_t kNoBacktraceFrame = 0xFFFFFFFEu;
}  // namespace

ThreadPart::ThreadPart(uint64_t thread_id) : frame_cache_(kFrameSlots), id_(thread_id) {
  nodes.push_back({0, 0});  // 0: none
  nodes.push_back({0, 0});  // kLocalRoot
  stats.resize(2);
  last_child_.resize(2);
}

[[gnu::always_inline]] inline uint32_t ThreadPart::local_frame(uint64_t method) {
  FrameSlot& c = frame_cache_[(method >> 4 ^ method >> 14) & (kFrameSlots - 1)];
  if (c.method == method && c.frame != UINT32_MAX) return c.frame;
  return frame_slow(method, c);
}

uint32_t ThreadPart::frame_slow(uint64_t method, FrameSlot& c) {
  auto [it, inserted] = frames_.try_emplace(method, static_cast<uint32_t>(frames_.size()));
  c.method = method;
  c.frame = it->second;
  return it->second;
}

[[gnu::always_inline]] inline uint32_t ThreadPart::child(uint32_t parent, uint64_t method, Fold& fold) {
  // The parent's last child when it is this method's (a local frame is one method's: comparing
  // methods is comparing frames, without the frame cache's lookup on the usual path).
  const LastChild& cached = last_child_[parent];
  if (cached.node && cached.method == method) return cached.node;
  return child_slow(parent, local_frame(method), method, fold);
}

uint32_t ThreadPart::child_slow(uint32_t parent, uint32_t fr, uint64_t method, Fold& f) {
  const uint64_t key = (static_cast<uint64_t>(parent) << 32) | fr;
  uint32_t n = table_.find(key);
  if (n == 0) {
    n = static_cast<uint32_t>(nodes.size());
    nodes.push_back({parent, method});
    stats.emplace_back();
    last_child_.emplace_back();
    table_.insert(key, n);
    f.records->push_back(PartRecord{n, parent, method, 0, -1});
  }
  last_child_[parent] = {method, n};
  return n;
}

template <bool Windowed>
struct ThreadPart::CallHooks {
  ThreadPart& part;
  Fold& f;
  // The part's stats and last children: loaded again after each new node (the vectors grow).
  CallStat* cs;
  const LastChild* lc;
  const uint64_t from, to;
  const uint32_t root_;
  uint64_t cc = 0, um = 0;  // enters in the window, unmatched leaves
  bool present = false;     // an enter, in the window or not (without a window: cc > 0)
  bool in_window(uint64_t t) const { return !Windowed || (t >= from && t < to); }
  void counted(uint64_t time) {
    if (in_window(time)) ++cc;
    if constexpr (Windowed) present = true;
  }
  uint32_t root() const { return root_; }
  // The parent's last child when it is this method's (a local frame is one method's: comparing methods
  // is comparing frames, without the frame cache's lookup on the usual path). No frame is kept.
  [[gnu::always_inline]] uint32_t child(uint32_t parent, uint64_t method, FrameId&) {
    const LastChild& c = lc[parent];
    if (c.node && c.method == method) [[likely]]
      return c.node;
    const uint32_t n = part.child_slow(parent, part.local_frame(method), method, f);
    cs = part.stats.data();
    lc = part.last_child_.data();
    return n;
  }
  void entered(const CallEntry&) {}
  [[gnu::always_inline]] void closed(uint32_t node, FrameId, uint64_t time, uint64_t dur, uint64_t self, uint8_t) {
    if (in_window(time)) {
      CallStat& s = cs[node];
      ++s.calls;
      s.total_ns += dur;
      s.self_ns += self;
    }
  }
  void unmatched() { ++um; }
};

template <bool Windowed, class Run>
[[gnu::always_inline]] inline void ThreadPart::with_fold(Fold& f, const PartLimits& lim, Run&& run) {
  LocalCalls st(calls, lim.max_depth);
  uint64_t dp = deep;
  CallHooks<Windowed> h{*this, f, stats.data(), last_child_.data(), lim.from, lim.to, root_};
  run(st, dp, h);
  st.store();
  deep = dp;
  f.call_count += h.cc;
  f.unmatched += h.um;
  if (h.present || (!Windowed && h.cc)) f.present = true;
}

void ThreadPart::fold_method(const Event& e, Fold& f, const PartLimits& lim) {
  auto step = [&](auto& st, uint64_t& dp, auto& h) {
    if (e.kind == EventKind::method_enter)
      fold_enter(st, dp, lim.max_depth, e.time, e.method, h);
    else
      fold_leave(st, dp, e.time, e.method, e.kind == EventKind::method_leave ? kLeft : kLeftThrow, h);
  };
  if (lim.windowed)
    with_fold<true>(f, lim, step);
  else
    with_fold<false>(f, lim, step);
}

template <bool Windowed>
size_t ThreadPart::method_run(BufferDecoder& dec, size_t max, Fold& f, const PartLimits& lim, uint64_t& offset,
                              uint64_t& first_time) {
  size_t k = 0;
  const size_t max_depth = lim.max_depth;
  with_fold<Windowed>(f, lim, [&](LocalCalls& st, uint64_t& dp, CallHooks<Windowed>& h) __attribute__((always_inline)) {
    k = dec.method_run(
        max,
        [&](bool is_enter, uint64_t time, uint64_t method) __attribute__((always_inline)) {
          if (is_enter)
            fold_enter(st, dp, max_depth, time, method, h);
          else
            fold_leave(st, dp, time, method, kLeft, h);
        },
        offset, first_time);
  });
  return k;
}

uint32_t ThreadPart::new_thread() {
  earlier.push_back(Earlier{std::move(calls), deep, tally});
  calls = CallStack();
  deep = 0;
  tally = ThreadTally{};
  ended_ = false;
  root_ = static_cast<uint32_t>(nodes.size());
  nodes.push_back({0, 0});
  stats.emplace_back();
  last_child_.emplace_back();
  return root_;
}

// Builder::event_stack on local nodes: the backtrace (outermost first, at most max_depth frames), else
// the thread's current call path, else "[no backtrace]" under the thread's root -- a node the fast
// child lookup never returns (last_child_ never points at it), so no method can be mistaken for it.
uint32_t ThreadPart::event_stack(const Event& e, Fold& f, const PartLimits& lim) {
  if (e.has_backtrace && !e.backtrace.empty()) {
    const size_t skip = e.backtrace.size() > lim.max_depth ? e.backtrace.size() - lim.max_depth : 0;
    const uint64_t* fr = e.backtrace.data() + skip;
    const size_t m = e.backtrace.size() - skip;
    // The frames shared with the last backtrace lead to the nodes they led to then (nodes are never
    // removed; child() would find the same ones); the rest by child(), as before.
    size_t k = 0;
    if (bt_root_ == root_) {
      const size_t common = std::min(m, bt_frames_.size());
      while (k < common && bt_frames_[k] == fr[k]) ++k;
    } else {
      bt_root_ = root_;
    }
    uint32_t n = k ? bt_nodes_[k - 1] : root_;
    bt_frames_.resize(m);
    bt_nodes_.resize(m);
    for (size_t i = k; i < m; ++i) {
      n = child(n, fr[i], f);
      bt_frames_[i] = fr[i];
      bt_nodes_[i] = n;
    }
    return n;
  }
  if (!calls.empty()) return calls.back().node;
  const uint64_t key = (static_cast<uint64_t>(root_) << 32) | kNoBacktraceFrame;
  uint32_t n = table_.find(key);
  if (n == 0) {
    n = static_cast<uint32_t>(nodes.size());
    nodes.push_back({root_, 0});
    stats.emplace_back();
    last_child_.emplace_back();
    table_.insert(key, n);
    f.records->push_back(PartRecord{n, root_, 0, 0, -2});
  }
  return n;
}

struct ThreadPart::TallyHooks {
  ThreadPart& part;
  Fold& f;
  const PartLimits& lim;
  uint32_t stack(const Event& e) { return part.event_stack(e, f, lim); }
  void weigh(What w, uint32_t n, uint64_t v) {
    switch (w) {
      case What::alloc: add_weight(part.alloc_w, n, v); break;
      case What::alloc_bytes: add_weight(part.alloc_bytes_w, n, v); break;
      case What::exceptions: add_weight(part.exc_w, n, v); break;
      default: add_weight(part.mon_w, n, v); break;  // What::monitor
    }
  }
  void emit(TimelineKind, uint32_t, uint8_t, uint64_t) {}  // no listener in the parallel build
};

// Builder::other_event's allocations, throws, clauses and monitor events: the same tally fold.
bool ThreadPart::fold_other(const Event& e, PartJob& j, Fold& f, const PartLimits& lim, TimeSpan& span) {
  if (!tallied(e.kind)) return false;
  span.add(e.time);  // Builder::touch and the file's first/last times, whether in the window or not
  if (!lim.in_window(e.time)) return true;
  TallyHooks h{*this, f, lim};
  fold_tally(e, tally, j.tallies, lim.alloc_interval, h);
  return true;
}

// The memory budget, looked at (mallinfo, which walks the heap's arenas) only when this worker has
// made something since it last looked: a new node or a record. A worker that only folds enters and
// leaves into nodes it has (a `calls` file once its paths are known) holds no more memory, and the
// reading thread looks at every buffer.
bool ThreadPart::over_budget(const PartJob& j, const PartLimits& lim) {
  if (!lim.budget_limit) return false;
  const uint64_t made = made_before_ + nodes.size() + j.records.size() + j.spans.size() +
                        j.tallies.alloc_by_vtable.size() + j.tallies.throws_by_vtable.size();
  if (made == budget_seen_) return false;
  budget_seen_ = made;
  return MemoryBudget::in_use() > lim.budget_limit;
}

void ThreadPart::run(PartJob& j, const PartLimits& limits) {
  j.records.clear();
  j.spans.clear();
  j.tallies.clear();
  TimeSpan span;
  j.message.clear();
  j.problem_offset = 0;
  j.over_budget = false;
  // Locals, not the job's fields: the compiler keeps them in registers across the CallStack's stores.
  const PartLimits lim = limits;
  Fold f;
  f.records = &j.records;
  uint64_t buf_min = UINT64_MAX, buf_max = 0;
  BufferDecoder dec(j.info.header, j.bytes, j.info.offset + format::kBufferHeaderSize);
  Event e;
  uint64_t offset = 0;
  uint64_t n = 0;
  for (;;) {
    // Runs of enter/leave without an Event (BufferDecoder::method_run), up to the next budget check.
    const size_t max = 4096 - (n & 4095);
    uint64_t first_time = 0;
    const size_t k = lim.windowed ? method_run<true>(dec, max, f, lim, offset, first_time)
                                  : method_run<false>(dec, max, f, lim, offset, first_time);
    if (k) {
      if (buf_min == UINT64_MAX) buf_min = first_time;
      buf_max = dec.last_time();
      n += k;
      if ((n & 4095) == 0 && over_budget(j, lim)) [[unlikely]] {
        j.over_budget = true;
        j.budget_offset = offset;
        break;
      }
      if (k == max) continue;
    }
    const BufferDecoder::Mark at = dec.mark();
    if (!dec.next(e, j.message, offset)) break;
    ++n;
    if (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave) {
      if (buf_min == UINT64_MAX) [[unlikely]]
        buf_min = e.time;
      buf_max = e.time;
      fold_method(e, f, lim);
    } else if (!fold_other(e, j, f, lim, span)) {
      if (span.any) {  // the folded events' times go before this event's
        span.before = j.records.size();
        j.spans.push_back(span);
        span = TimeSpan();
      }
      // The replay does the rest of the event (Builder::other_event), with this call path; an
      // exception leave's unwinding is the thread's own.
      const uint32_t top = calls.empty() ? 0 : calls.back().node;
      uint32_t new_root = 0;
      if (e.kind == EventKind::method_exc_leave) {
        fold_method(e, f, lim);
      } else if (e.kind == EventKind::thread_end && e.ptr == id_) {
        ended_ = true;
      } else if (e.kind == EventKind::thread_start && e.ptr == id_ && ended_) {
        new_root = new_thread();
      }
      j.records.push_back(PartRecord{top, new_root, at.last_time, at.last_method, at.pos});
    }
    if ((n & 4095) == 0 && over_budget(j, lim)) [[unlikely]] {
      j.over_budget = true;
      j.budget_offset = offset;
      break;
    }
  }
  if (span.any) {
    span.before = j.records.size();
    j.spans.push_back(span);
  }
  made_before_ += j.records.size() + j.spans.size() + j.tallies.alloc_by_vtable.size() +
                  j.tallies.throws_by_vtable.size();
  j.n = n;
  j.buf_min = buf_min;
  j.buf_max = buf_max;
  j.call_count = f.call_count;
  j.unmatched = f.unmatched;
  j.calls_present = f.present;
  j.problem_offset = dec.problem_offset();
}

}  // namespace mlpd::profile::detail
