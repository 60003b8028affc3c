#include "state.h"

#include <algorithm>

#include "mlpd/format.h"

namespace mlpd::hooks {

namespace state {
State* g = nullptr;
std::atomic<bool> g_active{false};
std::atomic<bool> g_runtime_ready{false};
std::atomic<uint32_t> g_mask{0};
std::atomic<uint32_t> g_calldepth{100};
std::atomic<uint32_t> g_maxframes{0};
std::atomic<bool> g_paused{false};
uint32_t g_saved_mask = 0;
uint32_t g_saved_calldepth = 0;
std::mutex& control_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: callbacks may run during exit
  return *m;
}
}  // namespace state

using namespace state;

// While paused (pause.cpp) the mask asked for is kept aside and applied by resume().
uint32_t event_mask() {
  std::lock_guard<std::mutex> lock(control_mutex());
  return g_paused.load() ? g_saved_mask : g_mask.load();
}

// Callbacks that cost the runtime something even when they return at once are installed only while
// their events are wanted (g->apply_mask); the others are installed once and check the mask.
void set_event_mask(uint32_t mask) {
  std::lock_guard<std::mutex> lock(control_mutex());
  if (g_paused.load()) {
    g_saved_mask = mask;
    return;
  }
  g_mask.store(mask);
  if (g && g->apply_mask) g->apply_mask(mask);
}

uint32_t call_depth() {
  std::lock_guard<std::mutex> lock(control_mutex());
  return g_paused.load() ? g_saved_calldepth : g_calldepth.load();
}
void set_call_depth(uint32_t depth) {
  std::lock_guard<std::mutex> lock(control_mutex());
  if (g_paused.load())
    g_saved_calldepth = depth;
  else
    g_calldepth.store(depth);
}
uint32_t max_frames() { return g_maxframes.load(); }
void set_max_frames(uint32_t frames) {
  // With `calls` the enter/leave stream already gives every stack: no backtraces (as Mono).
  g_maxframes.store((g && g->cfg.calls) ? 0 : std::min<uint32_t>(frames, format::kMaxFrames));
}
bool calls_enabled() { return g && g->cfg.calls; }

}  // namespace mlpd::hooks
