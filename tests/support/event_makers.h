// Test support: hand-made events of the kinds tests build small files from (methods and calls,
// classes and vtables, heap walks), each setting only the fields its kind uses (event.h), so that a
// decoded copy compares equal with ==. Together with build_file() (event_gen.h):
//
//   using namespace mlpd::test;
//   std::vector<Event> ev = {jit(0x1000, 0x10000, 0x100, "N:A ()"), enter(0x1000, 10), leave(0x1000, 20)};
//   std::vector<uint8_t> file = build_file({{0x77, 0, ev}});
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/event.h"

namespace mlpd::test {

// A method compiled: `method` at [code, code + size), named `name`, at time `time`.
inline Event jit(uint64_t method, uint64_t code, uint64_t size, const std::string& name, uint64_t time = 1) {
  Event e;
  e.reset(EventKind::method_jit);
  e.time = time;
  e.method = method;
  e.ptr = code;
  e.size = size;
  e.name = name;
  return e;
}

// An event of `kind` at `time`, with `method` (the calls: enter, leave, exception leave; or a bare
// event of any kind, method 0).
inline Event at(EventKind kind, uint64_t time, uint64_t method = 0) {
  Event e;
  e.reset(kind);
  e.time = time;
  e.method = method;
  return e;
}
inline Event enter(uint64_t method, uint64_t time) { return at(EventKind::method_enter, time, method); }
inline Event leave(uint64_t method, uint64_t time) { return at(EventKind::method_leave, time, method); }
inline Event exc_leave(uint64_t method, uint64_t time) { return at(EventKind::method_exc_leave, time, method); }

// A class `klass` of image `image`, named `name`.
inline Event class_load(uint64_t klass, uint64_t image, const std::string& name, uint64_t time = 0) {
  Event e;
  e.reset(EventKind::class_load);
  e.time = time;
  e.ptr = klass;
  e.ptr2 = image;
  e.name = name;
  return e;
}

// The vtable `vtable` of class `klass`.
inline Event vtable_load(uint64_t vtable, uint64_t klass, uint64_t time = 0) {
  Event e;
  e.reset(EventKind::vtable_load);
  e.time = time;
  e.ptr = vtable;
  e.ptr3 = klass;
  return e;
}

// A root range of the heap walk: [start, start + size), its source and key, named `name`.
inline Event heap_root_register(uint64_t start, uint64_t size, uint8_t source, uint64_t key, const std::string& name,
                                uint64_t time = 0) {
  Event e;
  e.reset(EventKind::heap_root_register);
  e.time = time;
  e.ptr = start;
  e.size = size;
  e.code = source;
  e.ptr2 = key;
  e.name = name;
  return e;
}

// An object of the heap walk: `obj` of vtable `vtable`, `size` bytes, its references.
inline Event heap_object(uint64_t obj, uint64_t vtable, uint64_t size, std::vector<HeapRef> refs = {},
                         uint64_t time = 0) {
  Event e;
  e.reset(EventKind::heap_object);
  e.time = time;
  e.obj = obj;
  e.ptr = vtable;
  e.size = size;
  e.refs = std::move(refs);
  return e;
}

// The roots of the heap walk.
inline Event heap_root(std::vector<RootRef> roots, uint64_t time = 0) {
  Event e;
  e.reset(EventKind::heap_root);
  e.time = time;
  e.roots = std::move(roots);
  return e;
}

}  // namespace mlpd::test
