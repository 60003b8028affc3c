// `LD_PRELOAD=libmlpd.so` in a .NET host (the `dotnet` muxer or an app's apphost): the ELF
// constructor sets the runtime's three profiler variables, before the runtime reads them, so that
// CoreCLR loads this same library as its profiler (docs/dotnet.md, "Loading").
#pragma once

#include <string>
#include <string_view>

namespace mlpd::coreclr {

// Whether the executable at `exe_path` is a .NET host: named `dotnet`, or an apphost (the host
// binary that loads libhostfxr.so, whose name it carries). Reads at most the first 16 MiB of the
// file; false when it cannot be read.
bool is_dotnet_host(const char* exe_path);

enum class PreloadDecision {
  kSet,             // the three variables were unset: now they name mlpd
  kAlreadyOurs,     // they name mlpd already (CORECLR_PROFILER is mlpd's CLSID)
  kOtherProfiler,   // another profiler is configured: mlpd stays out
  kDisabled,        // CORECLR_ENABLE_PROFILING is set to something else than 1: left as it is
};

struct PreloadResult {
  PreloadDecision decision = PreloadDecision::kSet;
  std::string note;  // the `verbose` line (no "mlpd: " prefix)
};

// The decision and, for kSet, the variables set through `set` (name, value). `get` reads the
// environment (getenv in the agent, a map in the tests); `self_path` is libmlpd.so's absolute path.
template <class Get, class Set>
PreloadResult configure_preload(std::string_view self_path, Get&& get, Set&& set);

// The names, for `nochildren` (which takes them out of the environment again when they are ours).
inline constexpr const char* kEnableVar = "CORECLR_ENABLE_PROFILING";
inline constexpr const char* kProfilerVar = "CORECLR_PROFILER";
inline constexpr const char* kPathVar = "CORECLR_PROFILER_PATH";
inline constexpr const char* kPath64Var = "CORECLR_PROFILER_PATH_64";

// Whether `value` (CORECLR_PROFILER's) is mlpd's CLSID, with or without braces, any case.
bool is_mlpd_clsid(std::string_view value);

}  // namespace mlpd::coreclr

#include "coreclr/preload_env_impl.h"
