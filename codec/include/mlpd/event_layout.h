// The one table of every v17 event's layout: its event byte(s), the metadata type byte of metadata
// events, and each field after the time, in file order, with its encoding, the Event member it fills,
// its name, the condition under which it is present, and the check the reader makes of its value.
// Everything else that spells a layout is generated from this table or checked against it:
//   - the encoder (BufferEncoder::add, encoder.cpp) and the decoder (BufferDecoder::event_body,
//     buffer_decoder.cpp) are generated from it (X-macro expansion), and so is the tests' random event
//     generator (EventGen::make, tests/support/event_gen.cpp);
//   - the agent's hot-path writers (writer/include/mlpd/rt/events.h) stay hand-written (each reserves
//     its worst case and stores straight into the buffer) and are checked: the unit test
//     event_layout_test.cpp writes each of them and compares the bytes with the table's encoding;
//   - `mlpd dump`'s walk (reader/cli/dump_walk.h) takes every field name from the table
//     (field_name<kind, member>, a compile error for a field the kind does not have), and the test
//     cli_dump_layout checks that `mlpd dump --json` prints every field of every kind (tools/mlpd_layout).
// What the table does not say stays written out where it is used: the layout of one item of a list
// (Enc::heap_refs, roots, counter_descs, counter_values ...), the decoder's fast paths for method
// events (buffer_decoder.h), and the messages for metadata events of an unsupported subtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mlpd/event.h"
#include "mlpd/format.h"

