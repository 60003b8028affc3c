// The parallel build of the profile model (issue 25; BuildOptions::jobs). The calling thread reads the
// buffers in file order and hands each to a worker; every buffer of one file thread goes to the worker
// that holds that thread's part (thread_part.h) while it has any in hand, so a thread's buffers are
// folded one after the other, in order. The calling thread then replays each buffer, in file order,
// into the one-thread Builder: its new tree nodes (Builder::child, where the one-thread build makes
// them) and its other events (Builder::other_event, with the call path the worker saw). At the end the
// workers' call counts and times are added to the nodes their local nodes became, and their open calls
// become the threads' open calls; Builder::finish does the rest, as for one thread.
//
// Memory: at most 16 buffers per worker (128 in all) and 8 MiB are read ahead (as decode_counting);
// each part's tree holds its thread's distinct call paths. The memory budget (mlpd --max-memory) is the
// process's heap, checked by the reader at every buffer and by the workers every 4096 events: it holds
// for all threads together.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "builder.h"
#include "mlpd/budget.h"
#include "mlpd/decode_loop.h"
#include "thread_part.h"

namespace mlpd::profile {

using detail::PartJob;
using detail::ThreadPart;

class ParallelReplay {
 public:
  ParallelReplay(Builder& b, unsigned jobs) : b_(b), workers_(jobs), queues_(jobs), cvs_(jobs) {}

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
  // False when no thread could be started (the one-thread build then reads the file).
  bool start_workers();
  void stop_workers();
  void worker(unsigned w);
  void replay(PartJob& j, mlpd::detail::DecodeDriver& d);
  ThreadPart* part_of(uint64_t thread_id);

  Builder& b_;
  unsigned workers_;
  unsigned running_ = 0;  // workers started
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
  // Shared with the workers, under m_.
  std::mutex m_;
  std::vector<std::deque<PartJob*>> queues_;
  std::vector<uint64_t> queued_bytes_ = std::vector<uint64_t>(workers_, 0);
  std::vector<std::condition_variable> cvs_;
  std::condition_variable done_cv_;
  // Wake-ups in batches (each costs both threads a context switch on a busy machine): a sleeping worker
  // is woken when kWakeWorker jobs wait for it, or when the reader is about to wait; the waiting reader
  // when the next kWakeReader jobs in file order are done, or when the worker that finished one has
  // nothing left.
  static constexpr size_t kWakeWorker = 4, kWakeReader = 8;
  std::vector<char> idle_ = std::vector<char>(workers_, 0);
  bool reader_waiting_ = false;
  const PartJob* ring_ = nullptr;  // the jobs, in read order modulo ring_size_
  size_t ring_size_ = 0;
  uint64_t ring_next_ = 0, ring_read_ = 0;  // the reader waits for job ring_next_; ring_read_ jobs read
  bool reader_may_go(unsigned w) const;
  bool quit_ = false;
  std::vector<std::thread> pool_;
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

bool ParallelReplay::start_workers() {
  quit_ = false;
  for (unsigned w = 0; w < workers_; ++w) {
    try {
      pool_.emplace_back([this, w] { worker(w); });
    } catch (const std::system_error&) {  // no more threads (ulimit -u): go on with those started
      break;
    }
  }
  // Parts go only to the workers that run (a queue of a worker that never started would never empty).
  running_ = static_cast<unsigned>(pool_.size());
  return running_ > 0;
}

void ParallelReplay::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(m_);
    quit_ = true;
  }
  for (auto& cv : cvs_) cv.notify_all();
  for (std::thread& t : pool_) t.join();
  pool_.clear();
}

// (under m_) Whether a worker that has just finished a job wakes the waiting reader.
bool ParallelReplay::reader_may_go(unsigned w) const {
  if (!ring_[ring_next_ % ring_size_].done) return false;
  if (queues_[w].empty()) return true;
  for (uint64_t i = ring_next_; i < ring_read_ && i < ring_next_ + kWakeReader; ++i)
    if (!ring_[i % ring_size_].done) return false;
  return true;
}

