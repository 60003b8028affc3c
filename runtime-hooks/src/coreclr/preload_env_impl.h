// configure_preload's body (a template: the agent passes getenv/setenv, the tests a map).
#pragma once

#include "coreclr/profiling_api.h"

namespace mlpd::coreclr {

template <class Get, class Set>
PreloadResult configure_preload(std::string_view self_path, Get&& get, Set&& set) {
  PreloadResult r;
  const char* enable = get(kEnableVar);
  const char* profiler = get(kProfilerVar);
  const char* path = get(kPathVar);
  const char* path64 = get(kPath64Var);
  if (enable && std::string_view(enable) != "1") {
    r.decision = PreloadDecision::kDisabled;
    r.note = std::string(kEnableVar) + "=" + enable + ": .NET profiling left off as the environment says";
    return r;
  }
  if (profiler && *profiler) {
    if (is_mlpd_clsid(profiler)) {
      r.decision = PreloadDecision::kAlreadyOurs;
      r.note = std::string(kProfilerVar) + " names mlpd already";
      return r;
    }
    r.decision = PreloadDecision::kOtherProfiler;
    r.note = std::string("another .NET profiler is configured (") + kProfilerVar + "=" + profiler +
             "): mlpd stays out of this process";
    return r;
  }
  for (const char* p : {path, path64}) {
    if (p && *p && std::string_view(p) != self_path) {
      r.decision = PreloadDecision::kOtherProfiler;
      r.note = std::string("a .NET profiler path is configured (") + (p == path ? kPathVar : kPath64Var) + "=" + p +
               ") without a CLSID: mlpd stays out of this process";
      return r;
    }
  }
  set(kEnableVar, "1");
  set(kProfilerVar, kMlpdClsidText);
  set(kPathVar, std::string(self_path).c_str());
  r.decision = PreloadDecision::kSet;
  r.note = std::string("a .NET host: ") + kEnableVar + ", " + kProfilerVar + " and " + kPathVar +
           " set for the runtime";
  return r;
}

}  // namespace mlpd::coreclr
