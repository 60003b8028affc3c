// BufferPipeline (mlpd/buffer_pipeline.h): the one reading-ahead driver. The calling thread reads
// buffers into a ring of slots and hands each to a worker: to the one stage.on_read() names (its own
// queue), else to the shared queue any worker takes from. It uses the buffers in file order as their
// workers finish. Memory: at most `slots` buffers and kAhead bytes of buffer data are read ahead (plus
// one buffer, <= max_buffer_length, as decode() holds); a slot that held a big buffer gives its memory
// back once used.
//
// Wake-ups come in batches (each costs both threads a context switch on a busy machine): a sleeping
// worker is woken when a buffer is queued for any worker, when `affinity_batch` buffers wait for it
// alone, or when the calling thread is about to wait; the waiting calling thread when the next
// min(8, slots / 2, stage.reader_batch()) buffers in file order are done, or when the worker that
// finished one has nothing left.
#include "mlpd/buffer_pipeline.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "decode_driver.h"
#include "mlpd/budget.h"
#include "mlpd/format.h"

namespace mlpd {

namespace detail {

struct PipelineShared {
  explicit PipelineShared(unsigned workers)
      : cvs(workers), own(workers), own_bytes(workers, 0), idle(workers, 0) {}
  std::mutex m;
  std::vector<std::condition_variable> cvs;  // one per worker
  std::condition_variable done_cv;          // the calling thread's
  std::vector<std::deque<PipelineSlot*>> own;  // buffers for one worker alone
  std::deque<PipelineSlot*> any;               // buffers for any worker
  std::vector<uint64_t> own_bytes;             // bytes of each worker's own buffers not yet decoded
  std::vector<char> idle;                      // the worker sleeps (and has not been woken)
  std::vector<PipelineSlot> ring;
  uint64_t next = 0;  // the buffer to be used next (those before it have been)
  uint64_t read = 0;  // buffers read
  unsigned busy = 0;  // workers decoding a buffer
  bool paused = false, quit = false, reader_waiting = false;
  size_t wake_reader = 8;
  PipelineStage* stage = nullptr;
  std::vector<std::thread> pool;

