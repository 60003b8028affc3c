// The agent's `counter` events: the CounterSampler wired to the profiler's own counters and to Mono's
// runtime counters (found by the hooks). Owned by the Agent; used by its helper thread only.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "cpu_counters.h"
#include "mlpd/agent/counter_sampler.h"
#include "mlpd/agent/profiler_counters.h"
#include "mlpd/hooks/runtime_counters.h"

namespace mlpd::agent {

// The Mono AOT images loaded in this process (file names: "mscorlib.dll.so"): modules named
// *.dll.so / *.exe.so that export mono_aot_file_info. Their methods run without jit_done and without
// enter/leave events (issue 33). Any thread; scans the loader's list again only when it grew.
std::vector<std::string> aot_images();

class AgentCounters {
 public:
  AgentCounters(rt::ThreadRegistry& registry, rt::MetaLog& meta, const ProfilerCounterSources& sources);
  AgentCounters(const AgentCounters&) = delete;
  AgentCounters& operator=(const AgentCounters&) = delete;

  // One sample into the MetaLog (see CounterSampler).
  void sample() { sampler_.sample(); }
  const CounterSampler& sampler() const { return sampler_; }

 private:
  static void discover(CounterSampler& s, void* self);
  static bool read_runtime(const void* counter, uint64_t, uint64_t& bits);

  CounterSampler sampler_;
  CpuCounters cpu_;  // CPU time of the process and of each thread (cpu_counters.h)
  std::deque<hooks::RuntimeCounter> runtime_;  // a deque: the sampler keeps pointers to them
  std::vector<std::string> aot_;               // the AOT images that have their counter
};

}  // namespace mlpd::agent
