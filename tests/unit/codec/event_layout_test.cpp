// The layout table (mlpd/event_layout.h) against everything that spells a layout:
//   - every entry round-trips: an Event with exactly the table's fields set, encoded by BufferEncoder,
//     gives the bytes this test's own interpretation of the table gives (event byte, time, each field
//     by its encoding, in table order, under its condition), and decodes back to the same Event;
//   - every hot-path writer of rt/events.h writes exactly the table's fields: its bytes decode (the
//     decoder being generated from the table) to the Event it was given, one event, nothing left over,
//     and equal this test's interpretation of the table;
//   - the table itself: one entry per kind, event bytes unique, the checks on byte fields only where
//     the format has enums, names unique within an event.
// (The dump walk takes its names from the table at compile time: reader/cli/dump_walk.h.)
#include "mlpd_catch.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/buffer_decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/event_layout.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/events.h"
#include "mlpd/rt/thread_log.h"

using namespace mlpd;
using namespace mlpd::format;
using layout::Check;
using layout::Cond;
using layout::Enc;
using layout::Member;

namespace {

constexpr uint64_t kTid = 0x7f00deadbeef;
constexpr uint64_t kT0 = 1'700'000'000'000'000'000;

// Distinct values per field and seed, with LEB128 length edges and deltas both ways.
uint64_t value_for(size_t field, size_t seed) {
  static const uint64_t kValues[] = {0x7f1234567890, 0x7f1234560008, 1, 127, 128, 0x55d0c0de0000, 8191, 0x1000,
                                     0x7fffffffffffffff, 64, 0x8000000000000000, 0xffffffffffffffff};
  return kValues[(field * 5 + seed * 3) % std::size(kValues)];
}

// A value the reader accepts for a checked field.
uint8_t valid_byte(Check c, size_t seed) {
  switch (c) {
    case Check::gc_event: return seed % 2 ? GC_EVENT_START : GC_EVENT_POST_START_WORLD_UNLOCKED;
    case Check::clause_type: return seed % 2 ? CLAUSE_FAULT : CLAUSE_FINALLY;
    case Check::monitor: return seed % 2 ? MONITOR_CONTENTION : MONITOR_FAIL;
    case Check::root_source: return static_cast<uint8_t>(seed % (kMaxRootSource + 1));
    // Every other seed the one type that carries a name.
    case Check::code_buffer: return seed % 2 ? CODE_BUFFER_SPECIFIC_TRAMPOLINE : static_cast<uint8_t>(seed % 5);
    case Check::sync_point: return static_cast<uint8_t>(seed % 3);
    default: return static_cast<uint8_t>(value_for(seed, seed));
  }
}

// An Event of `l`'s kind with every field the table lists set (and only those).
Event make_event(const layout::EventLayout& l, bool bt, size_t seed) {
  Event e;
  e.kind = l.kind;
  e.time = kT0 + seed * 1000;
  e.has_backtrace = bt;
  for (size_t i = 0; i < l.fields.size(); ++i) {
    const layout::Field& f = l.fields[i];
    const uint64_t v = value_for(i, seed);
    const uint64_t obj = v & ~uint64_t{7};  // the format keeps addr >> 3
    switch (f.member) {
      case Member::ptr: e.ptr = v; break;
      case Member::ptr2: e.ptr2 = v + 16; break;
      case Member::ptr3: e.ptr3 = v + 32; break;
      case Member::obj: e.obj = obj; break;
      case Member::method: e.method = v; break;
      case Member::size: e.size = v; break;
      case Member::handle_type: e.handle_type = seed % (kMaxGcHandleType + 1); break;
      case Member::handle: e.handle = v; break;
      case Member::index: e.index = v; break;
      case Member::code: e.code = valid_byte(f.check, seed); break;
      case Member::generation: e.generation = static_cast<uint8_t>(seed % 3); break;
      case Member::name: e.name = "name " + std::to_string(seed) + " of " + std::string(event_kind_name(l.kind)); break;
      case Member::mvid: e.mvid = "mvid-" + std::to_string(seed); break;
      case Member::backtrace:
        if (bt)
          for (size_t k = 0; k < seed % 4; ++k) e.backtrace.push_back(value_for(k, seed + k));
        break;
      case Member::objects:
        for (size_t k = 0; k < 2 * (seed % 3); ++k) e.objects.push_back(value_for(k, seed) & ~uint64_t{7});
        break;
      case Member::refs: {
        uint64_t off = 0;
        for (size_t k = 0; k < seed % 3; ++k) e.refs.push_back({off += 8 * (k + 1), value_for(k, seed) & ~uint64_t{7}});
        break;
      }
      case Member::roots:
        for (size_t k = 0; k < seed % 3; ++k) e.roots.push_back({value_for(k, seed), value_for(k + 1, seed) & ~uint64_t{7}});
        break;
      case Member::ips:
        for (size_t k = 0; k < seed % 4; ++k) e.ips.push_back(value_for(k, seed + 1));
        break;
      case Member::frames:
        for (size_t k = 0; k < seed % 4; ++k) e.frames.push_back(value_for(k, seed + 2));
        break;
      case Member::counter_descs:
        for (size_t k = 0; k < seed % 3; ++k) {
          CounterDesc d;
          d.section = k == 1 ? COUNTER_SECTION_PERFCOUNTERS : COUNTER_SECTION_PROFILER;
          if (k == 1) d.section_name = "category";
          d.name = "counter " + std::to_string(k);
          d.type = k % (kMaxCounterType + 1);
          d.unit = COUNTER_UNIT_BYTES;
          d.variance = COUNTER_VARIANCE_MONOTONIC;
          d.index = k + 1;
          e.counter_descs.push_back(d);
        }
        break;
      case Member::counter_values:
        for (size_t k = 0; k < seed % 4; ++k) {
          CounterValue c;
          c.index = k + 1;
          c.type = k == 3 ? COUNTER_STRING : k == 2 ? COUNTER_DOUBLE : k == 1 ? COUNTER_LONG : COUNTER_ULONG;
          c.bits = c.type == COUNTER_STRING ? 0 : value_for(k, seed);
          if (c.type == COUNTER_STRING) c.str = "value";
          e.counter_values.push_back(c);
        }
        break;
      case Member::none: break;
    }
  }
  // A field absent under its condition stays empty (the name of a jit_helper of another type).
  for (const layout::Field& f : l.fields)
    if (f.cond == Cond::if_trampoline && e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE) {
      REQUIRE(f.member == Member::name);
      e.name.clear();
    }
  return e;
}

// This test's own reading of the table: the bytes of one event that starts a buffer whose bases are
// `h`'s, the method chain starting at `h.method_base` and the time at `h.time_base`.
class TableEncoder {
 public:
  explicit TableEncoder(const BufferHeader& h) : h_(h), last_method_(static_cast<uint64_t>(h.method_base)) {}

