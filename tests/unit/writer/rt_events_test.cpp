// The agent's hot-path encoders (rt/events.h) against the general encoder: for every write_*, the
// bytes a ThreadLog's buffer holds equal, byte for byte, what BufferEncoder writes for the same Event,
// with boundary values (0, 1, one- and two-byte LEB128 edges, INT64_MIN/MAX, UINT64_MAX), deltas going
// backwards (time, pointers, objects, methods), empty and maximal backtraces and lists, empty and long
// strings. Each write also counts one event of its kind (ThreadLog::commit).
#include "mlpd_catch.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/events.h"
#include "mlpd/rt/thread_log.h"

using namespace mlpd;
using namespace mlpd::format;

namespace {

constexpr uint64_t kTid = 0x7f00deadbeef;
constexpr uint64_t kT0 = 1'700'000'000'000'000'000;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Values for pointers, objects, methods, sizes, handles and indices: LEB128 length edges, signed
// extremes, typical addresses on both sides of each other (negative deltas), unaligned objects.
const std::vector<uint64_t> kValues = {
    0, 1, 7, 8, 63, 64, 127, 128, 8191, 8192,
    0x7fffffffffffffff, 0x8000000000000000, kMax, kMax - 7,
    0x7f1234567890, 0x7f1234567888, 0x7f1234560000, 0x55d0c0de0001, 0x1000,
};
// Times: equal to the previous (delta 0), one-byte and two-byte deltas, backwards (the delta wraps to
// a 10-byte LEB128), the extremes.
const std::vector<uint64_t> kTimes = {kT0, kT0, kT0 + 1, kT0 + 127, kT0 + 128, kT0 + 1'000'000, kT0 - 1,
                                      0, kMax, 1, kT0 + (uint64_t{1} << 40)};
const std::vector<uint8_t> kBytes = {0, 1, 2, 3, 4, 0x7f, 0x80, 0xff};

uint64_t value(size_t i) { return kValues[i % kValues.size()]; }
uint64_t at(size_t i) { return kTimes[i % kTimes.size()]; }
uint8_t byte_of(size_t i) { return kBytes[i % kBytes.size()]; }

std::string hex_bytes(const std::vector<uint8_t>& v, size_t from) {
  std::string s;
  char b[4];
  for (size_t i = from; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, "%02x ", v[i]);
    s += b;
  }
  return s;
}

// One ThreadLog (with its own pool) and one BufferEncoder fed the same events.
class Twin {
 public:
  Twin() : pool_(1u << 20, 2), enc_(kTid, kT0) {
    shared_.pool = &pool_;
    shared_.queue = &queue_;
    log_ = std::make_unique<rt::ThreadLog>(shared_, kTid, kT0);
    // A ThreadLog's method chain starts at its buffer's method_base (0 for a new thread), the
    // encoder's at the first method written: an enter of method 0 makes both chains start at 0.
    rt::write_method(*log_, TYPE_ENTER, kT0, 0);
    Event e;
    e.kind = EventKind::method_enter;
    e.time = kT0;
    e.method = 0;
    expect(e);
  }
  ~Twin() { log_->retire(); }

  rt::ThreadLog& log() { return *log_; }

  // An event the ThreadLog holds unpublished (calls-min): the encoder writes it too, checked with
  // the next expect().
  void add_only(const Event& e) {
    enc_.add(e);
    ++counts_[static_cast<size_t>(e.kind)];
  }

  // After the ThreadLog has written one event: the encoder writes `e`, and the whole buffer must be
  // equal (so the delta chains carried from earlier events are checked too), with the same bases in
  // the buffer header, and the event counted under its kind.
  void expect(const Event& e) {
    enc_.add(e);
    ++counts_[static_cast<size_t>(e.kind)];
    const rt::LogBuffer* b = log_->current();
    REQUIRE(b != nullptr);
    const std::vector<uint8_t> got(b->data, b->data + b->committed.load(std::memory_order_relaxed));
    std::vector<uint8_t> want;
    enc_.finish_into(want);
    want.erase(want.begin(), want.begin() + kBufferHeaderSize);
    INFO("event " << events_ << " (" << event_kind_name(e.kind) << ")");
    INFO("ThreadLog:     " << hex_bytes(got, last_size_));
    INFO("BufferEncoder: " << hex_bytes(want, last_size_));
    REQUIRE(got == want);
    const BufferHeader h = enc_.header();
    CHECK(b->time_base == h.time_base);
    CHECK(b->method_base == h.method_base);
    CHECK(b->ptr_base.load(std::memory_order_relaxed) == h.ptr_base);
    CHECK(b->obj_base.load(std::memory_order_relaxed) == h.obj_base);
    CHECK(log_->counts().get(e.kind) == counts_[static_cast<size_t>(e.kind)]);
    CHECK(log_->dropped_events() == 0);
    last_size_ = got.size();
    ++events_;
  }

