// The profile model's builder (private to reader/profile): the Visitor that folds a file's events into
// a Profile in one pass. Its hot path -- method enter/leave, the call tree's child lookup, the frame
// cache -- is inline here so that decode_as<Builder>'s event loop needs no call per event; the rest
// lives by concern:
//   builder.cpp       the pass itself: header, buffers, window, finish(), build_profile, IncrementalBuilder
//   call_tree.cpp     threads, frames, nodes: where each event's stack lands in the tree
//   tallies.cpp       every event but enter/leave (allocations, throws, monitors -- through the tally fold,
//                     tally_fold.h, which the parallel build's workers use too -- GC, heapshots, counters...)
//   naming.cpp        names given at the end of the pass (frames, threads, counters, types)
//   method_stats.cpp  per-method numbers from the tree
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "call_fold.h"
#include "call_tree.h"
#include "tally_fold.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/names.h"
#include "mlpd/profile.h"

namespace mlpd::profile {

namespace detail {


struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace detail

class ParallelReplay;  // parallel.cpp

class Builder final : public Visitor {
  friend class ParallelReplay;  // replays the workers' parts in file order (thread_part.h)

 public:
  Builder(Profile& p, const BuildOptions& o) : p_(p), o_(o) {
    p_.nodes_.push_back(Node{});  // the root
    p_.call_stats_.resize(p_.nodes_.size());  // one per node, made with it (call_stat() needs no check)
    p_.gc_collections_.assign(4, 0);
  }

  void on_header(const FileHeader& h) override;
  // The mlpd agent's options that change what the events mean (issue 15): alloc-sample=BYTES and
  // start-paused. Only in files whose args say they come from the agent ("mlpd" or "mlpd:..."), read
  // with the agent's own option syntax (mlpd/option_syntax.h: quotes, escapes, alloc-sample's sizes).
  void agent_options(std::string_view args);
  void on_buffer(const BufferInfo& b) override;
  void on_buffer_end(const BufferInfo&) override { flush_buffer_times(); }
  // Folds the time range of the enter/leave events of the current buffer into its thread's and the
  // file's first/last times.
  void flush_buffer_times();
  void on_problem(const Problem& pr) override {
    ++p_.problem_count_;
    if (p_.problems_.size() < o_.max_problems) p_.problems_.push_back(pr);
  }

  void on_event(const Event& e, const EventInfo& info) override;
  // Every event but enter/leave: out of line, so that on_event's hot path has a short prologue.
  [[gnu::noinline]] void other_event(const Event& e, ThreadIndex t);
  // Runs of enter/leave decoded by BufferDecoder::method_run (decode_rest), unless only names are
  // read: on_method is on_event's hot path without the Event (inline, below); method_run_done the
  // per-event counts, once per run (the events counted, the buffer's first and last times).
  bool takes_method_runs() const { return !names_only_; }
  void on_method(bool is_enter, uint64_t time, uint64_t method);
  void method_run_done(uint64_t n, uint64_t first_time, uint64_t last_time) {
    events_ += n;
    if (buf_min_ == UINT64_MAX) buf_min_ = first_time;
    buf_max_ = last_time;
  }
  void finish(const DecodeSummary& summary, const Input& input);

  // IncrementalBuilder: finish() into `out`, keeping what finish() changes (the profile, the open
  // calls, the pause marks, the current buffer's times) as it was, for the bytes that come next.
  void snapshot_into(Profile& out, const DecodeSummary& summary, const Input& input);
  // IncrementalBuilder: while set, events only describe things (Names); nothing is counted.
  void set_names_only(bool on) { names_only_ = on; }
  // IncrementalBuilder: problems from problem `from` on name buffers counted from `first_buffer`.
  size_t problems_kept() const { return p_.problems_.size(); }
  void rebase_problems(size_t from, uint64_t first_buffer);

 private:
  using CallEntry = detail::CallEntry;
  using CallStack = detail::CallStack;

  // --from/--to: the window in the file's clock, from the first buffer's time base and the header.
  uint64_t resolve_bound(const WindowBound& b, uint64_t base, uint64_t open) const;
  void resolve_window(uint64_t base);
  bool in_window(uint64_t t) const { return !windowed_ || (t >= win_from_ && t < win_to_); }

  static constexpr size_t kFrameCache = 1024;
  struct FrameCacheEntry {
    uint64_t method = 0;
    FrameId frame = kNoFrame;
  };
  struct ThreadState {
    NodeId root = 0;
    NodeId overflow = 0;  // the "[too many stacks]" node, made on first need
    CallStack calls;
    uint64_t deep = 0;    // enters beyond max_depth still open
    int64_t heapshot = -1;  // open heapshot index
    detail::ThreadTally tally;  // its allocations, throws and monitors (tally_fold.h)
  };

  ThreadIndex thread_index(uint64_t id) {
    if (id == last_thread_id_ && have_last_thread_) return last_thread_;
    auto it = thread_ids_.find(id);
    ThreadIndex t;
    if (it != thread_ids_.end()) {
      t = it->second;
    } else {
      t = new_thread(id);
      thread_ids_.emplace(id, t);
    }
    last_thread_id_ = id;
    last_thread_ = t;
    have_last_thread_ = true;
    return t;
  }

