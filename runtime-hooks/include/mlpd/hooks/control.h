// Issue 15's run-time controls of the hooks: pause/resume, the managed threads' OS ids and names (for
// the per-thread CPU counters) and sampled allocations (alloc-sample=BYTES).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/runtime/runtime.h"

namespace mlpd::hooks {

// -- pause and resume (runtime-hooks/src/pause.cpp)
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

// -- managed threads' OS ids (runtime-hooks/src/os_threads.cpp)

// os_tid: gettid(); tid: the thread id of the file's thread events (pthread_self); name: the managed
// name (thread_name event), empty until one is given (runtime.h's OsThread).
using OsThread = runtime::OsThread;
// Every managed thread started so far (exited ones too; the caller notices those by their /proc
// entry being gone). Takes a lock; never called while the world is stopped.
std::vector<OsThread> os_threads();

// -- sampled allocations (runtime-hooks/src/alloc_callbacks.cpp, alloc_sampler.h)

// The mean interval in bytes of alloc-sample (0: every allocation is recorded).
uint64_t alloc_sample_bytes();

}  // namespace mlpd::hooks
