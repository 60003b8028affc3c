// pause() / resume() (mlpd/hooks/control.h): the event mask in effect, the call depth and Mono's
// sampler are switched off and back on, under the control lock of state.h; metadata callbacks check
// only active(), so they go on describing while paused.
#include <atomic>
#include <mutex>

#include "mlpd/format.h"
#include "mlpd/hooks/control.h"
#include "mlpd/hooks/icalls.h"
#include "mlpd/capture/sampling.h"
#include "mono/sampling_start.h"
#include "mlpd/rt/clock.h"
#include "state.h"

namespace mlpd::hooks {

namespace {

using namespace state;

std::atomic<uint64_t> g_generation{0};
std::atomic<bool> g_paused_since_read{false};

// A periodic sync point at the moment of the change (the helper's counter sample that follows says
// which it was: "Profiling paused" 1 or 0).
void mark() {
  Event e;
  e.kind = EventKind::sync_point;
  e.code = format::SYNC_POINT_PERIODIC;
  g->env.meta->add(e, rt::now_ns);
  g_generation.fetch_add(1, std::memory_order_release);
}

// Mono's sampler, when sampling was asked for at start: off while paused. Called without the
// control lock (log_profiler_settings() takes the LogProfiler lock, which is taken before ours).
void set_sampling(bool on) {
  if (!g || g->cfg.sample_mode == kSampleOff) return;
  const LogProfilerSettings s = log_profiler_settings();
  change_sampling(on ? s.sample_mode : kSampleOff, s.sample_freq ? s.sample_freq : 1);
}

}  // namespace

bool pause() {
  {
    std::lock_guard<std::mutex> lock(control_mutex());
    if (!g || g_paused.load()) return false;
    g_saved_mask = g_mask.load();
    g_saved_calldepth = g_calldepth.load();
    g_paused.store(true);
    g_paused_since_read.store(true);
    g_mask.store(0);
    g_calldepth.store(0);  // leaves of frames recorded before the pause are still written
    if (g->apply_mask) g->apply_mask(0);
    if (active()) mark();
  }
  set_sampling(false);
  return true;
}

bool resume() {
  {
    std::lock_guard<std::mutex> lock(control_mutex());
    if (!g || !g_paused.load()) return false;
    g_calldepth.store(g_saved_calldepth);
    g_mask.store(g_saved_mask);
    if (g->apply_mask) g->apply_mask(g_saved_mask);
    g_paused.store(false);
    if (active()) mark();
  }
  set_sampling(true);
  return true;
}

bool paused() { return g_paused.load(); }

uint64_t pause_generation() { return g_generation.load(std::memory_order_acquire); }

uint64_t paused_since_last_read() {
  const bool was = g_paused_since_read.exchange(g_paused.load());
  return (was || g_paused.load()) ? 1 : 0;
}

}  // namespace mlpd::hooks
