#include "mlpd/agent/agent.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "counters.h"
#include "mlpd/agent/command_server.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/agent/options.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/hooks/heapshot.h"
#include "mlpd/hooks/hooks.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/hooks/perf_output.h"
#include "mlpd/hooks/sampling.h"
#include "mlpd/rt/clock.h"
#include "mlpd/sink.h"

namespace mlpd::agent {

namespace {

constexpr uint32_t kBufferBytes = 64 * 1024;  // per-thread buffer, as Mono's
constexpr uint32_t kMaxBuffers = 4096;        // 256 MiB in flight at most; beyond, events are dropped
// Beyond kMaxBuffers, for a heap walk only (world stopped, the helper possibly held up by a suspended
// thread holding one of our mutexes): another 256 MiB, about 9M more objects, before a heapshot loses
// events.
constexpr uint32_t kHeapWalkReserve = 4096;
// How often full buffers are written: often while threads are filling buffers (each recycled buffer
// is one the pool need not map and fault in), rarely when nothing is happening.
constexpr auto kBusyTick = std::chrono::milliseconds(10);
constexpr auto kIdleTick = std::chrono::milliseconds(100);
constexpr int kExitWriteLimitSeconds = 5;  // longest the host's exit waits for the last writes

void say(const std::string& line) {
  std::string l = line;
  l += '\n';
  (void)!::write(STDERR_FILENO, l.data(), l.size());  // no stdio locks: this may run in odd places
}

class Agent {
 public:
  explicit Agent(Options options)
      : options_(std::move(options)),
        pool_(kBufferBytes, kMaxBuffers, kHeapWalkReserve),
        meta_(static_cast<uint64_t>(pthread_self()), rt::now_ns()),
        registry_(shared_),
        flusher_(shared_, registry_, meta_),
        counters_(registry_, meta_, ProfilerCounterSources{&flusher_.stats(), &pool_, &shared_}) {
    shared_.pool = &pool_;
    shared_.queue = &queue_;
    // A thread that needed a new buffer wakes the helper (the free list was empty: it is behind).
    // Only a write(2) to an eventfd: no user-space lock, so it is safe from any thread at any time,
    // including the GC thread while the world is stopped (a condition variable's notify takes glibc's
    // internal lock, which a suspended thread may hold).
    shared_.wake_helper = [](void* self) { static_cast<Agent*>(self)->wake(); };
    shared_.wake_ctx = this;
  }

  const Options& options() const { return options_; }
  void set_sink(std::unique_ptr<OutputSink> sink) { sink_ = std::move(sink); }
  // Closes the output opened for a start that then failed, and removes the file if we created one.
  void abandon_output(const ResolvedOutput& where) {
    if (!sink_) return;
    sink_->close();
    if (where.kind == ResolvedOutput::Kind::File) ::unlink(where.target.c_str());
  }
  rt::WriterShared& shared() { return shared_; }
  rt::ThreadRegistry& registry() { return registry_; }
  rt::MetaLog& meta() { return meta_; }

  bool write_header(std::string& why) {
    FileHeader h;
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    h.startup_ms = static_cast<uint64_t>(wall.tv_sec) * 1000 + static_cast<uint64_t>(wall.tv_nsec) / 1000000;
    h.startup_ns = rt::now_ns();
    h.timer_overhead = static_cast<int32_t>(rt::measure_clock_overhead());
    h.pid = static_cast<int32_t>(getpid());
    h.port = server_ ? server_->port() : 0;  // the port actually bound (port=0: chosen by the kernel)
    h.args = options_.header_args;
    h.arch = "x86-64";
    h.os = "linux";
    std::vector<uint8_t> bytes;
    encode_file_header(h, bytes);
    if (write_out(bytes) && sink_->flush()) return true;
    why = sink_->error();
    if (const size_t p = why.find("; profiling stopped"); p != std::string::npos) why.erase(p);
    return false;
  }

