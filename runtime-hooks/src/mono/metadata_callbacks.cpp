// Metadata callbacks: the runtime's start and shutdown, threads, domains, contexts, images,
// assemblies, classes and vtables, JIT'd code and code buffers (each to the MetaLog, or to the
// described cache: described.h), and what a late start describes as loaded already.
#include <string>

#include "callbacks.h"
#include "described.h"
#include "heapshot_engine.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/hooks/late_describer.h"
#include "mlpd/hooks/mono_api.h"
#include "mono/perf_callbacks.h"
#include "mlpd/hooks/runtime_counters.h"
#include "mlpd/hooks/stack_walker.h"
#include "mlpd/rt/clock.h"
#include "mono/optional.h"
#include "capture/os_threads.h"

namespace mlpd::hooks::cb {

using namespace mlpd::format;
using namespace state;
using described::ensure_class;
using described::ensure_image;
using rt::now_ns;

namespace {

void assembly_event(EventKind kind, MonoAssembly* a) {
  MonoImage* image = mono.mono_assembly_get_image(a);
  ensure_image(image);
  std::string name = take_mono_string(mono.mono_stringify_assembly_name(mono.mono_assembly_get_name(a)));
  meta_simple(kind, u(a), u(image), name.c_str());
}
}  // namespace

void on_runtime_initialized(MonoProfiler*) {
  g_runtime_ready.store(true, std::memory_order_release);
  if (active()) register_log_profiler_icalls();  // Mono.Profiler.Log.LogProfiler, as Mono's profiler
  if (active()) runtime_counters_start();  // Mono's counters exist now (sampled by the helper)
  if (g->env.on_runtime_initialized) g->env.on_runtime_initialized();
}
void on_shutdown_begin(MonoProfiler*) {
  // The AOT id of the entry assembly, when it was AOT-compiled (as Mono's profiler writes it).
  // mono_runtime_get_aotid is exported by the runtime but not in its public headers.
  if (auto get = mono_optional.mono_runtime_get_aotid; get && active()) {
    if (char* id = get()) {
      Event e;
      e.kind = EventKind::aot_id;
      e.name = take_mono_string(id);
      g->env.meta->add(e, now_ns);
    }
  }
  // The finalizer thread ends during the shutdown: the drain no longer waits for it to describe
  // AOT frames (new ones from now on cut their samples, counted: "Samples cut (frame not named)").
  if (!g->cfg.late) stop_describer();
  if (active()) heapshot::shutdown_begin();  // heapshot-on-shutdown: a collection on this thread
  if (g->env.on_shutdown_begin) g->env.on_shutdown_begin();
}
void on_shutdown_end(MonoProfiler*) {
  if (g->env.on_shutdown_end) g->env.on_shutdown_end();
}

void on_thread_started(MonoProfiler*, uintptr_t tid) {
  if (!active()) return;
  thread_ids::started(tid);  // its OS id, for the per-thread CPU counters
  meta_simple(EventKind::thread_start, tid);
  std::lock_guard<std::mutex> lock(g_threads_mutex);
  g_live_threads->insert(tid);
}
void on_thread_stopped(MonoProfiler*, uintptr_t tid) {
  if (!active()) return;
  {
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    if (!g_live_threads->erase(tid)) return;  // ended already (stopped and exited both report)
  }
  meta_simple(EventKind::thread_end, tid);
}
void on_thread_name(MonoProfiler*, uintptr_t tid, const char* name) {
  if (!active()) return;
  thread_ids::named(tid, name);
  meta_simple(EventKind::thread_name, tid, 0, name ? name : "");
}
void on_domain_loaded(MonoProfiler*, MonoDomain* d) {
  if (active()) meta_simple(EventKind::domain_load, static_cast<uint64_t>(mono.mono_domain_get_id(d)));
}
void on_domain_unloading(MonoProfiler*, MonoDomain* d) {
  g_unloaded.store(true, std::memory_order_relaxed);
  walker::domain_unloading(d);  // its code memory is about to be freed and reused
  if (active()) meta_simple(EventKind::domain_unload, static_cast<uint64_t>(mono.mono_domain_get_id(d)));
}
void on_domain_name(MonoProfiler*, MonoDomain* d, const char* name) {
  if (active()) meta_simple(EventKind::domain_name, static_cast<uint64_t>(mono.mono_domain_get_id(d)), 0, name);
}
void on_context_loaded(MonoProfiler*, MonoAppContext* c) {
  if (active())
    meta_simple(EventKind::context_load, static_cast<uint64_t>(mono.mono_context_get_id(c)),
                static_cast<uint64_t>(mono.mono_context_get_domain_id(c)));
}
void on_context_unloaded(MonoProfiler*, MonoAppContext* c) {
  if (active())
    meta_simple(EventKind::context_unload, static_cast<uint64_t>(mono.mono_context_get_id(c)),
                static_cast<uint64_t>(mono.mono_context_get_domain_id(c)));
}
void on_image_loaded(MonoProfiler*, MonoImage* image) {
  if (active()) ensure_image(image, true);
}
void on_image_unloading(MonoProfiler*, MonoImage* image) {
  g_unloaded.store(true, std::memory_order_relaxed);
  if (!active()) return;
  const char* file = mono.mono_image_get_filename(image);
  meta_simple(EventKind::image_unload, u(image), 0, file ? file : "");
}
void on_assembly_loaded(MonoProfiler*, MonoAssembly* a) {
  if (active()) assembly_event(EventKind::assembly_load, a);
}
void on_assembly_unloading(MonoProfiler*, MonoAssembly* a) {
  if (active()) assembly_event(EventKind::assembly_unload, a);
}
void on_class_loaded(MonoProfiler*, MonoClass* k) {
  if (!active()) return;
  // Lazily described (docs/design.md, "Metadata described lazily"): only a vtable names a class in
  // the file, and each vtable describes its class first (ensure_vtable), so a class no vtable ever
  // names is never described. Not while a heapshot may be taken: the heap walk cannot call Mono, and
  // would name a class whose vtable's load event has not been raised yet by hand (no generic
  // arguments), so classes are named at load then, as before. Nor after an unload: the address may
  // have been a freed class's, described already, whose description must not stand for this one.
  const bool unloaded = g_unloaded.load(std::memory_order_relaxed);
  if (g_lazy_classes && !unloaded && !heapshot::may_happen()) return;
  // Described already (its vtable's load came first: 6.12 raises some arrays' class_loaded after it):
  // once is enough, unless an unload may have made the address another class's.
  ensure_class(k, unloaded);
}
void on_vtable_loaded(MonoProfiler*, MonoVTable* vt) {
  if (!active()) return;
  described::ensure_vtable(vt, true);
}
void on_jit_done(MonoProfiler*, MonoMethod* m, MonoJitInfo* ji) {
  const uint64_t start = ji ? u(mono.mono_jit_info_get_code_start(ji)) : 0;
  const uint64_t size = ji ? static_cast<uint64_t>(mono.mono_jit_info_get_code_size(ji)) : 0;
  // jitdump/perfmap (off: one load) go on when the .mlpd output stopped; they reuse its method name.
  if (!active()) {
    if (ji && perf::enabled()) perf::method_jitted(m, start, size, nullptr);
    return;
  }
  if (ji) walker::code_added(m, ji, mono.mono_jit_info_get_method(ji), mono.mono_domain_get(), start, size);
  // The same code again (6.12 raises jit_done whenever it finds a method compiled already): one
  // description, one JIT event and one jitdump record per method and code range.
  if (described::jit_repeat(m, start, size)) return;
  // Lazily described (docs/design.md, "Methods described lazily"): when nothing can name the method
  // in the file before an event that references it, its name is made at that event (ensure_method,
  // with the range kept here), or never. Not with sampling (the helper names sampled code and cannot
  // call Mono), JIT events (`jit`: every JIT'd method is recorded), jitdump/perfmap (they want the name
  // now anyway), or while paused (the mask that resume() restores is not known here).
  if (g_lazy_methods && !perf::enabled() && !enabled(MASK_JIT) && !g_paused.load(std::memory_order_relaxed) &&
      described::defer_method(m, start, size))
    return;
  const std::string name = described::describe_method(m, start, size);
  if (ji && perf::enabled()) perf::method_jitted(m, start, size, &name);
}
void on_method_free(MonoProfiler*, MonoMethod* m) {
  walker::method_freed(m);
  described::method_freed(m);  // a deferred description is dropped: the method is never named
}
void on_code_buffer(MonoProfiler*, const mono_byte* buffer, uint64_t size, MonoProfilerCodeBufferType type,
                    const void* data) {
  perf::code_buffer(buffer, size, type, data);  // jitdump/perfmap (off: one load)
  if (!active() || !enabled(MASK_JIT)) return;
  Event e;
  e.kind = EventKind::jit_helper;
  e.code = static_cast<uint8_t>(type);
  e.ptr = u(buffer);
  e.size = size;
  if (type == MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE && data) e.name = static_cast<const char*>(data);
  g->env.meta->add(e, now_ns);
}


// Attached late: what the runtime loaded before us had no load event of ours; described now, so that
// every event that refers to it comes after its description (verify --strict). Methods and classes
// are described on demand as before (ensure_*); domains, assemblies and images here.
void describe_loaded() {
  if (auto each = mono_optional.mono_domain_foreach) {
    each([](MonoDomain* d, void*) { on_domain_loaded(nullptr, d); }, nullptr);
  }
  if (auto each = mono_optional.mono_assembly_foreach) {
    each([](void* a, void*) { on_assembly_loaded(nullptr, static_cast<MonoAssembly*>(a)); }, nullptr);
  }
}

}  // namespace mlpd::hooks::cb
