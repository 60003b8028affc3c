// BufferDecoder: the events of one buffer, validated as they are decoded (see buffer_decoder.h).
#include "mlpd/buffer_decoder.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "mlpd/event_layout.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"

// Forced inlining for the per-field readers (see uleb below).
#define MLPD_HOT inline __attribute__((always_inline))

namespace mlpd {

using namespace format;

namespace {

uint64_t load_le(const uint8_t* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// No list inside one event may be longer than this (Mono writes at most a few hundred items); it keeps
// a hostile count from making the reader allocate gigabytes even within a legal buffer.
constexpr uint64_t kMaxItems = 1u << 20;

}  // namespace

BufferDecoder::BufferDecoder(const BufferHeader& h, const uint8_t* data, uint64_t data_offset)
    : data_(data),
      p_(data),
      end_(data + h.length),
      data_offset_(data_offset),
      last_time_(h.time_base),
      ptr_base_(h.ptr_base),
      obj_base_(h.obj_base),
      last_method_(h.method_base) {}

__attribute__((noinline)) bool BufferDecoder::fail(const char* what) {
  if (!problem_) {
    problem_ = what;
    problem_offset_ = position();
  }
  return false;
}

MLPD_HOT bool BufferDecoder::byte(uint8_t& out) {
  if (p_ >= end_) return fail("read past the end of the buffer");
  out = *p_++;
  return true;
}

bool BufferDecoder::leb_failed(LebStatus status) {
  return fail(status == LebStatus::truncated ? "read past the end of the buffer (LEB128)"
                                             : "LEB128 value longer than 64 bits");
}

// Most values in a buffer are deltas that fit in one byte: those are decoded inline, without the
// general loop. These small readers run several times per event, hence the forced inlining.
MLPD_HOT bool BufferDecoder::uleb(uint64_t& out) {
  if (p_ < end_ && *p_ < 0x80) [[likely]] {
    out = *p_++;
    return true;
  }
  const LebStatus st = get_uleb(p_, end_, out);
  return st == LebStatus::ok || leb_failed(st);
}

MLPD_HOT bool BufferDecoder::sleb(int64_t& out) {
  if (p_ < end_ && *p_ < 0x80) [[likely]] {
    out = static_cast<int64_t>(*p_++ ^ 0x40) - 0x40;  // sign-extend 7 bits
    return true;
  }
  const LebStatus st = get_sleb(p_, end_, out);
  return st == LebStatus::ok || leb_failed(st);
}

MLPD_HOT bool BufferDecoder::time(uint64_t& out) {
  uint64_t delta = 0;
  if (!uleb(delta)) return false;
  last_time_ += delta;  // wraps: Mono writes "negative" deltas as 64-bit two's complement
  out = last_time_;
  return true;
}

MLPD_HOT bool BufferDecoder::ptr(uint64_t& out) {
  int64_t d = 0;
  if (!sleb(d)) return false;
  out = static_cast<uint64_t>(ptr_base_) + static_cast<uint64_t>(d);
  return true;
}

MLPD_HOT bool BufferDecoder::obj(uint64_t& out) {
  int64_t d = 0;
  if (!sleb(d)) return false;
  out = (static_cast<uint64_t>(obj_base_) + static_cast<uint64_t>(d)) << 3;
  return true;
}

MLPD_HOT bool BufferDecoder::method(uint64_t& out) {
  int64_t d = 0;
  if (!sleb(d)) return false;
  last_method_ = static_cast<int64_t>(static_cast<uint64_t>(last_method_) + static_cast<uint64_t>(d));
  out = static_cast<uint64_t>(last_method_);
  return true;
}

bool BufferDecoder::string(std::string& out) {
  const void* nul = std::memchr(p_, 0, static_cast<size_t>(end_ - p_));
  lists_used_ = true;
  if (!nul) return fail("unterminated string");
  const auto* q = static_cast<const uint8_t*>(nul);
  out.assign(reinterpret_cast<const char*>(p_), static_cast<size_t>(q - p_));
  p_ = q + 1;
  return true;
}

// A count of items that each take at least `min_item_size` bytes cannot exceed what is left of the
// buffer; checking that first keeps hostile counts from driving allocations or long loops.
bool BufferDecoder::count(uint64_t& out, size_t min_item_size) {
  const uint64_t at = position();
  if (!uleb(out)) return false;
  const char* bad = nullptr;
  // out > left / min_item_size, without a division while out is small (out * min_item_size cannot
  // overflow then): the same test, at every list of every event.
  const uint64_t left = static_cast<uint64_t>(end_ - p_);
  if (out <= kMaxItems ? out * min_item_size > left : out > left / min_item_size) bad = "item count larger than the buffer";
  else if (out > kMaxItems) bad = "item count above the reader's limit of 1048576";
  if (!bad) return true;
  fail(bad);
  problem_offset_ = at;  // report the count field, not what follows it
  return false;
}

// A backtrace's method deltas (frames of different classes: mostly 2 to 4 bytes each) are decoded
// without a branch on their length while 4 bytes are left: the bytes that end each delta (high bit
// clear) are found in one 4-byte word. A longer delta, and the last bytes of the buffer, go through
// method() (which validates), so the values and problems are method()'s.
bool BufferDecoder::backtrace(std::vector<uint64_t>& out) {
  static_assert(std::endian::native == std::endian::little);
  uint64_t n = 0;
  if (!count(n, 1)) return false;
  lists_used_ = true;
  out.resize(n);
  uint64_t* o = out.data();
  const uint8_t* q = p_;
  uint64_t m = static_cast<uint64_t>(last_method_);
  uint64_t i = 0;
  for (; i < n && end_ - q >= 4; ++i) {
    uint32_t w;
    std::memcpy(&w, q, 4);
    const uint32_t stops = ~w & 0x80808080u;  // the high bit of each byte that ends a delta
    if (stops == 0) break;                     // 5 bytes or more
    const unsigned b = static_cast<unsigned>(std::countr_zero(stops));  // 7, 15, 23 or 31
    const uint64_t x = w & ((uint64_t{2} << b) - 1);                   // the delta's bytes
    const uint64_t v = (x & 0x7F) | (x >> 1 & 0x3F80) | (x >> 2 & 0x1FC000) | (x >> 3 & 0xFE00000);
    const unsigned shift = 64 - 7 * ((b >> 3) + 1);
    m += static_cast<uint64_t>(static_cast<int64_t>(v << shift) >> shift);  // sign-extended
    o[i] = m;
    q += (b >> 3) + 1;
  }
  p_ = q;
  last_method_ = static_cast<int64_t>(m);
  for (; i < n; ++i) {
    if (!method(o[i])) return false;
  }
  return true;
}

// Resetting the reused Event costs more than decoding a typical event, so it is done only as far as
// needed: strings and lists only when the previous event may have filled one, scalars only when the
// kind changes (every decode path below assigns every scalar field its kind uses, so an event of the
// same kind overwrites all of them). Metadata events reset fully: their kind is known only mid-event.
void BufferDecoder::start_event(Event& e, EventKind k) {
  if (lists_used_) {
    e.reset(k);
  } else if (e.kind != k) {
    e.reset_scalars(k);
  }
  lists_used_ = false;  // set again by every path that fills a string or a list
}

// The failure path of next() (inline in buffer_decoder.h): the problem message with the event byte
// and offset; nothing after a malformed event can be trusted.
bool BufferDecoder::failed_event(uint8_t event_byte, uint64_t event_offset, std::string& problem) {
  problem = problem_ ? problem_ : "malformed event";
  if (!detail_.empty()) problem += detail_;
  char head[64];
  std::snprintf(head, sizeof head, " (event byte 0x%02x at offset %llu)", event_byte,
                static_cast<unsigned long long>(event_offset));
  problem += head;
  end_ = p_;
  return false;
}

// The event body is generated from the layout table (event_layout.h): one case per event byte, each
// field read by its encoding and checked as the table says. What the table does not say is written
// out here: the layout of one list item (the Enc:: list encodings), the mapping of a metadata event's
// (subtype, metadata type) to its kind and its problems, and the problems of unknown event bytes.
bool BufferDecoder::event_body(uint8_t eb, Event& e) {
  using layout::Check;
  using layout::Cond;
  using layout::Enc;
  auto kind_is = [&](EventKind k) {
    start_event(e, k);
    return time(e.time);
  };
  // An invalid value is reported at the offset of the field holding it (`at`), not after it.
  auto bad_value = [&](const char* what, uint64_t v, uint64_t at) {
    fail(what);
    problem_offset_ = at;
    // Built by push_back and append: GCC 12's -O2/-O3 inlining warns -Wrestrict (a false positive) on
    // both `" " + string` and `detail_ = " "` here.
    detail_.clear();
    detail_.push_back(' ');
    detail_ += std::to_string(v);
    return false;
  };

  // One field: present under `C`, read as `E` into `out`, its value checked as `K` says.
  auto field = [&]<Enc E, Cond C, Check K, class T>(T& out) __attribute__((always_inline)) -> bool {
    if constexpr (C == Cond::if_backtrace) {
      if (!e.has_backtrace) return true;
    } else if constexpr (C == Cond::if_trampoline) {
      if (e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE) return true;
    }
    [[maybe_unused]] const uint64_t at = position();
    if constexpr (E == Enc::byte) {
      if (!byte(out)) return false;
    } else if constexpr (E == Enc::uleb) {
      if (!uleb(out)) return false;
    } else if constexpr (E == Enc::ptr) {
      if (!ptr(out)) return false;
    } else if constexpr (E == Enc::obj) {
      if (!obj(out)) return false;
    } else if constexpr (E == Enc::method) {
      if (!method(out)) return false;
    } else if constexpr (E == Enc::string) {
      return string(out);
    } else if constexpr (E == Enc::backtrace) {
      return backtrace(out);
    } else if constexpr (E == Enc::obj_pairs) {
      uint64_t n = 0;
      if (!count(n, 1)) return false;
      if (n % 2) return bad_value("odd number of addresses in GC move", n, at);
      lists_used_ = true;
      out.resize(n);
      for (uint64_t i = 0; i < n; ++i)
        if (!obj(out[i])) return false;
      return true;
    } else if constexpr (E == Enc::ptr_list || E == Enc::method_list) {
      uint64_t n = 0;
      if (!count(n, 1)) return false;
      lists_used_ = true;
      out.resize(n);
      for (uint64_t& v : out) {
        if constexpr (E == Enc::ptr_list) {
          if (!ptr(v)) return false;
        } else {
          if (!method(v)) return false;
        }
      }
      return true;
    } else if constexpr (E == Enc::heap_refs) {
      uint64_t n = 0;
      if (!count(n, 2)) return false;
      if (!keep_heap_refs_) {  // read and validated, not kept: the refs stay empty
        for (uint64_t i = 0; i < n; ++i) {
          uint64_t d = 0, o = 0;
          if (!uleb(d) || !obj(o)) return false;
        }
        return true;
      }
      lists_used_ = true;
      out.resize(n);
      uint64_t offset = 0;
      for (HeapRef& r : out) {
        uint64_t d = 0;
        if (!uleb(d) || !obj(r.obj)) return false;
        offset += d;
        r.offset = offset;
      }
      return true;
    } else if constexpr (E == Enc::roots) {
      uint64_t n = 0;
      if (!count(n, 2)) return false;
      lists_used_ = true;
      out.resize(n);
      for (RootRef& r : out)
        if (!ptr(r.address) || !obj(r.obj)) return false;
      return true;
    } else if constexpr (E == Enc::counter_descs) {
      uint64_t n = 0;
      if (!count(n, 6)) return false;
      lists_used_ = true;
      out.resize(n);
      for (CounterDesc& d : out) {
        d.section_name.clear();
        if (!uleb(d.section)) return false;
        if (d.section == COUNTER_SECTION_PERFCOUNTERS && !string(d.section_name)) return false;
        if (!string(d.name)) return false;
        const uint64_t type_at = position();
        if (!uleb(d.type)) return false;
        if (d.type > kMaxCounterType) return bad_value("unknown counter type", d.type, type_at);
        if (!uleb(d.unit) || !uleb(d.variance)) return false;
        const uint64_t index_at = position();
        if (!uleb(d.index)) return false;
        if (d.index == 0) return bad_value("counter descriptor with index", 0, index_at);
      }
      return true;
    } else if constexpr (E == Enc::counter_values) {
      for (;;) {
        uint64_t index = 0;
        if (!uleb(index)) return false;
        if (index == 0) return true;
        // Each value takes at least 2 bytes (type + value), so the loop ends with the buffer.
        if (out.size() >= kMaxItems) return fail("more counter values than the reader's limit");
        lists_used_ = true;
        CounterValue& v = out.emplace_back();
        v.index = index;
        v.bits = 0;
        v.is_null = false;
        v.str.clear();
        const uint64_t type_at = position();
        if (!uleb(v.type)) return false;
        switch (v.type) {
          case COUNTER_INT:
          case COUNTER_WORD:
          case COUNTER_LONG:
          case COUNTER_TIME_INTERVAL: {
            int64_t s = 0;
            if (!sleb(s)) return false;
            v.bits = static_cast<uint64_t>(s);
            break;
          }
          case COUNTER_UINT:
          case COUNTER_ULONG:
            if (!uleb(v.bits)) return false;
            break;
          case COUNTER_DOUBLE:
            if (end_ - p_ < 8) return fail("read past the end of the buffer (double counter)");
            v.bits = load_le(p_, 8);
            p_ += 8;
            break;
          case COUNTER_STRING: {
            uint8_t present = 0;
            if (!byte(present)) return false;
            if (present > 1) return bad_value("invalid string counter marker", present, position() - 1);
            v.is_null = present == 0;
            if (present && !string(v.str)) return false;
            break;
          }
          default:
            return bad_value("unknown counter type", v.type, type_at);
        }
      }
    } else {
      static_assert(E == Enc::byte, "an encoding without a decoder");
    }
    if constexpr (K == Check::gc_event) {
      if (!is_valid_gc_event(out)) return bad_value("unknown GC event", out, at);
    } else if constexpr (K == Check::handle_type) {
      if (out > kMaxGcHandleType) return bad_value("unknown GC handle type", out, at);
    } else if constexpr (K == Check::clause_type) {
      if (!is_valid_clause_type(out)) return bad_value("unknown clause type", out, at);
    } else if constexpr (K == Check::monitor) {
      if (out < MONITOR_CONTENTION || out > MONITOR_FAIL) return bad_value("unknown monitor event", out, at);
    } else if constexpr (K == Check::root_source) {
      if (out > kMaxRootSource) return bad_value("unknown GC root source", out, at);
    } else if constexpr (K == Check::code_buffer) {
      if (out > kMaxCodeBufferType) return bad_value("unknown code buffer type", out, at);
    } else if constexpr (K == Check::sync_point) {
      if (out > SYNC_POINT_WORLD_START) return bad_value("unknown sync point type", out, at);
    }
    return true;
  };

#define MLPD_DECODE_FIELD(enc, member, name, cond, check) \
  &&field.template operator()<Enc::enc, Cond::cond, Check::check>(e.member)
#define MLPD_DECODE_EV(kind, eb, fields) \
  case eb:                               \
    return kind_is(EventKind::kind) fields;
#define MLPD_DECODE_BT(kind, eb, bt, fields)   \
  case eb:                                     \
  case bt:                                     \
    if (!kind_is(EventKind::kind)) return false; \
    e.has_backtrace = event_byte == (bt);      \
    return true fields;
#define MLPD_DECODE_MD(kind, ext, mtype, fields)
  const uint8_t event_byte = eb;
  switch (eb) {
    MLPD_EVENT_LAYOUTS(MLPD_DECODE_EV, MLPD_DECODE_BT, MLPD_DECODE_MD, MLPD_DECODE_FIELD)
    case TYPE_METADATA | TYPE_METADATA_NAME:
    case TYPE_METADATA | TYPE_END_LOAD:
    case TYPE_METADATA | TYPE_END_UNLOAD:
      break;
    default:
      problem_offset_ = position() - 1;
      // TYPE_COVERAGE (removed in data version 16) and 11..15 are no type; the others have subtypes.
      problem_ = event_type(eb) == TYPE_COVERAGE || event_type(eb) > TYPE_META ? "unknown event type"
                                                                                 : "unknown event subtype";
      return false;
  }
#undef MLPD_DECODE_EV
#undef MLPD_DECODE_BT
#undef MLPD_DECODE_MD

  // A metadata event: its kind depends on the metadata type byte, which follows the time.
  e.reset(EventKind::class_load);
  lists_used_ = false;
  uint64_t t = 0;
  uint8_t mtype = 0;
  if (!time(t) || !byte(mtype)) return false;
  const uint64_t mtype_at = position() - 1;
  const uint8_t ext = event_ext(eb);
#define MLPD_DECODE_EV(kind, eb, fields)
#define MLPD_DECODE_BT(kind, eb, bt, fields)
#define MLPD_DECODE_MD(k, ext, mtype, fields) \
  case (ext) | (mtype):                       \
    e.kind = EventKind::k;                    \
    e.time = t;                                  \
    return true fields;
  static_assert(TYPE_VTABLE < 16, "the metadata type fits below the subtype's bits");
  switch (mtype < 16 ? ext | mtype : 0) {  // 0: no metadata type is 0
    MLPD_EVENT_LAYOUTS(MLPD_DECODE_EV, MLPD_DECODE_BT, MLPD_DECODE_MD, MLPD_DECODE_FIELD)
    default:
      break;
  }
#undef MLPD_DECODE_EV
#undef MLPD_DECODE_BT
#undef MLPD_DECODE_MD
#undef MLPD_DECODE_FIELD
  // Domains and threads have all three subtypes; the other metadata types have only some.
  static constexpr const char* kUnsupported[] = {
      nullptr,
      "class metadata event with unsupported subtype",
      "image metadata event with unsupported subtype",
      "assembly metadata event with unsupported subtype",
      nullptr,
      nullptr,
      "context metadata event with unsupported subtype",
      "vtable metadata event with unsupported subtype",
  };
  if (mtype < std::size(kUnsupported) && kUnsupported[mtype]) return bad_value(kUnsupported[mtype], ext >> 4, mtype_at);
  return bad_value("unknown metadata type", mtype, mtype_at);
}

}  // namespace mlpd
