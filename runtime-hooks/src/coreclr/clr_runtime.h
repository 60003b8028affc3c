// CoreCLR behind the runtime door (runtime-hooks/include/mlpd/runtime/runtime.h): the events its
// profiling callbacks give, written as the mlpd events Mono's profiler would write for the same things
// (docs/dotnet.md, the event-kinds table), and what .NET cannot do refused with one line.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "coreclr/clr_callspec.h"
#include "coreclr/clr_heapshot.h"
#include "coreclr/clr_names.h"
#include "coreclr/code_map.h"
#include "coreclr/event_pipe.h"
#include "coreclr/profiler.h"
#include "coreclr/profiling_api.h"
#include "mlpd/rt/events.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::coreclr {

class ClrRuntime final : public runtime::Runtime {
 public:
  ClrRuntime(ProfilerInfo* info, const RuntimeInfo& about) : info_(info), about_(about), names_(info) {}

  std::string_view name() const override { return "coreclr"; }
  // callspec= (with `calls`): Mono's call filter, evaluated on our names (clr_callspec.h).
  bool takes_option(std::string_view option) const override { return option == "callspec"; }
  bool present() const override { return info_ != nullptr; }
  std::string summary() const override;
  std::string late_refusal(const runtime::Config& config) const override;
  // `verbose`, with `calls`: how many dynamic methods ran without enter/leave events.
  std::string calls_notice() const override;

  bool install(const runtime::Config& config, const runtime::Env& env, std::string& error) override;
  // Attach: a second session's ICorProfilerInfo (the first one's is gone after its detach).
  void rebind(ProfilerInfo* info, const RuntimeInfo& about);
  // ProfilerAttachComplete: what was loaded, compiled and started before the attach (EnumModules,
  // EnumJITedFunctions2, EnumThreads).
  void catch_up();
  // Detach, from a thread of ours outside every callback: the runtime waits for the callbacks in
  // progress, then ProfilerDetachSucceeded. False with the runtime's answer in `error`.
  bool request_detach(std::string& error);
  // The sample drain's describer after an attach (capture/sampling.h's DescribeMethods).
  static void describe_late_entry(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
                                  std::vector<std::pair<uint64_t, uint64_t>>& ranges);
  void describe_late(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
                     std::vector<std::pair<uint64_t, uint64_t>>& ranges);
  void stop() override;
  void detach() override;
  void end_remaining_threads() override;

  uint32_t event_mask() const override { return mask_.load(std::memory_order_acquire); }
  void set_event_mask(uint32_t mask) override;
  bool calls_enabled() const override { return calls_; }
  uint32_t call_depth() const override;
  void set_call_depth(uint32_t depth) override;
  uint32_t max_frames() const override { return config_.maxframes; }
  bool pause() override;
  bool resume() override;
  bool paused() const override { return paused_.load(std::memory_order_acquire); }
  uint64_t pause_generation() const override { return pause_generation_.load(std::memory_order_acquire); }
  uint64_t paused_since_last_read() override;

  void round() override;
  void final_round(bool) override;
  runtime::SampleStats sample_stats() const override;
  std::string cpu_timers_not_used() const override;
  uint64_t alloc_sample_bytes() const override { return alloc_sampled_ ? event_pipe::kAllocationSamplingMean : 0; }
  std::vector<runtime::OsThread> os_threads() const override;
  void take_new_counters(std::vector<runtime::Counter>& out) override;
  bool heapshots_available() const override { return true; }  // taken when an option asked at start
  std::string heapshot_refusal() const override { return heapshots_.refusal(); }
  uint64_t request_heapshot() override { return heapshots_.request(); }
  uint64_t heapshots_done() const override { return heapshots_.done(); }
  bool read_counter(const runtime::Counter& counter, uint64_t& bits) override;

