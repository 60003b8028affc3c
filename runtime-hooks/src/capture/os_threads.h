// The managed threads' OS ids and names, for the helper's per-thread CPU counters. Fed by a runtime's
// thread callbacks (Mono: metadata_callbacks.cpp), on the started thread itself, where gettid() is
// its OS id.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/runtime/runtime.h"

namespace mlpd::hooks {

// os_tid: gettid(); tid: the thread id of the file's thread events (pthread_self); name: the managed
// name (thread_name event), empty until one is given (runtime.h's OsThread). Every managed thread
// started so far (exited ones too; the caller notices those by their /proc entry being gone). Takes
// a lock; never called while the world is stopped.
std::vector<runtime::OsThread> os_threads();

}  // namespace mlpd::hooks

namespace mlpd::hooks::thread_ids {

void started(uint64_t tid);                // on the started thread itself
void named(uint64_t tid, const char* name);  // any thread
// Whether the runtime named `tid` (a thread_name callback) since the agent was loaded.
bool has_name(uint64_t tid);

}  // namespace mlpd::hooks::thread_ids
