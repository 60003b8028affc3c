// mlpd dump [--json] FILE
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "mlpd/budget.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/enum_names.h"
#include "mlpd/names.h"
#include "args.h"
#include "dump_format.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd dump [--json] FILE\n"
    "\n"
    "Prints everything in FILE (plain or gzip; - reads standard input): the file header, one line per\n"
    "buffer header and one line per event, in file order. Pointers, objects and methods are printed\n"
    "in hex, followed by their name once an earlier event of the file has described them (method_jit,\n"
    "class_load, vtable_load, image_load, assembly_load, domain_name, thread_name); Mono files contain\n"
    "forward references, which stay bare pointers. Event lines start with the absolute time in ns,\n"
    "the time in seconds relative to the first buffer's time_base (what mprof-report calls startup),\n"
    "and the buffer's thread id (with its name once a thread_name event has named it):\n"
    "  TIME +SECONDS THREAD [\"THREAD NAME\"] KIND FIELD=VALUE...\n"
    "Backtraces are listed outermost frame first, sample frames innermost first (file order).\n"
    "Problems are printed where they occur, as in 'mlpd verify':\n"
    "  offset N (buffer K): what is wrong\n"
    "Exit status: 0 when the file is valid, 1 when a problem was found or FILE cannot be read,\n"
    "2 for bad usage.\n"
    "\n"
    "  --json  JSON Lines instead: {\"header\":{...}}, then {\"buffer\":{...}} per buffer,\n"
    "          {\"time\",\"seconds\",\"thread\",\"kind\",FIELDS...,\"buffer\",\"offset\"} per event and\n"
    "          {\"error\":{\"offset\",\"buffer\",\"message\"}} per problem. Pointers are strings \"0x...\"\n"
    "          (exact in JavaScript); names go in *_name fields when known.\n";

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
void dump_parallel(Input& in, Names& names, BufferFormatter& f, DumpVisitor& v, const DecodeOptions& opt,
                   bool json, unsigned threads, OutBuffer& out) {
  detail::DecodeDriver d(in, v, opt);
  if (!d.start()) return;
  d.set_deferring(true);

  // The most text a worker writes for one buffer; MLPD_DUMP_JOB_TEXT=BYTES (tests) makes it smaller.
  size_t job_text = 4u << 20;
  if (const char* e = std::getenv("MLPD_DUMP_JOB_TEXT"); e && *e) {
    job_text = std::clamp<size_t>(std::strtoul(e, nullptr, 10), 1, job_text);
  }
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
  for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker);

  uint64_t ahead = 0;
  bool stop = false;
  const bool stats = std::getenv("MLPD_DUMP_STATS") != nullptr;
  uint64_t stat_jobs = 0, stat_invalid = 0, stat_partial[4] = {}, stat_seq_events = 0, stat_events = 0;
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
    if (stats) {
      if (std::getenv("MLPD_DUMP_STATS")[0] == '2')
        std::fprintf(stderr, "job %llu v %llu/%llu head %d stop %d events %llu observed %d len %u\n",
                     (unsigned long long)j.info.index, (unsigned long long)j.version, (unsigned long long)version,
                     j.head_ok, (int)j.r.stop, (unsigned long long)j.r.events, (int)(result == &r && r.observed),
                     j.info.header.length);
      ++stat_jobs;
      if (!valid) ++stat_invalid;
      else if (j.r.stop != RunResult::kEnd) ++stat_partial[j.r.stop];
      stat_seq_events += (valid && j.r.stop != RunResult::kEnd) || !valid ? result->events - seq.skip : 0;
      stat_events += result->events;
    }
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
    ++delivered;
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
  {
    std::lock_guard<std::mutex> lock(m);
    quit = true;
  }
  work_cv.notify_all();
  for (std::thread& t : pool) t.join();
  if (!stop) d.report_deferred();
  if (stats) {
    std::fprintf(stderr, "jobs %llu invalid %llu partial fileorder %llu full %llu; events %llu in order %llu\n",
                 (unsigned long long)stat_jobs, (unsigned long long)stat_invalid, (unsigned long long)stat_partial[1],
                 (unsigned long long)stat_partial[2],
                 (unsigned long long)stat_events, (unsigned long long)stat_seq_events);
  }
}

// Worker threads for `mlpd dump`: MLPD_DUMP_THREADS (0 or 1: one thread; tests use it), else one
// per core; one thread under a memory budget below 256 MiB (the workers' text takes up to 4 MiB per
// job) and on one core.
unsigned dump_threads(const DecodeOptions& opt) {
  if (const char* e = std::getenv("MLPD_DUMP_THREADS"); e && *e) {
    const unsigned long n = std::strtoul(e, nullptr, 10);
    return static_cast<unsigned>(std::min<unsigned long>(n, 64));
  }
  if (opt.budget && opt.budget->limit() != 0 && opt.budget->limit() < (uint64_t{256} << 20)) return 1;
  return std::thread::hardware_concurrency();
}

}  // namespace

int cmd_dump(int argc, char** argv) {
  bool json = false;
  std::vector<std::string> files;
  if (const int rc = parse_args(argc, argv, "dump", kHelp, {{"--json", &json}}, files); rc >= 0) return rc;
  if (files.size() > 1) {
    std::fprintf(stderr, "mlpd dump: only one FILE can be dumped at a time (try 'mlpd dump --help')\n");
    return 2;
  }
  std::string open_error;
  struct stat st {};
  if (files[0] != "-" && ::stat(files[0].c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), std::strerror(EISDIR));
    return 1;
  }
  std::unique_ptr<Input> input = Input::open(files[0], open_error);
  if (!input) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), open_error.c_str());
    return 1;
  }
  OutBuffer out(stdout);
  Names names;
  std::unique_ptr<BufferFormatter> f = json ? make_json_formatter(out, names) : make_text_formatter(out, names);
  DumpVisitor dumper(*f);
  const DecodeOptions opt = read_options();
  if (const unsigned threads = dump_threads(opt); threads >= 2) {
    dump_parallel(*input, names, *f, dumper, opt, json, threads, out);
  } else {
    dump_sequential(*input, *f, dumper, opt);
  }
  out.flush();
  if (std::fflush(stdout) != 0 || out.failed()) {
    std::fprintf(stderr, "mlpd dump: cannot write the output: %s\n", std::strerror(errno));
    return 1;
  }
  return dumper.problems ? 1 : 0;
}

}  // namespace mlpd::cli