  // ---- the callbacks (profiler.cpp forwards the runtime's calls here once installed)
  void module_loaded(ModuleID module);
  void assembly_loaded(AssemblyID assembly);
  void function_compiled(FunctionID function, bool dynamic);
  void thread_created(ThreadID thread);
  void thread_assigned(ThreadID thread, DWORD os_thread);
  void thread_destroyed(ThreadID thread);
  void thread_named(ThreadID thread, const WCHAR* name, ULONG length);
  void suspend_started(SuspendReason reason);
  void suspend_finished();
  void resume_started();
  void resume_finished();
  void gc_started(int generations, const BOOL* collected);
  void gc_finished();
  void exception_thrown(ObjectID object);
  void exception_clause(uint8_t clause, FunctionID function);
  // The first pass of exception handling (which frames the runtime searches for a catcher): when it
  // enters the thread's outermost managed frame with no catcher found and that method catches nothing,
  // the exception is unhandled and the runtime aborts the process next: every thread's events are
  // written first.
  void search_function_enter(FunctionID function);
  void search_catcher_found();
  void object_allocated(ObjectID object, ClassID klass);
  // An event of our EventPipe session (EventPipeEventDelivered): lock contention (`monitor`) and
  // sampled allocations (`alloc-sample`), on the thread that raised it.
  void event_pipe_event(EVENTPIPE_PROVIDER provider, DWORD id, DWORD version, const BYTE* data, ULONG size,
                        ThreadID thread, ULONG frame_count, const UINT_PTR* frames);
  void runtime_shutdown();
  // `calls`: the runtime's FunctionIDMapper2 (clr_calls.h) for `function`, at its compilation: the
  // method described, whether to hook it, the hooks' value (its file method id).
  uint64_t map_function(FunctionID function, bool& hook);
  static uint64_t map_function_thunk(void* self, FunctionID function, bool& hook) {
    return static_cast<ClrRuntime*>(self)->map_function(function, hook);
  }
  // ReadyToRun code has no hooks: with `calls`, whether the runtime is told to ignore every image's
  // precompiled code at start (true), or each method's cached code is refused when the runtime looks
  // for it (false: use_cached_code()).
  static bool r2r_disabled_for_calls();
  // JITCachedFunctionSearchStarted's answer for `function`.
  bool use_cached_code(FunctionID function);
  // Whether `calls` hooks `function`: every method, or those the callspec includes (decided once).
  bool hooked(FunctionID function);
  // A heapshot's collection (clr_heapshot.h): its roots and surviving objects.
  HRESULT object_references(ObjectID object, ClassID klass, ULONG count, const ObjectID* refs) {
    return heapshots_.object_references(object, klass, count, refs);
  }
  void root_references(ULONG count, const ObjectID* objects, const GcRootKind* kinds, const GcRootFlags* flags,
                       const UINT_PTR* ids) {
    heapshots_.root_references(count, objects, kinds, flags, ids);
  }

  // The one runtime of the process (set by the entry point before install; null before).
  static ClrRuntime* instance() { return instance_.load(std::memory_order_acquire); }
  static void set_instance(ClrRuntime* r) { instance_.store(r, std::memory_order_release); }

 private:
  bool recording(uint32_t mask_bit) const {
    return active_.load(std::memory_order_acquire) && (mask_.load(std::memory_order_relaxed) & mask_bit);
  }
  bool active() const { return active_.load(std::memory_order_acquire); }
  void meta(Event& e);
  rt::ThreadLog* log();
  void ensure_module(ModuleID module);
  void ensure_function(FunctionID function, bool dynamic = false);
  uint64_t file_method_id(FunctionID function);
  // The outermost managed frame's method on this thread's stack now (our frame-pointer walk from the
  // caller to the chain's end), 0 when the chain shows none.
  uint64_t outermost_managed_method();
  bool may_catch(uint64_t method);
  bool thread_stack(uint64_t& lo, uint64_t& hi);  // the file's method id of `function` (dynamic methods)
  std::vector<CodeInfo> code_bodies(FunctionID function);
  // The calling thread's managed frames (outermost first, at most maxframes), by its frame-pointer
  // chain and the code map; null when backtraces are off.
  const rt::Backtrace* backtrace(rt::Backtrace& bt);
  uint64_t hidden_frame(const uint64_t* ips, const uint64_t* fps, const uint64_t* methods, unsigned walked,
                        uint64_t stack_hi, uint64_t& hidden_ip, uint64_t& hidden_at);
  void osr_caller(uint64_t fp, uint64_t caller_fp, uint64_t lowest_fp, uint64_t& ip, uint64_t& method);
  HiddenFrames osr_records_;  // where the tier-0 frame's record lies above an OSR frame's, learned
  HiddenFrames hidden_;  // frames the chain skips, learned (code_map.h)
  struct Innermost {
    FunctionID function;
    uint64_t ip;
  };
  static HRESULT innermost_frame(FunctionID function, UINT_PTR ip, COR_PRF_FRAME_INFO frame, ULONG32 context_size,
                                 BYTE* context, void* data);
  void ensure_class(ClassID klass);
  void note_class(ClassID klass);
  void describe_class_in(ClassID klass, rt::ThreadLog& l);  // a heapshot's walk (clr_heapshot.h)  // ensure_class through a lossy cache of the classes seen
  bool start_event_pipe(uint64_t keywords, EVENTPIPE_SESSION& session, std::string& error);
  bool runtime_provider(EVENTPIPE_PROVIDER provider);
  void contention_started(const BYTE* data, ULONG size, DWORD version);
  void contention_stopped(const BYTE* data, ULONG size, DWORD version);
  void allocation_sampled(const BYTE* data, ULONG size);
  ModuleID class_module(ClassID klass, int depth = 0);
  void write_sync_point(uint8_t type);
  void sync_environment();

