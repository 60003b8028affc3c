// The parallel build of the profile model (issue 25; BuildOptions::jobs). The calling thread reads the
// buffers in file order and hands each to a worker; every buffer of one file thread goes to the worker
// that holds that thread's part (thread_part.h) while it has any in hand, so a thread's buffers are
// folded one after the other, in order. The calling thread then replays each buffer, in file order,
// into the one-thread Builder: its new tree nodes (Builder::child, where the one-thread build makes
// them) and its other events (Builder::other_event, with the call path the worker saw). At the end the
// workers' call counts and times are added to the nodes their local nodes became, and their open calls
// become the threads' open calls; Builder::finish does the rest, as for one thread.
//
// The reading ahead, the workers and the problems in file order are the BufferPipeline's
// (mlpd/buffer_pipeline.h): ParallelReplay is its stage.
//
// Memory: at most 16 buffers per worker (128 in all) and 8 MiB are read ahead (as decode_counting);
// each part's tree holds its thread's distinct call paths. The memory budget (mlpd --max-memory) is the
// process's heap, checked by the reader at every buffer and by the workers every 4096 events: it holds
// for all threads together.
#include <algorithm>
#include <unordered_map>

#include "builder.h"
#include "mlpd/budget.h"
#include "mlpd/buffer_pipeline.h"
#include "mlpd/decode_loop.h"
#include "thread_part.h"

namespace mlpd::profile {

using detail::PartJob;
using detail::ThreadPart;

class ParallelReplay final : public PipelineStage {
 public:
  ParallelReplay(Builder& b, unsigned jobs) : b_(b), workers_(jobs) {}

  // Reads `in` whole (false: a thread id was started again where only the file order tells; the
  // model must be built by one thread).
  bool read(Input& in, DecodeSummary& s);
  // The parts' sums and open calls into the Builder, before Builder::finish (done already when the
  // build went on by one thread).
  void merge();
  // Most events are not enter/leave: the workers would only decode them for the replay to decode them
  // again, so after kProbe buffers the build goes on by one thread (parts merged, then decode_rest).
  bool one_thread() const { return one_thread_; }

 private:
  // The pipeline's stage: the window and the part (and its worker) of each buffer read, the part's
  // fold on its worker, the replay in file order. After kProbe buffers, reading stops when most
  // events were not enter/leave.
  bool read_more() override { return !(used_ >= kProbe && seen_other_ * 2 > seen_events_); }
  int on_read(PipelineSlot& s) override;
  void work(PipelineSlot& s, unsigned) override {
    PartJob& j = jobs_[s.index];
    j.part->run(j, lim_);
  }
  void use(PipelineSlot& s, PipelineResult& r) override;
  // Replays job j into the Builder; false when the file order decided otherwise (fallback_).
  bool replay(PartJob& j);
  ThreadPart* part_of(uint64_t thread_id);

