#include "mlpd/agent/agent.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "attach_options.h"
#include "exit_signals.h"
#include "helper_thread.h"
#include "ring_sink.h"
#include "mlpd/agent/command_server.h"
#include "mlpd/agent/options.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/heapshot.h"
#include "mlpd/hooks/hooks.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/hooks/perf_output.h"
#include "mlpd/arch/machine.h"
#include "mlpd/hooks/sampling.h"
#include "mlpd/output_cut.h"
#include "mlpd/rt/buffer_packer.h"
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
constexpr int kExitWriteLimitSeconds = 5;  // longest the host's exit waits for the last writes
// zip: the program's threads compress their own full buffers while more than this many bytes of full
// buffers wait for the helper (buffer_packer.h); below it the helper compresses everything, in
// bigger members (smaller files). Compressors for the threads: up to this many at once (~270 KiB each
// at level 1 with their output space, touched only when used); member buffers (4 KiB each, a 64 KiB
// buffer's member takes two or three) at most kMaxMembers: 64 MiB.
constexpr uint32_t kPackAboveBytes = 4 * 1024 * 1024;
static_assert(kDefaultZipPackAbove == kPackAboveBytes / kBufferBytes && kMaxZipPackAbove == kMaxBuffers);
constexpr uint32_t kPackCompressors = 4;
constexpr uint32_t kMaxMembers = 16384;
constexpr int kPackLevel = 1;  // libdeflate's level, as the gzip sink's default (SinkOptions::gzip_level)

// Attach: the lines go back to `mlpd attach` (attach_entry.cpp), not to the program's stderr.
std::string* g_capture = nullptr;

void say(const std::string& line) {
  if (g_capture) {
    if (!g_capture->empty()) *g_capture += '\n';
    *g_capture += line;
    return;
  }
  std::string l = line;
  l += '\n';
  (void)!::write(STDERR_FILENO, l.data(), l.size());  // no stdio locks: this may run in odd places
}

// Dumps asked for outside the helper thread: by the dump signal (dumpsignal=, counted in its handler)
// and by LogProfiler.TriggerHeapshot() in ring mode. The helper performs them (service_requests()).
std::atomic<uint64_t> g_signal_requests{0};
std::atomic<uint64_t> g_trigger_requests{0};
std::atomic<uint64_t> g_triggers_done{0};  // TriggerHeapshot dumps served (their callers wait for them)
int g_dump_signal = 0;  // the signal whose handler is ours (0: none)
void on_dump_signal(int);

// The agent: its start (output, command port, header, hooks), the output sink, shutdown and fork.
// The helper thread (helper_thread.h) does the rounds.
class Agent final : private HelperOutput {
 public:
  explicit Agent(Options options)
      : options_(std::move(options)),
        pool_(kBufferBytes, kMaxBuffers, kHeapWalkReserve),
        meta_(static_cast<uint64_t>(pthread_self()), rt::now_ns()),
        registry_(shared_),
        helper_(HelperParts{&options_, &pool_, &shared_, &meta_, &registry_, &server_, this}) {
    shared_.pool = &pool_;
    shared_.queue = &queue_;
    // A thread that needed a new buffer wakes the helper (the free list was empty: it is behind).
    // Only a write(2) to an eventfd: no user-space lock, so it is safe from any thread at any time,
    // including the GC thread while the world is stopped (a condition variable's notify takes glibc's
    // internal lock, which a suspended thread may hold).
    shared_.wake_helper = [](void* self) { static_cast<Agent*>(self)->helper_.wake(); };
    shared_.wake_ctx = this;
    // zip to a file, pipe or descriptor: the threads help the helper when it is behind. Not in ring
    // mode, whose sink keeps the stream uncompressed (dumps are compressed when written).
    if (options_.zip && !options_.ring_bytes) {
      packer_ = std::make_unique<rt::BufferPacker>(kPackLevel, kPackCompressors, kBufferBytes + format::kBufferHeaderSize,
                                                   kMaxMembers);
      if (packer_->ok()) {
        shared_.packer = packer_.get();
        // zip-pack-above= (MLPD_ZIP_PACK_ABOVE), for testing: the bound in full buffers; 0: the threads
        // compress every full buffer.
        shared_.pack_above = options_.zip_pack_above;
      }
    }
  }

