// Mono profiler callbacks -> mlpd events, and install(), which sets them.
//
// The room's other parts: state.h (configuration, flags, run-time settings), described.h (metadata
// described before use, the per-thread described cache), call_stack.h (the shadow call stack),
// heapshot_engine.h (heapshots, GC roots), stack_walker.h (backtraces), sampling.h, icalls.h.
//
// Rules every callback here follows:
// * Return at once unless the agent is active (one relaxed load of a read-mostly flag).
// * Per-thread events go to the thread's ThreadLog (no lock). Metadata goes to the MetaLog, always
//   BEFORE the first event that references it (described.h).
// * Never hold a lock of ours while calling into Mono (names are computed before locking); never take
//   a lock while the world is stopped, where a suspended thread may hold it (tls_in_own_gc).
#include "mlpd/hooks/hooks.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_set>

#include "alloc_sampler.h"
#include "call_stack.h"
#include "described.h"
#include "heapshot_engine.h"
#include "mlpd/format.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/hooks/perf_output.h"
#include "mlpd/hooks/runtime_counters.h"
#include "mlpd/hooks/stack_walker.h"
#include "mlpd/hooks/sampling.h"
#include "mlpd/hooks/late_sampler.h"
#include "mlpd/hooks/late_describer.h"
#include "mlpd/hooks/control.h"
#include "os_threads.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "mono/optional.h"
#include "mono/runtime_version.h"
#include "state.h"

