// The stack walker's interface on a machine our walker does not read (stack_walker.cpp reads
// x86-64 frames; CMake builds this file instead elsewhere): our walker is permanently off and every
// backtrace is Mono's walk (mono_stack_walk_no_il), exactly as with MLPD_WALKER=mono on x86-64.
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "mlpd/arch/machine.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/hooks/stack_walker.h"
#include "mono_walk.h"

namespace mlpd::hooks::walker {

namespace {

// Backtraces made, for summary(): counted per thread (initial-exec TLS, no shared atomic per event) and
// added to g_total every 4096th time, at the thread's exit (a pthread key's destructor, which runs
// while the thread's TLS is still there) and by summary() for the calling thread.
thread_local constinit uint64_t tls_count __attribute__((tls_model("initial-exec"), visibility("hidden"))) = 0;
thread_local constinit bool tls_registered __attribute__((tls_model("initial-exec"), visibility("hidden"))) = false;
std::atomic<uint64_t> g_total{0};
pthread_key_t g_key;
bool g_key_ok = false;

void flush_count() {
  g_total.fetch_add(tls_count, std::memory_order_relaxed);
  tls_count = 0;
}

void thread_exit(void*) { flush_count(); }

}  // namespace

void init(bool, bool, bool) {
  if (!g_key_ok) g_key_ok = pthread_key_create(&g_key, thread_exit) == 0;
}

void code_added(MonoMethod*, const MonoJitInfo*, MonoMethod*, MonoDomain*, uint64_t, uint64_t) {}

void domain_unloading(MonoDomain*) {}

void method_freed(MonoMethod*) {}

uint32_t collect(MonoMethod** frames, uint32_t max, bool) {
  if (max == 0) return 0;
  const uint32_t n = mono_walk(frames, max);
  if (!tls_registered) [[unlikely]] {
    tls_registered = true;
    static constinit int marker = 0;
    if (g_key_ok) pthread_setspecific(g_key, &marker);  // a non-null value: the destructor runs at exit
  }
  if (++tls_count >= 4096) flush_count();
  return n;
}

std::string summary() {
  flush_count();
  return "mlpd: backtraces: 0 by our stack walker, " + std::to_string(g_total.load()) +
         " by mono_stack_walk_no_il (threads still running add theirs at exit); our walker off (not built for "
         "this machine: arch/" +
         arch::kName + ")";
}

}  // namespace mlpd::hooks::walker
