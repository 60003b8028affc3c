// The x86-64 machine code knowledge of our stack walker, for Mono 6.8's amd64 JIT (mini-amd64.c,
// exceptions-amd64.c, tramp-amd64.c; Mono 6.12 emits the same): the prologue classes of JIT'd methods,
// the throw trampolines' frames, the rbp/rsp step from a frame to its caller, the MonoLMF and
// MonoContext register slots, the registers a generic context may live in, and libunwind's x86-64
// register names. The one walker file that depends on both the machine and the Mono version; a new
// ISA adds walker/<isa>/frame_shapes.{h,cpp} with the same names (docs/design.md, "Porting").
#pragma once

#include <cstddef>
#include <cstdint>

#include "mono/optional.h"
#include "mono/layouts.h"
#include "capture/unwind_binding.h"
#include "walker/code_table.h"
#include "walker/native_chains.h"
#include "walker/thread_state.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::walker {

// ---- prologues ---------------------------------------------------------------------------------

// The frame shape of the code at `c` (`size` bytes; e.start is its address): sets e.kind
// (kFramePointer, kFixedFrame or kUnsure), e.body, and for a fixed frame e.frame and e.fp_save.
void classify(const uint8_t* c, uint64_t size, CodeEntry& e);

// ---- throw trampolines -------------------------------------------------------------------------

struct TrampolineFrame {
  uint32_t size = 0;
  int32_t fp_save = -1;
};
constexpr size_t kTrampolineScan = 512;

// The frame of the trampoline whose code ends with the call that returns to the end of `code`
// (`len` bytes, the last one just before the return address). False when it is not read as one.
bool decode_trampoline(const uint8_t* code, size_t len, TrampolineFrame& f);
// The same for the code before return address `ret` in this process (copied, so that unmapped
// memory is an error, not a fault).
bool read_trampoline(uint64_t ret, TrampolineFrame& f);

// ---- where a call keeps its return address -----------------------------------------------------
// The machine facts the shared walk (walk.cpp, native_chains.cpp) asks instead of doing the arithmetic
// itself. amd64: `call` pushes the return address, so it lies in the word just below the caller's
// stack pointer as it is once the call has returned; a function that keeps a frame pointer has its
// caller's stack pointer (its CFA) 16 bytes above its frame address (the saved rbp, the return
// address).
inline constexpr int64_t kWord = 8;
inline constexpr int64_t kReturnSlotBelowSp = 8;
inline constexpr uint64_t kCfaAboveFrame = 16;
// The slot of the return address into the frame whose stack pointer after the return is `sp`.
inline uint64_t return_slot(uint64_t sp) { return sp - kReturnSlotBelowSp; }
// The stack pointer after the return of the call whose return address lies at `slot`.
inline uint64_t sp_after_return(uint64_t slot) { return slot + kReturnSlotBelowSp; }
// The innermost managed frame's stack pointer, reached through bottom chain `s` whose managed return
// address lies at `slot` (the slot decides it: the managed frame's sp is just above it).
inline uint64_t bottom_sp(uintptr_t, uint64_t slot, const Signature&) { return sp_after_return(slot); }
// A throw trampoline of frame f whose sp is `sp`: where its managed caller's return address lies, and
// that caller's stack pointer.
inline uint64_t trampoline_return_slot(const TrampolineFrame& f, uint64_t sp) { return sp + f.size; }
inline uint64_t trampoline_caller_sp(const TrampolineFrame& f, uint64_t sp) { return sp + f.size + kWord; }
// A learned top chain: its first slot is the outermost managed frame's return address, just below
// the top's sp; `top_matches` asks that slot and the others.
inline void top_begin(Signature& s, uint64_t top_ip) {
  s.n = 1;
  s.off[0] = -kReturnSlotBelowSp;
  s.val[0] = top_ip;
}
inline bool top_matches(const Signature& s, uint64_t ip, uint64_t sp, const Bounds& b) {
  return s.val[0] == ip && slots_match(s, sp, b);
}

// ---- one frame up ------------------------------------------------------------------------------

