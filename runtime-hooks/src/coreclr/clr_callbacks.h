// The callbacks that carry events, set into the profiler object's table (profiler.cpp).
#pragma once

#include "coreclr/profiling_api.h"

namespace mlpd::coreclr {

void fill_event_callbacks(CallbackTable11& table);

}  // namespace mlpd::coreclr