  // The command port, bound before the header is written (the header carries its port). A failure
  // (port busy, bad address) is one line; profiling goes on without the port.
  void start_server() {
    auto server = std::make_unique<CommandServer>(command_handlers());
    std::string error;
    if (!server->start(options_.bind, options_.port.value_or(0), error)) {
      say("mlpd: command port: " + error + "; profiling goes on without the command port");
      return;
    }
    server_ = std::move(server);
  }
  // Profiling did not start after all: the port must not stay open in the host.
  void drop_server() { server_.reset(); }
  void announce_server() {
    if (!server_) return;
    const std::string& a = options_.bind;
    const bool loopback = a.rfind("127.", 0) == 0 || a == "::1" || a == "::ffff:127.0.0.1";
    say("mlpd: command port " + server_->endpoint() +
        (loopback ? "" : " (reachable from other hosts, without authentication)"));
  }

  bool start_helper() {
    if (!open_wakeup()) return false;
    // The helper must never receive the host's signals: block them all while creating it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&helper_, nullptr, &Agent::helper_entry, this);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    helper_started_ = rc == 0;
    return helper_started_;
  }

  bool open_wakeup() {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return wake_fd_ >= 0;
  }

  void wake() {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);  // EAGAIN (counter full) still leaves it readable
  }

  // Final flush and close; the first caller does it. A caller that comes while it is under way (another
  // thread exiting at the same time) waits for it, bounded, so that it does not exit the process
  // under the final writes; later callers return at once.
  void shutdown() {
    if (shutting_down_.exchange(true)) {
      for (int i = 0; i < (kExitWriteLimitSeconds + 1) * 1000 && !shutdown_done_.load(std::memory_order_acquire); ++i) {
        const timespec ms{0, 1000000};
        nanosleep(&ms, nullptr);
      }
      return;
    }
    finish();
    shutdown_done_.store(true, std::memory_order_release);
  }

  void finish() {
    hooks::end_remaining_threads();  // before the final round, so they are written
    hooks::stop();
    stop_.store(true, std::memory_order_release);
    wake();
    if (helper_started_ && !pthread_equal(pthread_self(), helper_)) {
      // Bounded: an output that stops draining (a pipe whose reader never reads) must not hang the
      // host's exit. After the limit the data still in flight is given up, with one message.
      timespec deadline;
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_sec += kExitWriteLimitSeconds;
      if (pthread_timedjoin_np(helper_, nullptr, &deadline) != 0) {
        failed_ = true;
        say("mlpd: the output did not take the last data within " + std::to_string(kExitWriteLimitSeconds) +
            " s (" + sink_->describe() + "); the rest is lost");
        return;
      }
    }
    if (!failed_ && !sink_->close()) report_failure();
    registry_.disable();
    if (options_.verbose) {
      const FlushStats& f = flusher_.stats();
      say("mlpd: wrote " + std::to_string(f.bytes) + " bytes in " + std::to_string(f.buffers_written) +
          " buffers; " + std::to_string(pool_.allocated()) + " buffers of " + std::to_string(kBufferBytes / 1024) +
          " KiB allocated; " + std::to_string(shared_.dropped_events.load()) + " events dropped; " +
          std::to_string(rounds_) + " flush rounds");
      if (hooks::max_frames() > 0) say(hooks::backtrace_summary());
      if (options_.sample_mode != SampleMode::None) {
        const hooks::SampleStats st = hooks::sample_stats();
        say("mlpd: samples: " + std::to_string(st.taken) + " taken, " + std::to_string(st.written) + " written, " +
            std::to_string(st.skipped_idle) + " idle skipped; dropped: " + std::to_string(st.dropped_pool_full) +
            " pool full, " + std::to_string(st.dropped_shutdown) + " after stop, " +
            std::to_string(st.dropped_unfinished) + " unfinished; " + std::to_string(st.stack_copy_failed) +
            " without stack copy, " + std::to_string(st.unwind_failed) + " not unwound; " + std::to_string(st.frames_left_out) +
            " managed frames left out; " + std::to_string(st.taken ? st.handler_ns / st.taken : 0) +
            " ns in the handler and " + std::to_string(st.taken ? st.drain_ns / st.taken : 0) +
            " ns on the helper per sample");
      }
    }
  }

  // Fork child: this process must not write into the parent's output. Nothing more is recorded. Our copy
  // of the output descriptor is let go at once: a child that does not exec would otherwise hold a
  // `|CMD` pipe open until it exits, and the command -- and the parent's exit, waiting for it -- with it.
  void forget_after_fork() {
    shutting_down_.store(true);
    shutdown_done_.store(true);  // nothing to finish here: exit handlers return at once
    failed_ = true;
    hooks::stop();
    registry_.forget_in_fork_child();
    if (server_) server_->forget_after_fork();  // the parent serves the port, not the child
    if (sink_) sink_->abandon();
  }