void ParallelReplay::worker(unsigned w) {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    idle_[w] = 1;
    cvs_[w].wait(lock, [&] { return quit_ || !queues_[w].empty(); });
    idle_[w] = 0;
    if (queues_[w].empty()) return;  // quit, nothing left
    PartJob* j = queues_[w].front();
    queues_[w].pop_front();
    lock.unlock();
    j->part->run(*j, lim_);
    lock.lock();
    queued_bytes_[w] -= j->info.header.length;
    j->done = true;
    if (reader_waiting_ && reader_may_go(w)) done_cv_.notify_one();
  }
}

void ParallelReplay::replay(PartJob& j, mlpd::detail::DecodeDriver& d) {
  Builder& b = b_;
  b.on_buffer(j.info);
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
    return;
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
        return;
      }
    }
  }
  spans_until(j.records.size());
  b.replaying_ = false;
  // The buffer's allocations, throws, clauses and monitor events (sums: their order does not matter).
  const detail::PartTallies& pt = j.tallies;
  Profile& p = b.p_;
  p.alloc_samples_ += pt.alloc_samples;
  p.alloc_objects_ += pt.alloc_objects;
  p.alloc_bytes_ += pt.alloc_bytes;
  p.throws_ += pt.throws;
  p.clauses_ += pt.clauses;
  for (size_t k = 0; k < 4; ++k) p.monitor_[k] += pt.monitor[k];
  p.monitor_wait_ns_ += pt.monitor_wait_ns;
  if (pt.alloc_present)
    p.present_[static_cast<size_t>(What::alloc)] = p.present_[static_cast<size_t>(What::alloc_bytes)] = true;
  if (pt.exc_present) p.present_[static_cast<size_t>(What::exceptions)] = true;
  if (pt.mon_present) p.present_[static_cast<size_t>(What::monitor)] = true;
  for (const auto& [vt, cb] : pt.alloc_by_vtable) {
    TypeStat& ts = b.alloc_by_vtable_[vt];
    ts.count += cb.first;
    ts.bytes += cb.second;
  }
  for (const auto& [vt, c] : pt.throws_by_vtable) b.throws_by_vtable_[vt] += c;
  b.events_ += j.n;
  seen_events_ += j.n;
  b.p_.call_count_ += j.call_count;
  b.p_.unmatched_leaves_ += j.unmatched;
  if (j.calls_present) b.p_.present_[static_cast<size_t>(What::calls)] = true;
  if (j.buf_min != UINT64_MAX) {
    b.buf_min_ = j.buf_min;
    b.buf_max_ = j.buf_max;
  }
  d.add_events(j.n);
  if (j.over_budget) {
    d.set_deferring(false);
    d.budget_problem(j.budget_offset, j.info.index, j.cut);
    d.set_deferring(true);
  } else if (!j.message.empty()) {
    d.set_deferring(false);  // its place in the file is now
    d.buffer_problem(j.problem_offset, j.info.index, j.message, j.cut);
    d.set_deferring(true);
  }
  b.on_buffer_end(j.info);
}

