#include "mlpd/encoder.h"

#include <cstring>

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

void BufferEncoder::add(const Event& e) {
  auto start = [&](uint8_t event_byte) {
    put_byte(event_byte);
    put_time(e.time);
  };
  auto metadata = [&](uint8_t ext, uint8_t mtype) {
    start(TYPE_METADATA | ext);
    put_byte(mtype);
    put_ptr(e.ptr);
  };
  switch (e.kind) {
    case EventKind::alloc:
      start(TYPE_ALLOC | (e.has_backtrace ? TYPE_ALLOC_BT : TYPE_ALLOC_NO_BT));
      put_ptr(e.ptr);
      put_obj(e.obj);
      put_uleb(e.size);
      if (e.has_backtrace) put_backtrace(e.backtrace);
      break;
    case EventKind::gc_event:
      start(TYPE_GC | TYPE_GC_EVENT);
      put_byte(e.code);
      put_byte(e.generation);
      break;
    case EventKind::gc_resize:
      start(TYPE_GC | TYPE_GC_RESIZE);
      put_uleb(e.size);
      break;
    case EventKind::gc_move:
      start(TYPE_GC | TYPE_GC_MOVE);
      put_uleb(e.objects.size());
      for (uint64_t o : e.objects) put_obj(o);
      break;
    case EventKind::gc_handle_created:
      start(TYPE_GC | (e.has_backtrace ? TYPE_GC_HANDLE_CREATED_BT : TYPE_GC_HANDLE_CREATED));
      put_uleb(e.handle_type);
      put_uleb(e.handle);
      put_obj(e.obj);
      if (e.has_backtrace) put_backtrace(e.backtrace);
      break;
    case EventKind::gc_handle_destroyed:
      start(TYPE_GC | (e.has_backtrace ? TYPE_GC_HANDLE_DESTROYED_BT : TYPE_GC_HANDLE_DESTROYED));
      put_uleb(e.handle_type);
      put_uleb(e.handle);
      if (e.has_backtrace) put_backtrace(e.backtrace);
      break;
    case EventKind::gc_finalize_start:
      start(TYPE_GC | TYPE_GC_FINALIZE_START);
      break;
    case EventKind::gc_finalize_end:
      start(TYPE_GC | TYPE_GC_FINALIZE_END);
      break;
    case EventKind::gc_finalize_object_start:
      start(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START);
      put_obj(e.obj);
      break;
    case EventKind::gc_finalize_object_end:
      start(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_END);
      put_obj(e.obj);
      break;
    case EventKind::class_load:
      metadata(TYPE_END_LOAD, TYPE_CLASS);
      put_ptr(e.ptr2);
      put_string(e.name);
      break;
    case EventKind::image_load:
      metadata(TYPE_END_LOAD, TYPE_IMAGE);
      put_string(e.name);
      put_string(e.mvid);
      break;
    case EventKind::image_unload:
      metadata(TYPE_END_UNLOAD, TYPE_IMAGE);
      put_string(e.name);
      break;
    case EventKind::assembly_load:
    case EventKind::assembly_unload:
      metadata(e.kind == EventKind::assembly_load ? TYPE_END_LOAD : TYPE_END_UNLOAD, TYPE_ASSEMBLY);
      put_ptr(e.ptr2);
      put_string(e.name);
      break;
    case EventKind::domain_load:
      metadata(TYPE_END_LOAD, TYPE_DOMAIN);
      break;
    case EventKind::domain_unload:
      metadata(TYPE_END_UNLOAD, TYPE_DOMAIN);
      break;
    case EventKind::domain_name:
      metadata(TYPE_METADATA_NAME, TYPE_DOMAIN);
      put_string(e.name);
      break;
    case EventKind::context_load:
    case EventKind::context_unload:
      metadata(e.kind == EventKind::context_load ? TYPE_END_LOAD : TYPE_END_UNLOAD, TYPE_CONTEXT);
      put_ptr(e.ptr2);
      break;
    case EventKind::thread_start:
      metadata(TYPE_END_LOAD, TYPE_THREAD);
      break;
    case EventKind::thread_end:
      metadata(TYPE_END_UNLOAD, TYPE_THREAD);
      break;
    case EventKind::thread_name:
      metadata(TYPE_METADATA_NAME, TYPE_THREAD);
      put_string(e.name);
      break;
    case EventKind::vtable_load:
      metadata(TYPE_END_LOAD, TYPE_VTABLE);
      put_ptr(e.ptr2);
      put_ptr(e.ptr3);
      break;
    case EventKind::method_enter:
      start(TYPE_METHOD | TYPE_ENTER);
      put_method(e.method);
      break;
    case EventKind::method_leave:
      start(TYPE_METHOD | TYPE_LEAVE);
      put_method(e.method);
      break;
    case EventKind::method_exc_leave:
      start(TYPE_METHOD | TYPE_EXC_LEAVE);
      put_method(e.method);
      break;
    case EventKind::method_jit:
      start(TYPE_METHOD | TYPE_JIT);
      put_method(e.method);
      put_ptr(e.ptr);
      put_uleb(e.size);
      put_string(e.name);
      break;
    case EventKind::exception_throw:
      start(TYPE_EXCEPTION | (e.has_backtrace ? TYPE_THROW_BT : TYPE_THROW_NO_BT));
      put_obj(e.obj);
      if (e.has_backtrace) put_backtrace(e.backtrace);
      break;
    case EventKind::exception_clause:
      start(TYPE_EXCEPTION | TYPE_CLAUSE);
      put_byte(e.code);
      put_uleb(e.index);
      put_method(e.method);
      put_obj(e.obj);
      break;
    case EventKind::monitor:
      start(TYPE_MONITOR | (e.has_backtrace ? TYPE_MONITOR_BT : TYPE_MONITOR_NO_BT));
      put_byte(e.code);
      put_obj(e.obj);
      if (e.has_backtrace) put_backtrace(e.backtrace);
      break;
    case EventKind::heap_start:
      start(TYPE_HEAP | TYPE_HEAP_START);
      break;
    case EventKind::heap_end:
      start(TYPE_HEAP | TYPE_HEAP_END);
      break;
    case EventKind::heap_object: {
      start(TYPE_HEAP | TYPE_HEAP_OBJECT);
      put_obj(e.obj);
      put_ptr(e.ptr);
      put_uleb(e.size);
      put_byte(e.generation);
      put_uleb(e.refs.size());
      uint64_t last_offset = 0;
      for (const HeapRef& r : e.refs) {
        put_uleb(r.offset - last_offset);
        last_offset = r.offset;
        put_obj(r.obj);
      }
      break;
    }
    case EventKind::heap_root:
      start(TYPE_HEAP | TYPE_HEAP_ROOT);
      put_uleb(e.roots.size());
      for (const RootRef& r : e.roots) {
        put_ptr(r.address);
        put_obj(r.obj);
      }
      break;
    case EventKind::heap_root_register:
      start(TYPE_HEAP | TYPE_HEAP_ROOT_REGISTER);
      put_ptr(e.ptr);
      put_uleb(e.size);
      put_byte(e.code);
      put_ptr(e.ptr2);
      put_string(e.name);
      break;
    case EventKind::heap_root_unregister:
      start(TYPE_HEAP | TYPE_HEAP_ROOT_UNREGISTER);
      put_ptr(e.ptr);
      break;
    case EventKind::sample_hit:
      start(TYPE_SAMPLE | TYPE_SAMPLE_HIT);
      put_ptr(e.ptr);
      put_uleb(e.ips.size());
      for (uint64_t ip : e.ips) put_ptr(ip);
      put_uleb(e.frames.size());
      for (uint64_t m : e.frames) put_method(m);
      break;
    case EventKind::sample_usym:
      start(TYPE_SAMPLE | TYPE_SAMPLE_USYM);
      put_ptr(e.ptr);
      put_uleb(e.size);
      put_string(e.name);
      break;
    case EventKind::counter_descriptors:
      start(TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS_DESC);
      put_uleb(e.counter_descs.size());
      for (const CounterDesc& d : e.counter_descs) {
        put_uleb(d.section);
        if (d.section == COUNTER_SECTION_PERFCOUNTERS) put_string(d.section_name);
        put_string(d.name);
        put_uleb(d.type);
        put_uleb(d.unit);
        put_uleb(d.variance);
        put_uleb(d.index);
      }
      break;
    case EventKind::counter_samples:
      start(TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS);
      for (const CounterValue& v : e.counter_values) put_counter_value(v);
      put_uleb(0);  // terminator
      break;
    case EventKind::jit_helper:
      start(TYPE_RUNTIME | TYPE_JITHELPER);
      put_byte(e.code);
      put_ptr(e.ptr);
      put_uleb(e.size);
      if (e.code == CODE_BUFFER_SPECIFIC_TRAMPOLINE) put_string(e.name);
      break;
    case EventKind::sync_point:
      start(TYPE_META | TYPE_SYNC_POINT);
      put_byte(e.code);
      break;
    case EventKind::aot_id:
      start(TYPE_META | TYPE_AOT_ID);
      put_string(e.name);
      break;
  }
}

}  // namespace mlpd
