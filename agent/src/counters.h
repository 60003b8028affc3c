// The agent's `counter` events: the CounterSampler wired to the profiler's own counters and to Mono's
// runtime counters (found by the runtime). Owned by the Agent; used by its helper thread only.
#pragma once

#include <deque>

#include "cpu_counters.h"
#include "mlpd/agent/counter_sampler.h"
#include "mlpd/agent/profiler_counters.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::agent {

class AgentCounters {
 public:
  AgentCounters(runtime::Runtime& runtime, rt::ThreadRegistry& registry, rt::MetaLog& meta, const ProfilerCounterSources& sources);
  AgentCounters(const AgentCounters&) = delete;
  AgentCounters& operator=(const AgentCounters&) = delete;

  // One sample into the MetaLog (see CounterSampler).
  void sample() { sampler_.sample(); }
  const CounterSampler& sampler() const { return sampler_; }
  // The runtime's counters found so far (the metrics endpoint reads them too; take_new_counters
  // hands each out once, so both readers share this list). Takes the new ones first.
  const std::deque<runtime::Counter>& runtime_counters() {
    take_runtime_counters();
    return runtime_counters_;
  }
  runtime::Runtime& runtime() { return runtime_; }

 private:
  static void discover(CounterSampler& s, void* self);
  static bool read_runtime(const void* counter, uint64_t rt, uint64_t& bits);
  void take_runtime_counters();

  runtime::Runtime& runtime_;
  CounterSampler sampler_;
  CpuCounters cpu_;  // CPU time of the process and of each thread (cpu_counters.h)
  std::deque<runtime::Counter> runtime_counters_;  // a deque: the sampler keeps pointers to them
  size_t runtime_sampled_ = 0;  // runtime_counters_[0, this) are in the sampler
};

}  // namespace mlpd::agent
