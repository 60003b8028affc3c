#include "mlpd/agent/agent.h"

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

#include "agent_instance.h"
#include "exit_signals.h"
#include "process_hooks.h"
#include "runtime_config.h"
#include "mlpd/agent/command_server.h"
#include "mlpd/agent/options.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/arch/machine.h"
#include "mlpd/output_cut.h"
#include "mlpd/rt/buffer_packer.h"
#include "mlpd/rt/clock.h"
#include "mlpd/sink.h"

namespace mlpd::agent {

namespace {

mlpd::OutputKind sink_kind(ResolvedOutput::Kind k) {
  switch (k) {
    case ResolvedOutput::Kind::Pipe: return mlpd::OutputKind::Pipe;
    case ResolvedOutput::Kind::Fd: return mlpd::OutputKind::Fd;
    default: return mlpd::OutputKind::File;
  }
}

// `late`: attached to a running runtime (its attach entry); returns whether profiling started.
bool start_impl(std::string_view text, std::string_view note, bool late, runtime::Runtime& runtime) {
  // Not this runtime's process: do nothing, write nothing, print nothing.
  if (!runtime.present()) return false;
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
  runtime::Config config;
  if (!runtime_config(options, runtime, late, std::max(1u, std::thread::hardware_concurrency()), config, error)) {
    say(error);
    return false;
  }
  if (late && !late_options_allowed(runtime, config, error)) {
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
  auto* agent = new (std::nothrow) Agent(std::move(options), runtime);
  if (!agent) return false;
  const Options& o = agent->options();
  // The output first: if it cannot be opened, the runtime is left untouched (no callbacks, no allocation
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
  if (o.metrics_port) agent->start_metrics();
  if (std::string why; !agent->write_header(why)) {
    agent->drop_server();
    say((why.empty() ? "mlpd: cannot write the output header" : why) + "; profiling is off");
    return false;
  }
  // Then the runtime. It checks what only it can (Mono: the callspec, being early enough); if that
  // fails, the file just created is removed again, so a refused configuration leaves nothing behind.
  runtime::Env env;
  env.shared = &agent->shared();
  env.registry = &agent->registry();
  env.meta = &agent->meta();
  env.on_shutdown_end = on_runtime_shutdown_end;
  env.live_round = live_round_now;
  // Flight recorder: a heapshot a program asked for is dumped.
  if (o.ring_bytes) env.after_trigger_heapshot = after_trigger_heapshot;
  env.wake_helper = agent->shared().wake_helper;
  env.wake_ctx = agent->shared().wake_ctx;
  if (!runtime.install(config, env, error)) {
    agent->drop_server();
    agent->abandon_output(where);
    say("mlpd: " + error + "; profiling is off");
    return false;
  }
  if (late && g_detached_metadata && !agent->seed_metadata(*g_detached_metadata)) {
    runtime.detach();
    agent->drop_server();
    agent->abandon_output(where);
    say("mlpd: cannot write to the output; profiling is off");
    return false;
  }
  if (o.jitdump || o.perfmap) {  // a failure is one line; profiling goes on without the perf files
    const runtime::PerfOutputConfig pc{o.jitdump, o.jitdump_dir, o.perfmap};
    if (!runtime.start_perf_output(pc, error)) say(error + "; going on without it");
  }
  g_agent = agent;
  agent->start_push();  // before the helper, which hands it the profiles
  if (!agent->start_helper()) {
    agent->drop_server();
    say("mlpd: cannot start the helper thread; profiling is off");
    runtime.stop();
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
  agent->announce_server();
  if (o.verbose) {
    say("mlpd: profiling, options '" + o.text + "', clock " + clock_name);
    say("mlpd: " + runtime.summary());
  }
  if (late && o.calls && !runtime.late_calls_notice().empty()) say(runtime.late_calls_notice());
  if (late) say("mlpd: profiling into " + (agent->files().empty() ? std::string("the output") : agent->files().back()));
  ok = true;
  return true;
}
}  // namespace

void start(std::string_view text, runtime::Runtime& runtime, std::string_view note) {
  start_impl(text, note, false, runtime);
}

bool start_attached(std::string_view text, runtime::Runtime& runtime, std::string& message) {
  g_capture = &message;
  const bool ok = start_impl(text, {}, true, runtime);
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
  agent->runtime().detach();  // callbacks out of the runtime, our sampler ended and its signal given back
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