  static inline std::atomic<ClrRuntime*> instance_{nullptr};

  ProfilerInfo* info_;
  RuntimeInfo about_;
  ClrNames names_;
  runtime::Env env_;
  runtime::Config config_;
  std::atomic<bool> active_{false};
  std::atomic<uint32_t> mask_{0};
  std::atomic<bool> paused_{false};
  std::atomic<uint64_t> pause_generation_{0};
  std::atomic<bool> paused_since_read_{false};
  uint32_t saved_mask_ = 0;
  bool alloc_at_start_ = false;  // ObjectAllocated was asked for at Initialize
  bool calls_ = false;           // `calls`: the enter/leave hooks set at Initialize (clr_calls.h)
  CallSpec callspec_;            // callspec= (empty: every method)
  std::string program_assembly_; // callspec `program`: the program's assembly's simple name
  std::unordered_map<FunctionID, bool> hooked_;        // the callspec's answer per method (meta_mutex_)
  std::atomic<uint64_t> dynamic_unhooked_{0};          // dynamic methods compiled without hooks
  std::unordered_map<ModuleID, std::string> module_assembly_;  // a module's assembly's name (meta_mutex_)
  uint32_t saved_calldepth_ = 0; // calldepth before pause()
  bool sampling_ = false;        // `sample`/`sample-real` started (install)
  bool late_ = false;            // attached to a running program (`mlpd attach`)
  std::atomic<bool> monitor_at_start_{false};  // a session of ours has the contention keyword
  DWORD low_ = 0, high_ = 0;       // the event mask asked of the runtime (install, set_event_mask)
  bool alloc_sampled_ = false;     // alloc-sample: allocations come from AllocationSampled events
  EVENTPIPE_SESSION session_ = 0;  // our EventPipe session (0: none)
  EVENTPIPE_SESSION contention_session_ = 0;  // one started by `events +monitor` after start (0: none)
  std::atomic<EVENTPIPE_PROVIDER> provider_{0};  // Microsoft-Windows-DotNETRuntime, once seen
  std::mutex control_mutex_;

  // What has been described (metadata before use), under meta_mutex_.
  std::mutex meta_mutex_;
  std::unordered_set<ModuleID> modules_;
  std::unordered_set<FunctionID> functions_;
  std::unordered_map<FunctionID, uint32_t> dynamic_generation_;  // dynamic methods' reused FunctionIDs
  std::unordered_set<UINT_PTR> bodies_;  // code start addresses described (one per tier/version)
  CodeMap code_map_;  // every body described, for backtraces
  std::unordered_set<FunctionID> without_code_;  // named before the runtime published its code
  std::unordered_set<ClassID> classes_;  // described as class and vtable (one ClassID is both)
  std::unordered_set<ClassID> classes_in_logs_;  // of those, described in a heapshot walk's buffer
  std::unordered_set<FunctionID> lock_functions_;  // the locks' own methods (Monitor, Lock): not sites
  ModuleID first_module_ = 0;            // System.Private.CoreLib: the image of what names none
  std::atomic<ModuleID> corelib_{0};     // the same, read without the lock (a heapshot's walk)

  // Threads: the runtime's ThreadID -> the file's thread id (pthread_self of the thread).
  struct ThreadState {
    uint64_t tid = 0;  // 0 until the thread runs on its OS thread
    int os_tid = 0;
    bool started = false;
    bool ended = false;
    std::string name;
  };
  mutable std::mutex threads_mutex_;
  std::unordered_map<ThreadID, ThreadState> threads_;

  // The runtime's counters, named after .NET's own metrics (System.Runtime): cheap relaxed counts
  // the callbacks keep; the agent's counter sampler reads them (take_new_counters, read_counter).
  enum CounterId { kGen0, kGen1, kGen2, kPauseNs, kJitted, kExceptions, kHeapBytes, kThreads, kContentions, kCounterCount };
  std::atomic<uint64_t> counts_[kCounterCount] = {};
  bool counters_given_ = false;
  std::atomic<uint64_t> suspend_start_ns_{0};

  // Heapshots (clr_heapshot.h): COR_PRF_MONITOR_GC in the mask while heap_low_ has it.
  ClrHeapshots heapshots_;
  DWORD heap_low_ = 0;  // under control_mutex_
  bool set_heap_monitoring(bool on);

  // The collection in progress (GarbageCollectionStarted .. Finished: one at a time).
  std::atomic<uint8_t> gc_generation_{0};
  std::atomic<bool> gc_suspension_{false};  // the runtime is suspended for a collection
};

}  // namespace mlpd::coreclr
