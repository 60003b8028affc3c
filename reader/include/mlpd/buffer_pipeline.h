// BufferPipeline: the one driver over a file's buffers for every reader of them (decode(), `mlpd
// verify`'s counting, the heapshots, `mlpd dump`, the profile build). It reads the file header and the
// buffers in file order on the calling thread, and reports problems and warnings at the point of the
// file where they happen, the memory budget checked at every buffer. Two ways to go through the buffers:
//
//  - one thread: next_buffer() and the current buffer's info() and data(); the caller decodes the
//    events (decode_rest in decode_loop.h), checks over_budget() every 4096 events, and reports the
//    problem that ended them (buffer_problem).
//  - reading ahead: run() with a PipelineStage. Buffers are read ahead into a ring of slots (at most
//    `slots` of them and 8 MiB of buffer data ahead), each decoded by stage.work() on one of the
//    pipeline's worker threads (any free one, or the one stage.on_read() names), and handed to
//    stage.use() on the calling thread in file order, between the visitor's on_buffer and the
//    buffer's problem (if any) and on_buffer_end. Problems found reading ahead are deferred until the
//    buffers before them have been used. A plain file may be read through a memory mapping (the
//    buffers' bytes where they lie; the pages of used buffers given back every 4 MiB).
//
// The decoding machinery itself (the file and buffer headers, the problem messages, the deferral) is
// private to reader/src (decode_driver.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mlpd/decoder.h"

namespace mlpd {

namespace detail {
class DecodeDriver;
struct PipelineShared;
}  // namespace detail

// One buffer read ahead.
struct PipelineSlot {
  size_t index = 0;  // its place in the ring, 0 .. slots - 1: where the caller keeps what its work found
                     // (a slot is not read into again before its buffer has been used)
  uint64_t seq = 0;  // its number in read order (0: the first buffer read by this run)
  BufferInfo info;
  const uint8_t* bytes = nullptr;  // the buffer's info.header.length bytes (in `data`, or lent by a mapping)
  std::string cut;  // Input::truncation_warning() right after it was read: what a problem in it becomes
  unsigned worker = 0;  // the worker that decodes it
  // The pipeline's own.
  std::unique_ptr<uint8_t[]> data;
  size_t capacity = 0;
  bool done = false;
};

// How the decoding of one buffer ended, as stage.use() gives it back.
struct PipelineResult {
  uint64_t events = 0;          // events decoded (the summary's count)
  std::string message;          // the problem that ended its events (empty: none), at problem_offset
  uint64_t problem_offset = 0;
  bool over_budget = false;     // a worker found the memory budget exceeded at budget_offset: a problem, the end
  uint64_t budget_offset = 0;
  bool budget_reported = false;  // use() found it exceeded in file order (over_budget(), reported): the end
  bool abandon = false;  // the caller gives up on this way of reading: nothing more is used or reported
};

// What a reader of the buffers does with them in run().
class PipelineStage {
 public:
  static constexpr int kAnyWorker = -1;
  virtual ~PipelineStage() = default;
  // On the calling thread before each buffer is read: false stops reading (those read are still used;
  // run() returns kYielded and the caller may go on by one thread with next_buffer()).
  virtual bool read_more() { return true; }
  // On the calling thread as buffer `s` has been read, in file order, before any worker has it: which
  // worker must decode it (0 .. workers() - 1), or kAnyWorker.
  virtual int on_read(PipelineSlot&) { return kAnyWorker; }
  // The calling thread, waiting for the next buffer, is woken once this many buffers from it are done
  // (at most 8 and half the slots; or when the worker that finished it has nothing left): 1 for a
  // stage whose workers' results go stale while the calling thread waits (dump's names).
  virtual size_t reader_batch() const { return 8; }
  // On worker `w`: decodes the buffer (everything it writes is its own, or kept by s.index).
  virtual void work(PipelineSlot& s, unsigned w) = 0;
  // On the calling thread, in file order: takes what work() found. Problems reported meanwhile (the
  // memory budget through over_budget()) are reported in place.
  virtual void use(PipelineSlot& s, PipelineResult& r) = 0;
};

class BufferPipeline {
 public:
  BufferPipeline(Input& in, Visitor& v, const DecodeOptions& opt);
  ~BufferPipeline();
  BufferPipeline(const BufferPipeline&) = delete;
  BufferPipeline& operator=(const BufferPipeline&) = delete;

  // Reads the file header and calls on_header; false (the problem reported) when there is none.
  bool start();

  // ---- one thread
  // Reads the next buffer's header and data: true with info() and data() set; false at the end of the
  // input, on a problem that ends decoding (reported), or when the memory budget is exceeded.
  bool next_buffer();
  const BufferInfo& info() const { return *info_; }
  const uint8_t* data() const { return data_; }
  // True (and one problem reported) when the memory budget is exceeded.
  bool over_budget(uint64_t offset) { return budget_ && over_budget_slow(offset); }
  void add_events(uint64_t n);
  // The problem that ended the current buffer's events.
  void buffer_problem(uint64_t offset, const std::string& message);
  DecodeSummary finish();

  // ---- reading ahead
  enum class Run {
    kEnd,        // the input read to its end, or a problem ended reading (reported)
    kStopped,    // a problem (stop_at_first_problem) or the memory budget stopped using buffers: those
                 // read ahead and not used count as never read
    kYielded,    // stage.read_more() said no: every buffer read has been used; next_buffer() goes on
    kAbandoned,  // stage.use() gave up (PipelineResult::abandon)
    kNoWorkers,  // no worker thread could be started; nothing was read (the caller goes on by one thread)
  };
  // `workers` >= 1 threads, a ring of `slots` (>= 2) buffers; with `lend`, a plain regular file is
  // read through a mapping (Input::map). `affinity_batch`: a sleeping worker is woken when that many
  // buffers wait for it alone (on_read named it), or when the calling thread is about to wait.
  Run run(PipelineStage& stage, unsigned workers, size_t slots, bool lend = false, size_t affinity_batch = 4);

  // For stage.on_read(): the running worker with the fewest bytes of buffers given to it alone and not
  // yet decoded; how many workers run.
  unsigned least_loaded_worker();
  unsigned workers() const;
  // For stage.use(): no worker starts a buffer until resume_workers(), and those running have finished
  // (what they read stays unchanged meanwhile); buffers read ahead and decoded, not yet used, for which
  // `again(s)` is true are decoded again (queued anew) once the workers resume.
  void pause_workers();
  template <class F>
  void resume_workers(F again) {
    resume_workers_impl(&again, [](void* f, PipelineSlot& s) { return (*static_cast<F*>(f))(s); });
  }
  void resume_workers() {
    resume_workers_impl(nullptr, nullptr);
  }

 private:
  bool over_budget_slow(uint64_t offset);
  void resume_workers_impl(void* f, bool (*again)(void*, PipelineSlot&));
  void worker(unsigned w);

  Input& in_;
  Visitor& v_;
  const DecodeOptions opt_;  // a copy: the caller's may be a temporary
  MemoryBudget* budget_;
  std::unique_ptr<detail::DecodeDriver> d_;
  const BufferInfo* info_ = nullptr;
  const uint8_t* data_ = nullptr;
  std::unique_ptr<detail::PipelineShared> sh_;  // what run() shares with its workers
};

}  // namespace mlpd
