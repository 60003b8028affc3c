// Test support for the Mono room's heapshot engine, stack walker entry and late describer tests: a
// small fake Mono (the members of the bound API table mlpd::hooks::mono those files call, answering
// from fields the test sets) and a writer (pool, registry, MetaLog, flusher) whose output is decoded
// back. The hooks' state (state::g, the atomics) is saved and put back by MonoRoom.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "described.h"
#include "mlpd/agent/flusher.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"
#include "state.h"

namespace mlpd::test::monofake {

template <class T>
T* fake(uint64_t address) {
  return reinterpret_cast<T*>(address);
}

// One object of the fake heap, as mono_gc_walk_heap hands it over.
struct HeapObject {
  uint64_t address = 0;
  uint64_t vtable_word = 0;  // what mono_object_get_vtable answers (tag bits included, if the test wants)
  uint64_t size = 0;
  int generation = 0;
  std::vector<uint64_t> refs;     // referenced objects
  std::vector<uint64_t> offsets;  // their offsets in the object
};

// A class of the fake metadata: what mono_class_get_* answer for it.
struct ClassInfo {
  uint64_t klass = 0;
  uint64_t image = 0;
  std::string name, name_space;
  uint64_t nesting = 0;  // the enclosing class (0: none)
};

struct VtableInfo {
  uint64_t vtable = 0;
  uint64_t klass = 0;
  uint64_t domain = 0;  // 0: none
  int32_t domain_id = 0;
};

// The fakes' answers and the calls they saw: set by the test, reset by MonoRoom.
struct World {
  std::vector<HeapObject> heap;
  std::vector<ClassInfo> classes;
  std::vector<VtableInfo> vtables;
  int max_generation = 1;
  // The GC roots callback the engine installed (nullptr: none) and how often it was set.
  void (*roots_cb)(MonoProfiler*, uint64_t, const mono_byte* const*, MonoObject* const*) = nullptr;
  int roots_sets = 0;
  int finalize_notifies = 0;
  int collects = 0;
  int walks = 0;
  // mono_gc_collect: what a forced collection does (the heapshot tests run the engine's GC events).
  void (*on_collect)(int generation) = nullptr;
  // mono_stack_walk_no_il: the frames (innermost first) it reports; 0 entries are frames without a
  // method (skipped by the walk's callback).
  std::vector<uint64_t> mono_frames;
  int mono_walks = 0;
  // The JIT info table: (code start, size, method); jit_info handles are 1-based indexes.
  struct Jit {
    uint64_t start, size, method;
  };
  std::vector<Jit> jit;
  std::string method_name_prefix = "N.C:M";
};

inline World& world() {
  static World w;
  return w;
}

inline const ClassInfo* class_of(MonoClass* k) {
  for (const ClassInfo& c : world().classes)
    if (c.klass == reinterpret_cast<uint64_t>(k)) return &c;
  return nullptr;
}
inline const VtableInfo* vtable_of(MonoVTable* vt) {
  for (const VtableInfo& v : world().vtables)
    if (v.vtable == reinterpret_cast<uint64_t>(vt)) return &v;
  return nullptr;
}
inline const HeapObject* object_of(MonoObject* o) {
  for (const HeapObject& h : world().heap)
    if (h.address == reinterpret_cast<uint64_t>(o)) return &h;
  return nullptr;
}

inline char* dup(const std::string& s) { return strdup(s.c_str()); }

// Every member the four files call (and described.cpp, which they call in turn).
inline void bind_fakes(hooks::MonoApi& m) {
  m.mono_free = [](void* p) { std::free(p); };
  m.mono_image_get_filename = [](MonoImage*) -> const char* { return "/app/a.dll"; };
  m.mono_image_get_guid = [](MonoImage*) -> const char* { return "GUID"; };
  m.mono_class_get_image = [](MonoClass* k) {
    const ClassInfo* c = class_of(k);
    return fake<MonoImage>(c ? c->image : 0);
  };
  m.mono_class_get_type = [](MonoClass* k) { return reinterpret_cast<MonoType*>(k); };
  m.mono_type_get_name = [](MonoType* t) {
    const ClassInfo* c = class_of(reinterpret_cast<MonoClass*>(t));
    return dup(c ? c->name_space + "." + c->name : std::string("?"));
  };
  m.mono_class_get_nesting_type = [](MonoClass* k) {
    const ClassInfo* c = class_of(k);
    return fake<MonoClass>(c ? c->nesting : 0);
  };
  m.mono_class_get_namespace = [](MonoClass* k) -> const char* {
    const ClassInfo* c = class_of(k);
    return c ? c->name_space.c_str() : "";
  };
  m.mono_class_get_name = [](MonoClass* k) -> const char* {
    const ClassInfo* c = class_of(k);
    return c ? c->name.c_str() : "?";
  };
  m.mono_vtable_class = [](MonoVTable* vt) {
    const VtableInfo* v = vtable_of(vt);
    return fake<MonoClass>(v ? v->klass : 0);
  };
  m.mono_vtable_domain = [](MonoVTable* vt) {
    const VtableInfo* v = vtable_of(vt);
    return fake<MonoDomain>(v ? v->domain : 0);
  };
  m.mono_domain_get_id = [](MonoDomain* d) -> int32_t {
    for (const VtableInfo& v : world().vtables)
      if (v.domain == reinterpret_cast<uint64_t>(d)) return v.domain_id;
    return -1;
  };
  m.mono_domain_get = []() { return fake<MonoDomain>(0xD000); };
  m.mono_method_full_name = [](MonoMethod* mm, mono_bool) {
    return dup(world().method_name_prefix + std::to_string(reinterpret_cast<uint64_t>(mm)) + " ()");
  };
  m.mono_object_get_vtable = [](MonoObject* o) {
    const HeapObject* h = object_of(o);
    return fake<MonoVTable>(h ? h->vtable_word : 0);
  };
  m.mono_gc_get_generation = [](MonoObject* o) -> int {
    const HeapObject* h = object_of(o);
    return h ? h->generation : 0;
  };
  m.mono_gc_max_generation = []() -> int { return world().max_generation; };
  m.mono_gc_walk_heap = [](int, MonoGCReferences cb, void* data) -> int {
    ++world().walks;
    // A copy: the callback may not change the heap, but the test's vectors stay untouched anyway.
    std::vector<HeapObject> heap = world().heap;
    for (HeapObject& h : heap) {
      std::vector<MonoObject*> refs;
      for (uint64_t r : h.refs) refs.push_back(fake<MonoObject>(r));
      std::vector<uintptr_t> offsets(h.offsets.begin(), h.offsets.end());
      const MonoVTable* vt = fake<MonoVTable>(h.vtable_word & ~uint64_t{7});
      const VtableInfo* v = vtable_of(const_cast<MonoVTable*>(vt));
      cb(fake<MonoObject>(h.address), fake<MonoClass>(v ? v->klass : 0), h.size, refs.size(), refs.data(),
         offsets.data(), data);
    }
    return 0;
  };
  m.mono_gc_finalize_notify = []() { ++world().finalize_notifies; };
  m.mono_gc_collect = [](int generation) {
    ++world().collects;
    if (world().on_collect) world().on_collect(generation);
  };
  m.mono_profiler_set_gc_roots_callback = [](MonoProfilerHandle, MonoProfilerGCRootsCallback cb) {
    world().roots_cb = cb;
    ++world().roots_sets;
  };
  m.mono_stack_walk_no_il = [](MonoStackWalk fn, void* data) {
    ++world().mono_walks;
    for (uint64_t f : world().mono_frames)
      if (fn(fake<MonoMethod>(f), 0, 0, 0, data)) break;
  };
  m.mono_jit_info_table_find = [](MonoDomain*, void* addr) -> MonoJitInfo* {
    const auto a = reinterpret_cast<uint64_t>(addr);
    const auto& jit = world().jit;
    for (size_t i = 0; i < jit.size(); ++i)
      if (a - jit[i].start < jit[i].size) return fake<MonoJitInfo>(i + 1);
    return nullptr;
  };
  m.mono_jit_info_get_method = [](MonoJitInfo* ji) {
    return fake<MonoMethod>(world().jit[reinterpret_cast<uint64_t>(ji) - 1].method);
  };
  m.mono_jit_info_get_code_start = [](MonoJitInfo* ji) -> void* {
    return fake<char>(world().jit[reinterpret_cast<uint64_t>(ji) - 1].start);
  };
  m.mono_jit_info_get_code_size = [](MonoJitInfo* ji) -> int {
    return static_cast<int>(world().jit[reinterpret_cast<uint64_t>(ji) - 1].size);
  };
}

// The Mono room for one test: fake Mono, a writer whose output is decoded back, the hooks' state
// (active, the event mask given, a fresh set of described pointers); all put back afterwards.
struct MonoRoom {
  rt::BufferPool pool;
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{init_shared()};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::Flusher flusher{shared, registry, meta};
  hooks::state::State st;
  hooks::state::State* saved_g = hooks::state::g;
  hooks::MonoApi saved_mono = hooks::mono;
  bool saved_active = hooks::state::g_active.load();
  bool saved_ready = hooks::state::g_runtime_ready.load();
  uint32_t saved_mask = hooks::state::g_mask.load();
  bool saved_paused = hooks::state::g_paused.load();