namespace mlpd::layout {

// How a field is stored.
enum class Enc : uint8_t {
  byte,            // one byte
  uleb,            // unsigned LEB128
  ptr,             // sleb delta from the buffer's ptr_base
  obj,             // sleb delta from the buffer's obj_base, of the address >> 3
  method,          // sleb delta from the previous method of the buffer
  string,          // NUL-terminated
  backtrace,       // uleb count, then that many methods
  obj_pairs,       // uleb count (even), then that many objects: old0, new0, old1, new1 ...
  heap_refs,       // uleb count, then (uleb offset delta, obj) per reference
  roots,           // uleb count, then (ptr slot address, obj) per root
  ptr_list,        // uleb count, then that many ptrs
  method_list,     // uleb count, then that many methods
  counter_descs,   // uleb count, then per descriptor: uleb section, [string section name], string
                   // name, uleb type, unit, variance, index
  counter_values,  // per value: uleb index, uleb type, the value by type; a 0 index ends the list
  end,             // not a field: ends a field list
};

// When a field is present.
enum class Cond : uint8_t {
  always,
  if_backtrace,   // the _BT variant of the event byte (Event::has_backtrace)
  if_trampoline,  // jit_helper of type CODE_BUFFER_SPECIFIC_TRAMPOLINE
};

// What the reader checks of a field's value (a problem at the field's offset otherwise).
enum class Check : uint8_t {
  none,
  gc_event,     // format::is_valid_gc_event
  handle_type,  // <= format::kMaxGcHandleType
  clause_type,  // format::is_valid_clause_type
  monitor,      // MONITOR_CONTENTION .. MONITOR_FAIL
  root_source,  // <= format::kMaxRootSource
  code_buffer,  // <= format::kMaxCodeBufferType
  sync_point,   // <= SYNC_POINT_WORLD_START
};

// The Event member a field fills (event.h).
enum class Member : uint8_t {
  ptr, ptr2, ptr3, obj, method, size, handle_type, handle, index, code, generation, name, mvid,
  backtrace, objects, refs, roots, ips, frames, counter_descs, counter_values, none,
};

// The table. Three kinds of entries:
//   EV(kind, event_byte, FIELDS)              one event byte
//   BT(kind, event_byte, bt_event_byte, FIELDS) with a _BT variant that adds the backtrace
//   MD(kind, ext, metadata_type, FIELDS)      TYPE_METADATA | ext, then time and the metadata type byte
// FIELDS is a sequence of F(encoding, member, name, condition, check), in file order after the time.
// The names are those `mlpd dump` prints (text and JSON keys).
// clang-format off
#define MLPD_EVENT_LAYOUTS(EV, BT, MD, F)                                                                   \
  BT(alloc, TYPE_ALLOC | TYPE_ALLOC_NO_BT, TYPE_ALLOC | TYPE_ALLOC_BT,                                       \
     F(ptr, ptr, "vtable", always, none) F(obj, obj, "obj", always, none) F(uleb, size, "size", always, none) \
     F(backtrace, backtrace, "backtrace", if_backtrace, none))                                               \
  EV(gc_event, TYPE_GC | TYPE_GC_EVENT,                                                                      \
     F(byte, code, "event", always, gc_event) F(byte, generation, "generation", always, none))               \
  EV(gc_resize, TYPE_GC | TYPE_GC_RESIZE, F(uleb, size, "size", always, none))                               \
  EV(gc_move, TYPE_GC | TYPE_GC_MOVE, F(obj_pairs, objects, "moves", always, none))                          \
  BT(gc_handle_created, TYPE_GC | TYPE_GC_HANDLE_CREATED, TYPE_GC | TYPE_GC_HANDLE_CREATED_BT,               \
     F(uleb, handle_type, "handle_type", always, handle_type) F(uleb, handle, "handle", always, none)        \
     F(obj, obj, "obj", always, none) F(backtrace, backtrace, "backtrace", if_backtrace, none))              \
  BT(gc_handle_destroyed, TYPE_GC | TYPE_GC_HANDLE_DESTROYED, TYPE_GC | TYPE_GC_HANDLE_DESTROYED_BT,         \
     F(uleb, handle_type, "handle_type", always, handle_type) F(uleb, handle, "handle", always, none)        \
     F(backtrace, backtrace, "backtrace", if_backtrace, none))                                               \
  EV(gc_finalize_start, TYPE_GC | TYPE_GC_FINALIZE_START, )                                                  \
  EV(gc_finalize_end, TYPE_GC | TYPE_GC_FINALIZE_END, )                                                      \
  EV(gc_finalize_object_start, TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START, F(obj, obj, "obj", always, none))    \
  EV(gc_finalize_object_end, TYPE_GC | TYPE_GC_FINALIZE_OBJECT_END, F(obj, obj, "obj", always, none))        \
  MD(class_load, TYPE_END_LOAD, TYPE_CLASS,                                                                  \
     F(ptr, ptr, "class", always, none) F(ptr, ptr2, "image", always, none) F(string, name, "name", always, none)) \
  MD(image_load, TYPE_END_LOAD, TYPE_IMAGE,                                                                  \
     F(ptr, ptr, "image", always, none) F(string, name, "name", always, none) F(string, mvid, "mvid", always, none)) \
  MD(image_unload, TYPE_END_UNLOAD, TYPE_IMAGE,                                                              \
     F(ptr, ptr, "image", always, none) F(string, name, "name", always, none))                               \
  MD(assembly_load, TYPE_END_LOAD, TYPE_ASSEMBLY,                                                            \
     F(ptr, ptr, "assembly", always, none) F(ptr, ptr2, "image", always, none) F(string, name, "name", always, none)) \
  MD(assembly_unload, TYPE_END_UNLOAD, TYPE_ASSEMBLY,                                                        \
     F(ptr, ptr, "assembly", always, none) F(ptr, ptr2, "image", always, none) F(string, name, "name", always, none)) \
  MD(domain_load, TYPE_END_LOAD, TYPE_DOMAIN, F(ptr, ptr, "domain", always, none))                           \
  MD(domain_unload, TYPE_END_UNLOAD, TYPE_DOMAIN, F(ptr, ptr, "domain", always, none))                       \
  MD(domain_name, TYPE_METADATA_NAME, TYPE_DOMAIN,                                                           \
     F(ptr, ptr, "domain", always, none) F(string, name, "name", always, none))                              \
  MD(context_load, TYPE_END_LOAD, TYPE_CONTEXT,                                                              \
     F(ptr, ptr, "context", always, none) F(ptr, ptr2, "domain", always, none))                              \
  MD(context_unload, TYPE_END_UNLOAD, TYPE_CONTEXT,                                                          \
     F(ptr, ptr, "context", always, none) F(ptr, ptr2, "domain", always, none))                              \
  MD(thread_start, TYPE_END_LOAD, TYPE_THREAD, F(ptr, ptr, "tid", always, none))                             \
  MD(thread_end, TYPE_END_UNLOAD, TYPE_THREAD, F(ptr, ptr, "tid", always, none))                             \
  MD(thread_name, TYPE_METADATA_NAME, TYPE_THREAD,                                                           \
     F(ptr, ptr, "tid", always, none) F(string, name, "name", always, none))                                 \
  MD(vtable_load, TYPE_END_LOAD, TYPE_VTABLE,                                                                \
     F(ptr, ptr, "vtable", always, none) F(ptr, ptr2, "domain", always, none) F(ptr, ptr3, "class", always, none)) \
  EV(method_enter, TYPE_METHOD | TYPE_ENTER, F(method, method, "method", always, none))                      \
  EV(method_leave, TYPE_METHOD | TYPE_LEAVE, F(method, method, "method", always, none))                      \
  EV(method_exc_leave, TYPE_METHOD | TYPE_EXC_LEAVE, F(method, method, "method", always, none))              \
  EV(method_jit, TYPE_METHOD | TYPE_JIT,                                                                     \
     F(method, method, "method", always, none) F(ptr, ptr, "code", always, none)                             \
     F(uleb, size, "size", always, none) F(string, name, "name", always, none))                              \
  BT(exception_throw, TYPE_EXCEPTION | TYPE_THROW_NO_BT, TYPE_EXCEPTION | TYPE_THROW_BT,                     \
     F(obj, obj, "obj", always, none) F(backtrace, backtrace, "backtrace", if_backtrace, none))              \
  EV(exception_clause, TYPE_EXCEPTION | TYPE_CLAUSE,                                                         \
     F(byte, code, "clause", always, clause_type) F(uleb, index, "index", always, none)                      \
     F(method, method, "method", always, none) F(obj, obj, "obj", always, none))                             \
  BT(monitor, TYPE_MONITOR | TYPE_MONITOR_NO_BT, TYPE_MONITOR | TYPE_MONITOR_BT,                             \
     F(byte, code, "event", always, monitor) F(obj, obj, "obj", always, none)                                \
     F(backtrace, backtrace, "backtrace", if_backtrace, none))                                               \
  EV(heap_start, TYPE_HEAP | TYPE_HEAP_START, )                                                              \
  EV(heap_end, TYPE_HEAP | TYPE_HEAP_END, )                                                                  \
  EV(heap_object, TYPE_HEAP | TYPE_HEAP_OBJECT,                                                              \
     F(obj, obj, "obj", always, none) F(ptr, ptr, "vtable", always, none) F(uleb, size, "size", always, none) \
     F(byte, generation, "generation", always, none) F(heap_refs, refs, "refs", always, none))               \
  EV(heap_root, TYPE_HEAP | TYPE_HEAP_ROOT, F(roots, roots, "roots", always, none))                          \
  EV(heap_root_register, TYPE_HEAP | TYPE_HEAP_ROOT_REGISTER,                                                \
     F(ptr, ptr, "start", always, none) F(uleb, size, "size", always, none)                                  \
     F(byte, code, "source", always, root_source) F(ptr, ptr2, "key", always, none)                          \
     F(string, name, "name", always, none))                                                                  \
  EV(heap_root_unregister, TYPE_HEAP | TYPE_HEAP_ROOT_UNREGISTER, F(ptr, ptr, "start", always, none))        \
  EV(sample_hit, TYPE_SAMPLE | TYPE_SAMPLE_HIT,                                                              \
     F(ptr, ptr, "tid", always, none) F(ptr_list, ips, "ips", always, none)                                  \
     F(method_list, frames, "frames", always, none))                                                         \
  EV(sample_usym, TYPE_SAMPLE | TYPE_SAMPLE_USYM,                                                            \
     F(ptr, ptr, "address", always, none) F(uleb, size, "size", always, none) F(string, name, "name", always, none)) \
  EV(counter_descriptors, TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS_DESC,                                           \
     F(counter_descs, counter_descs, "counters", always, none))                                              \
  EV(counter_samples, TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS,                                                    \
     F(counter_values, counter_values, "values", always, none))                                              \
  EV(jit_helper, TYPE_RUNTIME | TYPE_JITHELPER,                                                              \
     F(byte, code, "type", always, code_buffer) F(ptr, ptr, "address", always, none)                         \
     F(uleb, size, "size", always, none) F(string, name, "name", if_trampoline, none))                       \
  EV(sync_point, TYPE_META | TYPE_SYNC_POINT, F(byte, code, "type", always, sync_point))                     \
  EV(aot_id, TYPE_META | TYPE_AOT_ID, F(string, name, "id", always, none))
// clang-format on

// The same table as data, for tests and tools.
struct Field {
  Enc enc = Enc::end;
  Member member = Member::none;
  std::string_view name;
  Cond cond = Cond::always;
  Check check = Check::none;
};

struct EventLayout {
  EventKind kind;
  uint8_t event_byte;     // without a backtrace
  uint8_t bt_event_byte;  // kNoVariant when the kind has no _BT variant
  uint8_t metadata_type;  // 0 for non-metadata events
  std::span<const Field> fields;
};

inline constexpr uint8_t kNoVariant = 0xFF;  // type 15: never a valid event byte

namespace detail {
using namespace mlpd::format;
#define MLPD_LAYOUT_FIELD(enc, member, name, cond, check) Field{Enc::enc, Member::member, name, Cond::cond, Check::check},
#define MLPD_LAYOUT_EV(kind, eb, fields) inline constexpr Field kFields_##kind[] = {fields Field{}};
#define MLPD_LAYOUT_BT(kind, eb, bt, fields) inline constexpr Field kFields_##kind[] = {fields Field{}};
#define MLPD_LAYOUT_MD(kind, ext, mtype, fields) inline constexpr Field kFields_##kind[] = {fields Field{}};
MLPD_EVENT_LAYOUTS(MLPD_LAYOUT_EV, MLPD_LAYOUT_BT, MLPD_LAYOUT_MD, MLPD_LAYOUT_FIELD)
#undef MLPD_LAYOUT_EV
#undef MLPD_LAYOUT_BT
#undef MLPD_LAYOUT_MD
#undef MLPD_LAYOUT_FIELD

template <size_t N>
constexpr std::span<const Field> fields_of(const Field (&f)[N]) {
  return std::span<const Field>(f, N - 1);  // without the end marker
}

// One entry per EventKind, in EventKind order (checked below).
inline constexpr EventLayout kLayouts[] = {
#define MLPD_LAYOUT_EV(kind, eb, fields) \
  {EventKind::kind, static_cast<uint8_t>(eb), kNoVariant, 0, fields_of(kFields_##kind)},
#define MLPD_LAYOUT_BT(kind, eb, bt, fields) \
  {EventKind::kind, static_cast<uint8_t>(eb), static_cast<uint8_t>(bt), 0, fields_of(kFields_##kind)},
#define MLPD_LAYOUT_MD(kind, ext, mtype, fields) \
  {EventKind::kind, static_cast<uint8_t>(TYPE_METADATA | ext), kNoVariant, mtype, fields_of(kFields_##kind)},
#define MLPD_LAYOUT_FIELD(...)
    MLPD_EVENT_LAYOUTS(MLPD_LAYOUT_EV, MLPD_LAYOUT_BT, MLPD_LAYOUT_MD, MLPD_LAYOUT_FIELD)
#undef MLPD_LAYOUT_EV
#undef MLPD_LAYOUT_BT
#undef MLPD_LAYOUT_MD
#undef MLPD_LAYOUT_FIELD
};
}  // namespace detail

using detail::kLayouts;

constexpr bool layouts_in_kind_order() {
  if (std::size(kLayouts) != kEventKindCount) return false;
  for (size_t i = 0; i < std::size(kLayouts); ++i)
    if (static_cast<size_t>(kLayouts[i].kind) != i) return false;
  return true;
}
static_assert(layouts_in_kind_order(), "MLPD_EVENT_LAYOUTS lists every EventKind once, in EventKind order");

constexpr const EventLayout& layout_of(EventKind k) { return kLayouts[static_cast<size_t>(k)]; }

// Not constexpr: reaching it in a constant expression is a compile error.
inline std::string_view field_not_in_layout() { return {}; }

// The name of `member` in the layout of `kind`; not a constant expression (so a compile error where a
// constant is required) when the kind has no such field.
constexpr std::string_view field_name_of(EventKind kind, Member member) {
  for (const Field& f : layout_of(kind).fields)
    if (f.member == member) return f.name;
  return field_not_in_layout();
}
template <EventKind K, Member M>
inline constexpr std::string_view field_name = field_name_of(K, M);

}  // namespace mlpd::layout
