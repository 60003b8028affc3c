// The hooks' callbacks, split by concern, and what they share (internal to runtime-hooks/src):
//   hooks.cpp                install() (sets the callbacks), apply_mask, detach, the thread list's end
//   callbacks.h/.cpp         this: per-thread state and helpers every callback file uses (the
//                            thread's log, backtraces, the collecting-thread flag), the lazy rules
//   metadata_callbacks.cpp   runtime, threads, domains, contexts, images, assemblies, classes, JIT
//   call_callbacks.cpp       enter/leave (the `calls` hot path) and the instrumentation filter
//   alloc_callbacks.cpp      allocations, exceptions, monitors (the events with backtraces)
//   gc_callbacks.cpp         GC events, moves, handles, finalization, roots
//
// Rules every callback follows:
// * Return at once unless the agent is active (one relaxed load of a read-mostly flag).
// * Per-thread events go to the thread's ThreadLog (no lock). Metadata goes to the MetaLog, always
//   BEFORE the first event that references it (described.h).
// * Never hold a lock of ours while calling into Mono (names are computed before locking); never take
//   a lock while the world is stopped, where a suspended thread may hold it (tls_in_own_gc).
//
// Hot path: what the allocation and call callbacks use per event is inline here (log, u,
// collect_backtrace's check) or in the caller's own file (the call callbacks' shadow stack); the
// thread-locals are constinit and initial-exec (one %fs-relative access, no TLS wrapper call).
#pragma once

#include <mono/metadata/profiler.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "mlpd/format.h"
#include "mlpd/rt/events.h"
#include "mono/runtime_version.h"
#include "state.h"

namespace mlpd::hooks::cb {

inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

// The calling thread's log (created on its first event); nullptr while logging is off. Only called
// while active(), so `g` is set.
inline rt::ThreadLog* log() { return state::g->env.registry->get(); }

// ---- per-thread state (callbacks.cpp) ----------------------------------------------------------

// Set on the collecting thread from PRE_STOP_WORLD_LOCKED to POST_START_WORLD_UNLOCKED (its own
// collection, gc_callbacks.cpp): no backtrace there, since a backtrace may take a lock (the described
// cache's, the code table's, Mono's) that a thread the collection suspended may hold. Per thread, not
// process-wide: while the world is stopped the only threads that run are the collecting one and
// threads Mono did not suspend because they are in a GC-safe (blocking) state, and those cannot raise
// an allocation, throw, monitor or GC-handle event without first switching back to the running state,
// which waits until the world restarts. Every other thread takes its backtraces as usual, also in the
// windows before the world stops and after it restarts (a process-wide flag dropped 43% of the
// backtraces of four threads allocating together: docs/design.md, "Backtraces during a collection").
extern thread_local constinit bool tls_in_own_gc __attribute__((tls_model("initial-exec"), visibility("hidden")));

// ---- backtraces --------------------------------------------------------------------------------

// Collects the calling thread's managed frames (at most `frames`), outermost first, describing each
// method (callbacks.cpp).
MLPD_HOOKS_HIDDEN const rt::Backtrace* walk_backtrace(rt::Backtrace& bt, uint32_t frames, bool alloc);

// The event's backtrace, or nullptr when backtraces are off (or impossible: during a collection).
// The check is inline: with backtraces off an event pays no call for it.
inline const rt::Backtrace* collect_backtrace(rt::Backtrace& bt, bool alloc = false) {
  const uint32_t frames = state::g_maxframes.load(std::memory_order_relaxed);
  if (frames == 0 || tls_in_own_gc) return nullptr;
  return walk_backtrace(bt, frames, alloc);
}

// ---- shared settings (callbacks.cpp; set by install) -------------------------------------------

// Metadata described lazily (docs/design.md, "Metadata described lazily"): methods may be (set by
// install(): no sampling); classes may be (no command port); an image or domain has been unloaded
// (class addresses may have been reused since).
extern MLPD_HOOKS_HIDDEN bool g_lazy_methods;
extern MLPD_HOOKS_HIDDEN bool g_lazy_classes;
extern MLPD_HOOKS_HIDDEN std::atomic<bool> g_unloaded;
// The runtime's version and the internals' readers chosen for it; made by install (the agent starts from
// an ELF constructor, before the dynamic initialisers run: no global with a constructor here).
extern MLPD_HOOKS_HIDDEN mono_runtime::Runtime* g_runtime;

// Threads started and not yet ended (a thread's end is reported once: stopped and exited both report).
extern MLPD_HOOKS_HIDDEN std::mutex g_threads_mutex;
extern MLPD_HOOKS_HIDDEN std::unordered_set<uint64_t>* g_live_threads;  // allocated by install()

// A metadata event with at most two addresses and a name, to the MetaLog.
MLPD_HOOKS_HIDDEN void meta_simple(EventKind kind, uint64_t ptr, uint64_t ptr2 = 0, const char* name = nullptr);

// ---- hooks.cpp ---------------------------------------------------------------------------------

// install() once the Mono API table (mono_api.h) is bound: all of it but the binding. A seam for the
// unit tests, which put a fake Mono in the table (tests/support/fake_mono.h) instead of binding it.
MLPD_HOOKS_HIDDEN bool install_bound(const HookConfig& config, const HookEnv& env, std::string& error);

// ---- metadata_callbacks.cpp --------------------------------------------------------------------

MLPD_HOOKS_HIDDEN void on_runtime_initialized(MonoProfiler*);
MLPD_HOOKS_HIDDEN void on_shutdown_begin(MonoProfiler*);
MLPD_HOOKS_HIDDEN void on_shutdown_end(MonoProfiler*);
MLPD_HOOKS_HIDDEN void on_thread_started(MonoProfiler*, uintptr_t tid);
MLPD_HOOKS_HIDDEN void on_thread_stopped(MonoProfiler*, uintptr_t tid);
MLPD_HOOKS_HIDDEN void on_thread_name(MonoProfiler*, uintptr_t tid, const char* name);
MLPD_HOOKS_HIDDEN void on_domain_loaded(MonoProfiler*, MonoDomain* d);
MLPD_HOOKS_HIDDEN void on_domain_unloading(MonoProfiler*, MonoDomain* d);
MLPD_HOOKS_HIDDEN void on_domain_name(MonoProfiler*, MonoDomain* d, const char* name);
MLPD_HOOKS_HIDDEN void on_context_loaded(MonoProfiler*, MonoAppContext* c);
MLPD_HOOKS_HIDDEN void on_context_unloaded(MonoProfiler*, MonoAppContext* c);
MLPD_HOOKS_HIDDEN void on_image_loaded(MonoProfiler*, MonoImage* image);
MLPD_HOOKS_HIDDEN void on_image_unloading(MonoProfiler*, MonoImage* image);
MLPD_HOOKS_HIDDEN void on_assembly_loaded(MonoProfiler*, MonoAssembly* a);
MLPD_HOOKS_HIDDEN void on_assembly_unloading(MonoProfiler*, MonoAssembly* a);
MLPD_HOOKS_HIDDEN void on_class_loaded(MonoProfiler*, MonoClass* k);
MLPD_HOOKS_HIDDEN void on_vtable_loaded(MonoProfiler*, MonoVTable* vt);
MLPD_HOOKS_HIDDEN void on_jit_done(MonoProfiler*, MonoMethod* m, MonoJitInfo* ji);
MLPD_HOOKS_HIDDEN void on_method_free(MonoProfiler*, MonoMethod* m);
MLPD_HOOKS_HIDDEN void on_code_buffer(MonoProfiler*, const mono_byte* buffer, uint64_t size,
                                      MonoProfilerCodeBufferType type, const void* data);
// Attached late: describes the domains and assemblies the runtime loaded before us.
MLPD_HOOKS_HIDDEN void describe_loaded();

// ---- call_callbacks.cpp ------------------------------------------------------------------------

// Registers the thread-exit destructor of the shadow stacks (install); without it (pthread_key_create
// failed) a thread's stack is not freed when the thread ends.
MLPD_HOOKS_HIDDEN void init_call_stacks();
extern MLPD_HOOKS_HIDDEN uint64_t g_calls_min_ns;  // calls-min, in ns (0: off)
MLPD_HOOKS_HIDDEN void on_method_enter(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*);
MLPD_HOOKS_HIDDEN void on_method_leave(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*);
MLPD_HOOKS_HIDDEN void on_method_enter_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*);
MLPD_HOOKS_HIDDEN void on_method_leave_min(MonoProfiler*, MonoMethod* m, MonoProfilerCallContext*);
MLPD_HOOKS_HIDDEN void on_method_tail_call(MonoProfiler*, MonoMethod* m, MonoMethod*);
MLPD_HOOKS_HIDDEN void on_method_exception_leave(MonoProfiler*, MonoMethod* m, MonoObject*);
MLPD_HOOKS_HIDDEN MonoProfilerCallInstrumentationFlags call_filter(MonoProfiler*, MonoMethod* m);