  ThreadIndex new_thread(uint64_t id);

  void touch(ThreadIndex t, uint64_t time) { detail::touch(p_.threads_[t], time); }

  // The child of `parent` for `frame`: the parent's last child when it matches (the usual case, inline),
  // else the table.
  [[gnu::always_inline]] NodeId child(NodeId parent, FrameId frame) {
    const NodeId cached = last_child_[parent];
    if (cached && p_.nodes_[cached].frame == frame) return cached;
    return child_slow(parent, frame);
  }

  [[gnu::noinline]] NodeId child_slow(NodeId parent, FrameId frame);
  FrameId new_frame(FrameKind kind, uint64_t address, std::string name);

  // Method -> frame, through a direct-mapped cache in front of the map (enter events look up the
  // same few methods again and again).
  [[gnu::always_inline]] FrameId managed_frame(uint64_t method) {
    FrameCacheEntry& c = frame_cache_[(method >> 4 ^ method >> 14) & (kFrameCache - 1)];
    if (c.method == method && c.frame != kNoFrame) return c.frame;
    return managed_frame_slow(method, c);
  }

  [[gnu::noinline]] FrameId managed_frame_slow(uint64_t method, FrameCacheEntry& c);
  FrameId native_frame(const std::string& name, uint64_t address);
  FrameId deferred_frame(uint64_t ip);
  FrameId special_frame(std::string_view name);

  void add(What w, NodeId n, uint64_t v) {
    auto& vec = p_.weights_[static_cast<size_t>(w)];
    if (n >= vec.size()) vec.resize(std::max<size_t>(p_.nodes_.size(), n + 1));
    vec[n] += v;
    p_.totals_[static_cast<size_t>(w)] += v;
  }

  // call_stats_ grows with nodes_ (every node is made with its CallStat), so no check here.
  CallStat& call_stat(NodeId n) { return p_.call_stats_[n]; }

  // The listener test inline at every call site; the event itself is built out of line.
  [[gnu::always_inline]] void emit(TimelineKind k, ThreadIndex t, uint64_t time, FrameId frame = kNoFrame,
                                   NodeId node = 0, uint8_t code = 0, uint64_t value = 0) {
    if (listener_) [[unlikely]] emit_to_listener(k, t, time, frame, node, code, value);
  }
  [[gnu::noinline]] void emit_to_listener(TimelineKind k, ThreadIndex t, uint64_t time, FrameId frame,
                                          NodeId node, uint8_t code, uint64_t value);

  // The stack of an alloc/throw/monitor event: its backtrace (outermost first), else the thread's
  // current call path (files with `calls` carry no backtraces), else "[no backtrace]".
  NodeId event_stack(const Event& e, ThreadIndex t);

  // The call fold's hooks (call_fold.h) on thread t: the model's nodes and frames, its call stats (in
  // the window), the listener.
  struct CallHooks {
    Builder& b;
    const ThreadIndex t;
    void counted(uint64_t time) {
      if (!b.windowed_ || b.in_window(time)) ++b.p_.call_count_;
      b.p_.present_[static_cast<size_t>(What::calls)] = true;
    }
    NodeId root() const { return b.states_[t].root; }
    [[gnu::always_inline]] NodeId child(NodeId parent, uint64_t method, FrameId& frame) {
      frame = b.managed_frame(method);
      return b.child(parent, frame);
    }
    void entered(const CallEntry& c) { b.emit(TimelineKind::enter, t, c.enter, c.frame, c.node); }
    [[gnu::always_inline]] void closed(NodeId node, FrameId frame, uint64_t time, uint64_t dur, uint64_t self,
                                       uint8_t code) {
      if (!b.windowed_ || b.in_window(time)) [[likely]] {
        CallStat& cs = b.call_stat(node);
        ++cs.calls;
        cs.total_ns += dur;
        cs.self_ns += self;
      }
      // (the calls weights are the call stats' self times, copied at the end of the pass)
      b.emit(TimelineKind::leave, t, time, frame, node, code);
    }
    void unmatched() { ++b.p_.unmatched_leaves_; }
  };

  [[gnu::always_inline]] void enter(uint64_t time, uint64_t method, ThreadIndex t) {
    ThreadState& s = states_[t];
    CallHooks h{*this, t};
    detail::fold_enter(s.calls, s.deep, o_.max_depth, time, method, h);
  }

  // A leave (code detail::kLeft) or exception leave (detail::kLeftThrow).
  [[gnu::always_inline]] void leave(uint64_t time, uint64_t method, ThreadIndex t, uint8_t code) {
    ThreadState& s = states_[t];
    CallHooks h{*this, t};
    detail::fold_leave(s.calls, s.deep, time, method, code, h);
  }

