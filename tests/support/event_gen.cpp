#include "event_gen.h"

#include <zlib.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <limits>
#include <stdexcept>

#include "mlpd/encoder.h"
#include "mlpd/event_layout.h"
#include "mlpd/format.h"

namespace mlpd::test {

using namespace format;

std::vector<EventKind> all_event_kinds() {
  std::vector<EventKind> kinds;
  kinds.reserve(kEventKindCount);
  for (size_t i = 0; i < kEventKindCount; ++i) kinds.push_back(static_cast<EventKind>(i));
  return kinds;
}

bool kind_has_backtrace_variant(EventKind kind) {
  return layout::layout_of(kind).bt_event_byte != layout::kNoVariant;
}

// ---------------------------------------------------------------------------------------------
// EventGen

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kInt64Min = uint64_t{1} << 63;

// Values at the edges of LEB128 lengths and of the signed/unsigned ranges.
constexpr uint64_t kBoundary[] = {
    0,
    1,
    2,
    0x3f,
    0x40,
    0x7f,
    0x80,
    0x3fff,
    0x4000,
    0x7fffffff,
    0xffffffff,
    0x100000000,
    kInt64Min - 1,  // INT64_MAX
    kInt64Min,      // INT64_MIN
    kInt64Min + 1,
    kMax,  // -1
    kMax - 1,
    kMax - 0x3f,  // -64
    kMax - 0x40,  // -65
};

// Pieces of UTF-8 text (no NUL): ASCII identifiers, 2-, 3- and 4-byte sequences, control bytes.
constexpr const char* kTextPieces[] = {
    "System.Collections.Generic.List`1<T>",
    "Foo:Bar (int,string)",
    "\xc3\xa9",              // é
    "\xce\xa9",              // Ω
    "\xe6\x97\xa5\xe6\x9c\xac",  // 日本
    "\xf0\x9f\x98\x80",      // 😀
    "\t\n\x01\x1f",
    " ",
    "/usr/lib/mono/4.5/mscorlib.dll",
    "{",
    "}",
    "\x7f",
};

}  // namespace

EventGen::EventGen(uint64_t seed) : rng_(seed) {}

uint64_t EventGen::below(uint64_t n) { return n <= 1 ? 0 : rng_() % n; }

bool EventGen::chance(unsigned percent) { return below(100) < percent; }

uint64_t EventGen::u64() {
  const uint64_t pick = below(10);
  if (pick < 3) return kBoundary[below(std::size(kBoundary))];
  if (pick < 5) return kMax - below(1000);  // small negative
  return rng_() >> below(64);               // any bit width
}

uint64_t EventGen::pointer() {
  if (chance(15)) return 0;
  if (chance(30)) return 0x00007f0000000000 + below(1u << 30);  // typical heap/code addresses
  return u64();
}

uint64_t EventGen::object() {
  if (chance(15)) return 0;
  if (chance(10)) return kMax & ~uint64_t{7};
  if (chance(30)) return (0x00007fec9f800000 + below(1u << 24)) & ~uint64_t{7};
  return u64() & ~uint64_t{7};
}

uint64_t EventGen::method() {
  if (chance(15)) return 0;
  if (chance(40)) return 0x0000560000000000 + below(1u << 20) * 8;
  return u64();
}

std::string EventGen::text() {
  const uint64_t pick = below(100);
  std::string s;
  if (pick < 20) return s;  // empty
  if (pick < 55) {          // short ASCII
    const size_t n = 1 + below(40);
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(0x20 + below(0x5f)));
    return s;
  }
  const size_t target = pick < 90 ? 1 + below(80) : 4096 + below(16384);  // mixed, or long
  while (s.size() < target) s += kTextPieces[below(std::size(kTextPieces))];
  return s;
}