 private:
  static void* helper_entry(void* self) {
    static_cast<Agent*>(self)->helper_main();
    return nullptr;
  }

  // Rounds run on their tick (or when a thread needs buffers) whatever the command port's clients
  // do: the server only adds descriptors to the poll set and does bounded, non-blocking work.
  void helper_main() {
    using Clock = std::chrono::steady_clock;
    auto last_live = Clock::now();
    const auto flush_every = std::chrono::milliseconds(options_.flush_ms);
    bool busy = true;  // until a round finds nothing: a program may be busy from its first instruction
    auto next_round = Clock::now() + std::min<std::chrono::milliseconds>(kBusyTick, flush_every);
    std::vector<pollfd> fds;
    while (!stop_.load(std::memory_order_acquire)) {
      auto now = Clock::now();
      fds.clear();
      fds.push_back({wake_fd_, POLLIN, 0});
      if (server_) server_->add_pollfds(fds, ms_of(now));
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_round - now).count();
      bool woken = false;
      if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait + 1))) > 0 &&
          (fds[0].revents & POLLIN)) {
        uint64_t n;
        (void)!::read(wake_fd_, &n, sizeof n);
        woken = true;
      }
      if (stop_.load(std::memory_order_acquire)) break;
      now = Clock::now();
      if (server_) server_->service(fds.data() + 1, fds.size() - 1, ms_of(now));
      const bool flush_asked = server_ && server_->flush_wanted();
      if (!woken && !flush_asked && now < next_round) continue;
      const bool live = flush_asked || now - last_live >= flush_every;
      if (live) last_live = now;
      const uint64_t before = flusher_.stats().buffers_written;
      if (live) sample_counters();
      const bool ok = round(live);
      busy = flusher_.stats().buffers_written - before > (live ? 8u : 0u);
      next_round = Clock::now() + std::min<std::chrono::milliseconds>(busy ? kBusyTick : kIdleTick, flush_every);
      if (flush_asked) server_->flush_done(ok, ms_of(Clock::now()));
    }
    // Final: everything committed, including threads that are still running or never exited. A push
    // another thread has half done holds the queue up: wait for it a little (bounded).
    hooks::perf::finish(options_.verbose);  // the last code loads, JIT_CODE_CLOSE
    hooks::drain_samples(true);  // sampling is stopped: a record still being written is counted lost
    sample_counters();  // after the last user events, before the final flush (as Mono's log profiler)
    for (int i = 0; i < 200 && (i < 3 || flusher_.queue_blocked()); ++i) {
      if (i >= 3) sched_yield();
      round(true);
    }
    if (server_) {
      // Everything is written now: a `flush` or a `heapshot` already taken is answered OK (twice: a
      // heapshot taken moves on to wait for a flush round, which this also is). Then clients still
      // waiting get ERR; nothing is served after the last round.
      const int64_t t = ms_of(Clock::now());
      server_->flush_done(!failed_, t);
      server_->flush_done(!failed_, t);
      server_->stop();
    }
  }

  static int64_t ms_of(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }

  CommandHandlers command_handlers() {
    CommandHandlers h;
    h.request_heapshot = hooks::request_heapshot;  // never blocks: the finalizer thread takes it
    h.heapshots_done = hooks::heapshots_done;
    h.stats = [this] { return stats_line(); };
    h.event_mask = hooks::event_mask;
    h.set_event_mask = hooks::set_event_mask;
    h.calls_enabled = hooks::calls_enabled;
    h.call_depth = hooks::call_depth;
    h.set_call_depth = hooks::set_call_depth;
    h.start_call_depth = options_.calldepth;
    h.compat = options_.compat;
    return h;
  }

  // The `stats` answer (helper thread: the flusher's counters are its own).
  std::string stats_line() {
    const FlushStats& f = flusher_.stats();
    uint64_t per_kind[kEventKindCount] = {};
    registry_.add_counts_to(per_kind);
    meta_.add_counts_to(per_kind);
    uint64_t events = 0;
    for (const uint64_t n : per_kind) events += n;
    std::string s = "bytes=" + std::to_string(f.bytes) + " buffers=" + std::to_string(f.buffers_written) +
                    " meta_events=" + std::to_string(f.meta_events) +
                    " dropped_events=" + std::to_string(shared_.dropped_events.load()) +
                    " buffers_allocated=" + std::to_string(pool_.allocated()) +
                    " flush_rounds=" + std::to_string(rounds_) + " clients=" + std::to_string(server_->clients());
    const hooks::SampleStats st = hooks::sample_stats();
    s += " events=" + std::to_string(events) + " samples=" + std::to_string(st.taken) + " samples_dropped=" +
         std::to_string(st.dropped_pool_full + st.dropped_shutdown + st.dropped_unfinished);
    if (failed_) s += " output=failed";
    return s;
  }

  // The round's pieces go to the sink straight from the buffers (no copy: fresh memory is expensive
  // to fault in), then the buffers go back to the pool.
  bool round(bool live) {
    ++rounds_;
    hooks::drain_samples();  // samples (and the native symbols they need) into the MetaLog first
    hooks::perf::drain();    // jitdump/perfmap records the JIT threads queued
    const std::vector<Flusher::Piece>& pieces = flusher_.begin_round(live, rt::now_ns());
    bool ok = true;
    if (!failed_) {
      for (const Flusher::Piece& p : pieces) {
        if (!(ok = sink_->write(p.data, p.size))) break;
      }
      if (ok && live && !pieces.empty()) ok = sink_->flush();
      if (!ok) report_failure();
    }
    flusher_.end_round();
    return ok && !failed_;
  }

  // The `counter` events (while the mask asks for them and the output works).
  void sample_counters() {
    if (!failed_ && (hooks::event_mask() & format::MASK_COUNTER)) counters_.sample();
  }

  bool write_out(const std::vector<uint8_t>& bytes) { return sink_->write(bytes.data(), bytes.size()); }

  void report_failure() {
    if (failed_) return;
    failed_ = true;
    hooks::stop();  // the program goes on, unprofiled
    std::string e = sink_->error();
    if (e.empty()) e = "mlpd: cannot write to " + sink_->describe();
    if (e.find("profiling stopped") == std::string::npos) e += "; profiling stopped";
    say(e);
  }

  Options options_;
  rt::BufferPool pool_;
  rt::FlushQueue queue_;
  rt::WriterShared shared_;
  rt::MetaLog meta_;
  rt::ThreadRegistry registry_;
  Flusher flusher_;
  AgentCounters counters_;
  std::unique_ptr<OutputSink> sink_;
  std::unique_ptr<CommandServer> server_;  // the command port; only the helper uses it once started

  pthread_t helper_{};
  bool helper_started_ = false;
  int wake_fd_ = -1;               // eventfd: threads and shutdown wake the helper through it
  std::atomic<bool> stop_{false};
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> shutdown_done_{false};
  std::atomic<bool> failed_{false};
  uint64_t rounds_ = 0;
};

