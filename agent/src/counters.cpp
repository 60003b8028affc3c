#include "counters.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
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
      // Each cut of a sample's stack by its reason (issue 33; the report's CPU section reads these
      // names: reader/views/report_cpu.cpp).
      {"Samples truncated", &hooks::SampleStats::truncated},
      {"Samples cut (frame not named)", &hooks::SampleStats::cut_unnamed},
      {"Samples cut (native stack beyond the copy)", &hooks::SampleStats::cut_copy},
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

namespace {

// The AOT images loaded (aot_images()): scanned again only when the loader has added modules.
std::mutex g_aot_mutex;
unsigned long long g_aot_adds = ~0ull;
std::vector<std::string> g_aot_names, g_aot_checked;

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

struct ModuleScan {
  unsigned long long adds = 0;
  std::vector<std::string> candidates;
};

int scan_module(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<ModuleScan*>(data);
  scan->adds = info->dlpi_adds;
  if (info->dlpi_name && info->dlpi_name[0]) {
    std::string name = info->dlpi_name;
    if (ends_with(name, ".dll.so") || ends_with(name, ".exe.so")) scan->candidates.push_back(std::move(name));
  }
  return 0;
}

}  // namespace

std::vector<std::string> aot_images() {
  std::lock_guard<std::mutex> lock(g_aot_mutex);
  ModuleScan scan;
  dl_iterate_phdr(scan_module, &scan);
  if (scan.adds == g_aot_adds) return g_aot_names;
  g_aot_adds = scan.adds;
  for (const std::string& path : scan.candidates) {
    if (std::find(g_aot_checked.begin(), g_aot_checked.end(), path) != g_aot_checked.end()) continue;
    g_aot_checked.push_back(path);
    // Loaded already (RTLD_NOLOAD: nothing is loaded, the reference taken is given back at once): a
    // Mono AOT image exports its file info under this name (aot-runtime.c, MONO_AOT_FILE_INFO).
    if (void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      const bool aot = dlsym(h, "mono_aot_file_info") != nullptr;
      dlclose(h);
      if (aot) g_aot_names.push_back(path.substr(path.rfind('/') + 1));
    }
  }
  return g_aot_names;
}

void AgentCounters::discover(CounterSampler& s, void* self) {
  auto* me = static_cast<AgentCounters*>(self);
  me->cpu_.discover(s);
  // Issue 33: each AOT image loaded, one counter "AOT image loaded: NAME" (value 1). Their methods
  // send neither jit_done nor enter/leave events: the report's calls section says it does not see
  // them (and how to: mono -O=-aot).
  for (const std::string& name : aot_images()) {
    if (std::find(me->aot_.begin(), me->aot_.end(), name) != me->aot_.end()) continue;
    me->aot_.push_back(name);
    s.add_profiler("AOT image loaded: " + name, format::COUNTER_ULONG, format::COUNTER_UNIT_COUNT,
                   format::COUNTER_VARIANCE_CONSTANT, [](const void*, uint64_t) -> uint64_t { return 1; }, nullptr);
  }
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
