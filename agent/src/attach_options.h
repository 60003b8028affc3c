#pragma once

#include <string>

#include "mlpd/agent/options.h"

namespace mlpd::agent {

// Whether `o` can be had by an agent started after the runtime (attach); else `error`, one line.
bool late_options_allowed(const Options& o, std::string& error);
// The line an attach with `calls` prints: what the JIT can still instrument.
const char* late_calls_notice();

}  // namespace mlpd::agent