  const Options& options() const { return options_; }
  // Flight recorder: the ring is the sink; dumps go to files.
  void use_ring() {
    auto ring = std::make_unique<RingSink>(options_.ring_bytes);
    ring_ = ring.get();
    sink_ = std::move(ring);
  }

  // Writes a dump (helper thread, or the exit path after the helper stopped): the header, the metadata
  // of everything alive, then the ring's buffers in order. `file` empty: output= (or the default
  // name), with %p, %t and %n (the dump's number) expanded. Returns `OK dump FILE BYTES` or
  // `ERR dump: reason`; profiling goes on either way.
  std::string dump(const std::string& file, bool round_first) {
    if (!ring_) return "ERR dump: not in flight-recorder mode";
    if (round_first) helper_.round_now();
    // %n numbers the dumps written under a name that has it: a dump named without it, or one that
    // failed, takes no number (the next is still the next in sequence).
    const long pid = static_cast<long>(getpid());
    const std::time_t now = std::time(nullptr);
    auto name_for = [&](uint64_t seq) {
      if (!file.empty()) return expand_output_name(file, pid, now, seq);
      if (options_.output_kind == OutputKind::File || options_.output_kind == OutputKind::FileAppendPid) {
        return resolve_output(options_, pid, now, seq).target;
      }
      return expand_output_name(options_.zip ? "mlpd-dump.%p.%n.mlpd.gz" : "mlpd-dump.%p.%n.mlpd", pid, now, seq);
    };
    const std::string target = name_for(dump_seq_);
    const bool numbered = target != name_for(dump_seq_ + 1);
    std::string error;
    std::unique_ptr<OutputSink> out = open_sink(mlpd::OutputKind::File, target, options_.zip, error);
    auto fail = [](std::string e) {
      if (e.rfind("mlpd: ", 0) == 0) e.erase(0, 6);
      if (const size_t p = e.find("; profiling stopped"); p != std::string::npos) e.erase(p);
      return "ERR dump: " + e;
    };
    if (!out) return fail(error);
    std::vector<uint8_t> metadata;
    helper_.replay_metadata(metadata, ring_->oldest_time());  // the dump starts where its data does
    uint64_t bytes = header_bytes_.size() + metadata.size();
    bool ok = out->write(header_bytes_.data(), header_bytes_.size()) && out->write(metadata.data(), metadata.size()) &&
              ring_->for_each([&](const uint8_t* d, size_t n) {
                bytes += n;
                return out->write(d, n);
              });
    ok = out->close() && ok;
    if (!ok) {
      ::unlink(target.c_str());
      return fail(out->error());
    }
    if (numbered) ++dump_seq_;
    std::string name = target;
    for (char& c : name) {
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    }
    return "OK dump " + name + " " + std::to_string(out->written() ? out->written() : bytes);
  }

