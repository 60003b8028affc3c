// Fed by the thread callbacks (metadata_callbacks.cpp); read through hooks::os_threads() (control.h).
#pragma once

#include <cstdint>

namespace mlpd::hooks::thread_ids {

void started(uint64_t tid);                // on the started thread itself
void named(uint64_t tid, const char* name);  // any thread
// Whether the runtime named `tid` (a thread_name callback) since the agent was loaded.
bool has_name(uint64_t tid);

}  // namespace mlpd::hooks::thread_ids
