// mlpd as a CoreCLR profiler: the class factory the runtime asks DllGetClassObject for, and the one
// profiler object it creates (docs/dotnet.md). The runtime loads libmlpd.so when
// CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={mlpd's CLSID} and CORECLR_PROFILER_PATH name it, asks
// for the class factory, creates the profiler object and calls its Initialize with its
// ICorProfilerInfo. No runtime header is used: profiling_api.h is ours.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "coreclr/profiling_api.h"

namespace mlpd::coreclr {

// What the runtime says about itself at Initialize.
struct RuntimeInfo {
  uint16_t major = 0, minor = 0, build = 0, qfe = 0;
  std::string version;  // the runtime's own version text ("10.0.12"), may be empty
  int info_level = 0;   // the highest ICorProfilerInfoN the runtime answered (12 when it is there)
};

// What the profiler does once the runtime has initialized it: the agent's start for CoreCLR
// (agent/src/dotnet_entry.cpp gives it). `info` is the runtime's ICorProfilerInfo12 (or the highest
// level it answered, `runtime.info_level`); the function sets the event mask and says, when it
// returns false, that profiling is off (the runtime then unloads nothing: every callback of ours
// returns at once).
using StartFn = bool (*)(ProfilerInfo* info, const RuntimeInfo& runtime);
// What Shutdown does (the runtime is shutting down: the agent writes the rest of the file).
using ShutdownFn = void (*)();

// What InitializeForAttach does (`mlpd attach PID` through the diagnostics socket): the agent's late
// start with the trigger's client data (attach_request.h); false: refused (the runtime unloads the
// profiler and answers the trigger with the failure). Then ProfilerAttachComplete: the catch-up.
using AttachFn = bool (*)(ProfilerInfo* info, const RuntimeInfo& runtime, const void* data, UINT size);
using AttachCompleteFn = void (*)();

// Installed by the entry point before the runtime can ask for the class factory.
void set_start(StartFn start, ShutdownFn shutdown);
void set_attach(AttachFn attach, AttachCompleteFn complete);

// DllGetClassObject's work: mlpd's class factory when `clsid` is mlpd's CLSID and `iid` is
// IClassFactory or IUnknown; CLASS_E_CLASSNOTAVAILABLE for another class.
HRESULT get_class_object(const Guid* clsid, const Guid* iid, void** out);

// The profiler object's table, for the tests: every slot filled (the callbacks mlpd does not use
// answer S_OK and leave the runtime's choices as they are).
const CallbackTable11& callback_table();
// The one profiler object (its table is callback_table()).
ProfilerCallback* profiler_object();
// Whether the runtime has initialized the profiler object (and the start accepted it).
bool initialized();

// "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" with or without braces, any case -> `out`; false when
// the text is not a GUID.
bool parse_guid(std::string_view text, Guid& out);

}  // namespace mlpd::coreclr