// ---- alloc_callbacks.cpp -----------------------------------------------------------------------

MLPD_HOOKS_HIDDEN void on_allocation(MonoProfiler*, MonoObject* obj);
MLPD_HOOKS_HIDDEN void on_exception_throw(MonoProfiler*, MonoObject* exc);
MLPD_HOOKS_HIDDEN void on_exception_clause(MonoProfiler*, MonoMethod* m, uint32_t index, MonoExceptionEnum type,
                                           MonoObject* exc);
MLPD_HOOKS_HIDDEN void on_monitor_contention(MonoProfiler*, MonoObject* o);
MLPD_HOOKS_HIDDEN void on_monitor_acquired(MonoProfiler*, MonoObject* o);
MLPD_HOOKS_HIDDEN void on_monitor_failed(MonoProfiler*, MonoObject* o);

// ---- gc_callbacks.cpp --------------------------------------------------------------------------

MLPD_HOOKS_HIDDEN void on_gc_event(MonoProfiler*, MonoProfilerGCEvent event, uint32_t generation, mono_bool serial);
MLPD_HOOKS_HIDDEN void on_gc_resize(MonoProfiler*, uintptr_t size);
MLPD_HOOKS_HIDDEN void on_gc_moves(MonoProfiler*, MonoObject* const* objects, uint64_t count);
MLPD_HOOKS_HIDDEN void on_gc_handle_created(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj);
MLPD_HOOKS_HIDDEN void on_gc_handle_deleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type);
MLPD_HOOKS_HIDDEN void on_gc_finalizing(MonoProfiler*);
MLPD_HOOKS_HIDDEN void on_gc_finalized(MonoProfiler*);
MLPD_HOOKS_HIDDEN void on_gc_finalizing_object(MonoProfiler*, MonoObject* o);
MLPD_HOOKS_HIDDEN void on_gc_finalized_object(MonoProfiler*, MonoObject* o);
MLPD_HOOKS_HIDDEN void on_root_register(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source,
                                        const void* key, const char* name);
MLPD_HOOKS_HIDDEN void on_root_unregister(MonoProfiler*, const mono_byte* start);

}  // namespace mlpd::hooks::cb
