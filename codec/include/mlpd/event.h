// The decoded form of mlpd headers and events, shared by the encoder (which writes an Event) and the
// decoder (which produces one). One flat struct serves every kind: the decoder reuses a single Event
// for a whole file, so vectors keep their capacity and decoding allocates almost nothing. Each kind
// uses only the fields listed for it below; the others stay zero/empty (reset() restores that), which
// is what lets round-trip tests compare whole events with ==.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlpd {

// X-macro of every v17 event kind. The second column is the name used by `mlpd verify --json`
// counts and everywhere else a kind is named; backtrace variants are the same kind.
#define MLPD_EVENT_KINDS(X)                               \
  X(alloc, "alloc")                                       \
  X(gc_event, "gc_event")                                 \
  X(gc_resize, "gc_resize")                               \
  X(gc_move, "gc_move")                                   \
  X(gc_handle_created, "gc_handle_created")               \
  X(gc_handle_destroyed, "gc_handle_destroyed")           \
  X(gc_finalize_start, "gc_finalize_start")               \
  X(gc_finalize_end, "gc_finalize_end")                   \
  X(gc_finalize_object_start, "gc_finalize_object_start") \
  X(gc_finalize_object_end, "gc_finalize_object_end")     \
  X(class_load, "class_load")                             \
  X(image_load, "image_load")                             \
  X(image_unload, "image_unload")                         \
  X(assembly_load, "assembly_load")                       \
  X(assembly_unload, "assembly_unload")                   \
  X(domain_load, "domain_load")                           \
  X(domain_unload, "domain_unload")                       \
  X(domain_name, "domain_name")                           \
  X(context_load, "context_load")                         \
  X(context_unload, "context_unload")                     \
  X(thread_start, "thread_start")                         \
  X(thread_end, "thread_end")                             \
  X(thread_name, "thread_name")                           \
  X(vtable_load, "vtable_load")                           \
  X(method_enter, "method_enter")                         \
  X(method_leave, "method_leave")                         \
  X(method_exc_leave, "method_exc_leave")                 \
  X(method_jit, "method_jit")                             \
  X(exception_throw, "exception_throw")                   \
  X(exception_clause, "exception_clause")                 \
  X(monitor, "monitor")                                   \
  X(heap_start, "heap_start")                             \
  X(heap_end, "heap_end")                                 \
  X(heap_object, "heap_object")                           \
  X(heap_root, "heap_root")                               \
  X(heap_root_register, "heap_root_register")             \
  X(heap_root_unregister, "heap_root_unregister")         \
  X(sample_hit, "sample_hit")                             \
  X(sample_usym, "sample_usym")                           \
  X(counter_descriptors, "counter_descriptors")           \
  X(counter_samples, "counter_samples")                   \
  X(jit_helper, "jit_helper")                             \
  X(sync_point, "sync_point")                             \
  X(aot_id, "aot_id")

enum class EventKind : uint8_t {
#define MLPD_X(id, name) id,
  MLPD_EVENT_KINDS(MLPD_X)
#undef MLPD_X
};

inline constexpr size_t kEventKindCount = 0
#define MLPD_X(id, name) +1
    MLPD_EVENT_KINDS(MLPD_X)
#undef MLPD_X
    ;

inline constexpr std::array<std::string_view, kEventKindCount> kEventKindNames = {
#define MLPD_X(id, name) std::string_view{name},
    MLPD_EVENT_KINDS(MLPD_X)
#undef MLPD_X
};

inline constexpr std::string_view event_kind_name(EventKind k) {
  return kEventKindNames[static_cast<size_t>(k)];
}

// One reference inside a heap object: `offset` is the byte offset of the referencing field from the
// object's start (absolute; the file stores each offset as a uleb delta from the previous one).
struct HeapRef {
  uint64_t offset = 0;
  uint64_t obj = 0;
  bool operator==(const HeapRef&) const = default;
};

// One GC root: the address of the root slot and the object it holds.
struct RootRef {
  uint64_t address = 0;
  uint64_t obj = 0;
  bool operator==(const RootRef&) const = default;
};

struct CounterDesc {
  uint64_t section = 0;       // raw masked section flag (format::COUNTER_SECTION_*, 0x100 JIT, ...)
  std::string section_name;   // only when section == COUNTER_SECTION_PERFCOUNTERS
  std::string name;
  uint64_t type = 0;          // format::CounterType
  uint64_t unit = 0;          // raw masked unit flag
  uint64_t variance = 0;      // raw masked variance flag
  uint64_t index = 0;         // never 0 (0 terminates a sample)
  bool operator==(const CounterDesc&) const = default;
};

// One counter value of a TYPE_SAMPLE_COUNTERS event. Integer types hold their value (a delta for
// Mono's own counters) in `bits`: uleb types zero-extended, sleb types as two's complement.
// DOUBLE holds the IEEE bits of the absolute value in `bits`. STRING uses is_null/str.
struct CounterValue {
  uint64_t index = 0;
  uint64_t type = 0;
  uint64_t bits = 0;
  bool is_null = false;
  std::string str;
  bool operator==(const CounterValue&) const = default;
};

