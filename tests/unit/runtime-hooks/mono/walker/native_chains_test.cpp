// The learned native chains (runtime-hooks/src/mono/walker/native_chains.h): a chain's slots checked on a
// synthetic stack, publishing, and learning a real chain with libunwind on this thread's stack.
#include "mlpd_catch.h"

#include <mutex>

#include "walker_fixtures.h"

using namespace walker_test;

TEST_CASE("native chains: a chain's slots match only where every slot holds its value") {
  alignas(16) uint64_t stack[32] = {};
  const auto base = reinterpret_cast<uintptr_t>(stack);
  const Bounds b{base, base + sizeof stack};
  Signature s;
  s.n = 3;
  s.off[0] = 8 * 4;
  s.val[0] = 0x401000;
  s.off[1] = -8 * 2;
  s.val[1] = 0x402000;
  s.off[2] = 8 * 10;
  s.val[2] = 0x403000;
  set_bounds(s);
  CHECK(s.lowest == -16);
  CHECK(s.highest == 80);
  const uintptr_t at = base + 8 * 8;
  stack[12] = 0x401000;
  stack[6] = 0x402000;
  stack[18] = 0x403000;
  CHECK(slots_match(s, at, b));
  stack[18] = 0x403001;
  CHECK_FALSE(slots_match(s, at, b));
  stack[18] = 0x403000;
  // The same chain measured from a base whose slots would leave the stack: not read at all.
  CHECK_FALSE(slots_match(s, base + 8 * 25, b));
  CHECK_FALSE(slots_match(s, base, b));
}

TEST_CASE("native chains: published chains are copies, their checks due again") {
  static SignatureSet set;
  Signature s;
  s.n = 2;
  s.off[0] = 8;
  s.val[0] = 1;
  s.off[1] = 16;
  s.val[1] = 2;
  s.managed_slot = 24;
  s.fp_loc = 32;
  set_bounds(s);
  s.checks_left.store(0);
  REQUIRE(publish(set, s));
  CHECK(set.count.load() == 1);
  const Signature& d = set.sigs[0];
  CHECK((d.n == 2 && d.off[1] == 16 && d.val[1] == 2 && d.managed_slot == 24 && d.fp_loc == 32));
  CHECK((d.lowest == 8 && d.highest == 16));
  CHECK(d.checks_left.load() == kChecksPerSignature);
  for (unsigned i = 1; i < kMaxSignatures; ++i) REQUIRE(publish(set, s));
  CHECK_FALSE(publish(set, s));  // full
}

namespace {

// Learns the native chain above this function's frame (its caller, Catch's runner ... main, _start),
// as learn_top does above the outermost managed frame (a frame pointer makes the caller's stack
// pointer and rbp known here), and checks it against the stack while this frame is still live.
__attribute__((noinline)) int learn_above_here(Signature& s) {
  auto* frame = static_cast<uint64_t*>(__builtin_frame_address(0));
  const auto ret = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  const uint64_t top_sp = reinterpret_cast<uint64_t>(frame) + 16;
  ThreadWalk* t = thread_walk();
  if (!t) return -1;
  std::lock_guard<std::mutex> lock(g_learn_mutex);
  if (!bind_unwind()) return -1;
  if (!learn_top(ret, top_sp, frame[0], *t, s)) return 0;
  const Bounds b{reinterpret_cast<uintptr_t>(frame), t->hi};
  return slots_match(s, top_sp, b) ? 1 : 2;
}

}  // namespace

TEST_CASE("native chains: a top chain learned with libunwind matches the stack it was learned on") {
  set_up();
  Signature s;
  const int learned = learn_above_here(s);
  if (learned < 0) {
    WARN("libunwind.so.8 not installed: not learned");
    return;
  }
  CHECK(learned == 1);
  CHECK(s.n >= 2);
  CHECK(s.off[0] == -8);
  for (uint32_t k = 1; k < s.n; ++k) CHECK(s.off[k] > 0);
}
