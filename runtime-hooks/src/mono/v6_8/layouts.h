// Mono 6.8's internal layouts the agent reads raw (Mono 6.12 keeps every one of them: see
// mono/runtime_version.h), one reader per structure. Pure functions over bytes the caller copied or
// may load: no Mono call, no memory access beyond the bytes given (tests/unit/hooks/v6_8_layouts_test.cpp
// holds them to blobs recorded from Mono 6.8.0.105 on x86-64). The x86-64 register slots of MonoLMF and
// MonoContext are the machine's: walker/x86_64/frame_shapes.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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
// and bit 2 a MonoLMFTramp (a trampoline's record, with its MonoContext); the pointer is the rest.
inline constexpr size_t kLmfPrevious = 0;
inline constexpr uint64_t kLmfExtBit = 2, kLmfTrampBit = 4;
inline uint64_t lmf_previous(uint64_t word) { return word & ~uint64_t{7}; }

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

struct JitInfoHead {
  uint64_t method = 0, code_start = 0;
  int32_t code_size = 0;
  uint32_t clauses = 0;
  bool has_generic_jit_info = false;
};
// The first kJiHead bytes of a MonoJitInfo.
JitInfoHead parse_jit_info_head(const uint8_t (&head)[kJiHead]);
// Where the clauses and the MonoGenericJitInfo of a MonoJitInfo at `ji` lie.
inline uint64_t clause_address(uint64_t ji, uint32_t i) { return ji + kJiHead + uint64_t{i} * kClauseSize + kClauseAddrs; }
inline uint64_t generic_jit_info_address(uint64_t ji, uint32_t clauses) { return ji + kJiHead + uint64_t{clauses} * kClauseSize; }

struct GenericJitInfo {
  int32_t nlocs = 0;
  uint64_t locations = 0;
  int32_t this_offset = 0;
  uint8_t this_reg = 0;
  bool has_this = false, this_in_reg = false;
};
GenericJitInfo parse_generic_jit_info(const uint8_t (&gi)[kGenericJiSize]);

// Where a frame of shared generic code keeps its generic context, as Mono's walk reads it
// (mini-exceptions.c, get_generic_info_from_stack_frame): with a location list, from the first entry
// whose [from, to) holds the frame's code offset (to 0: up to the end); without one, from this_reg, or
// [this_reg + this_offset]. Here: the one place that holds from some code offset to the end of code
// `code_size` bytes long (earlier entries all end before it starts), in a stack slot [reg + offset].
struct ContextSlot {
  int32_t reg = 0, offset = 0;
  uint32_t from = 0;
};
// `locs`: nlocs entries of kLocSize bytes (may be null when nlocs is 0). False when the context is in
// a register or the list has no such entry.
bool context_slot(const GenericJitInfo& g, const uint8_t* locs, uint64_t code_size, ContextSlot& out);

}  // namespace mlpd::hooks::mono_v6_8
#pragma GCC visibility pop
