// install(), which sets the Mono profiler callbacks, apply_mask (those installed only while their
// events are wanted), detach, and the end of the threads left at shutdown.
//
// The callbacks themselves are in files by concern (callbacks.h lists them and the rules they follow):
// metadata_callbacks.cpp, call_callbacks.cpp, alloc_callbacks.cpp, gc_callbacks.cpp. The room's other
// parts: state.h (configuration, flags, run-time settings), described.h (metadata described before
// use, the per-thread described cache), call_stack.h (the shadow call stack), heapshot_engine.h
// (heapshots, GC roots), stack_walker.h (backtraces), sampling.h, icalls.h.
#include "mlpd/hooks/hooks.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_set>

#include "capture/alloc_sampler.h"
#include "callbacks.h"
#include "described.h"
#include "heapshot_engine.h"
#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/late_describer.h"
#include "mlpd/capture/late_sampler.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/hooks/runtime_counters.h"
#include "mlpd/capture/sampling.h"
#include "mlpd/hooks/stack_walker.h"
#include "mono/optional.h"
#include "mono/runtime_version.h"
#include "mono/sampling_start.h"
#include "state.h"

namespace mlpd::hooks {

using namespace mlpd::format;
using namespace cb;
using namespace state;

namespace {

// The sampling signal's check (sampling.h): the interrupted thread is attached to the runtime (Mono's
// own answer when it exports it: a TLS read, as its own sampling handler does) and has a domain (a
// thread attached without one, starting or ending, makes Mono's walk print "domain required for
// stack walk" into the program's output). Before the runtime is initialised (preload start-up) no
// thread is.
bool mono_thread_sampled_managed() {
  return runtime_ready() &&
         (!mono_optional.mono_thread_info_current_unchecked || mono_optional.mono_thread_info_current_unchecked() != nullptr) &&
         mono.mono_domain_get() != nullptr;
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

}  // namespace

bool install(const HookConfig& config, const HookEnv& env, std::string& error) {
  std::string missing;
  if (!mono.bind(missing)) {
    error = "not a Mono process (" + missing + " not found)";
    return false;
  }
  return install_bound(config, env, error);
}

bool cb::install_bound(const HookConfig& config, const HookEnv& env, std::string& error) {
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
  init_call_stacks();
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
    // The version's row of layouts, read by the walker from now on (none: internals off).
    mono_layouts::select(detected.layouts);
    walker::init(detected.layouts && config.walker != 1, config.walker == 2, config.verbose);
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
  mono.mono_profiler_set_method_free_callback(h, on_method_free);
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
    set_managed_thread_check(mono_thread_sampled_managed);
    use_mono_sampling(config.late);
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
  } else {
    // AOT-compiled methods send no jit_done: their sampled frames are described on the finalizer
    // thread (late_describer.h).
    start_preload_describer();
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
  // The roots' callback too: apply_mask's choice of it follows the event mask in force (g_mask), which
  // detach leaves as it is, so with roots-every-gc and root events it stayed installed.
  mono.mono_profiler_set_gc_roots_callback(h, nullptr);
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
  // calls (attached): methods compiled from now on are not instrumented; those compiled while
  // attached keep their (now empty) profiler calls, which find no callback of ours.
  mono.mono_profiler_set_call_instrumentation_filter_callback(h, nullptr);
  mono.mono_profiler_set_method_enter_callback(h, nullptr);
  mono.mono_profiler_set_method_leave_callback(h, nullptr);
  mono.mono_profiler_set_method_tail_call_callback(h, nullptr);
  mono.mono_profiler_set_method_exception_leave_callback(h, nullptr);
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