  void set_sink(std::unique_ptr<OutputSink> sink, std::string file = {}) {
    sink_ = std::move(sink);
    file_started_ = std::chrono::steady_clock::now();
    if (!file.empty()) files_.push_back(std::move(file));
  }
  // Closes the output opened for a start that then failed, and removes the file if we created one.
  void abandon_output(const ResolvedOutput& where) {
    if (!sink_ || ring_) return;
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
    h.arch = arch::kHeaderArch;
    h.os = "linux";
    std::vector<uint8_t>& bytes = header_bytes_;  // kept: every rotated file and dump starts with it
    bytes.clear();
    encode_file_header(h, bytes);
    if (ring_) return true;  // the ring holds buffers only
    if (write_out(bytes) && sink_->flush()) {
      sink_->mark_whole();
      return true;
    }
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
        (loopback                 ? ""
         : options_.port_allow_any ? " (reachable from other hosts, without authentication)"
                                   : " (other hosts are refused: they cannot be identified; see port-allow)"));
  }

  bool start_helper() { return helper_.start(); }
  // Attached again: what the earlier attach described (and the runtime will not describe again),
  // right after the header.
  bool seed_metadata(const std::vector<uint8_t>& bytes) {
    if (bytes.empty()) return true;
    helper_.seed_metadata(bytes);
    if (ring_) return true;
    return write_out(bytes) && sink_->flush();
  }
  std::vector<uint8_t> metadata_now() const {
    std::vector<uint8_t> out;
    helper_.replay_metadata(out);
    return out;
  }
  const std::vector<std::string>& files() const { return files_; }
  // Async-signal-safe: a write(2) to the helper's eventfd.
  void wake_helper() { helper_.wake(); }
  bool shutting_down() const { return shutting_down_.load(std::memory_order_acquire); }

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
    // Bounded: an output that stops draining (a pipe whose reader never reads) must not hang the
    // host's exit. After the limit the data still in flight is given up, with one message.
    if (!helper_.stop(kExitWriteLimitSeconds)) {
      failed_ = true;
      output_cut::cut(0);  // the helper may be inside a write: the file ends with its last whole round
      say("mlpd: the output did not take the last data within " + std::to_string(kExitWriteLimitSeconds) +
          " s (" + sink_->describe() + "); the rest is lost");
      return;
    }
    if (!failed_ && !sink_->close()) report_failure();
    registry_.disable();
    // Flight recorder: the exit dump, when output= names a file.
    if (ring_ && !failed_ && (options_.output_kind == OutputKind::File || options_.output_kind == OutputKind::FileAppendPid)) {
      const std::string answer = dump({}, false);
      if (options_.verbose || answer.rfind("ERR", 0) == 0) say("mlpd: exit " + answer);
    }
    if (options_.verbose) {
      for (const std::string& line : helper_.summary_lines(options_.sample_mode != SampleMode::None)) say(line);
    }
  }

  // Detached: the helper has ended and the file is closed; the buffers' pages go back to the system
  // (BufferPool::release_pages: nothing is unmapped, a thread may still hold or even write one).
  size_t release_memory() { return pool_.release_pages(); }
  // Detached, its metadata taken (metadata_now()): the helper's store is not needed any more (the
  // helper has ended; only it used the store).
  void drop_metadata() { helper_.drop_metadata(); }

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
  CommandHandlers command_handlers() {
    CommandHandlers h;
    h.request_heapshot = hooks::request_heapshot;  // never blocks: the finalizer thread takes it
    h.heapshots_done = hooks::heapshots_done;
    h.stats = [this] { return helper_.stats_line(); };
    h.event_mask = hooks::event_mask;
    h.set_event_mask = hooks::set_event_mask;
    h.calls_enabled = hooks::calls_enabled;
    h.call_depth = hooks::call_depth;
    h.set_call_depth = hooks::set_call_depth;
    h.pause = hooks::pause;
    h.resume = hooks::resume;
    h.start_call_depth = options_.calldepth;
    if (options_.ring_bytes) h.dump = [this](const std::string& file) { return dump(file, true); };
    h.compat = options_.compat;
    h.allow_any_user = options_.port_allow_any;
    h.allowed_uids = options_.port_allow_uids;
    return h;
  }

  bool write_out(const std::vector<uint8_t>& bytes) { return sink_->write(bytes.data(), bytes.size()); }

  // Rotation (helper thread). Every file of a run carries the same header (process start time, pid,
  // port, options): they are windows of one run, with times on one scale.
  bool rotation_due() override {
    if (!rotation_on(options_) || failed_) return false;
    if (options_.rotate_bytes && sink_->written() >= options_.rotate_bytes) return true;
    return options_.rotate_ms &&
           std::chrono::steady_clock::now() - file_started_ >= std::chrono::milliseconds(options_.rotate_ms);
  }

  bool next_file(const std::vector<uint8_t>& metadata) override {
    if (!sink_->close()) return false;  // report_failure() tells the closed file's error
    ++file_seq_;
    const ResolvedOutput where = resolve_output(options_, static_cast<long>(getpid()), std::time(nullptr), file_seq_);
    std::string error;
    SinkOptions sink_options;
    sink_options.cut_on_kill = true;
    std::unique_ptr<OutputSink> sink = open_sink(mlpd::OutputKind::File, where.target, options_.zip, error, sink_options);
    if (!sink) {
      // The old sink is closed; a sink that only reports this error takes its place.
      auto failed = std::make_unique<MemorySink>(where.target);
      failed->fail_after(0, 0);
      sink_ = std::move(failed);
      rotate_error_ = error + "; profiling stopped";
      return false;
    }
    set_sink(std::move(sink), where.target);
    if (!write_out(header_bytes_) || !sink_->write(metadata.data(), metadata.size()) || !sink_->flush()) return false;
    sink_->mark_whole();
    // rotate-keep: the oldest files beyond N go (the current one counts).
    while (options_.rotate_keep && files_.size() > options_.rotate_keep) {
      ::unlink(files_.front().c_str());
      files_.erase(files_.begin());
    }
    return true;
  }

  // The helper loop: dumps (ring) or flush rounds (file) that the dump signal or TriggerHeapshot asked for.
  // Requests that came while one was under way are served by one more. The dump signal's handler is
  // looked at once a second: if the program (or Mono, e.g. `mono --trace` takes SIGUSR2) installed
  // its own since, one line says that the signal no longer dumps.
  void service_requests() override {
    const uint64_t sig = g_signal_requests.load(std::memory_order_acquire);
    if (sig != signals_served_) {
      signals_served_ = sig;
      const std::string who = options_.dump_signal_name.empty() ? "dump signal" : options_.dump_signal_name;
      if (ring_) {
        say("mlpd: " + who + ": " + dump({}, true));
      } else if (!failed_) {
        helper_.round_now();  // a live round: everything committed is written and flushed
        if (options_.verbose) say("mlpd: " + who + ": flushed");
      }
    }
    const uint64_t trig = g_trigger_requests.load(std::memory_order_acquire);
    if (trig != triggers_served_) {
      triggers_served_ = trig;
      const std::string answer = dump({}, true);
      if (options_.verbose || answer.rfind("ERR", 0) == 0) say("mlpd: LogProfiler.TriggerHeapshot: " + answer);
      g_triggers_done.store(trig, std::memory_order_release);
    }
    if (g_dump_signal && !signal_lost_) {
      const auto now = std::chrono::steady_clock::now();
      if (now - signal_checked_ >= std::chrono::seconds(1)) {
        signal_checked_ = now;
        struct sigaction cur{};
        if (sigaction(g_dump_signal, nullptr, &cur) == 0 &&
            ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != &on_dump_signal)) {
          signal_lost_ = true;
          say("mlpd: " + options_.dump_signal_name + " was taken over by the program (or the runtime); it no longer "
              "triggers " + (ring_ ? "dumps" : "flushes"));
        }
      }
    }
  }

  // HelperOutput: the sink as the helper writes to it.
  bool write(const uint8_t* data, size_t size) override { return sink_->write(data, size); }
  bool write_member(const uint8_t* data, size_t size) override { return sink_->write_member(data, size); }
  bool flush() override { return sink_->flush(); }
  void round_written() override { sink_->mark_whole(); }
  void hurry(bool behind) override { sink_->set_hurry(behind); }
  bool failed() const override { return failed_; }
  void report_failure() override {
    if (failed_) return;
    failed_ = true;
    hooks::stop();  // the program goes on, unprofiled
    std::string e = rotate_error_.empty() ? sink_->error() : rotate_error_;
    if (e.empty()) e = "mlpd: cannot write to " + sink_->describe();
    if (e.find("profiling stopped") == std::string::npos) e += "; profiling stopped";
    say(e);
  }

  Options options_;
  rt::BufferPool pool_;
  std::unique_ptr<rt::BufferPacker> packer_;  // zip: the threads' compressors and member buffers
  rt::FlushQueue queue_;
  rt::WriterShared shared_;
  rt::MetaLog meta_;
  rt::ThreadRegistry registry_;
  std::unique_ptr<OutputSink> sink_;
  std::vector<uint8_t> header_bytes_;
  RingSink* ring_ = nullptr;  // flight recorder: the sink, when ring= is given
  uint64_t dump_seq_ = 0;
  // service_requests(): requests served so far; the dump signal's handler check.
  uint64_t signals_served_ = 0;
  uint64_t triggers_served_ = 0;
  std::chrono::steady_clock::time_point signal_checked_{};
  bool signal_lost_ = false;
  // Rotation: when the current file was opened, its sequence number (%n), the files written (oldest
  // first, for rotate-keep) and the error of a next file that could not be opened.
  std::chrono::steady_clock::time_point file_started_;
  uint64_t file_seq_ = 0;
  std::vector<std::string> files_;
  std::string rotate_error_;
  std::unique_ptr<CommandServer> server_;  // the command port; only the helper uses it once started
  HelperThread helper_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> shutdown_done_{false};
  std::atomic<bool> failed_{false};
};

