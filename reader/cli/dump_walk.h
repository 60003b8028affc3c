// Walk<F>: `mlpd dump`'s event walk, the same for every format F (dump_format.h): which fields each
// event kind has, in which order, and which names they carry. A BufferFormatter, instantiated once
// per format (dump_text.cpp, dump_json.cpp), so that every field call is direct and inlined.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "dump_format.h"
#include "mlpd/enum_names.h"

namespace mlpd::cli {

template <class F>
class Walk final : public BufferFormatter {
 public:
  Walk(OutBuffer& out, Names& names) : out_(out), names_(names), f_(out, names) {}

  void header(const FileHeader& h) override { f_.header(h); }
  void buffer(const BufferInfo& b, int64_t rel_ns) override { f_.buffer(b, rel_ns); }
  void problem(const Problem& p) override { f_.problem(p); }

  void events(const BufferInfo& b, const uint8_t* data, uint64_t start_ns, const RunOptions& o,
              RunResult& r) override {
    BufferDecoder dec(b.header, data, b.offset + format::kBufferHeaderSize);
    EventInfo ei;
    ei.buffer = &b;
    r.message.clear();
    r.observed = false;
    uint64_t n = 0;
    if (o.driver) {  // in file order
      while (dec.next(event_, r.message, ei.offset)) {
        if (++n > o.skip) {
          if (needs_file_order(event_.kind)) {
            names_.observe(event_);  // first, so that an event's own description names it on its line
            f_.names_changed();
            r.observed = true;
          }
          event(event_, ei, start_ns);
        }
        if ((n & 4095) == 0 && o.driver->over_budget(ei.offset)) [[unlikely]] {
          r.stop = RunResult::kBudget;
          r.events = n;
          return;
        }
      }
    } else {  // ahead of the reader, with the names as they are
      if (o.names_version != names_version_) {
        names_version_ = o.names_version;
        f_.names_changed();
      }
      while (dec.next(event_, r.message, ei.offset)) {
        if (needs_file_order(event_.kind)) [[unlikely]] {
          r.stop = RunResult::kFileOrder;
          r.events = n;
          return;
        }
        out_.mark();
        event(event_, ei, start_ns);
        if (out_.overflowed()) [[unlikely]] {
          out_.rewind_to_mark();
          r.stop = RunResult::kFull;
          r.events = n;
          return;
        }
        ++n;
      }
    }
    r.stop = RunResult::kEnd;
    r.events = n;
    r.problem_offset = dec.problem_offset();
  }

