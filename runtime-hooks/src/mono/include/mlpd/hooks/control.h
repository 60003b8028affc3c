// Issue 15's run-time controls of Mono's hooks: pause/resume.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/runtime/runtime.h"

namespace mlpd::hooks {

// -- pause and resume (runtime-hooks/src/mono/pause.cpp)
//
// pause(): no event is recorded until resume(): the event mask in effect becomes 0 (the callbacks
// that cost something are uninstalled, as `events -NAME` does), enter/leave recording stops (call
// depth 0), statistical sampling is switched off. Metadata (images, classes, methods, threads) keeps
// being described, so that events after resume() reference described items. event_mask()/
// set_event_mask() and call_depth()/set_call_depth() work on the settings resume() restores while
// paused. Each pause and resume writes a periodic sync point into the file at its time. False when
// there was nothing to do (already paused / not paused, or the hooks are not installed).
bool pause();
bool resume();
bool paused();
// Incremented by each pause and resume (the helper samples the counters when it changes).
uint64_t pause_generation();
// 1 when profiling is paused now or was paused at some time since the last call (the counter
// "Profiling paused"; read by the helper only), else 0.
uint64_t paused_since_last_read();

// The managed threads' OS ids (os_threads()) and the alloc-sample interval (alloc_sample_bytes())
// are the capture room's: capture/os_threads.h, capture/alloc_sampler.h.

}  // namespace mlpd::hooks