  Builder& b_;
  unsigned workers_;
  detail::PartLimits lim_;
  bool limits_set_ = false;
  std::vector<std::unique_ptr<ThreadPart>> parts_;
  std::unordered_map<uint64_t, ThreadPart*> part_by_id_;
  struct PartState {
    ThreadIndex thread = 0;
    bool bound = false;
    unsigned worker = 0;
    uint64_t in_hand = 0;  // buffers given to its worker and not yet folded
    std::vector<ThreadIndex> earlier_threads;  // the threads of ThreadPart::earlier, replayed so far
  };
  std::unordered_map<ThreadPart*, PartState> state_;
  BufferPipeline* pipeline_ = nullptr;  // while reading
  std::vector<PartJob> jobs_;            // by pipeline slot: what the buffer's worker found
  uint64_t used_ = 0;                    // buffers replayed
  bool fallback_ = false;
  static constexpr uint64_t kProbe = 32;
  bool one_thread_ = false;
  uint64_t seen_events_ = 0, seen_other_ = 0;  // events of the buffers replayed, and of them not enter/leave
  Event event_;  // the replay's decoding of other events
  std::string message_;
  uint64_t offset_ = 0;
};

ThreadPart* ParallelReplay::part_of(uint64_t thread_id) {
  auto [it, inserted] = part_by_id_.try_emplace(thread_id, nullptr);
  if (inserted) {
    parts_.push_back(std::make_unique<ThreadPart>(thread_id));
    it->second = parts_.back().get();
    state_[it->second];
  }
  return it->second;
}

int ParallelReplay::on_read(PipelineSlot& s) {
  PartJob& j = jobs_[s.index];
  j.bytes = s.bytes;
  j.info = s.info;
  j.cut = s.cut;  // what a problem in it becomes
  if (!limits_set_) {  // the window, from the first buffer (as Builder::on_buffer resolves it)
    if (!b_.window_resolved_) b_.resolve_window(j.info.header.time_base);
    lim_.windowed = b_.windowed_;
    lim_.from = b_.win_from_;
    lim_.to = b_.win_to_;
    lim_.max_depth = b_.o_.max_depth;
    lim_.budget_limit = process_budget().limit();
    lim_.alloc_interval = b_.p_.alloc_sample_interval_;
    limits_set_ = true;
  }
  ThreadPart* part = part_of(j.info.header.thread_id);
  j.part = part;
  PartState& ps = state_[part];
  if (ps.in_hand == 0)  // free to move: to the worker with the fewest bytes in hand
    ps.worker = pipeline_->least_loaded_worker();
  ++ps.in_hand;
  return static_cast<int>(ps.worker);
}

void ParallelReplay::use(PipelineSlot& s, PipelineResult& r) {
  PartJob& j = jobs_[s.index];
  --state_[j.part].in_hand;
  ++used_;
  if (!replay(j)) {
    r.abandon = true;
    return;
  }
  r.events = j.n;
  if (j.over_budget) {
    r.over_budget = true;
    r.budget_offset = j.budget_offset;
  } else if (!j.message.empty()) {
    r.message = j.message;
    r.problem_offset = j.problem_offset;
  }
}

bool ParallelReplay::replay(PartJob& j) {
  Builder& b = b_;
  ThreadPart& part = *j.part;
  PartState& ps = state_[&part];
  ThreadIndex t = b.cur_thread_;
  if (!ps.bound) {
    ps.bound = true;
    ps.thread = t;
    part.map.assign(2, 0);
    part.map[ThreadPart::kLocalRoot] = b.states_[t].root;
  } else if (ps.thread != t) {  // the id is a new thread now: only the file order can tell
    fallback_ = true;
    return false;
  }
  b.replaying_ = true;
  BufferDecoder dec(j.info.header, j.bytes, j.info.offset + format::kBufferHeaderSize);
  size_t si = 0;
  auto spans_until = [&](size_t i) {  // the times of the events folded before records[i]
    for (; si < j.spans.size() && j.spans[si].before <= i; ++si) {
      j.spans[si].apply(b.p_.threads_[t]);
      j.spans[si].apply_file(b.p_.first_time_, b.p_.last_time_);
    }
  };
  for (size_t i = 0; i < j.records.size(); ++i) {
    spans_until(i);
    const detail::PartRecord& r = j.records[i];
    if (r.event < 0) {
      const NodeId parent = part.map[r.parent];
      const NodeId n = b.child(parent, r.event == -2 ? b.special_frame("[no backtrace]") : b.managed_frame(r.method));
      if (part.map.size() <= r.local) part.map.resize(r.local + 1, 0);
      part.map[r.local] = n;
    } else {
      ++seen_other_;
      b.replay_top_ = r.local ? part.map[r.local] : 0;
      // The event again, from where the worker found it (it decoded there).
      dec.resume({static_cast<uint32_t>(r.event), r.method, r.last_method});
      if (!dec.next(event_, message_, offset_)) [[unlikely]]
        continue;
      const uint64_t reused_before = b.reused_threads_;
      b.other_event(event_, t);
      const bool reused = b.reused_threads_ != reused_before;
      if (r.parent != 0 && reused && b.cur_thread_ != t) {
        // The worker began a new thread of this id here, and so does the one-thread rule: the
        // part's new local root is the new thread's root.
        ps.earlier_threads.push_back(ps.thread);
        ps.thread = t = b.cur_thread_;
        if (part.map.size() <= r.parent) part.map.resize(r.parent + 1, 0);
        part.map[r.parent] = b.states_[t].root;
        continue;
      }
      if (r.parent != 0 || reused || b.cur_thread_ != t) {  // the file order decided otherwise
        b.replaying_ = false;
        fallback_ = true;
        return false;
      }
    }
  }
  spans_until(j.records.size());
  b.replaying_ = false;
  // The buffer's allocations, throws, clauses and monitor events (sums: their order does not matter).
  b.tallies_.add(j.tallies);
  b.events_ += j.n;
  seen_events_ += j.n;
  b.p_.call_count_ += j.call_count;
  b.p_.unmatched_leaves_ += j.unmatched;
  if (j.calls_present) b.p_.present_[static_cast<size_t>(What::calls)] = true;
  if (j.buf_min != UINT64_MAX) {
    b.buf_min_ = j.buf_min;
    b.buf_max_ = j.buf_max;
  }
  return true;  // the pipeline reports its problem, then Builder::on_buffer_end
}

bool ParallelReplay::read(Input& in, DecodeSummary& s) {
  used_ = 0;
  DecodeOptions opt;
  opt.budget = &process_budget();
  BufferPipeline p(in, b_, opt);
  if (!p.start()) {
    s = p.finish();
    return true;
  }
  const size_t K = std::min<size_t>(16 * static_cast<size_t>(workers_), 128);
  jobs_ = std::vector<PartJob>(K);
  pipeline_ = &p;
  // A plain file is lent to the workers where it lies (a mapping): no copy into the slots, and none by
  // the kernel into a read buffer. A sleeping worker is woken when kWakeWorker buffers wait for it.
  constexpr size_t kWakeWorker = 4;
  const BufferPipeline::Run run = p.run(*this, workers_, K, true, kWakeWorker);
  pipeline_ = nullptr;
  switch (run) {
    case BufferPipeline::Run::kNoWorkers:  // the one-thread build reads the file
    case BufferPipeline::Run::kAbandoned:
      fallback_ = true;
      return false;
    case BufferPipeline::Run::kYielded:  // the buffers from here by one thread, in the Builder as it stands
      merge();
      one_thread_ = true;
      s = decode_rest(p, b_, opt);
      return true;
    case BufferPipeline::Run::kStopped:  // the budget ended reading: what was read ahead counts as never read
    case BufferPipeline::Run::kEnd:
      break;
  }
  s = p.finish();
  return true;
}

void ParallelReplay::merge() {
  for (const auto& up : parts_) {
    ThreadPart& part = *up;
    const PartState& ps = state_[&part];
    if (!ps.bound) continue;
    // Calls and times of the buffers replayed (a part may have folded buffers read ahead past the
    // memory budget's stop; their nodes have no model node and are left out).
    const size_t mapped = std::min(part.map.size(), part.stats.size());
    for (size_t l = ThreadPart::kLocalRoot + 1; l < mapped; ++l) {
      const CallStat& cs = part.stats[l];
      if (!part.map[l] || (!cs.calls && !cs.self_ns && !cs.total_ns)) continue;
      CallStat& g = b_.p_.call_stats_[part.map[l]];
      g.calls += cs.calls;
      g.self_ns += cs.self_ns;
      g.total_ns += cs.total_ns;
    }
    // The weights of the allocations, throws and monitor contentions folded on the worker.
    auto weights = [&](What w, const std::vector<uint64_t>& v) {
      const size_t m = std::min(part.map.size(), v.size());
      for (size_t l = ThreadPart::kLocalRoot; l < m; ++l)
        if (v[l] && part.map[l]) b_.add(w, part.map[l], v[l]);
    };
    weights(What::alloc, part.alloc_w);
    weights(What::alloc_bytes, part.alloc_bytes_w);
    weights(What::exceptions, part.exc_w);
    weights(What::monitor, part.mon_w);
    // Each thread of the part's id gets its open calls (a new thread begun in a buffer read ahead
    // past the budget's stop was never replayed: its calls are left out).
    auto install = [&](ThreadIndex t, detail::CallStack& calls, uint64_t deep, const detail::ThreadTally& tally) {
      Builder::ThreadState& s = b_.states_[t];
      s.deep = deep;
      s.tally = tally;
      for (size_t i = 0; i < calls.size(); ++i) {
        detail::CallEntry c = calls[i];
        if (c.node >= part.map.size() || !part.map[c.node]) break;
        c.node = part.map[c.node];
        c.frame = b_.managed_frame(c.method);
        s.calls.push_back(c);
      }
    };
    const size_t replayed = std::min(part.earlier.size(), ps.earlier_threads.size());
    for (size_t g = 0; g < replayed; ++g) install(ps.earlier_threads[g], part.earlier[g].calls, part.earlier[g].deep, part.earlier[g].tally);
    if (part.earlier.size() == ps.earlier_threads.size()) install(ps.thread, part.calls, part.deep, part.tally);
  }
}

// build_profile() with BuildOptions::jobs > 1 (builder.cpp): false when the file needs the one-thread
// build (the model is then left to it).
bool build_profile_parallel(const std::vector<Input*>& inputs, Profile& out, const BuildOptions& options) {
  out = Profile();
  Builder b(out, options);
  ParallelReplay r(b, options.jobs);
  DecodeSummary all;
  for (Input* in : inputs) {
    DecodeSummary s;
    if (r.one_thread()) {
      DecodeOptions opt;
      opt.budget = &process_budget();
      s = decode_as(*in, b, opt);
    } else if (!r.read(*in, s)) {
      return false;
    }
    all.header_ok = all.header_ok || s.header_ok;
    all.buffers += s.buffers;
    all.events += s.events;
    all.bytes += s.bytes;
    all.problems += s.problems;
    if (in != inputs.back() && !in->error().empty()) b.on_problem({in->offset(), -1, in->error()});
    if (inputs.size() == 1) all = s;  // one input: its summary as is (build_profile(Input&) keeps `truncated`)
  }
  if (!r.one_thread()) r.merge();
  b.finish(all, *inputs.back());
  return true;
}

// IncrementalBuilder::feed_whole (builder.cpp): `in` into `b` on every core, the parts merged, so that
// later feeds go on by one thread from the state the one-thread build would have. False when the file
// needs the one-thread build (`b` is then spoilt: the caller starts again).
bool feed_parallel(Builder& b, Input& in, unsigned jobs, DecodeSummary& s) {
  ParallelReplay r(b, jobs);
  if (!r.read(in, s)) return false;
  if (!r.one_thread()) r.merge();
  return true;
}

}  // namespace mlpd::profile