  std::vector<uint8_t> encode(const Event& e) {
    const layout::EventLayout& l = layout::layout_of(e.kind);
    out_.clear();
    out_.push_back(e.has_backtrace ? l.bt_event_byte : l.event_byte);
    uleb(e.time - h_.time_base);
    if (l.metadata_type) out_.push_back(l.metadata_type);
    for (const layout::Field& f : l.fields) {
      if (f.cond == Cond::if_backtrace && !e.has_backtrace) continue;
      if (f.cond == Cond::if_trampoline && e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE) continue;
      field(e, f);
    }
    return out_;
  }

 private:
  void uleb(uint64_t v) {
    uint8_t b[kMaxLeb128];
    out_.insert(out_.end(), b, put_uleb(b, v));
  }
  void sleb(uint64_t v) {
    uint8_t b[kMaxLeb128];
    out_.insert(out_.end(), b, put_sleb(b, static_cast<int64_t>(v)));
  }
  void ptr(uint64_t v) { sleb(v - static_cast<uint64_t>(h_.ptr_base)); }
  void obj(uint64_t v) { sleb((v >> 3) - static_cast<uint64_t>(h_.obj_base)); }
  void method(uint64_t v) {
    sleb(v - last_method_);
    last_method_ = v;
  }
  void string(const std::string& s) {
    out_.insert(out_.end(), s.begin(), s.end());
    out_.push_back(0);
  }
  uint64_t scalar(const Event& e, Member m) {
    switch (m) {
      case Member::ptr: return e.ptr;
      case Member::ptr2: return e.ptr2;
      case Member::ptr3: return e.ptr3;
      case Member::obj: return e.obj;
      case Member::method: return e.method;
      case Member::size: return e.size;
      case Member::handle_type: return e.handle_type;
      case Member::handle: return e.handle;
      case Member::index: return e.index;
      case Member::code: return e.code;
      case Member::generation: return e.generation;
      default: FAIL("not a scalar member"); return 0;
    }
  }
  void field(const Event& e, const layout::Field& f) {
    switch (f.enc) {
      case Enc::byte: out_.push_back(static_cast<uint8_t>(scalar(e, f.member))); return;
      case Enc::uleb: uleb(scalar(e, f.member)); return;
      case Enc::ptr: ptr(scalar(e, f.member)); return;
      case Enc::obj: obj(scalar(e, f.member)); return;
      case Enc::method: method(scalar(e, f.member)); return;
      case Enc::string: string(f.member == Member::mvid ? e.mvid : e.name); return;
      case Enc::backtrace:
      case Enc::method_list: {
        const auto& v = f.member == Member::frames ? e.frames : e.backtrace;
        uleb(v.size());
        for (uint64_t m : v) method(m);
        return;
      }
      case Enc::ptr_list:
        uleb(e.ips.size());
        for (uint64_t p : e.ips) ptr(p);
        return;
      case Enc::obj_pairs:
        uleb(e.objects.size());
        for (uint64_t o : e.objects) obj(o);
        return;
      case Enc::heap_refs: {
        uleb(e.refs.size());
        uint64_t last = 0;
        for (const HeapRef& r : e.refs) {
          uleb(r.offset - last);
          last = r.offset;
          obj(r.obj);
        }
        return;
      }
      case Enc::roots:
        uleb(e.roots.size());
        for (const RootRef& r : e.roots) {
          ptr(r.address);
          obj(r.obj);
        }
        return;
      case Enc::counter_descs:
        uleb(e.counter_descs.size());
        for (const CounterDesc& d : e.counter_descs) {
          uleb(d.section);
          if (d.section == COUNTER_SECTION_PERFCOUNTERS) string(d.section_name);
          string(d.name);
          uleb(d.type);
          uleb(d.unit);
          uleb(d.variance);
          uleb(d.index);
        }
        return;
      case Enc::counter_values:
        for (const CounterValue& c : e.counter_values) {
          uleb(c.index);
          uleb(c.type);
          if (c.type == COUNTER_ULONG) uleb(c.bits);
          else if (c.type == COUNTER_LONG) sleb(c.bits);
          else if (c.type == COUNTER_DOUBLE)
            for (unsigned i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(c.bits >> (8 * i)));
          else if (c.type == COUNTER_STRING) {
            out_.push_back(c.is_null ? 0 : 1);
            if (!c.is_null) string(c.str);
          } else FAIL("counter type not made by make_event");
        }
        uleb(0);
        return;
      case Enc::end: FAIL("Enc::end inside a field list"); return;
    }
  }

