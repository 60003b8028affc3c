// The native call chains around the managed frames, learned once with libunwind and afterwards only
// checked, slot by slot: "bottom" chains lead from the walker's own frame (collect()) to the innermost
// managed frame (Mono's allocator, the profiler dispatch, a throw trampoline), "top" chains from the
// outermost managed frame to the thread's first frame (mono_jit_runtime_invoke ... main or
// start_thread). Published chains are never changed or freed (a walk may be reading one).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "walker/thread_state.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

// The native frames at one end of the managed frames, as libunwind found them once: slot k (at
// base + off[k]) holds return address val[k]. If every slot holds its value again, the native call chain
// is the same as then: the first slot is live (our own return address, or the outermost managed frame's),
// and each matching return address fixes the next frame's size (its CFI row), so the next slot is live
// too. Reads stay inside the thread's stack bounds whatever the memory holds.
constexpr unsigned kMaxPairs = 48;
constexpr unsigned kMaxSignatures = 32;
constexpr int kChecksPerSignature = 4;

struct Signature {
  uint32_t n = 0;
  std::atomic<int> checks_left{kChecksPerSignature};  // (beside n: the struct keeps amd64's size)
  int64_t lowest = 0, highest = 0;  // the lowest and highest slot offsets: one bounds check per signature
  int64_t off[kMaxPairs];
  uint64_t val[kMaxPairs];
  // bottom only: the innermost managed frame's return-address slot and where its frame pointer is saved
  int64_t managed_slot = 0;
  int64_t fp_loc = 0;
  // What arm64 needs besides (amd64 finds both from the slots), one word:
  union {
    // bottom: the innermost managed frame's stack pointer, off the anchor (arm64: its callee's CFA, not
    // found from managed_slot, which lies in the callee's frame record; amd64: managed_slot + 8)
    int64_t managed_sp = 0;
    // top: the return address the walk ended on (arm64: the outermost managed frame's, kept in that
    // frame's own record, whose place depends on its size; amd64: slot 0, just below the top's sp)
    uint64_t top_ip;
  };
};

struct SignatureSet {
  Signature sigs[kMaxSignatures];
  std::atomic<uint32_t> count{0};
};

extern SignatureSet* g_bottom;
extern SignatureSet* g_top;
extern std::mutex g_learn_mutex;
extern std::atomic<int> g_learn_budget;  // libunwind runs (~tens of us each): bounded, in case stacks never settle

inline bool slots_match(const Signature& s, uintptr_t base, const Bounds& b) {
  if (!readable(b, base, s.lowest) || !readable(b, base, s.highest)) return false;
  for (uint32_t k = 0; k < s.n; ++k) {
    if (*reinterpret_cast<const uint64_t*>(base + s.off[k]) != s.val[k]) return false;
  }
  return true;
}

// Sets s.lowest and s.highest from its slots.
void set_bounds(Signature& s);
// Makes the two sets (init()); false when out of memory.
bool make_signature_sets();
// Adds a copy of `s` to `set` (g_learn_mutex held); false when the set is full.
bool publish(SignatureSet& set, const Signature& s);

// Binds libunwind's local interface (g_learn_mutex held): false when it is not installed.
bool bind_unwind();
// The native chain from `anchor` (collect()'s frame) up to the first managed frame (g_learn_mutex held).
bool learn_bottom(uintptr_t anchor, ThreadWalk& t, Signature& s);
// The native chain above the outermost managed frame (return address top_ip, its caller's sp top_sp, with
// frame pointer top_fp), up to the thread's first frame (g_learn_mutex held).
bool learn_top(uint64_t top_ip, uint64_t top_sp, uint64_t top_fp, ThreadWalk& t, Signature& s);

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
