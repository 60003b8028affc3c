// The agent's per-thread events, encoded straight into a ThreadLog's buffer. Each function reserves
// its worst case (event byte + time + fields at 10 bytes per LEB128), encodes, commits. The bytes are
// exactly what BufferEncoder writes for the same Event (rt_events_test.cpp checks), the layouts being
// the table's of mlpd/event_layout.h, written out here and checked by event_layout_test.cpp.
#pragma once

#include <cstdint>

#include "mlpd/format.h"
#include "mlpd/rt/thread_log.h"

namespace mlpd::rt {

using namespace mlpd::format;

inline constexpr size_t kHead = 1 + kMaxLeb128;  // event byte + time
inline constexpr size_t kMaxBacktrace = kMaxFrames;

// Methods of a backtrace, outermost frame first (the file's order).
struct Backtrace {
  uint32_t count = 0;
  uint64_t frames[kMaxBacktrace];
};

// The kind each write_* function counts (ThreadLog::commit). Callers pass constants, so these fold
// away; write_method's `ext` may vary (leave()), then it is two compares.
inline constexpr EventKind method_kind(uint8_t ext) {
  return ext == TYPE_ENTER ? EventKind::method_enter
                           : ext == TYPE_LEAVE ? EventKind::method_leave : EventKind::method_exc_leave;
}
inline constexpr EventKind bare_kind(uint8_t event_byte) {
  switch (event_byte) {
    case TYPE_GC | TYPE_GC_FINALIZE_START: return EventKind::gc_finalize_start;
    case TYPE_GC | TYPE_GC_FINALIZE_END: return EventKind::gc_finalize_end;
    case TYPE_HEAP | TYPE_HEAP_START: return EventKind::heap_start;
    default: return EventKind::heap_end;  // TYPE_HEAP | TYPE_HEAP_END
  }
}
inline constexpr EventKind object_event_kind(uint8_t event_byte) {
  return event_byte == (TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START) ? EventKind::gc_finalize_object_start
                                                                 : EventKind::gc_finalize_object_end;
}

inline uint8_t* put_backtrace(ThreadLog& log, uint8_t* p, const Backtrace& bt) {
  p = put_uleb(p, bt.count);
  for (uint32_t i = 0; i < bt.count; ++i) p = log.put_method(p, bt.frames[i]);
  return p;
}
inline constexpr size_t backtrace_bytes(const Backtrace* bt) { return bt ? kMaxLeb128 * (1 + bt->count) : 0; }

// TYPE_METHOD enter (TYPE_ENTER), leave (TYPE_LEAVE) or exceptional leave (TYPE_EXC_LEAVE). Always
// inlined: it is the `calls` hot path, and the compiler's size heuristics stopped inlining it into the
// leave callback once the kind counting made it a little larger (a call per event, measured).
inline constexpr size_t kMethodEventBytes = kHead + kMaxLeb128;
// Writes it at `p`, room for kMethodEventBytes that reserve() gave or has_room() found at cursor().
[[gnu::always_inline]] inline void write_method_at(ThreadLog& log, uint8_t* p, uint8_t ext, uint64_t time,
                                                   uint64_t method) {
  *p++ = TYPE_METHOD | ext;
  p = log.put_time(p, time);
  p = log.put_method(p, method);
  log.commit(p, method_kind(ext));
}
[[gnu::always_inline]] inline void write_method(ThreadLog& log, uint8_t ext, uint64_t time, uint64_t method) {
  uint8_t* p = log.reserve(kMethodEventBytes);
  if (!p) [[unlikely]] return;
  write_method_at(log, p, ext, time, method);
}

// An enter held back for short-call elision (calls-min): written like write_method's, not yet
// published (ThreadLog::begin_held / hold).
[[gnu::always_inline]] inline void write_enter_held(ThreadLog& log, uint64_t time, uint64_t method) {
  uint8_t* p = log.reserve(kMethodEventBytes);
  if (!p) [[unlikely]] {
    log.drop_held();
    return;
  }
  log.begin_held(p);
  *p++ = TYPE_METHOD | TYPE_ENTER;
  p = log.put_time(p, time);
  p = log.put_method(p, method);
  log.hold(p, EventKind::method_enter);
}

inline void write_alloc(ThreadLog& log, uint64_t time, uint64_t vtable, uint64_t obj, uint64_t size,
                        const Backtrace* bt) {
  uint8_t* p = log.reserve(kHead + 3 * kMaxLeb128 + backtrace_bytes(bt));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_ALLOC | (bt ? TYPE_ALLOC_BT : TYPE_ALLOC_NO_BT);
  p = log.put_time(p, time);
  p = log.put_ptr(p, vtable);
  p = log.put_obj(p, obj);
  p = put_uleb(p, size);
  if (bt) p = put_backtrace(log, p, *bt);
  log.commit(p, EventKind::alloc);
}

inline void write_throw(ThreadLog& log, uint64_t time, uint64_t obj, const Backtrace* bt) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128 + backtrace_bytes(bt));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_EXCEPTION | (bt ? TYPE_THROW_BT : TYPE_THROW_NO_BT);
  p = log.put_time(p, time);
  p = log.put_obj(p, obj);
  if (bt) p = put_backtrace(log, p, *bt);
  log.commit(p, EventKind::exception_throw);
}