  // (under m) Whether worker w, having finished a buffer, wakes the waiting calling thread.
  bool reader_may_go(unsigned w) const {
    const size_t K = ring.size();
    if (!ring[next % K].done) return false;
    if (own[w].empty() && any.empty()) return true;
    for (uint64_t i = next; i < read && i < next + wake_reader; ++i)
      if (!ring[i % K].done) return false;
    return true;
  }
  // (under m) Wakes worker w if it sleeps.
  void wake(unsigned w) {
    if (!idle[w]) return;
    idle[w] = 0;
    cvs[w].notify_one();
  }
  // (under m) Every sleeping worker that has something to do.
  void wake_all_with_work() {
    size_t any_left = any.size();
    for (unsigned w = 0; w < pool.size(); ++w) {
      if (!idle[w]) continue;
      if (!own[w].empty()) {
        wake(w);
      } else if (any_left) {
        --any_left;
        wake(w);
      }
    }
  }
};

}  // namespace detail

namespace {
constexpr uint64_t kAhead = 8u << 20;    // bytes of buffer data read ahead at most
constexpr size_t kKeep = 1u << 20;       // a slot's own memory kept after use
constexpr uint64_t kRelease = 4u << 20;  // a mapping's used pages are given back by this much
}  // namespace

BufferPipeline::BufferPipeline(Input& in, Visitor& v, const DecodeOptions& opt)
    : in_(in), v_(v), opt_(opt), budget_(opt.budget), d_(std::make_unique<detail::DecodeDriver>(in, v, opt_)) {
  info_ = &d_->info();
}

BufferPipeline::~BufferPipeline() = default;

bool BufferPipeline::start() { return d_->start(); }

bool BufferPipeline::next_buffer() {
  const bool more = d_->next_buffer();
  data_ = d_->data();
  return more;
}

bool BufferPipeline::over_budget_slow(uint64_t offset) { return d_->over_budget(offset); }

void BufferPipeline::add_events(uint64_t n) { d_->add_events(n); }

void BufferPipeline::buffer_problem(uint64_t offset, const std::string& message) {
  d_->buffer_problem(offset, message);
}

DecodeSummary BufferPipeline::finish() { return d_->finish(); }

unsigned BufferPipeline::workers() const { return sh_ ? static_cast<unsigned>(sh_->pool.size()) : 0; }

unsigned BufferPipeline::least_loaded_worker() {
  detail::PipelineShared& s = *sh_;
  std::lock_guard<std::mutex> lock(s.m);
  const auto begin = s.own_bytes.begin();
  return static_cast<unsigned>(std::min_element(begin, begin + static_cast<ptrdiff_t>(s.pool.size())) - begin);
}

void BufferPipeline::pause_workers() {
  detail::PipelineShared& s = *sh_;
  std::unique_lock<std::mutex> lock(s.m);
  s.paused = true;  // the running buffers finish; no other starts
  s.done_cv.wait(lock, [&s] { return s.busy == 0; });
}

void BufferPipeline::resume_workers_impl(void* f, bool (*again)(void*, PipelineSlot&)) {
  detail::PipelineShared& s = *sh_;
  std::lock_guard<std::mutex> lock(s.m);
  if (again) {
    const size_t K = s.ring.size();
    for (uint64_t i = s.next + 1; i < s.read; ++i) {
      PipelineSlot& j = s.ring[i % K];
      if (!j.done || !again(f, j)) continue;
      j.done = false;
      if (j.worker == UINT_MAX) {
        s.any.push_back(&j);
      } else {
        s.own[j.worker].push_back(&j);
        s.own_bytes[j.worker] += j.info.header.length;
      }
    }
  }
  // Those queued anew are taken in file order, before the buffers read after them (the first is the
  // next to be used).
  auto by_seq = [](const PipelineSlot* x, const PipelineSlot* y) { return x->seq < y->seq; };
  std::sort(s.any.begin(), s.any.end(), by_seq);
  for (auto& q : s.own) std::sort(q.begin(), q.end(), by_seq);
  s.paused = false;
  s.wake_all_with_work();
}

void BufferPipeline::worker(unsigned w) {
  detail::PipelineShared& s = *sh_;
  std::unique_lock<std::mutex> lock(s.m);
  for (;;) {
    // Asleep, it is idle (a waker clears the flag as it wakes it): woken with nothing to do (another
    // worker took the buffer, or the workers are paused), it is idle again.
    while (!(s.quit || (!s.paused && (!s.own[w].empty() || !s.any.empty())))) {
      s.idle[w] = 1;
      s.cvs[w].wait(lock);
    }
    s.idle[w] = 0;
    // At quit, what is still queued is decoded first (a buffer read ahead is always decoded: what a
    // stage keeps across buffers does not depend on timing).
    PipelineSlot* j = nullptr;
    if (!s.own[w].empty()) {
      j = s.own[w].front();
      s.own[w].pop_front();
    } else if (!s.any.empty()) {
      j = s.any.front();
      s.any.pop_front();
    } else {
      return;  // quit, nothing left
    }
    ++s.busy;
    lock.unlock();
    s.stage->work(*j, w);
    lock.lock();
    --s.busy;
    if (j->worker != UINT_MAX) s.own_bytes[w] -= j->info.header.length;
    j->done = true;
    if ((s.reader_waiting && s.reader_may_go(w)) || (s.paused && s.busy == 0)) s.done_cv.notify_one();
  }
}

BufferPipeline::Run BufferPipeline::run(PipelineStage& stage, unsigned workers, size_t slots, bool lend,
                                        size_t affinity_batch) {
  const size_t K = std::max<size_t>(slots, 2);
  sh_ = std::make_unique<detail::PipelineShared>(std::max(workers, 1u));
  detail::PipelineShared& s = *sh_;
  s.ring.resize(K);
  for (size_t k = 0; k < K; ++k) s.ring[k].index = k;
  s.stage = &stage;
  s.wake_reader = std::clamp<size_t>(std::min(K / 2, stage.reader_batch()), 1, 8);
  for (unsigned w = 0; w < std::max(workers, 1u); ++w) {
    try {
      s.pool.emplace_back([this, w] { worker(w); });
    } catch (const std::system_error&) {  // no more threads (ulimit -u): go on with those started
      break;
    }
  }
  if (s.pool.empty()) {
    sh_.reset();
    return Run::kNoWorkers;
  }
  const unsigned running = static_cast<unsigned>(s.pool.size());
  const size_t batch = std::max<size_t>(affinity_batch, 1);

  d_->set_deferring(true);  // problems found reading ahead: reported after the buffers before them
  // With `lend`, a plain file is read through a mapping and each buffer lent where it lies (no copy);
  // the pages of used buffers leave the process every kRelease bytes.
  const bool mapped = lend && in_.map();
  uint64_t released = 0;
  uint64_t ahead = 0;  // bytes of the buffers read and not yet used
  bool stop = false, abandoned = false, yielded = false;

  // Uses the oldest buffer read (waiting for its worker), in file order.
  auto use = [&] {
    PipelineSlot& j = s.ring[s.next % K];
    {
      std::unique_lock<std::mutex> lock(s.m);
      if (!j.done) {
        s.wake_all_with_work();  // every buffer read is on its way before this thread sleeps
        s.reader_waiting = true;
        s.done_cv.wait(lock, [&j] { return j.done; });
        s.reader_waiting = false;
      }
      j.done = false;
    }
    v_.on_buffer(j.info);
    d_->set_deferring(false);  // its place in the file is now
    PipelineResult r;
    stage.use(j, r);
    if (r.abandon) {
      abandoned = stop = true;
      return;
    }
    d_->add_events(r.events);
    if (r.budget_reported) {
      stop = true;
    } else if (r.over_budget) {
      d_->budget_problem(r.budget_offset, j.info.index, j.cut);
      stop = true;
    } else if (!r.message.empty()) {
      d_->buffer_problem(r.problem_offset, j.info.index, r.message, j.cut);
      if (opt_.stop_at_first_problem) stop = true;
    }
    v_.on_buffer_end(j.info);
    d_->set_deferring(true);
    ahead -= j.info.header.length;
    if (mapped) {
      const uint64_t end = j.info.offset + format::kBufferHeaderSize + j.info.header.length;
      if (end - released >= kRelease) in_.release(released = end);
    }
    if (j.capacity > kKeep) {
      j.data.reset();
      j.capacity = 0;
    }
    std::lock_guard<std::mutex> lock(s.m);
    ++s.next;
  };

  while (!stop) {
    if (!stage.read_more()) {
      yielded = true;
      break;
    }
    if (s.read - s.next == K || (s.read > s.next && ahead >= kAhead)) {
      use();
      continue;
    }
    PipelineSlot& j = s.ring[s.read % K];
    if (!d_->next_buffer_into(j.data, j.capacity, false, mapped) || d_->has_deferred()) break;
    j.info = d_->info();
    j.bytes = d_->data();
    j.cut = in_.truncation_warning();
    j.seq = s.read;
    ahead += j.info.header.length;
    const int want = stage.on_read(j);
    std::lock_guard<std::mutex> lock(s.m);
    j.done = false;
    ++s.read;
    if (want < 0 || static_cast<unsigned>(want) >= running) {
      j.worker = UINT_MAX;
      s.any.push_back(&j);
      for (unsigned w = 0; w < running; ++w) {
        if (s.idle[w]) {
          s.wake(w);
          break;
        }
      }
    } else {
      const unsigned w = static_cast<unsigned>(want);
      j.worker = w;
      s.own[w].push_back(&j);
      s.own_bytes[w] += j.info.header.length;
      if (s.own[w].size() >= batch) s.wake(w);
    }
  }
  // The buffers read and not yet used (all of them unless a problem stopped using them).
  while (!stop && s.next < s.read) use();
  {
    std::lock_guard<std::mutex> lock(s.m);
    s.quit = true;
    s.paused = false;
  }
  for (auto& cv : s.cvs) cv.notify_all();
  for (std::thread& t : s.pool) t.join();
  const uint64_t read = s.read, used = s.next;
  const BufferInfo last = used ? s.ring[(used - 1) % K].info : BufferInfo{};
  sh_.reset();
  d_->set_deferring(false);
  if (abandoned) return Run::kAbandoned;
  if (stop) {  // read ahead, not used: as if never read
    d_->unread_buffers(read - used, last.offset + format::kBufferHeaderSize + last.header.length);
    return Run::kStopped;
  }
  d_->report_deferred();  // what ended reading
  return yielded ? Run::kYielded : Run::kEnd;
}

}  // namespace mlpd