// One agent per process, never destroyed: threads may still be inside a callback at exit.
Agent* g_agent = nullptr;
std::atomic<bool> g_started{false};
// Attach: the metadata of the last detached agent (what it described; it seeds the next file). One
// copy: the detached agent's own store is emptied.
std::vector<uint8_t>* g_detached_metadata = nullptr;
bool g_hooks_registered = false;  // atexit and pthread_atfork: once per process

void on_runtime_shutdown_end() {
  if (g_agent) g_agent->shutdown();
}
void at_exit() {
  if (g_agent) g_agent->shutdown();
}
// The dump signal's default action back (a fork child, a detach): nothing would dump any more.
void give_back_dump_signal() {
  if (g_dump_signal) {
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(g_dump_signal, &dfl, nullptr);
    g_dump_signal = 0;
  }
}
void fork_child() {
  // The child's signal gets its default action back: nothing here would dump (no helper thread).
  give_back_dump_signal();
  reset_exit_signals_after_fork();    // the parent's file is not the child's to cut
  hooks::perf::forget_after_fork();  // the parent's jitdump stays the parent's
  if (g_agent) g_agent->forget_after_fork();
}

// dumpsignal=NAME: the handler only counts and wakes the helper (an atomic add and a write(2) to an
// eventfd, both async-signal-safe); the helper does the dump. errno is kept for the interrupted code.
void on_dump_signal(int) {
  const int saved = errno;
  g_signal_requests.fetch_add(1, std::memory_order_release);
  if (g_agent) g_agent->wake_helper();
  errno = saved;
}