std::vector<uint64_t> EventGen::backtrace() {
  size_t n;
  const uint64_t pick = below(100);
  if (pick < 10) n = 0;
  else if (pick < 25) n = kMaxFrames;
  else if (pick < 95) n = below(kMaxFrames + 1);
  else n = kMaxFrames + 1 + below(268);
  std::vector<uint64_t> frames(n);
  for (uint64_t& m : frames) m = method();
  return frames;
}

uint64_t EventGen::next_time() {
  const uint64_t pick = below(100);
  if (pick < 55) time_ += below(1000);                 // forward, small
  else if (pick < 62) {}                               // same time (delta 0)
  else if (pick < 70) time_ += rng_() >> below(64);    // forward, any size (wraps)
  else if (pick < 82) time_ -= 1 + below(100000);      // backwards, small
  else if (pick < 90) time_ -= rng_() >> below(64);    // backwards, any size
  else time_ = kBoundary[below(std::size(kBoundary))];  // 0, UINT64_MAX, INT64 extremes...
  return time_;
}

CounterDesc EventGen::counter_desc() {
  static constexpr uint64_t kSections[] = {0x100, 0x200, 0x400, 0x800, 0x1000, 0x2000, 0x4000,
                                           COUNTER_SECTION_PERFCOUNTERS, COUNTER_SECTION_PROFILER};
  static constexpr uint64_t kUnits[] = {COUNTER_UNIT_RAW, COUNTER_UNIT_BYTES, COUNTER_UNIT_TIME,
                                        COUNTER_UNIT_COUNT, COUNTER_UNIT_PERCENTAGE};
  static constexpr uint64_t kVariances[] = {COUNTER_VARIANCE_MONOTONIC, COUNTER_VARIANCE_CONSTANT,
                                            COUNTER_VARIANCE_VARIABLE, 0};
  CounterDesc d;
  d.section = chance(85) ? kSections[below(std::size(kSections))] : u64();
  if (d.section == COUNTER_SECTION_PERFCOUNTERS) d.section_name = text();
  d.name = text();
  d.type = below(kMaxCounterType + 1);
  d.unit = chance(85) ? kUnits[below(std::size(kUnits))] : u64();
  d.variance = chance(85) ? kVariances[below(std::size(kVariances))] : u64();
  d.index = chance(70) ? 1 + below(300) : u64();
  if (d.index == 0) d.index = 1;
  return d;
}

CounterValue EventGen::counter_value() {
  static constexpr double kDoubles[] = {0.0,
                                        -0.0,
                                        1.5,
                                        -1e300,
                                        std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::denorm_min(),
                                        std::numeric_limits<double>::max()};
  CounterValue v;
  v.index = chance(70) ? 1 + below(300) : u64();
  if (v.index == 0) v.index = 1;
  v.type = below(kMaxCounterType + 1);
  switch (v.type) {
    case COUNTER_DOUBLE:
      v.bits = chance(50) ? std::bit_cast<uint64_t>(kDoubles[below(std::size(kDoubles))]) : rng_();
      break;
    case COUNTER_STRING:
      v.is_null = chance(40);
      if (!v.is_null) v.str = text();
      break;
    default:
      v.bits = u64();  // sleb types as two's complement, uleb types as is
      break;
  }
  return v;
}

Event EventGen::make_any() { return make(static_cast<EventKind>(below(kEventKindCount))); }

std::vector<Event> EventGen::events(EventKind kind, size_t n) {
  std::vector<Event> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(make(kind));
  return out;
}

std::vector<Event> EventGen::events(size_t n) {
  std::vector<Event> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(make_any());
  return out;
}

