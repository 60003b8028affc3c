// `mlpd dump`'s drivers (dump_format.h: dump_file): the buffers in file order on one thread, or
// formatted on worker threads ahead of the reader and written in file order.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "dump_format.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"
#include "mlpd/names.h"

namespace mlpd::cli {

namespace {

// ---- the drivers ----------------------------------------------------------------------------

// What the decode driver reports outside the events: the header, problems and warnings.
class DumpVisitor final : public Visitor {
 public:
  explicit DumpVisitor(BufferFormatter& f) : f_(f) {}
  uint64_t problems = 0;
  void on_header(const FileHeader& h) override { f_.header(h); }
  void on_problem(const Problem& p) override {
    ++problems;
    f_.problem(p);
  }
  // A zipped file cut inside its last member (killed writer): shown where it happens, exit status 0.
  void on_warning(const Problem& p) override { f_.problem(p); }

 private:
  BufferFormatter& f_;
};

int64_t rel(uint64_t t, uint64_t start) { return static_cast<int64_t>(t - start); }

// One thread: every buffer in file order, as decode() delivers it.
void dump_sequential(Input& in, BufferFormatter& f, DumpVisitor& v, const DecodeOptions& opt) {
  detail::DecodeDriver d(in, v, opt);
  if (!d.start()) return;
  bool have_start = false;
  uint64_t start = 0;
  RunOptions o;
  o.driver = &d;
  RunResult r;
  while (d.next_buffer()) {
    const BufferInfo& info = d.info();
    if (!have_start) {
      have_start = true;
      start = info.header.time_base;
    }
    f.buffer(info, rel(info.header.time_base, start));
    f.events(info, d.data(), start, o, r);
    d.add_events(r.events);
    if (r.stop == RunResult::kBudget) break;
    if (!r.message.empty()) {
      d.buffer_problem(r.problem_offset, r.message);
      if (opt.stop_at_first_problem) break;
    }
  }
}

// Buffers formatted on `threads` workers ahead of the reader, written in file order. The reader (this
// thread) reads buffers into a ring of jobs; a worker formats a job's buffer line and events into
// memory with the names as they are, and stops before the first event that needs file order
// (a description, a counter sample, a sample hit: needs_file_order) or when its text reaches
// job_text. In file order, this thread writes each job's text and formats what the worker left
// (the rest of the buffer) itself, observing the names, while no worker runs. A job formatted
// with names that have changed since is formatted again (queued anew, or here when it is the next
// to be written). The output is byte for byte what one thread writes, and so are the problems:
// those found reading ahead are reported after the buffers before them (the driver defers them).
// Memory: at most K jobs, each an input buffer (reading ahead stops at kAhead bytes) and up to
// job_text of text.
// False, having read nothing, when no worker thread could be started (the caller dumps on one thread).
bool dump_parallel(Input& in, Names& names, BufferFormatter& f, DumpVisitor& v, const DecodeOptions& opt,
                   bool json, unsigned threads, size_t job_text, OutBuffer& out) {
  detail::DecodeDriver d(in, v, opt);

  constexpr uint64_t kAhead = 8u << 20;
  constexpr size_t kKeep = 1u << 20;
  struct Job {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
    BufferInfo info;
    OutBuffer text{size_t{0}};  // what a worker wrote (its block, swapped in)
    RunResult r;
    bool head_ok = false;  // the buffer line fit
    uint64_t version = 0;  // the names' version the job was formatted with
    enum State { kQueued, kRunning, kDone } state = kDone;
  };
  const size_t K = 3 * static_cast<size_t>(threads);
  std::vector<Job> jobs(K);
  std::mutex m;
  std::condition_variable work_cv, done_cv;
  uint64_t read = 0, delivered = 0;
  uint64_t version = 1;  // of the names: changes when this thread observes a description
  unsigned running = 0;
  bool paused = false, quit = false;
  uint64_t start = 0;

  auto worker = [&] {
    OutBuffer wout(job_text);
    Names& shared = names;  // only read while a worker runs
    std::unique_ptr<BufferFormatter> wf = json ? make_json_formatter(wout, shared) : make_text_formatter(wout, shared);
    RunOptions o;
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      Job* j = nullptr;
      work_cv.wait(lock, [&] {
        if (quit) return true;
        if (paused) return false;
        for (uint64_t i = delivered; i < read; ++i) {
          if (jobs[i % K].state == Job::kQueued) {
            j = &jobs[i % K];
            return true;
          }
        }
        return false;
      });
      if (quit) return;
      j->state = Job::kRunning;
      j->version = version;
      o.names_version = version;
      ++running;
      lock.unlock();
      wout.clear();
      wf->buffer(j->info, rel(j->info.header.time_base, start));
      j->head_ok = !wout.overflowed();
      if (j->head_ok) {
        wf->events(j->info, j->data.get(), start, o, j->r);
      }
      j->text.swap(wout);
      lock.lock();
      j->state = Job::kDone;
      --running;
      done_cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  try {
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker);
  } catch (const std::system_error&) {  // out of threads: go on with those started, if any
  }
  auto stop_workers = [&] {
    {
      std::lock_guard<std::mutex> lock(m);
      quit = true;
    }
    work_cv.notify_all();
    for (std::thread& t : pool) t.join();
  };
  if (pool.empty()) return false;
  if (!d.start()) {
    stop_workers();
    return true;
  }
  d.set_deferring(true);

  uint64_t ahead = 0;
  bool stop = false;
  RunOptions seq;
  seq.driver = &d;
  RunResult r;
  // Writes the oldest job, finishing it here when needed.
  auto deliver = [&] {
    Job& j = jobs[delivered % K];
    {
      std::unique_lock<std::mutex> lock(m);
      done_cv.wait(lock, [&] { return j.state == Job::kDone; });
    }
    const bool valid = j.version == version && j.head_ok;
    if (valid) out.write(j.text.view());
    const RunResult* result = &j.r;
    if (!valid || j.r.stop != RunResult::kEnd) {
      // The rest of the buffer, in file order; no worker reads the names meanwhile.
      {
        std::unique_lock<std::mutex> lock(m);
        paused = true;  // the running jobs finish (with the names they started with)
        done_cv.wait(lock, [&] { return running == 0; });
      }
      if (!valid) f.buffer(j.info, rel(j.info.header.time_base, start));
      seq.skip = valid ? j.r.events : 0;
      d.set_deferring(false);
      f.events(j.info, j.data.get(), start, seq, r);
      d.set_deferring(true);
      result = &r;
      {
        std::lock_guard<std::mutex> lock(m);
        if (r.observed) ++version;
        for (uint64_t i = delivered + 1; i < read; ++i) {
          Job& o = jobs[i % K];
          if (o.state == Job::kDone && o.version != version) o.state = Job::kQueued;
        }
        paused = false;
      }
      work_cv.notify_all();
    }
    d.add_events(result->events);
    if (result->stop == RunResult::kBudget) {
      stop = true;
    } else if (!result->message.empty()) {
      d.set_deferring(false);
      d.buffer_problem(result->problem_offset, j.info.index, result->message);
      d.set_deferring(true);
      if (opt.stop_at_first_problem) stop = true;
    }
    ahead -= j.info.header.length;
    if (j.capacity > kKeep) {
      j.data.reset();
      j.capacity = 0;
    }
    {
      std::lock_guard<std::mutex> lock(m);  // the workers read it
      ++delivered;
    }
  };
  while (!stop) {
    if (read - delivered == K || (read > delivered && ahead >= kAhead)) {
      deliver();
      continue;
    }
    Job& j = jobs[read % K];
    const bool more = d.next_buffer_into(j.data, j.capacity);
    if (!more || d.has_deferred()) break;
    j.info = d.info();
    if (j.info.index == 0) start = j.info.header.time_base;
    ahead += j.info.header.length;
    {
      std::lock_guard<std::mutex> lock(m);
      j.state = Job::kQueued;
      ++read;
    }
    work_cv.notify_one();
  }
  while (!stop && delivered < read) deliver();
  stop_workers();
  if (!stop) d.report_deferred();
  return true;
}

}  // namespace

uint64_t dump_file(Input& in, OutBuffer& out, bool json, const DecodeOptions& opt, unsigned threads,
                   size_t job_text) {
  Names names;
  std::unique_ptr<BufferFormatter> f = json ? make_json_formatter(out, names) : make_text_formatter(out, names);
  DumpVisitor v(*f);
  // A gzip input is dumped on one thread, as decode_counting() counts it: inflating is sequential
  // anyway, and whether a problem is a cut stream's warning depends on how far the input has been
  // read (Input::truncation_warning), which reading ahead would change.
  if (threads >= 2 && !in.compressed()) {
    if (!dump_parallel(in, names, *f, v, opt, json, threads, std::max<size_t>(job_text, 1), out)) {
      dump_sequential(in, *f, v, opt);
    }
  } else {
    dump_sequential(in, *f, v, opt);
  }
  return v.problems;
}

}  // namespace mlpd::cli
