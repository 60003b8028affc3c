#include "mlpd/agent/profiler_counters.h"

#include <string>

#include "mlpd/format.h"

namespace mlpd::agent {

using namespace mlpd::format;

namespace {

uint64_t event_total(const void* sampler, uint64_t kind) {
  return static_cast<const CounterSampler*>(sampler)->event_totals()[kind];
}
uint64_t buffers_allocated(const void* pool, uint64_t) { return static_cast<const rt::BufferPool*>(pool)->allocated(); }
uint64_t buffers_written(const void* f, uint64_t) { return static_cast<const FlushStats*>(f)->buffers_written; }
uint64_t bytes_written(const void* f, uint64_t) { return static_cast<const FlushStats*>(f)->bytes; }
uint64_t events_dropped(const void* shared, uint64_t) {
  return static_cast<const rt::WriterShared*>(shared)->dropped_events.load(std::memory_order_relaxed);
}
uint64_t calls_elided(const void* registry, uint64_t) {
  return const_cast<rt::ThreadRegistry*>(static_cast<const rt::ThreadRegistry*>(registry))->elided_calls();
}
// Mono's unit of time for counters (COUNTER_UNIT_TIME) is 100 ns.
uint64_t latency_last(const void* f, uint64_t) { return static_cast<const FlushStats*>(f)->latency_last_ns / 100; }
uint64_t latency_max(const void* f, uint64_t) { return static_cast<const FlushStats*>(f)->latency_max_ns / 100; }

}  // namespace

void register_profiler_counters(CounterSampler& s, const ProfilerCounterSources& src) {
  // Counts are ulong: mprof-report 6.8 prints long values with %u (the low 32 bits only).
  for (size_t k = 0; k < kEventKindCount; ++k) {
    s.add_profiler("Event: " + std::string(kEventKindNames[k]), COUNTER_ULONG, COUNTER_UNIT_COUNT,
                   COUNTER_VARIANCE_MONOTONIC, event_total, &s, k);
  }
  s.add_profiler("Events dropped", COUNTER_ULONG, COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC, events_dropped,
                 src.shared);
  s.add_profiler("Buffers allocated", COUNTER_ULONG, COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC,
                 buffers_allocated, src.pool);
  s.add_profiler("Buffers written", COUNTER_ULONG, COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC, buffers_written,
                 src.flush);
  s.add_profiler("Bytes written", COUNTER_ULONG, COUNTER_UNIT_BYTES, COUNTER_VARIANCE_MONOTONIC, bytes_written,
                 src.flush);
  if (src.elision) {
    s.add_profiler("Calls elided", COUNTER_ULONG, COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC, calls_elided,
                   src.elision);
  }
  // Long + time: mprof-report prints these in ms (value / 10000).
  s.add_profiler("Flush latency (last)", COUNTER_LONG, COUNTER_UNIT_TIME, COUNTER_VARIANCE_VARIABLE, latency_last,
                 src.flush);
  s.add_profiler("Flush latency (max)", COUNTER_LONG, COUNTER_UNIT_TIME, COUNTER_VARIANCE_MONOTONIC, latency_max,
                 src.flush);

  // The sampling counters are added right after these, in AgentCounters (agent/src/counters.cpp),
  // which can reach the runtime hooks.
}

}  // namespace mlpd::agent
