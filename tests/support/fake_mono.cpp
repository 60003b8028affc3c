// The fake Mono of fake_mono.h: plain functions in the bound API tables that answer from the current
// FakeMono's fields.
#include "fake_mono.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mlpd::test {

namespace {

FakeMono* g_current = nullptr;

FakeMono& cur() { return *g_current; }

uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }
template <class T>
T* ptr(uint64_t a) {
  return reinterpret_cast<T*>(a);
}

// The entry of `p` in `map`, or nullptr with a note in problems.
template <class Map>
auto* find(Map& map, const void* p, const char* what) {
  auto it = map.find(u(p));
  if (it == map.end()) {
    char line[96];
    std::snprintf(line, sizeof line, "%s asked about unknown %p", what, p);
    cur().problems.push_back(line);
    return static_cast<typename Map::mapped_type*>(nullptr);
  }
  return &it->second;
}

char* dup(const std::string& s) { return strdup(s.c_str()); }

// The handle mono_profiler_create makes: the address of this byte (never dereferenced by the agent).
char g_handle_byte;

void bind(hooks::MonoApi& m, hooks::MonoOptional& o) {
  m = hooks::MonoApi{};
  o = hooks::MonoOptional{};
  m.mono_free = [](void* p) { std::free(p); };
  m.mono_profiler_create = [](MonoProfiler*) {
    cur().handle = reinterpret_cast<MonoProfilerHandle>(&g_handle_byte);
    return cur().handle;
  };
  m.mono_profiler_enable_allocations = []() -> mono_bool { return cur().allocations_enabled; };
  m.mono_profiler_enable_clauses = []() -> mono_bool { return cur().clauses_enabled; };
#define MLPD_FAKE_MONO_SETTER(name)                                                                    \
  m.mono_profiler_set_##name##_callback =                                                              \
      [](MonoProfilerHandle h, fake_mono_detail::SetterArg<decltype(&::mono_profiler_set_##name##_callback)>::type cb) { \
        cur().handles_seen.insert(h);                                                                  \
        cur().callbacks.name = cb;                                                                     \
      };
  MLPD_FAKE_MONO_CALLBACKS(MLPD_FAKE_MONO_SETTER)
#undef MLPD_FAKE_MONO_SETTER

  m.mono_image_get_filename = [](MonoImage* i) -> const char* {
    auto* e = find(cur().images, i, "mono_image_get_filename");
    return e ? e->filename.c_str() : nullptr;
  };
  m.mono_image_get_guid = [](MonoImage* i) -> const char* {
    auto* e = find(cur().images, i, "mono_image_get_guid");
    return e ? e->guid.c_str() : nullptr;
  };
  m.mono_assembly_get_image = [](MonoAssembly* a) -> MonoImage* {
    auto* e = find(cur().assemblies, a, "mono_assembly_get_image");
    return e ? e->image : nullptr;
  };
  // An assembly's name object is the assembly's own address (opaque to the agent).
  m.mono_assembly_get_name = [](MonoAssembly* a) { return reinterpret_cast<MonoAssemblyName*>(a); };
  m.mono_stringify_assembly_name = [](MonoAssemblyName* n) -> char* {
    auto* e = find(cur().assemblies, n, "mono_stringify_assembly_name");
    return e ? dup(e->name) : nullptr;
  };
  m.mono_class_get_image = [](MonoClass* k) -> MonoImage* {
    auto* e = find(cur().classes, k, "mono_class_get_image");
    return e ? e->image : nullptr;
  };
  // A class's type object is the class's own address (opaque to the agent).
  m.mono_class_get_type = [](MonoClass* k) { return reinterpret_cast<MonoType*>(k); };
  m.mono_type_get_name = [](MonoType* t) -> char* {
    auto* e = find(cur().classes, t, "mono_type_get_name");
    return e ? dup(e->type_name) : nullptr;
  };
  m.mono_class_get_name = [](MonoClass* k) -> const char* {
    auto* e = find(cur().classes, k, "mono_class_get_name");
    return e ? e->name.c_str() : nullptr;
  };
  m.mono_class_get_namespace = [](MonoClass* k) -> const char* {
    auto* e = find(cur().classes, k, "mono_class_get_namespace");
    return e ? e->name_space.c_str() : nullptr;
  };
  m.mono_class_get_nesting_type = [](MonoClass* k) -> MonoClass* {
    auto* e = find(cur().classes, k, "mono_class_get_nesting_type");
    return e ? e->nesting : nullptr;
  };
  m.mono_vtable_class = [](MonoVTable* v) -> MonoClass* {
    auto* e = find(cur().vtables, v, "mono_vtable_class");
    return e ? e->klass : nullptr;
  };
  m.mono_vtable_domain = [](MonoVTable* v) -> MonoDomain* {
    auto* e = find(cur().vtables, v, "mono_vtable_domain");
    return e ? e->domain : nullptr;
  };
  m.mono_domain_get = []() { return cur().current_domain; };
  m.mono_domain_get_id = [](MonoDomain* d) -> int32_t {
    auto* e = find(cur().domains, d, "mono_domain_get_id");
    return e ? *e : 0;
  };
  m.mono_context_get_id = [](MonoAppContext* c) -> int32_t {
    auto* e = find(cur().contexts, c, "mono_context_get_id");
    return e ? e->id : 0;
  };
  m.mono_context_get_domain_id = [](MonoAppContext* c) -> int32_t {
    auto* e = find(cur().contexts, c, "mono_context_get_domain_id");
    return e ? e->domain_id : 0;
  };
  m.mono_method_full_name = [](MonoMethod* x, mono_bool) -> char* {
    auto* e = find(cur().methods, x, "mono_method_full_name");
    return e ? dup(e->full_name) : nullptr;
  };
  m.mono_method_get_name = [](MonoMethod* x) -> const char* {
    auto* e = find(cur().methods, x, "mono_method_get_name");
    return e ? e->name.c_str() : nullptr;
  };
  m.mono_jit_info_get_code_start = [](MonoJitInfo* j) -> void* {
    auto* e = find(cur().jit_infos, j, "mono_jit_info_get_code_start");
    return e ? ptr<void>(e->code_start) : nullptr;
  };
  m.mono_jit_info_get_code_size = [](MonoJitInfo* j) -> int {
    auto* e = find(cur().jit_infos, j, "mono_jit_info_get_code_size");
    return e ? e->code_size : 0;
  };
  m.mono_jit_info_get_method = [](MonoJitInfo* j) -> MonoMethod* {
    auto* e = find(cur().jit_infos, j, "mono_jit_info_get_method");
    return e ? e->method : nullptr;
  };
  m.mono_gc_max_generation = []() { return cur().max_generation; };
  m.mono_gc_collect = [](int) { ++cur().collections; };
  m.mono_gc_finalize_notify = []() { ++cur().finalizer_wakes; };
  m.mono_gc_walk_heap = [](int, MonoGCReferences, void*) -> int {
    ++cur().heap_walks;
    return 0;
  };
  m.mono_stack_walk_no_il = [](MonoStackWalk fn, void* data) {
    const std::vector<MonoMethod*> frames = cur().stack;
    for (MonoMethod* f : frames) {
      if (fn(f, 0, 0, 1, data)) break;
    }
  };
  // A runtime with no counters of its own.
  m.mono_counters_on_register = [](MonoCounterRegisterCallback) {};
  m.mono_counters_foreach = [](CountersEnumCallback, void*) {};

  o.mono_domain_foreach = [](MonoDomainFunc fn, void* data) {
    const auto domains = cur().domains;
    for (const auto& [address, id] : domains) fn(ptr<MonoDomain>(address), data);
  };
  o.mono_assembly_foreach = [](MonoFunc fn, void* data) {
    const auto assemblies = cur().assemblies;
    for (const auto& [address, a] : assemblies) fn(ptr<void>(address), data);
  };
  o.mono_runtime_get_aotid = []() -> char* { return cur().aotid.empty() ? nullptr : dup(cur().aotid); };
  o.mono_callspec_parse = [](const char* text, void*, char** error) -> mono_bool {
    cur().callspecs_parsed.push_back(text ? text : "");
    if (cur().callspec_error.empty()) return 1;
    if (error) *error = dup(cur().callspec_error);
    return 0;
  };
  o.mono_callspec_eval = [](MonoMethod* x, const void*) -> mono_bool { return cur().callspec_matches.count(x) != 0; };
}

}  // namespace

