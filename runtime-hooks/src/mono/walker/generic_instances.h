// Shared generic code in the stack walker: frames whose method is the instantiation Mono's walk reads
// from the frame's generic context. The context's place comes from the method's JIT info (a Mono 6.8
// layout: mono/v6_8/layouts.h), its value from the frame, and the method from what Mono's walks taught
// us for (code entry, context value) pairs.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "mono/optional.h"
#include "walker/thread_state.h"
#include "frame_shapes.h"  // walker/<MLPD_ARCH>/: the machine's JIT frame shapes

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

// Mono's exported functions the walker's generic code reads: mono/optional.h (null when absent).

// (code entry, generic context value) -> the instantiation Mono's walk names for such a frame, learned
// from Mono's walks. Given the JIT info (the entry) and the context (a vtable, or a method runtime
// generic context), Mono's walk computes the generic context and inflates the declaring method with it
// (mini-exceptions.c, get_method_from_stack_frame); inflated methods are cached by Mono, so the same
// pair always names the same MonoMethod*. Open addressing, slots written once under g_generic_mutex
// (ctx and method first, then the entry with release) and read without a lock; kept at most 3/4 full,
// so a probe always ends on an empty slot. A slot's first uses are cross-checked against Mono's walk.
struct GenericSlot {
  std::atomic<const CodeEntry*> entry{nullptr};
  uint64_t ctx = 0;
  MonoMethod* method = nullptr;
  std::atomic<int> checks_left{2};
};
constexpr uint32_t kGenericSlots = 8192;
struct GenericTable {
  GenericSlot slots[kGenericSlots];
  uint32_t used = 0;  // guarded by g_generic_mutex
};
extern std::mutex g_generic_mutex;
extern std::atomic<GenericTable*> g_generic;

inline uint32_t generic_hash(const CodeEntry* e, uint64_t ctx) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(e) ^ (ctx * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return static_cast<uint32_t>(h >> 40) & (kGenericSlots - 1);
}

inline GenericSlot* generic_find(const CodeEntry* e, uint64_t ctx) {
  GenericTable* t = g_generic.load(std::memory_order_acquire);
  if (!t) return nullptr;
  for (uint32_t i = generic_hash(e, ctx);; i = (i + 1) & (kGenericSlots - 1)) {
    GenericSlot& s = t->slots[i];
    const CodeEntry* k = s.entry.load(std::memory_order_acquire);
    if (!k) return nullptr;
    if (k == e && s.ctx == ctx) return &s;
  }
}

// Adds pairs (guarded by g_generic_mutex held by the caller); false when the table is full.
bool generic_insert(const CodeEntry* e, uint64_t ctx, MonoMethod* m);

// A walk's shared generic frames that the table did not know (only when learning).
constexpr uint32_t kMaxMisses = 16;
struct Misses {
  uint32_t n = 0;
  uint32_t index[kMaxMisses];
  const CodeEntry* entry[kMaxMisses];
  uint64_t ctx[kMaxMisses];
};

// The learned pairs start over (a domain unloads: its vtables and contexts will be freed).
void forget_generic_instances();

// Reads where frames of the shared generic code [start, start + size) keep their generic context from
// its JIT info `ji` (Mono 6.8's MonoJitInfo / MonoGenericJitInfo, validated against what the API
// gives: the method, the code's start and size) into e.ctx*; false when it cannot.
bool read_generic_jit_info(const MonoJitInfo* ji, MonoMethod* jit_method, uint64_t start, uint64_t size,
                           CodeEntry& e);

// The number of collections so far (any generation), plus one: objects move and die only in a
// collection, so an address that held an object of some vtable holds it until the count changes.
inline uint64_t gc_epoch() {
  if (!mono_optional.mono_gc_collection_count) return 0;
  return (static_cast<uint64_t>(static_cast<uint32_t>(mono_optional.mono_gc_collection_count(1))) << 32) +
         static_cast<uint32_t>(mono_optional.mono_gc_collection_count(0)) + 1;
}

// Whether `obj` lies in sgen's nursery: Mono's mono_gc_get_generation answers 0 exactly then, from the
// address alone (sgen_ptr_in_nursery: no dereference). The nursery is mapped once when the GC starts
// and never unmapped, so such an address can be loaded directly. Usable only once probed (sgen, its
// nursery allocated): Boehm's answers 0 for every address, and sgen's too for low addresses before
// the nursery exists; both are refused (0: not probed yet, 1: usable, -1: not).
extern std::atomic<int> g_nursery_check;
extern int g_probe_static;
inline bool in_nursery(uint64_t obj) {
  int state = g_nursery_check.load(std::memory_order_relaxed);
  if (state == 0) [[unlikely]] {
    const bool ok = mono_optional.mono_gc_get_generation && mono_optional.mono_gc_get_generation(nullptr) == 1 &&
                    mono_optional.mono_gc_get_generation(reinterpret_cast<MonoObject*>(&g_probe_static)) == 1;
    state = ok ? 1 : -1;
    g_nursery_check.store(state, std::memory_order_relaxed);
  }
  return state == 1 && (obj & 7) == 0 && mono_optional.mono_gc_get_generation(reinterpret_cast<MonoObject*>(obj)) == 0;
}

// The vtable of the object at `obj` (its first word). The address comes from a stack slot, and would
// be a wild one if our reading of the frame were wrong: loaded directly only inside the nursery (where
// `this` objects mostly are: every one of the 77,008 reads of bench_dynamic), else copied with
// process_vm_readv (a system call of ~1 us). Each thread keeps the last ones copied, valid until the
// next collection (epoch 0: no count, no cache).
inline uint64_t object_vtable(ThreadWalk& t, uint64_t obj, uint64_t& epoch) {
  if (in_nursery(obj)) return load(obj);
  if (epoch == 0) epoch = gc_epoch();
  ThisSlot& c = t.objs[(obj >> 4) % kThisCache];
  if (epoch != 0 && c.obj == obj && c.epoch == epoch) return c.vtable;
  uint64_t vt = 0;
  if (!read_memory(obj, reinterpret_cast<uint8_t*>(&vt), sizeof vt)) return 0;
  c = ThisSlot{obj, vt, epoch};
  return vt;
}

// The context value of a shared generic frame (a vtable or a method runtime generic context), read as
// Mono's walk reads it (mini-exceptions.c, get_generic_info_from_stack_frame): from the stack slot the
// JIT info names, and for `this`, the object's vtable. 0 when it cannot be read.
inline uint64_t generic_context(ThreadWalk& t, const CodeEntry& e, uint64_t ip, uint64_t sp, uint64_t fp,
                                const Bounds& b, uint64_t& epoch) {
  if (ip - e.start < e.ctx_from) return 0;
  const uint64_t base = context_base(e, sp, fp);
  if (!readable(b, base, e.ctx_offset)) return 0;
  uint64_t v = load(base + static_cast<int64_t>(e.ctx_offset));
  if (v == 0 || (v & 7) != 0) return 0;
  if (e.ctx == kCtxThis) v = object_vtable(t, v, epoch);
  return v;
}

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
