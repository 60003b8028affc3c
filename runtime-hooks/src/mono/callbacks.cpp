// What the callback files share (callbacks.h): the collecting-thread flag, the backtrace walk, the
// lazy-description settings, the live-thread list and the metadata helper.
#include "callbacks.h"

#include "described.h"
#include "mlpd/hooks/stack_walker.h"
#include "mlpd/rt/clock.h"

namespace mlpd::hooks::cb {

thread_local constinit bool tls_in_own_gc __attribute__((tls_model("initial-exec"), visibility("hidden"))) = false;

bool g_lazy_methods = false;
bool g_lazy_classes = false;
std::atomic<bool> g_unloaded{false};
mono_runtime::Runtime* g_runtime = nullptr;

std::mutex g_threads_mutex;
std::unordered_set<uint64_t>* g_live_threads = nullptr;

__attribute__((noinline)) const rt::Backtrace* walk_backtrace(rt::Backtrace& bt, uint32_t frames, bool alloc) {
  MonoMethod* walked[format::kMaxFrames];
  const uint32_t n = walker::collect(walked, frames, alloc);  // ours, or mono_stack_walk_no_il when unsure
  bt.count = n;
  for (uint32_t i = 0; i < n; ++i) {
    MonoMethod* m = walked[n - 1 - i];  // the walk gives innermost first
    described::ensure_method_cached(m);  // per-thread cache: no lock for methods seen before
    bt.frames[i] = u(m);
  }
  return &bt;
}

void meta_simple(EventKind kind, uint64_t ptr, uint64_t ptr2, const char* name) {
  Event e;
  e.kind = kind;
  e.ptr = ptr;
  e.ptr2 = ptr2;
  if (name) e.name = name;
  state::g->env.meta->add(e, rt::now_ns);
}

}  // namespace mlpd::hooks::cb
