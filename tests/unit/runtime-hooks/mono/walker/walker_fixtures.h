// Shared by the stack walker's unit tests: code ranges with recorded Mono 6.8 prologues (see
// frame_shapes_test.cpp for where the bytes come from) added to the walker's code table, and fake
// MonoMethods made of recorded MonoMethod bytes (runtime-hooks/mono/v6_8/layouts_test.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#include "mono/v6_8/layouts.h"
#include "walker/code_table.h"
#include "walker/generic_instances.h"
#include "walker/native_chains.h"
#include "walker/thread_state.h"
#include "walker/walk.h"

namespace walker_test {

using namespace mlpd::hooks::walker;

// Shapes:Leaf (long,long), first 16 bytes: sub $0x18,%rsp; mov %r14,(%rsp); mov %rdi,%r14; ...
inline constexpr uint8_t kFixedPrologue[16] = {0x48, 0x83, 0xec, 0x18, 0x4c, 0x89, 0x34, 0x24,
                                               0x4c, 0x8b, 0xf7, 0x48, 0x89, 0x74, 0x24, 0x08};
// Shapes:WithTry (int), first 16 bytes: push %rbp; mov %rsp,%rbp; sub $0x30,%rsp; ...
inline constexpr uint8_t kFramePointerPrologue[16] = {0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x30,
                                                      0x4c, 0x89, 0x7d, 0xf8, 0x4c, 0x8b, 0xff, 0x48};

// A fake MonoMethod: the 40 bytes the walker may read (wrapper type: 0, or `wrapper`).
struct alignas(8) FakeMethod {
  uint8_t bytes[40] = {};
  explicit FakeMethod(unsigned wrapper = 0) {
    const uint32_t bits = wrapper << 2;
    std::memcpy(bytes + 32, &bits, 4);
  }
  MonoMethod* get() { return reinterpret_cast<MonoMethod*>(bytes); }
};

// "JIT'd code": 256 bytes starting with a recorded prologue, at a fixed address for the test's life.
struct alignas(64) FakeCode {
  uint8_t bytes[256] = {};
  explicit FakeCode(const uint8_t (&prologue)[16]) {
    std::memset(bytes, 0x90, sizeof bytes);
    std::memcpy(bytes, prologue, sizeof prologue);
  }
  uint64_t start() const { return reinterpret_cast<uint64_t>(bytes); }
};

// The walker's globals as init() makes them, with Mono's exported helpers a test can do without
// (mono_method_get_context: no method is an inflated one).
inline void set_up() {
  REQUIRE(make_code_table());
  REQUIRE(make_signature_sets());
  REQUIRE(make_thread_key());
  take_pid();
  mlpd::hooks::mono_optional.mono_method_get_context = [](MonoMethod*) -> void* { return nullptr; };
  mlpd::hooks::mono_layouts::select(&mlpd::hooks::mono_v6_8::kLayouts);  // the row hooks.cpp selects for 6.8
  REQUIRE(walk_for(&mlpd::hooks::mono_v6_8::kLayouts));
}

// A thread state for a synthetic stack [lo, hi), its caches empty and valid now.
inline ThreadWalk* synthetic_thread(uintptr_t lo, uintptr_t hi) {
  auto* t = new ThreadWalk();
  t->lo = lo;
  t->hi = hi;
  t->bounds_ok = true;
  t->native_tag = (static_cast<uintptr_t>(g_generation.load()) << 1) | 1;
  return t;
}

}  // namespace walker_test