inline void write_clause(ThreadLog& log, uint64_t time, uint8_t clause_type, uint64_t index, uint64_t method,
                         uint64_t obj) {
  uint8_t* p = log.reserve(kHead + 1 + 3 * kMaxLeb128);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_EXCEPTION | TYPE_CLAUSE;
  p = log.put_time(p, time);
  *p++ = clause_type;
  p = put_uleb(p, index);
  p = log.put_method(p, method);
  p = log.put_obj(p, obj);
  log.commit(p, EventKind::exception_clause);
}

inline void write_monitor(ThreadLog& log, uint64_t time, uint8_t event, uint64_t obj, const Backtrace* bt) {
  uint8_t* p = log.reserve(kHead + 1 + kMaxLeb128 + backtrace_bytes(bt));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_MONITOR | (bt ? TYPE_MONITOR_BT : TYPE_MONITOR_NO_BT);
  p = log.put_time(p, time);
  *p++ = event;
  p = log.put_obj(p, obj);
  if (bt) p = put_backtrace(log, p, *bt);
  log.commit(p, EventKind::monitor);
}

inline void write_gc_event(ThreadLog& log, uint64_t time, uint8_t event, uint8_t generation) {
  uint8_t* p = log.reserve(kHead + 2);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_GC | TYPE_GC_EVENT;
  p = log.put_time(p, time);
  *p++ = event;
  *p++ = generation;
  log.commit(p, EventKind::gc_event);
}

inline void write_gc_resize(ThreadLog& log, uint64_t time, uint64_t size) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_GC | TYPE_GC_RESIZE;
  p = log.put_time(p, time);
  p = put_uleb(p, size);
  log.commit(p, EventKind::gc_resize);
}

// `count` addresses (old0, new0, old1, new1, ...); callers split long lists into several events.
inline void write_gc_move(ThreadLog& log, uint64_t time, const uint64_t* objects, uint32_t count) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128 * (1 + count));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_GC | TYPE_GC_MOVE;
  p = log.put_time(p, time);
  p = put_uleb(p, count);
  for (uint32_t i = 0; i < count; ++i) p = log.put_obj(p, objects[i]);
  log.commit(p, EventKind::gc_move);
}

inline void write_handle_created(ThreadLog& log, uint64_t time, uint64_t type, uint64_t handle, uint64_t obj,
                                 const Backtrace* bt) {
  uint8_t* p = log.reserve(kHead + 3 * kMaxLeb128 + backtrace_bytes(bt));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_GC | (bt ? TYPE_GC_HANDLE_CREATED_BT : TYPE_GC_HANDLE_CREATED);
  p = log.put_time(p, time);
  p = put_uleb(p, type);
  p = put_uleb(p, handle);
  p = log.put_obj(p, obj);
  if (bt) p = put_backtrace(log, p, *bt);
  log.commit(p, EventKind::gc_handle_created);
}

inline void write_handle_destroyed(ThreadLog& log, uint64_t time, uint64_t type, uint64_t handle,
                                   const Backtrace* bt) {
  uint8_t* p = log.reserve(kHead + 2 * kMaxLeb128 + backtrace_bytes(bt));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_GC | (bt ? TYPE_GC_HANDLE_DESTROYED_BT : TYPE_GC_HANDLE_DESTROYED);
  p = log.put_time(p, time);
  p = put_uleb(p, type);
  p = put_uleb(p, handle);
  if (bt) p = put_backtrace(log, p, *bt);
  log.commit(p, EventKind::gc_handle_destroyed);
}

// Events with no payload (finalize start/end, heap start/end) and with one object (finalize object
// start/end): `event_byte` is the full type|ext byte.
inline void write_bare(ThreadLog& log, uint8_t event_byte, uint64_t time) {
  uint8_t* p = log.reserve(kHead);
  if (!p) [[unlikely]] return;
  *p++ = event_byte;
  p = log.put_time(p, time);
  log.commit(p, bare_kind(event_byte));
}

inline void write_with_object(ThreadLog& log, uint8_t event_byte, uint64_t time, uint64_t obj) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128);
  if (!p) [[unlikely]] return;
  *p++ = event_byte;
  p = log.put_time(p, time);
  p = log.put_obj(p, obj);
  log.commit(p, object_event_kind(event_byte));
}