// Generated from the layout table (mlpd/event_layout.h), as the encoder and the decoder are: each
// field of the kind, in file order, gets a value picked by its encoding and the check the reader makes
// of it, so a kind or a field added to the table is generated here without a line written. What the
// table does not say is below: the GUID-like strings of image_load's mvid and aot_id, and the NULL
// object of a finally/fault clause (Mono writes none for them).
Event EventGen::make(EventKind kind) {
  using layout::Check;
  using layout::Cond;
  using layout::Enc;
  using layout::Member;
  static constexpr const char* kGuid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
  Event e;
  e.reset(kind);
  e.time = next_time();
  auto field = [&]<Enc E, Cond C, Check K, Member M, class T>(T& v) {
    if constexpr (C == Cond::if_backtrace) {
      e.has_backtrace = chance(50);
      if (!e.has_backtrace) return;
    } else if constexpr (C == Cond::if_trampoline) {
      if (e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE) return;
    }
    if constexpr (E == Enc::byte) {
      static_assert(M == Member::code || M == Member::generation, "a byte field the generator does not know");
      if constexpr (K == Check::gc_event) {
        static constexpr uint8_t kGcEvents[] = {0, 5, 6, 7, 8, 9, 10, 11};
        v = kGcEvents[below(std::size(kGcEvents))];
      } else if constexpr (K == Check::clause_type) {
        static constexpr uint8_t kClauses[] = {CLAUSE_CATCH, CLAUSE_FILTER, CLAUSE_FINALLY, CLAUSE_FAULT};
        v = kClauses[below(std::size(kClauses))];
      } else if constexpr (K == Check::monitor) {
        v = static_cast<uint8_t>(MONITOR_CONTENTION + below(3));
      } else if constexpr (K == Check::root_source) {
        v = static_cast<uint8_t>(below(kMaxRootSource + 1));
      } else if constexpr (K == Check::code_buffer) {
        v = static_cast<uint8_t>(below(kMaxCodeBufferType + 1));
      } else if constexpr (K == Check::sync_point) {
        v = static_cast<uint8_t>(below(SYNC_POINT_WORLD_START + 1));
      } else {
        static_assert(K == Check::none, "a byte check the generator does not know");
        v = static_cast<uint8_t>(below(256));
      }
    } else if constexpr (E == Enc::uleb) {
      if constexpr (K == Check::handle_type) v = below(kMaxGcHandleType + 1);
      else {
        static_assert(K == Check::none, "a uleb check the generator does not know");
        v = u64();
      }
    } else if constexpr (E == Enc::ptr) {
      v = pointer();
    } else if constexpr (E == Enc::obj) {
      if (kind == EventKind::exception_clause && (e.code == CLAUSE_FINALLY || e.code == CLAUSE_FAULT)) v = 0;
      else v = object();
    } else if constexpr (E == Enc::method) {
      v = method();
    } else if constexpr (E == Enc::string) {
      if constexpr (M == Member::mvid) v = chance(70) ? kGuid : text();
      else if (kind == EventKind::aot_id) v = chance(50) ? kGuid : text();
      else v = text();
    } else if constexpr (E == Enc::backtrace || E == Enc::method_list) {
      v = backtrace();
    } else if constexpr (E == Enc::obj_pairs) {
      const size_t pairs = chance(90) ? below(33) : 33 + below(500);
      v.resize(2 * pairs);
      for (uint64_t& o : v) o = object();
    } else if constexpr (E == Enc::ptr_list) {
      v.resize(chance(80) ? 1 : below(6));
      for (uint64_t& p : v) p = pointer();
    } else if constexpr (E == Enc::heap_refs) {
      v.resize(chance(90) ? below(20) : 20 + below(1000));
      // Non-decreasing offsets (the file stores uleb deltas); deltas stay below 2^52 so that even
      // 1020 of them cannot overflow.
      uint64_t offset = chance(50) ? 0 : below(64) * 8;
      for (HeapRef& r : v) {
        r.offset = offset;
        r.obj = object();
        offset += chance(80) ? 8 * (1 + below(8)) : (rng_() >> (12 + below(52)));
      }
    } else if constexpr (E == Enc::roots) {
      v.resize(chance(90) ? below(20) : 20 + below(500));
      for (RootRef& r : v) {
        r.address = pointer();
        r.obj = object();
      }
    } else if constexpr (E == Enc::counter_descs) {
      const size_t n = chance(90) ? below(10) : 10 + below(60);
      for (size_t i = 0; i < n; ++i) v.push_back(counter_desc());
    } else if constexpr (E == Enc::counter_values) {
      const size_t n = chance(90) ? below(10) : 10 + below(60);
      for (size_t i = 0; i < n; ++i) v.push_back(counter_value());
    } else {
      static_assert(E == Enc::byte, "an encoding the generator does not know");
    }
  };
#define MLPD_GEN_FIELD(enc, member, name, cond, check) \
  field.template operator()<Enc::enc, Cond::cond, Check::check, Member::member>(e.member);
#define MLPD_GEN_EV(kind, eb, fields) \
  case EventKind::kind:               \
    fields break;
#define MLPD_GEN_BT(kind, eb, bt, fields) \
  case EventKind::kind:                   \
    fields break;
#define MLPD_GEN_MD(kind, ext, mtype, fields) \
  case EventKind::kind:                       \
    fields break;
  switch (kind) { MLPD_EVENT_LAYOUTS(MLPD_GEN_EV, MLPD_GEN_BT, MLPD_GEN_MD, MLPD_GEN_FIELD) }
#undef MLPD_GEN_EV
#undef MLPD_GEN_BT
#undef MLPD_GEN_MD
#undef MLPD_GEN_FIELD
  return e;
}

