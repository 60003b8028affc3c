#include "counters.h"

#include <iterator>
#include <vector>

#include "mlpd/conventions.h"
#include "mlpd/format.h"

namespace mlpd::agent {

AgentCounters::AgentCounters(runtime::Runtime& runtime, rt::ThreadRegistry& registry, rt::MetaLog& meta,
                             const ProfilerCounterSources& sources)
    : runtime_(runtime), sampler_(registry, meta), cpu_(&runtime) {
  register_profiler_counters(sampler_, sources);
  // Sampling (the runtime's sample_stats()): every signal the runtime delivered is exactly one of taken,
  // skipped idle or dropped for one reason, so the drops are accounted for in the file.
  struct SampleCounter {
    const char* name;
    uint64_t runtime::SampleStats::*field;
  };
  static constexpr SampleCounter kSampleCounters[] = {
      {"Samples taken", &runtime::SampleStats::taken},
      {"Samples written", &runtime::SampleStats::written},
      {"Samples skipped (thread idle)", &runtime::SampleStats::skipped_idle},
      {"Samples dropped (pool full)", &runtime::SampleStats::dropped_pool_full},
      {"Samples dropped (profiling stopped)", &runtime::SampleStats::dropped_shutdown},
      {"Samples dropped (unfinished at exit)", &runtime::SampleStats::dropped_unfinished},
      {"Samples without stack copy", &runtime::SampleStats::stack_copy_failed},
      {"Samples not unwound", &runtime::SampleStats::unwind_failed},
      {"Sample managed frames left out", &runtime::SampleStats::frames_left_out},
      // Each cut of a sample's stack by its reason (issue 33; the report's CPU section reads these
      // names: reader/views/report_cpu.cpp).
      {"Samples truncated", &runtime::SampleStats::truncated},
      {"Samples cut (frame not named)", &runtime::SampleStats::cut_unnamed},
      {"Samples cut (native stack beyond the copy)", &runtime::SampleStats::cut_copy},
  };
  for (size_t i = 0; i < std::size(kSampleCounters); ++i) {
    sampler_.add_profiler(
        kSampleCounters[i].name, format::COUNTER_ULONG, format::COUNTER_UNIT_COUNT, format::COUNTER_VARIANCE_MONOTONIC,
        [](const void* rt, uint64_t index) -> uint64_t {
          return static_cast<const runtime::Runtime*>(rt)->sample_stats().*(kSampleCounters[index].field);
        },
        &runtime_, i);
  }
  // Issue 22: the rate asked for and the rate delivered (samples written per second of the sampled
  // threads' clock, also given: CPU time with `sample`, wall time with `sample-real`). Counters that
  // can go down are signed (long): integer samples are deltas, and an unsigned one that falls is
  // written as a 64-bit wrap (`mlpd dump` showed 18446744073709551596 for a rate 20 Hz lower).
  sampler_.add_profiler(std::string(conventions::kSampleRateAsked), format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void* rt, uint64_t) -> uint64_t { return static_cast<const runtime::Runtime*>(rt)->sample_stats().freq; },
                        &runtime_);
  sampler_.add_profiler(std::string(conventions::kSampleRateDelivered), format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void* rt, uint64_t) -> uint64_t {
                          return static_cast<const runtime::Runtime*>(rt)->sample_stats().delivered_hz();
                        },
                        &runtime_);
  sampler_.add_profiler("Sampled threads' clock", format::COUNTER_LONG, format::COUNTER_UNIT_TIME,
                        format::COUNTER_VARIANCE_MONOTONIC,
                        [](const void* rt, uint64_t) -> uint64_t {
                          return static_cast<const runtime::Runtime*>(rt)->sample_stats().clock_ns / 100;
                        },
                        &runtime_);
  // Issue 15: pause/resume (1 while paused, or paused at some time since the previous sample), the
  // allocation sampling interval (alloc-sample=BYTES; 0: every allocation), CPU time.
  sampler_.add_profiler("Profiling paused", format::COUNTER_LONG, format::COUNTER_UNIT_COUNT,
                        format::COUNTER_VARIANCE_VARIABLE,
                        [](const void* rt, uint64_t) -> uint64_t {
                          // Reading resets what it reports; the Runtime given is not a const one.
                          return const_cast<runtime::Runtime*>(static_cast<const runtime::Runtime*>(rt))->paused_since_last_read();
                        },
                        &runtime_);
  sampler_.add_profiler("Allocation sample interval", format::COUNTER_ULONG, format::COUNTER_UNIT_BYTES,
                        format::COUNTER_VARIANCE_CONSTANT,
                        [](const void* rt, uint64_t) -> uint64_t { return static_cast<const runtime::Runtime*>(rt)->alloc_sample_bytes(); },
                        &runtime_);
  cpu_.add_process(sampler_);
  sampler_.set_discover(&AgentCounters::discover, this);
}

void AgentCounters::take_runtime_counters() {
  std::vector<runtime::Counter> fresh;
  runtime_.take_new_counters(fresh);
  for (runtime::Counter& c : fresh) runtime_counters_.emplace_back(std::move(c));
}

void AgentCounters::discover(CounterSampler& s, void* self) {
  auto* me = static_cast<AgentCounters*>(self);
  me->cpu_.discover(s);
  me->take_runtime_counters();
  for (; me->runtime_sampled_ < me->runtime_counters_.size(); ++me->runtime_sampled_) {
    const runtime::Counter& kept = me->runtime_counters_[me->runtime_sampled_];
    CounterSampler::Source src;
    src.desc = kept.desc;
    src.read = &AgentCounters::read_runtime;
    src.ctx = &kept;
    src.arg = reinterpret_cast<uint64_t>(&me->runtime_);
    s.add(src);
  }
}

bool AgentCounters::read_runtime(const void* counter, uint64_t rt, uint64_t& bits) {
  return reinterpret_cast<runtime::Runtime*>(rt)->read_counter(*static_cast<const runtime::Counter*>(counter), bits);
}

}  // namespace mlpd::agent
