#include "mlpd/names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace mlpd {

namespace {

constexpr uint64_t kMaxSymbolDistance = 4096;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::string Names::display_symbol(std::string_view raw) {
  if (starts_with(raw, kOwnPrefix)) return std::string(raw);  // the agent marked it itself
  // "symbol (module+0xOFF)": the symbol part; "?? (module+0xOFF)" has no symbol.
  std::string_view sym = raw, rest;
  if (!raw.empty() && raw.back() == ')') {
    if (const size_t open = raw.rfind(" ("); open != std::string_view::npos) {
      sym = raw.substr(0, open);
      rest = raw.substr(open);
    }
  }
  std::string_view version;  // "@@GLIBCXX_3.4" and the like: not part of the mangling
  if (const size_t at = sym.find('@'); at != std::string_view::npos) {
    version = sym.substr(at);
    sym = sym.substr(0, at);
  }
  std::string name(sym);
  // Bounded: a hostile file's names go to the demangler only up to a length whose demangling is cheap.
  if (starts_with(sym, "_Z") && sym.size() <= kMaxDemangle) {
    int status = -1;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d) name = d;
    std::free(d);
  }
  const bool own = starts_with(name, "mlpd::") || starts_with(name, "mlpd_") || starts_with(name, "mono_profiler_init_mlpd");
  std::string out;
  out.reserve((own ? kOwnPrefix.size() : 0) + name.size() + version.size() + rest.size());
  if (own) out += kOwnPrefix;
  out += name;
  out += version;
  out += rest;
  return out;
}

void Names::observe(const Event& e) {
  switch (e.kind) {
    case EventKind::method_jit: {
      Method& m = methods_[e.method];
      m.name = strings_.intern(e.name);
      m.code = e.ptr;
      m.size = e.size;
      if (e.ptr != 0 && e.size != 0) code_.set(e.ptr, {e.ptr + e.size, e.method});
      break;
    }
    case EventKind::class_load:
      classes_[e.ptr] = strings_.intern(e.name);
      break;
    case EventKind::vtable_load:
      vtables_[e.ptr] = e.ptr3;
      break;
    case EventKind::image_load:
    case EventKind::image_unload:  // keeps the name: events after the unload may still mention it
      images_[e.ptr] = strings_.intern(e.name);
      break;
    case EventKind::assembly_load:
    case EventKind::assembly_unload:
      assemblies_[e.ptr] = strings_.intern(e.name);
      break;
    case EventKind::domain_name:
      domains_[e.ptr] = strings_.intern(e.name);
      break;
    case EventKind::context_load:
      contexts_[e.ptr] = e.ptr2;
      break;
    case EventKind::thread_start:
      // pthread ids are reused: a thread that starts with the id of one that ended is a new thread.
      // (A name event that precedes the start of a never-ended id is kept.)
      if (Thread* t = threads_.find(e.ptr); t && t->ended) *t = Thread{};
      break;
    case EventKind::thread_end:
      threads_[e.ptr].ended = true;
      break;
    case EventKind::thread_name:
      threads_[e.ptr].name = strings_.intern(e.name);
      break;
    case EventKind::sample_usym:
      symbols_.set(e.ptr, Symbol{strings_.intern(display_symbol(e.name)), e.size});
      break;
    case EventKind::counter_descriptors:
      for (const CounterDesc& d : e.counter_descs) counters_[d.index] = d;
      break;
    default:
      break;
  }
}

const Names::Method* Names::method(uint64_t m) const { return methods_.find(m); }

const std::string* Names::method_name(uint64_t m) const {
  const Method* p = methods_.find(m);
  return p ? &strings_.at(p->name) : nullptr;
}

const std::string* Names::class_name(uint64_t klass) const { return name_of(classes_, klass); }

bool Names::vtable_class(uint64_t vtable, uint64_t& klass) const {
  const uint64_t* k = vtables_.find(vtable);
  if (!k) return false;
  klass = *k;
  return true;
}

const std::string* Names::vtable_class_name(uint64_t vtable) const {
  const uint64_t* k = vtables_.find(vtable);
  return k ? name_of(classes_, *k) : nullptr;
}

const std::string* Names::image_name(uint64_t image) const { return name_of(images_, image); }

const std::string* Names::assembly_name(uint64_t assembly) const { return name_of(assemblies_, assembly); }

const std::string* Names::domain_name(uint64_t domain_id) const { return name_of(domains_, domain_id); }

bool Names::context_domain(uint64_t context_id, uint64_t& domain_id) const {
  const uint64_t* d = contexts_.find(context_id);
  if (!d) return false;
  domain_id = *d;
  return true;
}

const std::string* Names::thread_name(uint64_t thread_id) const {
  const Thread* t = threads_.find(thread_id);
  return t && t->name != kNoName ? &strings_.at(t->name) : nullptr;
}

const CounterDesc* Names::counter(uint64_t index) const { return counters_.find(index); }

uint64_t Names::method_at(uint64_t ip) const {
  const auto* e = code_.at_or_below(ip);
  return e && ip < e->second.first ? e->second.second : 0;
}

const std::string* Names::symbol_at(uint64_t ip) const {
  const auto* e = symbols_.at_or_below(ip);
  if (!e) return nullptr;
  // A symbol with a size (mlpd's files) names exactly its range, so an address past its end is not
  // blamed on it; without one (Mono's probe addresses) mprof-report's 4096-byte rule applies.
  const uint64_t reach = e->second.size ? e->second.size : kMaxSymbolDistance;
  return ip - e->first < reach ? &strings_.at(e->second.name) : nullptr;
}

}  // namespace mlpd
