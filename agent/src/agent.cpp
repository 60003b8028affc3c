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

#include "agent_instance.h"
#include "attach_options.h"
#include "exit_signals.h"
#include "process_hooks.h"
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

mlpd::OutputKind sink_kind(ResolvedOutput::Kind k) {
  switch (k) {
    case ResolvedOutput::Kind::Pipe: return mlpd::OutputKind::Pipe;
    case ResolvedOutput::Kind::Fd: return mlpd::OutputKind::Fd;
    default: return mlpd::OutputKind::File;
  }
}

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
