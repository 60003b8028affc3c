// Heapshots on .NET (docs/dotnet.md, "Heapshots"): a full collection forced by a thread of ours
// (ICorProfilerInfo::ForceGC) with COR_PRF_MONITOR_GC switched on only around it; the runtime then
// reports the collection's roots (RootReferences2) and every surviving object with its references
// (ObjectReferences), which are written as the heap events Mono's profiler writes: HEAP_START, the
// roots (heap_root, in root ranges registered as Mono's kinds), one HEAP_OBJECT per object, HEAP_END,
// all in the collecting thread's buffers, so `mlpd heapshots` and the retention views read them
// unchanged.
//
// The mask: the runtime lets COR_PRF_MONITOR_GC be switched on after Initialize only while concurrent
// GC is off, and turns concurrent GC off (for good) only for a profiler that asks for MONITOR_GC at
// Initialize. So a run that may take heapshots asks for it at Initialize and clears it once the
// runtime has started (concurrent GC stays off: the price of the run, measured in docs/dotnet.md);
// each heapshot sets it for its one forced collection. With `heapshot` (every major collection) it
// stays on and every full collection is walked.
//
// Threads: requests from any thread (atomics, a condition variable); the forced collections on our
// own thread (the runtime runs a workstation collection on the thread that forces it); the walk's
// callbacks on the collecting thread with the world stopped: they take no lock that a suspended
// thread could hold except the metadata lock of a class seen for the first time, and allocate only
// for such a class.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "coreclr/profiling_api.h"
#include "mlpd/rt/thread_log.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::coreclr {

class ClrHeapshots {
 public:
  struct Hooks {
    std::function<bool(bool on)> monitor_gc;        // COR_PRF_MONITOR_GC on/off (false: refused)
    std::function<rt::ThreadLog*()> log;            // the calling thread's log (null: none)
    // The class and vtable described before their first use in `log` (the walk's buffer: mprof-report
    // resolves a heap object's class when it reads the object, so the description must come first in
    // the file); nothing when already described.
    std::function<void(ClassID, rt::ThreadLog&)> describe_class;
    std::function<bool()> active;                   // profiling is on
    std::function<bool()> paused;                   // `pause`: periodic heapshots wait
  };

  // At install (Initialize): whether heapshots may be taken in this run, and so whether
  // COR_PRF_MONITOR_GC must be asked for at Initialize.
  bool configure(const runtime::Config& config, ProfilerInfo* info, int info_level, Hooks hooks);
  bool monitor_at_start() const { return enabled_; }
  // The runtime has started (its first module loaded): MONITOR_GC can be cleared (the runtime
  // turned concurrent GC off when Initialize returned). Helper thread.
  void runtime_started();

  bool available() const { return enabled_; }
  std::string refusal() const;  // why request() returns 0 while profiling runs
  uint64_t request();  // a ticket; 0 when none can be taken (never blocks)
  uint64_t done() const { return done_.load(std::memory_order_acquire); }

  // Collections (BASIC_GC's start/finish, on the collecting thread).
  void gc_started(bool full);
  void gc_finished(bool full);
  // The walk's callbacks (collecting thread, world stopped). object_references returns a failure
  // outside a heapshot, which stops the runtime's walk of the heap for that collection.
  HRESULT object_references(ObjectID object, ClassID klass, ULONG count, const ObjectID* refs);
  void root_references(ULONG count, const ObjectID* objects, const GcRootKind* kinds, const GcRootFlags* flags,
                       const UINT_PTR* ids);
  // `heapshot-on-shutdown`: one heapshot now, as the program ends (the runtime's Shutdown callback, or
  // an unhandled exception about to end the process), taken by our thread while the caller waits. The
  // wait is bounded by progress: it gives up when the collection has not begun, or the walk has
  // reported nothing more, for `stall_ms` (the runtime then could not collect: the exit goes on).
  // Returns whether the heapshot was written; says so with `verbose` either way.
  bool take_final(const char* when, uint32_t stall_ms, bool verbose);
  bool on_shutdown() const { return on_shutdown_; }
  // Stops our thread (detach, shutdown); a request pending then stays pending. Idempotent.
  void stop();

  // Counts for verbose and the docs' figures.
  uint64_t weak_roots_skipped() const { return weak_skipped_.load(std::memory_order_relaxed); }
  uint64_t last_pause_ns() const { return last_force_ns_.load(std::memory_order_relaxed); }

 private:
  bool pending() const {
    return requested_.load(std::memory_order_acquire) > begun_.load(std::memory_order_acquire);
  }
  uint64_t add_request();
  void wake();
  void ensure_thread();
  void thread_main();
  void begin_walk();  // first callback of a walked collection: registrations, HEAP_START
  uint8_t generation_of(ObjectID object) const;
  bool seen(ClassID klass);  // true if already seen in this walk (else remembered)

  ProfilerInfo* info_ = nullptr;
  Hooks hooks_;
  bool enabled_ = false;
  uint8_t mode_ = 0;
  uint32_t every_ms_ = 0, every_gc_ = 0;
  bool keep_monitor_ = false;
  bool on_shutdown_ = false;    // heapshot-on-shutdown
  std::atomic<bool> final_taken_{false};  // take_final() ran (one per run)
  std::atomic<uint64_t> progress_{0};     // walk callbacks so far (take_final's bound)
  std::atomic<uint64_t> failures_{0};     // requests our thread could not take (refused)
  bool frozen_check_ = false;  // `heapshot`: every full collection is walked
  std::atomic<bool> started_{false};  // runtime_started() ran
  std::atomic<bool> monitor_on_{false};

  std::atomic<uint64_t> requested_{0}, begun_{0}, done_{0};
  std::atomic<bool> forcing_{false};  // our thread is inside ForceGC
  uint64_t majors_ = 0;               // full collections not forced by us (heapshot=NUMgc)
  uint64_t last_shot_ns_ = 0;
  std::atomic<uint64_t> last_force_ns_{0};

  // The collection being walked (collecting thread only; one collection at a time).
  bool armed_ = false;    // this collection is a heapshot's
  bool walking_ = false;  // HEAP_START written
  uint64_t shot_ = 0;
  uint64_t dropped_before_ = 0;
  rt::ThreadLog* log_ = nullptr;
  uint64_t root_seq_[8] = {};
  GenerationRange bounds_[16] = {};
  ULONG bound_count_ = 0;
  std::atomic<uint64_t> weak_skipped_{0};
  static constexpr size_t kSeenSlots = 1 << 14;
  ClassID seen_[kSeenSlots] = {};
  size_t seen_count_ = 0;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
  bool thread_started_ = false;
  std::atomic<bool> stopping_{false};
};

}  // namespace mlpd::coreclr