namespace mlpd::hooks {

namespace {

using namespace mlpd::format;
using rt::now_ns;

using namespace state;
using described::ensure_class;
using described::ensure_image;

inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

// ---- per-thread state --------------------------------------------------------------------------

thread_local CallStack tls_calls __attribute__((tls_model("initial-exec")));
// Frees a thread's shadow stack when the thread exits. The key's value only marks that there is one:
// the stack itself is the exiting thread's tls_calls, still valid while key destructors run.
pthread_key_t g_calls_key;
bool g_calls_key_ok = false;
void free_call_stack(void*) { tls_calls.release(); }

// Set on the collecting thread from PRE_STOP_WORLD_LOCKED to POST_START_WORLD_UNLOCKED (its own
// collection): no backtrace there, since a backtrace may take a lock (the described cache's, the code
// table's, Mono's) that a thread the collection suspended may hold. Per thread, not process-wide:
// while the world is stopped the only threads that run are the collecting one and threads Mono did
// not suspend because they are in a GC-safe (blocking) state, and those cannot raise an allocation,
// throw, monitor or GC-handle event without first switching back to the running state, which waits
// until the world restarts. Every other thread takes its backtraces as usual, also in the windows
// before the world stops and after it restarts (a process-wide flag dropped 43% of the backtraces of
// four threads allocating together: docs/design.md, "Backtraces during a collection").
thread_local bool tls_in_own_gc __attribute__((tls_model("initial-exec"))) = false;

// Threads started and not yet ended (a thread's end is reported once: stopped and exited both report).
std::mutex g_threads_mutex;
std::unordered_set<uint64_t>* g_live_threads = nullptr;  // allocated by install()

// Metadata described lazily (docs/design.md, "Metadata described lazily"): methods may be (set by
// install(): no sampling); classes may be (no command port); an image or domain has been unloaded
// (class addresses may have been reused since).
bool g_lazy_methods = false;
bool g_lazy_classes = false;
// The runtime's version and the internals' readers chosen for it; made by install (the agent starts from
// an ELF constructor, before this file's dynamic initialisers run: no global with a constructor here).
mono_runtime::Runtime* g_runtime = nullptr;
std::atomic<bool> g_unloaded{false};

// ---- backtraces --------------------------------------------------------------------------------

// Collects the calling thread's managed frames (at most `frames`), outermost first, describing each
// method.
__attribute__((noinline)) const rt::Backtrace* walk_backtrace(rt::Backtrace& bt, uint32_t frames, bool alloc) {
  MonoMethod* walked[kMaxFrames];
  const uint32_t n = walker::collect(walked, frames, alloc);  // ours, or mono_stack_walk_no_il when unsure
  bt.count = n;
  for (uint32_t i = 0; i < n; ++i) {
    MonoMethod* m = walked[n - 1 - i];  // the walk gives innermost first
    described::ensure_method_cached(m);  // per-thread cache: no lock for methods seen before
    bt.frames[i] = u(m);
  }
  return &bt;
}

// The event's backtrace, or nullptr when backtraces are off (or impossible: during a collection).
// The check is inline: with backtraces off an event pays no call for it.
inline const rt::Backtrace* collect_backtrace(rt::Backtrace& bt, bool alloc = false) {
  const uint32_t frames = g_maxframes.load(std::memory_order_relaxed);
  if (frames == 0 || tls_in_own_gc) return nullptr;
  return walk_backtrace(bt, frames, alloc);
}

// ---- callbacks ---------------------------------------------------------------------------------

rt::ThreadLog* log() { return g->env.registry->get(); }

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
  if (active()) heapshot::shutdown_begin();  // heapshot-on-shutdown: a collection on this thread
  if (g->env.on_shutdown_begin) g->env.on_shutdown_begin();
}
void on_shutdown_end(MonoProfiler*) {
  if (g->env.on_shutdown_end) g->env.on_shutdown_end();
}

void meta_simple(EventKind kind, uint64_t ptr, uint64_t ptr2 = 0, const char* name = nullptr) {
  Event e;
  e.kind = kind;
  e.ptr = ptr;
  e.ptr2 = ptr2;
  if (name) e.name = name;
  g->env.meta->add(e, now_ns);
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
void assembly_event(EventKind kind, MonoAssembly* a) {
  MonoImage* image = mono.mono_assembly_get_image(a);
  ensure_image(image);
  std::string name = take_mono_string(mono.mono_stringify_assembly_name(mono.mono_assembly_get_name(a)));
  meta_simple(kind, u(a), u(image), name.c_str());
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

// -- calls

// Room for one more frame; the first growth registers the stack for freeing at thread exit.
bool grow(CallStack& cs) {
  if (!cs.frames && g_calls_key_ok) pthread_setspecific(g_calls_key, &cs);
  return cs.grow();
}
// Whether an enter can be kept as a frame (growing the stack if needed); if not, it is only counted.
bool make_room(CallStack& cs) { return cs.depth == cs.count && (!cs.full() || grow(cs)); }

// The full enter, every case. An enter of a method not yet described describes it first: a method's
// code can run before its jit_done event is raised (another thread that finds the code published
// while the compiling thread has not yet raised the event; P/Invoke methods, whose event follows their
// wrapper's), and its enter must not reach the file before its description. Described without a code
// range; jit_done describes it again with one.
// An enter beyond calldepth (or with logging off) is kept as an unrecorded frame, so that its leave
// is matched with it and not with a recorded frame of the same method below (call_stack.h).
// The frame of an enter on the thread's shadow stack: counted only, unrecorded (beyond calldepth, or
// no log), or recorded, its method described first. Returns the log to write the enter to when recorded.
inline rt::ThreadLog* push_enter(CallStack& cs, MonoMethod* m) {
  if (!make_room(cs)) [[unlikely]] {
    cs.enter_counted();
    return nullptr;
  }
  rt::ThreadLog* l = cs.within(g_calldepth.load(std::memory_order_relaxed)) ? log() : nullptr;
  if (!l) {
    cs.push_unrecorded(u(m));
    return nullptr;
  }
  described::ensure_method_cached(m);
  cs.push(u(m));
  return l;
}

[[gnu::noinline]] void method_enter_slow(MonoMethod* m) {
  if (rt::ThreadLog* l = push_enter(tls_calls, m)) rt::write_method(*l, TYPE_ENTER, now_ns(), u(m));
}

// The `calls` hot path (docs/design.md, "The calls hot path"): when nothing needs a call (the
// thread has its log and room for the frame and the event, the method is in its described cache,
// the clock is the TSC), the enter is written inline with no call, so that the callback needs no
// saved registers or stack frame; anything else goes to method_enter_slow, which does the same
// from the start (nothing is changed before the choice).
void on_method_enter(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.depth < g_calldepth.load(std::memory_order_relaxed) && l && !cs.full() && described::method_cached(m) &&
      l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.push(u(m));  // !full(): no frame is only counted (call_stack.h), depth == count
    rt::write_method_at(*l, l->cursor(), TYPE_ENTER, now, u(m));
    return;
  }
  method_enter_slow(m);
}

// A leave (or exceptional leave) of `m`: frames above m's were left without a leave event and are
// closed as exceptional leaves (CallStack::leave). A leave of an unrecorded frame writes nothing,
// and a leave with no frame is dropped.
void leave(MonoMethod* m, uint8_t ext) {
  rt::ThreadLog* l = nullptr;
  uint64_t now = 0;
  bool first = true;
  tls_calls.leave(u(m), [&](uint64_t frame, bool left) {
    if (first) {
      first = false;
      l = log();
      now = now_ns();
    }
    if (l) rt::write_method(*l, left ? ext : TYPE_EXC_LEAVE, now, frame);
  });
}

[[gnu::noinline]] void method_leave_slow(MonoMethod* m) {
  // The usual case: the method leaving is the one on top, and every frame is recorded.
  if (tls_calls.leave_top(u(m))) [[likely]] {
    if (rt::ThreadLog* l = log()) rt::write_method(*l, TYPE_LEAVE, now_ns(), u(m));
    return;
  }
  leave(m, TYPE_LEAVE);
}

// As on_method_enter: the usual leave (the method on top, the log with room, the TSC) inline with
// no call, the rest in method_leave_slow.
void on_method_leave(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  CallStack& cs = tls_calls;
  rt::ThreadLog* l = rt::ThreadRegistry::current();
  uint64_t now;
  if (cs.is_top(u(m)) && l && l->has_room(rt::kMethodEventBytes) && rt::now_ns_tsc(now)) [[likely]] {
    cs.pop_top();
    rt::write_method_at(*l, l->cursor(), TYPE_LEAVE, now, u(m));
    return;
  }
  method_leave_slow(m);
}

// calls-min (short-call elision): the same callbacks, installed instead of the two above so that
// calls without calls-min run exactly the code they ran before. An enter is held in the thread's
// buffer unpublished (rt::write_enter_held); the usual leave of the innermost held enter, when
// nothing was written since and the call took less than calls-min, takes the enter back and writes
// no leave (ThreadLog::elide_held). Any other leave is written as usual and publishes what is held.
uint64_t g_calls_min_ns = 0;

void on_method_enter_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  if (rt::ThreadLog* l = push_enter(tls_calls, m)) rt::write_enter_held(*l, now_ns(), u(m));
}

void on_method_leave_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*) {
  if (!active()) return;
  if (tls_calls.leave_top(u(m))) [[likely]] {
    if (rt::ThreadLog* l = log()) {
      const uint64_t now = now_ns();
      if (!l->elide_held(now, g_calls_min_ns)) rt::write_method(*l, TYPE_LEAVE, now, u(m));
    }
    return;
  }
  leave(m, TYPE_LEAVE);
}