// ---------------------------------------------------------------------------------------------
// Building files

FileHeader default_header() {
  FileHeader h;
  h.startup_ms = 1700000000000;
  h.startup_ns = 123456789012345;
  h.timer_overhead = 25;
  h.flags = 0;
  h.pid = 4242;
  h.port = 37001;
  h.args = "alloc,calls,output=test.mlpd";
  h.arch = "x86-64";
  h.os = "linux";
  return h;
}

void append_buffer_header(std::vector<uint8_t>& out, const BufferHeader& h) { encode_buffer_header(h, out); }

std::vector<uint8_t> encode_buffer(const ThreadBuffer& buffer) {
  BufferEncoder enc(buffer.thread_id, buffer.time_base);
  for (const Event& e : buffer.events) enc.add(e);
  std::vector<uint8_t> out;
  enc.finish_into(out);
  return out;
}

std::vector<uint8_t> build_file(const FileHeader& header, const std::vector<ThreadBuffer>& buffers,
                                Compression compression) {
  std::vector<uint8_t> out;
  encode_file_header(header, out);
  for (const ThreadBuffer& b : buffers) {
    const std::vector<uint8_t> bytes = encode_buffer(b);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return compression == Compression::gzip ? gzip(out) : out;
}

std::vector<uint8_t> build_file(const std::vector<ThreadBuffer>& buffers, Compression compression) {
  return build_file(default_header(), buffers, compression);
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& data, int level) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  // windowBits 15 + 16: gzip wrapper instead of zlib's.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64);
  zs.next_in = const_cast<Bytef*>(data.data());
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  out.resize(produced);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Diagnostics

namespace {
std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
std::string hex_list(const std::vector<uint64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + hex(v[i]);
  return s + "]";
}
std::string quoted(const std::string& s) {
  if (s.size() <= 60) return '"' + s + '"';
  return '"' + s.substr(0, 40) + "...\" (" + std::to_string(s.size()) + " bytes)";
}
}  // namespace

std::string describe(const Event& e) {
  std::string s(event_kind_name(e.kind));
  s += " time=" + hex(e.time);
  if (e.has_backtrace) s += " bt=" + hex_list(e.backtrace);
  else if (!e.backtrace.empty()) s += " (no bt flag) backtrace=" + hex_list(e.backtrace);
  const std::pair<const char*, uint64_t> scalars[] = {
      {"ptr", e.ptr},     {"ptr2", e.ptr2},   {"ptr3", e.ptr3},
      {"obj", e.obj},     {"method", e.method}, {"size", e.size},
      {"handle_type", e.handle_type}, {"handle", e.handle}, {"index", e.index},
      {"code", e.code},   {"generation", e.generation}};
  for (const auto& [name, value] : scalars)
    if (value) s += std::string(" ") + name + "=" + hex(value);
  if (!e.name.empty()) s += " name=" + quoted(e.name);
  if (!e.mvid.empty()) s += " mvid=" + quoted(e.mvid);
  if (!e.objects.empty()) s += " objects=" + hex_list(e.objects);
  if (!e.ips.empty()) s += " ips=" + hex_list(e.ips);
  if (!e.frames.empty()) s += " frames=" + hex_list(e.frames);
  for (const HeapRef& r : e.refs) s += " ref(" + hex(r.offset) + "," + hex(r.obj) + ")";
  for (const RootRef& r : e.roots) s += " root(" + hex(r.address) + "," + hex(r.obj) + ")";
  for (const CounterDesc& d : e.counter_descs) {
    s += " desc(section=" + hex(d.section) + " section_name=" + quoted(d.section_name) + " name=" +
         quoted(d.name) + " type=" + std::to_string(d.type) + " unit=" + hex(d.unit) +
         " variance=" + hex(d.variance) + " index=" + std::to_string(d.index) + ")";
  }
  for (const CounterValue& v : e.counter_values) {
    s += " value(index=" + std::to_string(v.index) + " type=" + std::to_string(v.type) + " bits=" + hex(v.bits) +
         (v.is_null ? " null" : "") + (v.str.empty() ? "" : " str=" + quoted(v.str)) + ")";
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Decoding

namespace {

class CollectingVisitor final : public Visitor {
 public:
  explicit CollectingVisitor(DecodedFile& out) : out_(out) {}
  void on_header(const FileHeader& h) override {
    out_.header_ok = true;
    out_.header = h;
  }
  void on_buffer(const BufferInfo& b) override { out_.buffers.push_back(b); }
  void on_event(const Event& e, const EventInfo& info) override {
    out_.events.push_back({e, info.offset, info.buffer ? info.buffer->index : 0});
  }
  void on_problem(const Problem& p) override { out_.problems.push_back(p); }
  void on_warning(const Problem& p) override { out_.warnings.push_back(p); }

 private:
  DecodedFile& out_;
};

}  // namespace

std::vector<Event> DecodedFile::event_list() const {
  std::vector<Event> out;
  out.reserve(events.size());
  for (const DecodedEvent& d : events) out.push_back(d.event);
  return out;
}

std::vector<Event> DecodedFile::events_of_buffer(uint64_t index) const {
  std::vector<Event> out;
  for (const DecodedEvent& d : events)
    if (d.buffer_index == index) out.push_back(d.event);
  return out;
}

std::vector<Event> DecodedFile::events_of_thread(uint64_t thread_id) const {
  std::unordered_map<uint64_t, uint64_t> thread_of_buffer;
  for (const BufferInfo& b : buffers) thread_of_buffer[b.index] = b.header.thread_id;
  std::vector<Event> out;
  for (const DecodedEvent& d : events) {
    auto it = thread_of_buffer.find(d.buffer_index);
    if (it != thread_of_buffer.end() && it->second == thread_id) out.push_back(d.event);
  }
  return out;
}

std::string DecodedFile::problems_text() const {
  std::string s;
  for (const Problem& p : problems) {
    s += "offset " + std::to_string(p.offset) + " (buffer " + std::to_string(p.buffer) + "): " + p.message + "\n";
  }
  return s;
}

DecodedFile decode_input(Input& input, const DecodeOptions& options) {
  DecodedFile out;
  CollectingVisitor visitor(out);
  out.summary = decode(input, visitor, options);
  return out;
}

DecodedFile decode_bytes(const std::vector<uint8_t>& file, const DecodeOptions& options) {
  std::unique_ptr<Input> in = Input::from_memory(file.data(), file.size());
  return decode_input(*in, options);
}

}  // namespace mlpd::test