// The caller of a managed frame (ip in entry e, stack pointer sp, rbp) inside stack bounds ending at
// hi: its return address, stack pointer and rbp. False when the frame cannot be stepped.
inline bool caller_frame(const CodeEntry& e, uintptr_t hi, uint64_t sp, uint64_t rbp, uint64_t& ret,
                         uint64_t& caller_sp, uint64_t& caller_fp) {
  if (e.kind == kFramePointer) {
    if (rbp < sp || rbp > hi || hi - rbp < 16) return false;
    caller_fp = load(rbp);
    ret = load(rbp + 8);
    caller_sp = rbp + 16;
  } else {
    if (sp > hi || hi - sp < uint64_t{e.frame} + 8) return false;
    ret = load(sp + e.frame);
    caller_sp = sp + e.frame + 8;
    caller_fp = e.fp_save >= 0 ? load(sp + static_cast<uint32_t>(e.fp_save)) : rbp;
  }
  return true;
}

// ---- generic contexts --------------------------------------------------------------------------

// Mono's amd64 register numbers of the two bases a generic context's stack slot is read from.
constexpr int kRegRsp = 4, kRegRbp = 5;
inline bool context_base_ok(int reg) { return reg == kRegRsp || reg == kRegRbp; }
inline uint64_t context_base(const CodeEntry& e, uint64_t sp, uint64_t rbp) { return e.ctx_base == kRegRbp ? rbp : sp; }

// ---- the LMF -----------------------------------------------------------------------------------

constexpr int kLmfUnknown = 0, kLmfFrame = 1, kLmfNone = 2;  // lmf_frame's answers

// True when a walk whose frame has stack pointer `sp` has passed LMF record `lmf` (mono_find_jit_info_ext
// then drops it): amd64's records lie in the frame of the wrapper or trampoline that pushed them.
[[gnu::always_inline]] inline bool lmf_passed(const mono_layouts::MonoLayouts&, const Bounds&, uint64_t lmf, uint64_t sp) {
  return sp >= lmf;
}

// The MonoLMF, MonoLMFTramp and MonoContext slots are the Mono version's layouts for this machine:
// the selected row's `lmf` (mono/layouts.h; Mono 6.8's amd64 slots in mono/v6_8/layouts.cpp).

// True when `lmf` is the thread's top LMF entry (allocated zeroed at attach: rsp 0, no previous).
// `L`: the selected row (the fast walk is compiled for each row: its offsets are immediates there).
[[gnu::always_inline]] inline bool lmf_is_top(const mono_layouts::MonoLayouts& L, uint64_t lmf) { return load(lmf + L.lmf.sp) == 0 && load(lmf) == 0; }


// The managed frame LMF record `lmf` names (kLmfFrame), read inside `b`, or kLmfUnknown. Inline: the
// fast walk reads one per walk that starts from the LMF, and keeps its state in registers across it.
[[gnu::always_inline]] inline int lmf_record(const mono_layouts::MonoLayouts& L, const Bounds& b, uint64_t lmf, uint64_t& ip, uint64_t& sp,
                      uint64_t& rbp) {
  if ((lmf & 7) != 0 || !readable(b, lmf, L.lmf.lmf_bytes - 8)) return kLmfUnknown;
  const uint64_t prev = load(lmf);
  if (prev & L.lmf_ext_bit) return kLmfUnknown;
  if (prev & L.lmf_tramp_bit) {
    if (!readable(b, lmf, L.lmf.tramp_ctx)) return kLmfUnknown;
    const uint64_t ctx = load(lmf + L.lmf.tramp_ctx);
    if ((ctx & 7) != 0 || !readable(b, ctx, L.lmf.ctx_bytes - 8)) return kLmfUnknown;
    ip = load(ctx + L.lmf.ctx_ip);
    sp = load(ctx + L.lmf.ctx_sp);
    rbp = load(ctx + L.lmf.ctx_fp);
  } else {
    sp = load(lmf + L.lmf.sp);
    rbp = load(lmf + L.lmf.fp);
    if (!readable(b, sp, -8)) return kLmfUnknown;
    ip = load(sp - 8);
  }
  return sp >= b.lo && sp <= b.hi ? kLmfFrame : kLmfUnknown;
}
// Looks for the thread's MonoJitTlsData (sets t.jit_tls when found).
void find_jit_tls(ThreadWalk& t, uintptr_t anchor);

