// The agent's start and end on CoreCLR: what the profiler object's Initialize and Shutdown call
// (profiler.h's StartFn and ShutdownFn), given by the entry point (entry.cpp).
#pragma once

#include "coreclr/profiler.h"

namespace mlpd::coreclr {

// Reads MLPD_OPTIONS (the defaults when unset), and starts profiling this runtime; false (with one
// line on stderr) when profiling stays off.
bool start_agent(ProfilerInfo* info, const RuntimeInfo& runtime);
// The runtime shuts down: the rest of the file is written.
void shutdown_agent();

class ClrRuntime;
// The one runtime object of the process (created at the first start or attach; a later attach gives
// it the new session's ICorProfilerInfo). Null when out of memory.
ClrRuntime* runtime_for(ProfilerInfo* info, const RuntimeInfo& about);

// InitializeForAttach and ProfilerAttachComplete (attach_entry.cpp).
bool attach_agent(ProfilerInfo* info, const RuntimeInfo& about, const void* data, UINT size);
void attach_complete();

}  // namespace mlpd::coreclr
