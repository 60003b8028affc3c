// The arm64 machine code knowledge of our stack walker (frame_shapes.h): read from the instruction
// words only, so it builds and is tested on any machine.
#include "walker/aarch64/frame_shapes.h"

#include <cstring>

namespace mlpd::hooks::walker::aarch64 {

namespace {

uint32_t word(const uint8_t* c, size_t i) {
  uint32_t w;
  std::memcpy(&w, c + i, 4);  // arm64 code is little-endian
  return w;
}

// The instructions of Mono 6.8's arm64 prologues (mini-arm64.c, mono_arch_emit_prolog, and the
// arm64 code emitter's encodings), as words.
constexpr uint32_t kMovFpSp = 0x910003fd;       // mov x29, sp  (add x29, sp, #0)
constexpr uint32_t kStpFpLrSp = 0xa9007bfd;     // stp x29, x30, [sp]
constexpr uint32_t kMovX17Sp = 0x910003f1;      // mov x17, sp
constexpr uint32_t kSubX17X16 = 0xcb100231;     // sub x17, x17, x16
constexpr uint32_t kMovSpX17 = 0x9100023f;      // mov sp, x17
constexpr uint32_t kMaxFrame = 1u << 20;

// stp x29, x30, [sp, #off]! (pre-indexed, 64-bit): the frame record pushed with its frame.
bool stp_fp_lr_pre(uint32_t w, int32_t& off) {
  if ((w & 0xffc07fffu) != 0xa9807bfdu) return false;
  int32_t imm7 = static_cast<int32_t>((w >> 15) & 0x7f);
  if (imm7 & 0x40) imm7 -= 0x80;
  off = imm7 * 8;
  return true;
}

// movz x16, #imm16 (hw 0) and movk x16, #imm16, lsl #16: a large frame's size.
bool movz_x16(uint32_t w, uint32_t& v) {
  if ((w & 0xffe0001fu) != 0xd2800010u) return false;
  v = (w >> 5) & 0xffff;
  return true;
}
bool movk_x16_16(uint32_t w, uint32_t& v) {
  if ((w & 0xffe0001fu) != 0xf2a00010u) return false;
  v |= ((w >> 5) & 0xffff) << 16;
  return true;
}

// An instruction that writes sp: add/sub (immediate or extended register) with Rd = sp, or a load or
// store (pair or single) with write-back to base sp. Enough to tell that a trampoline's frame grows
// after its frame record; the learning's cross-check with Mono's walk covers the rest.
bool writes_sp(uint32_t w) {
  const bool add_sub_imm = (w & 0x1f000000u) == 0x11000000u;
  const bool add_sub_ext = (w & 0x1f200000u) == 0x0b200000u;
  if ((add_sub_imm || add_sub_ext) && (w & 0x1f) == 31) return true;
  const uint32_t rn = (w >> 5) & 0x1f;
  if (rn != 31) return false;
  // load/store pair, pre- or post-indexed (bits 24-23: 01 post, 11 pre)
  if ((w & 0x3a000000u) == 0x28000000u && (((w >> 23) & 3) == 1 || ((w >> 23) & 3) == 3)) return true;
  // load/store register, pre- or post-indexed (bits 11-10: 01 post, 11 pre; bit 21 clear; bit 24 clear)
  if ((w & 0x3b200000u) == 0x38000000u && (((w >> 10) & 3) == 1 || ((w >> 10) & 3) == 3)) return true;
  return false;
}

}  // namespace

// Mono 6.8's arm64 JIT always keeps a frame record (arm64 has no omit-fp: mono_arch_emit_prolog). Seen
// in the code it emits (recorded with jitdump, tests/unit/hooks/walker/aarch64/frame_shapes_test.cpp):
//   stp x29, x30, [sp, #-N]!; mov x29, sp                       frames up to 504 bytes (imm7 * 8)
//   movz x16, #N [movk x16, #N>>16, lsl #16]; mov x17, sp; sub x17, x17, x16; mov sp, x17;
//   stp x29, x30, [sp]; mov x29, sp                             larger frames
// A method with a parameter area for stack arguments lowers sp again after `mov x29, sp` (the same
// x16/x17 sequence); the frame record is where x29 points either way, and the caller's sp is x29 + N.
void classify(const uint8_t* c, uint64_t size, CodeEntry& e) {
  e.kind = kUnsure;
  if (size < 8) return;
  uint32_t n = 0;
  size_t i = 0;
  int32_t off = 0;
  if (stp_fp_lr_pre(word(c, 0), off)) {
    if (off >= 0) return;
    n = static_cast<uint32_t>(-off);
    i = 4;
  } else if (movz_x16(word(c, 0), n)) {
    i = 4;
    if (size >= 8 && movk_x16_16(word(c, 4), n)) i = 8;
    if (size < i + 16 || word(c, i) != kMovX17Sp || word(c, i + 4) != kSubX17X16 || word(c, i + 8) != kMovSpX17 ||
        word(c, i + 12) != kStpFpLrSp) {
      return;
    }
    i += 16;
  } else {
    return;
  }
  if (size < i + 4 || word(c, i) != kMovFpSp) return;
  if (n < 16 || n > kMaxFrame || (n % 16) != 0) return;
  e.kind = kFramePointer;
  e.frame = n;
  e.body = e.start + i + 4;
  e.fp_save = -1;
}

// Mono's arm64 throw trampolines (mini/exceptions-arm64.c, get_throw_trampoline) push a frame record
// with their frame (`stp x29, x30, [sp, #-N]!; mov x29, sp`), store the registers into a MonoContext
// inside it and call into the runtime with `blr`. Read from the code before the return address: the
// call is the last instruction (blr or bl), the last `stp x29, x30, [sp, #-N]!` followed by
// `mov x29, sp` within kTrampolineScan bytes before it gives N, and no instruction between them and
// the call may move sp. The caller's return address is then at [sp + 8], its x29 at [sp], its sp sp + N.
bool decode_trampoline(const uint8_t* code, size_t len, TrampolineFrame& f) {
  if (len < 12) return false;
  len &= ~size_t{3};
  const size_t call = len - 4;
  const uint32_t w = word(code, call);
  const bool blr = (w & 0xfffffc1fu) == 0xd63f0000u;
  const bool bl = (w & 0xfc000000u) == 0x94000000u;
  if (!blr && !bl) return false;
  for (size_t i = call; i >= 8;) {
    i -= 4;
    const uint32_t x = word(code, i);
    int32_t off = 0;
    if (x == kMovFpSp && stp_fp_lr_pre(word(code, i - 4), off)) {
      if (off >= 0 || -off < 16) return false;
      f.size = static_cast<uint32_t>(-off);
      return true;
    }
    if (writes_sp(x)) return false;
  }
  return false;
}

}  // namespace mlpd::hooks::walker::aarch64
