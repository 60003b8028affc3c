// Mono's half of sampling: its sampler thread (started by the runtime when a profiler enabled
// sampling before start-up) signals each attached thread and calls on_sample_hit() in that thread's
// signal handler; the capture (capture/sample_capture.cpp) records the sample, and calls back
// on_frame() through mono_stack_walk_async_safe (the runtime's async-safe walker, made for exactly
// this; Mono's log profiler calls it from the same place) for the managed frames.
#include <algorithm>
#include <string>

#include "capture/cpu_timers.h"
#include "capture/sample_capture.h"
#include "capture/sample_pool.h"
#include "described.h"
#include "mlpd/hooks/mono_api.h"
#include "mono/sampling_start.h"

namespace mlpd::hooks {

using namespace sampling_detail;

namespace {

MonoProfilerHandle g_handle = nullptr;  // set when sampling was set up at start
bool g_timers = false;  // `sample` runs on per-thread CPU timers (cpu_timers.h), not Mono's sampler

mono_bool on_frame(MonoMethod* method, MonoDomain*, void* base_address, int offset, void* data) {
  auto* r = static_cast<Record*>(data);
  if (r->nframes >= g_pool->maxframes) {  // one frame more than kept: the stack is deeper, cut it here
    r->truncated = 1;
    return 1;
  }
  if (r->nframes == 0) {
    r->leaf_offset = offset;
    r->leaf_code_start = reinterpret_cast<uint64_t>(base_address);
  }
  r->code[r->nframes] = reinterpret_cast<uint64_t>(base_address);
  r->methods[r->nframes++] = reinterpret_cast<uint64_t>(method);
  return 0;
}

void walk_managed(const void* context, Record* r) {
  mono.mono_stack_walk_async_safe(on_frame, const_cast<void*>(context), r);
}

void on_sample_hit(MonoProfiler*, const mono_byte* ip, const void* context) { sample_hit(ip, context); }

bool method_described(uint64_t method) { return described::method_known(method); }

}  // namespace

void use_mono_sampling(bool late) {
  set_handler_walk(walk_managed);
  set_method_known(method_described);
  set_attached_late(late);
}

bool start_sampling(MonoProfilerHandle handle, const SamplingConfig& config, rt::MetaLog* meta,
                    std::string& error) {
  if (config.mode == kSampleOff) return true;
  if (!start_sample_pool(config, meta, error)) return false;
  if (!handle) return true;  // attached late: late_sampler.cpp starts the timers or our own sampler thread
  const uint64_t period_ns = 1'000'000'000u / std::max<uint32_t>(config.freq, 1);
  if (!mono.mono_profiler_enable_sampling(handle)) {
    error = "sampling must be enabled before the runtime starts (use LD_PRELOAD or --profile=mlpd)";
    return false;
  }
  // `sample`: per-thread CPU-time timers when the kernel gives them (cpu_timers.h); Mono's sampler
  // stays enabled, its mode NONE (its thread waits), so that a change to `sample-real` at run time
  // (change_sampling) still has it. Else Mono's sampler in PROCESS mode, as before.
  const bool timers = config.mode == kSampleProcess && cpu_timers::start(period_ns);
  const MonoProfilerSampleMode mode = config.mode == kSampleReal ? MONO_PROFILER_SAMPLE_MODE_REAL
                                      : timers                   ? MONO_PROFILER_SAMPLE_MODE_NONE
                                                                 : MONO_PROFILER_SAMPLE_MODE_PROCESS;
  if (!mono.mono_profiler_set_sample_mode(handle, mode, config.freq)) {
    // Another profiler set the mode first: Mono keeps that one (and says so); ours would not apply.
    if (timers) cpu_timers::stop();
    error = "another profiler already set the sampling mode";
    return false;
  }
  g_timers = timers;
  g_handle = handle;
  set_runtime_sampler("Mono's sampler thread");
  mono.mono_profiler_set_sample_hit_callback(handle, on_sample_hit);
  return true;
}

bool change_sampling(uint8_t mode, uint32_t freq) {
  if (!g_handle || freq == 0) return false;  // the sampler exists only if it was asked for at start
  // With the timers, `sample` is theirs (Mono's sampler waits in mode NONE); any other mode stops them.
  const MonoProfilerSampleMode m = mode == kSampleReal                   ? MONO_PROFILER_SAMPLE_MODE_REAL
                                   : mode == kSampleProcess && !g_timers ? MONO_PROFILER_SAMPLE_MODE_PROCESS
                                                                         : MONO_PROFILER_SAMPLE_MODE_NONE;
  if (!mono.mono_profiler_set_sample_mode(g_handle, m, freq)) return false;
  if (g_timers) cpu_timers::set_period(mode == kSampleProcess ? 1'000'000'000u / freq : 0);
  set_sample_rate(mode, freq);
  return true;
}

}  // namespace mlpd::hooks