  // `buffer_bytes`, `max_buffers`: the buffer pool's (a small one makes the writer drop events).
  explicit MonoRoom(uint32_t mask = 0, uint32_t buffer_bytes = 65536, uint32_t max_buffers = 64)
      : pool(buffer_bytes, max_buffers) {
    world() = World{};
    st.env.shared = &shared;
    st.env.registry = &registry;
    st.env.meta = &meta;
    st.handle = reinterpret_cast<MonoProfilerHandle>(uintptr_t{0x77});
    hooks::state::g = &st;
    bind_fakes(hooks::mono);
    hooks::state::g_active.store(true);
    hooks::state::g_runtime_ready.store(true);
    hooks::state::g_mask.store(mask);
    hooks::state::g_paused.store(false);
    hooks::described::init();
    hooks::described::reset_for_tests();
    hooks::described::release_thread_cache();
  }
  ~MonoRoom() {
    hooks::described::release_thread_cache();
    hooks::described::reset_for_tests();
    hooks::mono = saved_mono;
    hooks::state::g = saved_g;
    hooks::state::g_active.store(saved_active);
    hooks::state::g_runtime_ready.store(saved_ready);
    hooks::state::g_mask.store(saved_mask);
    hooks::state::g_paused.store(saved_paused);
    world() = World{};
  }
  MonoRoom(const MonoRoom&) = delete;
  MonoRoom& operator=(const MonoRoom&) = delete;

  rt::WriterShared& init_shared() {
    shared.pool = &pool;
    shared.queue = &queue;
    return shared;
  }

  // Everything written so far (the metadata and every thread's buffers), decoded: the events in file
  // order and the decoder's problems. The calling thread's log is retired.
  struct Decoded {
    std::vector<Event> events;
    std::vector<std::string> problems;
    std::vector<Event> of(EventKind k) const {
      std::vector<Event> r;
      for (const Event& e : events)
        if (e.kind == k) r.push_back(e);
      return r;
    }
  };
  Decoded decode_all() {
    registry.thread_exit();
    std::vector<uint8_t> file;
    encode_file_header(FileHeader{}, file);
    flusher.round(file, true, rt::now_ns());
    auto input = Input::from_memory(file.data(), file.size());
    struct Collector : Visitor {
      Decoded d;
      void on_event(const Event& e, const EventInfo&) override { d.events.push_back(e); }
      void on_problem(const Problem& p) override { d.problems.push_back(p.message); }
    } c;
    decode(*input, c);
    return c.d;
  }
};

}  // namespace mlpd::test::monofake