  void sample(const Event& e);  // call_tree.cpp: a sample's stack into the tree
  // The tally fold's hooks (tally_fold.h) on thread t: the model's nodes, weights and listener.
  struct TallyHooks {
    Builder& b;
    const ThreadIndex t;
    const uint64_t time;
    NodeId stack(const Event& e) { return b.event_stack(e, t); }
    void weigh(What w, NodeId n, uint64_t v) { b.add(w, n, v); }
    void emit(TimelineKind k, NodeId n, uint8_t code, uint64_t value) { b.emit(k, t, time, kNoFrame, n, code, value); }
  };
  // The events of other_event() by concern (tallies.cpp).
  template <EventKind K>
  void tally(const Event& e, ThreadIndex t);  // an allocation, throw, clause or monitor event (tally_fold.h)
  void publish_tallies();                     // finish(): tallies_ into the Profile
  void gc_event(const Event& e, ThreadIndex t);
  void thread_start(const Event& e);
  void thread_end(const Event& e);
  void counter_samples(const Event& e, ThreadIndex t, bool names_only);
  void program_image(const Event& e);
  static bool signed_type(uint64_t t);

  // The parts of finish(), in its order.
  void record_intervals();   // tallies.cpp: pause/resume marks -> Profile::recorded_intervals()
  void close_open_calls();   // call_tree.cpp: calls still open end at their thread's last event
  void call_weights();       // call_tree.cpp: --what calls, the self time of each call path
  void name_everything();    // naming.cpp: frames, threads, counters
  void types_by_name();      // naming.cpp: allocations and exceptions by class name
  void method_numbers();     // method_stats.cpp: Profile::methods() and their JIT code sizes

  bool window_resolved_ = false, windowed_ = false;
  bool names_only_ = false;  // IncrementalBuilder::feed(..., names_only)
  uint64_t win_from_ = 0, win_to_ = UINT64_MAX;
  std::vector<FrameCacheEntry> frame_cache_ = std::vector<FrameCacheEntry>(kFrameCache);
  Profile& p_;
  const BuildOptions& o_;
  Names names_;
  detail::ChildTable table_;
  std::vector<NodeId> last_child_{0};
  std::vector<ThreadState> states_;
  std::unordered_map<uint64_t, ThreadIndex> thread_ids_;
  uint64_t last_thread_id_ = 0;
  ThreadIndex last_thread_ = 0;
  bool have_last_thread_ = false;
  ThreadIndex cur_thread_ = 0;
  std::unordered_map<uint64_t, FrameId> managed_, deferred_;
  std::unordered_map<std::string, FrameId, detail::StringHash, std::equal_to<>> native_, special_;
  std::vector<FrameId> scratch_;
  std::unordered_map<uint64_t, uint32_t> counter_index_;
  std::unordered_map<uint64_t, uint64_t> counter_totals_;
  detail::TallySums tallies_;  // the allocations', throws', clauses' and monitors' sums (tally_fold.h)
  bool ours_ = false;          // the header says the mlpd agent wrote the file
  bool start_paused_ = false;  // its options had start-paused
  std::vector<uint64_t> pause_marks_;  // times of its periodic sync points: pauses and resumes, alternating
  bool gc_open_ = false;
  GcPause gc_{};
  uint64_t buffers_ = 0, events_ = 0;
  uint64_t buf_min_ = UINT64_MAX, buf_max_ = 0;  // times of the current buffer's enter/leave events
  Listener* const listener_ = o_.listener;  // o_.listener, one load nearer on the hot path
  // The parallel build's replay (parallel.cpp): the threads' open calls live on the workers, so an
  // event's call path is given (replay_top_, 0: none) and an exception leave's unwinding is done there.
  bool replaying_ = false;
  NodeId replay_top_ = 0;
  uint64_t reused_threads_ = 0;  // thread ids started again after their end (a new thread each)
};

// Inlined into decode_as<Builder>'s event loop (build_profile): no call, no prologue per event.
[[gnu::always_inline]] inline void Builder::on_event(const Event& e, const EventInfo&) {
  ++events_;
  const ThreadIndex t = cur_thread_;
  // The hot path: enter/leave need neither Names nor per-event time bookkeeping (the buffer's times
  // are folded in at its end).
  if (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave) {
    if (names_only_) [[unlikely]]
      return;
    // Times never decrease within a buffer (unsigned deltas from its time base): its first and last
    // enter/leave times are their minimum and maximum.
    if (buf_min_ == UINT64_MAX) [[unlikely]]
      buf_min_ = e.time;
    buf_max_ = e.time;
    if (e.kind == EventKind::method_enter)
      enter(e.time, e.method, t);
    else
      leave(e.time, e.method, t, detail::kLeft);
    return;
  }
  other_event(e, t);
}

// decode_rest's runs of enter/leave (BufferDecoder::method_run): on_event's hot path without an Event.
[[gnu::always_inline]] inline void Builder::on_method(bool is_enter, uint64_t time, uint64_t method) {
  const ThreadIndex t = cur_thread_;
  if (is_enter)
    enter(time, method, t);
  else
    leave(time, method, t, detail::kLeft);
}

}  // namespace mlpd::profile