 private:
  rt::BufferPool pool_;
  rt::FlushQueue queue_;
  rt::WriterShared shared_;
  std::unique_ptr<rt::ThreadLog> log_;
  BufferEncoder enc_;
  uint64_t counts_[kEventKindCount] = {};
  size_t last_size_ = 0;
  size_t events_ = 0;
};

Event make(EventKind kind, uint64_t time) {
  Event e;
  e.kind = kind;
  e.time = time;
  return e;
}

// Backtrace variants by i: none, empty, one frame, the maximum (kMaxBacktrace frames).
const rt::Backtrace* backtrace_for(size_t i, rt::Backtrace& bt, Event& e) {
  const size_t variant = i % 4;
  if (variant == 0) return nullptr;
  bt.count = variant == 1 ? 0 : variant == 2 ? 1 : static_cast<uint32_t>(rt::kMaxBacktrace);
  e.has_backtrace = true;
  for (uint32_t f = 0; f < bt.count; ++f) {
    bt.frames[f] = value(i + 3 * f);
    e.backtrace.push_back(bt.frames[f]);
  }
  return &bt;
}

// One writer per write_* of rt/events.h: writes event number i through the ThreadLog and checks it.
using Writer = std::function<void(Twin&, size_t)>;

struct NamedWriter {
  const char* name;
  Writer write;
};

// The three TYPE_METHOD events and their kinds, cycled by the method writers below.
constexpr uint8_t kMethodExt[] = {TYPE_ENTER, TYPE_LEAVE, TYPE_EXC_LEAVE};
constexpr EventKind kMethodKind[] = {EventKind::method_enter, EventKind::method_leave, EventKind::method_exc_leave};

