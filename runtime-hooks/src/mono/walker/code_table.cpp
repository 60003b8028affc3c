// The stack walker's code table (code_table.h) and the jit_done, method_free and domain_unloading
// entry points of stack_walker.h that keep it.
#include "walker/code_table.h"

#include <new>

#include "mlpd/hooks/stack_walker.h"
#include "mono/layouts.h"
#include "walker/generic_instances.h"
#include "frame_shapes.h"  // walker/<MLPD_ARCH>/: the machine's JIT frame shapes

namespace mlpd::hooks::walker {

const CodeEntry kNativeEntry{};
std::mutex g_table_mutex;
CodeIndex<CodeEntry>* g_table = nullptr;
std::atomic<uint32_t> g_generation{1};
std::atomic<uint64_t> g_ranges_added{0}, g_ranges_repeated{0};

namespace {
void mark_gone(const CodeEntry* e) { const_cast<CodeEntry*>(e)->gone.store(true, std::memory_order_release); }
}  // namespace

bool make_code_table() {
  if (!g_table) g_table = new (std::nothrow) CodeIndex<CodeEntry>();
  return g_table != nullptr;
}

const CodeEntry* lookup_slow(uint64_t ip) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  const CodeEntry* e = g_table ? g_table->find(ip) : nullptr;
  return e ? e : &kNativeEntry;
}

void code_added(MonoMethod* m, const MonoJitInfo* ji, MonoMethod* jit_method, MonoDomain* domain, uint64_t start,
                uint64_t size) {
  // No row of layouts (internals off): our walker is off, and its table is not read.
  if (!g_table || !mono_layouts::g_selected || !m || !start || !size) return;
  // A method compiled as a wrapper (an icall such as string:FastAllocateString, a pinvoke, a
  // synchronized method): jit_done names the method asked for while the code is the wrapper's, and
  // Mono's walk names the wrapper (the JIT info's method) for its frames, as it then reports
  // jit_done for the wrapper too. Its frames are ours, named as Mono names them. Told apart from shared
  // generic code below: a wrapper is no open instantiation.
  if (jit_method && jit_method != m && mono_layouts::selected().wrapper_type(jit_method) != 0 && mono_layouts::selected().wrapper_type(m) == 0) {
    m = jit_method;
  }
  {
    // The same code again (Mono 6.12 raises jit_done each time it finds a method compiled already: a
    // call trampoline hit, a delegate, ldftn; 6.8 does on a few paths): nothing is new, and replacing
    // the entry would empty every thread's IP cache (a new generation) for nothing. Shared generic code
    // named for another instantiation is the same code too: its entry never names its frames (Mono's
    // walk or the learned generic pairs do, and those are keyed by the entry: kept).
    std::lock_guard<std::mutex> lock(g_table_mutex);
    const CodeEntry* old = g_table->find(start);
    if (old && old->start == start && old->end == start + size && old->domain == domain &&
        (old->method == m || (jit_method != m && (old->kind == kUnsure || old->ctx != kCtxNone)))) {
      g_ranges_repeated.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  auto* e = new (std::nothrow) CodeEntry;
  if (!e) return;
  e->start = start;
  e->end = start + size;
  e->method = m;
  e->domain = domain;
  classify(reinterpret_cast<const uint8_t*>(start), size, *e);
  // Shared generic code: jit_done names the instantiation asked for (m) while the code, and its JIT
  // info, belong to the shared method (jit_method), and Mono's walk names the instantiation it reads
  // from each frame's generic context, which a code range cannot tell: left to Mono. A generic
  // instance compiled for itself (jit_method == m: value-type instantiations, generic methods over
  // value types, or reference types when not shared) has code of its own, and Mono's walk names m
  // there, as we do.
  // Mono also compiles the shared method itself (jit_done then names it: jit_method == m, its
  // instantiation open): Mono's walk names the instantiation there too. Without
  // mono_method_get_context nothing tells these apart: every frame is left to Mono.
  // Where the JIT info says the frame keeps its generic context, frames are ours after all (named
  // through what Mono's walks taught us: see GenericSlot).
  bool shared = jit_method != m || !mono_optional.mono_method_get_context;
  if (!shared) {
    if (void* const* ctx = static_cast<void* const*>(mono_optional.mono_method_get_context(m))) {
      shared = mono_layouts::selected().open_instantiation(ctx[0]) || mono_layouts::selected().open_instantiation(ctx[1]);
    }
  }
  if (shared && (e->kind == kUnsure || !read_generic_jit_info(ji, jit_method, start, size, *e))) e->kind = kUnsure;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_table->add(e, mark_gone);  // the ranges it overlaps (reused code memory) are gone
  g_ranges_added.fetch_add(1, std::memory_order_relaxed);
  // Every thread's IP cache may hold this range as "not managed code" (a thread can run new code
  // before jit_done reaches us): those answers start over.
  g_generation.fetch_add(1, std::memory_order_release);
}

// A domain's ranges and a freed method's are found through the table's ordered indexes (code_index.h):
// logarithmic, not a scan of every range (issue 22).
void domain_unloading(MonoDomain* domain) {
  if (g_table) {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    g_table->remove_domain(domain, mark_gone);
  }
  forget_generic_instances();
}

void method_freed(MonoMethod* m) {
  if (!g_table) return;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_table->remove_method(m, mark_gone);
}

}  // namespace mlpd::hooks::walker
