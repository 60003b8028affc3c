// Which Mono runs the process, and whether the agent may read that runtime's internals.
//
// The agent reads a few of Mono's internal structures raw (the stack walker's JIT info, LMF, method and
// generic-instance layouts: docs/design.md, "Porting"). Those readers are written for the layouts of
// known runtime versions; at start the agent reads the runtime's version (mono_get_runtime_build_info)
// and picks the readers for it. A version not in the table turns the internals off: everything is then
// done through Mono's public API (backtraces by Mono's own walk), correct but slower.
#pragma once

#include <string>
#include <string_view>

#include "mono/layouts.h"

namespace mlpd::hooks::mono_runtime {

struct Version {
  int major = 0, minor = 0, patch = 0, build = 0;
  bool ok = false;  // parsed
};

// "6.8.0.105 (Debian 6.8.0.105+dfsg-3.3 Tue Jan 16 ...)" or "6.12.0.199 (tarball ...)": the leading
// dotted numbers (two to four of them). Anything else is not ok.
Version parse_version(std::string_view build_info);

struct Runtime {
  Version version;
  std::string text;  // the version as the runtime gave it ("6.8.0.105"), or "unknown"
  // The row of layouts this version gets (mono/layouts.h; 6.8 and 6.12: mono_v6_8::kLayouts, whose
  // every field Mono 6.12 keeps: docs/design.md); nullptr: internals off.
  const mono_layouts::MonoLayouts* layouts = nullptr;
  std::string why_off;  // when off: why, in a few words
};

// Picks the internals for a build-info string (nullptr: the runtime does not say).
Runtime detect(const char* build_info);

// The `verbose` line: "runtime: Mono 6.8.0.105, internals v6_8" or
// "runtime: Mono 7.0.0.1, internals off: no layout readers for this version".
std::string describe(const Runtime& r);

// The row's name ("v6_8"), "off" for none.
const char* internals_name(const mono_layouts::MonoLayouts* layouts);

}  // namespace mlpd::hooks::mono_runtime
