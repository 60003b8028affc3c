// The Mono heapshot engine (runtime-hooks/src/mono/heapshot.cpp): which collections are walked (the
// modes, requests, heapshot_now's forced collections, shutdown), the walk itself through a fake
// mono_gc_walk_heap (objects, sizes, generations, references in chunks, vtables described inline
// before first use), the GC roots of the walked collection; the events written are decoded back.
//
// The engine's counters (tickets, heapshots done, major collections) are process-wide and only grow:
// the tests compare with the values they find, and each begins with a collection that serves any
// request left pending.
#include "mlpd_catch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "heapshot_engine.h"
#include "mlpd/format.h"
#include "mlpd/hooks/heapshot.h"
#include "mono_heap_fakes.h"
#include "stderr_capture.h"
#include "temp_dir.h"

using namespace mlpd;
using namespace mlpd::hooks;
using namespace mlpd::test::monofake;

namespace {

rt::ThreadLog* g_log = nullptr;  // the collecting thread's log for the fake mono_gc_collect

// One collection as Mono raises its events, on the calling thread.
void collection(rt::ThreadLog* log, uint32_t generation, bool serial) {
  heapshot::gc_event(log, MONO_GC_EVENT_PRE_STOP_WORLD, generation, serial);
  heapshot::gc_event(log, MONO_GC_EVENT_POST_STOP_WORLD, generation, serial);
  heapshot::gc_event(log, MONO_GC_EVENT_START, generation, serial);
  heapshot::gc_event(log, MONO_GC_EVENT_END, generation, serial);
  heapshot::gc_event(log, MONO_GC_EVENT_PRE_START_WORLD, generation, serial);
  heapshot::gc_event(log, MONO_GC_EVENT_POST_START_WORLD, generation, serial);
}

// The engine for one test: bound to the fakes (max generation 1), no mode, nothing pending.
struct Engine : MonoRoom {
  explicit Engine(uint32_t buffer_bytes = 65536, uint32_t max_buffers = 64)
      : MonoRoom(format::MASK_GC_ROOT, buffer_bytes, max_buffers) {
    world().max_generation = 1;
    heapshot::install();
    set_heapshot_policy(format::HEAPSHOT_NONE, 0, 0);
    set_heapshot_on_shutdown(false);
    g_log = registry.get();
    collection(nullptr, 1, true);  // serves a request an earlier test left (nothing written: no log)
    world().walks = 0;
    world().roots_sets = 0;
    world().on_collect = [](int generation) { collection(g_log, static_cast<uint32_t>(generation), true); };
  }
  ~Engine() {
    set_heapshot_policy(format::HEAPSHOT_NONE, 0, 0);
    set_heapshot_on_shutdown(false);
    g_log = nullptr;
  }
  rt::ThreadLog* log() { return registry.get(); }
};

// A small heap: vtable 0x3000 (class Ns.Outer/Inner, nested, not described before the walk),
// vtable 0x3100 (class Ns.Plain, described by the runtime's load callback before the walk).
void small_heap() {
  World& w = world();
  w.classes = {{0x2000, 0x1000, "Inner", "Ns", 0x2100}, {0x2100, 0x1000, "Outer", "Ns", 0}, {0x2200, 0x1000, "Plain", "Ns", 0}};
  w.vtables = {{0x3000, 0x2000, 0x4000, 7}, {0x3100, 0x2200, 0x4000, 7}};
  HeapObject big{0x7f0000001000, 0x3000 | 1, 1060, 1, {}, {}};  // tag bit in the vtable word; 1060 -> 1064
  for (uint64_t i = 0; i < 130; ++i) {
    big.offsets.push_back(16 + 8 * i);
    big.refs.push_back(i % 9 == 0 ? 0 : 0x7f0000100000 + 32 * i);
  }
  w.heap = {big, {0x7f0000002000, 0x3100, 20, 0, {0x7f0000001000}, {16}}, {0x7f0000003000, 0x3000, 24, 0, {}, {}}};
}

size_t index_of(const std::vector<Event>& events, EventKind k, size_t from = 0) {
  for (size_t i = from; i < events.size(); ++i)
    if (events[i].kind == k) return i;
  return events.size();
}

}  // namespace

