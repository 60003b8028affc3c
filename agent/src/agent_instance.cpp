#include "agent_instance.h"

#include <signal.h>
#include <unistd.h>

#include <ctime>
#include <fstream>

#include "process_hooks.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/arch/machine.h"
#include "mlpd/output_cut.h"
#include "mlpd/rt/clock.h"

namespace mlpd::agent {

namespace {

// push=: the Pyroscope name of every push, SERVICE{pid=...,runtime=...,labels}. SERVICE is
// push-labels='s service_name, else the program: the first argument of the command line that ends in
// .exe or .dll (mono app.exe, dotnet app.dll), without it, else the executable's name.
std::string push_name(const Options& o, std::string_view runtime_name) {
  std::string service;
  std::vector<std::pair<std::string, std::string>> labels{{"pid", std::to_string(getpid())}};
  if (!runtime_name.empty()) labels.emplace_back("runtime", std::string(runtime_name));
  for (const auto& [k, v] : o.push_labels) {
    if (k == "service_name") {
      service = v;
      continue;
    }
    bool replaced = false;
    for (auto& [lk, lv] : labels)
      if (lk == k) {
        lv = v;
        replaced = true;
      }
    if (!replaced) labels.emplace_back(k, v);
  }
  if (service.empty()) {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string arg, first;
    while (std::getline(in, arg, '\0')) {
      if (first.empty()) first = arg;
      const bool exe = arg.size() > 4 && (arg.compare(arg.size() - 4, 4, ".exe") == 0 || arg.compare(arg.size() - 4, 4, ".dll") == 0);
      if (exe) {
        service = arg.substr(0, arg.size() - 4);
        break;
      }
    }
    if (service.empty()) service = first;
    if (const size_t slash = service.find_last_of('/'); slash != std::string::npos) service.erase(0, slash + 1);
    for (char& c : service) {  // the characters a name cannot hold
      const auto u = static_cast<unsigned char>(c);
      if (u <= ' ' || u == 0x7f || c == ',' || c == '=' || c == '{' || c == '}' || c == '"') c = '_';
    }
    if (service.empty()) service = "unknown_service";
  }
  std::string name = service + "{";
  for (size_t i = 0; i < labels.size(); ++i) name += (i ? "," : "") + labels[i].first + "=" + labels[i].second;
  return name + "}";
}

}  // namespace

Agent::Agent(Options options, runtime::Runtime& runtime)
    : options_(std::move(options)),
      runtime_(runtime),
      pool_(kBufferBytes, kMaxBuffers, kHeapWalkReserve),
      meta_(static_cast<uint64_t>(pthread_self()), rt::now_ns()),
      registry_(shared_),
      push_(options_.push_url.empty() ? nullptr
                                      : std::make_unique<PushSender>(options_.push_url, options_.push_token, options_.verbose)),
      helper_(HelperParts{&options_, &pool_, &shared_, &meta_, &registry_, &server_, &metrics_, this, &runtime_,
                          push_.get(), push_ ? push_name(options_, runtime_.name()) : std::string()}) {
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

std::string Agent::dump(const std::string& file, bool round_first) {
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

bool Agent::write_header(std::string& why) {
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

void Agent::start_server() {
  auto server = std::make_unique<CommandServer>(command_handlers());
  std::string error;
  if (!server->start(options_.bind, options_.port.value_or(0), error)) {
    say("mlpd: command port: " + error + "; profiling goes on without the command port");
    return;
  }
  server_ = std::move(server);
}

void Agent::start_metrics() {
  auto server = std::make_unique<MetricsServer>(PeerRules{options_.port_allow_any, options_.port_allow_uids},
                                                [this] { return helper_.metrics_text(); });
  std::string error;
  if (!server->start(options_.bind, options_.metrics_port.value_or(0), error)) {
    say("mlpd: metrics: " + error + "; profiling goes on without the metrics port");
    return;
  }
  metrics_ = std::move(server);
}

void Agent::start_push() {
  if (!push_) return;
  std::string error;
  if (!push_->start(error)) {
    say("mlpd: push: " + error + "; profiling goes on without pushing");
    return;
  }
  if (options_.verbose)
    say("mlpd: push: every " + std::to_string(options_.push_interval_s) + " s to " + options_.push_url);
}

void Agent::announce_server() {
  const std::string& a = options_.bind;
  const bool loopback = a.rfind("127.", 0) == 0 || a == "::1" || a == "::ffff:127.0.0.1";
  const std::string reach = loopback                 ? ""
                            : options_.port_allow_any ? " (reachable from other hosts, without authentication)"
                                                      : " (other hosts are refused: they cannot be identified; see port-allow)";
  if (server_) say("mlpd: command port " + server_->endpoint() + reach);
  if (metrics_) say("mlpd: metrics at http://" + metrics_->endpoint() + "/metrics" + reach);
}

void Agent::shutdown() {
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

void Agent::finish() {
  runtime_.end_remaining_threads();  // before the final round, so they are written
  runtime_.stop();
  // Bounded: an output that stops draining (a pipe whose reader never reads) must not hang the
  // host's exit. After the limit the data still in flight is given up, with one message.
  const bool helper_done = helper_.stop(kExitWriteLimitSeconds);
  // push=: the last interval was queued by the helper's last round; bounded (never holds the exit
  // more than about PushSender::kFinishMs). A sender left stuck is never freed.
  if (push_ && !push_->finish()) (void)push_.release();
  if (!helper_done) {
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
    // Issue 33: code the runtime ran without enter/leave events (Mono: AOT-compiled images).
    if (options_.calls) {
      const std::string notice = runtime_.calls_notice();
      if (!notice.empty()) say(notice);
    }
  }
}

void Agent::forget_after_fork() {
  shutting_down_.store(true);
  shutdown_done_.store(true);  // nothing to finish here: exit handlers return at once
  failed_ = true;
  runtime_.stop();
  registry_.forget_in_fork_child();
  if (server_) server_->forget_after_fork();  // the parent serves the port, not the child
  if (metrics_) metrics_->forget_after_fork();
  if (push_) push_->forget_after_fork();  // its thread is the parent's
  if (sink_) sink_->abandon();
}

CommandHandlers Agent::command_handlers() {
  CommandHandlers h;
  if (runtime_.heapshots_available()) {
    h.request_heapshot = [this] { return runtime_.request_heapshot(); };  // never blocks
    h.heapshots_done = [this] { return runtime_.heapshots_done(); };
    h.heapshot_refusal = [this] { return runtime_.heapshot_refusal(); };
  }
  h.stats = [this] { return helper_.stats_line(); };
  h.event_mask = [this] { return runtime_.event_mask(); };
  h.set_event_mask = [this](uint32_t mask) { runtime_.set_event_mask(mask); };
  h.calls_enabled = [this] { return runtime_.calls_enabled(); };
  h.call_depth = [this] { return runtime_.call_depth(); };
  h.set_call_depth = [this](uint32_t depth) { runtime_.set_call_depth(depth); };
  h.pause = [this] { return runtime_.pause(); };
  h.resume = [this] { return runtime_.resume(); };
  h.start_call_depth = options_.calldepth;
  if (options_.ring_bytes) h.dump = [this](const std::string& file) { return dump(file, true); };
  h.compat = options_.compat;
  h.allow_any_user = options_.port_allow_any;
  h.allowed_uids = options_.port_allow_uids;
  return h;
}

bool Agent::rotation_due() {
  if (!rotation_on(options_) || failed_) return false;
  if (options_.rotate_bytes && sink_->written() >= options_.rotate_bytes) return true;
  return options_.rotate_ms &&
         std::chrono::steady_clock::now() - file_started_ >= std::chrono::milliseconds(options_.rotate_ms);
}

bool Agent::next_file(const std::vector<uint8_t>& metadata) {
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

void Agent::service_requests() {
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

void Agent::report_failure() {
  if (failed_) return;
  failed_ = true;
  runtime_.stop();  // the program goes on, unprofiled
  std::string e = rotate_error_.empty() ? sink_->error() : rotate_error_;
  if (e.empty()) e = "mlpd: cannot write to " + sink_->describe();
  if (e.find("profiling stopped") == std::string::npos) e += "; profiling stopped";
  say(e);
}

}  // namespace mlpd::agent
