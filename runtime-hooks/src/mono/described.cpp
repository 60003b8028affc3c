#include "described.h"

#include <pthread.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "mlpd/event.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"
#include "state.h"

namespace mlpd::hooks::described {

namespace {

using mlpd::Event;
using mlpd::EventKind;
using rt::now_ns;

inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

struct CodeRange {
  uint64_t start = 0, size = 0;
};

struct Sets {
  std::mutex mutex;
  std::unordered_set<uint64_t> images, classes, vtables, methods;
  // Methods JIT'd and not described yet (defer_method): their code range, for the description their
  // first reference makes. Never holds a described method; a freed one is dropped (method_freed).
  std::unordered_map<uint64_t, CodeRange> pending;
  // The code range of each method's last jit_done (jit_repeat).
  std::unordered_map<uint64_t, CodeRange> jitted;
};
// Allocated by init() (not a static with a constructor: see state.h).
Sets* g_sets = nullptr;

// Every thread's cache until its first miss: all zero, never written.
DescribedCache g_empty_cache{};
// Frees a thread's cache when the thread exits (the key's value is the cache).
pthread_key_t g_cache_key;
bool g_cache_key_ok = false;

void free_cache(void* p) {
  tls_cache = &g_empty_cache;
  std::free(p);
}

DescribedCache* own_cache() {
  DescribedCache* c = tls_cache;
  if (c != &g_empty_cache) [[likely]] return c;
  c = static_cast<DescribedCache*>(std::calloc(1, sizeof(DescribedCache)));
  if (!c) return nullptr;
  if (g_cache_key_ok) pthread_setspecific(g_cache_key, c);
  tls_cache = c;
  return c;
}

std::string class_name(MonoClass* k) {
  if (state::runtime_ready()) return take_mono_string(mono.mono_type_get_name(mono.mono_class_get_type(k)));
  // Before the runtime is initialised mono_type_get_name is not safe; build namespace.name with
  // nesting like Mono's log profiler does at that time.
  std::string name;
  if (MonoClass* outer = mono.mono_class_get_nesting_type(k)) {
    name = class_name(outer) + "/";
  } else if (const char* ns = mono.mono_class_get_namespace(k); ns && *ns) {
    name = std::string(ns) + ".";
  }
  const char* n = mono.mono_class_get_name(k);
  return name + (n ? n : "");
}

bool is_known(std::unordered_set<uint64_t>& set, uint64_t p) {
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  return set.count(p) != 0;
}

// Adds `e` to the MetaLog and marks `p` described, unless another thread did it meanwhile (or `force`).
void publish(std::unordered_set<uint64_t>& set, uint64_t p, Event& e, bool force) {
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  if (!force && set.count(p)) return;
  state::g->env.meta->add(e, now_ns);
  set.insert(p);
}

}  // namespace

thread_local constinit DescribedCache* tls_cache __attribute__((tls_model("initial-exec"), visibility("hidden"))) =
    &g_empty_cache;

bool init() {
  if (g_sets) return true;
  g_sets = new (std::nothrow) Sets;
  if (!g_sets) return false;
  g_cache_key_ok = pthread_key_create(&g_cache_key, free_cache) == 0;
  return true;
}

void ensure_image(MonoImage* image, bool force) {
  if (!image || (!force && is_known(g_sets->images, u(image)))) return;
  Event e;
  e.kind = EventKind::image_load;
  e.ptr = u(image);
  const char* file = mono.mono_image_get_filename(image);
  const char* guid = mono.mono_image_get_guid(image);
  e.name = file ? file : "";
  e.mvid = guid ? guid : "";
  publish(g_sets->images, u(image), e, force);
}

void ensure_class(MonoClass* k, bool force) {
  if (!k || (!force && is_known(g_sets->classes, u(k)))) return;
  MonoImage* image = mono.mono_class_get_image(k);
  ensure_image(image);
  Event e;
  e.kind = EventKind::class_load;
  e.ptr = u(k);
  e.ptr2 = u(image);
  e.name = class_name(k);
  publish(g_sets->classes, u(k), e, force);
}

void ensure_vtable(MonoVTable* vt, bool force) {
  if (!force && is_known(g_sets->vtables, u(vt))) return;
  MonoClass* k = mono.mono_vtable_class(vt);
  ensure_class(k);
  MonoDomain* d = mono.mono_vtable_domain(vt);
  Event e;
  e.kind = EventKind::vtable_load;
  e.ptr = u(vt);
  e.ptr2 = d ? static_cast<uint64_t>(mono.mono_domain_get_id(d)) : 0;
  e.ptr3 = u(k);
  publish(g_sets->vtables, u(vt), e, force);
}

std::string describe_method(MonoMethod* m, uint64_t code, uint64_t size) {
  Event e;
  e.kind = EventKind::method_jit;
  e.method = u(m);
  e.ptr = code;
  e.size = size;
  e.name = take_mono_string(mono.mono_method_full_name(m, 1));
  {
    std::lock_guard<std::mutex> lock(g_sets->mutex);
    // A method deferred meanwhile (its jit_done ran while we named it) gets its code range here.
    if (auto it = g_sets->pending.find(u(m)); it != g_sets->pending.end()) {
      if (!e.ptr) {
        e.ptr = it->second.start;
        e.size = it->second.size;
      }
      g_sets->pending.erase(it);
    }
    state::g->env.meta->add(e, now_ns);  // a re-JIT (another domain) is described again, with its new code
    g_sets->methods.insert(u(m));
  }
  return std::move(e.name);
}

bool defer_method(MonoMethod* m, uint64_t code, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  if (g_sets->methods.count(u(m))) return false;  // described already (an event came first): again, now
  g_sets->pending[u(m)] = CodeRange{code, size};
  return true;
}

bool jit_repeat(MonoMethod* m, uint64_t code, uint64_t size) {
  if (!code) return false;
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  auto [it, added] = g_sets->jitted.try_emplace(u(m), CodeRange{code, size});
  if (added) return false;
  if (it->second.start == code && it->second.size == size) return true;
  it->second = CodeRange{code, size};
  return false;
}

void method_freed(MonoMethod* m) {
  if (!g_sets) return;
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  g_sets->pending.erase(u(m));
  g_sets->jitted.erase(u(m));
}

void ensure_method(MonoMethod* m) {
  if (!m) return;
  uint64_t code = 0, size = 0;
  {
    std::lock_guard<std::mutex> lock(g_sets->mutex);
    if (g_sets->methods.count(u(m))) return;
    if (auto it = g_sets->pending.find(u(m)); it != g_sets->pending.end()) {  // JIT'd, deferred
      code = it->second.start;
      size = it->second.size;
    }
  }
  describe_method(m, code, size);
}

void method_miss(MonoMethod* m) {
  ensure_method(m);
  if (DescribedCache* c = own_cache()) c->methods.insert(u(m));
}

void vtable_miss(MonoVTable* vt) {
  ensure_vtable(vt);
  if (DescribedCache* c = own_cache()) c->vtables.insert(u(vt));
}

void release_thread_cache() {
  DescribedCache* c = tls_cache;
  if (c == &g_empty_cache) return;
  if (g_cache_key_ok) pthread_setspecific(g_cache_key, nullptr);
  free_cache(c);
}

bool method_known(uint64_t method) { return g_sets && is_known(g_sets->methods, method); }

bool try_lock() { return g_sets && g_sets->mutex.try_lock(); }
void unlock() { g_sets->mutex.unlock(); }
bool vtable_known_locked(uint64_t vtable) { return g_sets->vtables.count(vtable) != 0; }
bool class_known_locked(uint64_t klass) { return g_sets->classes.count(klass) != 0; }

void reset_for_tests() {
  std::lock_guard<std::mutex> lock(g_sets->mutex);
  g_sets->images.clear();
  g_sets->classes.clear();
  g_sets->vtables.clear();
  g_sets->methods.clear();
  g_sets->pending.clear();
  g_sets->jitted.clear();
}

}  // namespace mlpd::hooks::described
