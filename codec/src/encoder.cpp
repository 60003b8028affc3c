#include "mlpd/encoder.h"

#include <cstring>

#include "mlpd/event_layout.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"

namespace mlpd {

using namespace format;

namespace {
void put_header_string(std::vector<uint8_t>& out, const std::string& s) {
  put_le(out, static_cast<uint32_t>(s.size() + 1), 4);  // length includes the NUL
  out.insert(out.end(), s.begin(), s.end());
  out.push_back(0);
}
}  // namespace

void encode_file_header(const FileHeader& h, std::vector<uint8_t>& out) {
  put_le(out, kFileId, 4);
  out.push_back(h.major);
  out.push_back(h.minor);
  out.push_back(h.data_version);
  out.push_back(h.ptr_size);
  put_le(out, h.startup_ms, 8);
  put_le(out, h.startup_ns, 8);
  put_le(out, static_cast<uint32_t>(h.timer_overhead), 4);
  put_le(out, static_cast<uint32_t>(h.flags), 4);
  put_le(out, static_cast<uint32_t>(h.pid), 4);
  put_le(out, h.port, 2);
  put_header_string(out, h.args);
  put_header_string(out, h.arch);
  put_header_string(out, h.os);
}

void encode_buffer_header(const BufferHeader& h, std::vector<uint8_t>& out) {
  put_le(out, kBufferId, 4);
  put_le(out, h.length, 4);
  put_le(out, h.time_base, 8);
  put_le(out, static_cast<uint64_t>(h.ptr_base), 8);
  put_le(out, static_cast<uint64_t>(h.obj_base), 8);
  put_le(out, h.thread_id, 8);
  put_le(out, static_cast<uint64_t>(h.method_base), 8);
}

uint8_t* encode_buffer_header(const BufferHeader& h, uint8_t* out) {
  auto le = [&out](uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i) *out++ = static_cast<uint8_t>(v >> (8 * i));
  };
  le(kBufferId, 4);
  le(h.length, 4);
  le(h.time_base, 8);
  le(static_cast<uint64_t>(h.ptr_base), 8);
  le(static_cast<uint64_t>(h.obj_base), 8);
  le(h.thread_id, 8);
  le(static_cast<uint64_t>(h.method_base), 8);
  return out;
}

void BufferEncoder::reset(uint64_t thread_id, uint64_t time_base) {
  data_.clear();
  thread_id_ = thread_id;
  time_base_ = last_time_ = time_base;
  ptr_base_ = obj_base_ = method_base_ = last_method_ = 0;
  has_ptr_base_ = has_obj_base_ = has_method_base_ = false;
}

BufferHeader BufferEncoder::header() const {
  BufferHeader h;
  h.length = static_cast<uint32_t>(data_.size());
  h.time_base = time_base_;
  h.ptr_base = ptr_base_;
  h.obj_base = obj_base_;
  h.thread_id = thread_id_;
  h.method_base = method_base_;
  return h;
}

void BufferEncoder::finish_into(std::vector<uint8_t>& out) const {
  encode_buffer_header(header(), out);
  out.insert(out.end(), data_.begin(), data_.end());
}

void BufferEncoder::put_uleb(uint64_t v) {
  uint8_t tmp[kMaxLeb128];
  data_.insert(data_.end(), tmp, mlpd::put_uleb(tmp, v));
}

void BufferEncoder::put_sleb(int64_t v) {
  uint8_t tmp[kMaxLeb128];
  data_.insert(data_.end(), tmp, mlpd::put_sleb(tmp, v));
}

// Times are deltas from the previous event of the buffer; a time earlier than the previous one is
// written as the 64-bit two's complement, which readers undo with wrap-around arithmetic.
void BufferEncoder::put_time(uint64_t t) {
  put_uleb(t - last_time_);
  last_time_ = t;
}

void BufferEncoder::put_ptr(uint64_t p) {
  if (!has_ptr_base_) {
    ptr_base_ = static_cast<int64_t>(p);
    has_ptr_base_ = true;
  }
  put_sleb(static_cast<int64_t>(p - static_cast<uint64_t>(ptr_base_)));
}

void BufferEncoder::put_obj(uint64_t o) {
  const int64_t shifted = static_cast<int64_t>(o >> 3);
  if (!has_obj_base_) {
    obj_base_ = shifted;
    has_obj_base_ = true;
  }
  put_sleb(static_cast<int64_t>(static_cast<uint64_t>(shifted) - static_cast<uint64_t>(obj_base_)));
}

void BufferEncoder::put_method(uint64_t m) {
  if (!has_method_base_) {
    method_base_ = last_method_ = static_cast<int64_t>(m);
    has_method_base_ = true;
  }
  put_sleb(static_cast<int64_t>(m - static_cast<uint64_t>(last_method_)));
  last_method_ = static_cast<int64_t>(m);
}

