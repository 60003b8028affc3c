// The internal calls behind the managed run-time control API Mono.Profiler.Log.LogProfiler
// (Mono.Profiler.Log.dll). Mono's log profiler registers them when the runtime is initialised; a
// program asks `LogProfiler.IsAttached` (true iff GetMaxStackTraceFrames resolves) and then reads or
// changes the event mask, call depth, backtrace depth, heapshot and sampling settings while it runs.
// We register the same names, so that API works under our agent as it does under Mono's profiler.
#pragma once

#include <cstdint>

namespace mlpd::hooks {

// The heapshot and sampling settings as LogProfiler sets them, so that what a program sets it reads
// back. The heapshot ones are also handed to the heapshot engine (heapshot.h) whenever they change;
// the sampling ones are applied to Mono's sampler when sampling was set up at start (sampling.h).
struct LogProfilerSettings {
  uint8_t heapshot_mode = 0;   // format::HEAPSHOT_* (Mono's internal numbering, NOT the managed enum's)
  uint32_t heapshot_ms = 0;    // HEAPSHOT_X_MS: at most every this many milliseconds
  uint32_t heapshot_gc = 0;    // HEAPSHOT_X_GC: every this many major collections
  uint8_t sample_mode = 0;     // MonoProfilerSampleMode: 0 none, 1 process (CPU time), 2 real (wall clock)
  uint32_t sample_freq = 100;  // Hz (Mono's default)
};

// Sets the starting values (from the options), before the program can change them, and applies the
// heapshot policy. Optional: without it the settings start as Mono's defaults (no heapshots, no
// sampling at 100 Hz).
void seed_log_profiler_settings(const LogProfilerSettings& settings);

// The current settings (a consistent snapshot).
LogProfilerSettings log_profiler_settings();

// Registers every `Mono.Profiler.Log.LogProfiler::*` internal call with mono_add_internal_call. Call
// once, when the runtime is initialised (before managed code can call LogProfiler). Does nothing when
// mono_add_internal_call cannot be found.
void register_log_profiler_icalls();

// Called (on the calling managed thread) after LogProfiler.TriggerHeapshot() has taken its heapshot;
// nullptr: nothing. The flight recorder sets it so that the heapshot a program asks for reaches a
// file (docs/flight-recorder.md). The function must not block.
void set_after_trigger_heapshot(void (*fn)());

}  // namespace mlpd::hooks
