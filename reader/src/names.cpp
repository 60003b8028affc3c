#include "mlpd/names.h"

namespace mlpd {

namespace {

template <typename Map>
const typename Map::mapped_type* find_in(const Map& m, uint64_t key) {
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

constexpr uint64_t kMaxSymbolDistance = 4096;

}  // namespace

void Names::observe(const Event& e) {
  switch (e.kind) {
    case EventKind::method_jit: {
      Method& m = methods_[e.method];
      m.name = e.name;
      m.code = e.ptr;
      m.size = e.size;
      if (e.ptr != 0 && e.size != 0) code_[e.ptr] = {e.ptr + e.size, e.method};
      break;
    }
    case EventKind::class_load:
      classes_[e.ptr] = e.name;
      break;
    case EventKind::vtable_load:
      vtables_[e.ptr] = e.ptr3;
      break;
    case EventKind::image_load:
    case EventKind::image_unload:  // keeps the name: events after the unload may still mention it
      images_[e.ptr] = e.name;
      break;
    case EventKind::assembly_load:
    case EventKind::assembly_unload:
      assemblies_[e.ptr] = e.name;
      break;
    case EventKind::domain_name:
      domains_[e.ptr] = e.name;
      break;
    case EventKind::context_load:
      contexts_[e.ptr] = e.ptr2;
      break;
    case EventKind::thread_start:
      // pthread ids are reused: a thread that starts with the id of one that ended is a new thread.
      // (A name event that precedes the start of a never-ended id is kept.)
      if (ended_threads_.erase(e.ptr)) threads_.erase(e.ptr);
      break;
    case EventKind::thread_end:
      ended_threads_.insert(e.ptr);
      break;
    case EventKind::thread_name:
      threads_[e.ptr] = e.name;
      break;
    case EventKind::sample_usym:
      symbols_[e.ptr] = Symbol{e.name, e.size};
      break;
    case EventKind::counter_descriptors:
      for (const CounterDesc& d : e.counter_descs) counters_[d.index] = d;
      break;
    default:
      break;
  }
}

const Names::Method* Names::method(uint64_t m) const { return find_in(methods_, m); }

const std::string* Names::method_name(uint64_t m) const {
  const Method* p = find_in(methods_, m);
  return p ? &p->name : nullptr;
}

const std::string* Names::class_name(uint64_t klass) const { return find_in(classes_, klass); }

bool Names::vtable_class(uint64_t vtable, uint64_t& klass) const {
  const uint64_t* k = find_in(vtables_, vtable);
  if (!k) return false;
  klass = *k;
  return true;
}

const std::string* Names::vtable_class_name(uint64_t vtable) const {
  const uint64_t* k = find_in(vtables_, vtable);
  return k ? find_in(classes_, *k) : nullptr;
}

const std::string* Names::image_name(uint64_t image) const { return find_in(images_, image); }

const std::string* Names::assembly_name(uint64_t assembly) const { return find_in(assemblies_, assembly); }

const std::string* Names::domain_name(uint64_t domain_id) const { return find_in(domains_, domain_id); }

bool Names::context_domain(uint64_t context_id, uint64_t& domain_id) const {
  const uint64_t* d = find_in(contexts_, context_id);
  if (!d) return false;
  domain_id = *d;
  return true;
}

const std::string* Names::thread_name(uint64_t thread_id) const { return find_in(threads_, thread_id); }

const CounterDesc* Names::counter(uint64_t index) const { return find_in(counters_, index); }

uint64_t Names::method_at(uint64_t ip) const {
  auto it = code_.upper_bound(ip);
  if (it == code_.begin()) return 0;
  --it;
  return ip < it->second.first ? it->second.second : 0;
}

const std::string* Names::symbol_at(uint64_t ip) const {
  auto it = symbols_.upper_bound(ip);
  if (it == symbols_.begin()) return nullptr;
  --it;
  // A symbol with a size (mlpd's files) names exactly its range, so an address past its end is not
  // blamed on it; without one (Mono's probe addresses) mprof-report's 4096-byte rule applies.
  const uint64_t reach = it->second.size ? it->second.size : kMaxSymbolDistance;
  return ip - it->first < reach ? &it->second.name : nullptr;
}

}  // namespace mlpd