void BufferEncoder::put_string(const std::string& s) {
  const size_t n = strnlen(s.data(), s.size());
  data_.insert(data_.end(), s.data(), s.data() + n);
  data_.push_back(0);
}

void BufferEncoder::put_backtrace(const std::vector<uint64_t>& frames) {
  put_uleb(frames.size());
  for (uint64_t m : frames) put_method(m);
}

void BufferEncoder::put_counter_value(const CounterValue& v) {
  put_uleb(v.index);
  put_uleb(v.type);
  switch (v.type) {
    case COUNTER_INT:
    case COUNTER_WORD:
    case COUNTER_LONG:
    case COUNTER_TIME_INTERVAL:
      put_sleb(static_cast<int64_t>(v.bits));
      break;
    case COUNTER_UINT:
    case COUNTER_ULONG:
      put_uleb(v.bits);
      break;
    case COUNTER_DOUBLE:
      for (unsigned i = 0; i < 8; ++i) put_byte(static_cast<uint8_t>(v.bits >> (8 * i)));
      break;
    case COUNTER_STRING:
      put_byte(v.is_null ? 0 : 1);
      if (!v.is_null) put_string(v.str);
      break;
    default:
      break;  // unknown type: nothing a reader could decode follows
  }
}

// Generated from the layout table (event_layout.h); the list encodings are written out here.
void BufferEncoder::add(const Event& e) {
  using layout::Cond;
  using layout::Enc;
  auto field = [&]<Enc E, Cond C, class T>(const T& v) {
    if constexpr (C == Cond::if_backtrace) {
      if (!e.has_backtrace) return;
    } else if constexpr (C == Cond::if_trampoline) {
      if (e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE) return;
    }
    if constexpr (E == Enc::byte) {
      put_byte(v);
    } else if constexpr (E == Enc::uleb) {
      put_uleb(v);
    } else if constexpr (E == Enc::ptr) {
      put_ptr(v);
    } else if constexpr (E == Enc::obj) {
      put_obj(v);
    } else if constexpr (E == Enc::method) {
      put_method(v);
    } else if constexpr (E == Enc::string) {
      put_string(v);
    } else if constexpr (E == Enc::backtrace || E == Enc::method_list) {
      put_backtrace(v);
    } else if constexpr (E == Enc::obj_pairs) {
      put_uleb(v.size());
      for (uint64_t o : v) put_obj(o);
    } else if constexpr (E == Enc::ptr_list) {
      put_uleb(v.size());
      for (uint64_t p : v) put_ptr(p);
    } else if constexpr (E == Enc::heap_refs) {
      put_uleb(v.size());
      uint64_t last_offset = 0;
      for (const HeapRef& r : v) {
        put_uleb(r.offset - last_offset);
        last_offset = r.offset;
        put_obj(r.obj);
      }
    } else if constexpr (E == Enc::roots) {
      put_uleb(v.size());
      for (const RootRef& r : v) {
        put_ptr(r.address);
        put_obj(r.obj);
      }
    } else if constexpr (E == Enc::counter_descs) {
      put_uleb(v.size());
      for (const CounterDesc& d : v) {
        put_uleb(d.section);
        if (d.section == COUNTER_SECTION_PERFCOUNTERS) put_string(d.section_name);
        put_string(d.name);
        put_uleb(d.type);
        put_uleb(d.unit);
        put_uleb(d.variance);
        put_uleb(d.index);
      }
    } else if constexpr (E == Enc::counter_values) {
      for (const CounterValue& c : v) put_counter_value(c);
      put_uleb(0);  // terminator
    } else {
      static_assert(E == Enc::byte, "an encoding without an encoder");
    }
  };
  auto start = [&](uint8_t event_byte) {
    put_byte(event_byte);
    put_time(e.time);
  };
#define MLPD_ENCODE_FIELD(enc, member, name, cond, check) field.template operator()<Enc::enc, Cond::cond>(e.member);
#define MLPD_ENCODE_EV(kind, eb, fields) \
  case EventKind::kind:                  \
    start(eb);                           \
    fields break;
#define MLPD_ENCODE_BT(kind, eb, bt, fields) \
  case EventKind::kind:                      \
    start(e.has_backtrace ? (bt) : (eb));    \
    fields break;
#define MLPD_ENCODE_MD(kind, ext, mtype, fields) \
  case EventKind::kind:                          \
    start(TYPE_METADATA | (ext));                \
    put_byte(mtype);                             \
    fields break;
  switch (e.kind) { MLPD_EVENT_LAYOUTS(MLPD_ENCODE_EV, MLPD_ENCODE_BT, MLPD_ENCODE_MD, MLPD_ENCODE_FIELD) }
#undef MLPD_ENCODE_EV
#undef MLPD_ENCODE_BT
#undef MLPD_ENCODE_MD
#undef MLPD_ENCODE_FIELD
}

}  // namespace mlpd
