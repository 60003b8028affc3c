// Walk<F>: `mlpd dump`'s event walk, the same for every format F (dump_format.h): which fields each
// event kind has, in which order, and which names they carry. A BufferFormatter, instantiated once
// per format (dump_text.cpp, dump_json.cpp), so that every field call is direct and inlined.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "dump_format.h"
#include "mlpd/enum_names.h"
#include "mlpd/event_layout.h"

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
  // Every field's name is the layout table's (mlpd/event_layout.h): N(kind, member) does not compile
  // for a field the kind does not have. The formatters spell a few keys themselves (method, vtable
  // and the lists): those are checked against the table here.
#define N(kind, member) layout::field_name<EventKind::kind, layout::Member::member>
  static_assert(N(alloc, ptr) == "vtable" && N(heap_object, ptr) == "vtable");
  static_assert(N(method_enter, method) == "method" && N(method_leave, method) == "method" &&
                N(method_exc_leave, method) == "method" && N(exception_clause, method) == "method");
  static_assert(N(gc_move, objects) == "moves" && N(heap_object, refs) == "refs" && N(heap_root, roots) == "roots" &&
                N(sample_hit, ips) == "ips" && N(counter_descriptors, counter_descs) == "counters" &&
                N(counter_samples, counter_values) == "values");
  static_assert(N(alloc, backtrace) == "backtrace" && N(gc_handle_created, backtrace) == "backtrace" &&
                N(gc_handle_destroyed, backtrace) == "backtrace" && N(exception_throw, backtrace) == "backtrace" &&
                N(monitor, backtrace) == "backtrace");
  // Kinds that share a case below have the same names.
  static_assert(N(gc_handle_created, handle_type) == N(gc_handle_destroyed, handle_type) &&
                N(gc_handle_created, handle) == N(gc_handle_destroyed, handle));
  static_assert(N(gc_finalize_object_start, obj) == N(gc_finalize_object_end, obj));
  static_assert(N(assembly_load, ptr) == N(assembly_unload, ptr) && N(assembly_load, ptr2) == N(assembly_unload, ptr2) &&
                N(assembly_load, name) == N(assembly_unload, name));
  static_assert(N(domain_load, ptr) == N(domain_unload, ptr));
  static_assert(N(context_load, ptr) == N(context_unload, ptr) && N(context_load, ptr2) == N(context_unload, ptr2));
  static_assert(N(thread_start, ptr) == N(thread_end, ptr));

  void event(const Event& e, const EventInfo& info, uint64_t start_ns) {
    F& f = f_;
    const auto rel = static_cast<int64_t>(e.time - start_ns);
    if (e.kind <= EventKind::method_exc_leave && e.kind >= EventKind::method_enter && f.method_line(e, info, rel)) return;
    f.begin(e, info, rel);
    switch (e.kind) {
      case EventKind::alloc:
        vtable(f, e.ptr);
        f.ref(N(alloc, obj), e.obj, nullptr, {});
        f.num(N(alloc, size), e.size);
        backtrace(f, e);
        break;
      case EventKind::gc_event:
        f.enum_field(N(gc_event, code), gc_event_name(e.code), e.code);
        f.num(N(gc_event, generation), e.generation);
        break;
      case EventKind::gc_resize:
        f.num(N(gc_resize, size), e.size);
        break;
      case EventKind::gc_move:
        f.moves(e.objects);
        break;
      case EventKind::gc_handle_created:
      case EventKind::gc_handle_destroyed:
        f.enum_field(N(gc_handle_created, handle_type), handle_type_name(e.handle_type), e.handle_type);
        f.num(N(gc_handle_created, handle), e.handle);
        if (e.kind == EventKind::gc_handle_created) f.ref(N(gc_handle_created, obj), e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::gc_finalize_start:
      case EventKind::gc_finalize_end:
      case EventKind::heap_start:
      case EventKind::heap_end:
        break;
      case EventKind::gc_finalize_object_start:
      case EventKind::gc_finalize_object_end:
        f.ref(N(gc_finalize_object_start, obj), e.obj, nullptr, {});
        break;
      case EventKind::class_load:
        f.ref(N(class_load, ptr), e.ptr, &e.name, N(class_load, name));
        f.ref(N(class_load, ptr2), e.ptr2, names_.image_name(e.ptr2), "image_name");
        break;
      case EventKind::image_load:
        f.ref(N(image_load, ptr), e.ptr, &e.name, N(image_load, name));
        f.str(N(image_load, mvid), e.mvid);
        break;
      case EventKind::image_unload:
        f.ref(N(image_unload, ptr), e.ptr, &e.name, N(image_unload, name));
        break;
      case EventKind::assembly_load:
      case EventKind::assembly_unload:
        f.ref(N(assembly_load, ptr2), e.ptr2, names_.image_name(e.ptr2), "image_name");
        f.ref(N(assembly_load, ptr), e.ptr, &e.name, N(assembly_load, name));
        break;
      case EventKind::domain_load:
      case EventKind::domain_unload:
        f.ref(N(domain_load, ptr), e.ptr, names_.domain_name(e.ptr), "domain_name");
        break;
      case EventKind::domain_name:
        f.ref(N(domain_name, ptr), e.ptr, &e.name, N(domain_name, name));
        break;
      case EventKind::context_load:
      case EventKind::context_unload:
        f.ref(N(context_load, ptr), e.ptr, nullptr, {});
        f.ref(N(context_load, ptr2), e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        break;
      case EventKind::thread_start:
      case EventKind::thread_end:
        f.ref(N(thread_start, ptr), e.ptr, names_.thread_name(e.ptr), "tid_name");
        break;
      case EventKind::thread_name:
        f.ref(N(thread_name, ptr), e.ptr, &e.name, N(thread_name, name));
        break;
      case EventKind::vtable_load:
        f.ref(N(vtable_load, ptr2), e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        f.ref(N(vtable_load, ptr), e.ptr, nullptr, {});
        f.ref(N(vtable_load, ptr3), e.ptr3, names_.class_name(e.ptr3), "class_name");
        break;
      case EventKind::method_enter:
      case EventKind::method_leave:
      case EventKind::method_exc_leave:
        f.method_ref(N(method_enter, method), e.method, "method_name");
        break;
      case EventKind::method_jit:
        f.ref(N(method_jit, ptr), e.ptr, nullptr, {});
        f.num(N(method_jit, size), e.size);
        f.ref(N(method_jit, method), e.method, &e.name, N(method_jit, name));
        break;
      case EventKind::exception_throw:
        f.ref(N(exception_throw, obj), e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::exception_clause:
        f.enum_field(N(exception_clause, code), clause_name(e.code), e.code);
        f.num(N(exception_clause, index), e.index);
        f.ref(N(exception_clause, obj), e.obj, nullptr, {});
        f.method_ref(N(exception_clause, method), e.method, "method_name");
        break;
      case EventKind::monitor:
        f.enum_field(N(monitor, code), monitor_event_name(e.code), e.code);
        f.ref(N(monitor, obj), e.obj, nullptr, {});
        backtrace(f, e);
        break;
      case EventKind::heap_object:
        f.ref(N(heap_object, obj), e.obj, nullptr, {});
        vtable(f, e.ptr);
        f.num(N(heap_object, size), e.size);
        f.num(N(heap_object, generation), e.generation);
        f.heap_refs(e.refs);
        break;
      case EventKind::heap_root:
        f.roots(e.roots);
        break;
      case EventKind::heap_root_register:
        f.ref(N(heap_root_register, ptr), e.ptr, nullptr, {});
        f.num(N(heap_root_register, size), e.size);
        f.enum_field(N(heap_root_register, code), root_source_name(e.code), e.code);
        f.ref(N(heap_root_register, ptr2), e.ptr2, nullptr, {});
        f.str(N(heap_root_register, name), e.name);
        break;
      case EventKind::heap_root_unregister:
        f.ref(N(heap_root_unregister, ptr), e.ptr, nullptr, {});
        break;
      case EventKind::sample_hit:
        f.ref(N(sample_hit, ptr), e.ptr, names_.thread_name(e.ptr), "tid_name");
        f.ips(e.ips);
        f.methods(N(sample_hit, frames), e.frames);
        break;
      case EventKind::sample_usym:
        f.ref(N(sample_usym, ptr), e.ptr, nullptr, {});
        f.num(N(sample_usym, size), e.size);
        f.str(N(sample_usym, name), e.name);
        break;
      case EventKind::counter_descriptors:
        f.counter_descs(e.counter_descs);
        break;
      case EventKind::counter_samples:
        f.counter_values(e.counter_values);
        break;
      case EventKind::jit_helper:
        f.enum_field(N(jit_helper, code), code_buffer_name(e.code), e.code);
        f.ref(N(jit_helper, ptr), e.ptr, nullptr, {});
        f.num(N(jit_helper, size), e.size);
        if (e.code == format::CODE_BUFFER_SPECIFIC_TRAMPOLINE) f.str(N(jit_helper, name), e.name);
        break;
      case EventKind::sync_point:
        f.enum_field(N(sync_point, code), sync_point_name(e.code), e.code);
        break;
      case EventKind::aot_id:
        f.str(N(aot_id, name), e.name);
        break;
    }
    f.end(info);
  }
#undef N

  // A vtable with the name of its class; JSON also gets the class pointer once it is known.
  static void vtable(F& f, uint64_t v) { f.vtable(v); }

  static void backtrace(F& f, const Event& e) {
    if (e.has_backtrace) f.methods(layout::field_name<EventKind::alloc, layout::Member::backtrace>, e.backtrace);
  }

  OutBuffer& out_;
  Names& names_;
  F f_;
  Event event_;
  uint64_t names_version_ = 0;
};

}  // namespace mlpd::cli
