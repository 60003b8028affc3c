// `mlpd dump`'s drivers (dump_format.h: dump_file): the buffers in file order on one thread, or
// formatted on worker threads ahead of the reader and written in file order.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dump_format.h"
#include "mlpd/buffer_pipeline.h"
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

// One thread: every buffer after the current one in file order, as decode() delivers it.
void dump_rest(BufferPipeline& d, BufferFormatter& f, const DecodeOptions& opt) {
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

// Buffers formatted on worker threads ahead of the reader, written in file order (the BufferPipeline
// reads them into its ring and hands each to a worker). A worker formats a buffer's line and events
// into memory with the names as they are, and stops before the first event that needs file order
// (a description, a counter sample, a sample hit: needs_file_order) or when its text reaches
// job_text. In file order, the calling thread writes each buffer's text and formats what the worker
// left (the rest of the buffer) itself, observing the names, while no worker runs
// (BufferPipeline::pause_workers). A buffer formatted with names that have changed since is formatted
// again (queued anew when the workers resume, or here when it is the next to be written). The output
// is byte for byte what one thread writes, and so are the problems: those found reading ahead are
// reported after the buffers before them (the pipeline defers them). Memory: the pipeline's ring of
// input buffers, and up to job_text of text per slot and per worker.
class DumpStage final : public PipelineStage {
 public:
  DumpStage(BufferPipeline& p, Names& names, BufferFormatter& f, bool json, unsigned threads, size_t slots,
            size_t job_text, OutBuffer& out)
      : p_(p), f_(f), out_(out), jobs_(slots) {
    workers_.reserve(threads);
    for (unsigned w = 0; w < threads; ++w) {
      auto k = std::make_unique<Worker>(job_text);
      Names& shared = names;  // only read while a worker runs
      k->f = json ? make_json_formatter(k->out, shared) : make_text_formatter(k->out, shared);
      workers_.push_back(std::move(k));
    }
    seq_.driver = &p_;
  }

  // Written as soon as done: a buffer formatted ahead while this thread sleeps may be formatted with
  // names about to change.
  size_t reader_batch() const override { return 1; }

  int on_read(PipelineSlot& s) override {
    if (s.info.index == 0) start_ = s.info.header.time_base;
    return kAnyWorker;
  }

  void work(PipelineSlot& s, unsigned w) override {
    Job& j = jobs_[s.index];
    Worker& k = *workers_[w];
    // The names and their version change only while the workers are paused.
    j.version = version_;
    k.o.names_version = version_;
    k.out.clear();
    k.f->buffer(s.info, rel(s.info.header.time_base, start_));
    j.head_ok = !k.out.overflowed();
    if (j.head_ok) k.f->events(s.info, s.bytes, start_, k.o, j.r);
    j.text.swap(k.out);
  }

  // Writes the buffer's text, finishing it here when needed.
  void use(PipelineSlot& s, PipelineResult& result) override {
    Job& j = jobs_[s.index];
    const bool valid = j.version == version_ && j.head_ok;
    if (valid) out_.write(j.text.view());
    const RunResult* r = &j.r;
    if (!valid || j.r.stop != RunResult::kEnd) {
      // The rest of the buffer, in file order; no worker reads the names meanwhile.
      p_.pause_workers();  // the running buffers finish (with the names they started with)
      if (!valid) f_.buffer(s.info, rel(s.info.header.time_base, start_));
      seq_.skip = valid ? j.r.events : 0;
      f_.events(s.info, s.bytes, start_, seq_, r_);
      r = &r_;
      if (r_.observed) ++version_;
      p_.resume_workers([this](PipelineSlot& o) { return jobs_[o.index].version != version_; });
    }
    result.events = r->events;
    if (r->stop == RunResult::kBudget) {
      result.budget_reported = true;  // by seq_.driver->over_budget, in its place
    } else {
      result.message = r->message;
      result.problem_offset = r->problem_offset;
    }
  }

 private:
  struct Job {
    OutBuffer text{size_t{0}};  // what a worker wrote (its block, swapped in)
    RunResult r;
    bool head_ok = false;  // the buffer line fit
    uint64_t version = 0;  // the names' version the job was formatted with
  };
  struct Worker {
    explicit Worker(size_t job_text) : out(job_text) {}
    OutBuffer out;
    std::unique_ptr<BufferFormatter> f;
    RunOptions o;
  };
  BufferPipeline& p_;
  BufferFormatter& f_;
  OutBuffer& out_;
  std::vector<Job> jobs_;
  std::vector<std::unique_ptr<Worker>> workers_;
  uint64_t version_ = 1;  // of the names: changes when the calling thread observes a description
  uint64_t start_ = 0;
  RunOptions seq_;
  RunResult r_;
};

}  // namespace

uint64_t dump_file(Input& in, OutBuffer& out, bool json, const DecodeOptions& opt, unsigned threads,
                   size_t job_text) {
  Names names;
  std::unique_ptr<BufferFormatter> f = json ? make_json_formatter(out, names) : make_text_formatter(out, names);
  DumpVisitor v(*f);
  BufferPipeline p(in, v, opt);
  if (!p.start()) return v.problems;
  // A gzip input is dumped on one thread, as decode_counting() counts it: inflating is sequential
  // anyway, and whether a problem is a cut stream's warning depends on how far the input has been
  // read (Input::truncation_warning), which reading ahead would change.
  if (threads >= 2 && !in.compressed()) {
    const size_t slots = 3 * static_cast<size_t>(threads);
    DumpStage stage(p, names, *f, json, threads, slots, std::max<size_t>(job_text, 1), out);
    if (p.run(stage, threads, slots) != BufferPipeline::Run::kNoWorkers) return v.problems;
  }
  dump_rest(p, *f, opt);  // one thread (or no worker could be started)
  return v.problems;
}

}  // namespace mlpd::cli
