// The arm64 machine code knowledge of our stack walker (frame_shapes.h): read from the instruction
// words only, so it builds and is tested on any machine.
#include "walker/aarch64/frame_shapes.h"

#include <algorithm>
#include <cstddef>
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
// in the code it emits (recorded with jitdump, tests/unit/runtime-hooks/mono/walker/aarch64/frame_shapes_test.cpp):
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

#if defined(__aarch64__)
// ---- the walker's interface on arm64 -----------------------------------------------------------

namespace mlpd::hooks::walker {

bool read_trampoline(uint64_t ret, TrampolineFrame& f) {
  uint8_t code[kTrampolineScan];
  constexpr uint64_t kPage = 4096;
  if (ret <= kTrampolineScan || (ret & 3) != 0) return false;
  // Copied (read_memory), so that an unmapped address is an error, not a fault; the page before the
  // return address's is left out if it cannot be read (the call's own page is code that just ran).
  const uint64_t lo = ret - kTrampolineScan;
  const uint64_t page_start = (ret - 4) & ~(kPage - 1);
  const uint64_t same_page = std::max(lo, page_start);
  size_t len = 0;
  if (lo < page_start && read_memory(lo, code, page_start - lo)) len = page_start - lo;
  if (!read_memory(same_page, code + len, ret - same_page)) return false;
  len += ret - same_page;
  return decode_trampoline(code, len, f);
}

// As on amd64 (walker/x86_64/frame_shapes.cpp, find_jit_tls): the thread's MonoJitTlsData among the
// pointers of the first 2 KiB of its MonoThreadInfo, the one that reads as this thread's (an end of
// stack and a current LMF on this stack above us, or the current LMF the first, and a first LMF that
// is the top entry: a MonoLMF allocated zeroed, 120 bytes on arm64).
void find_jit_tls(ThreadWalk& t, uintptr_t anchor) {
  ++t.jit_tls_tries;
  if (!mono_optional.mono_thread_info_current_unchecked) return;
  const auto info = reinterpret_cast<uint64_t>(mono_optional.mono_thread_info_current_unchecked());
  if (!info) return;
  uint64_t words[256];
  if (!read_memory(info, reinterpret_cast<uint8_t*>(words), sizeof words)) return;
  const mono_layouts::MonoLayouts& L = mono_layouts::selected();
  for (const uint64_t w : words) {
    if (!w || (w & 7) || (w >= t.lo && w <= t.hi)) continue;
    uint64_t j[mono_layouts::kMaxJitTlsWords];
    if (!read_memory(w, reinterpret_cast<uint8_t*>(j), L.jit_tls_words * 8)) continue;
    const uint64_t end_of_stack = j[L.jit_tls_end_of_stack / 8], lmf = j[L.jit_tls_lmf / 8], first = j[L.jit_tls_first_lmf / 8];
    if (end_of_stack < anchor || end_of_stack > t.hi) continue;
    if (!first || (first & 7) != 0) continue;
    if (lmf != first && (lmf < anchor || lmf >= t.hi || (lmf & 7) != 0)) continue;
    uint64_t top[16] = {};
    const size_t top_bytes = static_cast<size_t>(L.lmf.lmf_bytes);
    if (top_bytes > sizeof top || !read_memory(first, reinterpret_cast<uint8_t*>(top), top_bytes)) continue;
    bool zero = true;
    for (size_t i = 0; i < top_bytes / 8; ++i) zero = zero && top[i] == 0;
    if (!zero) continue;
    t.jit_tls = w;
    return;
  }
}

bool unwind_to_anchor_caller(const UnwindLib& u, unw_cursor_t* c, uintptr_t anchor) {
  bool seen = false;
  for (int i = 0; i < 10; ++i) {
    unw_word_t fp = 0, sp = 0;
    if (u.get_reg(c, UNW_AARCH64_X29, &fp) != 0 || u.get_reg(c, UNW_REG_SP, &sp) != 0) return false;
    if (fp == anchor) {
      seen = true;
    } else if (seen) {
      return sp > anchor;  // collect()'s caller: its sp is collect()'s CFA, above the record
    }
    if (u.step(c) <= 0) return false;
  }
  return false;
}

bool unwind_return_slot(const UnwindLib& u, unw_cursor_t* c, uint64_t, uint64_t& slot) {
  unw_save_loc_t loc;
  if (u.get_save_loc(c, UNW_AARCH64_X30, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return false;
  slot = loc.u.addr;
  return true;
}

bool unwind_saved_fp(const UnwindLib& u, unw_cursor_t* c, uint64_t& addr) {
  unw_save_loc_t loc;
  if (u.get_save_loc(c, UNW_AARCH64_X29, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return false;
  addr = loc.u.addr;
  return true;
}

void unwind_set_start(unw_context_t& uc, uint64_t ip, uint64_t sp, uint64_t fp) {
  uc.uc_mcontext.pc = ip;
  uc.uc_mcontext.sp = sp;
  uc.uc_mcontext.regs[29] = fp;
}

// mlpd_aarch64_getcontext(uc): x0-x30, sp and pc (= x30, its return address) into uc->uc_mcontext,
// as libunwind's unw_getcontext macro stores them; returns 0. A leaf that touches neither sp, x29 nor
// x30, so the context is its caller's at the return.
static_assert(offsetof(unw_context_t, uc_mcontext.regs) == 184, "uc_mcontext.regs");
static_assert(offsetof(unw_context_t, uc_mcontext.sp) == 184 + 248 && offsetof(unw_context_t, uc_mcontext.pc) == 184 + 256,
              "uc_mcontext.sp, pc");
asm(R"(
  .text
  .p2align 2
  .globl mlpd_aarch64_getcontext
  .hidden mlpd_aarch64_getcontext
  .type mlpd_aarch64_getcontext, %function
mlpd_aarch64_getcontext:
  stp x0, x1, [x0, #184]
  add x16, x0, #184
  stp x2, x3, [x16, #16]
  stp x4, x5, [x16, #32]
  stp x6, x7, [x16, #48]
  stp x8, x9, [x16, #64]
  stp x10, x11, [x16, #80]
  stp x12, x13, [x16, #96]
  stp x14, x15, [x16, #112]
  stp x16, x17, [x16, #128]
  stp x18, x19, [x16, #144]
  stp x20, x21, [x16, #160]
  stp x22, x23, [x16, #176]
  stp x24, x25, [x16, #192]
  stp x26, x27, [x16, #208]
  stp x28, x29, [x16, #224]
  mov x17, sp
  stp x30, x17, [x16, #240]
  str x30, [x16, #256]
  mov x0, #0
  ret
  .size mlpd_aarch64_getcontext, .-mlpd_aarch64_getcontext
)");

}  // namespace mlpd::hooks::walker
#endif
