// Mono's side of starting the sampler (sampler.cpp): the public sampling.h names no Mono type.
#pragma once

#include <mono/metadata/profiler.h>

#include <string>

#include "mlpd/hooks/sampling.h"
#include "mlpd/rt/meta_log.h"

namespace mlpd::hooks {

// Installs the sampler (pool, callback, Mono's sample mode) on `handle`. Must run before the runtime
// starts. `meta` receives the events. False with a one-line reason on failure. Attached late: handle
// nullptr, the pool only (late_sampler.h).
bool start_sampling(MonoProfilerHandle handle, const SamplingConfig& config, rt::MetaLog* meta,
                    std::string& error);

}  // namespace mlpd::hooks