struct Event {
  EventKind kind = EventKind::alloc;
  uint64_t time = 0;           // absolute, ns (time_base + deltas, with uint64 wrap-around)
  bool has_backtrace = false;  // alloc, gc_handle_*, exception_throw, monitor: the _BT variant

  // Field use per kind, all absolute (file order and encodings: the table of mlpd/event_layout.h):
  //   alloc:                 ptr=vtable, obj, size, [backtrace]
  //   gc_event:              code=event (format::GcEvent), generation
  //   gc_resize:             size=new heap size
  //   gc_move:               objects = old0,new0,old1,new1,...
  //   gc_handle_created:     handle_type, handle, obj, [backtrace]
  //   gc_handle_destroyed:   handle_type, handle, [backtrace]
  //   gc_finalize_*start/end: nothing; gc_finalize_object_*: obj
  //   class_load:            ptr=class, ptr2=image, name
  //   image_load:            ptr=image, name=file name, mvid;  image_unload: ptr, name
  //   assembly_load/unload:  ptr=assembly, ptr2=image, name
  //   domain_load/unload:    ptr=domain id;  domain_name: ptr, name
  //   context_load/unload:   ptr=context id, ptr2=domain id
  //   thread_start/end:      ptr=thread id;  thread_name: ptr, name
  //   vtable_load:           ptr=vtable, ptr2=domain id, ptr3=class
  //   method_enter/leave/exc_leave: method;  method_jit: method, ptr=code start, size, name
  //   exception_throw:       obj, [backtrace]
  //   exception_clause:      code=clause type, index=clause index, method, obj
  //   monitor:               code=event (format::MonitorEvent), obj, [backtrace]
  //   heap_start/heap_end:   nothing
  //   heap_object:           obj, ptr=vtable, size, generation, refs
  //   heap_root:             roots
  //   heap_root_register:    ptr=start, size, code=source, ptr2=key, name=description
  //   heap_root_unregister:  ptr=start
  //   sample_hit:            ptr=thread id, ips, frames (managed, innermost first)
  //   sample_usym:           ptr=address, size, name
  //   counter_descriptors:   counter_descs;  counter_samples: counter_values
  //   jit_helper:            code=buffer type, ptr=address, size, name (only for type 5)
  //   sync_point:            code=type (format::SyncPointType)
  //   aot_id:                name=the AOT id
  uint64_t ptr = 0;
  uint64_t ptr2 = 0;
  uint64_t ptr3 = 0;
  uint64_t obj = 0;
  uint64_t method = 0;
  uint64_t size = 0;
  uint64_t handle_type = 0;
  uint64_t handle = 0;
  uint64_t index = 0;
  uint8_t code = 0;
  uint8_t generation = 0;
  std::string name;
  std::string mvid;
  std::vector<uint64_t> backtrace;  // methods, outermost frame first (file order)
  std::vector<uint64_t> objects;
  std::vector<HeapRef> refs;
  std::vector<RootRef> roots;
  std::vector<uint64_t> ips;
  std::vector<uint64_t> frames;
  std::vector<CounterDesc> counter_descs;
  std::vector<CounterValue> counter_values;

  // Back to the all-zero state of `kind`, keeping vector and string capacity.
  void reset(EventKind k) {
    reset_scalars(k);
    name.clear();
    mvid.clear();
    backtrace.clear();
    objects.clear();
    refs.clear();
    roots.clear();
    ips.clear();
    frames.clear();
    counter_descs.clear();
    counter_values.clear();
  }

  // Resets only the scalar fields: for a caller that knows every string and list is already empty
  // (the decoder, after an event that used none).
  void reset_scalars(EventKind k) {
    kind = k;
    time = 0;
    has_backtrace = false;
    ptr = ptr2 = ptr3 = obj = method = size = handle_type = handle = index = 0;
    code = generation = 0;
  }

  bool operator==(const Event&) const = default;
};

struct FileHeader {
  uint8_t major = 3;
  uint8_t minor = 0;
  uint8_t data_version = 17;
  uint8_t ptr_size = 8;
  uint64_t startup_ms = 0;  // ms since the Unix epoch
  uint64_t startup_ns = 0;  // ns, same clock as event times
  int32_t timer_overhead = 0;
  int32_t flags = 0;
  int32_t pid = 0;
  uint16_t port = 0;
  std::string args;  // stored without the NUL the file carries
  std::string arch;
  std::string os;
  bool operator==(const FileHeader&) const = default;
};

struct BufferHeader {
  uint32_t length = 0;  // bytes of event data after the 48-byte header
  uint64_t time_base = 0;
  int64_t ptr_base = 0;
  int64_t obj_base = 0;  // object addresses >> 3
  uint64_t thread_id = 0;
  int64_t method_base = 0;
  bool operator==(const BufferHeader&) const = default;
};

}  // namespace mlpd