FakeMono::FakeMono() : saved_mono_(hooks::mono), saved_optional_(hooks::mono_optional), saved_current_(g_current) {
  g_current = this;
  bind(hooks::mono, hooks::mono_optional);
}

FakeMono::~FakeMono() {
  hooks::mono = saved_mono_;
  hooks::mono_optional = saved_optional_;
  g_current = saved_current_;
}

FakeMono* FakeMono::current() { return g_current; }

uint64_t FakeMono::next_address(uint64_t at) {
  if (at) return at;
  next_ += 0x100;
  return next_;
}

MonoImage* FakeMono::image(const std::string& filename, const std::string& guid, uint64_t at) {
  const uint64_t a = next_address(at);
  images[a] = Image{filename, guid};
  return ptr<MonoImage>(a);
}

MonoAssembly* FakeMono::assembly(MonoImage* img, const std::string& name, uint64_t at) {
  const uint64_t a = next_address(at);
  assemblies[a] = Assembly{img, name};
  return ptr<MonoAssembly>(a);
}

MonoClass* FakeMono::klass(MonoImage* img, const std::string& name_space, const std::string& name, MonoClass* nesting,
                           const std::string& type_name, uint64_t at) {
  const uint64_t a = next_address(at);
  std::string full = type_name;
  if (full.empty()) full = name_space.empty() ? name : name_space + "." + name;
  classes[a] = Class{img, name_space, name, nesting, full};
  return ptr<MonoClass>(a);
}

MonoVTable* FakeMono::vtable(MonoClass* k, MonoDomain* d, uint64_t at) {
  const uint64_t a = next_address(at);
  vtables[a] = VTable{k, d};
  return ptr<MonoVTable>(a);
}

MonoDomain* FakeMono::domain(int32_t id, uint64_t at) {
  const uint64_t a = next_address(at);
  domains[a] = id;
  return ptr<MonoDomain>(a);
}

MonoAppContext* FakeMono::context(int32_t id, int32_t domain_id, uint64_t at) {
  const uint64_t a = next_address(at);
  contexts[a] = Context{id, domain_id};
  return ptr<MonoAppContext>(a);
}

MonoMethod* FakeMono::method(const std::string& full_name, const std::string& name, uint64_t at) {
  const uint64_t a = next_address(at);
  std::string short_name = name;
  if (short_name.empty()) {
    const size_t colon = full_name.rfind(':');
    short_name = colon == std::string::npos ? full_name : full_name.substr(colon + 1);
    short_name = short_name.substr(0, short_name.find(' '));
  }
  methods[a] = Method{full_name, short_name};
  return ptr<MonoMethod>(a);
}

MonoJitInfo* FakeMono::jit_info(MonoMethod* m, uint64_t code_start, int code_size, uint64_t at) {
  const uint64_t a = next_address(at);
  jit_infos[a] = JitInfo{m, code_start, code_size};
  return ptr<MonoJitInfo>(a);
}

}  // namespace mlpd::test