// Taken only when nobody has it: a signal with a handler (or ignored) at our start is the program's
// (or its parent's choice), and stays so. SA_RESTART: system calls it interrupts are restarted (those
// that never restart, like poll or nanosleep, return EINTR as for any other signal).
void install_dump_signal(const Options& o) {
  struct sigaction old{};
  if (sigaction(o.dump_signal, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
    say("mlpd: dumpsignal: " + o.dump_signal_name + " is already " +
        (old.sa_handler == SIG_IGN ? "ignored" : "handled") + " in this process; going on without a dump signal");
    return;
  }
  struct sigaction sa{};
  sa.sa_handler = on_dump_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(o.dump_signal, &sa, nullptr) != 0) {
    say("mlpd: dumpsignal: cannot install a handler for " + o.dump_signal_name + ": " + std::strerror(errno) +
        "; going on without a dump signal");
    return;
  }
  g_dump_signal = o.dump_signal;
}

// LogProfiler.TriggerHeapshot() in ring mode: the heapshot is in the buffers; the helper dumps, and the
// caller (a managed thread) waits for that dump, bounded, so that when TriggerHeapshot returns the
// heapshot and the events before it are in a file -- also when the program goes on to die at once
// (Environment.FailFast runs no exit handlers, so no exit dump would save them).
constexpr int kTriggerWaitMs = 10000;
void after_trigger_heapshot() {
  if (!g_agent || g_agent->shutting_down()) return;
  const uint64_t ticket = g_trigger_requests.fetch_add(1, std::memory_order_acq_rel) + 1;
  g_agent->wake_helper();
  for (int i = 0; i < kTriggerWaitMs && g_triggers_done.load(std::memory_order_acquire) < ticket; ++i) {
    if (g_agent->shutting_down()) return;
    const timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

// `nochildren`: exec'd children must not inherit the agent. Our LD_PRELOAD entry, MLPD_OPTIONS and a
// --profile=mlpd in MONO_ENV_OPTIONS leave the environment (at start, before the program runs threads
// of its own); Mono builds a child's environment from it.
std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}
void remove_agent_from_environment() {
  ::unsetenv("MLPD_OPTIONS");
  Dl_info self{};
  const std::string ours = dladdr(reinterpret_cast<void*>(&remove_agent_from_environment), &self) && self.dli_fname
                               ? base_name(self.dli_fname) : std::string("libmlpd.so");
  auto drop_words = [](const char* name, const char* separators, auto&& is_ours) {
    const char* value = std::getenv(name);
    if (!value) return;
    const std::string_view v(value);
    std::string kept;
    for (size_t pos = 0; pos <= v.size();) {
      size_t end = v.find_first_of(separators, pos);
      if (end == std::string_view::npos) end = v.size();
      const std::string_view word = v.substr(pos, end - pos);
      if (!word.empty() && !is_ours(word)) {
        if (!kept.empty()) kept += ' ';
        kept += word;
      }
      pos = end + 1;
    }
    if (kept.empty()) ::unsetenv(name);
    else ::setenv(name, kept.c_str(), 1);
  };
  drop_words("LD_PRELOAD", ": ", [&](std::string_view w) {
    const std::string b = base_name(w);
    return b == ours || b == "libmlpd.so" || b == "libmono-profiler-mlpd.so";
  });
  drop_words("MONO_ENV_OPTIONS", " ", [](std::string_view w) {
    return w == "--profile=mlpd" || w.rfind("--profile=mlpd:", 0) == 0;
  });
}

mlpd::OutputKind sink_kind(ResolvedOutput::Kind k) {
  switch (k) {
    case ResolvedOutput::Kind::Pipe: return mlpd::OutputKind::Pipe;
    case ResolvedOutput::Kind::Fd: return mlpd::OutputKind::Fd;
    default: return mlpd::OutputKind::File;
  }
}

}  // namespace

