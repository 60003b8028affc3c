// Mono 6.8's internal layouts the agent reads raw (Mono 6.12 keeps every one of them: see
// mono/runtime_version.h), one reader per structure. Pure functions over bytes the caller copied or
// may load: no Mono call, no memory access beyond the bytes given (tests/unit/runtime-hooks/mono/v6_8/layouts_test.cpp
// holds them to blobs recorded from Mono 6.8.0.105 on x86-64), and the version's row of MonoLayouts
// (mono/layouts.h), kLayouts, which also holds the machine's MonoLMF and MonoContext slots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mono/layouts.h"

#pragma GCC visibility push(hidden)
namespace mlpd::hooks::mono_v6_8 {

// ---- MonoMethod (metadata/class-internals.h) ---------------------------------------------------
// struct _MonoMethod {guint16 flags, iflags; guint32 token; MonoClass *klass; MonoMethodSignature
// *signature; const char *name; unsigned inline_info:1, inline_failure:1, wrapper_type:5, ...}: the
// wrapper type (0: none, as MONO_WRAPPER_NONE) is bits 2..6 of the 32-bit word at offset 32. Mono 6.8
// exports no reader for it.
inline constexpr size_t kMethodBitsOffset = 32;
inline unsigned wrapper_type(const void* method) {
  uint32_t bits;
  std::memcpy(&bits, static_cast<const char*>(method) + kMethodBitsOffset, sizeof bits);
  return (bits >> 2) & 31;
}

// ---- MonoGenericInst ---------------------------------------------------------------------------
// True when the instantiation of an inflated method is open, i.e. holds generic parameters: Mono 6.8's
// shared generic code is compiled as such a method (`Select<TSource_REF, TResult_REF>`: the parameters
// are the sharing placeholders). MonoGenericContext is {MonoGenericInst *class_inst, *method_inst};
// MonoGenericInst is {gint32 id; guint type_argc : 22; guint is_open : 1; ...}, so is_open is bit 22
// of the 32-bit word at offset 4.
inline bool open_instantiation(const void* inst) {
  if (!inst) return false;
  uint32_t bits;
  std::memcpy(&bits, static_cast<const char*>(inst) + 4, sizeof bits);
  return (bits >> 22) & 1;
}

// ---- MonoJitTlsData (mini/mini-runtime.h) ------------------------------------------------------
// {gpointer end_of_stack; guint32 stack_size; MonoLMF *lmf; MonoLMF *first_lmf; ...}
inline constexpr size_t kJitTlsEndOfStack = 0, kJitTlsLmf = 16, kJitTlsFirstLmf = 24;
// The words read to recognise a thread's MonoJitTlsData (walker/x86_64/frame_shapes.cpp, find_jit_tls).
inline constexpr size_t kJitTlsWords = 4;

// ---- MonoLMF's link word -----------------------------------------------------------------------
// MonoLMF's first word is previous_lmf, whose bit 1 marks a MonoLMFExt (debugger invoke, interpreter)
// and, on amd64, bit 2 a MonoLMFTramp (a trampoline's record, with its MonoContext); the pointer is
// the rest (mini/exceptions-amd64.c masks ~7). arm64 has no MonoLMFTramp: a trampoline fills a plain
// MonoLMF with its caller's pc, fp and sp (mini/tramp-arm64.c), and the link is masked ~3
// (mini/exceptions-arm64.c, mono_arch_unwind_frame).
inline constexpr size_t kLmfPrevious = 0;
#if defined(__aarch64__)
inline constexpr uint64_t kLmfExtBit = 2, kLmfTrampBit = 0, kLmfFlagBits = 3;
#else
inline constexpr uint64_t kLmfExtBit = 2, kLmfTrampBit = 4, kLmfFlagBits = 7;
#endif
inline uint64_t lmf_previous(uint64_t word) { return word & ~kLmfFlagBits; }

// ---- MonoJitInfo / MonoGenericJitInfo (metadata/domain-internals.h) ----------------------------
// struct _MonoJitInfo {MonoMethod *method; next; gpointer code_start; guint32 unwind_info; int
// code_size; guint32 num_clauses:15, domain_neutral:1, has_generic_jit_info:1, ...; gpointer gc_info;
// gpointer seq_points; MonoJitExceptionInfo clauses[]}: code_start at 16, code_size at 28, the bits at
// 32, clauses at 56, each 64 bytes ({guint32 flags; gint32 exvar_offset; gpointer try_start, try_end,
// handler_start; ...}). The MonoGenericJitInfo follows the clauses: {MonoGenericSharingContext *gsctx;
// int nlocs; MonoDwarfLocListEntry *locations; gint32 this_offset; guint8 this_reg; gboolean
// has_this:1, this_in_reg:1} (has_this is bit 0 of the byte at 29), and a location list entry is
// {gboolean is_reg; int reg, offset, from, to} (20 bytes).
inline constexpr size_t kJiHead = 56, kClauseSize = 64, kClauseAddrs = 8, kGenericJiSize = 32;
inline constexpr uint32_t kMaxClauses = 1024, kMaxLocs = 64;
inline constexpr size_t kLocSize = 20;

using mono_layouts::ContextSlot;
using mono_layouts::GenericJitInfo;
using mono_layouts::JitInfoHead;
// The first kJiHead bytes of a MonoJitInfo.
JitInfoHead parse_jit_info_head(const uint8_t* head);
// Where the clauses and the MonoGenericJitInfo of a MonoJitInfo at `ji` lie.
inline uint64_t clause_address(uint64_t ji, uint32_t i) { return ji + kJiHead + uint64_t{i} * kClauseSize + kClauseAddrs; }
inline uint64_t generic_jit_info_address(uint64_t ji, uint32_t clauses) { return ji + kJiHead + uint64_t{clauses} * kClauseSize; }

// The kGenericJiSize bytes of a MonoGenericJitInfo.
GenericJitInfo parse_generic_jit_info(const uint8_t* gi);

// Where a frame of shared generic code keeps its generic context, as Mono's walk reads it
// (mini-exceptions.c, get_generic_info_from_stack_frame): with a location list, from the first entry
// whose [from, to) holds the frame's code offset (to 0: up to the end); without one, from this_reg, or
// [this_reg + this_offset]. Here: the one place that holds from some code offset to the end of code
// `code_size` bytes long (earlier entries all end before it starts), in a stack slot [reg + offset].
// `locs`: nlocs entries of kLocSize bytes (may be null when nlocs is 0). False when the context is in
// a register or the list has no such entry.
bool context_slot(const GenericJitInfo& g, const uint8_t* locs, uint64_t code_size, ContextSlot& out);

// ---- the row -----------------------------------------------------------------------------------

// The machine's MonoLMF, MonoLMFTramp and MonoContext in Mono 6.8 and 6.12.
constexpr mono_layouts::LmfSlots machine_slots() {
  mono_layouts::LmfSlots s;
#if defined(__x86_64__)
  // amd64: MonoLMF {gpointer previous_lmf; guint64 rbp; guint64 rsp} (mini/mini-amd64.h), MonoLMFTramp
  // {MonoLMF lmf; MonoContext *ctx; ...}, MonoContext's gregs[] (utils/mono-context.h: rsp 4, rbp 5,
  // rip 16).
  s.fp = 8;
  s.sp = 16;
  s.tramp_ctx = 24;
  s.ctx_sp = 4 * 8;
  s.ctx_fp = 5 * 8;
  s.ctx_ip = 16 * 8;
  s.ctx_bytes = 17 * 8;
  s.lmf_bytes = 24;
#elif defined(__aarch64__)
  // arm64: MonoLMF {gpointer previous_lmf; gpointer lmf_addr; host_mgreg_t pc; host_mgreg_t gregs[12]}
  // (mini/mini-arm64.h: MONO_ARCH_NUM_LMF_REGS = 10 callee-saved x19-x28, then fp and sp:
  // MONO_ARCH_LMF_REG_FP 10, MONO_ARCH_LMF_REG_SP 11), so pc at 16, fp at 24 + 80 = 104, sp at 112; 120
  // bytes. A managed-to-native wrapper's record (mini-arm64.c, emit_setup_lmf) names the wrapper itself:
  // pc an instruction of its prologue (`adr`), fp and sp its own; a trampoline's (tramp-arm64.c) names
  // its managed caller: pc the return address, fp and sp the caller's. No MonoLMFTramp, no MonoContext.
  s.fp = 104;
  s.sp = 112;
  s.ip = 16;
  s.lmf_bytes = 120;
#endif
  // Other machines: no slots read (our walker is built for x86-64 and arm64: docs/design.md, "Porting").
  return s;
}

// Mono 6.8's (and 6.12's) MonoLayouts, with this machine's MonoLMF and MonoContext slots. constexpr:
// the fast walk is compiled for it (walker/walk.cpp), so its offsets are immediates there.
inline constexpr mono_layouts::MonoLayouts kLayouts = {
    "v6_8",
    wrapper_type,
    open_instantiation,
    kJitTlsEndOfStack,
    kJitTlsLmf,
    kJitTlsFirstLmf,
    kJitTlsWords,
    kLmfExtBit,
    kLmfTrampBit,
    kLmfFlagBits,
    machine_slots(),
    kJiHead,
    kClauseSize,
    kClauseAddrs,
    kGenericJiSize,
    kLocSize,
    kMaxClauses,
    kMaxLocs,
    parse_jit_info_head,
    parse_generic_jit_info,
    context_slot,
};

static_assert(kJiHead <= mono_layouts::kMaxJiHead && kGenericJiSize <= mono_layouts::kMaxGenericJi &&
              kLocSize <= mono_layouts::kMaxLocSize && kMaxLocs <= mono_layouts::kMaxLocs &&
              kJitTlsWords <= mono_layouts::kMaxJitTlsWords && kJitTlsFirstLmf / 8 < kJitTlsWords &&
              kJitTlsLmf / 8 < kJitTlsWords && kJitTlsEndOfStack / 8 < kJitTlsWords);

}  // namespace mlpd::hooks::mono_v6_8
#pragma GCC visibility pop
