#include "counters.h"

#include <vector>

namespace mlpd::agent {

AgentCounters::AgentCounters(rt::ThreadRegistry& registry, rt::MetaLog& meta, const ProfilerCounterSources& sources)
    : sampler_(registry, meta) {
  register_profiler_counters(sampler_, sources);
  // ---- Sampling counters: THE place to add them (issue 4, sampling branch). ----
  // hooks::sample_stats() gives the samples taken and the samples dropped per reason; add one
  // counter per figure, for example:
  //   sampler_.add_profiler("Samples taken", format::COUNTER_ULONG, format::COUNTER_UNIT_COUNT,
  //                         format::COUNTER_VARIANCE_MONOTONIC,
  //                         [](const void*, uint64_t) -> uint64_t { return hooks::sample_stats().taken; }, nullptr);
  // Nothing else needs to change: they are described and sampled with the others.
  sampler_.set_discover(&AgentCounters::discover, this);
}

void AgentCounters::discover(CounterSampler& s, void* self) {
  auto* me = static_cast<AgentCounters*>(self);
  std::vector<hooks::RuntimeCounter> fresh;
  hooks::take_new_runtime_counters(fresh);
  for (hooks::RuntimeCounter& c : fresh) {
    const hooks::RuntimeCounter& kept = me->runtime_.emplace_back(std::move(c));
    CounterSampler::Source src;
    src.desc = kept.desc;
    src.read = &AgentCounters::read_runtime;
    src.ctx = &kept;
    s.add(src);
  }
}

bool AgentCounters::read_runtime(const void* counter, uint64_t, uint64_t& bits) {
  return hooks::read_runtime_counter(*static_cast<const hooks::RuntimeCounter*>(counter), bits);
}

}  // namespace mlpd::agent
