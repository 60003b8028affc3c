// The agent's options in the runtime door's terms (mlpd/runtime/runtime.h): the runtime-neutral
// Config, with the settings only a runtime understands in its opaque `options` string, and the check
// an attach makes before anything is opened.
#pragma once

#include <string>

#include "mlpd/agent/options.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::agent {

// `o` as `runtime` is installed with. `late`: attached to a running runtime; `cores`: the machine's
// (the sample pool's default size). False with `error` (one line) when the user gave a setting that
// is not for this runtime (callspec=, walker=: Runtime::takes_option).
bool runtime_config(const Options& o, const runtime::Runtime& runtime, bool late, unsigned cores,
                    runtime::Config& c, std::string& error);

// Whether `config` can be had by an agent started after the runtime (attach); else `error`, one line
// naming the option and the runtime's reason.
bool late_options_allowed(const runtime::Runtime& runtime, const runtime::Config& config, std::string& error);

}  // namespace mlpd::agent