TEST_CASE("heapshot: a request is served by the next major serial collection - the walk decodes back",
          "[hooks][heapshot]") {
  Engine e;
  small_heap();
  described::ensure_vtable(fake<MonoVTable>(0x3100));  // as the vtable-load callback would have

  const uint64_t done0 = heapshots_done();
  const uint64_t ticket = request_heapshot();
  CHECK(ticket == done0 + 1);
  CHECK(request_heapshot() == ticket);  // requests before the heapshot begins share its ticket
  CHECK(world().finalize_notifies == 2);  // the finalizer is woken to force a collection
  CHECK(heapshot::may_happen());

  collection(e.log(), 0, true);   // minor: cannot be walked
  collection(e.log(), 1, false);  // major but concurrent: cannot be walked
  CHECK(world().walks == 0);
  CHECK(heapshots_done() == done0);

  // The major serial collection: heap start, the roots Mono reports during it, the walk, heap end.
  heapshot::gc_event(e.log(), MONO_GC_EVENT_POST_STOP_WORLD, 1, true);
  REQUIRE(world().roots_cb != nullptr);  // roots are wanted for a heapshot's collection
  std::vector<const mono_byte*> addresses;
  std::vector<MonoObject*> objects;
  for (uint64_t i = 0; i < 40; ++i) {  // 40: two events (chunks of 32)
    addresses.push_back(fake<mono_byte>(0x600000 + 8 * i));
    objects.push_back(fake<MonoObject>(0x7f0000200000 + 16 * i));
  }
  world().roots_cb(nullptr, addresses.size(), addresses.data(), objects.data());
  heapshot::gc_event(e.log(), MONO_GC_EVENT_START, 1, true);
  CHECK(heapshots_done() == done0);  // begun, not done
  heapshot::gc_event(e.log(), MONO_GC_EVENT_PRE_START_WORLD, 1, true);
  CHECK(world().walks == 1);
  CHECK(heapshots_done() == ticket);
  CHECK(world().roots_cb == nullptr);  // put back: no roots on every collection without roots_every_gc
  heapshot::gc_event(e.log(), MONO_GC_EVENT_POST_START_WORLD, 1, true);
  collection(e.log(), 1, true);  // nothing pending, no mode: not walked
  CHECK(world().walks == 1);

  const auto d = e.decode_all();
  CHECK(d.problems.empty());
  const std::vector<Event>& ev = d.events;
  const size_t start = index_of(ev, EventKind::heap_start);
  const size_t end = index_of(ev, EventKind::heap_end);
  REQUIRE(start < ev.size());
  REQUIRE(end < ev.size());
  CHECK(start < end);
  CHECK(d.of(EventKind::heap_start).size() == 1);
  CHECK(d.of(EventKind::heap_end).size() == 1);

  // Roots: 40, in file order, between the start and the first object.
  std::vector<RootRef> roots;
  for (size_t i = start; i < end; ++i)
    if (ev[i].kind == EventKind::heap_root) roots.insert(roots.end(), ev[i].roots.begin(), ev[i].roots.end());
  CHECK(d.of(EventKind::heap_root).size() == 2);
  REQUIRE(roots.size() == 40);
  for (uint64_t i = 0; i < 40; ++i) {
    CHECK(roots[i].address == 0x600000 + 8 * i);
    CHECK(roots[i].obj == 0x7f0000200000 + 16 * i);
  }

  // Objects: one event per object, plus one per further chunk of references (size 0).
  std::vector<Event> objs;
  for (size_t i = start; i < end; ++i)
    if (ev[i].kind == EventKind::heap_object) objs.push_back(ev[i]);
  REQUIRE(objs.size() == 4);
  CHECK(objs[0].obj == 0x7f0000001000);
  CHECK(objs[0].ptr == 0x3000);  // the tag bits masked
  CHECK(objs[0].size == 1064);   // rounded up to the heap's 8 bytes
  CHECK(objs[0].generation == 1);
  REQUIRE(objs[0].refs.size() == 128);
  CHECK(objs[1].obj == 0x7f0000001000);
  CHECK(objs[1].size == 0);
  REQUIRE(objs[1].refs.size() == 2);
  const HeapObject& big = world().heap[0];
  for (size_t k = 0; k < 130; ++k) {
    const HeapRef& r = k < 128 ? objs[0].refs[k] : objs[1].refs[k - 128];
    CHECK(r.offset == big.offsets[k]);
    CHECK(r.obj == big.refs[k]);
  }
  CHECK(objs[2].obj == 0x7f0000002000);
  CHECK(objs[2].ptr == 0x3100);
  CHECK(objs[2].size == 24);
  CHECK(objs[2].generation == 0);
  REQUIRE(objs[2].refs.size() == 1);
  CHECK(objs[2].refs[0].obj == 0x7f0000001000);
  CHECK(objs[2].refs[0].offset == 16);
  CHECK(objs[3].obj == 0x7f0000003000);
  CHECK(objs[3].refs.empty());

  // Vtable 0x3000 was not described: described in the walk, once, before its first object, with its
  // class named as Mono's log profiler names it before the runtime is initialised.
  const size_t first_obj = index_of(ev, EventKind::heap_object, start);
  std::vector<size_t> vt3000, vt3100;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::vtable_load) continue;
    if (ev[i].ptr == 0x3000) vt3000.push_back(i);
    if (ev[i].ptr == 0x3100) vt3100.push_back(i);
  }
  REQUIRE(vt3000.size() == 1);
  CHECK(vt3000[0] > start);
  CHECK(vt3000[0] < first_obj);
  CHECK(ev[vt3000[0]].ptr2 == 7);  // the domain's id
  CHECK(ev[vt3000[0]].ptr3 == 0x2000);
  CHECK(vt3100.size() == 1);  // described before: not again in the walk
  bool inner_named = false;
  for (size_t i = start; i < first_obj; ++i) {
    if (ev[i].kind == EventKind::class_load && ev[i].ptr == 0x2000) {
      inner_named = true;
      CHECK(ev[i].name == "Ns.Outer/Inner");
      CHECK(ev[i].ptr2 == 0x1000);
    }
  }
  CHECK(inner_named);
}

