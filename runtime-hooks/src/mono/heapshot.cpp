// The heapshot engine: when to walk the heap, and the walk itself (docs/design.md "Heapshots").
//
// Threads and locks. Everything in gc_event() runs on the collecting thread between the runtime's
// GC events, serialised by the runtime's GC lock, so the engine's per-collection state is plain
// data. From POST_STOP_WORLD to PRE_START_WORLD the world is stopped: any other thread may be
// suspended anywhere, holding any lock (ours, malloc's, the runtime's). So the walk takes no lock it
// might wait for, allocates nothing, and calls only Mono functions that read fields (vtable, class,
// domain id, generation). It writes into the collecting thread's ThreadLog (lock-free buffers; a
// full one goes to the flush queue, the helper, which the runtime does not suspend, keeps writing).
// Requests come from any thread and touch only atomics; the finalizer thread is woken with
// mono_gc_finalize_notify (a sem_post).
#include "mlpd/hooks/heapshot.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "described.h"
#include "heapshot_engine.h"
#include "mlpd/format.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "state.h"

namespace mlpd::hooks {

namespace {

using namespace mlpd::format;

inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Policy: set from any thread, read by the collecting thread.
std::atomic<uint8_t> g_mode{HEAPSHOT_NONE};
std::atomic<uint32_t> g_every_gc{0};
std::atomic<uint32_t> g_every_ms{0};
std::atomic<bool> g_on_shutdown{false};

// Tickets. A request is pending while g_requested > g_begun. Only the collecting thread advances
// g_begun and g_done (one heapshot at a time: the GC lock), so they are plain stores.
std::atomic<uint64_t> g_requested{0};  // the highest ticket handed out
std::atomic<uint64_t> g_begun{0};      // heapshots begun
std::atomic<uint64_t> g_done{0};       // heapshots completely written

// The collecting thread's state across the events of one collection (and between collections).
struct GcState {
  bool walking = false;     // this collection takes heapshot number `shot`
  uint64_t shot = 0;
  uint64_t major_count = 0;  // major collections started (Mono's gc_count, for heapshot=NUMgc)
  uint64_t last_shot_ns = 0;  // 0: the first collection qualifies for heapshot=NUMms, as in Mono
  int max_generation = 1;
};
GcState g_gc;

bool g_bound = false;  // install() ran: the Mono GC functions below are usable

bool pending() {
  return g_requested.load(std::memory_order_acquire) > g_begun.load(std::memory_order_acquire);
}

// Forces major collections on the calling (attached) thread until no request is pending. A forced
// collection is serial, but one that only finishes a concurrent collection already under way is not
// walked; the second one is. Bounded: a request that still cannot be served waits for a later one.
void collect_while_pending() {
  for (int i = 0; i < 2 && pending() && state::active(); ++i) mono.mono_gc_collect(g_gc.max_generation);
}

uint64_t add_request() {
  const uint64_t ticket = g_begun.load(std::memory_order_acquire) + 1;
  uint64_t cur = g_requested.load(std::memory_order_relaxed);
  while (cur < ticket && !g_requested.compare_exchange_weak(cur, ticket, std::memory_order_acq_rel)) {
  }
  return ticket;
}

// Wakes the runtime's finalizer thread, whose finalize-end callback forces the major collection that
// serves a pending request. Before the runtime is initialised there is no finalizer yet: the first
// major serial collection serves the request then.
void wake_finalizer() {
  if (g_bound && state::runtime_ready()) mono.mono_gc_finalize_notify();
}

// -- the heap walk ---------------------------------------------------------------------------------

// Vtables seen in the current walk (open addressing, cleared per walk): each is checked against the
// described set, and described if needed, once per walk. Static storage: nothing is allocated with
// the world stopped. When it fills up, further vtables are checked every time (still correct).
constexpr unsigned kSeenBits = 16;  // 49,152 vtables per walk before the table is full
constexpr size_t kSeenSlots = size_t{1} << kSeenBits;
constexpr size_t kSeenMax = kSeenSlots / 4 * 3;
uint64_t g_seen[kSeenSlots];
size_t g_seen_count = 0;

// True if `vt` was already seen in this walk; otherwise records it (when there is room).
bool seen(uint64_t vt) {
  size_t i = static_cast<size_t>(((vt >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - kSeenBits));
  for (;;) {
    if (g_seen[i] == vt) return true;
    if (g_seen[i] == 0) break;
    i = (i + 1) & (kSeenSlots - 1);
  }
  if (g_seen_count < kSeenMax) {
    g_seen[i] = vt;
    ++g_seen_count;
  }
  return false;
}

struct Walk {
  rt::ThreadLog* log;
};

// "Namespace.Name" with enclosing types joined by '/', as Mono's log profiler names classes before
// the runtime is initialised. Only pointer reads: no allocation (mono_type_get_name allocates).
size_t simple_class_name(MonoClass* k, char* out, size_t cap, int depth = 0) {
  size_t n = 0;
  auto append = [&](const char* s) {
    for (; s && *s && n + 1 < cap; ++s) out[n++] = *s;
  };
  if (MonoClass* outer = mono.mono_class_get_nesting_type(k); outer && depth < 16) {
    n = simple_class_name(outer, out, cap, depth + 1);
    append("/");
  } else if (const char* ns = mono.mono_class_get_namespace(k); ns && *ns) {
    append(ns);
    append(".");
  }
  append(mono.mono_class_get_name(k));
  out[n] = 0;
  return n;
}

// Makes sure `vt` (and its class) is described before the first HEAP_OBJECT that uses it. Almost
// every vtable is, by the runtime's vtable-load callback; not those whose objects were made before
// that callback ran (the runtime publishes a vtable before it raises the callback, and allocates
// e.g. its RuntimeType object in between) nor transparent-proxy vtables. Those are described here,
// in this thread's buffer just before their first use. The described sets' lock is taken per new
// vtable and only with try_lock, and held only for the look-up: the helper (sample drain, metadata)
// needs it too and must go on writing buffers out during the walk. When it cannot be had (a
// suspended thread holds it) the vtable and its class are described here anyway (duplicates are
// harmless to every reader).
void describe(Walk& w, uint64_t vt, uint64_t now) {
  if (seen(vt)) return;
  auto* vtable = reinterpret_cast<MonoVTable*>(vt);
  MonoClass* k = mono.mono_vtable_class(vtable);
  bool vtable_described = false, class_described = false;
  if (described::try_lock()) {
    vtable_described = described::vtable_known_locked(vt);
    class_described = !k || described::class_known_locked(u(k));
    described::unlock();
  }
  if (vtable_described) return;
  if (k && !class_described) {
    char name[1024];
    const size_t len = simple_class_name(k, name, sizeof name);
    rt::write_class_load(*w.log, now, u(k), u(mono.mono_class_get_image(k)), name, len);
  }
  MonoDomain* d = mono.mono_vtable_domain(vtable);
  rt::write_vtable_load(*w.log, now, vt, d ? static_cast<uint64_t>(mono.mono_domain_get_id(d)) : 0, u(k));
}

static_assert(std::is_same_v<uintptr_t, uint64_t>, "offsets are passed through as uint64_t");

// mono_gc_walk_heap's callback: one call per object, and one more per further chunk of at most 128
// references (those calls carry size 0). Written as Mono writes it: one HEAP_OBJECT per call.
int walk_object(MonoObject* obj, MonoClass*, uintptr_t size, uintptr_t num, MonoObject** refs, uintptr_t* offsets,
                void* data) {
  Walk& w = *static_cast<Walk*>(data);
  const uint64_t now = rt::now_ns();
  // The vtable word of a live object after marking has no tag bits; mask them anyway.
  const uint64_t vt = u(mono.mono_object_get_vtable(obj)) & ~uint64_t{7};
  describe(w, vt, now);
  const uint8_t generation = static_cast<uint8_t>(mono.mono_gc_get_generation(obj));
  uint64_t sz = (static_cast<uint64_t>(size) + 7) & ~uint64_t{7};  // heap alignment, as Mono reports it
  uint64_t objs[kHeapRefsPerEvent];
  uintptr_t i = 0;
  do {  // SGen never passes more than 128; split anyway so one event always fits a buffer
    const uint32_t n = static_cast<uint32_t>(std::min<uintptr_t>(num - i, kHeapRefsPerEvent));
    for (uint32_t k = 0; k < n; ++k) objs[k] = u(refs[i + k]);
    rt::write_heap_object(*w.log, now, u(obj), vt, sz, generation, offsets + i, objs, n);
    sz = 0;
    i += n;
  } while (i < num);
  return 0;
}

void walk_heap(rt::ThreadLog& log) {
  std::memset(g_seen, 0, sizeof g_seen);
  g_seen_count = 0;
  Walk w{&log};
  mono.mono_gc_walk_heap(0, walk_object, &w);
}

// A heapshot that lost events (the buffer pool's cap was reached during the walk: the output could
// not keep up) is not silently passed off as complete: one line on stderr. The world is stopped:
// formatted by hand into a stack buffer and written with write(2) (no allocation, no stdio lock).
void say_incomplete(uint64_t shot, uint64_t lost) {
  char line[160];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof line) line[n++] = *s++;
  };
  auto put_num = [&](uint64_t v) {
    char digits[24];
    int d = 0;
    do {
      digits[d++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (d && n < sizeof line) line[n++] = digits[--d];
  };
  put("mlpd: heapshot ");
  put_num(shot);
  put(" is incomplete: ");
  put_num(lost);
  put(" events dropped (the output did not keep up; the buffer pool is full)\n");
  (void)!::write(STDERR_FILENO, line, n);
}

// -- decisions -------------------------------------------------------------------------------------

// Whether the mode asks for a heapshot at this collection (Mono's rules, log.c gc_event).
bool mode_wants(bool major, uint64_t now) {
  if (state::g_paused.load(std::memory_order_relaxed)) return false;  // paused: requested heapshots only
  switch (g_mode.load(std::memory_order_relaxed)) {
    case HEAPSHOT_MAJOR:
      return major;
    case HEAPSHOT_X_GC: {
      const uint32_t every = g_every_gc.load(std::memory_order_relaxed);
      return every != 0 && g_gc.major_count % every == 0;  // 0 majors so far: every collection qualifies
    }
    case HEAPSHOT_X_MS:
      return (now - g_gc.last_shot_ns) / 1000000 >= g_every_ms.load(std::memory_order_relaxed);
    default:  // NONE, ON_DEMAND: requests only
      return false;
  }
}

}  // namespace

void set_heapshot_policy(uint8_t mode, uint32_t every_gc, uint32_t every_ms) {
  g_every_gc.store(every_gc, std::memory_order_relaxed);
  g_every_ms.store(every_ms, std::memory_order_relaxed);
  g_mode.store(mode, std::memory_order_relaxed);
}

void set_heapshot_on_shutdown(bool on) { g_on_shutdown.store(on, std::memory_order_relaxed); }

uint64_t request_heapshot() {
  if (!state::active()) return 0;  // profiling stopped (output failed, shutdown): nothing would take it
  const uint64_t ticket = add_request();
  wake_finalizer();
  return ticket;
}

uint64_t heapshots_done() { return g_done.load(std::memory_order_acquire); }

uint64_t heapshot_now() {
  const uint64_t ticket = add_request();
  // A forced collection is major and serial: it serves the request (unless another collection that
  // began after the request already did).
  if (g_bound && state::runtime_ready()) collect_while_pending();
  return ticket;
}

namespace heapshot {

namespace {
// GC roots (Mono reports them during a collection), in chunks as Mono writes them.
void on_gc_roots(MonoProfiler*, uint64_t count, const mono_byte* const* addresses, MonoObject* const* objects) {
  if (!state::active() || !state::enabled(MASK_GC_ROOT)) return;
  rt::ThreadLog* l = state::thread_log();
  if (!l) return;
  constexpr uint32_t kChunk = 32;
  uint64_t a[kChunk], o[kChunk];
  const uint64_t now = rt::now_ns();
  for (uint64_t i = 0; i < count;) {
    uint32_t n = 0;
    for (; n < kChunk && i < count; ++n, ++i) {
      a[n] = u(addresses[i]);
      o[n] = u(objects[i]);
    }
    rt::write_heap_roots(*l, now, a, o, n);
  }
}
}  // namespace

void apply_roots_callback(bool in_heapshot) {
  state::State* g = state::g;
  if (!g) return;
  const uint32_t mask = state::g_mask.load(std::memory_order_relaxed);
  const bool roots = (mask & MASK_GC_ROOT) && (in_heapshot || g->cfg.roots_every_gc);
  mono.mono_profiler_set_gc_roots_callback(g->handle, roots ? on_gc_roots : nullptr);
}

void install() {
  g_gc.max_generation = mono.mono_gc_max_generation();
  g_bound = true;
}

// No profiler handle of its own: Mono calls every handle's slot for each event it raises, so a
// second handle costs a few instructions on every method enter and leave of a `calls` run.
void finalized() {
  if (g_bound) collect_while_pending();
}

void gc_event(rt::ThreadLog* log, MonoProfilerGCEvent event, uint32_t generation, bool serial) {
  const bool major = static_cast<int>(generation) == g_gc.max_generation;
  switch (event) {
    case MONO_GC_EVENT_POST_STOP_WORLD: {
      // Decided with the world stopped (Mono decides just before): a request from a thread the
      // runtime does not suspend (the command server) made until now is served by this collection.
      g_gc.walking = false;
      const bool wanted = mode_wants(major, rt::now_ns());
      if (major && serial && (wanted || pending())) {
        g_gc.walking = true;
        g_gc.shot = g_begun.load(std::memory_order_relaxed) + 1;
        g_begun.store(g_gc.shot, std::memory_order_release);
        apply_roots_callback(true);
        if (log) rt::write_bare(*log, TYPE_HEAP | TYPE_HEAP_START, rt::now_ns());
      } else if (wanted) {
        // A minor or concurrent collection cannot be walked (dead objects would be listed): ask the
        // finalizer thread for a forced major one, as Mono does.
        add_request();
        wake_finalizer();
      }
      break;
    }
    case MONO_GC_EVENT_START:
      if (major) ++g_gc.major_count;
      break;
    case MONO_GC_EVENT_PRE_START_WORLD: {
      if (!g_gc.walking) break;
      g_gc.walking = false;
      apply_roots_callback(false);
      if (!log) break;
      const uint64_t dropped_before = log->dropped_events();
      log->use_reserve(true);  // the helper may be held up until the world restarts: see design.md
      walk_heap(*log);
      log->use_reserve(false);
      g_gc.last_shot_ns = rt::now_ns();
      rt::write_bare(*log, TYPE_HEAP | TYPE_HEAP_END, g_gc.last_shot_ns);
      log->hand_off();  // the heapshot's end reaches the file before the next one's objects (thread_log.h)
      g_done.store(g_gc.shot, std::memory_order_release);
      if (const uint64_t lost = log->dropped_events() - dropped_before) say_incomplete(g_gc.shot, lost);
      break;
    }
    default:
      break;
  }
}

bool may_happen() {
  return g_mode.load(std::memory_order_relaxed) != HEAPSHOT_NONE || g_on_shutdown.load(std::memory_order_relaxed) ||
         g_requested.load(std::memory_order_relaxed) != 0;
}

void shutdown_begin() {
  if (!g_on_shutdown.load(std::memory_order_relaxed) || !g_bound || !state::active()) return;
  heapshot_now();  // the shutting-down thread is attached: collect right here, as Mono does
}

}  // namespace heapshot

}  // namespace mlpd::hooks