namespace {
// `late`: attached to a running runtime (attach_entry.cpp); returns whether profiling started.
bool start_impl(std::string_view text, std::string_view note, bool late) {
  // Not Mono: do nothing, write nothing, print nothing.
  if (!dlsym(RTLD_DEFAULT, "mono_profiler_create")) return false;
  if (g_started.exchange(true)) {
    if (late) say("mlpd: this process is being profiled already");
    return false;
  }
  bool ok = false;
  struct Unstart {  // attach: a refused start leaves the process as it was, attachable again
    bool late;
    const bool* ok;
    ~Unstart() {
      if (late && !*ok) g_started.store(false);
    }
  } unstart{late, &ok};
  if (!note.empty()) say(std::string(note));

  Options options;
  std::string error;
  if (!parse_options(text, options, error, [](const char* name) -> const char* { return std::getenv(name); })) {
    say(error + "; profiling is off");
    return false;
  }
  if (late && !late_options_allowed(options, error)) {
    say(error);
    return false;
  }
  options.attached = late;
  if (options.help) {
    const std::string_view h = help_text();
    (void)!::write(STDERR_FILENO, h.data(), h.size());
    return false;
  }
  if (options.nochildren) remove_agent_from_environment();
  // Before anything takes a time stamp (the header's startup time is the first).
  const char* clock_name = rt::init_clock(options.clock != ClockKind::Monotonic);
  auto* agent = new (std::nothrow) Agent(std::move(options));
  if (!agent) return false;
  const Options& o = agent->options();
  // The output first: if it cannot be opened, Mono is left untouched (no callbacks, no allocation
  // instrumentation) and the program runs at full speed.
  ResolvedOutput where = resolve_output(o, static_cast<long>(getpid()), std::time(nullptr));
  // A pipe's command (output=|CMD, report) must not profile itself: it gets our environment without
  // MLPD_OPTIONS and LD_PRELOAD.
  std::vector<char*> child_env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "MLPD_OPTIONS=", 13) != 0 && std::strncmp(*e, "LD_PRELOAD=", 11) != 0) child_env.push_back(*e);
  }
  child_env.push_back(nullptr);
  SinkOptions sink_options;
  sink_options.child_env = child_env.data();
  sink_options.cut_on_kill = true;  // files only (sink.h); a kill cuts the file back to its last whole round
  if (o.ring_bytes) {
    // The dumps (the exit dump among them) go to output='s directory: one that cannot take them is
    // refused now, with one line, not found out at exit when the recorded events are lost.
    if (o.output_kind == OutputKind::File || o.output_kind == OutputKind::FileAppendPid) {
      const size_t slash = where.target.rfind('/');
      const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : where.target.substr(0, slash);
      struct stat st{};
      int err = ::stat(dir.c_str(), &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
      if (!err && ::access(dir.c_str(), W_OK | X_OK) != 0) err = errno;
      if (err) {
        std::string shown = dir;
        for (char& c : shown) {
          if (static_cast<unsigned char>(c) < 0x20) c = '?';
        }
        say("mlpd: ring: cannot write dumps into '" + shown + "' (output=): " + std::strerror(err) + "; profiling is off");
        return false;
      }
    }
    agent->use_ring();
  } else {
  bool taken = false;  // another live process writes this file (it holds the lock): write NAME.PID
  sink_options.file_taken = &taken;
  std::unique_ptr<OutputSink> sink =
      open_sink(sink_kind(where.kind), where.kind == ResolvedOutput::Kind::Fd ? std::to_string(where.fd) : where.target,
                o.zip, error, sink_options);
  if (!sink && taken && where.kind == ResolvedOutput::Kind::File) {
    const std::string first = where.target;
    where.target += "." + std::to_string(getpid());
    sink = open_sink(sink_kind(where.kind), where.target, o.zip, error, sink_options);
    // Only with `verbose`: the process is profiled, and its stderr may be another program's output
    // (a compiler's child, whose stderr its build prints).
    if (sink && o.verbose) {
      say("mlpd: output file '" + first + "' is being written by another process; writing '" + where.target + "' instead");
    }
  }
  if (!sink) {
    say(error + (error.find("profiling") == std::string::npos ? "; profiling is off" : ""));
    return false;
  }
  agent->set_sink(std::move(sink), where.kind == ResolvedOutput::Kind::File ? where.target : std::string());
  }
  if (wants_command_server(o)) agent->start_server();  // before the header, which carries the port
  if (std::string why; !agent->write_header(why)) {
    agent->drop_server();
    say((why.empty() ? "mlpd: cannot write the output header" : why) + "; profiling is off");
    return false;
  }
  // Then the hooks. They check what only Mono can (the callspec, being early enough); if that fails,
  // the file just created is removed again, so a refused configuration leaves nothing behind.
  hooks::HookConfig config;
  config.mask = o.effective_mask;
  config.calls = o.calls;
  config.calldepth = o.calldepth;
  config.calls_min_ns = uint64_t{o.calls_min_us} * 1000;
  config.maxframes = o.maxframes;
  config.roots_every_gc = o.compat;
  config.callspec = o.callspec;
  config.verbose = o.verbose;
  static_assert(static_cast<int>(WalkerMode::Ours) == 0 && static_cast<int>(WalkerMode::Mono) == 1 &&
                static_cast<int>(WalkerMode::Check) == 2, "HookConfig::walker's values");
  config.walker = static_cast<uint8_t>(o.walker);
  config.eager_metadata = o.eager_metadata;
  config.late = late;
  config.sample_mode = o.sample_mode == SampleMode::Process ? hooks::kSampleProcess
                       : o.sample_mode == SampleMode::Real  ? hooks::kSampleReal
                                                            : hooks::kSampleOff;
  config.sample_freq = o.sample_freq;
  config.alloc_sample = o.alloc_sample;
  config.start_paused = o.start_paused;
  config.command_port = wants_command_server(o);  // heapshots on request: classes are named at load
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
    return false;
  }
  if (late && g_detached_metadata && !agent->seed_metadata(*g_detached_metadata)) {
    hooks::detach();
    agent->drop_server();
    agent->abandon_output(where);
    say("mlpd: cannot write to the output; profiling is off");
    return false;
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
    return false;
  }
  if (!g_hooks_registered) {
    g_hooks_registered = true;
    std::atexit(at_exit);
    pthread_atfork(nullptr, nullptr, fork_child);
  }
  if (o.dump_signal) install_dump_signal(o);
  // After the dump signal (HUP may be it). Only for a file of ours: a pipe or #FD cannot be cut back.
  if (!o.ring_bytes && where.kind == ResolvedOutput::Kind::File) install_exit_signals();
  if (o.ring_bytes) hooks::set_after_trigger_heapshot(after_trigger_heapshot);
  agent->announce_server();
  if (o.verbose) {
    say("mlpd: profiling, options '" + o.text + "', clock " + clock_name);
    say("mlpd: " + hooks::runtime_summary());
  }
  if (late && o.calls) say(late_calls_notice());
  if (late) say("mlpd: profiling into " + (agent->files().empty() ? std::string("the output") : agent->files().back()));
  ok = true;
  return true;
}
}  // namespace