bool ParallelReplay::read(Input& in, DecodeSummary& s) {
  DecodeOptions opt;
  opt.budget = &process_budget();
  mlpd::detail::DecodeDriver d(in, b_, opt);
  if (!d.start()) {
    s = d.finish();
    return true;
  }
  d.set_deferring(true);  // reported after the buffers before them
  const size_t K = std::min<size_t>(16 * static_cast<size_t>(workers_), 128);  // slots keep <= kKeep each
  constexpr uint64_t kAhead = 8u << 20;
  constexpr size_t kKeep = 1u << 20;
  std::vector<PartJob> jobs(K);
  ring_ = jobs.data();
  ring_size_ = K;
  uint64_t read = 0, delivered = 0, ahead = 0;
  bool stop = false;
  if (!start_workers()) {
    fallback_ = true;
    return false;
  }
  // A plain file is lent to the workers where it lies (a mapping): no copy into the jobs, and none by
  // the kernel into a read buffer. Pages of buffers replayed leave the process every kRelease bytes.
  const bool mapped = in.map();
  constexpr uint64_t kRelease = 4u << 20;
  uint64_t released = 0;
  auto deliver = [&] {
    PartJob& j = jobs[delivered % K];
    {
      std::unique_lock<std::mutex> lock(m_);
      if (!j.done) {
        for (unsigned w = 0; w < running_; ++w)  // every job read is on its way before the reader sleeps
          if (idle_[w] && !queues_[w].empty()) cvs_[w].notify_one();
        reader_waiting_ = true;
        ring_next_ = delivered;
        ring_read_ = read;
        done_cv_.wait(lock, [&] { return j.done; });
        reader_waiting_ = false;
      }
      j.done = false;
      --state_[j.part].in_hand;
    }
    replay(j, d);
    ahead -= j.info.header.length;
    if (mapped) {
      const uint64_t end = j.info.offset + format::kBufferHeaderSize + j.info.header.length;
      if (end - released >= kRelease) in.release(released = end);
    }
    if (j.capacity > kKeep) {
      j.data.reset();
      j.capacity = 0;
    }
    ++delivered;
    if (fallback_ || j.over_budget) stop = true;
  };
  bool switching = false;
  while (!stop) {
    if (delivered >= kProbe && seen_other_ * 2 > seen_events_) {
      switching = true;
      break;
    }
    if (read - delivered == K || (read > delivered && ahead >= kAhead)) {
      deliver();
      continue;
    }
    PartJob& j = jobs[read % K];
    if (!d.next_buffer_into(j.data, j.capacity, false, mapped) || d.has_deferred()) break;
    j.bytes = d.data();
    j.info = d.info();
    j.cut = in.truncation_warning();  // what a problem in it becomes (DecodeDriver::report)
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
    ahead += j.info.header.length;
    unsigned w;
    bool wake;
    {
      std::lock_guard<std::mutex> lock(m_);
      PartState& ps = state_[part];
      if (ps.in_hand == 0)  // free to move: to the worker with the fewest bytes in hand
        ps.worker = static_cast<unsigned>(
            std::min_element(queued_bytes_.begin(), queued_bytes_.begin() + running_) - queued_bytes_.begin());
      w = ps.worker;
      ++ps.in_hand;
      queued_bytes_[w] += j.info.header.length;
      queues_[w].push_back(&j);
      ++read;
      wake = idle_[w] && queues_[w].size() >= kWakeWorker;
    }
    if (wake) cvs_[w].notify_one();
  }
  while (!stop && delivered < read) deliver();
  stop_workers();
  if (fallback_) return false;
  if (switching && !stop) {  // the buffers from here by one thread, in the Builder as it stands
    merge();
    one_thread_ = true;
    d.set_deferring(false);
    d.report_deferred();  // (none: reading stops at a deferred problem before the switch is looked at)
    s = decode_rest(d, b_, opt);
    return true;
  }
  if (stop) {  // the budget ended reading: what was read ahead counts as never read
    const BufferInfo& last = jobs[(delivered - 1) % K].info;
    d.unread_buffers(read - delivered, last.offset + format::kBufferHeaderSize + last.header.length);
  } else {
    d.report_deferred();
  }
  s = d.finish();
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
    auto install = [&](ThreadIndex t, detail::CallStack& calls, uint64_t deep, const ThreadPart::Tally& tally) {
      Builder::ThreadState& s = b_.states_[t];
      s.deep = deep;
      s.monitor_obj = tally.monitor_obj;
      s.monitor_time = tally.monitor_time;
      s.monitor_waiting = tally.monitor_waiting;
      std::copy(std::begin(tally.recent_obj), std::end(tally.recent_obj), s.recent_obj);
      std::copy(std::begin(tally.recent_vtable), std::end(tally.recent_vtable), s.recent_vtable);
      s.recent_next = tally.recent_next;
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
