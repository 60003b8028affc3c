// Sampling after attach (`mlpd attach`). `sample` runs on per-thread CPU-time timers when the kernel
// has them (src/cpu_timers.h); otherwise, and for `sample-real`, as follows. Mono starts its sampler thread only when a profiler enabled
// sampling before start-up (mono_profiler_enable_sampling refuses afterwards), so an attached agent
// brings its own: one thread ("mlpd-sampler") that sends a real-time signal nobody uses to each of
// the process's threads at the rate asked for (in `sample` mode each time the process has used one
// period of CPU, as Mono's does), and a handler that records the sample exactly as Mono's callback
// does (sampler.cpp: the same pool, the same CPU-time charging, the same drain). Threads that are
// not attached to the runtime (ours, native ones) are recorded with their native frames only.
#pragma once

#include <string>

#include "mlpd/capture/sampling.h"
#include "mlpd/rt/meta_log.h"

namespace mlpd::hooks {

// Installs the pool, the signal handler and the thread. False with a one-line reason.
bool start_late_sampling(const SamplingConfig& config, rt::MetaLog* meta, std::string& error);
// Ends the thread, waits until no thread has our signal pending (bounded), then puts the signal's
// previous action back. Does nothing when not started.
void stop_late_sampling();

}  // namespace mlpd::hooks