TEST_CASE("heapshot: the modes choose the collections walked", "[hooks][heapshot]") {
  Engine e;
  small_heap();
  auto walked = [&](uint32_t generation, bool serial) {
    const int before = world().walks;
    collection(e.log(), generation, serial);
    return world().walks - before;
  };

  SECTION("none: no collection") {
    for (int i = 0; i < 3; ++i) CHECK(walked(1, true) == 0);
    CHECK(world().finalize_notifies == 0);
  }
  SECTION("every major collection; a concurrent one asks the finalizer for a forced one") {
    set_heapshot_policy(format::HEAPSHOT_MAJOR, 0, 0);
    CHECK(walked(1, true) == 1);
    CHECK(walked(0, true) == 0);  // minor
    CHECK(world().finalize_notifies == 0);
    const uint64_t done = heapshots_done();
    CHECK(walked(1, false) == 0);  // concurrent: not walked, a request made instead
    CHECK(world().finalize_notifies == 1);
    heapshot::finalized();  // the finalizer thread: forces the collection that serves it
    CHECK(world().collects >= 1);
    CHECK(heapshots_done() == done + 1);
  }
  SECTION("every 3rd major collection") {
    set_heapshot_policy(format::HEAPSHOT_X_GC, 3, 0);
    std::vector<int> shots;
    for (int i = 0; i < 9; ++i) {
      if (walked(1, true)) shots.push_back(i);
      CHECK(walked(0, true) == 0);  // minors do not count
    }
    REQUIRE(shots.size() == 3);
    CHECK(shots[1] - shots[0] == 3);
    CHECK(shots[2] - shots[1] == 3);
  }
  SECTION("at most every N ms") {
    set_heapshot_policy(format::HEAPSHOT_X_MS, 0, 0);  // 0 ms: every major collection
    CHECK(walked(1, true) == 1);
    CHECK(walked(1, true) == 1);
    set_heapshot_policy(format::HEAPSHOT_X_MS, 0, 3600 * 1000);  // an hour since the last one: none
    CHECK(walked(1, true) == 0);
    CHECK(walked(1, true) == 0);
  }
  SECTION("paused: requests only") {
    set_heapshot_policy(format::HEAPSHOT_MAJOR, 0, 0);
    state::g_paused.store(true);
    CHECK(walked(1, true) == 0);
    const uint64_t ticket = request_heapshot();
    CHECK(walked(1, true) == 1);
    CHECK(heapshots_done() == ticket);
  }
  SECTION("on demand: requests only") {
    set_heapshot_policy(format::HEAPSHOT_ON_DEMAND, 0, 0);
    CHECK(walked(1, true) == 0);
    request_heapshot();
    CHECK(walked(1, true) == 1);
    CHECK(walked(1, true) == 0);
  }
  // Every walked collection wrote a whole heapshot: as many starts as ends, alternating.
  const auto d = e.decode_all();
  CHECK(d.problems.empty());
  int open = 0, shots = 0;
  for (const Event& ev : d.events) {
    if (ev.kind == EventKind::heap_start) {
      CHECK(open == 0);
      ++open;
      ++shots;
    } else if (ev.kind == EventKind::heap_end) {
      CHECK(open == 1);
      --open;
    }
  }
  CHECK(open == 0);
  CHECK(shots == world().walks);
}

