#include "mlpd/checks.h"

#include <cstdio>

namespace mlpd {

// Reports an unknown pointer once: after the first report it counts as known, so one missing
// description gives one problem line, not one per use.
std::string ReferenceChecker::need(IdSet& known, uint64_t ptr, const char* what) {
  if (!known.insert(ptr)) return {};
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s 0x%llx is used before it is described", what,
                static_cast<unsigned long long>(ptr));
  return buf;
}

std::string ReferenceChecker::check(const Event& e) {
  std::string r;
  auto methods = [&](const std::vector<uint64_t>& list) {
    for (uint64_t m : list) {
      r = need(methods_, m, "method");
      if (!r.empty()) return;
    }
  };
  switch (e.kind) {
    case EventKind::method_jit:
      methods_.insert(e.method);
      break;
    case EventKind::class_load:
      r = need(images_, e.ptr2, "image");
      classes_.insert(e.ptr);
      break;
    case EventKind::image_load:
      images_.insert(e.ptr);
      break;
    case EventKind::image_unload:
      r = need(images_, e.ptr, "image");
      break;
    case EventKind::assembly_load:
    case EventKind::assembly_unload:
      r = need(images_, e.ptr2, "image");
      break;
    case EventKind::vtable_load:
      r = need(classes_, e.ptr3, "class");
      vtables_.insert(e.ptr);
      break;
    case EventKind::alloc:
    case EventKind::heap_object:
      r = need(vtables_, e.ptr, "vtable");
      break;
    case EventKind::method_enter:
    case EventKind::method_leave:
    case EventKind::method_exc_leave:
    case EventKind::exception_clause:
      r = need(methods_, e.method, "method");
      break;
    case EventKind::sample_hit:
      methods(e.frames);
      break;
    case EventKind::counter_descriptors:
      for (const CounterDesc& d : e.counter_descs) counters_[d.index] = d.type;
      break;
    case EventKind::counter_samples:
      for (const CounterValue& v : e.counter_values) {
        const uint64_t* type = counters_.find(v.index);
        if (type && *type == v.type) continue;
        char buf[128];
        if (!type) {
          std::snprintf(buf, sizeof buf, "counter %llu is sampled before it is described",
                        static_cast<unsigned long long>(v.index));
          counters_[v.index] = v.type;  // reported once
        } else {
          std::snprintf(buf, sizeof buf, "counter %llu is sampled as type %llu but described as type %llu",
                        static_cast<unsigned long long>(v.index), static_cast<unsigned long long>(v.type),
                        static_cast<unsigned long long>(*type));
        }
        r = buf;
        break;
      }
      break;
    default:
      break;
  }
  if (r.empty() && e.has_backtrace) methods(e.backtrace);
  return r;
}

}  // namespace mlpd
