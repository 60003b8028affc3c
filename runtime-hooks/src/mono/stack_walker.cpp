// Our managed stack walker (stack_walker.h): its entry points, the cross-checks against Mono's walk and
// the learning that follows a walk of Mono's. Everything here may run on any managed thread inside an
// allocation: the fast path takes no lock, makes no syscall and allocates nothing (a thread's first
// backtrace allocates its cache; learning and cache misses take a mutex, rarely).
// The walker's rooms (runtime-hooks/src/mono/walker/): walk.* (the fast walk), code_table.* (the JIT'd code
// ranges; jit_done, method_free, domain_unloading), thread_state.* (per-thread caches and counts),
// native_chains.* (the learned native chains, libunwind), generic_instances.* (shared generic code),
// <isa>/frame_shapes.* (x86_64, aarch64: the machine code: prologues, trampolines, frame steps, the LMF); Mono 6.8's
// layouts in mono/v6_8/.
#include "mlpd/hooks/stack_walker.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "mlpd/format.h"
#include "mlpd/hooks/mono_api.h"
#include "mono_walk.h"
#include "walker/code_table.h"
#include "walker/generic_instances.h"
#include "walker/native_chains.h"
#include "walker/thread_state.h"
#include "walker/walk.h"
#include "frame_shapes.h"  // walker/<MLPD_ARCH>/: the machine's JIT frame shapes

