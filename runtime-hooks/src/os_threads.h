// Fed by the thread callbacks (metadata_callbacks.cpp); read through hooks::os_threads() (control.h).
#pragma once

#include <cstdint>

namespace mlpd::hooks::thread_ids {

void started(uint64_t tid);                // on the started thread itself
void named(uint64_t tid, const char* name);  // any thread

}  // namespace mlpd::hooks::thread_ids
