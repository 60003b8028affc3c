// Test support: a fake Mono behind the bound API table (mlpd::hooks::mono, mono_api.h, and the optional
// functions, mono/optional.h), for the Mono room's unit tests.
//
//   test::FakeMono fake;                        // saves both tables, binds the fakes; restored at scope end
//   MonoImage* img = fake.image("/app/a.dll", "GUID");
//   MonoClass* k = fake.klass(img, "N", "C");
//   MonoMethod* m = fake.method("N.C:M ()");
//   ... install the hooks (they set their callbacks through the fake setters) ...
//   fake.callbacks.method_enter(nullptr, m, nullptr);   // raise an event as the runtime would
//
// Objects (images, assemblies, classes, vtables, domains, contexts, methods, JIT infos) are opaque
// pointers: addresses the fake hands out (or the test chooses), never dereferenced; each getter answers
// the field the test set for that address. A getter asked about an address the fake did not make notes
// it in `problems` (a test checks that it stays empty) and answers nullptr/0. The profiler's
// mono_profiler_set_*_callback setters record the callback in `callbacks` (nullptr: taken out), with
// the handle they were given in `handles_seen`. Nothing of Mono's logic is imitated: no loading, no
// GC, no JIT; what a getter answers is what the test put there.
//
// One FakeMono at a time (the getters are plain functions that find it through a global).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mlpd/hooks/mono_api.h"
#include "mono/optional.h"

// Hidden, as the optional table it saves (mono/optional.h).
#pragma GCC visibility push(hidden)
namespace mlpd::test {

// The profiler callbacks the agent can set, by the name of their setter (mono_profiler_set_<name>_callback).
#define MLPD_FAKE_MONO_CALLBACKS(X)                                                                           \
  X(runtime_initialized) X(runtime_shutdown_begin) X(runtime_shutdown_end) X(thread_started) X(thread_stopped) \
  X(thread_exited) X(thread_name) X(domain_loaded) X(domain_unloading) X(domain_name) X(context_loaded)        \
  X(context_unloaded) X(assembly_loaded) X(assembly_unloading) X(image_loaded) X(image_unloading)              \
  X(class_loaded) X(vtable_loaded) X(jit_done) X(method_free) X(jit_code_buffer) X(method_enter)               \
  X(method_leave) X(method_tail_call) X(method_exception_leave) X(call_instrumentation_filter)                 \
  X(exception_throw) X(exception_clause) X(gc_event) X(gc_allocation) X(gc_moves) X(gc_resize)                 \
  X(gc_handle_created) X(gc_handle_deleted) X(gc_finalizing) X(gc_finalized) X(gc_finalizing_object)           \
  X(gc_finalized_object) X(gc_root_register) X(gc_root_unregister) X(gc_roots) X(monitor_contention)           \
  X(monitor_acquired) X(monitor_failed) X(sample_hit)

namespace fake_mono_detail {
// The callback type a setter takes: its second parameter.
template <class F>
struct SetterArg;
template <class R, class H, class C>
struct SetterArg<R (*)(H, C)> {
  using type = C;
};
}  // namespace fake_mono_detail

class FakeMono {
 public:
  struct Callbacks {
#define MLPD_FAKE_MONO_CB_MEMBER(name) \
  fake_mono_detail::SetterArg<decltype(&::mono_profiler_set_##name##_callback)>::type name = nullptr;
    MLPD_FAKE_MONO_CALLBACKS(MLPD_FAKE_MONO_CB_MEMBER)
#undef MLPD_FAKE_MONO_CB_MEMBER
  };

  struct Image {
    std::string filename, guid;
  };
  struct Assembly {
    MonoImage* image = nullptr;
    std::string name;  // what mono_stringify_assembly_name answers
  };
  struct Class {
    MonoImage* image = nullptr;
    std::string name_space, name;
    MonoClass* nesting = nullptr;
    std::string type_name;  // what mono_type_get_name answers for its type
  };
  struct VTable {
    MonoClass* klass = nullptr;
    MonoDomain* domain = nullptr;
  };
  struct Method {
    std::string full_name;  // mono_method_full_name
    std::string name;       // mono_method_get_name
  };
  struct JitInfo {
    MonoMethod* method = nullptr;
    uint64_t code_start = 0;
    int code_size = 0;
  };
  struct Context {
    int32_t id = 0, domain_id = 0;
  };

