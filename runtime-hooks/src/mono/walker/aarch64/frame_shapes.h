// The arm64 machine code knowledge of our stack walker, for Mono 6.8's arm64 JIT (Mono 6.12 emits the
// same): in namespace aarch64, the part read from code bytes, which is machine-independent C++
// (unit-tested on every build machine on code recorded from Mono 6.8 arm64): the prologue classes of
// JIT'd methods, the throw trampolines' frames and the frame-record step from a frame to its caller.
// On arm64 itself (the walker is built there: runtime-hooks/CMakeLists.txt) the rest of the interface
// walker/x86_64/frame_shapes.h defines, in namespace walker: where calls keep their return addresses
// (in the callee's frame record, not below the caller's sp), the generic-context base registers, the
// arm64 MonoLMF read through the selected row's slots, find_jit_tls, and libunwind-aarch64's names
// with a getcontext of our own (the library's is an inline-asm macro). docs/design.md, "Porting".
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
  int32_t fp_save = 0;  // where the frame record keeps the caller's x29: [sp] (the return address beside it)
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

#if defined(__aarch64__)
// ---- the walker's interface on arm64 (the names walker/x86_64/frame_shapes.h defines) -----------
#include "mono/optional.h"
#include "mono/layouts.h"
#include "capture/unwind_binding.h"
#include "walker/native_chains.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

using aarch64::caller_frame;
using aarch64::classify;
using aarch64::decode_trampoline;
using aarch64::kTrampolineScan;
using aarch64::TrampolineFrame;

// The same for the code before return address `ret` in this process (copied, so that unmapped memory
// is an error, not a fault).
bool read_trampoline(uint64_t ret, TrampolineFrame& f);

// ---- where a call keeps its return address -----------------------------------------------------
// arm64: `bl`/`blr` put the return address in x30, and a function that calls saves it in its frame
// record ({x29, x30} where its x29 points: [fp + 8]); the caller's sp is the callee's CFA. So a return
// address lies in the callee's frame, at a place its CFI (native code) or its prologue (JIT code: the
// record at the bottom of its frame, fp + 8) gives, not at a fixed distance below the caller's sp; the
// learned chains keep each slot's place as libunwind found it (unwind_return_slot) and, for the
// innermost managed frame, its sp (Signature::managed_sp). A frame whose return address is still in
// x30 (a leaf, or a prologue not yet run) never lies between collect() and a managed frame: every
// frame there has called.
inline constexpr int64_t kWord = 8;
inline uint64_t bottom_sp(uintptr_t anchor, uint64_t, const Signature& s) { return anchor + s.managed_sp; }
// A throw trampoline whose sp (its frame record: `stp x29, x30, [sp, #-N]!; mov x29, sp`) is `sp`: its
// managed caller's return address at [sp + 8], x29 at [sp], sp at sp + N.
inline uint64_t trampoline_return_slot(const TrampolineFrame&, uint64_t sp) { return sp + 8; }
inline uint64_t trampoline_caller_sp(const TrampolineFrame& f, uint64_t sp) { return sp + f.size; }
// A learned top chain: the outermost managed frame's return address (kept in its own record, whose
// place off the top's sp depends on that frame's size) is matched by value; the slots are the native
// frames' above it, off the top's sp (the managed frame's CFA).
inline void top_begin(Signature& s, uint64_t top_ip) {
  s.n = 0;
  s.top_ip = top_ip;
}
inline bool top_matches(const Signature& s, uint64_t ip, uint64_t sp, const Bounds& b) {
  return s.top_ip == ip && slots_match(s, sp, b);
}

// ---- generic contexts --------------------------------------------------------------------------

// Mono's arm64 register numbers of the two bases a generic context's stack slot is read from: x29 (the
// JIT addresses its locals off the frame pointer) and sp (31).
constexpr int kRegFp = 29, kRegSp = 31;
inline bool context_base_ok(int reg) { return reg == kRegFp || reg == kRegSp; }
inline uint64_t context_base(const CodeEntry& e, uint64_t sp, uint64_t fp) { return e.ctx_base == kRegFp ? fp : sp; }

// ---- the LMF -----------------------------------------------------------------------------------

constexpr int kLmfUnknown = 0, kLmfFrame = 1, kLmfNone = 2;  // lmf_frame's answers

// True when the walk, at a frame with stack pointer `sp`, has passed LMF record `lmf`: Mono's arm64
// unwinder drops a record once a frame's sp is at or above the sp the record saved (and that is not 0:
// the top entry) (mini/exceptions-arm64.c, mono_arch_unwind_frame). A record that cannot be read is
// dropped (the caller then reads its link only if it can).
[[gnu::always_inline]] inline bool lmf_passed(const mono_layouts::MonoLayouts& L, const Bounds& b, uint64_t lmf, uint64_t sp) {
  if (!readable(b, lmf, L.lmf.sp)) return true;
  const uint64_t saved = load(lmf + L.lmf.sp);
  return saved != 0 && sp >= saved;
}

