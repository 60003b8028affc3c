// What has been described: metadata goes to the MetaLog BEFORE the first event that references it.
// Images, classes, vtables and methods are described on demand (their dependencies first), and a
// pointer counts as described only once its event is in the MetaLog.
//
// Two levels:
// * The authoritative sets (one mutex; names are computed before it is taken, never holding it while
//   calling into Mono). They never shrink, except that `force` describes a pointer again.
// * ONE per-thread cache of methods and vtables seen described (DescribedCache), checked without a
//   lock on the hot paths: method enter, allocation, each backtrace frame. It lives on the heap (the
//   thread's initial-exec TLS holds only its pointer: a large TLS block stops a dlopen'd agent from
//   loading); until a thread's first miss the pointer refers to a shared empty cache, so the hit test
//   needs no null check.
#pragma once

#include <mono/metadata/class.h>
#include <mono/metadata/image.h>
#include <mono/metadata/object.h>

#include <cstdint>
#include <string>

#include "capture/direct_mapped_set.h"

namespace mlpd::hooks::described {

// Creates the sets (install(), before any callback; the MetaLog is state::g->env.meta). Idempotent.
bool init();

// -- describing (any attached thread, not while the world is stopped)

// Describe `p` unless it is described already; `force` (the runtime's own load callbacks) describes
// it again even if the address was seen: after an AppDomain unload Mono reuses the addresses of
// freed classes and vtables for new ones.
void ensure_image(MonoImage* image, bool force = false);
void ensure_class(MonoClass* klass, bool force = false);
void ensure_vtable(MonoVTable* vt, bool force = false);
// Describes `m` unless it is described: with the code range defer_method kept for it, else (AOT code,
// or an event that came before its jit_done) without one.
void ensure_method(MonoMethod* m);
// Describes `m` (again: a re-JIT in another domain has new code) with its code range; returns its name.
std::string describe_method(MonoMethod* m, uint64_t code, uint64_t size);
// Lazy description (jit_done when nothing in the file can name a method without an event that
// references it first: docs/design.md, "Methods described lazily"): keeps `m`'s code range for the
// first ensure_method of `m` instead of naming it now. False, keeping nothing, when `m` is described
// already (the caller describes it again now, with the new range).
bool defer_method(MonoMethod* m, uint64_t code, uint64_t size);
// Whether jit_done already reported `m` with this code range (Mono 6.12 raises jit_done again each
// time it finds code already compiled: a call trampoline hit, a delegate, ldftn; 6.8 on a few paths):
// nothing to describe again. Remembers the range otherwise (one per method: the last one).
bool jit_repeat(MonoMethod* m, uint64_t code, uint64_t size);
// The runtime frees `m` (a dynamic method): its deferred range is dropped, so nothing ever names it.
void method_freed(MonoMethod* m);

// -- the per-thread cache

// Sized for real programs, not micro-benchmarks: a compiler run (mcs) calls ~5,000 distinct methods,
// and with 256 method slots a third of its enters missed (a lock and a hash lookup each: 11% of the
// run's instructions under `calls`). 40 KiB per thread that logs, allocated at its first miss.
struct DescribedCache {
  DirectMappedSet<4096, 4> methods;
  DirectMappedSet<1024, 4> vtables;
};

// The calling thread's cache; never null (the shared empty cache until the thread's first miss).
extern thread_local constinit DescribedCache* tls_cache __attribute__((tls_model("initial-exec"), visibility("hidden")));

// The misses: describe if needed, then remember in this thread's cache (allocated on first use).
void method_miss(MonoMethod* m);
void vtable_miss(MonoVTable* vt);

// True when this thread's cache says `m` is described (no call, no lock; false says nothing).
inline bool method_cached(MonoMethod* m) { return tls_cache->methods.contains(reinterpret_cast<uint64_t>(m)); }
// ensure_method / ensure_vtable through the calling thread's cache: no lock for one seen before.
inline void ensure_method_cached(MonoMethod* m) {
  if (tls_cache->methods.contains(reinterpret_cast<uint64_t>(m))) [[likely]] return;
  method_miss(m);
}
inline void ensure_vtable_cached(MonoVTable* vt) {
  if (tls_cache->vtables.contains(reinterpret_cast<uint64_t>(vt))) [[likely]] return;
  vtable_miss(vt);
}

// Frees the calling thread's cache (tests; threads free theirs at exit).
void release_thread_cache();

// -- reading the sets

// For the sample drain (helper thread, not attached to the runtime): `method` is described. Takes
// the lock.
bool method_known(uint64_t method);

// For the heap walk (world stopped): try_lock() takes the sets' lock only if it is free (a suspended
// thread may hold it; waiting could deadlock). While it is held, *_known_locked() says whether a
// pointer is described.
bool try_lock();
void unlock();
bool vtable_known_locked(uint64_t vtable);
bool class_known_locked(uint64_t klass);

// Forgets every described pointer (tests only: the agent never forgets).
void reset_for_tests();

}  // namespace mlpd::hooks::described
