// The stack walker's code table: the JIT'd code ranges it knows (from jit_done), each with the shape
// of its frames, looked up by IP. Entries are immutable (but for `gone`) and never freed (a frame may
// still be looked up by another thread). The table (code_index.h) is ordered by start, and by method
// and domain for removals; it is guarded by g_table_mutex. The per-thread IP cache in front of it is
// thread_state.h's.
#pragma once

#include <mono/metadata/appdomain.h>
#include <mono/metadata/object.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "capture/code_index.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

constexpr uint8_t kNative = 0;        // not JIT code we know: the end of a managed segment
constexpr uint8_t kUnsure = 1;        // JIT code whose frame or method we cannot trust: ask Mono
constexpr uint8_t kFramePointer = 2;  // a frame record: [fp] = caller's fp, the return address beside it (amd64: push rbp; mov rbp,rsp)
constexpr uint8_t kFixedFrame = 3;    // a fixed frame of N bytes, no frame record: the return address at sp+N, fp saved or kept

// One cache line (a walk reads kind, method, body and the frame's shape of every frame's entry).
struct alignas(64) CodeEntry {
  uint64_t start = 0, end = 0;
  uint64_t body = 0;  // where the prologue ends: a frame's IP must be at or after it
  MonoMethod* method = nullptr;
  MonoDomain* domain = nullptr;
  uint8_t kind = kNative;
  // Set (under g_table_mutex) when the range leaves the table (its method freed, its domain unloaded,
  // its memory reused): a thread's cached lookup of it is then stale (see lookup()).
  std::atomic<bool> gone{false};
  uint32_t frame = 0;     // kFixedFrame: N
  int32_t fp_save = -1;  // kFixedFrame: where the prologue saved the frame pointer ([sp+fp_save]); -1: untouched
  // Shared generic code (ctx != kCtxNone): Mono's walk names the instantiation it reads from the frame's
  // generic context, kept in a stack slot at [sp or fp + ctx_offset] from code offset ctx_from on.
  // The method is then looked up by (this entry, context value) in what Mono's walks taught us.
  uint8_t ctx = 0;        // kCtxNone, kCtxValue (the slot holds a vtable or mrgctx), kCtxThis (`this`)
  uint8_t ctx_base = 0;   // the slot's base, in Mono's register numbers of the machine (frame_shapes.h: context_base)
  int32_t ctx_offset = 0;
  uint32_t ctx_from = 0;
};
static_assert(sizeof(CodeEntry) == 64);

constexpr uint8_t kCtxNone = 0, kCtxValue = 1, kCtxThis = 2;

extern const CodeEntry kNativeEntry;

extern std::mutex g_table_mutex;
extern CodeIndex<CodeEntry>* g_table;  // guarded by g_table_mutex
// Bumped on every new code range: every thread's cached "not JIT code" answers are then stale (a
// thread can run new code before its jit_done reaches us). Removed ranges are marked `gone` instead.
extern std::atomic<uint32_t> g_generation;
// For `verbose`: code ranges added (each one a generation), and repeated jit_done events for a range
// already there (Mono 6.12 raises jit_done again whenever it finds code already compiled), ignored.
extern std::atomic<uint64_t> g_ranges_added, g_ranges_repeated;

// The entry holding `ip`, or kNativeEntry (under g_table_mutex).
const CodeEntry* lookup_slow(uint64_t ip);

// Makes the table (init()); false when out of memory.
bool make_code_table();

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
