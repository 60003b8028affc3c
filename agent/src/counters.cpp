#include "counters.h"

#include <iterator>
#include <vector>

#include "mlpd/conventions.h"
#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/sampling.h"

namespace mlpd::agent {

AgentCounters::AgentCounters(rt::ThreadRegistry& registry, rt::MetaLog& meta, const ProfilerCounterSources& sources)
    : sampler_(registry, meta) {
  register_profiler_counters(sampler_, sources);
  // Sampling (hooks::sample_stats()): every signal the runtime delivered is exactly one of taken,
  // skipped idle or dropped for one reason, so the drops are accounted for in the file.
  struct SampleCounter {
    const char* name;
    uint64_t hooks::SampleStats::*field;
  };
  static constexpr SampleCounter kSampleCounters[] = {
      {"Samples taken", &hooks::SampleStats::taken},
      {"Samples written", &hooks::SampleStats::written},
      {"Samples skipped (thread idle)", &hooks::SampleStats::skipped_idle},
      {"Samples dropped (pool full)", &hooks::SampleStats::dropped_pool_full},
      {"Samples dropped (profiling stopped)", &hooks::SampleStats::dropped_shutdown},
      {"Samples dropped (unfinished at exit)", &hooks::SampleStats::dropped_unfinished},
      {"Samples without stack copy", &hooks::SampleStats::stack_copy_failed},
      {"Samples not unwound", &hooks::SampleStats::unwind_failed},
      {"Sample managed frames left out", &hooks::SampleStats::frames_left_out},
      {"Samples truncated", &hooks::SampleStats::truncated},
  };
  for (size_t i = 0; i < std::size(kSampleCounters); ++i) {
    sampler_.add_profiler(
        kSampleCounters[i].name, format::COUNTER_ULONG, format::COUNTER_UNIT_COUNT, format::COUNTER_VARIANCE_MONOTONIC,
        [](const void*, uint64_t index) -> uint64_t { return hooks::sample_stats().*(kSampleCounters[index].field); },
        nullptr, i);
  }
  // Issue 22: the rate asked for and the rate delivered (samples written per second of the sampled
  // threads' clock, also given: CPU time with `sample`, wall time with `sample-real`). Counters that
  // can go down are signed (long): integer samples are deltas, and an unsigned one that falls is
  // written as a 64-bit wrap (`mlpd dump` showed 18446744073709551596 for a rate 20 Hz lower).
  sampler_.add_profiler(std::string(conventions::kSampleRateAsked), format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void*, uint64_t) -> uint64_t { return hooks::sample_stats().freq; }, nullptr);
  sampler_.add_profiler(std::string(conventions::kSampleRateDelivered), format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void*, uint64_t) -> uint64_t { return hooks::sample_stats().delivered_hz(); }, nullptr);
  sampler_.add_profiler("Sampled threads' clock", format::COUNTER_LONG, format::COUNTER_UNIT_TIME,
                        format::COUNTER_VARIANCE_MONOTONIC,
                        [](const void*, uint64_t) -> uint64_t { return hooks::sample_stats().clock_ns / 100; }, nullptr);
  // Issue 15: pause/resume (1 while paused, or paused at some time since the previous sample), the
  // allocation sampling interval (alloc-sample=BYTES; 0: every allocation), CPU time.
  sampler_.add_profiler("Profiling paused", format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void*, uint64_t) -> uint64_t { return hooks::paused_since_last_read(); }, nullptr);
  sampler_.add_profiler("Allocation sample interval", format::COUNTER_ULONG, format::COUNTER_UNIT_BYTES,
                        format::COUNTER_VARIANCE_CONSTANT,
                        [](const void*, uint64_t) -> uint64_t { return hooks::alloc_sample_bytes(); }, nullptr);
  cpu_.add_process(sampler_);
  sampler_.set_discover(&AgentCounters::discover, this);
}

void AgentCounters::discover(CounterSampler& s, void* self) {
  auto* me = static_cast<AgentCounters*>(self);
  me->cpu_.discover(s);
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