// kLmfFrame: ip, sp and rbp are the managed frame the thread's last LMF names. kLmfNone: the LMF is the
// thread's first (MonoJitTlsData's first_lmf, Mono's "top LMF entry": allocated zeroed at attach, rsp
// 0), where Mono's walk stops at once (mono_arch_unwind_frame: FALSE), so it gives no frame: the
// runtime's own allocations on a thread that never called into native code from managed code, and
// every allocation of a throw (the trace_ips array, a stack overflow's or an exception's made by the
// runtime): managed code calls the throw trampoline directly, which pushes no LMF
// (mini/exceptions-amd64.c, get_throw_trampoline). kLmfUnknown: left to Mono.
[[gnu::always_inline]] inline int lmf_frame(const mono_layouts::MonoLayouts& L, ThreadWalk& t, const Bounds& b, uint64_t& ip, uint64_t& sp,
                     uint64_t& rbp) {
  if (!t.jit_tls) {
    // Until the JIT has set the thread up (the main thread's first allocations) its MonoThreadInfo
    // does not point to it yet: looked for again at the 2nd, 4th, 8th ... 256th walk that wanted it,
    // then every 256th time, at most 64 times.
    const uint32_t k = ++t.lmf_misses;
    if (t.jit_tls_tries >= 64 || ((k & (k - 1)) != 0 && (k & 255) != 0)) return kLmfUnknown;
    find_jit_tls(t, b.lo);
    if (!t.jit_tls) return kLmfUnknown;
  }
  const uint64_t lmf = load(t.jit_tls + L.jit_tls_lmf);
  if (lmf == load(t.jit_tls + L.jit_tls_first_lmf)) {
    // The first LMF: MonoLMF {previous_lmf, rbp, rsp}, on the heap (g_new0), Mono's for the thread's
    // life; rsp 0 marks the top entry (always, but checked).
    if (lmf == 0 || (lmf & 7) != 0) return kLmfUnknown;
    return lmf_is_top(L, lmf) ? kLmfNone : kLmfUnknown;
  }
  return lmf_record(L, b, lmf, ip, sp, rbp);
}

// ---- libunwind (local) -------------------------------------------------------------------------

// The local-only libunwind and its symbols (`unw_step` is `_ULx86_64_step` there).
inline constexpr const char* kUnwindLocalLibrary = "libunwind.so.8";
inline constexpr const char* kUnwindLocalPrefix = "_ULx86_64_";
inline constexpr const char* kUnwindGetcontext = "_Ux86_64_getcontext";
inline void unwind_own_getcontext(UnwindLib&) {}  // the library's getcontext is used
// Steps cursor `c` (made in a callee of collect()) to collect()'s caller: its sp is collect()'s CFA,
// which is kCfaAboveFrame above collect()'s frame address, the anchor (rbp frame: saved rbp, return).
inline bool unwind_to_anchor_caller(const UnwindLib& u, unw_cursor_t* c, uintptr_t anchor) {
  unw_word_t sp = 0;
  for (int i = 0; i < 8 && sp != anchor + kCfaAboveFrame; ++i) {
    if (u.step(c) <= 0 || u.get_reg(c, UNW_REG_SP, &sp) != 0) return false;
  }
  return sp == anchor + kCfaAboveFrame;
}
// Where the frame at cursor `c` (stack pointer sp) has its return address: `call` pushed it just below.
inline bool unwind_return_slot(const UnwindLib&, unw_cursor_t*, uint64_t sp, uint64_t& slot) {
  slot = return_slot(sp);
  return true;
}
// Where the frame at cursor `c` saved the caller's rbp (a memory slot), or false.
bool unwind_saved_fp(const UnwindLib& u, unw_cursor_t* c, uint64_t& addr);
// Makes `uc` (from getcontext) start at ip, sp and rbp.
void unwind_set_start(unw_context_t& uc, uint64_t ip, uint64_t sp, uint64_t rbp);

}  // namespace mlpd::hooks::walker
#pragma GCC visibility pop
