// The stack walker's code table (runtime-hooks/src/mono/walker/code_table.h): jit_done, method_free and
// domain_unloading on code ranges with recorded prologues.
#include "mlpd_catch.h"

#include "mlpd/hooks/stack_walker.h"
#include "walker_fixtures.h"

using namespace walker_test;

TEST_CASE("code table: ranges added, classified, repeated, freed and unloaded") {
  set_up();
  static FakeCode fixed(kFixedPrologue), framed(kFramePointerPrologue);
  static FakeMethod m1, m2;
  auto* domain = reinterpret_cast<MonoDomain*>(uintptr_t{0xd0d0});
  code_added(m1.get(), nullptr, m1.get(), domain, fixed.start(), sizeof fixed.bytes);
  code_added(m2.get(), nullptr, m2.get(), domain, framed.start(), sizeof framed.bytes);
  const CodeEntry* e1 = lookup_slow(fixed.start() + 100);
  REQUIRE(e1 != &kNativeEntry);
  CHECK(e1->method == m1.get());
  CHECK(e1->kind == kFixedFrame);
  CHECK(e1->frame == 0x18);
  CHECK(e1->body == fixed.start() + 8);
  const CodeEntry* e2 = lookup_slow(framed.start());
  CHECK(e2->method == m2.get());
  CHECK(e2->kind == kFramePointer);
  CHECK(lookup_slow(fixed.start() + sizeof fixed.bytes) != e1);  // the end is not in the range

  SECTION("the same jit_done again changes nothing") {
    const uint64_t repeated = g_ranges_repeated.load();
    const uint32_t generation = g_generation.load();
    code_added(m1.get(), nullptr, m1.get(), domain, fixed.start(), sizeof fixed.bytes);
    CHECK(g_ranges_repeated.load() == repeated + 1);
    CHECK(g_generation.load() == generation);
    CHECK(lookup_slow(fixed.start()) == e1);
  }
  SECTION("a method freed: its range is gone") {
    method_freed(m1.get());
    CHECK(e1->gone.load());
    CHECK(lookup_slow(fixed.start()) == &kNativeEntry);
    CHECK(lookup_slow(framed.start()) == e2);
  }
  SECTION("a domain unloaded: its ranges are gone") {
    domain_unloading(domain);
    CHECK(e1->gone.load());
    CHECK(e2->gone.load());
    CHECK(lookup_slow(framed.start()) == &kNativeEntry);
  }
}

TEST_CASE("code table: a method compiled as a wrapper is named as Mono's walk names it") {
  set_up();
  static FakeCode code(kFixedPrologue);
  static FakeMethod asked, wrapper(6);  // MONO_WRAPPER_MANAGED_TO_NATIVE, as string:FastAllocateString's
  code_added(asked.get(), nullptr, wrapper.get(), nullptr, code.start(), sizeof code.bytes);
  const CodeEntry* e = lookup_slow(code.start() + 20);
  CHECK(e->method == wrapper.get());
  CHECK(e->kind == kFixedFrame);
  method_freed(wrapper.get());
}

TEST_CASE("code table: shared generic code without a readable generic context is left to Mono") {
  set_up();
  static FakeCode code(kFixedPrologue);
  static FakeMethod instance, shared;
  code_added(instance.get(), nullptr, shared.get(), nullptr, code.start(), sizeof code.bytes);
  const CodeEntry* e = lookup_slow(code.start() + 20);
  CHECK(e->kind == kUnsure);
  method_freed(instance.get());
}