  BufferHeader h_;
  uint64_t last_method_;
  std::vector<uint8_t> out_;
};

// Decodes the one event of `data`; the decoder must end exactly at the end.
Event decode_one(const BufferHeader& h, const uint8_t* data) {
  BufferDecoder dec(h, data, 0);
  Event got;
  std::string problem;
  uint64_t offset = 0;
  REQUIRE(dec.next(got, problem, offset));
  INFO(problem);
  REQUIRE(problem.empty());
  Event more;
  CHECK_FALSE(dec.next(more, problem, offset));  // nothing left over
  CHECK(problem.empty());
  return got;
}

std::string hex(const std::vector<uint8_t>& v) {
  std::string s;
  char b[4];
  for (uint8_t x : v) {
    std::snprintf(b, sizeof b, "%02x ", x);
    s += b;
  }
  return s;
}

}  // namespace

TEST_CASE("event layout table: one entry per kind, unique event bytes and names", "[codec][layout]") {
  std::set<unsigned> bytes;
  for (size_t k = 0; k < kEventKindCount; ++k) {
    const layout::EventLayout& l = layout::kLayouts[k];
    CHECK(static_cast<size_t>(l.kind) == k);
    const unsigned key = l.event_byte | unsigned{l.metadata_type} << 8;
    INFO(event_kind_name(l.kind));
    CHECK(bytes.insert(key).second);
    if (l.bt_event_byte != layout::kNoVariant) CHECK(bytes.insert(l.bt_event_byte).second);
    CHECK((event_type(l.event_byte) == TYPE_METADATA) == (l.metadata_type != 0));
    std::set<std::string_view> names;
    for (const layout::Field& f : l.fields) {
      CHECK(names.insert(f.name).second);
      if (f.check != Check::none && f.check != Check::handle_type) CHECK(f.enc == Enc::byte);
      CHECK((f.cond == Cond::if_backtrace) == (f.enc == Enc::backtrace));
      CHECK((f.enc == Enc::backtrace) == (l.bt_event_byte != layout::kNoVariant && f.member == Member::backtrace));
    }
  }
}

