#include "coreclr/clr_callspec.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace mlpd::coreclr {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string without_spaces(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

// The parts of a file method name "Namespace.Type:Method<T> (args)".
struct Parts {
  std::string_view type;       // "Namespace.Outer/Inner"
  std::string_view name_space; // "Namespace" (of the outermost type)
  std::string_view type_name;  // "Inner" (the innermost type's own name, generic arguments kept)
  std::string_view method;     // "Method" (without generic arguments)
  std::string args;            // "(args)" without spaces
};

Parts split(std::string_view full) {
  Parts p;
  // The type ends at the first ':' outside generic brackets (a type's arguments hold no ':').
  const size_t colon = full.find(':');
  if (colon == std::string_view::npos) return p;
  p.type = full.substr(0, colon);
  std::string_view rest = full.substr(colon + 1);
  const size_t paren = rest.find(" (");
  std::string_view method = paren == std::string_view::npos ? rest : rest.substr(0, paren);
  if (paren != std::string_view::npos) p.args = without_spaces(rest.substr(paren + 1));
  const size_t lt = method.find('<');
  p.method = lt == std::string_view::npos ? method : method.substr(0, lt);
  // Namespace: the outermost type's, up to its last '.' before any '/' or generic argument.
  std::string_view outer = p.type.substr(0, std::min(p.type.find('/'), p.type.find('<')));
  const size_t dot = outer.rfind('.');
  p.name_space = dot == std::string_view::npos ? std::string_view() : outer.substr(0, dot);
  std::string_view inner = p.type;
  if (const size_t slash = inner.rfind('/'); slash != std::string_view::npos) inner = inner.substr(slash + 1);
  else if (dot != std::string_view::npos) inner = inner.substr(dot + 1);
  p.type_name = inner;
  return p;
}

// A type's name without its generic arguments ("List`1<int>" -> "List`1").
std::string_view bare(std::string_view type) { return type.substr(0, type.find('<')); }

}  // namespace

bool CallSpec::parse(std::string_view spec, std::string& error) {
  ops_.clear();
  size_t at = 0;
  while (at <= spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view item = trim(spec.substr(at, end - at));
    at = end + 1;
    if (item.empty()) return error = "callspec: an empty item in '" + std::string(spec) + "'", false;
    Op op{Kind::kAll};
    if (item.front() == '-') {
      op.exclude = true;
      item = trim(item.substr(1));
      if (item.empty()) return error = "callspec: '-' without an item", false;
    }
    if (item == "all") op.kind = Kind::kAll;
    else if (item == "none" || item == "disabled") op.kind = Kind::kNone;
    else if (item == "program") op.kind = Kind::kProgram;
    else if (item == "wrapper") op.kind = Kind::kWrapper;
    else if (item.starts_with("E:")) op.kind = Kind::kNone;  // Mono's exception traces: no method
    else if (item.starts_with("N:")) {
      op.kind = Kind::kNamespace;
      op.name = item.substr(2);
    } else if (item.starts_with("T:")) {
      op.kind = Kind::kClass;
      op.type = item.substr(2);
      if (op.type.empty()) return error = "callspec: 'T:' without a type", false;
    } else if (item.starts_with("M:")) {
      op.kind = Kind::kMethod;
      std::string_view desc = item.substr(2);
      const size_t paren = desc.find('(');
      if (paren != std::string_view::npos) {
        op.args = without_spaces(desc.substr(paren));
        desc = trim(desc.substr(0, paren));
      }
      const size_t colon = desc.rfind(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == desc.size())
        return error = "callspec: '" + std::string(item) + "': expected M:Type:Method", false;
      op.type = desc.substr(0, colon);
      op.name = desc.substr(colon + 1);
    } else {
      op.kind = Kind::kAssembly;
      op.name = item;
    }
    ops_.push_back(std::move(op));
    if (end == spec.size()) break;
  }
  return true;
}

bool CallSpec::matches(std::string_view method, std::string_view assembly, bool program) const {
  const Parts p = split(method);
  bool include = false;
  for (const Op& op : ops_) {
    bool hit = false;
    switch (op.kind) {
      case Kind::kAll: hit = true; break;
      case Kind::kNone: case Kind::kWrapper: break;
      case Kind::kProgram: hit = program; break;
      case Kind::kAssembly: hit = assembly == op.name; break;
      case Kind::kNamespace: hit = p.name_space == op.name; break;
      case Kind::kClass: hit = bare(p.type) == op.type; break;
      case Kind::kMethod: {
        const bool type_ok = op.type == "*" || bare(p.type) == op.type ||
                             (op.type.find('.') == std::string::npos && bare(p.type_name) == op.type);
        hit = type_ok && (op.name == "*" || p.method == op.name) && (op.args.empty() || op.args == p.args);
        break;
      }
    }
    if (hit) include = !op.exclude;
  }
  return include;
}

std::string program_assembly_name() {
  auto simple = [](std::string_view path) {
    const size_t slash = path.rfind('/');
    std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const size_t dot = base.rfind('.');
    return std::string(dot == std::string_view::npos ? base : base.substr(0, dot));
  };
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  bool first = true;
  while (at < all.size()) {
    size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    std::string_view arg(all.data() + at, end - at);
    if (!first && (arg.ends_with(".dll") || arg.ends_with(".exe"))) return simple(arg);
    first = false;
    at = end + 1;
  }
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string_view path(exe, static_cast<size_t>(n));
  const std::string name = simple(path);
  return name == "dotnet" ? std::string() : name;
}

}  // namespace mlpd::coreclr