// One agent per process, never destroyed: threads may still be inside a callback at exit.
Agent* g_agent = nullptr;
std::atomic<bool> g_started{false};

void on_runtime_shutdown_end() {
  if (g_agent) g_agent->shutdown();
}
void at_exit() {
  if (g_agent) g_agent->shutdown();
}
void fork_child() {
  hooks::perf::forget_after_fork();  // the parent's jitdump stays the parent's
  if (g_agent) g_agent->forget_after_fork();
}

mlpd::OutputKind sink_kind(ResolvedOutput::Kind k) {
  switch (k) {
    case ResolvedOutput::Kind::Pipe: return mlpd::OutputKind::Pipe;
    case ResolvedOutput::Kind::Fd: return mlpd::OutputKind::Fd;
    default: return mlpd::OutputKind::File;
  }
}

}  // namespace

void start(std::string_view text) {
  // Not Mono: do nothing, write nothing, print nothing.
  if (!dlsym(RTLD_DEFAULT, "mono_profiler_create")) return;
  if (g_started.exchange(true)) return;

  Options options;
  std::string error;
  if (!parse_options(text, options, error)) {
    say(error + "; profiling is off");
    return;
  }
  if (options.help) {
    const std::string_view h = help_text();
    (void)!::write(STDERR_FILENO, h.data(), h.size());
    return;
  }
  // Before anything takes a time stamp (the header's startup time is the first).
  const char* clock_name = rt::init_clock(std::getenv("MLPD_CLOCK") == nullptr ||
                                          std::string_view(std::getenv("MLPD_CLOCK")) != "monotonic");
  auto* agent = new (std::nothrow) Agent(std::move(options));
  if (!agent) return;
  const Options& o = agent->options();
  // The output first: if it cannot be opened, Mono is left untouched (no callbacks, no allocation
  // instrumentation) and the program runs at full speed.
  const ResolvedOutput where = resolve_output(o, static_cast<long>(getpid()), std::time(nullptr));
  // A pipe's command (output=|CMD, report) must not profile itself: it gets our environment without
  // MLPD_OPTIONS and LD_PRELOAD.
  std::vector<char*> child_env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "MLPD_OPTIONS=", 13) != 0 && std::strncmp(*e, "LD_PRELOAD=", 11) != 0) child_env.push_back(*e);
  }
  child_env.push_back(nullptr);
  SinkOptions sink_options;
  sink_options.child_env = child_env.data();
  std::unique_ptr<OutputSink> sink =
      open_sink(sink_kind(where.kind), where.kind == ResolvedOutput::Kind::Fd ? std::to_string(where.fd) : where.target,
                o.zip, error, sink_options);
  if (!sink) {
    say(error + (error.find("profiling") == std::string::npos ? "; profiling is off" : ""));
    return;
  }
  agent->set_sink(std::move(sink));
  if (wants_command_server(o)) agent->start_server();  // before the header, which carries the port
  if (std::string why; !agent->write_header(why)) {
    agent->drop_server();
    say((why.empty() ? "mlpd: cannot write the output header" : why) + "; profiling is off");
    return;
  }
  // Then the hooks. They check what only Mono can (the callspec, being early enough); if that fails,
  // the file just created is removed again, so a refused configuration leaves nothing behind.
  hooks::HookConfig config;
  config.mask = o.effective_mask;
  config.calls = o.calls;
  config.calldepth = o.calldepth;
  config.maxframes = o.maxframes;
  config.roots_every_gc = o.compat;
  config.callspec = o.callspec;
  config.verbose = o.verbose;
  config.sample_mode = o.sample_mode == SampleMode::Process ? hooks::kSampleProcess
                       : o.sample_mode == SampleMode::Real  ? hooks::kSampleReal
                                                            : hooks::kSampleOff;
  config.sample_freq = o.sample_freq;
  config.sample_pool = max_sample_hits(o, std::max(1u, std::thread::hardware_concurrency()));
  hooks::HookEnv env;
  env.shared = &agent->shared();
  env.registry = &agent->registry();
  env.meta = &agent->meta();
  env.on_shutdown_end = on_runtime_shutdown_end;
  hooks::LogProfilerSettings lp;  // what Mono.Profiler.Log.LogProfiler reads back at first
  lp.heapshot_mode = o.heapshot_mode;
  lp.heapshot_ms = o.heapshot_ms;
  lp.heapshot_gc = o.heapshot_gc;
  lp.sample_mode = static_cast<uint8_t>(o.sample_mode);
  lp.sample_freq = o.sample_freq;
  hooks::seed_log_profiler_settings(lp);  // also the heapshot policy
  hooks::set_heapshot_on_shutdown(o.heapshot_on_shutdown);
  if (!hooks::install(config, env, error)) {
    agent->drop_server();
    agent->abandon_output(where);
    say("mlpd: " + error + "; profiling is off");
    return;
  }
  if (o.jitdump || o.perfmap) {  // a failure is one line; profiling goes on without the perf files
    hooks::perf::OutputConfig pc{o.jitdump, o.jitdump_dir, o.perfmap, agent->shared().wake_helper, agent->shared().wake_ctx};
    if (!hooks::perf::start(pc, error)) say(error + "; going on without it");
  }
  g_agent = agent;
  if (!agent->start_helper()) {
    agent->drop_server();
    say("mlpd: cannot start the helper thread; profiling is off");
    hooks::stop();
    return;
  }
  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, fork_child);
  agent->announce_server();
  if (o.verbose) say("mlpd: profiling, options '" + o.text + "', clock " + clock_name);
}

void shutdown() {
  if (g_agent) g_agent->shutdown();
}

}  // namespace mlpd::agent
