#include "coreclr/start.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "mlpd/agent/agent.h"
#include "mlpd/agent/options.h"

namespace mlpd::coreclr {

namespace {
void say_line(const std::string& line) {
  const std::string text = line + "\n";
  (void)!std::fwrite(text.data(), 1, text.size(), stderr);
}
}  // namespace

bool start_agent(ProfilerInfo*, const RuntimeInfo& runtime) {
  const char* env = std::getenv("MLPD_OPTIONS");
  agent::Options options;
  std::string error;
  if (!agent::parse_options(env ? env : "", options, error,
                            [](const char* name) -> const char* { return std::getenv(name); })) {
    say_line(error + "; profiling is off");
    return false;
  }
  // Recording on CoreCLR arrives with the runtime door's agent start (issue 34): until then the
  // profiler is loaded, checked and says so, and records nothing.
  if (options.verbose)
    say_line("mlpd: .NET " + (runtime.version.empty() ? std::string("runtime") : runtime.version) +
             " loaded mlpd's profiler (ICorProfilerInfo" + std::to_string(runtime.info_level) +
             "); recording on .NET is not built yet: profiling is off");
  return false;
}

void shutdown_agent() { agent::shutdown(); }

}  // namespace mlpd::coreclr
