// The arm64 machine code knowledge of our stack walker, for Mono 6.8's arm64 JIT (issue 23, item 2):
// so far the part read from code bytes, which is machine-independent C++ (unit-tested on every build
// machine on code recorded from Mono 6.8 arm64): the prologue classes of JIT'd methods, the throw
// trampolines' frames and the frame-record step from a frame to its caller.
//
// NOT YET the rest of walker/x86_64/frame_shapes.h's interface (the arm64 MonoLMF and MonoContext
// slots, find_jit_tls, the generic-context base registers, libunwind-aarch64's names and
// unwind_set_start), nor the places where the walker's shared code assumes x86-64's call convention
// (walk.cpp's `sp = slot + 8` for the innermost managed frame; native_chains.cpp's return addresses at
// sp - 8; learn_top's slot -8): so the walker is not built on arm64 (runtime-hooks/CMakeLists.txt,
// MLPD_WALKER_BUILT) and every arm64 backtrace is Mono's walk. docs/design.md, "Porting".
#pragma once

#include <cstddef>
#include <cstdint>

#include "walker/code_table.h"
#include "walker/thread_state.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker::aarch64 {

// ---- prologues ---------------------------------------------------------------------------------

// The frame shape of the code at `c` (`size` bytes; e.start is its address): kFramePointer with
// e.frame = the distance from the frame record (where x29 points once the prologue has run) to the
// caller's stack pointer, and e.body = the first instruction after `mov x29, sp`; else kUnsure.
void classify(const uint8_t* c, uint64_t size, CodeEntry& e);

// ---- throw trampolines -------------------------------------------------------------------------

struct TrampolineFrame {
  uint32_t size = 0;  // from the trampoline's frame record (its sp at the call) to its caller's sp
};
constexpr size_t kTrampolineScan = 512;

// The frame of the trampoline whose code ends with the call that returns to the end of `code`
// (`len` bytes, the last instruction the call). False when it is not read as one.
bool decode_trampoline(const uint8_t* code, size_t len, TrampolineFrame& f);

// ---- one frame up ------------------------------------------------------------------------------

// The caller of a managed frame with a frame record at fp (x29) inside stack bounds ending at hi:
// [fp] is the caller's x29, [fp + 8] the return address (x30 as the prologue stored it), and the
// caller's sp is fp + e.frame. False when the frame cannot be stepped.
inline bool caller_frame(const CodeEntry& e, uintptr_t hi, uint64_t sp, uint64_t fp, uint64_t& ret,
                         uint64_t& caller_sp, uint64_t& caller_fp) {
  if (e.kind != kFramePointer || (fp & 15) != 0) return false;
  if (fp < sp || fp > hi || hi - fp < 16 || hi - fp < e.frame || e.frame < 16) return false;
  caller_fp = load(fp);
  ret = load(fp + 8);
  caller_sp = fp + e.frame;
  return true;
}

}  // namespace mlpd::hooks::walker::aarch64
#pragma GCC visibility pop
