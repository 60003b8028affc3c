// Mono's side of the perf files: names for methods and code buffers, the thread id, the code bytes.
#include "mono/perf_callbacks.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>

#include "capture/jitdump.h"
#include "mlpd/hooks/mono_api.h"

namespace mlpd::hooks::perf {

namespace {

Writer* g_writer = nullptr;  // never destroyed: a JIT thread may be in load() at exit
std::atomic<bool> g_enabled{false};
std::atomic<bool> g_failed_said{false};

thread_local uint32_t tls_tid __attribute__((tls_model("initial-exec"))) = 0;

uint32_t thread_id() {
  if (tls_tid == 0) tls_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tls_tid;
}

void say(const std::string& line) {
  std::string l = line + "\n";
  (void)!::write(STDERR_FILENO, l.data(), l.size());
}

void say_failure_once(const std::string& failure) {
  if (!failure.empty() && !g_failed_said.exchange(true)) say(failure);
}

const char* buffer_kind(MonoProfilerCodeBufferType type) {
  switch (type) {
    case MONO_PROFILER_CODE_BUFFER_METHOD: return "method";
    case MONO_PROFILER_CODE_BUFFER_METHOD_TRAMPOLINE: return "method_trampoline";
    case MONO_PROFILER_CODE_BUFFER_UNBOX_TRAMPOLINE: return "unbox_trampoline";
    case MONO_PROFILER_CODE_BUFFER_IMT_TRAMPOLINE: return "imt_trampoline";
    case MONO_PROFILER_CODE_BUFFER_GENERICS_TRAMPOLINE: return "generics_trampoline";
    case MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE: return "specific_trampoline";
    case MONO_PROFILER_CODE_BUFFER_HELPER: return "helper";
    case MONO_PROFILER_CODE_BUFFER_MONITOR: return "monitor";
    case MONO_PROFILER_CODE_BUFFER_DELEGATE_INVOKE: return "delegate_invoke";
    case MONO_PROFILER_CODE_BUFFER_EXCEPTION_HANDLING: return "exception_handling";
    default: return "code_buffer";
  }
}

}  // namespace

bool start(const OutputConfig& config, std::string& error) {
  if (!config.jitdump && !config.perfmap) return true;
  auto* w = new (std::nothrow) Writer;
  if (!w) {
    error = "mlpd: jitdump/perfmap: out of memory";
    return false;
  }
  WriterConfig wc;
  wc.jitdump = config.jitdump;
  wc.jitdump_dir = config.jitdump_dir;
  wc.perfmap = config.perfmap;
  wc.pid = static_cast<uint32_t>(getpid());
  wc.wake = config.wake;
  wc.wake_ctx = config.wake_ctx;
  if (!w->open(wc, error)) {
    delete w;
    return false;
  }
  g_writer = w;
  g_enabled.store(true, std::memory_order_release);
  return true;
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void method_jitted(MonoMethod* method, uint64_t start, uint64_t size, const std::string* name) {
  if (!enabled() || !method || start == 0) return;
  const uint64_t now = monotonic_ns();
  const auto code = reinterpret_cast<const void*>(start);
  if (name) {
    g_writer->load(name->data(), name->size(), start, size, code, now, thread_id());
    return;
  }
  char* made = mono.mono_method_full_name(method, 1);
  g_writer->load(made, made ? std::strlen(made) : 0, start, size, code, now, thread_id());
  if (made) mono.mono_free(made);
}

void code_buffer(const void* buffer, uint64_t size, MonoProfilerCodeBufferType type, const void* data) {
  // A method's own buffer: jit_done describes it, with its name (this one comes first, unnamed).
  if (!enabled() || !buffer || size == 0 || type == MONO_PROFILER_CODE_BUFFER_METHOD) return;
  const uint64_t now = monotonic_ns();
  // "[mono] specific_trampoline generic_trampoline_jit": perf shows it as the symbol of that range.
  char name[160];
  const char* detail = type == MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE && data ? static_cast<const char*>(data) : nullptr;
  int n = detail ? std::snprintf(name, sizeof name, "[mono] %s %.100s", buffer_kind(type), detail)
                 : std::snprintf(name, sizeof name, "[mono] %s", buffer_kind(type));
  if (n < 0) n = 0;
  g_writer->load(name, std::min<size_t>(static_cast<size_t>(n), sizeof name - 1), reinterpret_cast<uint64_t>(buffer),
                 size, buffer, now, thread_id());
}

void drain() {
  if (!g_writer) return;
  std::string failure;
  if (!g_writer->drain(failure)) say_failure_once(failure);
}

void finish(bool verbose) {
  if (!g_writer) return;
  g_enabled.store(false, std::memory_order_release);
  std::string failure;
  if (!g_writer->finish(failure)) say_failure_once(failure);
  const WriterStats s = g_writer->stats();
  if (s.dropped) {
    say("mlpd: jitdump/perfmap: " + std::to_string(s.dropped) +
        " code loads not written (the queue was full: the helper thread fell behind)");
  }
  if (verbose) {
    say("mlpd: perf: " + std::to_string(s.records) + " code loads written" +
        (g_writer->jitdump_path().empty() ? "" : " to " + g_writer->jitdump_path() + " (" + std::to_string(s.dump_bytes) + " bytes)") +
        (g_writer->perfmap_path().empty() ? "" : ", " + g_writer->perfmap_path()));
  }
}

void forget_after_fork() {
  g_enabled.store(false, std::memory_order_release);
  if (g_writer) g_writer->forget_after_fork();
}

}  // namespace mlpd::hooks::perf
