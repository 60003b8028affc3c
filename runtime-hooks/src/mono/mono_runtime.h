// Mono behind the runtime door (mlpd/runtime/runtime.h): the one Runtime object of Mono, which Mono's
// entry points (entry.cpp: the ELF constructor's check and mono_profiler_init_mlpd; attach_entry.cpp:
// `mlpd attach`) hand to agent::start. It translates the runtime-neutral configuration into the
// hooks' HookConfig (mlpd/hooks/hooks.h) and forwards every question to the hooks.
#pragma once

#include <string>
#include <string_view>

#include "mlpd/runtime/runtime.h"

namespace mlpd::mono {

// Mono's own options, as the agent passes them in Config::options (one per line).
struct MonoOptions {
  std::string callspec;         // callspec=SPEC: with `calls`, instrument only what SPEC matches
  uint8_t walker = 0;           // walker=ours|mono|check: 0 ours, 1 Mono's for all, 2 ours checked
  bool roots_every_gc = false;  // roots-every-gc: gcroot reports on every collection (Mono's compat)
};
// Parses Config::options; false with a one-line reason naming the line it does not know.
bool parse_mono_options(std::string_view text, MonoOptions& out, std::string& error);

// Mono's Runtime (never destroyed).
runtime::Runtime& runtime();

}  // namespace mlpd::mono
