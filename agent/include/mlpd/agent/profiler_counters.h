// The profiler's own counters (section Profiler, 0x10000), as docs/format.md lists them: events
// written per kind, buffers allocated and written, bytes written, events dropped, flush latency.
// The sampling counters are added next to them by AgentCounters (agent/src/counters.cpp).
#pragma once

#include "mlpd/agent/counter_sampler.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/thread_log.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::agent {

// What the counters read. Everything is read on the helper thread, which owns the flusher.
struct ProfilerCounterSources {
  const FlushStats* flush = nullptr;
  const rt::BufferPool* pool = nullptr;
  const rt::WriterShared* shared = nullptr;
  // With calls-min: the registry whose logs count the elided calls ("Calls elided"); else nullptr.
  rt::ThreadRegistry* elision = nullptr;
};

// Adds every profiler counter to `sampler` (before its first sample, so they get the first indices).
void register_profiler_counters(CounterSampler& sampler, const ProfilerCounterSources& sources);

}  // namespace mlpd::agent