 private:
  void event(const Event& e, const EventInfo& info, uint64_t start_ns) {
    F& f = f_;
    const auto rel = static_cast<int64_t>(e.time - start_ns);
    if (e.kind <= EventKind::method_exc_leave && e.kind >= EventKind::method_enter && f.method_line(e, info, rel)) return;
    f.begin(e, info, rel);
    switch (e.kind) {
      case EventKind::alloc:
        vtable(f, e.ptr);
        f.ref("obj", e.obj, nullptr, {});
        f.num("size", e.size);
        backtrace(f, e);
        break;
      case EventKind::gc_event:
        f.enum_field("event", gc_event_name(e.code), e.code);
        f.num("generation", e.generation);
        break;
      case EventKind::gc_resize:
        f.num("size", e.size);
        break;
      case EventKind::gc_move:
        f.moves(e.objects);
        break;
      case EventKind::gc_handle_created:
      case EventKind::gc_handle_destroyed:
        f.enum_field("handle_type", handle_type_name(e.handle_type), e.handle_type);
        f.num("handle", e.handle);
        if (e.kind == EventKind::gc_handle_created) f.ref("obj", e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::gc_finalize_start:
      case EventKind::gc_finalize_end:
      case EventKind::heap_start:
      case EventKind::heap_end:
        break;
      case EventKind::gc_finalize_object_start:
      case EventKind::gc_finalize_object_end:
        f.ref("obj", e.obj, nullptr, {});
        break;
      case EventKind::class_load:
        f.ref("class", e.ptr, &e.name, "name");
        f.ref("image", e.ptr2, names_.image_name(e.ptr2), "image_name");
        break;
      case EventKind::image_load:
        f.ref("image", e.ptr, &e.name, "name");
        f.str("mvid", e.mvid);
        break;
      case EventKind::image_unload:
        f.ref("image", e.ptr, &e.name, "name");
        break;
      case EventKind::assembly_load:
      case EventKind::assembly_unload:
        f.ref("image", e.ptr2, names_.image_name(e.ptr2), "image_name");
        f.ref("assembly", e.ptr, &e.name, "name");
        break;
      case EventKind::domain_load:
      case EventKind::domain_unload:
        f.ref("domain", e.ptr, names_.domain_name(e.ptr), "domain_name");
        break;
      case EventKind::domain_name:
        f.ref("domain", e.ptr, &e.name, "name");
        break;
      case EventKind::context_load:
      case EventKind::context_unload:
        f.ref("context", e.ptr, nullptr, {});
        f.ref("domain", e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        break;
      case EventKind::thread_start:
      case EventKind::thread_end:
        f.ref("tid", e.ptr, names_.thread_name(e.ptr), "tid_name");
        break;
      case EventKind::thread_name:
        f.ref("tid", e.ptr, &e.name, "name");
        break;
      case EventKind::vtable_load:
        f.ref("domain", e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        f.ref("vtable", e.ptr, nullptr, {});
        f.ref("class", e.ptr3, names_.class_name(e.ptr3), "class_name");
        break;
      case EventKind::method_enter:
      case EventKind::method_leave:
      case EventKind::method_exc_leave:
        f.method_ref("method", e.method, "method_name");
        break;
      case EventKind::method_jit:
        f.ref("code", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.ref("method", e.method, &e.name, "name");
        break;
      case EventKind::exception_throw:
        f.ref("obj", e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::exception_clause:
        f.enum_field("clause", clause_name(e.code), e.code);
        f.num("index", e.index);
        f.ref("obj", e.obj, nullptr, {});
        f.method_ref("method", e.method, "method_name");
        break;
      case EventKind::monitor:
        f.enum_field("event", monitor_event_name(e.code), e.code);
        f.ref("obj", e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::heap_object:
        f.ref("obj", e.obj, nullptr, {});
        vtable(f, e.ptr);
        f.num("size", e.size);
        f.num("generation", e.generation);
        f.heap_refs(e.refs);
        break;
      case EventKind::heap_root:
        f.roots(e.roots);
        break;
      case EventKind::heap_root_register:
        f.ref("start", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.enum_field("source", root_source_name(e.code), e.code);
        f.ref("key", e.ptr2, nullptr, {});
        f.str("name", e.name);
        break;
      case EventKind::heap_root_unregister:
        f.ref("start", e.ptr, nullptr, {});
        break;
      case EventKind::sample_hit:
        f.ref("tid", e.ptr, names_.thread_name(e.ptr), "tid_name");
        f.ips(e.ips);
        f.methods("frames", e.frames);
        break;
      case EventKind::sample_usym:
        f.ref("address", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.str("name", e.name);
        break;
      case EventKind::counter_descriptors:
        f.counter_descs(e.counter_descs);
        break;
      case EventKind::counter_samples:
        f.counter_values(e.counter_values);
        break;
      case EventKind::jit_helper:
        f.enum_field("type", code_buffer_name(e.code), e.code);
        f.ref("address", e.ptr, nullptr, {});
        f.num("size", e.size);
        if (e.code == format::CODE_BUFFER_SPECIFIC_TRAMPOLINE) f.str("name", e.name);
        break;
      case EventKind::sync_point:
        f.enum_field("type", sync_point_name(e.code), e.code);
        break;
      case EventKind::aot_id:
        f.str("id", e.name);
        break;
    }
    f.end(info);
  }

  // A vtable with the name of its class; JSON also gets the class pointer once it is known.
  static void vtable(F& f, uint64_t v) { f.vtable(v); }

  static void backtrace(F& f, const Event& e) {
    if (e.has_backtrace) f.methods("backtrace", e.backtrace);
  }

  OutBuffer& out_;
  Names& names_;
  F f_;
  Event event_;
  uint64_t names_version_ = 0;
};

}  // namespace mlpd::cli