TEST_CASE("heapshot: heapshot_now forces collections on the calling thread, bounded", "[hooks][heapshot]") {
  Engine e;
  small_heap();
  const uint64_t done = heapshots_done();
  const uint64_t ticket = heapshot_now();
  CHECK(ticket == done + 1);
  CHECK(world().collects == 1);  // one forced major collection served it
  CHECK(heapshots_done() == ticket);

  // Collections that never serve it (the runtime only finishes a concurrent one): two tries, then
  // the request stays pending for a later collection.
  world().on_collect = [](int) { collection(g_log, 0, true); };
  world().collects = 0;
  const uint64_t ticket2 = heapshot_now();
  CHECK(world().collects == 2);
  CHECK(heapshots_done() == ticket2 - 1);
  collection(e.log(), 1, true);
  CHECK(heapshots_done() == ticket2);

  // Profiling stopped: requests are refused (nothing would take them).
  state::g_active.store(false);
  CHECK(request_heapshot() == 0);
  state::g_active.store(true);

  // Before the runtime is initialised nothing is forced or woken: the first major collection serves.
  state::g_runtime_ready.store(false);
  world().collects = 0;
  world().finalize_notifies = 0;
  const uint64_t ticket3 = request_heapshot();
  heapshot_now();
  CHECK(world().collects == 0);
  CHECK(world().finalize_notifies == 0);
  collection(e.log(), 1, true);
  CHECK(heapshots_done() == ticket3);
}

TEST_CASE("heapshot: heapshot-on-shutdown takes one at shutdown begin", "[hooks][heapshot]") {
  Engine e;
  small_heap();
  const uint64_t done = heapshots_done();
  heapshot::shutdown_begin();  // not asked for
  CHECK(world().collects == 0);
  CHECK(heapshots_done() == done);
  set_heapshot_on_shutdown(true);
  CHECK(heapshot::may_happen());
  heapshot::shutdown_begin();
  CHECK(world().collects == 1);
  CHECK(heapshots_done() == done + 1);
  const auto d = e.decode_all();
  CHECK(d.of(EventKind::heap_start).size() == 1);
  CHECK(d.of(EventKind::heap_object).size() == 4);
  CHECK(d.of(EventKind::heap_end).size() == 1);
}

TEST_CASE("heapshot: roots on every collection only with roots_every_gc, and only when the mask wants them",
          "[hooks][heapshot]") {
  Engine e;
  heapshot::apply_roots_callback(false);
  CHECK(world().roots_cb == nullptr);
  e.st.cfg.roots_every_gc = true;
  heapshot::apply_roots_callback(false);
  CHECK(world().roots_cb != nullptr);
  state::g_mask.store(0);
  heapshot::apply_roots_callback(true);
  CHECK(world().roots_cb == nullptr);
  // A roots callback left installed writes nothing once the mask no longer wants roots.
  state::g_mask.store(format::MASK_GC_ROOT);
  heapshot::apply_roots_callback(true);
  REQUIRE(world().roots_cb != nullptr);
  const mono_byte* a[1] = {fake<mono_byte>(0x10)};
  MonoObject* o[1] = {fake<MonoObject>(0x20)};
  world().roots_cb(nullptr, 1, a, o);
  state::g_mask.store(0);
  world().roots_cb(nullptr, 1, a, o);
  const auto d = e.decode_all();
  const auto roots = d.of(EventKind::heap_root);
  REQUIRE(roots.size() == 1);
  REQUIRE(roots[0].roots.size() == 1);
  CHECK(roots[0].roots[0].address == 0x10);
  CHECK(roots[0].roots[0].obj == 0x20);
}

TEST_CASE("heapshot: a walk that lost events says so on stderr", "[hooks][heapshot]") {
  // Buffers of 4 KiB, two at most: a heap of 3,000 objects cannot be written whole.
  Engine e(4096, 2);
  small_heap();
  HeapObject proto = world().heap[2];
  for (uint64_t i = 0; i < 3000; ++i) {
    proto.address = 0x7f0010000000 + 64 * i;
    world().heap.push_back(proto);
  }
  mlpd::test::StderrCapture err;
  const uint64_t ticket = heapshot_now();
  const std::string text = err.text();
  CHECK(heapshots_done() == ticket);  // done (as far as it could be written)
  INFO(text);
  CHECK(text.rfind("mlpd: heapshot " + std::to_string(ticket) + " is incomplete: ", 0) == 0);
  CHECK(text.find(" events dropped (the output did not keep up; the buffer pool is full)\n") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}
