// Encoder and decoder agree: every event kind, random and boundary values, one and many events per
// buffer, many interleaved threads, plain and gzip files, and the file header. A few kinds are also
// checked against bytes written out by hand from the format description, so that a mistake shared by
// both sides still fails.
#include "mlpd_catch.h"

#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"

namespace Catch {
template <>
struct StringMaker<mlpd::Event> {
  static std::string convert(const mlpd::Event& e) { return mlpd::test::describe(e); }
};
}  // namespace Catch

using namespace mlpd;
using namespace mlpd::test;
using Bytes = std::vector<uint8_t>;

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kInt64Min = uint64_t{1} << 63;
constexpr uint64_t kInt64Max = kInt64Min - 1;

// Event data (without the 48-byte header) that BufferEncoder produces for `events`.
Bytes encode_data(const std::vector<Event>& events, uint64_t time_base = 0, BufferHeader* header = nullptr) {
  BufferEncoder enc(0x77, time_base);
  for (const Event& e : events) enc.add(e);
  Bytes out;
  enc.finish_into(out);
  if (header) *header = enc.header();
  return Bytes(out.begin() + format::kBufferHeaderSize, out.end());
}

// Decodes one buffer's data with BufferDecoder alone (no encoder involved).
std::vector<Event> decode_data(const Bytes& data, const BufferHeader& header_in, std::string* problem = nullptr) {
  BufferHeader h = header_in;
  h.length = static_cast<uint32_t>(data.size());
  BufferDecoder dec(h, data.data(), 0);
  std::vector<Event> out;
  Event e;
  std::string msg;
  uint64_t offset = 0;
  while (dec.next(e, msg, offset)) out.push_back(e);
  if (problem) *problem = msg;
  return out;
}

// Encodes `events` into one buffer of one file, decodes the file, and checks the result is the same
// list with no problem.
void require_roundtrip(const std::vector<Event>& events, uint64_t thread_id = 0x1234, uint64_t time_base = 1000) {
  const Bytes file = build_file({{thread_id, time_base, events}});
  const DecodedFile d = decode_bytes(file);
  INFO(d.problems_text());
  REQUIRE(d.problems.empty());
  REQUIRE(d.buffers.size() == 1);
  REQUIRE(d.buffers[0].header.thread_id == thread_id);
  REQUIRE(d.buffers[0].header.time_base == time_base);
  const std::vector<Event> got = d.event_list();
  REQUIRE(got.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    INFO("event " << i);
    REQUIRE(got[i] == events[i]);
  }
}

// The spec's event byte for each kind (FORMAT-NOTES section 9 / proflog.h), and for metadata kinds
// the metadata type byte that follows the time delta. Written out by hand on purpose.
struct KindBytes {
  EventKind kind;
  uint8_t event_byte;
  uint8_t bt_event_byte;  // the _BT variant, or 0 when the kind has none
  int mtype;              // metadata type byte, -1 when not a metadata event
};
const KindBytes kKindBytes[] = {
    {EventKind::alloc, 0x00, 0x10, -1},
    {EventKind::gc_event, 0x11, 0, -1},
    {EventKind::gc_resize, 0x21, 0, -1},
    {EventKind::gc_move, 0x31, 0, -1},
    {EventKind::gc_handle_created, 0x41, 0x61, -1},
    {EventKind::gc_handle_destroyed, 0x51, 0x71, -1},
    {EventKind::gc_finalize_start, 0x81, 0, -1},
    {EventKind::gc_finalize_end, 0x91, 0, -1},
    {EventKind::gc_finalize_object_start, 0xA1, 0, -1},
    {EventKind::gc_finalize_object_end, 0xB1, 0, -1},
    {EventKind::class_load, 0x22, 0, 1},
    {EventKind::image_load, 0x22, 0, 2},
    {EventKind::image_unload, 0x42, 0, 2},
    {EventKind::assembly_load, 0x22, 0, 3},
    {EventKind::assembly_unload, 0x42, 0, 3},
    {EventKind::domain_load, 0x22, 0, 4},
    {EventKind::domain_unload, 0x42, 0, 4},
    {EventKind::domain_name, 0x02, 0, 4},
    {EventKind::context_load, 0x22, 0, 6},
    {EventKind::context_unload, 0x42, 0, 6},
    {EventKind::thread_start, 0x22, 0, 5},
    {EventKind::thread_end, 0x42, 0, 5},
    {EventKind::thread_name, 0x02, 0, 5},
    {EventKind::vtable_load, 0x22, 0, 7},
    {EventKind::method_enter, 0x23, 0, -1},
    {EventKind::method_leave, 0x13, 0, -1},
    {EventKind::method_exc_leave, 0x33, 0, -1},
    {EventKind::method_jit, 0x43, 0, -1},
    {EventKind::exception_throw, 0x04, 0x84, -1},
    {EventKind::exception_clause, 0x14, 0, -1},
    {EventKind::monitor, 0x05, 0x85, -1},
    {EventKind::heap_start, 0x06, 0, -1},
    {EventKind::heap_end, 0x16, 0, -1},
    {EventKind::heap_object, 0x26, 0, -1},
    {EventKind::heap_root, 0x36, 0, -1},
    {EventKind::heap_root_register, 0x46, 0, -1},
    {EventKind::heap_root_unregister, 0x56, 0, -1},
    {EventKind::sample_hit, 0x07, 0, -1},
    {EventKind::sample_usym, 0x17, 0, -1},
    {EventKind::counter_descriptors, 0x37, 0, -1},
    {EventKind::counter_samples, 0x47, 0, -1},
    {EventKind::jit_helper, 0x18, 0, -1},
    {EventKind::sync_point, 0x0A, 0, -1},
    {EventKind::aot_id, 0x1A, 0, -1},
};

