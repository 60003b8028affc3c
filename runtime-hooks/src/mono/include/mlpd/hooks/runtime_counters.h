// Mono's runtime counters (mono-counters.h: "Methods JITted using mono JIT", "User Time", ...), as the
// agent's counter sampler sees them: the counters Mono has registered so far and later ones
// (mono_counters_on_register), each described by Mono's own section, name, type, unit and variance,
// and read with mono_counters_sample.
//
// Locks: Mono calls the register callback with its counters mutex held; ours (taken inside it, and
// alone by the helper) never calls into Mono, so the two are always taken in that order.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/event.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::hooks {

// handle: the MonoCounter; size: the bytes mono_counters_sample writes, 4 or 8 (runtime.h's Counter).
using RuntimeCounter = runtime::Counter;

// Starts following Mono's counters: hooks the registration of new ones and takes the existing ones.
// Called once, when the runtime is initialised (Mono's counters are set up by then).
void runtime_counters_start();

// Appends the counters that appeared since the last call, in registration order. String counters
// and counters wider than 8 bytes are left out (Mono 6.8 has none; see CounterSet).
void take_new_runtime_counters(std::vector<RuntimeCounter>& out);

// Reads a counter's current value as the integer of its width (CounterSet::Raw); false if Mono
// could not sample it.
bool read_runtime_counter(const RuntimeCounter& c, uint64_t& bits);

}  // namespace mlpd::hooks
