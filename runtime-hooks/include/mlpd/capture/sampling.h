// Statistical sampling (`sample`, `sample-real`): per-thread CPU-time timers (`sample`, when the
// kernel has them: src/capture/cpu_timers.h), our sampler thread (late_sampler.h) or the runtime's
// own (Mono's, which signals every attached thread); the handler runs in signal context and records
// the sample into a preallocated lock-free pool (capture/sample_capture.cpp). The helper thread drains
// the pool each flush round, unwinds the native frames from the copied registers and stack top, names
// native code, and writes TYPE_SAMPLE_HIT / TYPE_SAMPLE_USYM events into the MetaLog
// (capture/sample_drain.cpp). The runtime-neutral capture room: no runtime's header here.
// docs/design.md, "Sampling", has the safety argument.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/rt/meta_log.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::hooks {

inline constexpr uint8_t kSampleOff = 0;
inline constexpr uint8_t kSampleProcess = 1;  // `sample`: process CPU time
inline constexpr uint8_t kSampleReal = 2;     // `sample-real`: wall clock

struct SamplingConfig {
  uint8_t mode = kSampleOff;
  uint32_t freq = 100;        // Hz
  uint64_t pool = 1000;       // sample records in flight (maxsamples); clamped to 1..kMaxSamplePool
  uint32_t maxframes = 32;    // maxframes: below 32 limits samples to that many managed and native
                              // frames (each); 32 (the default) lets them keep 256
};

// What happened to the samples so far: runtime.h's SampleStats (relaxed counters; for the profiler
// counters and `verbose`). Safe to call from any thread at any time.
using SampleStats = runtime::SampleStats;

SampleStats sample_stats();
// Why `sample` does not run on per-thread CPU timers ("" when it does, or was not asked for).
std::string cpu_timers_not_used();

// start_sampling (Mono's sampler on a profiler handle) and change_sampling: mono/sampling_start.h;
// what a runtime gives the capture: src/capture/sample_capture.h.

// Attached late: the pool only (handle nullptr to start_sampling); our own sampler's signal handler
// calls this with its ucontext_t. `managed`: the thread is attached to the runtime (its managed frames
// are walked); other threads get their native frames only.
void sample_from_signal(const void* context, bool managed);
// Whether the thread a sampling signal interrupted has managed frames the runtime walks in the
// handler (Mono: attached, with a domain), asked by the CPU timers' and our sampler thread's handlers.
// Not set (nullptr): no thread has; every frame is unwound by the helper from the stack copy (.NET,
// whose JIT keeps frame-pointer chains: the JIT ranges in the file name its frames). Set before
// sampling starts; async-signal-safe.
void set_managed_thread_check(bool (*check)());
bool sampled_thread_managed();
// Whether a check was set: false means the helper unwinds JIT'd frames too (native_unwind.cpp).
bool managed_walk_in_handler();
// The expiry of the interrupted thread's CPU-time timer (cpu_timers.h): a sample standing for
// `periods` periods of its CPU (1 + the timer's overrun), recorded without charge_cpu's test.
void sample_from_timer(const void* context, bool managed, uint64_t periods);

// The drain (helper thread, which cannot call Mono) hands the sampled frames whose method is not
// described yet to `fn`, which describes them on a thread attached to the runtime before it returns
// (bounded: what it could not describe cuts the samples as before, counted in cut_unnamed): methods
// compiled before a late attach, and AOT-compiled methods (no jit_done), with or without a preload.
// `methods[i]` is the frame's method; `code[i]` an address in its code when known (else 0): its range
// is described too, so that the samples' IPs name it. methods[i] == 0: code[i] is an address whose
// method is wanted: a frame's code start the walk gave without a method (AOT code met in an async
// context, issue 33.1) or a native IP outside every module (JIT'd code compiled before the attach: a
// wrapper or a method the walk did not give, issue 33.3); its method is described with its range if
// the runtime's JIT info table knows one. `resolved[i]` receives the method described for entry i (0:
// none; kNotAnswered: no answer in time). `ranges` receives the code ranges (start, size) described,
// and (code[i], 0) for an address no method covers (a trampoline). nullptr: off.
using DescribeMethods = void (*)(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
                                 std::vector<std::pair<uint64_t, uint64_t>>& ranges);
void set_describe_methods(DescribeMethods fn);
// resolved[i] when the describer did not answer (held up, or not running yet): ask again later.
inline constexpr uint64_t kNotAnswered = ~uint64_t{0};

// Signals arriving from now on are counted as dropped_shutdown. Safe from any thread.
void stop_sampling();
// Detach (after stop_sampling and the drain's end): the sample records' pages go back to the system
// (madvise MADV_DONTNEED; nothing is unmapped: a handler delivered just before may still write one).
void release_sample_pages();

// Helper thread only: turns every completed sample into events in the MetaLog (native symbols
// first). `final` first closes the pool (a handler that passed the stop check finds no record and
// counts dropped_shutdown), counts every record still being written as dropped_unfinished, and makes
// every later call do nothing. Cheap when idle.
void drain_samples(bool final = false);

}  // namespace mlpd::hooks