namespace mlpd::hooks::walker {

namespace {

std::atomic<int> g_global_checks{64};  // first fast backtraces all cross-checked
std::atomic<int> g_lmf_checks{64};     // first backtraces started from an LMF all cross-checked
std::atomic<int> g_lmf_top_checks{64};  // first backtraces ended at the first LMF all cross-checked
std::atomic<bool> g_use_ours{false};
bool g_verbose = false;
bool g_check_all = false;  // MLPD_WALKER=check: every backtrace of ours is compared with Mono's walk

// ---- Mono's walk -------------------------------------------------------------------------------

// mono_walk(): mono_walk.h.

bool same(MonoMethod* const* a, uint32_t na, MonoMethod* const* b, uint32_t nb) {
  return na == nb && std::memcmp(a, b, na * sizeof(MonoMethod*)) == 0;
}

void disable(const char* why) {
  if (!g_use_ours.exchange(false)) return;
  if (g_verbose) {
    std::string line = std::string("mlpd: our stack walker disagreed with Mono's (") + why +
                       "); backtraces use mono_stack_walk_no_il from now on\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
}

// ---- learning ----------------------------------------------------------------------------------

// After Mono's walk gave `expected`: learn what was missing and keep it only if our walk then agrees
// (a chain that does not is simply not kept: learning is a guess; only a kept chain that later
// disagrees switches our walker off).
void learn(uintptr_t anchor, ThreadWalk& t, int why, MonoMethod* const* expected, uint32_t n_expected,
           uint32_t max, bool lmf) {
  if (g_learn_budget.load(std::memory_order_relaxed) <= 0) return;
  // Never wait: another thread learning now is enough (and no lock order with the loader's locks).
  std::unique_lock<std::mutex> lock(g_learn_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (g_learn_budget.fetch_sub(1, std::memory_order_relaxed) <= 0) return;
  if (!bind_unwind()) {
    g_learn_budget.store(0, std::memory_order_relaxed);
    return;
  }
  static Signature bottom, top;  // guarded by g_learn_mutex
  MonoMethod* ours[format::kMaxFrames];
  FastResult r;
  if (why == kNoBottom) {
    if (!learn_bottom(anchor, t, bottom)) return;
    why = fast_walk(anchor, t, ours, max, &bottom, nullptr, r);
    if (why == kNoBottom) return;
    if (why == kOk) {
      if (same(ours, r.n, expected, n_expected)) publish(*g_bottom, bottom);
      return;
    }
    if (why != kNoTop) return;
    // The top is unknown too: learn it with this bottom, and keep both only if the whole walk agrees.
    if (!learn_top(r.top_ip, r.top_sp, r.top_fp, t, top)) return;
    if (fast_walk(anchor, t, ours, max, &bottom, &top, r) != kOk) return;
    if (same(ours, r.n, expected, n_expected)) {
      publish(*g_bottom, bottom);
      publish(*g_top, top);
    }
    return;
  }
  if (why != kNoTop) return;
  if (fast_walk(anchor, t, ours, max, nullptr, nullptr, r, nullptr, lmf) != kNoTop) return;
  if (!learn_top(r.top_ip, r.top_sp, r.top_fp, t, top)) return;
  if (fast_walk(anchor, t, ours, max, nullptr, &top, r, nullptr, lmf) != kOk) return;
  if (same(ours, r.n, expected, n_expected)) publish(*g_top, top);
}

// After Mono's walk gave `expected` for a walk of ours that met shared generic frames it did not know:
// walk again, noting those frames' (entry, context) pairs, and learn what Mono named for each, when
// every other frame of ours is the frame Mono reported at the same place (all of them when our walk
// was complete, the frames we had before it stopped otherwise, at least one).
void learn_generic(uintptr_t anchor, ThreadWalk& t, MonoMethod* const* expected, uint32_t n_expected, uint32_t max,
                   bool lmf) {
  MonoMethod* ours[format::kMaxFrames];
  FastResult r;
  Misses misses;
  const int why = fast_walk(anchor, t, ours, max, nullptr, nullptr, r, &misses, lmf);
  if (why == kNoBottom || misses.n == 0) return;
  if (why == kOk ? r.n != n_expected : r.n > n_expected) return;
  if (r.n <= misses.n) return;  // nothing of ours to hold the places together
  for (uint32_t i = 0; i < r.n; ++i) {
    if (ours[i] && ours[i] != expected[i]) return;
  }
  std::unique_lock<std::mutex> lock(g_generic_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (uint32_t k = 0; k < misses.n; ++k) {
    MonoMethod* m = expected[misses.index[k]];
    if (!m || !generic_insert(misses.entry[k], misses.ctx[k], m)) return;
  }
}

// AOT-compiled code (issue 33): no jit_done ever names its ranges, so a frame in it ended our walk
// (an unknown native caller above the managed frames, or a bottom chain whose managed return address
// is not JIT code) and the event went to Mono's walk, which names it (loading its JIT info from the
// AOT image). The range is learned here, after that walk, as jit_done would have given it: the
// runtime's JIT info of the address (already loaded by the walk just made), when it is code no
// jit_done reported. Its frame shape is read from its prologue like a JIT'd method's; the usual
// cross-checks hold. Bounded: each address is asked about once per thread (a small cache), and at
// most kAotLearnBudget ranges are learned.
constexpr int kAotLearnBudget = 65536;
std::atomic<int> g_aot_budget{kAotLearnBudget};
std::atomic<uint64_t> g_aot_learned{0};

void learn_aot_ip(ThreadWalk& t, uint64_t ip) {
  if (!ip || g_aot_budget.load(std::memory_order_relaxed) <= 0) return;
  // Asked about lately by this thread: nothing new (a native caller stays native).
  uint64_t& slot = t.aot_asked[(ip >> 4) & 15];
  if (slot == ip) return;
  slot = ip;
  MonoDomain* domain = mono.mono_domain_get();
  if (!domain) return;
  MonoJitInfo* ji = mono.mono_jit_info_table_find(domain, reinterpret_cast<char*>(ip));
  if (!ji) return;
  MonoMethod* m = mono.mono_jit_info_get_method(ji);
  const auto start = reinterpret_cast<uint64_t>(mono.mono_jit_info_get_code_start(ji));
  const auto size = static_cast<uint64_t>(mono.mono_jit_info_get_code_size(ji));
  if (!m || !start || !size || ip - start >= size) return;
  if (lookup_slow(ip)->kind != kNative) return;  // known already (its jit_done came meanwhile)
  g_aot_budget.fetch_sub(1, std::memory_order_relaxed);
  code_added(m, ji, m, domain, start, size);
  g_aot_learned.fetch_add(1, std::memory_order_relaxed);
}

// After a fast walk that ended with `why` (r its partial result): the addresses where it met code it
// did not know, each learned if it is AOT code.
void learn_aot(uintptr_t anchor, ThreadWalk& t, int why, const FastResult& r, bool lmf) {
  if (why == kNoTop) {
    learn_aot_ip(t, r.top_ip);  // above the managed frames, or between two of them
    return;
  }
  const Bounds b{anchor, t.hi};
  if (why == kNoBottom) {
    // The learned chains below that match, whose managed return address is not JIT code.
    const uint32_t nb = g_bottom->count.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < nb; ++i) {
      const Signature& sig = g_bottom->sigs[i];
      if (slots_match(sig, anchor, b) && readable(b, anchor, sig.managed_slot)) learn_aot_ip(t, load(anchor + sig.managed_slot));
    }
    return;
  }
  if (why == kNoManaged && r.n == 0 && lmf) {  // an allocation's walk from the LMF into AOT code
    uint64_t ip, sp, fp;
    if (lmf_frame(mono_layouts::selected(), t, b, ip, sp, fp) == kLmfFrame) learn_aot_ip(t, ip);
  }
}

// Cross-checks a fast result against Mono's walk while checks are due (the first backtraces, the first
// uses of each signature). Returns false (and switches ours off) on a difference.
bool cross_check(FastResult& r, MonoMethod** frames, uint32_t max) {
  bool due = g_check_all;
  auto take = [&due](std::atomic<int>& c) {
    if (c.load(std::memory_order_relaxed) > 0 && c.fetch_sub(1, std::memory_order_relaxed) > 0) due = true;
  };
  take(g_global_checks);
  if (r.bottom) take(r.bottom->checks_left);
  if (r.top) take(r.top->checks_left);
  if (r.generic) take(r.generic->checks_left);
  if (r.lmf) take(g_lmf_checks);
  if (r.lmf_top || r.segments) take(g_lmf_top_checks);
  if (!due) return true;
  MonoMethod* theirs[format::kMaxFrames];
  const uint32_t n = mono_walk(theirs, max);
  if (same(frames, r.n, theirs, n)) return true;
  disable("a backtrace");
  std::memcpy(frames, theirs, n * sizeof(MonoMethod*));
  r.n = n;
  return false;
}

}  // namespace

void init(bool use_ours, bool check_all, bool verbose) {
  g_verbose = verbose;
  g_check_all = check_all;
  const bool table = make_code_table();
  take_pid();
  const bool chains = make_signature_sets();
  const bool key = make_thread_key();
  g_use_ours.store(use_ours && walk_for(mono_layouts::g_selected) && table && chains && key);
}

__attribute__((noinline)) uint32_t collect(MonoMethod** frames, uint32_t max, bool alloc) {
  // Our frame is the fixed point the learned native chains are measured from.
  const auto anchor = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  ThreadWalk* t = g_use_ours.load(std::memory_order_relaxed) ? thread_walk() : nullptr;
  if (!t || !t->bounds_ok) return mono_walk(frames, max);
  t->native_tag = (static_cast<uintptr_t>(g_generation.load(std::memory_order_acquire)) << 1) | 1;
  FastResult r;
  const int why = fast_walk(anchor, *t, frames, max, nullptr, nullptr, r, nullptr, alloc);
  if (why == kOk) {
    cross_check(r, frames, max);
    t->via_lmf += r.lmf;
    if (++t->fast >= 4096) flush_counts(*t);
    return r.n;
  }
  const uint32_t n = mono_walk(frames, max);
  if (++t->slow[why] >= 4096) flush_counts(*t);
  learn_aot(anchor, *t, why, r, alloc);
  if (why == kNoGeneric) {
    learn_generic(anchor, *t, frames, n, max, alloc);
  } else if (why != kNoManaged) {
    learn(anchor, *t, why, frames, n, max, alloc);
  }
  return n;
}

std::string summary() {
  if (ThreadWalk* t = tls_walk) flush_counts(*t);
  const uint64_t fast = g_fast_total.load();
  uint64_t slow = 0;
  for (auto& c : g_slow_total) slow += c.load();
  return "mlpd: backtraces: " + std::to_string(fast) + " by our stack walker, " + std::to_string(slow) +
         " by mono_stack_walk_no_il (unknown native chain below/managed frame/native chain above/generic "
         "context: " +
         std::to_string(g_slow_total[kNoBottom].load()) + "/" + std::to_string(g_slow_total[kNoManaged].load()) + "/" +
         std::to_string(g_slow_total[kNoTop].load()) + "/" + std::to_string(g_slow_total[kNoGeneric].load()) +
         "; threads still running add theirs at exit); our walker " +
         (g_use_ours.load() ? "on" : "off") + "; " + std::to_string(g_bottom ? g_bottom->count.load() : 0) +
         "+" + std::to_string(g_top ? g_top->count.load() : 0) + " native chains learned; " +
         std::to_string(g_lmf_total.load()) + " of ours started from the LMF; code ranges: " +
         std::to_string(g_ranges_added.load()) + " added, " + std::to_string(g_ranges_repeated.load()) +
         " repeated jit_done ignored, " + std::to_string(g_aot_learned.load()) +
         " of AOT-compiled code learned after Mono's walk";
}

}  // namespace mlpd::hooks::walker
