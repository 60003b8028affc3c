// Mono's side of starting the sampler (sampler.cpp): the public sampling.h names no Mono type.
#pragma once

#include <mono/metadata/profiler.h>

#include <string>

#include "mlpd/capture/sampling.h"
#include "mlpd/rt/meta_log.h"

namespace mlpd::hooks {

// Installs the sampler (pool, callback, Mono's sample mode) on `handle`. Must run before the runtime
// starts. `meta` receives the events. False with a one-line reason on failure. Attached late: handle
// nullptr, the pool only (late_sampler.h).
bool start_sampling(MonoProfilerHandle handle, const SamplingConfig& config, rt::MetaLog* meta,
                    std::string& error);

// Gives the capture Mono's answers (capture/sample_capture.h): the async-safe walk of the managed
// frames in the handler, which methods are described, whether the agent attached late. Before
// start_sampling or start_late_sampling.
void use_mono_sampling(bool late);

// Changes the mode and rate at run time (Mono.Profiler.Log.LogProfiler.SampleMode/SampleFrequency).
// Only when sampling was set up at start (Mono's sampler is configured before the runtime starts);
// false otherwise or when Mono refuses. kSampleOff pauses sampling.
bool change_sampling(uint8_t mode, uint32_t freq);

// The world's stops for collections measured by the GC event callback (gc_callbacks.cpp).
void gc_pauses(runtime::GcPauses& out);

}  // namespace mlpd::hooks
