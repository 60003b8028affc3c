#include "process_hooks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

#include "agent_instance.h"
#include "exit_signals.h"

namespace mlpd::agent {

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


Agent* g_agent = nullptr;
std::atomic<bool> g_started{false};
// Attach: the metadata of the last detached agent (what it described; it seeds the next file). One
// copy: the detached agent's own store is emptied.
std::vector<uint8_t>* g_detached_metadata = nullptr;
bool g_hooks_registered = false;  // atexit and pthread_atfork: once per process

void on_runtime_shutdown_end() {
  if (g_agent) g_agent->shutdown();
}
bool live_round_now(int limit_ms) { return g_agent && g_agent->live_round_and_wait(limit_ms); }
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
  if (g_agent) {
    g_agent->runtime().after_fork_child();  // the parent's jitdump stays the parent's
    g_agent->forget_after_fork();
  }
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
  // .NET (docs/dotnet.md): the runtime's profiler variables when they name this library (the .NET-host
  // preload sets them; a user may have): the runtime read them before it started the agent, and a
  // .NET child must not inherit them.
  for (const char* path_var : {"CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64"}) {
    const char* path = std::getenv(path_var);
    if (!path || base_name(path) != ours) continue;
    for (const char* v : {"CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH",
                          "CORECLR_PROFILER_PATH_64"})
      ::unsetenv(v);
    break;
  }
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

}  // namespace mlpd::agent
