// BufferDecoder: the events of one buffer, validated as they are decoded (see buffer_decoder.h).
#include "mlpd/buffer_decoder.h"

#include <bit>
#include <cstdio>
#include <cstring>

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

bool BufferDecoder::event_body(uint8_t eb, Event& e) {
  const uint8_t type = event_type(eb);
  const uint8_t ext = event_ext(eb);
  auto kind_is = [&](EventKind k) {
    start_event(e, k);
    return time(e.time);
  };
  auto unknown_ext = [&]() {
    problem_offset_ = position() - 1;
    problem_ = "unknown event subtype";
    return false;
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
  auto last_byte = [&]() { return position() - 1; };  // offset of a one-byte field just read

  switch (type) {
    case TYPE_ALLOC: {
      if (ext != TYPE_ALLOC_NO_BT && ext != TYPE_ALLOC_BT) return unknown_ext();
      if (!kind_is(EventKind::alloc)) return false;
      e.has_backtrace = ext == TYPE_ALLOC_BT;
      return ptr(e.ptr) && obj(e.obj) && uleb(e.size) && (!e.has_backtrace || backtrace(e.backtrace));
    }
    case TYPE_GC: {
      switch (ext) {
        case TYPE_GC_EVENT: {
          if (!kind_is(EventKind::gc_event) || !byte(e.code)) return false;
          if (!is_valid_gc_event(e.code)) return bad_value("unknown GC event", e.code, last_byte());
          return byte(e.generation);
        }
        case TYPE_GC_RESIZE:
          return kind_is(EventKind::gc_resize) && uleb(e.size);
        case TYPE_GC_MOVE: {
          uint64_t n = 0;
          if (!kind_is(EventKind::gc_move)) return false;
          const uint64_t at = position();
          if (!count(n, 1)) return false;
          if (n % 2) return bad_value("odd number of addresses in GC move", n, at);
          lists_used_ = true;
          e.objects.resize(n);
          for (uint64_t i = 0; i < n; ++i)
            if (!obj(e.objects[i])) return false;
          return true;
        }
        case TYPE_GC_HANDLE_CREATED:
        case TYPE_GC_HANDLE_CREATED_BT:
        case TYPE_GC_HANDLE_DESTROYED:
        case TYPE_GC_HANDLE_DESTROYED_BT: {
          const bool created = ext == TYPE_GC_HANDLE_CREATED || ext == TYPE_GC_HANDLE_CREATED_BT;
          if (!kind_is(created ? EventKind::gc_handle_created : EventKind::gc_handle_destroyed)) return false;
          e.has_backtrace = ext == TYPE_GC_HANDLE_CREATED_BT || ext == TYPE_GC_HANDLE_DESTROYED_BT;
          const uint64_t at = position();
          if (!uleb(e.handle_type)) return false;
          if (e.handle_type > kMaxGcHandleType) return bad_value("unknown GC handle type", e.handle_type, at);
          if (!uleb(e.handle)) return false;
          if (created && !obj(e.obj)) return false;
          return !e.has_backtrace || backtrace(e.backtrace);
        }
        case TYPE_GC_FINALIZE_START:
          return kind_is(EventKind::gc_finalize_start);
        case TYPE_GC_FINALIZE_END:
          return kind_is(EventKind::gc_finalize_end);
        case TYPE_GC_FINALIZE_OBJECT_START:
          return kind_is(EventKind::gc_finalize_object_start) && obj(e.obj);
        case TYPE_GC_FINALIZE_OBJECT_END:
          return kind_is(EventKind::gc_finalize_object_end) && obj(e.obj);
        default:
          return unknown_ext();
      }
    }
    case TYPE_METADATA: {
      if (ext != TYPE_METADATA_NAME && ext != TYPE_END_LOAD && ext != TYPE_END_UNLOAD) return unknown_ext();
      // The kind depends on the metadata type byte, which follows the time: decode time first.
      e.reset(EventKind::class_load);
      lists_used_ = false;
      uint64_t t = 0;
      uint8_t mtype = 0;
      if (!time(t) || !byte(mtype)) return false;
      const uint64_t mtype_at = last_byte();
      const bool load = ext == TYPE_END_LOAD, unload = ext == TYPE_END_UNLOAD;
      EventKind k;
      switch (mtype) {
        case TYPE_CLASS:
          if (!load) return bad_value("class metadata event with unsupported subtype", ext >> 4, mtype_at);
          k = EventKind::class_load;
          break;
        case TYPE_IMAGE:
          if (!load && !unload) return bad_value("image metadata event with unsupported subtype", ext >> 4, mtype_at);
          k = load ? EventKind::image_load : EventKind::image_unload;
          break;
        case TYPE_ASSEMBLY:
          if (!load && !unload) return bad_value("assembly metadata event with unsupported subtype", ext >> 4, mtype_at);
          k = load ? EventKind::assembly_load : EventKind::assembly_unload;
          break;
        case TYPE_DOMAIN:
          k = load ? EventKind::domain_load : unload ? EventKind::domain_unload : EventKind::domain_name;
          break;
        case TYPE_THREAD:
          k = load ? EventKind::thread_start : unload ? EventKind::thread_end : EventKind::thread_name;
          break;
        case TYPE_CONTEXT:
          if (!load && !unload) return bad_value("context metadata event with unsupported subtype", ext >> 4, mtype_at);
          k = load ? EventKind::context_load : EventKind::context_unload;
          break;
        case TYPE_VTABLE:
          if (!load) return bad_value("vtable metadata event with unsupported subtype", ext >> 4, mtype_at);
          k = EventKind::vtable_load;
          break;
        default:
          return bad_value("unknown metadata type", mtype, mtype_at);
      }
      e.kind = k;
      e.time = t;
      if (!ptr(e.ptr)) return false;
      switch (k) {
        case EventKind::class_load:
        case EventKind::assembly_load:
        case EventKind::assembly_unload:
          return ptr(e.ptr2) && string(e.name);
        case EventKind::image_load:
          return string(e.name) && string(e.mvid);
        case EventKind::image_unload:
        case EventKind::domain_name:
        case EventKind::thread_name:
          return string(e.name);
        case EventKind::context_load:
        case EventKind::context_unload:
          return ptr(e.ptr2);
        case EventKind::vtable_load:
          return ptr(e.ptr2) && ptr(e.ptr3);
        default:
          return true;  // domain and thread load/unload carry nothing more
      }
    }
    case TYPE_METHOD: {
      switch (ext) {
        case TYPE_ENTER:
          return kind_is(EventKind::method_enter) && method(e.method);
        case TYPE_LEAVE:
          return kind_is(EventKind::method_leave) && method(e.method);
        case TYPE_EXC_LEAVE:
          return kind_is(EventKind::method_exc_leave) && method(e.method);
        case TYPE_JIT:
          return kind_is(EventKind::method_jit) && method(e.method) && ptr(e.ptr) && uleb(e.size) &&
                 string(e.name);
        default:
          return unknown_ext();
      }
    }
    case TYPE_EXCEPTION: {
      if (ext == TYPE_CLAUSE) {
        if (!kind_is(EventKind::exception_clause) || !byte(e.code)) return false;
        if (!is_valid_clause_type(e.code)) return bad_value("unknown clause type", e.code, last_byte());
        return uleb(e.index) && method(e.method) && obj(e.obj);
      }
      if (ext != TYPE_THROW_NO_BT && ext != TYPE_THROW_BT) return unknown_ext();
      if (!kind_is(EventKind::exception_throw)) return false;
      e.has_backtrace = ext == TYPE_THROW_BT;
      return obj(e.obj) && (!e.has_backtrace || backtrace(e.backtrace));
    }
    case TYPE_MONITOR: {
      if (ext != TYPE_MONITOR_NO_BT && ext != TYPE_MONITOR_BT) return unknown_ext();
      if (!kind_is(EventKind::monitor) || !byte(e.code)) return false;
      if (e.code < MONITOR_CONTENTION || e.code > MONITOR_FAIL) return bad_value("unknown monitor event", e.code, last_byte());
      e.has_backtrace = ext == TYPE_MONITOR_BT;
      return obj(e.obj) && (!e.has_backtrace || backtrace(e.backtrace));
    }
    case TYPE_HEAP: {
      switch (ext) {
        case TYPE_HEAP_START:
          return kind_is(EventKind::heap_start);
        case TYPE_HEAP_END:
          return kind_is(EventKind::heap_end);
        case TYPE_HEAP_OBJECT: {
          uint64_t n = 0;
          if (!kind_is(EventKind::heap_object) || !obj(e.obj) || !ptr(e.ptr) || !uleb(e.size) ||
              !byte(e.generation) || !count(n, 2))
            return false;
          if (!keep_heap_refs_) {  // read and validated, not kept: e.refs stays empty
            for (uint64_t i = 0; i < n; ++i) {
              uint64_t d = 0, o = 0;
              if (!uleb(d) || !obj(o)) return false;
            }
            return true;
          }
          lists_used_ = true;
          e.refs.resize(n);
          uint64_t offset = 0;
          for (HeapRef& r : e.refs) {
            uint64_t d = 0;
            if (!uleb(d) || !obj(r.obj)) return false;
            offset += d;
            r.offset = offset;
          }
          return true;
        }
        case TYPE_HEAP_ROOT: {
          uint64_t n = 0;
          if (!kind_is(EventKind::heap_root) || !count(n, 2)) return false;
          lists_used_ = true;
          e.roots.resize(n);
          for (RootRef& r : e.roots)
            if (!ptr(r.address) || !obj(r.obj)) return false;
          return true;
        }
        case TYPE_HEAP_ROOT_REGISTER:
          if (!kind_is(EventKind::heap_root_register) || !ptr(e.ptr) || !uleb(e.size) || !byte(e.code)) return false;
          if (e.code > kMaxRootSource) return bad_value("unknown GC root source", e.code, last_byte());
          return ptr(e.ptr2) && string(e.name);
        case TYPE_HEAP_ROOT_UNREGISTER:
          return kind_is(EventKind::heap_root_unregister) && ptr(e.ptr);
        default:
          return unknown_ext();
      }
    }
    case TYPE_SAMPLE: {
      switch (ext) {
        case TYPE_SAMPLE_HIT: {
          uint64_t n = 0;
          if (!kind_is(EventKind::sample_hit) || !ptr(e.ptr) || !count(n, 1)) return false;
          lists_used_ = true;
          e.ips.resize(n);
          for (uint64_t& ip : e.ips)
            if (!ptr(ip)) return false;
          if (!count(n, 1)) return false;
          lists_used_ = true;
          e.frames.resize(n);
          for (uint64_t& m : e.frames)
            if (!method(m)) return false;
          return true;
        }
        case TYPE_SAMPLE_USYM:
          return kind_is(EventKind::sample_usym) && ptr(e.ptr) && uleb(e.size) && string(e.name);
        case TYPE_SAMPLE_COUNTERS_DESC: {
          uint64_t n = 0;
          if (!kind_is(EventKind::counter_descriptors) || !count(n, 6)) return false;
          lists_used_ = true;
          e.counter_descs.resize(n);
          for (CounterDesc& d : e.counter_descs) {
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
        }
        case TYPE_SAMPLE_COUNTERS: {
          if (!kind_is(EventKind::counter_samples)) return false;
          for (;;) {
            uint64_t index = 0;
            if (!uleb(index)) return false;
            if (index == 0) return true;
            // Each value takes at least 2 bytes (type + value), so the loop ends with the buffer.
            if (e.counter_values.size() >= kMaxItems) return fail("more counter values than the reader's limit");
            lists_used_ = true;
            CounterValue& v = e.counter_values.emplace_back();
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
                if (present > 1) return bad_value("invalid string counter marker", present, last_byte());
                v.is_null = present == 0;
                if (present && !string(v.str)) return false;
                break;
              }
              default:
                return bad_value("unknown counter type", v.type, type_at);
            }
          }
        }
        default:
          return unknown_ext();
      }
    }
    case TYPE_RUNTIME: {
      if (ext != TYPE_JITHELPER) return unknown_ext();
      if (!kind_is(EventKind::jit_helper) || !byte(e.code)) return false;
      if (e.code > kMaxCodeBufferType) return bad_value("unknown code buffer type", e.code, last_byte());
      if (!ptr(e.ptr) || !uleb(e.size)) return false;
      return e.code != CODE_BUFFER_SPECIFIC_TRAMPOLINE || string(e.name);
    }
    case TYPE_META: {
      if (ext == TYPE_SYNC_POINT) {
        if (!kind_is(EventKind::sync_point) || !byte(e.code)) return false;
        if (e.code > SYNC_POINT_WORLD_START) return bad_value("unknown sync point type", e.code, last_byte());
        return true;
      }
      if (ext == TYPE_AOT_ID) return kind_is(EventKind::aot_id) && string(e.name);
      return unknown_ext();
    }
    default:
      problem_offset_ = position() - 1;
      problem_ = "unknown event type";
      return false;
  }
}

}  // namespace mlpd