void start(std::string_view text, std::string_view note) { start_impl(text, note, false); }

bool start_attached(std::string_view text, std::string& message) {
  g_capture = &message;
  const bool ok = start_impl(text, {}, true);
  g_capture = nullptr;
  return ok;
}

bool detach(std::string& message) {
  Agent* agent = g_agent;
  if (!agent || !g_started.load()) {
    message = "mlpd: this process is not being profiled";
    return false;
  }
  g_capture = &message;
  agent->shutdown();  // the last rounds, the file closed, the helper ended
  hooks::detach();    // callbacks out of the runtime, our sampler ended and its signal given back
  agent->drop_server();
  agent->release_memory();
  give_back_dump_signal();
  reset_exit_signals_after_fork();  // the handlers that are still ours go back to the default action
  const std::vector<std::string>& files = agent->files();
  say("mlpd: detached; wrote " + (files.empty() ? std::string("the output") : files.back()));
  g_capture = nullptr;
  if (!g_detached_metadata) g_detached_metadata = new (std::nothrow) std::vector<uint8_t>;
  if (g_detached_metadata) *g_detached_metadata = agent->metadata_now();
  agent->drop_metadata();
  g_agent = nullptr;
  g_started.store(false);
  return true;
}

bool profiling() { return g_agent && g_started.load(); }

void shutdown() {
  if (g_agent) g_agent->shutdown();
}

}  // namespace mlpd::agent