inline void write_sync_point(ThreadLog& log, uint64_t time, uint8_t type) {
  uint8_t* p = log.reserve(kHead + 1);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_META | TYPE_SYNC_POINT;
  p = log.put_time(p, time);
  *p++ = type;
  log.commit(p, EventKind::sync_point);
}

inline void write_root_register(ThreadLog& log, uint64_t time, uint64_t start, uint64_t size, uint8_t source,
                                uint64_t key, const char* name, size_t name_len) {
  uint8_t* p = log.reserve(kHead + 4 * kMaxLeb128 + 1 + name_len + 1);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_HEAP | TYPE_HEAP_ROOT_REGISTER;
  p = log.put_time(p, time);
  p = log.put_ptr(p, start);
  p = put_uleb(p, size);
  *p++ = source;
  p = log.put_ptr(p, key);
  for (size_t i = 0; i < name_len; ++i) *p++ = static_cast<uint8_t>(name[i]);
  *p++ = 0;
  log.commit(p, EventKind::heap_root_register);
}

inline void write_root_unregister(ThreadLog& log, uint64_t time, uint64_t start) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_HEAP | TYPE_HEAP_ROOT_UNREGISTER;
  p = log.put_time(p, time);
  p = log.put_ptr(p, start);
  log.commit(p, EventKind::heap_root_unregister);
}

// `count` (slot address, object) pairs.
inline void write_heap_roots(ThreadLog& log, uint64_t time, const uint64_t* addresses, const uint64_t* objects,
                             uint32_t count) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128 * (1 + 2 * count));
  if (!p) [[unlikely]] return;
  *p++ = TYPE_HEAP | TYPE_HEAP_ROOT;
  p = log.put_time(p, time);
  p = put_uleb(p, count);
  for (uint32_t i = 0; i < count; ++i) {
    p = log.put_ptr(p, addresses[i]);
    p = log.put_obj(p, objects[i]);
  }
  log.commit(p, EventKind::heap_root);
}

// One heap object with `count` references (absolute field offsets, increasing).
inline void write_heap_object(ThreadLog& log, uint64_t time, uint64_t obj, uint64_t vtable, uint64_t size,
                              uint8_t generation, const uint64_t* offsets, const uint64_t* refs, uint32_t count) {
  uint8_t* p = log.reserve(kHead + kMaxLeb128 * (4 + 2 * count) + 1);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_HEAP | TYPE_HEAP_OBJECT;
  p = log.put_time(p, time);
  p = log.put_obj(p, obj);
  p = log.put_ptr(p, vtable);
  p = put_uleb(p, size);
  *p++ = generation;
  p = put_uleb(p, count);
  uint64_t last = 0;
  for (uint32_t i = 0; i < count; ++i) {
    p = put_uleb(p, offsets[i] - last);
    last = offsets[i];
    p = log.put_obj(p, refs[i]);
  }
  log.commit(p, EventKind::heap_object);
}

// Metadata written into a thread's own buffer rather than the shared MetaLog: for the heap walk, which
// runs with the world stopped and so may not take the MetaLog's lock. Earlier in the same buffer is
// earlier in the file, so what follows in that buffer may reference it. TYPE_VTABLE: domain id, class.
inline void write_vtable_load(ThreadLog& log, uint64_t time, uint64_t vtable, uint64_t domain, uint64_t klass) {
  uint8_t* p = log.reserve(kHead + 1 + 3 * kMaxLeb128);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_METADATA | TYPE_END_LOAD;
  p = log.put_time(p, time);
  *p++ = TYPE_VTABLE;
  p = log.put_ptr(p, vtable);
  p = log.put_ptr(p, domain);
  p = log.put_ptr(p, klass);
  log.commit(p, EventKind::vtable_load);
}

// TYPE_CLASS load: image, name (`name_len` bytes, no NUL inside; the NUL is added). `name_len` must
// leave room in one buffer (callers bound it).
inline void write_class_load(ThreadLog& log, uint64_t time, uint64_t klass, uint64_t image, const char* name,
                             size_t name_len) {
  uint8_t* p = log.reserve(kHead + 1 + 2 * kMaxLeb128 + name_len + 1);
  if (!p) [[unlikely]] return;
  *p++ = TYPE_METADATA | TYPE_END_LOAD;
  p = log.put_time(p, time);
  *p++ = TYPE_CLASS;
  p = log.put_ptr(p, klass);
  p = log.put_ptr(p, image);
  for (size_t i = 0; i < name_len; ++i) *p++ = static_cast<uint8_t>(name[i]);
  *p++ = 0;
  log.commit(p, EventKind::class_load);
}

}  // namespace mlpd::rt