// True when `lmf` is the thread's top LMF entry (allocated zeroed at attach: sp 0, no previous).
[[gnu::always_inline]] inline bool lmf_is_top(const mono_layouts::MonoLayouts& L, uint64_t lmf) {
  return load(lmf + L.lmf.sp) == 0 && load(lmf) == 0;
}

// The managed frame LMF record `lmf` names (kLmfFrame), read inside `b`, or kLmfUnknown. arm64's
// records are all plain MonoLMFs {previous_lmf, lmf_addr, pc, gregs[12]}: a wrapper's names the wrapper
// (pc an instruction of its prologue, after `mov x29, sp`), a trampoline's its managed caller (pc the
// return address); Mono looks pc - 1 up in both. Here ip is pc + 1, a return address as the walk takes
// them (it looks ip - 1 up and wants it at or after the prologue: a wrapper's pc may be the first
// instruction after it). pc 0 (a jump trampoline's): left to Mono, whose walk stops there.
[[gnu::always_inline]] inline int lmf_record(const mono_layouts::MonoLayouts& L, const Bounds& b, uint64_t lmf, uint64_t& ip,
                                             uint64_t& sp, uint64_t& fp) {
  if ((lmf & 7) != 0 || !readable(b, lmf, L.lmf.lmf_bytes - 8)) return kLmfUnknown;
  const uint64_t prev = load(lmf);
  if (prev & L.lmf_ext_bit) return kLmfUnknown;
  const uint64_t pc = load(lmf + L.lmf.ip);
  if (pc == 0) return kLmfUnknown;
  ip = pc + 1;
  sp = load(lmf + L.lmf.sp);
  fp = load(lmf + L.lmf.fp);
  return sp >= b.lo && sp <= b.hi ? kLmfFrame : kLmfUnknown;
}
// Looks for the thread's MonoJitTlsData (sets t.jit_tls when found).
void find_jit_tls(ThreadWalk& t, uintptr_t anchor);

// kLmfFrame: ip, sp and fp are the managed frame the thread's last LMF names. kLmfNone: the LMF is the
// thread's first (the top entry, zeroed: its pc 0 gives Mono no JIT info, so mono_arch_unwind_frame
// returns FALSE and Mono's walk gives no frame). kLmfUnknown: left to Mono. As on amd64
// (walker/x86_64/frame_shapes.h).
[[gnu::always_inline]] inline int lmf_frame(const mono_layouts::MonoLayouts& L, ThreadWalk& t, const Bounds& b, uint64_t& ip,
                                            uint64_t& sp, uint64_t& fp) {
  if (!t.jit_tls) {
    const uint32_t k = ++t.lmf_misses;
    if (t.jit_tls_tries >= 64 || ((k & (k - 1)) != 0 && (k & 255) != 0)) return kLmfUnknown;
    find_jit_tls(t, b.lo);
    if (!t.jit_tls) return kLmfUnknown;
  }
  const uint64_t lmf = load(t.jit_tls + L.jit_tls_lmf);
  if (lmf == load(t.jit_tls + L.jit_tls_first_lmf)) {
    if (lmf == 0 || (lmf & 7) != 0) return kLmfUnknown;
    return lmf_is_top(L, lmf) ? kLmfNone : kLmfUnknown;
  }
  return lmf_record(L, b, lmf, ip, sp, fp);
}

// ---- libunwind (local) -------------------------------------------------------------------------

// The local-only libunwind and its symbols (`unw_step` is `_ULaarch64_step` there). It exports no
// getcontext (unw_getcontext is an inline-asm macro on arm64): ours, own_getcontext, fills the same
// registers (x0-x30, sp, and pc: its return address, so the context is its caller's at the return).
inline constexpr const char* kUnwindLocalLibrary = "libunwind.so.8";
inline constexpr const char* kUnwindLocalPrefix = "_ULaarch64_";
inline constexpr const char* kUnwindGetcontext = nullptr;
extern "C" int mlpd_aarch64_getcontext(unw_context_t* uc);
inline void unwind_own_getcontext(UnwindLib& u) { u.getcontext = &mlpd_aarch64_getcontext; }
// Steps cursor `c` (made in a callee of collect()) to collect()'s caller: the first frame after those
// whose x29 is the anchor (collect()'s frame record; its callees that keep no frame of their own leave
// x29 as it is). The CFA of collect() is not a fixed distance from its record on arm64 (GCC puts the
// record at the bottom of the frame, its locals above).
bool unwind_to_anchor_caller(const UnwindLib& u, unw_cursor_t* c, uintptr_t anchor);
// Where the frame at cursor `c` has its return address: where its callee saved x30 (a memory slot), or false.
bool unwind_return_slot(const UnwindLib& u, unw_cursor_t* c, uint64_t sp, uint64_t& slot);
// Where the frame at cursor `c` saved the caller's x29 (a memory slot), or false.
bool unwind_saved_fp(const UnwindLib& u, unw_cursor_t* c, uint64_t& addr);
// Makes `uc` (from getcontext) start at ip, sp and x29.
void unwind_set_start(unw_context_t& uc, uint64_t ip, uint64_t sp, uint64_t fp);

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
#endif
