#include "coreclr/start.h"

#include <cstdlib>
#include <new>
#include <string>

#include "coreclr/clr_runtime.h"
#include "mlpd/agent/agent.h"

namespace mlpd::coreclr {

// The runtime behind the door (clr_runtime.h), one for the process's life, given to the agent's start
// (which reads the options, opens the output, writes the header, installs it and starts the helper).
ClrRuntime* runtime_for(ProfilerInfo* info, const RuntimeInfo& about) {
  static ClrRuntime* runtime = nullptr;
  if (!runtime) runtime = new (std::nothrow) ClrRuntime(info, about);
  else runtime->rebind(info, about);
  return runtime;
}

bool start_agent(ProfilerInfo* info, const RuntimeInfo& about) {
  ClrRuntime* runtime = runtime_for(info, about);
  if (!runtime) return false;
  const char* env = std::getenv("MLPD_OPTIONS");
  agent::start(env ? env : "", *runtime);
  return agent::profiling();
}

// The runtime's Shutdown: the agent's end of the runtime (the rest of the file written).
void shutdown_agent() {
  if (ClrRuntime* r = ClrRuntime::instance()) r->runtime_shutdown();
  agent::shutdown();
}

}  // namespace mlpd::coreclr