void on_method_tail_call(MonoProfiler*, MonoMethod* m, MonoMethod*) {
  if (active()) leave(m, TYPE_LEAVE);
}
void on_method_exception_leave(MonoProfiler*, MonoMethod* m, MonoObject*) {
  if (active()) leave(m, TYPE_EXC_LEAVE);
}

// The runtime's safepoint poll, called at every method entry and loop back edge of a running thread
// from the moment a collection starts stopping the world until it has restarted it (Mono's
// mono_polling_required). Under Mono's log profiler such a thread blocks on its first event of that
// window (the exclusive buffer lock its gc_event callback holds from PRE_STOP_WORLD_LOCKED to
// POST_START_WORLD_UNLOCKED), so Mono's files do not have these calls; our callbacks never block, the
// thread goes on running and polling, and each poll would be a recorded call (tens of thousands per
// collection on a busy multi-threaded program). Not instrumented: see docs/design.md.
bool is_state_poll(MonoMethod* m) {
  const char* name = mono.mono_method_get_name(m);
  return name && std::strcmp(name, "__icall_wrapper_mono_threads_state_poll") == 0;
}

MonoProfilerCallInstrumentationFlags call_filter(MonoProfiler*, MonoMethod* m) {
  if (g->has_callspec && !g->callspec_eval(m, g->callspec)) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  if (is_state_poll(m)) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
  return static_cast<MonoProfilerCallInstrumentationFlags>(
      MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
      MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);
}

