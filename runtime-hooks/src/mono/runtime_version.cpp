#include "mono/runtime_version.h"

#include <cctype>

#include "mono/v6_8/layouts.h"

namespace mlpd::hooks::mono_runtime {

Version parse_version(std::string_view s) {
  Version v;
  int parts[4] = {0, 0, 0, 0};
  int n = 0;
  size_t i = 0;
  while (n < 4) {
    size_t start = i;
    long value = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 9) {
      value = value * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start) break;
    parts[n++] = static_cast<int>(value);
    if (i < s.size() && s[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  // At least major.minor, and the number must end there (a space, the end, or a '-' of a suffix).
  if (n < 2 || (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))) return v;
  v.major = parts[0];
  v.minor = parts[1];
  v.patch = parts[2];
  v.build = parts[3];
  v.ok = true;
  return v;
}

namespace {

struct Known {
  int major, minor;
  const mono_layouts::MonoLayouts* layouts;
};

// One row per release line whose layouts the readers were checked against. 6.12 keeps every layout
// the agent reads from 6.8 (MonoMethod, MonoGenericInst, MonoLMF, MonoJitInfo, MonoGenericJitInfo,
// the amd64 prologue and throw trampolines): docs/design.md, "Porting".
constexpr Known kKnown[] = {
    {6, 8, &mono_v6_8::kLayouts},
    {6, 12, &mono_v6_8::kLayouts},
};

std::string version_text(const Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch) + "." +
         std::to_string(v.build);
}

}  // namespace

const char* internals_name(const mono_layouts::MonoLayouts* layouts) { return layouts ? layouts->name : "off"; }

Runtime detect(const char* build_info) {
  Runtime r;
  if (!build_info) {
    r.text = "unknown";
    r.why_off = "the runtime does not give its version";
    return r;
  }
  r.version = parse_version(build_info);
  if (!r.version.ok) {
    r.text = "unknown";
    r.why_off = "unreadable version '" + std::string(std::string_view(build_info).substr(0, 40)) + "'";
    return r;
  }
  r.text = version_text(r.version);
  for (const Known& k : kKnown) {
    if (k.major == r.version.major && k.minor == r.version.minor) {
      r.layouts = k.layouts;
      return r;
    }
  }
  r.why_off = "no layout readers for this version";
  return r;
}

std::string describe(const Runtime& r) {
  std::string line = "runtime: Mono " + r.text + ", internals " + internals_name(r.layouts);
  if (!r.layouts) line += ": " + r.why_off;
  return line;
}

}  // namespace mlpd::hooks::mono_runtime

namespace mlpd::hooks::mono_layouts {
const MonoLayouts* g_selected = nullptr;
}  // namespace mlpd::hooks::mono_layouts
