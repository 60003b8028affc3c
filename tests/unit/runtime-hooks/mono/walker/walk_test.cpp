// The stack walker's fast walk (runtime-hooks/src/mono/walker/walk.h) on synthetic stacks: a learned bottom
// chain from the walker's frame to the innermost managed frame, a fixed frame (recorded prologue of
// Shapes:Leaf, sub $0x18,%rsp), a frame-pointer frame (Shapes:WithTry), and a learned top chain.
#include "mlpd_catch.h"

#include "mlpd/hooks/stack_walker.h"
#include "walker/walk.h"
#include "walker_fixtures.h"

using namespace walker_test;

namespace {

constexpr uint64_t kNativeRet = 0x7000, kTopRet = 0x7777, kAboveTop = 0x8888;

// stack[0..]: the walker's frame is the anchor (stack + 0).
//   [0]  rbp of the innermost managed frame (the bottom chain's fp_loc 0)
//   [1]  a native return address (the bottom chain's one slot)
//   [2]  return address into Leaf (fixed frame, 0x18): Leaf's sp is stack + 24
//   [6]  Leaf's return address, into WithTry (frame pointer): WithTry's sp is stack + 56
//   [10] WithTry's saved rbp (its rbp is stack + 80), [11] its return address, into native code
//   [13] the top chain's second slot
struct Stack {
  alignas(16) uint64_t w[24] = {};
  uintptr_t at(int i) const { return reinterpret_cast<uintptr_t>(&w[i]); }
};

struct Fixture {
  FakeCode leaf{kFixedPrologue}, with_try{kFramePointerPrologue};
  FakeMethod m_leaf, m_with_try;
  Stack s;
  Signature bottom, top;
  ThreadWalk* t = nullptr;

  Fixture() {
    set_up();
    code_added(m_leaf.get(), nullptr, m_leaf.get(), nullptr, leaf.start(), sizeof leaf.bytes);
    code_added(m_with_try.get(), nullptr, m_with_try.get(), nullptr, with_try.start(), sizeof with_try.bytes);
    s.w[0] = s.at(10);
    s.w[1] = kNativeRet;
    s.w[2] = leaf.start() + 40;
    s.w[6] = with_try.start() + 60;
    s.w[10] = 0;
    s.w[11] = kTopRet;
    s.w[13] = kAboveTop;
    bottom.n = 1;
    bottom.off[0] = 8;
    bottom.val[0] = kNativeRet;
    bottom.managed_slot = 16;
    bottom.fp_loc = 0;
    set_bounds(bottom);
    top.n = 2;
    top.off[0] = -8;
    top.val[0] = kTopRet;
    top.off[1] = 8;
    top.val[1] = kAboveTop;
    set_bounds(top);
    t = synthetic_thread(s.at(0), s.at(24));
  }
  ~Fixture() {
    method_freed(m_leaf.get());
    method_freed(m_with_try.get());
    delete t;
  }
  int walk(MonoMethod** out, uint32_t max, FastResult& r, Signature* b, Signature* tp) {
    return fast_walk(s.at(0), *t, out, max, b, tp, r);
  }
};

}  // namespace

TEST_CASE("fast walk: a synthetic stack with a learned bottom and top") {
  Fixture f;
  MonoMethod* out[8] = {};
  FastResult r;
  REQUIRE(f.walk(out, 8, r, &f.bottom, &f.top) == kOk);
  CHECK(r.n == 2);
  CHECK(out[0] == f.m_leaf.get());
  CHECK(out[1] == f.m_with_try.get());
  CHECK(r.bottom == &f.bottom);
  CHECK(r.top == &f.top);
  CHECK(r.top_ip == kTopRet);
  CHECK(r.top_sp == f.s.at(12));
  CHECK_FALSE(r.lmf);

  SECTION("max frames: stops there, as Mono's walk does") {
    FastResult r1;
    REQUIRE(f.walk(out, 1, r1, &f.bottom, &f.top) == kOk);
    CHECK(r1.n == 1);
  }
  SECTION("no learned chain leads to managed code") {
    FastResult r2;
    CHECK(f.walk(out, 8, r2, nullptr, &f.top) == kNoBottom);
    f.s.w[1] = kNativeRet + 1;  // the native caller is another one now
    CHECK(f.walk(out, 8, r2, &f.bottom, &f.top) == kNoBottom);
  }
  SECTION("the native chain above is not a learned one") {
    FastResult r3;
    CHECK(f.walk(out, 8, r3, &f.bottom, nullptr) == kNoTop);
    CHECK(r3.n == 2);
    f.s.w[13] = kAboveTop + 1;
    CHECK(f.walk(out, 8, r3, &f.bottom, &f.top) == kNoTop);
  }
  SECTION("a return address inside a prologue (a signal's): left to Mono") {
    f.s.w[6] = f.with_try.start() + 2;
    FastResult r4;
    CHECK(f.walk(out, 8, r4, &f.bottom, &f.top) == kNoManaged);
    CHECK(r4.n == 1);
  }
  SECTION("a frame pointer below the stack pointer: left to Mono") {
    f.s.w[0] = f.s.at(3);
    FastResult r5;
    CHECK(f.walk(out, 8, r5, &f.bottom, &f.top) == kNoManaged);
  }
  SECTION("code left to Mono") {
    static FakeCode unsure(kFixedPrologue);
    static FakeMethod instance, shared;
    code_added(instance.get(), nullptr, shared.get(), nullptr, unsure.start(), sizeof unsure.bytes);
    f.s.w[6] = unsure.start() + 60;
    f.t->native_tag = (static_cast<uintptr_t>(g_generation.load()) << 1) | 1;
    FastResult r6;
    CHECK(f.walk(out, 8, r6, &f.bottom, &f.top) == kNoManaged);
    method_freed(instance.get());
  }
  SECTION("the walker's frame outside the thread's stack") {
    FastResult r7;
    CHECK(fast_walk(f.s.at(24), *f.t, out, 8, &f.bottom, &f.top, r7) == kNoBottom);
  }
}