// -- allocations, exceptions, monitors

void on_allocation(MonoProfiler*, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_ALLOC)) return;
  const uint64_t size = (static_cast<uint64_t>(mono.mono_object_get_size(obj)) + 7) & ~uint64_t{7};
  if (!alloc_sampler::take(size)) return;  // alloc-sample: not this one (alloc_sampler.h)
  rt::ThreadLog* l = log();
  if (!l) return;
  MonoVTable* vt = mono.mono_object_get_vtable(obj);
  described::ensure_vtable_cached(vt);
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt, true);
  rt::write_alloc(*l, now_ns(), u(vt), u(obj), size, b);
}

void on_exception_throw(MonoProfiler*, MonoObject* exc) {
  if (!active() || !enabled(MASK_EXCEPTION)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_throw(*l, now_ns(), u(exc), b);
}

void on_exception_clause(MonoProfiler*, MonoMethod* m, uint32_t index, MonoExceptionEnum type, MonoObject* exc) {
  if (!active() || !enabled(MASK_EXCEPTION)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  described::ensure_method_cached(m);  // per-thread cache: no lock for a method seen before
  rt::write_clause(*l, now_ns(), static_cast<uint8_t>(type), index, u(m), u(exc));
}

void monitor_event(uint8_t event, MonoObject* obj) {
  if (!active() || !enabled(MASK_MONITOR)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_monitor(*l, now_ns(), event, u(obj), b);
}
void on_monitor_contention(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_CONTENTION, o); }
void on_monitor_acquired(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_DONE, o); }
void on_monitor_failed(MonoProfiler*, MonoObject* o) { monitor_event(MONITOR_FAIL, o); }

// -- GC

// Mono's order: the GC event, then at world stop the sync point and HEAP_START (heapshot.cpp), at
// world start the heap walk and HEAP_END, then the sync point.
void on_gc_event(MonoProfiler*, MonoProfilerGCEvent event, uint32_t generation, mono_bool serial) {
  // Before the active check, so that a thread's flag cannot stay set if the agent stops meanwhile.
  if (event == MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED) tls_in_own_gc = true;
  if (event == MONO_GC_EVENT_POST_START_WORLD_UNLOCKED) tls_in_own_gc = false;
  if (!active()) return;
  rt::ThreadLog* l = log();
  const bool sync = (g_mask.load(std::memory_order_relaxed) & (MASK_GC | MASK_GC_MOVE | MASK_GC_ROOT)) != 0;
  if (l) {
    const uint64_t now = now_ns();
    if (enabled(MASK_GC)) rt::write_gc_event(*l, now, static_cast<uint8_t>(event), static_cast<uint8_t>(generation));
    if (sync && event == MONO_GC_EVENT_POST_STOP_WORLD) rt::write_sync_point(*l, now, SYNC_POINT_WORLD_STOP);
  }
  heapshot::gc_event(l, event, generation, serial != 0);
  if (l && sync && event == MONO_GC_EVENT_PRE_START_WORLD) rt::write_sync_point(*l, now_ns(), SYNC_POINT_WORLD_START);
}

void on_gc_resize(MonoProfiler*, uintptr_t size) {
  if (!active() || !enabled(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_resize(*l, now_ns(), size);
}

void on_gc_moves(MonoProfiler*, MonoObject* const* objects, uint64_t count) {
  if (!active() || !enabled(MASK_GC_MOVE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  constexpr uint32_t kChunk = 64;  // addresses per event, as Mono writes them
  uint64_t addr[kChunk];
  const uint64_t now = now_ns();
  for (uint64_t i = 0; i < count;) {
    uint32_t n = 0;
    while (n < kChunk && i < count) addr[n++] = u(objects[i++]);
    rt::write_gc_move(*l, now, addr, n & ~1u);
  }
}

void on_gc_handle_created(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_HANDLE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_handle_created(*l, now_ns(), static_cast<uint64_t>(type), handle, u(obj), b);
}

void on_gc_handle_deleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type) {
  if (!active() || !enabled(MASK_GC_HANDLE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_handle_destroyed(*l, now_ns(), static_cast<uint64_t>(type), handle, b);
}

void finalization_event(uint8_t event_byte) {
  if (!active() || !enabled(MASK_GC_FINALIZATION)) return;
  if (rt::ThreadLog* l = log()) rt::write_bare(*l, event_byte, now_ns());
}
void on_gc_finalizing(MonoProfiler*) { finalization_event(TYPE_GC | TYPE_GC_FINALIZE_START); }
// Installed always (the heapshot engine's pending requests are served here), the event only with
// finalization events on.
void on_gc_finalized(MonoProfiler*) {
  heapshot::finalized();
  finalization_event(TYPE_GC | TYPE_GC_FINALIZE_END);
}
void finalization_object(uint8_t event_byte, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_FINALIZATION)) return;
  if (rt::ThreadLog* l = log()) rt::write_with_object(*l, event_byte, now_ns(), u(obj));
}
void on_gc_finalizing_object(MonoProfiler*, MonoObject* o) {
  finalization_object(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START, o);
}
void on_gc_finalized_object(MonoProfiler*, MonoObject* o) {
  finalization_object(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_END, o);
}

void on_root_register(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source, const void* key,
                      const char* name) {
  if (!active()) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  const size_t len = name ? strnlen(name, 4096) : 0;
  rt::write_root_register(*l, now_ns(), u(start), size, static_cast<uint8_t>(source), u(key), name, len);
}

void on_root_unregister(MonoProfiler*, const mono_byte* start) {
  if (!active()) return;
  if (rt::ThreadLog* l = log()) rt::write_root_unregister(*l, now_ns(), u(start));
}

// Callbacks that cost the runtime something even when they return at once are installed only while
// their events are wanted (State::apply_mask, called by set_event_mask); the others are installed
// once and check the mask.
void apply_mask(uint32_t mask) {
  MonoProfilerHandle h = g->handle;
  // With no allocation callback installed, the allocators' check of Mono's callback count fails and
  // nothing is called (no icall wrapper, no callback: see docs/design.md, "What the agent asks of the JIT").
  mono.mono_profiler_set_gc_allocation_callback(h, (mask & MASK_GC_ALLOC) ? on_allocation : nullptr);
  // Exceptions: the runtime raises the clause event before every clause it runs (the JIT'd code
  // checks for a clause callback) and the throw event at every throw.
  const bool exceptions = mask & MASK_EXCEPTION;
  mono.mono_profiler_set_exception_throw_callback(h, exceptions ? on_exception_throw : nullptr);
  mono.mono_profiler_set_exception_clause_callback(h, exceptions ? on_exception_clause : nullptr);
  const bool monitor = mask & MASK_MONITOR;
  mono.mono_profiler_set_monitor_contention_callback(h, monitor ? on_monitor_contention : nullptr);
  mono.mono_profiler_set_monitor_acquired_callback(h, monitor ? on_monitor_acquired : nullptr);
  mono.mono_profiler_set_monitor_failed_callback(h, monitor ? on_monitor_failed : nullptr);
  mono.mono_profiler_set_gc_resize_callback(h, (mask & MASK_GC) ? on_gc_resize : nullptr);
  mono.mono_profiler_set_gc_moves_callback(h, (mask & MASK_GC_MOVE) ? on_gc_moves : nullptr);
  heapshot::apply_roots_callback(false);
  const bool handles = mask & MASK_GC_HANDLE;
  mono.mono_profiler_set_gc_handle_created_callback(h, handles ? on_gc_handle_created : nullptr);
  mono.mono_profiler_set_gc_handle_deleted_callback(h, handles ? on_gc_handle_deleted : nullptr);
  const bool fin = mask & MASK_GC_FINALIZATION;
  mono.mono_profiler_set_gc_finalizing_callback(h, fin ? on_gc_finalizing : nullptr);
  mono.mono_profiler_set_gc_finalized_callback(h, on_gc_finalized);  // heapshot requests too
  mono.mono_profiler_set_gc_finalizing_object_callback(h, fin ? on_gc_finalizing_object : nullptr);
  mono.mono_profiler_set_gc_finalized_object_callback(h, fin ? on_gc_finalized_object : nullptr);
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

}  // namespace

bool install(const HookConfig& config, const HookEnv& env, std::string& error) {
  std::string missing;
  if (!mono.bind(missing)) {
    error = "not a Mono process (" + missing + " not found)";
    return false;
  }
  g = new (std::nothrow) State;
  g_live_threads = new (std::nothrow) std::unordered_set<uint64_t>;
  if (!g || !g_live_threads || !described::init()) {
    error = "out of memory";
    return false;
  }
  g->cfg = config;
  g->env = env;
  g->apply_mask = apply_mask;
  g_calldepth.store(config.calldepth);
  // eager-metadata (MLPD_EAGER_METADATA) describes every method and class when it is loaded, as before
  // the lazy rules (docs/design.md): for comparing the two.
  const bool eager = config.eager_metadata;
  g_lazy_methods = config.sample_mode == kSampleOff && !eager;
  g_lazy_classes = !config.command_port && !eager;
  set_max_frames(config.maxframes);
  g_calls_key_ok = pthread_key_create(&g_calls_key, free_call_stack) == 0;
  {
    // The runtime's version picks the readers of its internals; an unknown one leaves every backtrace
    // to Mono's own walk. MLPD_TEST_MONO_VERSION stands in for the runtime's answer (tests only).
    mono_runtime::Runtime detected;
    const char* info = std::getenv("MLPD_TEST_MONO_VERSION");
    if (!info) {
      if (auto build_info = mono_optional.mono_get_runtime_build_info) {
        char* text = build_info();
        detected = mono_runtime::detect(text);
        if (text) mono.mono_free(text);
      } else {
        detected = mono_runtime::detect(nullptr);
      }
    } else {
      detected = mono_runtime::detect(info);
    }
    if (!g_runtime) g_runtime = new (std::nothrow) mono_runtime::Runtime;
    if (g_runtime) *g_runtime = detected;
    // walker= (MLPD_WALKER): 1 `mono`: all by mono_stack_walk_no_il; 2 `check`: all compared.
    const bool internals = detected.internals != mono_runtime::Internals::off;
    walker::init(internals && config.walker != 1, config.walker == 2, config.verbose);
  }
  if (config.calls && !config.callspec.empty()) {
    // Mono's own callspec parser (the --trace syntax): exported by the runtime but not in its public
    // headers (mono/optional.h), and refused cleanly if absent.
    auto parse = mono_optional.mono_callspec_parse;
    g->callspec_eval = mono_optional.mono_callspec_eval;
    if (!parse || !g->callspec_eval) {
      error = "callspec is not supported by this Mono (mono_callspec_parse not found)";
      return false;
    }
    char* err = nullptr;
    if (!parse(config.callspec.c_str(), g->callspec, &err)) {
      error = "bad callspec '" + config.callspec + "'" + (err ? std::string(": ") + err : std::string());
      if (err) mono.mono_free(err);
      return false;
    }
    g->has_callspec = true;
  }

  MonoProfilerHandle h = mono.mono_profiler_create(nullptr);
  g->handle = h;
  // Like Mono's log profiler: allocation and clause instrumentation must be requested before the
  // runtime starts; after that these return false and the agent is too late to be useful.
  // Attached late (config.late): neither can be had any more; the agent refused what needs them.
  if (!config.late && (!mono.mono_profiler_enable_allocations() || !mono.mono_profiler_enable_clauses())) {
    error = "loaded after the Mono runtime started; use LD_PRELOAD or --profile=mlpd";
    return false;
  }
  mono.mono_profiler_set_runtime_initialized_callback(h, on_runtime_initialized);
  mono.mono_profiler_set_runtime_shutdown_begin_callback(h, on_shutdown_begin);
  mono.mono_profiler_set_runtime_shutdown_end_callback(h, on_shutdown_end);
  mono.mono_profiler_set_thread_started_callback(h, on_thread_started);
  mono.mono_profiler_set_thread_stopped_callback(h, on_thread_stopped);
  mono.mono_profiler_set_thread_name_callback(h, on_thread_name);
  mono.mono_profiler_set_domain_loaded_callback(h, on_domain_loaded);
  mono.mono_profiler_set_domain_unloading_callback(h, on_domain_unloading);
  mono.mono_profiler_set_domain_name_callback(h, on_domain_name);
  mono.mono_profiler_set_context_loaded_callback(h, on_context_loaded);
  mono.mono_profiler_set_context_unloaded_callback(h, on_context_unloaded);
  mono.mono_profiler_set_assembly_loaded_callback(h, on_assembly_loaded);
  mono.mono_profiler_set_assembly_unloading_callback(h, on_assembly_unloading);
  mono.mono_profiler_set_image_loaded_callback(h, on_image_loaded);
  mono.mono_profiler_set_image_unloading_callback(h, on_image_unloading);
  mono.mono_profiler_set_class_loaded_callback(h, on_class_loaded);
  mono.mono_profiler_set_vtable_loaded_callback(h, on_vtable_loaded);
  mono.mono_profiler_set_jit_done_callback(h, on_jit_done);
  mono.mono_profiler_set_method_free_callback(h, [](MonoProfiler*, MonoMethod* m) {
    walker::method_freed(m);
    described::method_freed(m);  // a deferred description is dropped: the method is never named
  });
  mono.mono_profiler_set_jit_code_buffer_callback(h, on_code_buffer);
  mono.mono_profiler_set_gc_event_callback(h, on_gc_event);
  mono.mono_profiler_set_gc_root_register_callback(h, on_root_register);
  mono.mono_profiler_set_gc_root_unregister_callback(h, on_root_unregister);
  if (config.calls) {
    mono.mono_profiler_set_call_instrumentation_filter_callback(h, call_filter);
    g_calls_min_ns = config.calls_min_ns;
    mono.mono_profiler_set_method_enter_callback(h, config.calls_min_ns ? on_method_enter_min : on_method_enter);
    mono.mono_profiler_set_method_leave_callback(h, config.calls_min_ns ? on_method_leave_min : on_method_leave);
    mono.mono_profiler_set_method_tail_call_callback(h, on_method_tail_call);
    mono.mono_profiler_set_method_exception_leave_callback(h, on_method_exception_leave);
  }
  if (config.sample_mode != kSampleOff) {
    SamplingConfig sc;
    sc.mode = config.sample_mode;
    sc.freq = config.sample_freq;
    sc.pool = config.sample_pool;
    sc.maxframes = std::min<uint32_t>(config.maxframes, kMaxFrames);
    // Attached: Mono's sampler thread exists only if enabled before start-up; ours signals instead.
    if (config.late ? !start_late_sampling(sc, env.meta, error) : !start_sampling(h, sc, env.meta, error)) return false;
  }
  alloc_sampler::g_mean = config.alloc_sample;
  set_event_mask(config.mask);
  if (config.start_paused) pause();  // before any event: nothing is recorded until resume()
  heapshot::install();
  g_active.store(true, std::memory_order_release);
  if (config.late) {
    // What runtime_initialized does (it was raised long ago): the finalizer thread exists (heapshots
    // on request go through it), Mono's counters are there to sample.
    g_runtime_ready.store(true, std::memory_order_release);
    runtime_counters_start();
    describe_loaded();
    start_describer();
  }
  return true;
}

void stop() {
  g_active.store(false, std::memory_order_release);
  stop_sampling();
}

void detach() {
  stop();
  stop_late_sampling();
  stop_describer();
  if (!g || !g->handle) return;
  // Every event off (the runtime keeps the handle: Mono has no call to remove one); the callbacks
  // would return at once anyway (stop()), this takes even their call out of the runtime's paths.
  apply_mask(0);
  MonoProfilerHandle h = g->handle;
  mono.mono_profiler_set_runtime_initialized_callback(h, nullptr);
  mono.mono_profiler_set_runtime_shutdown_begin_callback(h, nullptr);
  mono.mono_profiler_set_runtime_shutdown_end_callback(h, nullptr);
  mono.mono_profiler_set_thread_started_callback(h, nullptr);
  mono.mono_profiler_set_thread_stopped_callback(h, nullptr);
  mono.mono_profiler_set_thread_name_callback(h, nullptr);
  mono.mono_profiler_set_domain_loaded_callback(h, nullptr);
  mono.mono_profiler_set_domain_unloading_callback(h, nullptr);
  mono.mono_profiler_set_domain_name_callback(h, nullptr);
  mono.mono_profiler_set_context_loaded_callback(h, nullptr);
  mono.mono_profiler_set_context_unloaded_callback(h, nullptr);
  mono.mono_profiler_set_assembly_loaded_callback(h, nullptr);
  mono.mono_profiler_set_assembly_unloading_callback(h, nullptr);
  mono.mono_profiler_set_image_loaded_callback(h, nullptr);
  mono.mono_profiler_set_image_unloading_callback(h, nullptr);
  mono.mono_profiler_set_class_loaded_callback(h, nullptr);
  mono.mono_profiler_set_vtable_loaded_callback(h, nullptr);
  mono.mono_profiler_set_jit_done_callback(h, nullptr);
  mono.mono_profiler_set_method_free_callback(h, nullptr);
  mono.mono_profiler_set_jit_code_buffer_callback(h, nullptr);
  mono.mono_profiler_set_gc_event_callback(h, nullptr);
  mono.mono_profiler_set_gc_root_register_callback(h, nullptr);
  mono.mono_profiler_set_gc_root_unregister_callback(h, nullptr);
  mono.mono_profiler_set_gc_finalized_callback(h, nullptr);
}

std::string backtrace_summary() { return walker::summary(); }

std::string runtime_summary() { return g_runtime ? mono_runtime::describe(*g_runtime) : std::string("runtime: unknown"); }

void end_remaining_threads() {
  if (!g) return;
  std::unordered_set<uint64_t> left;
  {
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    left.swap(*g_live_threads);
  }
  for (uint64_t tid : left) meta_simple(EventKind::thread_end, tid);
}

}  // namespace mlpd::hooks