TEST_CASE("event layout table: every entry round-trips through the encoder and the decoder", "[codec][layout]") {
  for (const layout::EventLayout& l : layout::kLayouts) {
    for (int bt = 0; bt <= (l.bt_event_byte != layout::kNoVariant ? 1 : 0); ++bt) {
      for (size_t seed = 0; seed < 8; ++seed) {
        const Event e = make_event(l, bt != 0, seed);
        INFO(event_kind_name(l.kind) << (bt ? " (backtrace)" : "") << " seed " << seed);
        BufferEncoder enc(kTid, kT0);
        enc.add(e);
        std::vector<uint8_t> file;
        enc.finish_into(file);
        const BufferHeader h = enc.header();
        const std::vector<uint8_t> data(file.begin() + kBufferHeaderSize, file.end());
        const std::vector<uint8_t> want = TableEncoder(h).encode(e);
        INFO("BufferEncoder: " << hex(data));
        INFO("the table:     " << hex(want));
        REQUIRE(data == want);
        CHECK(decode_one(h, data.data()) == e);
      }
    }
  }
}

namespace {

// One ThreadLog with its own pool, written by one rt::write_* call per event.
class Log {
 public:
  Log() : pool_(1u << 20, 2) {
    shared_.pool = &pool_;
    shared_.queue = &queue_;
    log_ = std::make_unique<rt::ThreadLog>(shared_, kTid, kT0);
  }
  ~Log() { log_->retire(); }
  rt::ThreadLog& log() { return *log_; }
  // The buffer's header and its bytes from `from`.
  std::pair<BufferHeader, std::vector<uint8_t>> bytes(size_t from) const {
    const rt::LogBuffer* b = log_->current();
    REQUIRE(b != nullptr);
    const uint32_t n = b->committed.load(std::memory_order_relaxed);
    BufferHeader h;
    h.length = n;
    h.time_base = b->time_base;
    h.ptr_base = b->ptr_base.load(std::memory_order_relaxed);
    h.obj_base = b->obj_base.load(std::memory_order_relaxed);
    h.thread_id = kTid;
    h.method_base = b->method_base;
    return {h, std::vector<uint8_t>(b->data + from, b->data + n)};
  }

 private:
  rt::BufferPool pool_;
  rt::FlushQueue queue_;
  rt::WriterShared shared_;
  std::unique_ptr<rt::ThreadLog> log_;
};

// Writes `e` with the writer function for its kind; false when the agent has none.
bool write(rt::ThreadLog& log, const Event& e) {
  rt::Backtrace bt;
  bt.count = static_cast<uint32_t>(e.backtrace.size());
  for (uint32_t i = 0; i < bt.count; ++i) bt.frames[i] = e.backtrace[i];
  const rt::Backtrace* b = e.has_backtrace ? &bt : nullptr;
  const layout::EventLayout& l = layout::layout_of(e.kind);
  switch (e.kind) {
    case EventKind::method_enter: rt::write_method(log, TYPE_ENTER, e.time, e.method); return true;
    case EventKind::method_leave: rt::write_method(log, TYPE_LEAVE, e.time, e.method); return true;
    case EventKind::method_exc_leave: rt::write_method(log, TYPE_EXC_LEAVE, e.time, e.method); return true;
    case EventKind::alloc: rt::write_alloc(log, e.time, e.ptr, e.obj, e.size, b); return true;
    case EventKind::exception_throw: rt::write_throw(log, e.time, e.obj, b); return true;
    case EventKind::exception_clause: rt::write_clause(log, e.time, e.code, e.index, e.method, e.obj); return true;
    case EventKind::monitor: rt::write_monitor(log, e.time, e.code, e.obj, b); return true;
    case EventKind::gc_event: rt::write_gc_event(log, e.time, e.code, e.generation); return true;
    case EventKind::gc_resize: rt::write_gc_resize(log, e.time, e.size); return true;
    case EventKind::gc_move:
      rt::write_gc_move(log, e.time, e.objects.data(), static_cast<uint32_t>(e.objects.size()));
      return true;
    case EventKind::gc_handle_created:
      rt::write_handle_created(log, e.time, e.handle_type, e.handle, e.obj, b);
      return true;
    case EventKind::gc_handle_destroyed: rt::write_handle_destroyed(log, e.time, e.handle_type, e.handle, b); return true;
    case EventKind::gc_finalize_start:
    case EventKind::gc_finalize_end:
    case EventKind::heap_start:
    case EventKind::heap_end: rt::write_bare(log, l.event_byte, e.time); return true;
    case EventKind::gc_finalize_object_start:
    case EventKind::gc_finalize_object_end: rt::write_with_object(log, l.event_byte, e.time, e.obj); return true;
    case EventKind::sync_point: rt::write_sync_point(log, e.time, e.code); return true;
    case EventKind::heap_root_register:
      rt::write_root_register(log, e.time, e.ptr, e.size, e.code, e.ptr2, e.name.data(), e.name.size());
      return true;
    case EventKind::heap_root_unregister: rt::write_root_unregister(log, e.time, e.ptr); return true;
    case EventKind::heap_root: {
      std::vector<uint64_t> addresses, objects;
      for (const RootRef& r : e.roots) {
        addresses.push_back(r.address);
        objects.push_back(r.obj);
      }
      rt::write_heap_roots(log, e.time, addresses.data(), objects.data(), static_cast<uint32_t>(e.roots.size()));
      return true;
    }
    case EventKind::heap_object: {
      std::vector<uint64_t> offsets, refs;
      for (const HeapRef& r : e.refs) {
        offsets.push_back(r.offset);
        refs.push_back(r.obj);
      }
      rt::write_heap_object(log, e.time, e.obj, e.ptr, e.size, e.generation, offsets.data(), refs.data(),
                            static_cast<uint32_t>(e.refs.size()));
      return true;
    }
    case EventKind::vtable_load: rt::write_vtable_load(log, e.time, e.ptr, e.ptr2, e.ptr3); return true;
    case EventKind::class_load:
      rt::write_class_load(log, e.time, e.ptr, e.ptr2, e.name.data(), e.name.size());
      return true;
    default: return false;
  }
}

}  // namespace