const std::vector<NamedWriter>& writers() {
  static const std::vector<NamedWriter> all = {
      {"write_method",
       [](Twin& t, size_t i) {
         Event e = make(kMethodKind[i % 3], at(i));
         e.method = value(i * 5 + 1);
         rt::write_method(t.log(), kMethodExt[i % 3], e.time, e.method);
         t.expect(e);
       }},
      {"write_method_at",
       [](Twin& t, size_t i) {
         // As the calls hot path writes: at cursor() when has_room() says so (no call), else
         // where reserve() gives room (a new buffer).
         Event e = make(kMethodKind[i % 3], at(i));
         e.method = value(i * 11 + 2);
         rt::ThreadLog& log = t.log();
         uint8_t* p = log.has_room(rt::kMethodEventBytes) ? log.cursor() : log.reserve(rt::kMethodEventBytes);
         REQUIRE(p != nullptr);
         rt::write_method_at(log, p, kMethodExt[i % 3], e.time, e.method);
         t.expect(e);
       }},
      {"write_enter_held",
       [](Twin& t, size_t i) {
         // A held enter, a short call inside it taken back (buffer end, chains and counts as before
         // it), then the held enter's own leave after too long: not elided, and it publishes both.
         Event e = make(EventKind::method_enter, at(i));
         e.method = value(i * 5 + 1);
         const uint64_t before = t.log().elided_calls();
         rt::write_enter_held(t.log(), e.time, e.method);
         rt::write_enter_held(t.log(), e.time + 1, value(i * 7 + 3));
         REQUIRE(t.log().elide_held(e.time + 2, 10));
         CHECK(t.log().elided_calls() == before + 1);
         REQUIRE_FALSE(t.log().elide_held(e.time + 100, 10));
         t.add_only(e);
         Event l = make(EventKind::method_leave, e.time + 100);
         l.method = e.method;
         rt::write_method(t.log(), TYPE_LEAVE, l.time, l.method);
         t.expect(l);
       }},
      {"write_alloc",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::alloc, at(i));
         e.ptr = value(i);
         e.obj = value(i * 3 + 2);
         e.size = value(i * 7 + 5);
         rt::Backtrace bt;
         const rt::Backtrace* p = backtrace_for(i, bt, e);
         rt::write_alloc(t.log(), e.time, e.ptr, e.obj, e.size, p);
         t.expect(e);
       }},
      {"write_throw",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::exception_throw, at(i));
         e.obj = value(i * 2 + 1);
         rt::Backtrace bt;
         const rt::Backtrace* p = backtrace_for(i, bt, e);
         rt::write_throw(t.log(), e.time, e.obj, p);
         t.expect(e);
       }},
      {"write_clause",
       [](Twin& t, size_t i) {
         static constexpr uint8_t kClause[] = {CLAUSE_CATCH, CLAUSE_FILTER, CLAUSE_FINALLY, CLAUSE_FAULT};
         Event e = make(EventKind::exception_clause, at(i));
         e.code = kClause[i % 4];
         e.index = value(i * 3);
         e.method = value(i * 5 + 2);
         e.obj = value(i + 4);
         rt::write_clause(t.log(), e.time, e.code, e.index, e.method, e.obj);
         t.expect(e);
       }},
      {"write_monitor",
       [](Twin& t, size_t i) {
         static constexpr uint8_t kEvent[] = {MONITOR_CONTENTION, MONITOR_DONE, MONITOR_FAIL};
         Event e = make(EventKind::monitor, at(i));
         e.code = kEvent[i % 3];
         e.obj = value(i * 3 + 1);
         rt::Backtrace bt;
         const rt::Backtrace* p = backtrace_for(i + 1, bt, e);
         rt::write_monitor(t.log(), e.time, e.code, e.obj, p);
         t.expect(e);
       }},
      {"write_gc_event",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::gc_event, at(i));
         e.code = byte_of(i);
         e.generation = byte_of(i * 3 + 1);
         rt::write_gc_event(t.log(), e.time, e.code, e.generation);
         t.expect(e);
       }},
      {"write_gc_resize",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::gc_resize, at(i));
         e.size = value(i * 2);
         rt::write_gc_resize(t.log(), e.time, e.size);
         t.expect(e);
       }},
      {"write_gc_move",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::gc_move, at(i));
         static constexpr size_t kCounts[] = {0, 1, 2, 64};
         for (size_t k = 0; k < kCounts[i % 4]; ++k) e.objects.push_back(value(i + k));
         rt::write_gc_move(t.log(), e.time, e.objects.data(), static_cast<uint32_t>(e.objects.size()));
         t.expect(e);
       }},
      {"write_handle_created",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::gc_handle_created, at(i));
         e.handle_type = i % 5;  // includes a type Mono does not have: the encoders do not judge
         e.handle = value(i * 3 + 2);
         e.obj = value(i * 5);
         rt::Backtrace bt;
         const rt::Backtrace* p = backtrace_for(i, bt, e);
         rt::write_handle_created(t.log(), e.time, e.handle_type, e.handle, e.obj, p);
         t.expect(e);
       }},
      {"write_handle_destroyed",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::gc_handle_destroyed, at(i));
         e.handle_type = value(i);
         e.handle = value(i * 3 + 2);
         rt::Backtrace bt;
         const rt::Backtrace* p = backtrace_for(i + 2, bt, e);
         rt::write_handle_destroyed(t.log(), e.time, e.handle_type, e.handle, p);
         t.expect(e);
       }},
      {"write_bare",
       [](Twin& t, size_t i) {
         static constexpr uint8_t kByte[] = {TYPE_GC | TYPE_GC_FINALIZE_START, TYPE_GC | TYPE_GC_FINALIZE_END,
                                             TYPE_HEAP | TYPE_HEAP_START, TYPE_HEAP | TYPE_HEAP_END};
         static constexpr EventKind kKind[] = {EventKind::gc_finalize_start, EventKind::gc_finalize_end,
                                               EventKind::heap_start, EventKind::heap_end};
         Event e = make(kKind[i % 4], at(i));
         rt::write_bare(t.log(), kByte[i % 4], e.time);
         t.expect(e);
       }},
      {"write_with_object",
       [](Twin& t, size_t i) {
         const bool start = i % 2 == 0;
         Event e = make(start ? EventKind::gc_finalize_object_start : EventKind::gc_finalize_object_end, at(i));
         e.obj = value(i * 3);
         rt::write_with_object(
             t.log(), TYPE_GC | (start ? TYPE_GC_FINALIZE_OBJECT_START : TYPE_GC_FINALIZE_OBJECT_END), e.time, e.obj);
         t.expect(e);
       }},
      {"write_sync_point",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::sync_point, at(i));
         e.code = byte_of(i);
         rt::write_sync_point(t.log(), e.time, e.code);
         t.expect(e);
       }},
      {"write_root_register",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::heap_root_register, at(i));
         e.ptr = value(i * 3);
         e.size = value(i * 5 + 1);
         e.code = byte_of(i);
         e.ptr2 = value(i + 7);
         static constexpr size_t kLen[] = {0, 1, 17, 1000};
         e.name = std::string(kLen[i % 4], static_cast<char>('a' + i % 26));
         rt::write_root_register(t.log(), e.time, e.ptr, e.size, e.code, e.ptr2, e.name.data(), e.name.size());
         t.expect(e);
       }},
      {"write_root_unregister",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::heap_root_unregister, at(i));
         e.ptr = value(i * 2 + 1);
         rt::write_root_unregister(t.log(), e.time, e.ptr);
         t.expect(e);
       }},
      {"write_heap_roots",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::heap_root, at(i));
         static constexpr size_t kCounts[] = {0, 1, 2, 50};
         std::vector<uint64_t> addresses, objects;
         for (size_t k = 0; k < kCounts[i % 4]; ++k) {
           e.roots.push_back({value(i + 2 * k), value(i * 3 + k)});
           addresses.push_back(e.roots.back().address);
           objects.push_back(e.roots.back().obj);
         }
         rt::write_heap_roots(t.log(), e.time, addresses.data(), objects.data(),
                              static_cast<uint32_t>(e.roots.size()));
         t.expect(e);
       }},
      {"write_heap_object",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::heap_object, at(i));
         e.obj = value(i * 3);
         e.ptr = value(i * 5 + 1);
         e.size = value(i * 7 + 2);
         e.generation = byte_of(i);
         static constexpr size_t kCounts[] = {0, 1, 3, 128};
         std::vector<uint64_t> offsets, refs;
         uint64_t offset = i % 2 ? 0 : 16;  // a first reference at offset 0: a zero delta
         for (size_t k = 0; k < kCounts[i % 4]; ++k) {
           e.refs.push_back({offset, value(i + k)});
           offsets.push_back(offset);
           refs.push_back(value(i + k));
           offset += k % 3 == 2 ? 200 : 8;  // one- and two-byte offset deltas
         }
         rt::write_heap_object(t.log(), e.time, e.obj, e.ptr, e.size, e.generation, offsets.data(), refs.data(),
                               static_cast<uint32_t>(e.refs.size()));
         t.expect(e);
       }},
      {"write_vtable_load",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::vtable_load, at(i));
         e.ptr = value(i * 3 + 1);
         e.ptr2 = value(i);
         e.ptr3 = value(i * 5 + 2);
         rt::write_vtable_load(t.log(), e.time, e.ptr, e.ptr2, e.ptr3);
         t.expect(e);
       }},
      {"write_class_load",
       [](Twin& t, size_t i) {
         Event e = make(EventKind::class_load, at(i));
         e.ptr = value(i * 3 + 1);
         e.ptr2 = value(i * 2);
         static const std::string kNames[] = {"", "A", "System.Collections.Generic.Dictionary`2<string, int>",
                                              std::string(2000, 'N')};
         e.name = kNames[i % 4];
         rt::write_class_load(t.log(), e.time, e.ptr, e.ptr2, e.name.data(), e.name.size());
         t.expect(e);
       }},
  };
  return all;
}

