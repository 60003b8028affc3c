// Naming (profile/builder.h): the names the model gives at the end of the pass, when every
// description in the file has been seen -- frames (managed methods, native symbols and the addresses
// first seen before what describes them, their modules and whether they are the runtime's), threads,
// counters, and allocations and exceptions by class name.
#include "builder.h"

#include <algorithm>
#include <initializer_list>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace mlpd::profile {

namespace {

std::string hex_name(const char* what, uint64_t v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%s 0x%llx]", what, static_cast<unsigned long long>(v));
  return buf;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "symbol (module+0xOFF)" or "?? (module+0xOFF)": the module part, else "".
std::string module_of(std::string_view name) {
  if (name.empty() || name.back() != ')') return {};
  const size_t open = name.rfind(" (");
  if (open == std::string_view::npos) return {};
  const std::string_view inner = name.substr(open + 2, name.size() - open - 3);
  const size_t plus = inner.rfind("+0x");
  return plus == std::string_view::npos ? std::string() : std::string(inner.substr(0, plus));
}

// The runtimes' own native code, one row per runtime (issue 34): a native frame is the runtime's
// (FrameKind::runtime) when its symbol starts with one of the row's prefixes, or its module ("module"
// of "symbol (module+0xOFF)") contains one of the row's names or starts with one of its starts.
struct RuntimeNatives {
  std::string_view runtime;
  std::initializer_list<std::string_view> symbol_prefixes;
  std::initializer_list<std::string_view> module_contains;
  std::initializer_list<std::string_view> module_starts;
};
const RuntimeNatives kRuntimeNatives[] = {
    // Mono: libmono*, the mono executable, what lies under a mono folder (its AOT images).
    {"mono", {"mono_", "sgen_", "mini_", "ves_"}, {"libmono", "/mono"}, {"mono"}},
    // CoreCLR (.NET 8-10): its runtime and JIT; their symbols are C++ names without a common prefix.
    {"coreclr", {}, {"libcoreclr.so", "libclrjit.so"}, {}},
};

bool runtime_native(std::string_view name, std::string_view module) {
  for (const RuntimeNatives& r : kRuntimeNatives) {
    for (std::string_view p : r.symbol_prefixes) {
      if (starts_with(name, p)) return true;
    }
    for (std::string_view c : r.module_contains) {
      if (module.find(c) != std::string_view::npos) return true;
    }
    for (std::string_view p : r.module_starts) {
      if (starts_with(module, p)) return true;
    }
  }
  return false;
}

}  // namespace

void Builder::name_everything() {
  for (Frame& f : p_.frames_) {
    if (f.kind == FrameKind::managed) {
      const std::string* n = names_.method_name(f.address);
      f.name = n ? *n : hex_name("unknown method", f.address);
      if (starts_with(f.name, "(wrapper")) f.kind = FrameKind::runtime;
    } else if (f.kind == FrameKind::native) {
      if (f.name.empty()) {  // an address first seen before what describes it
        if (const uint64_t m = names_.method_at(f.address)) {
          const std::string* n = names_.method_name(m);
          f.name = n ? *n : hex_name("unknown method", m);
          f.kind = FrameKind::managed;
          continue;
        }
        const std::string* s = names_.symbol_at(f.address);
        f.name = s ? *s : hex_name("unknown native", f.address);
      }
      f.module = module_of(f.name);
      if (runtime_native(f.name, f.module)) f.kind = FrameKind::runtime;
    }
  }
  for (Frame& f : p_.frames_) {  // a description with an empty name still names something
    if (f.name.empty()) f.name = hex_name(f.kind == FrameKind::native ? "unnamed native" : "unnamed method", f.address);
  }
  for (ThreadInfo& ti : p_.threads_) {
    if (ti.name.empty())
      if (const std::string* n = names_.thread_name(ti.id)) ti.name = *n;
  }
  for (CounterInfo& c : p_.counters_) {
    if (const CounterDesc* d = names_.counter(c.index)) {
      c.name = d->section_name.empty() ? d->name : d->section_name + "/" + d->name;
      c.section = d->section;
      c.type = d->type;
      c.unit = d->unit;
      c.variance = d->variance;
    } else {
      c.name = hex_name("unknown counter", c.index);
    }
  }
}

void Builder::types_by_name() {
  // Allocations and exceptions by type, merged by class name.
  std::unordered_map<std::string, TypeStat> by_name;
  for (const auto& [vt, s] : tallies_.alloc_by_vtable) {
    const std::string* n = names_.vtable_class_name(vt);
    std::string name = n ? *n : hex_name("unknown class of vtable", vt);
    TypeStat& d = by_name[name];
    d.name = name;
    d.count += s.count;
    d.bytes += s.bytes;
  }
  for (auto& [n, s] : by_name) p_.alloc_types_.push_back(std::move(s));
  std::sort(p_.alloc_types_.begin(), p_.alloc_types_.end(), [](const TypeStat& a, const TypeStat& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  by_name.clear();
  for (const auto& [vt, count] : tallies_.throws_by_vtable) {
    const std::string* n = vt ? names_.vtable_class_name(vt) : nullptr;
    std::string name = n ? *n : vt ? hex_name("unknown class of vtable", vt) : std::string("[type not recorded]");
    TypeStat& d = by_name[name];
    d.name = name;
    d.count += count;
  }
  for (auto& [n, s] : by_name) p_.exception_types_.push_back(std::move(s));
  std::sort(p_.exception_types_.begin(), p_.exception_types_.end(), [](const TypeStat& a, const TypeStat& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
}

}  // namespace mlpd::profile