TEST_CASE("event layout table: every writer of rt/events.h writes exactly the table's fields", "[codec][layout][writer]") {
  // The kinds the agent writes into its threads' buffers (the others go through the MetaLog or are
  // the reader's only).
  const std::set<EventKind> writer_kinds = {
      EventKind::method_enter, EventKind::method_leave, EventKind::method_exc_leave, EventKind::alloc,
      EventKind::exception_throw, EventKind::exception_clause, EventKind::monitor, EventKind::gc_event,
      EventKind::gc_resize, EventKind::gc_move, EventKind::gc_handle_created, EventKind::gc_handle_destroyed,
      EventKind::gc_finalize_start, EventKind::gc_finalize_end, EventKind::heap_start, EventKind::heap_end,
      EventKind::gc_finalize_object_start, EventKind::gc_finalize_object_end, EventKind::sync_point,
      EventKind::heap_root_register, EventKind::heap_root_unregister, EventKind::heap_root, EventKind::heap_object,
      EventKind::vtable_load, EventKind::class_load};
  std::set<EventKind> written;
  for (const layout::EventLayout& l : layout::kLayouts) {
    for (int bt = 0; bt <= (l.bt_event_byte != layout::kNoVariant ? 1 : 0); ++bt) {
      for (size_t seed = 0; seed < 8; ++seed) {
        const Event e = make_event(l, bt != 0, seed);
        INFO(event_kind_name(l.kind) << (bt ? " (backtrace)" : "") << " seed " << seed);
        Log log;
        // The first method of a new thread's buffer is a delta from method_base 0; the encoder would
        // start its chain at the first method: an enter of method 0 first makes both agree.
        rt::write_method(log.log(), TYPE_ENTER, kT0, 0);
        const size_t before = log.bytes(0).second.size();
        if (!write(log.log(), e)) break;
        written.insert(l.kind);
        auto [h, data] = log.bytes(before);
        // The event's own bytes, as the table says; then decoded as the table says.
        BufferHeader at_event = h;
        at_event.time_base = kT0;  // the enter before it has time kT0
        at_event.method_base = 0;  // and method 0
        at_event.length = static_cast<uint32_t>(data.size());
        const std::vector<uint8_t> want = TableEncoder(at_event).encode(e);
        INFO("writer:    " << hex(data));
        INFO("the table: " << hex(want));
        CHECK(data == want);
        CHECK(decode_one(at_event, data.data()) == e);
      }
    }
  }
  CHECK(written == writer_kinds);
}