// Enough events per writer that every value, time and variant meets every other field's values.
constexpr size_t kRounds = 3 * 19;

}  // namespace

TEST_CASE("rt events: every write_* writes BufferEncoder's bytes, boundary values", "[writer][rt_events]") {
  for (const NamedWriter& w : writers()) {
    INFO(w.name);
    Twin twin;
    for (size_t i = 0; i < kRounds; ++i) w.write(twin, i);
  }
}

TEST_CASE("rt events: all write_* interleaved in one buffer share the delta chains", "[writer][rt_events]") {
  // The time and method chains and the pointer and object bases run across event kinds: a clause's
  // method continues from an enter's, a backtrace's frames from a clause's, etc.
  Twin twin;
  for (size_t i = 0; i < kRounds; ++i) {
    for (const NamedWriter& w : writers()) {
      INFO(w.name << " #" << i);
      w.write(twin, i);
    }
  }
}

TEST_CASE("rt events: the writer list covers every write_* of rt/events.h", "[writer][rt_events]") {
  // Every `write_NAME(ThreadLog& log` in the header must have a writer above.
  std::ifstream in(std::string(MLPD_SOURCE_DIR) + "/writer/include/mlpd/rt/events.h");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex declaration(R"(\b(write_[a-z_]+)\(ThreadLog& log)");
  std::set<std::string> declared;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), declaration); it != std::sregex_iterator(); ++it) {
    declared.insert((*it)[1].str());
  }
  std::set<std::string> tested;
  for (const NamedWriter& w : writers()) tested.insert(w.name);
  CHECK(declared.size() >= 19);
  CHECK(declared == tested);
}
