// GC callbacks: collections (with the heapshot engine's steps and the world's sync points), resizes,
// moves, GC handles, finalization and roots; and the collecting thread's flag (tls_in_own_gc).
#include <atomic>
#include <cstring>

#include "callbacks.h"
#include "heapshot_engine.h"
#include "mlpd/hooks/late_describer.h"
#include "mlpd/capture/sampling.h"
#include "mono/sampling_start.h"
#include "mlpd/rt/clock.h"

namespace mlpd::hooks::cb {

using namespace mlpd::format;
using namespace state;
using rt::now_ns;

namespace {

void finalization_event(uint8_t event_byte) {
  if (!active() || !enabled(MASK_GC_FINALIZATION)) return;
  if (rt::ThreadLog* l = log()) rt::write_bare(*l, event_byte, now_ns());
}
void finalization_object(uint8_t event_byte, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_FINALIZATION)) return;
  if (rt::ThreadLog* l = log()) rt::write_with_object(*l, event_byte, now_ns(), u(obj));
}

}  // namespace

// Mono's order: the GC event, then at world stop the sync point and HEAP_START (heapshot.cpp), at
// world start the heap walk and HEAP_END, then the sync point.
namespace {
// The pause histogram (runtime::GcPauses): one collection stops the world at a time; the helper reads.
std::atomic<uint64_t> g_stop_ns{0};
std::atomic<uint64_t> g_pause_buckets[runtime::GcPauses::kBounds + 1];
std::atomic<uint64_t> g_pause_sum_ns{0};
}  // namespace

void on_gc_event(MonoProfiler*, MonoProfilerGCEvent event, uint32_t generation, mono_bool serial) {
  // Every stop of the world, whether or not GC events are recorded: two clock reads per collection.
  if (event == MONO_GC_EVENT_PRE_STOP_WORLD) {
    g_stop_ns.store(now_ns(), std::memory_order_relaxed);
  } else if (event == MONO_GC_EVENT_POST_START_WORLD) {
    const uint64_t start = g_stop_ns.exchange(0, std::memory_order_relaxed);
    const uint64_t now = now_ns();
    if (start && now > start) {
      g_pause_buckets[runtime::GcPauses::bucket_of(now - start)].fetch_add(1, std::memory_order_relaxed);
      g_pause_sum_ns.fetch_add(now - start, std::memory_order_relaxed);
    }
  }
  // Before the active check, so that a thread's flag cannot stay set if the agent stops meanwhile.
  if (event == MONO_GC_EVENT_PRE_STOP_WORLD_LOCKED) tls_in_own_gc = true;
  if (event == MONO_GC_EVENT_POST_START_WORLD_UNLOCKED) tls_in_own_gc = false;
  if (!active()) return;
  rt::ThreadLog* l = log();
  const bool sync = (g_mask.load(std::memory_order_relaxed) & (MASK_GC | MASK_GC_MOVE | MASK_GC_ROOT)) != 0;
  if (l) {
    const uint64_t now = now_ns();
    if (enabled(MASK_GC)) rt::write_gc_event(*l, now, static_cast<uint8_t>(event), static_cast<uint8_t>(generation));
    if (sync && event == MONO_GC_EVENT_POST_STOP_WORLD) rt::write_sync_point(*l, now, SYNC_POINT_WORLD_STOP);
  }
  heapshot::gc_event(l, event, generation, serial != 0);
  if (l && sync && event == MONO_GC_EVENT_PRE_START_WORLD) rt::write_sync_point(*l, now_ns(), SYNC_POINT_WORLD_START);
}

void on_gc_resize(MonoProfiler*, uintptr_t size) {
  if (!active() || !enabled(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_resize(*l, now_ns(), size);
}

void on_gc_moves(MonoProfiler*, MonoObject* const* objects, uint64_t count) {
  if (!active() || !enabled(MASK_GC_MOVE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  constexpr uint32_t kChunk = 64;  // addresses per event, as Mono writes them
  uint64_t addr[kChunk];
  const uint64_t now = now_ns();
  for (uint64_t i = 0; i < count;) {
    uint32_t n = 0;
    while (n < kChunk && i < count) addr[n++] = u(objects[i++]);
    rt::write_gc_move(*l, now, addr, n & ~1u);
  }
}

void on_gc_handle_created(MonoProfiler*, uint32_t handle, MonoGCHandleType type, MonoObject* obj) {
  if (!active() || !enabled(MASK_GC_HANDLE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_handle_created(*l, now_ns(), static_cast<uint64_t>(type), handle, u(obj), b);
}

void on_gc_handle_deleted(MonoProfiler*, uint32_t handle, MonoGCHandleType type) {
  if (!active() || !enabled(MASK_GC_HANDLE)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  rt::Backtrace bt;
  const rt::Backtrace* b = collect_backtrace(bt);
  rt::write_handle_destroyed(*l, now_ns(), static_cast<uint64_t>(type), handle, b);
}

void on_gc_finalizing(MonoProfiler*) { finalization_event(TYPE_GC | TYPE_GC_FINALIZE_START); }
// Installed always (the heapshot engine's pending requests are served here), the event only with
// finalization events on.
void on_gc_finalized(MonoProfiler*) {
  heapshot::finalized();
  describer_finalized();  // the sample drain's AOT frames (late_describer.h)
  finalization_event(TYPE_GC | TYPE_GC_FINALIZE_END);
}
void on_gc_finalizing_object(MonoProfiler*, MonoObject* o) {
  finalization_object(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START, o);
}
void on_gc_finalized_object(MonoProfiler*, MonoObject* o) {
  finalization_object(TYPE_GC | TYPE_GC_FINALIZE_OBJECT_END, o);
}

void on_root_register(MonoProfiler*, const mono_byte* start, uintptr_t size, MonoGCRootSource source, const void* key,
                      const char* name) {
  if (!active()) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  const size_t len = name ? strnlen(name, 4096) : 0;
  rt::write_root_register(*l, now_ns(), u(start), size, static_cast<uint8_t>(source), u(key), name, len);
}

void on_root_unregister(MonoProfiler*, const mono_byte* start) {
  if (!active()) return;
  if (rt::ThreadLog* l = log()) rt::write_root_unregister(*l, now_ns(), u(start));
}

}  // namespace mlpd::hooks::cb

namespace mlpd::hooks {
void gc_pauses(runtime::GcPauses& out) {
  for (size_t i = 0; i <= runtime::GcPauses::kBounds; ++i)
    out.buckets[i] = cb::g_pause_buckets[i].load(std::memory_order_relaxed);
  out.sum_ns = cb::g_pause_sum_ns.load(std::memory_order_relaxed);
}
}  // namespace mlpd::hooks
