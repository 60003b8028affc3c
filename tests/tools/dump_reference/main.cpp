// The reference for `mlpd dump`: the formatter as it was before the fast one (session 5), kept
// verbatim (this directory's dump_text.cpp, dump_json.cpp, dump_format.h and out_buffer.h are copies
// of reader/cli/ at 4bc14ae), so that tests can check that today's `mlpd dump` writes exactly the
// same bytes (tests/integration/cli/test_dump_reference.py). Not installed.
//   mlpd_dump_reference [--json] FILE
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "dump_format.h"
#include "mlpd/decoder.h"
#include "mlpd/enum_names.h"
#include "mlpd/format.h"
#include "mlpd/names.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {

// ---- the event walk --------------------------------------------------------------------------

class Dumper final : public Visitor {
 public:
  Dumper(OutBuffer& out, bool json) {
    if (json) {
      format_ = make_json_format(out, names_);
    } else {
      format_ = make_text_format(out, names_);
    }
  }

  uint64_t problems = 0;

  void on_header(const FileHeader& h) override {
    format_->header(h);
  }

  void on_buffer(const BufferInfo& b) override {
    if (!have_start_) {
      have_start_ = true;
      start_ = b.header.time_base;
    }
    format_->buffer(b, rel(b.header.time_base));
  }

  void on_problem(const Problem& p) override {
    ++problems;
    format_->problem(p);
  }
  // A zipped file cut inside its last member (killed writer): shown where it happens, exit status 0.
  void on_warning(const Problem& p) override { format_->problem(p); }

  void on_event(const Event& e, const EventInfo& info) override {
    names_.observe(e);  // first, so that an event's own description names it on its line
    Format& f = *format_;
    f.begin(e, info, rel(e.time));
    switch (e.kind) {
      case EventKind::alloc:
        vtable(e.ptr);
        f.ref("obj", e.obj, nullptr, {});
        f.num("size", e.size);
        backtrace(e);
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
        backtrace(e);
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
        f.ref("method", e.method, names_.method_name(e.method), "method_name");
        break;
      case EventKind::method_jit:
        f.ref("code", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.ref("method", e.method, &e.name, "name");
        break;
      case EventKind::exception_throw:
        f.ref("obj", e.obj, nullptr, {});
        backtrace(e);
        break;
      case EventKind::exception_clause:
        f.enum_field("clause", clause_name(e.code), e.code);
        f.num("index", e.index);
        f.ref("obj", e.obj, nullptr, {});
        f.ref("method", e.method, names_.method_name(e.method), "method_name");
        break;
      case EventKind::monitor:
        f.enum_field("event", monitor_event_name(e.code), e.code);
        f.ref("obj", e.obj, nullptr, {});
        backtrace(e);
        break;
      case EventKind::heap_object:
        f.ref("obj", e.obj, nullptr, {});
        vtable(e.ptr);
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

 private:
  int64_t rel(uint64_t t) const { return static_cast<int64_t>(t - start_); }

  // A vtable with the name of its class; JSON also gets the class pointer once it is known.
  void vtable(uint64_t v) {
    uint64_t klass = 0;
    const bool known = names_.vtable_class(v, klass);
    format_->ref("vtable", v, known ? names_.class_name(klass) : nullptr, "class_name");
    if (known) format_->extra("class", klass);
  }

  void backtrace(const Event& e) {
    if (e.has_backtrace) format_->methods("backtrace", e.backtrace);
  }

  Names names_;
  std::unique_ptr<Format> format_;
  bool have_start_ = false;
  uint64_t start_ = 0;
};

}  // namespace

}  // namespace mlpd::cli

int main(int argc, char** argv) {
  bool json = argc == 3 && std::strcmp(argv[1], "--json") == 0;
  if (argc != 2 && !json) {
    std::fprintf(stderr, "usage: mlpd_dump_reference [--json] FILE\n");
    return 2;
  }
  std::string error;
  std::unique_ptr<mlpd::Input> input = mlpd::Input::open(argv[argc - 1], error);
  if (!input) {
    std::fprintf(stderr, "mlpd_dump_reference: %s\n", error.c_str());
    return 1;
  }
  uint64_t problems = 0;
  {
    mlpd::cli::OutBuffer out(stdout);
    mlpd::cli::Dumper dumper(out, json);
    mlpd::decode(*input, dumper);
    problems = dumper.problems;
  }
  std::fflush(stdout);
  return problems ? 1 : 0;
}