  FakeMono();
  ~FakeMono();
  FakeMono(const FakeMono&) = delete;
  FakeMono& operator=(const FakeMono&) = delete;

  // Objects, at the next free address or at `at` (nonzero).
  MonoImage* image(const std::string& filename, const std::string& guid, uint64_t at = 0);
  MonoAssembly* assembly(MonoImage* image, const std::string& name, uint64_t at = 0);
  // type_name empty: "<ns>.<name>" (or the name alone without a namespace).
  MonoClass* klass(MonoImage* image, const std::string& name_space, const std::string& name,
                   MonoClass* nesting = nullptr, const std::string& type_name = "", uint64_t at = 0);
  MonoVTable* vtable(MonoClass* klass, MonoDomain* domain, uint64_t at = 0);
  MonoDomain* domain(int32_t id, uint64_t at = 0);
  MonoAppContext* context(int32_t id, int32_t domain_id, uint64_t at = 0);
  // name empty: the part of full_name after its last ':' up to a space.
  MonoMethod* method(const std::string& full_name, const std::string& name = "", uint64_t at = 0);
  MonoJitInfo* jit_info(MonoMethod* method, uint64_t code_start, int code_size, uint64_t at = 0);

  // What the fake getters answer, changeable by a test.
  std::map<uint64_t, Image> images;
  std::map<uint64_t, Assembly> assemblies;
  std::map<uint64_t, Class> classes;
  std::map<uint64_t, VTable> vtables;
  std::map<uint64_t, int32_t> domains;  // address -> id
  std::map<uint64_t, Context> contexts;
  std::map<uint64_t, Method> methods;
  std::map<uint64_t, JitInfo> jit_infos;
  MonoDomain* current_domain = nullptr;          // mono_domain_get
  std::vector<MonoMethod*> stack;                // mono_stack_walk_no_il's frames, innermost first
  int max_generation = 1;                        // mono_gc_max_generation
  bool allocations_enabled = true;               // mono_profiler_enable_allocations' answer
  bool clauses_enabled = true;                   // mono_profiler_enable_clauses' answer
  // Optional functions (mono/optional.h), bound as a runtime that exports them: mono_domain_foreach and
  // mono_assembly_foreach (over `domains` and `assemblies`), mono_runtime_get_aotid, mono_callspec_parse
  // and _eval. The others (build info, thread info, internal calls, the walker's) are left unbound.
  std::string aotid;                             // mono_runtime_get_aotid (empty: nullptr, not AOT-compiled)
  std::string callspec_error;                    // mono_callspec_parse fails with this message (empty: parses)
  std::set<MonoMethod*> callspec_matches;        // mono_callspec_eval's answer: true for these
  std::vector<std::string> callspecs_parsed;     // the texts mono_callspec_parse was given

  // What the agent did.
  // The runtime's GC asked for (a collection, the finalizer thread woken, a heap walk): counted, nothing
  // done (the heap the fake walks is empty).
  int collections = 0, finalizer_wakes = 0, heap_walks = 0;
  Callbacks callbacks;
  MonoProfilerHandle handle = nullptr;           // the handle mono_profiler_create made (nullptr: none yet)
  std::set<MonoProfilerHandle> handles_seen;     // the handles the setters were given
  std::vector<std::string> problems;             // questions about addresses the fake did not make

  static FakeMono* current();

 private:
  uint64_t next_address(uint64_t at);
  uint64_t next_ = 0x100000;
  hooks::MonoApi saved_mono_;
  hooks::MonoOptional saved_optional_;
  FakeMono* saved_current_;
};

}  // namespace mlpd::test
#pragma GCC visibility pop
