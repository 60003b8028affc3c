// Statistical sampling (`sample`, `sample-real`): per-thread CPU-time timers (`sample`, when the
// kernel has them: src/cpu_timers.h) or Mono's sampler thread, which signals every attached
// thread; our sample-hit callback runs in signal context and records the sample into a preallocated
// lock-free pool (sampler.cpp). The helper thread drains the pool each flush round, unwinds the
// native frames from the copied registers and stack top, names native code, and writes
// TYPE_SAMPLE_HIT / TYPE_SAMPLE_USYM events into the MetaLog (sample_drain.cpp).
// docs/design.md, "Sampling", has the safety argument.
#pragma once

#include <mono/metadata/profiler.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/rt/meta_log.h"

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

// What happened to the samples so far (relaxed counters; for the profiler counters and `verbose`).
// Safe to call from any thread at any time. After the final drain every signal our callback saw is
// exactly one of: taken, skipped_idle, dropped_pool_full, dropped_shutdown, dropped_unfinished.
// `taken` counts a record when the helper drains it (before that a filled record is in none), and
// every drained record is written: taken == written between drains. stack_copy_failed,
// unwind_failed and frames_left_out describe samples that were written with less than everything.
struct SampleStats {
  uint64_t taken = 0;              // recorded into the pool
  uint64_t written = 0;            // written as TYPE_SAMPLE_HIT events
  uint64_t skipped_idle = 0;       // `sample` (CPU time): the thread has not used a sampling period of
                                   // CPU since its last sample, or is blocked in the kernel
  uint64_t dropped_pool_full = 0;  // no free record (maxsamples records in flight)
  uint64_t dropped_shutdown = 0;   // arrived after profiling stopped (shutdown, output failure, fork)
  uint64_t dropped_unfinished = 0; // still being filled when the final drain ran (not in `taken`)
  uint64_t stack_copy_failed = 0;  // recorded with the leaf IP only: the stack top could not be copied
  uint64_t unwind_failed = 0;      // recorded with the leaf IP only: no unwind info for the leaf
  uint64_t frames_left_out = 0;    // managed frames not written: method unknown (AOT, wrappers) and
                                   // every frame above it (the chain stops there)
  uint64_t handler_ns = 0;         // time spent in the signal handler for the taken samples (sum)
  uint64_t drain_ns = 0;           // time the helper spent turning samples into events (sum)
  uint64_t truncated = 0;          // samples written cut at their root because the stack is deeper
                                   // than the frames kept (256 managed, 256 native): [truncated]
  uint64_t cut_unnamed = 0;        // samples cut at a managed frame whose method nobody could name
                                   // (frames_left_out has the frames): [stack cut]
  uint64_t cut_copy = 0;           // samples whose native stack goes on beyond the 16 KiB copied
                                   // (the native frames between it and the managed ones are missing)
  uint64_t clock_ns = 0;           // the sampled threads' clock between their signals (CPU time in
                                   // `sample`, wall time in `sample-real`): what the samples stand for
  uint64_t freq = 0;               // the rate asked for (Hz; 0: off)
  const char* engine = "";         // what sends the signals (`verbose`): per-thread CPU timers, or a
                                   // sampler thread signalling every thread (Mono's, or ours attached)
  uint64_t threads_without_timer = 0;  // CPU timers: threads that could not get one (not sampled)
  // Samples written per second of the sampled threads' clock: the rate delivered (0: none yet).
  uint64_t delivered_hz() const { return clock_ns ? static_cast<uint64_t>(static_cast<double>(written) * 1e9 / static_cast<double>(clock_ns) + 0.5) : 0; }
};

SampleStats sample_stats();
// Why `sample` does not run on per-thread CPU timers ("" when it does, or was not asked for).
std::string cpu_timers_not_used();

// Installs the sampler (pool, callback, Mono's sample mode) on `handle`. Must run before the runtime
// starts. `meta` receives the events. False with a one-line reason on failure.
bool start_sampling(MonoProfilerHandle handle, const SamplingConfig& config, rt::MetaLog* meta,
                    std::string& error);

// Attached late: the pool only (handle nullptr to start_sampling); our own sampler's signal handler
// calls this with its ucontext_t. `managed`: the thread is attached to the runtime (its managed frames
// are walked); other threads get their native frames only.
void sample_from_signal(const void* context, bool managed);
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

// Changes the mode and rate at run time (Mono.Profiler.Log.LogProfiler.SampleMode/SampleFrequency).
// Only when sampling was set up at start (Mono's sampler is configured before the runtime starts);
// false otherwise or when Mono refuses. kSampleOff pauses sampling.
bool change_sampling(uint8_t mode, uint32_t freq);

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
