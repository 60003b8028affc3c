// Shared generic code in the stack walker (runtime-hooks/src/mono/walker/generic_instances.h): the learned
// (code entry, context) pairs, and a frame's context read from its stack slot.
#include "mlpd_catch.h"

#include <mutex>

#include "walker_fixtures.h"

using namespace walker_test;

TEST_CASE("generic instances: pairs learned, found, and forgotten") {
  set_up();
  static CodeEntry a, b;
  static FakeMethod ma, mb;
  forget_generic_instances();
  CHECK(generic_find(&a, 0x1000) == nullptr);
  {
    std::lock_guard<std::mutex> lock(g_generic_mutex);
    REQUIRE(generic_insert(&a, 0x1000, ma.get()));
    REQUIRE(generic_insert(&b, 0x1000, mb.get()));
    REQUIRE(generic_insert(&a, 0x1000, mb.get()));  // already there: kept as learned first
  }
  GenericSlot* s = generic_find(&a, 0x1000);
  REQUIRE(s != nullptr);
  CHECK(s->method == ma.get());
  CHECK(s->checks_left.load() == 2);
  CHECK(generic_find(&b, 0x1000)->method == mb.get());
  CHECK(generic_find(&a, 0x2000) == nullptr);
  SECTION("at most 3/4 full") {
    std::lock_guard<std::mutex> lock(g_generic_mutex);
    uint32_t added = 0;
    while (generic_insert(&b, 0x10000 + 8 * added, ma.get())) ++added;
    CHECK(added + 2 == kGenericSlots / 4 * 3);
  }
  forget_generic_instances();
  CHECK(generic_find(&a, 0x1000) == nullptr);
}

TEST_CASE("generic instances: a frame's context from its stack slot") {
  set_up();
  alignas(16) uint64_t stack[16] = {};
  const auto base = reinterpret_cast<uintptr_t>(stack);
  const Bounds bounds{base, base + sizeof stack};
  ThreadWalk* t = synthetic_thread(bounds.lo, bounds.hi);
  CodeEntry e;
  e.start = 0x40000000;
  e.ctx = kCtxValue;
  e.ctx_base = 4;  // rsp
  e.ctx_offset = 16;
  e.ctx_from = 8;
  stack[2] = 0x7f0000001230;
  uint64_t epoch = 0;
  CHECK(generic_context(*t, e, e.start + 8, base, 0, bounds, epoch) == 0x7f0000001230);
  CHECK(generic_context(*t, e, e.start + 7, base, 0, bounds, epoch) == 0);  // before the slot holds it
  e.ctx_base = 5;  // rbp
  CHECK(generic_context(*t, e, e.start + 8, 0, base, bounds, epoch) == 0x7f0000001230);
  stack[2] = 0x7f0000001231;  // not a pointer
  CHECK(generic_context(*t, e, e.start + 8, 0, base, bounds, epoch) == 0);
  e.ctx_offset = sizeof stack;  // off the stack
  CHECK(generic_context(*t, e, e.start + 8, 0, base, bounds, epoch) == 0);
  // `this`: the object's vtable, its first word.
  alignas(8) static uint64_t object[2] = {0x55aa00001000, 0};
  e.ctx = kCtxThis;
  e.ctx_offset = 16;
  stack[2] = reinterpret_cast<uint64_t>(object);
  CHECK(generic_context(*t, e, e.start + 8, 0, base, bounds, epoch) == 0x55aa00001000);
  delete t;
}