const KindBytes& kind_bytes(EventKind k) {
  for (const KindBytes& kb : kKindBytes)
    if (kb.kind == k) return kb;
  FAIL("no expected event byte for kind " << event_kind_name(k));
  return kKindBytes[0];
}

Event ev(EventKind k, uint64_t time) {
  Event e;
  e.reset(k);
  e.time = time;
  return e;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Coverage of the kinds

TEST_CASE("the generator and the expected-byte table cover every event kind", "[roundtrip]") {
  const std::vector<EventKind> kinds = all_event_kinds();
  REQUIRE(kinds.size() == kEventKindCount);
  REQUIRE(std::size(kKindBytes) == kEventKindCount);
  std::map<EventKind, int> seen;
  for (const KindBytes& kb : kKindBytes) ++seen[kb.kind];
  for (EventKind k : kinds) {
    INFO(event_kind_name(k));
    CHECK(seen[k] == 1);
    CHECK(kind_has_backtrace_variant(k) == (kind_bytes(k).bt_event_byte != 0));
  }
  EventGen gen(7);
  for (EventKind k : kinds) {
    INFO(event_kind_name(k));
    for (int i = 0; i < 20; ++i) {
      const Event e = gen.make(k);
      REQUIRE(e.kind == k);
      if (!kind_has_backtrace_variant(k)) REQUIRE(!e.has_backtrace);
      if (!e.has_backtrace) REQUIRE(e.backtrace.empty());
    }
  }
}

TEST_CASE("every kind is written with the event byte of the spec", "[roundtrip][bytes]") {
  EventGen gen(11);
  for (EventKind k : all_event_kinds()) {
    const KindBytes& kb = kind_bytes(k);
    for (int i = 0; i < 50; ++i) {
      Event e = gen.make(k);
      INFO(describe(e));
      BufferHeader h;
      const Bytes data = encode_data({e}, 0, &h);
      REQUIRE(!data.empty());
      CHECK(data[0] == (e.has_backtrace ? kb.bt_event_byte : kb.event_byte));
      // The time delta follows the event byte directly, and (from time_base 0) equals the event time.
      const uint8_t* p = data.data() + 1;
      uint64_t delta = 0;
      REQUIRE(get_uleb(p, data.data() + data.size(), delta) == LebStatus::ok);
      CHECK(delta == e.time);
      if (kb.mtype >= 0) {
        REQUIRE(p < data.data() + data.size());
        CHECK(*p == kb.mtype);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Random round trips

TEST_CASE("every kind round-trips, one event per buffer", "[roundtrip]") {
  EventGen gen(20240601);
  for (EventKind k : all_event_kinds()) {
    DYNAMIC_SECTION(event_kind_name(k)) {
      std::vector<ThreadBuffer> buffers;
      for (int i = 0; i < 200; ++i) {
        buffers.push_back({gen.u64(), gen.u64(), {gen.make(k)}});
      }
      const DecodedFile d = decode_bytes(build_file(buffers));
      INFO(d.problems_text());
      REQUIRE(d.problems.empty());
      REQUIRE(d.buffers.size() == buffers.size());
      REQUIRE(d.events.size() == buffers.size());
      for (size_t i = 0; i < buffers.size(); ++i) {
        INFO("buffer " << i);
        CHECK(d.buffers[i].header.thread_id == buffers[i].thread_id);
        CHECK(d.buffers[i].header.time_base == buffers[i].time_base);
        REQUIRE(d.events[i].buffer_index == i);
        REQUIRE(d.events[i].event == buffers[i].events[0]);
      }
    }
  }
}

TEST_CASE("every kind round-trips, many events per buffer", "[roundtrip]") {
  EventGen gen(99);
  for (EventKind k : all_event_kinds()) {
    DYNAMIC_SECTION(event_kind_name(k)) {
      for (size_t n : {2u, 17u, 300u}) require_roundtrip(gen.events(k, n), gen.u64(), gen.u64());
    }
  }
}

TEST_CASE("mixed kinds round-trip in long buffers", "[roundtrip]") {
  EventGen gen(4242);
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    require_roundtrip(gen.events(500), gen.u64(), gen.u64());
  }
}

TEST_CASE("BufferDecoder alone decodes what BufferEncoder wrote, ending exactly at the buffer end",
          "[roundtrip]") {
  EventGen gen(5);
  const std::vector<Event> events = gen.events(2000);
  BufferHeader h;
  const Bytes data = encode_data(events, 123, &h);
  std::string problem;
  const std::vector<Event> got = decode_data(data, h, &problem);
  CHECK(problem.empty());
  REQUIRE(got == events);
}

// ------------------------------------------------------------------------------------------------
// Boundary cases

TEST_CASE("NULL first object, method and pointer decode as NULL", "[roundtrip][boundary]") {
  SECTION("object: NULL exception of a finally clause before any other object") {
    Event clause = ev(EventKind::exception_clause, 10);
    clause.code = format::CLAUSE_FINALLY;
    clause.index = 1;
    clause.method = 0x560000001000;
    clause.obj = 0;
    Event thr = ev(EventKind::exception_throw, 20);
    thr.obj = 0x7fec9f800928;
    Event thr2 = ev(EventKind::exception_throw, 30);
    thr2.obj = 0;
    BufferHeader h;
    encode_data({clause, thr, thr2}, 0, &h);
    CHECK(h.obj_base == 0);  // the base comes from the NULL, not from the first non-NULL object
    require_roundtrip({clause, thr, thr2});
  }
  SECTION("object: NULL in a gc_move and in heap references") {
    Event mv = ev(EventKind::gc_move, 1);
    mv.objects = {0, 0x7fec9f800928, 0x7fec9f800930, 0};
    Event ho = ev(EventKind::heap_object, 2);
    ho.obj = 0x7fec9f800ff8;
    ho.refs = {{8, 0}, {16, 0x7fec9f800928}, {16, 0}};
    require_roundtrip({mv, ho});
  }
  SECTION("method: NULL first method, then real ones, then NULL again") {
    Event a = ev(EventKind::method_enter, 5);
    a.method = 0;
    Event b = ev(EventKind::method_enter, 6);
    b.method = 0x560000001000;
    Event c = ev(EventKind::method_leave, 7);
    c.method = 0;
    BufferHeader h;
    encode_data({a, b, c}, 0, &h);
    CHECK(h.method_base == 0);
    require_roundtrip({a, b, c});
  }
  SECTION("method: NULL first frame of a backtrace") {
    Event a = ev(EventKind::alloc, 5);
    a.ptr = 0x1000;
    a.obj = 0x2000;
    a.size = 24;
    a.has_backtrace = true;
    a.backtrace = {0, 0x560000001000, 0};
    require_roundtrip({a});
  }
  SECTION("pointer: NULL first pointer, then real ones") {
    Event a = ev(EventKind::alloc, 5);
    a.ptr = 0;
    a.obj = 0x2000;
    Event b = ev(EventKind::class_load, 6);
    b.ptr = 0x7f0000001000;
    b.ptr2 = 0x7f0000002000;
    b.name = "Foo";
    Event c = ev(EventKind::vtable_load, 7);
    c.ptr = 0x7f0000003000;
    c.ptr2 = 0;
    c.ptr3 = 0x7f0000001000;
    BufferHeader h;
    encode_data({a, b, c}, 0, &h);
    CHECK(h.ptr_base == 0);
    require_roundtrip({a, b, c});
  }
  SECTION("all bases NULL, all values NULL") {
    EventGen gen(1);
    std::vector<Event> events;
    for (EventKind k : all_event_kinds()) {
      Event e = gen.make(k);
      e.ptr = e.ptr2 = e.ptr3 = e.obj = e.method = 0;
      for (auto& m : e.backtrace) m = 0;
      for (auto& o : e.objects) o = 0;
      for (auto& f : e.frames) f = 0;
      for (auto& ip : e.ips) ip = 0;
      for (auto& r : e.refs) r.obj = 0;
      for (auto& r : e.roots) r = {0, 0};
      events.push_back(e);
    }
    require_roundtrip(events);
  }
}

TEST_CASE("extreme pointer, object, method and size values", "[roundtrip][boundary]") {
  const uint64_t values[] = {0, 1, 8, kMax, kMax - 7, kInt64Min, kInt64Max, kInt64Min + 8, 0x7f, 0x80};
  std::vector<Event> events;
  uint64_t t = 0;
  for (uint64_t a : values) {
    for (uint64_t b : values) {
      Event alloc = ev(EventKind::alloc, t++);
      alloc.ptr = a;
      alloc.obj = b & ~uint64_t{7};
      alloc.size = b;
      alloc.has_backtrace = true;
      alloc.backtrace = {a, b, a};
      events.push_back(alloc);
      Event vt = ev(EventKind::vtable_load, t++);
      vt.ptr = a;
      vt.ptr2 = b;
      vt.ptr3 = a ^ b;
      events.push_back(vt);
      Event enter = ev(EventKind::method_enter, t++);
      enter.method = b;
      events.push_back(enter);
      Event ho = ev(EventKind::heap_object, t++);
      ho.obj = a & ~uint64_t{7};
      ho.ptr = b;
      ho.size = a;
      ho.generation = 255;
      ho.refs = {{0, b & ~uint64_t{7}}, {kInt64Max, a & ~uint64_t{7}}, {kMax, 0}};
      events.push_back(ho);
      Event cv = ev(EventKind::counter_samples, t++);
      cv.counter_values = {{kMax, format::COUNTER_INT, a, false, {}},
                           {1, format::COUNTER_ULONG, b, false, {}},
                           {2, format::COUNTER_DOUBLE, a ^ b, false, {}}};
      events.push_back(cv);
    }
  }
  // Every value as the first of its kind in the buffer, too.
  for (uint64_t a : values) {
    Event e = ev(EventKind::heap_root, 0);
    e.roots = {{a, a & ~uint64_t{7}}, {~a, ~a & ~uint64_t{7}}};
    require_roundtrip({e});
    Event m = ev(EventKind::method_jit, a);
    m.method = a;
    m.ptr = ~a;
    m.size = a;
    m.name = "M";
    require_roundtrip({m}, a, ~a);
  }
  require_roundtrip(events);
}

TEST_CASE("backtraces of 0 to 32 frames and longer", "[roundtrip][boundary]") {
  EventGen gen(3);
  std::vector<Event> events;
  for (size_t n : {0u, 1u, 2u, 31u, 32u, 33u, 64u, 1000u}) {
    for (EventKind k : all_event_kinds()) {
      if (!kind_has_backtrace_variant(k)) continue;
      Event e = gen.make(k);
      e.has_backtrace = true;
      e.backtrace.resize(n);
      for (uint64_t& m : e.backtrace) m = gen.method();
      events.push_back(e);
    }
    Event hit = gen.make(EventKind::sample_hit);
    hit.frames.resize(n);
    for (uint64_t& m : hit.frames) m = gen.method();
    events.push_back(hit);
  }
  require_roundtrip(events);

  SECTION("32 frames: count byte 0x20 then 32 method deltas") {
    Event e = ev(EventKind::exception_throw, 0);
    e.obj = 0;
    e.has_backtrace = true;
    for (uint64_t i = 0; i < 32; ++i) e.backtrace.push_back(0x1000 + 8 * i);
    const Bytes data = encode_data({e});
    Bytes expected = {0x84, 0x00, 0x00, 0x20, 0x00};  // event, time, obj, count, first frame = base
    for (int i = 1; i < 32; ++i) expected.push_back(0x08);
    CHECK(data == expected);
  }
}

TEST_CASE("empty and long strings in every string field", "[roundtrip][boundary]") {
  const std::string utf8 = "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80 System.String::Concat(string,string)";
  std::string long_text;
  while (long_text.size() < 200000) long_text += utf8;
  for (const std::string& s : {std::string(), std::string("x"), utf8, long_text}) {
    INFO("string of " << s.size() << " bytes");
    std::vector<Event> events;
    uint64_t t = 1;
    for (EventKind k : {EventKind::class_load, EventKind::image_load, EventKind::image_unload,
                        EventKind::assembly_load, EventKind::assembly_unload, EventKind::domain_name,
                        EventKind::thread_name, EventKind::method_jit, EventKind::heap_root_register,
                        EventKind::sample_usym, EventKind::aot_id}) {
      Event e = ev(k, t++);
      e.name = s;
      if (k == EventKind::image_load) e.mvid = s;
      events.push_back(e);
    }
    Event helper = ev(EventKind::jit_helper, t++);
    helper.code = format::CODE_BUFFER_SPECIFIC_TRAMPOLINE;
    helper.name = s;
    events.push_back(helper);
    Event desc = ev(EventKind::counter_descriptors, t++);
    desc.counter_descs = {{format::COUNTER_SECTION_PERFCOUNTERS, s, s, 3, 0, 0, 1},
                          {0x100, "", s, 1, 0, 0, 2}};
    events.push_back(desc);
    Event val = ev(EventKind::counter_samples, t++);
    val.counter_values = {{1, format::COUNTER_STRING, 0, false, s}, {2, format::COUNTER_STRING, 0, true, ""}};
    events.push_back(val);
    require_roundtrip(events);
  }
}

TEST_CASE("times that go backwards, stand still and wrap around", "[roundtrip][boundary]") {
  const uint64_t times[] = {1000, 999, 999, 0, kMax, 0, kInt64Min, kInt64Max, 5, kMax - 1, 1, kInt64Min};
  std::vector<Event> events;
  EventGen gen(8);
  for (uint64_t t : times) {
    Event e = gen.make(static_cast<EventKind>(gen.below(kEventKindCount)));
    e.time = t;
    events.push_back(e);
  }
  for (uint64_t base : {uint64_t{0}, uint64_t{1000}, kMax, kInt64Min}) require_roundtrip(events, 1, base);

  SECTION("a time one before the previous is written as a 10-byte uleb of 2^64-1") {
    Event a = ev(EventKind::sync_point, 999);
    a.code = format::SYNC_POINT_WORLD_STOP;
    const Bytes data = encode_data({a}, 1000);
    const Bytes expected = {0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x01};
    CHECK(data == expected);
    BufferHeader h;
    h.time_base = 1000;
    CHECK(decode_data(expected, h) == std::vector<Event>{a});
  }
}

// ------------------------------------------------------------------------------------------------
// Hand-encoded bytes: encoder output must match, and the decoder must read them back, independently.

namespace {
struct HandCase {
  const char* name;
  std::vector<Event> events;
  uint64_t time_base;
  Bytes data;
  BufferHeader bases;  // expected ptr_base, obj_base, method_base
};

std::vector<HandCase> hand_cases() {
  std::vector<HandCase> cases;
  {
    // Enter at delta 5 with the method being method_base, leave 2 ns later of method+16, then a
    // method 24 bytes lower (sleb -24 = 0x68).
    const uint64_t m = 0x560000001000;
    Event a = ev(EventKind::method_enter, 105);
    a.method = m;
    Event b = ev(EventKind::method_leave, 107);
    b.method = m + 16;
    Event c = ev(EventKind::method_exc_leave, 107);
    c.method = m - 8;
    BufferHeader h;
    h.method_base = static_cast<int64_t>(m);
    cases.push_back({"method enter/leave/exc_leave", {a, b, c}, 100,
                     {0x23, 0x05, 0x00, 0x13, 0x02, 0x10, 0x33, 0x00, 0x68}, h});
  }
  {
    // Alloc with backtrace: time 0x80 (2-byte uleb), vtable = ptr_base, object 0x2008 (>>3 = 0x401
    // = obj_base), size 24, two frames outermost first.
    Event a = ev(EventKind::alloc, 0x80);
    a.ptr = 0x1000;
    a.obj = 0x2008;
    a.size = 24;
    a.has_backtrace = true;
    a.backtrace = {0x5000, 0x5008};
    Event b = ev(EventKind::alloc, 0x81);  // no backtrace, object 8 units higher, vtable 0x40 lower
    b.ptr = 0x0FC0;
    b.obj = 0x2048;
    b.size = 0x3fff;
    BufferHeader h;
    h.ptr_base = 0x1000;
    h.obj_base = 0x401;
    h.method_base = 0x5000;
    cases.push_back({"alloc", {a, b}, 0,
                     {0x10, 0x80, 0x01, 0x00, 0x00, 0x18, 0x02, 0x00, 0x08,  //
                      0x00, 0x01, 0x40, 0x08, 0xFF, 0x7F},
                     h});
  }
  {
    // GC: event (pre stop world, gen 1), resize, move of two objects (one to NULL), handles.
    Event g = ev(EventKind::gc_event, 1);
    g.code = format::GC_EVENT_PRE_STOP_WORLD;
    g.generation = 1;
    Event r = ev(EventKind::gc_resize, 2);
    r.size = 300;
    Event mv = ev(EventKind::gc_move, 3);
    mv.objects = {0x1000, 0x2000, 0x0, 0x1008};
    Event hc = ev(EventKind::gc_handle_created, 4);
    hc.handle_type = 3;
    hc.handle = 0x81;
    hc.obj = 0x1010;
    Event hd = ev(EventKind::gc_handle_destroyed, 5);
    hd.handle_type = 2;
    hd.handle = 7;
    hd.has_backtrace = true;
    hd.backtrace = {0x40};
    BufferHeader h;
    h.obj_base = 0x200;
    h.method_base = 0x40;
    cases.push_back({"gc", {g, r, mv, hc, hd}, 0,
                     {0x11, 0x01, 0x06, 0x01,                                //
                      0x21, 0x01, 0xAC, 0x02,                                //
                      0x31, 0x01, 0x04, 0x00, 0x80, 0x04, 0x80, 0x7C, 0x01,  //
                      0x41, 0x01, 0x03, 0x81, 0x01, 0x02,                    //
                      0x71, 0x01, 0x02, 0x07, 0x01, 0x00},
                     h});
  }
  {
    // Metadata: image load, class load (image pointer), vtable load, thread name, domain unload.
    Event img = ev(EventKind::image_load, 10);
    img.ptr = 0x7000;
    img.name = "a.dll";
    img.mvid = "";
    Event cls = ev(EventKind::class_load, 10);
    cls.ptr = 0x7100;
    cls.ptr2 = 0x7000;
    cls.name = "Foo";
    Event vt = ev(EventKind::vtable_load, 11);
    vt.ptr = 0x6F00;
    vt.ptr2 = 0x7001;
    vt.ptr3 = 0x7100;
    Event tn = ev(EventKind::thread_name, 12);
    tn.ptr = 0x7000;
    tn.name = "Main";
    Event du = ev(EventKind::domain_unload, 12);
    du.ptr = 0x7002;
    BufferHeader h;
    h.ptr_base = 0x7000;
    cases.push_back({"metadata", {img, cls, vt, tn, du}, 0,
                     {0x22, 0x0A, 0x02, 0x00, 'a', '.', 'd', 'l', 'l', 0x00, 0x00,  //
                      0x22, 0x00, 0x01, 0x80, 0x02, 0x00, 'F', 'o', 'o', 0x00,      //
                      0x22, 0x01, 0x07, 0x80, 0x7E, 0x01, 0x80, 0x02,               //
                      0x02, 0x01, 0x05, 0x00, 'M', 'a', 'i', 'n', 0x00,             //
                      0x42, 0x00, 0x04, 0x02},
                     h});
  }
  {
    // JIT: method, code pointer, size, name. Clause (catch #2) with the exception object.
    Event jit = ev(EventKind::method_jit, 3);
    jit.method = 0x100;
    jit.ptr = 0x9000;
    jit.size = 128;
    jit.name = "M";
    Event cl = ev(EventKind::exception_clause, 4);
    cl.code = format::CLAUSE_CATCH;
    cl.index = 2;
    cl.method = 0x100;
    cl.obj = 0x800;
    Event mon = ev(EventKind::monitor, 4);
    mon.code = format::MONITOR_FAIL;
    mon.obj = 0x808;
    BufferHeader h;
    h.method_base = 0x100;
    h.ptr_base = 0x9000;
    h.obj_base = 0x100;
    cases.push_back({"jit, clause, monitor", {jit, cl, mon}, 0,
                     {0x43, 0x03, 0x00, 0x00, 0x80, 0x01, 'M', 0x00,  //
                      0x14, 0x01, 0x00, 0x02, 0x00, 0x00,             //
                      0x05, 0x00, 0x03, 0x01},
                     h});
  }
  {
    // Heap object with two references at offsets 8 and 24 (deltas 8 and 16), a root, a root
    // register (source 3) and unregister.
    Event ho = ev(EventKind::heap_object, 0);
    ho.obj = 0x1000;
    ho.ptr = 0x500;
    ho.size = 32;
    ho.generation = 2;
    ho.refs = {{8, 0x1008}, {24, 0x0FF8}};
    Event root = ev(EventKind::heap_root, 0);
    root.roots = {{0x508, 0x1000}};
    Event reg = ev(EventKind::heap_root_register, 1);
    reg.ptr = 0x500;
    reg.size = 16;
    reg.code = 3;
    reg.ptr2 = 0x4FF;
    reg.name = "r";
    Event unreg = ev(EventKind::heap_root_unregister, 1);
    unreg.ptr = 0x510;
    BufferHeader h;
    h.obj_base = 0x200;
    h.ptr_base = 0x500;
    cases.push_back({"heap", {ho, root, reg, unreg}, 0,
                     {0x26, 0x00, 0x00, 0x00, 0x20, 0x02, 0x02, 0x08, 0x01, 0x10, 0x7F,  //
                      0x36, 0x00, 0x01, 0x08, 0x00,                                      //
                      0x46, 0x01, 0x00, 0x10, 0x03, 0x7F, 'r', 0x00,                     //
                      0x56, 0x00, 0x10},
                     h});
  }
  {
    // Sample hit (thread, one ip, two frames innermost first), usym, jit helpers with and without a
    // name, sync point, AOT id.
    Event hit = ev(EventKind::sample_hit, 7);
    hit.ptr = 0x10;
    hit.ips = {0x20};
    hit.frames = {0x300, 0x308};
    Event usym = ev(EventKind::sample_usym, 7);
    usym.ptr = 0x20;
    usym.size = 0;
    usym.name = "f";
    Event jh5 = ev(EventKind::jit_helper, 8);
    jh5.code = format::CODE_BUFFER_SPECIFIC_TRAMPOLINE;
    jh5.ptr = 0x11;
    jh5.size = 5;
    jh5.name = "t";
    Event jh4 = ev(EventKind::jit_helper, 8);
    jh4.code = format::CODE_BUFFER_GENERICS_TRAMPOLINE;
    jh4.ptr = 0x10;
    jh4.size = 6;
    Event sp = ev(EventKind::sync_point, 9);
    sp.code = format::SYNC_POINT_WORLD_START;
    Event aot = ev(EventKind::aot_id, 9);
    aot.name = "ab";
    BufferHeader h;
    h.ptr_base = 0x10;
    h.method_base = 0x300;
    cases.push_back({"sample, runtime, meta", {hit, usym, jh5, jh4, sp, aot}, 0,
                     {0x07, 0x07, 0x00, 0x01, 0x10, 0x02, 0x00, 0x08,  //
                      0x17, 0x00, 0x10, 0x00, 'f', 0x00,               //
                      0x18, 0x01, 0x05, 0x01, 0x05, 't', 0x00,         //
                      0x18, 0x00, 0x04, 0x00, 0x06,                    //
                      0x0A, 0x01, 0x02,                                //
                      0x1A, 0x00, 'a', 'b', 0x00},
                     h});
  }
  {
    // Counter descriptors: a perf counter (section 0x8000 + category name, type 3, unit 0,
    // variance 0, index 9) and a JIT counter (section 0x100, no section name). Then samples: a
    // double 1.0, a null and a non-null string, an INT -1 and a UINT 300, then the 0 terminator.
    Event desc = ev(EventKind::counter_descriptors, 1);
    desc.counter_descs = {{format::COUNTER_SECTION_PERFCOUNTERS, "Cat", "N", 3, 0, 0, 9},
                          {0x100, "", "J", format::COUNTER_ULONG, format::COUNTER_UNIT_TIME,
                           format::COUNTER_VARIANCE_MONOTONIC, 10}};
    Event val = ev(EventKind::counter_samples, 0);  // one before the descriptors
    val.counter_values = {{3, format::COUNTER_DOUBLE, 0x3FF0000000000000, false, ""},
                          {4, format::COUNTER_STRING, 0, true, ""},
                          {5, format::COUNTER_STRING, 0, false, "ab"},
                          {6, format::COUNTER_INT, kMax, false, ""},
                          {7, format::COUNTER_UINT, 300, false, ""}};
    cases.push_back({"counters", {desc, val}, 0,
                     {0x37, 0x01, 0x02,                                                   //
                      0x80, 0x80, 0x02, 'C', 'a', 't', 0x00, 'N', 0x00, 0x03, 0x00, 0x00, 0x09,  //
                      0x80, 0x02, 'J', 0x00, 0x04, 0x80, 0x80, 0x80, 0x10, 0x80, 0x80, 0x80, 0x80,
                      0x01, 0x0A,  //
                      0x47, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,  //
                      0x03, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F,        //
                      0x04, 0x06, 0x00,                                                  //
                      0x05, 0x06, 0x01, 'a', 'b', 0x00,                                  //
                      0x06, 0x00, 0x7F,                                                  //
                      0x07, 0x01, 0xAC, 0x02,                                            //
                      0x00},
                     {}});
  }
  {
    // No-payload kinds.
    cases.push_back({"no payload",
                     {ev(EventKind::gc_finalize_start, 1), ev(EventKind::gc_finalize_end, 2),
                      ev(EventKind::heap_start, 3), ev(EventKind::heap_end, 3)},
                     0,
                     {0x81, 0x01, 0x91, 0x01, 0x06, 0x01, 0x16, 0x00},
                     {}});
  }
  return cases;
}
}  // namespace

TEST_CASE("hand-encoded bytes: the encoder writes them and the decoder reads them", "[roundtrip][bytes]") {
  for (const HandCase& c : hand_cases()) {
    DYNAMIC_SECTION(c.name) {
      BufferHeader h;
      const Bytes data = encode_data(c.events, c.time_base, &h);
      CHECK(data == c.data);
      CHECK(h.ptr_base == c.bases.ptr_base);
      CHECK(h.obj_base == c.bases.obj_base);
      CHECK(h.method_base == c.bases.method_base);

      BufferHeader in = c.bases;
      in.time_base = c.time_base;
      std::string problem;
      const std::vector<Event> got = decode_data(c.data, in, &problem);
      CHECK(problem.empty());
      REQUIRE(got.size() == c.events.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == c.events[i]);
    }
  }
}

TEST_CASE("buffer and file header bytes follow the layout of the spec", "[roundtrip][bytes]") {
  SECTION("buffer header") {
    BufferEncoder enc(0x1122334455667788, 0x0102030405060708);
    Event e = ev(EventKind::alloc, 0x0102030405060708);
    e.ptr = kMax;       // ptr_base -1
    e.obj = 0x10;       // obj_base 2
    e.has_backtrace = true;
    e.backtrace = {kInt64Min};  // method_base INT64_MIN
    enc.add(e);
    Bytes out;
    enc.finish_into(out);
    const Bytes expected_header = {
        0x01, 0x4C, 0x50, 0x4D,                          // BUF_ID
        0x07, 0x00, 0x00, 0x00,                          // length
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // time_base
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // ptr_base
        0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // obj_base
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // thread id
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,  // method_base
    };
    REQUIRE(out.size() == 48 + 7);
    CHECK(Bytes(out.begin(), out.begin() + 48) == expected_header);
    CHECK(Bytes(out.begin() + 48, out.end()) == Bytes{0x10, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00});

    // append_buffer_header (test support) writes the same layout.
    Bytes again;
    append_buffer_header(again, enc.header());
    CHECK(again == expected_header);
  }
  SECTION("file header") {
    FileHeader h;
    h.startup_ms = 0x1112131415161718;
    h.startup_ns = 0x2122232425262728;
    h.timer_overhead = -2;
    h.pid = 0x31323334;
    h.port = 0x4142;
    h.args = "ab";
    h.arch = "";
    h.os = "linux";
    Bytes out;
    encode_file_header(h, out);
    const Bytes expected = {
        0x01, 0x5A, 0x50, 0x4D, 0x03, 0x00, 0x11, 0x08,  // id, 3.0, data version 17, 8-byte pointers
        0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,  // startup ms
        0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,  // startup ns
        0xFE, 0xFF, 0xFF, 0xFF,                          // timer overhead
        0x00, 0x00, 0x00, 0x00,                          // flags
        0x34, 0x33, 0x32, 0x31,                          // pid
        0x42, 0x41,                                      // port
        0x03, 0x00, 0x00, 0x00, 'a', 'b', 0x00,          // args, length includes the NUL
        0x01, 0x00, 0x00, 0x00, 0x00,                    // arch ""
        0x06, 0x00, 0x00, 0x00, 'l', 'i', 'n', 'u', 'x', 0x00,
    };
    CHECK(out == expected);
  }
}

// ------------------------------------------------------------------------------------------------
// Files: threads, compression, header

TEST_CASE("many buffers of many threads, interleaved", "[roundtrip]") {
  EventGen gen(777);
  const uint64_t threads[] = {0, 1, 0x7f00deadbeef, kMax, kInt64Min, 42, 43, 44};
  std::vector<ThreadBuffer> buffers;
  std::map<uint64_t, std::vector<Event>> written;
  for (int i = 0; i < 300; ++i) {
    ThreadBuffer b;
    b.thread_id = threads[gen.below(std::size(threads))];
    b.time_base = gen.u64();
    b.events = gen.events(gen.below(40));
    if (b.events.empty()) b.events.push_back(gen.make_any());
    auto& w = written[b.thread_id];
    w.insert(w.end(), b.events.begin(), b.events.end());
    buffers.push_back(std::move(b));
  }
  for (Compression c : {Compression::none, Compression::gzip}) {
    const DecodedFile d = decode_bytes(build_file(buffers, c));
    INFO(d.problems_text());
    REQUIRE(d.problems.empty());
    REQUIRE(d.buffers.size() == buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      CHECK(d.buffers[i].index == i);
      CHECK(d.buffers[i].header.thread_id == buffers[i].thread_id);
      CHECK(d.events_of_buffer(i) == buffers[i].events);
    }
    for (const auto& [tid, events] : written) {
      INFO("thread " << tid);
      const std::vector<Event> got = d.events_of_thread(tid);
      REQUIRE(got.size() == events.size());
      CHECK(got == events);
    }
    CHECK(d.summary.buffers == buffers.size());
    CHECK(d.summary.events == d.events.size());
  }
}

TEST_CASE("plain, gzip and two concatenated gzip members decode to the same events", "[roundtrip][gzip]") {
  EventGen gen(31337);
  std::vector<ThreadBuffer> buffers;
  for (int i = 0; i < 40; ++i) buffers.push_back({gen.below(4), gen.u64(), gen.events(1 + gen.below(60))});
  const Bytes plain = build_file(buffers);
  const Bytes gz = build_file(buffers, Compression::gzip);
  REQUIRE(gz.size() >= 2);
  CHECK(gz[0] == 0x1f);
  CHECK(gz[1] == 0x8b);
  CHECK(gz != plain);

  const DecodedFile p = decode_bytes(plain);
  const DecodedFile z = decode_bytes(gz);
  INFO(p.problems_text() << z.problems_text());
  REQUIRE(p.problems.empty());
  REQUIRE(z.problems.empty());
  REQUIRE(p.header == default_header());
  REQUIRE(z.header == default_header());
  std::vector<Event> expected;
  for (const ThreadBuffer& b : buffers) expected.insert(expected.end(), b.events.begin(), b.events.end());
  REQUIRE(p.event_list() == expected);
  REQUIRE(z.event_list() == expected);
  CHECK(p.summary.bytes == plain.size());
  CHECK(z.summary.bytes == plain.size());  // offsets count uncompressed bytes

  // Offsets are the same in both (positions in the uncompressed stream).
  for (size_t i = 0; i < p.events.size(); ++i) REQUIRE(p.events[i].offset == z.events[i].offset);

  // Two members, split in the middle of an event and at a buffer boundary.
  for (size_t split : {plain.size() / 2, size_t{17}, plain.size() - 1, encode_buffer(buffers[0]).size() + 1}) {
    INFO("split at " << split);
    Bytes two = gzip(Bytes(plain.begin(), plain.begin() + static_cast<ptrdiff_t>(split)));
    const Bytes second = gzip(Bytes(plain.begin() + static_cast<ptrdiff_t>(split), plain.end()), 9);
    two.insert(two.end(), second.begin(), second.end());
    const DecodedFile t = decode_bytes(two);
    INFO(t.problems_text());
    REQUIRE(t.problems.empty());
    REQUIRE(t.event_list() == expected);
  }
}

TEST_CASE("file header round trip", "[roundtrip][header]") {
  FileHeader h;
  h.startup_ms = kMax;
  h.startup_ns = kInt64Min;
  h.timer_overhead = std::numeric_limits<int32_t>::min();
  h.pid = -1;
  h.port = 0xFFFF;
  h.args = "";
  for (int i = 0; h.args.size() < 100000; ++i) h.args += "option" + std::to_string(i) + "=\xc3\xa9,";
  h.arch = "x86-64";
  h.os = "linux";
  for (const FileHeader& hh : {h, default_header(), FileHeader{}}) {
    for (Compression c : {Compression::none, Compression::gzip}) {
      const Bytes file = build_file(hh, {}, c);
      const DecodedFile d = decode_bytes(file);
      INFO(d.problems_text());
      REQUIRE(d.problems.empty());
      REQUIRE(d.header_ok);
      CHECK(d.header == hh);
      CHECK(d.buffers.empty());
      CHECK(d.events.empty());
    }
  }
  SECTION("the header is followed by buffers that still decode") {
    EventGen gen(2);
    const std::vector<Event> events = gen.events(50);
    const DecodedFile d = decode_bytes(build_file(h, {{9, 9, events}}));
    REQUIRE(d.problems.empty());
    CHECK(d.header == h);
    CHECK(d.event_list() == events);
    REQUIRE(d.buffers.size() == 1);
    Bytes header_bytes;
    encode_file_header(h, header_bytes);
    CHECK(d.buffers[0].offset == header_bytes.size());
    CHECK(d.events[0].offset == header_bytes.size() + format::kBufferHeaderSize);
  }
}
