// What the agent reads raw of one Mono version's internals: MonoLayouts, one row per version under
// mono/vN/ (mono/v6_8/layouts.h: kLayouts), chosen once at start by the version detection
// (mono/runtime_version.cpp's table; hooks.cpp selects the row). A version without a row runs with
// the internals off: no row is selected, our walker stays off and every backtrace is Mono's walk.
//
// The walker (walker/) and the code table read only through the selected row: the offsets and bits
// here, and the row's readers of the structures whose layout is more than an offset (MonoJitInfo's
// head, MonoGenericJitInfo, its location list). A new Mono whose layouts differ adds a folder vN/
// with its row and a line in the version table; nothing in the walker changes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlpd::hooks::mono_layouts {

// The largest sizes any row may give (the readers' buffers are this big).
inline constexpr size_t kMaxJiHead = 64, kMaxGenericJi = 48, kMaxLocSize = 32, kMaxLocs = 64;
inline constexpr size_t kMaxJitTlsWords = 8;

// A MonoJitInfo's head as the row's reader finds it.
struct JitInfoHead {
  uint64_t method = 0, code_start = 0;
  int32_t code_size = 0;
  uint32_t clauses = 0;
  bool has_generic_jit_info = false;
};

// A MonoGenericJitInfo as the row's reader finds it.
struct GenericJitInfo {
  int32_t nlocs = 0;
  uint64_t locations = 0;
  int32_t this_offset = 0;
  uint8_t this_reg = 0;
  bool has_this = false, this_in_reg = false;
};

// Where a frame of shared generic code keeps its generic context, as Mono's walk reads it
// (mini-exceptions.c, get_generic_info_from_stack_frame): the one place that holds from some code
// offset to the end of code (earlier location-list entries all end before it starts), in a stack slot
// [reg + offset], reg in Mono's register numbers of the machine.
struct ContextSlot {
  int32_t reg = 0, offset = 0;
  uint32_t from = 0;
};

// The machine's slots of MonoLMF, MonoLMFTramp and MonoContext in this version (they are the
// version's layouts for one machine: mini/mini-<arch>.h, utils/mono-context.h). Byte offsets.
struct LmfSlots {
  int64_t fp = 0, sp = 0;       // MonoLMF: the saved frame and stack pointers
  int64_t ip = 0;               // MonoLMF: the saved pc (arm64; amd64 keeps none: its return address is at [rsp - 8])
  int64_t tramp_ctx = 0;        // MonoLMFTramp: its MonoContext pointer
  int64_t ctx_sp = 0, ctx_fp = 0, ctx_ip = 0;  // MonoContext's registers
  int64_t ctx_bytes = 0;        // MonoContext bytes read (covers the three)
  int64_t lmf_bytes = 0;        // MonoLMF bytes read (the link word and the two pointers)
};

struct MonoLayouts {
  const char* name;  // "v6_8": the `verbose` line's "internals v6_8"

  // MonoMethod: the wrapper type (0: none); MonoGenericInst: is the instantiation open.
  unsigned (*wrapper_type)(const void* method);
  bool (*open_instantiation)(const void* inst);

  // MonoJitTlsData: where its end_of_stack, lmf and first_lmf words lie; the words read to recognise it.
  uint32_t jit_tls_end_of_stack, jit_tls_lmf, jit_tls_first_lmf, jit_tls_words;

  // MonoLMF's link word: the flag bits of a MonoLMFExt and a MonoLMFTramp, and all flag bits (the
  // previous record's pointer is the rest).
  uint64_t lmf_ext_bit, lmf_tramp_bit, lmf_flag_bits;
  LmfSlots lmf;  // this machine's

  // MonoJitInfo and MonoGenericJitInfo: the sizes the readers below take, where clause i's three
  // addresses lie, the limits believed.
  uint32_t ji_head, clause_size, clause_addrs, generic_ji_size, loc_size, max_clauses, max_locs;
  JitInfoHead (*parse_jit_info_head)(const uint8_t* head);  // ji_head bytes
  GenericJitInfo (*parse_generic_jit_info)(const uint8_t* gi);  // generic_ji_size bytes
  // `locs`: nlocs entries of loc_size bytes (null when nlocs is 0). False when the context is in a
  // register or the list has no usable entry.
  bool (*context_slot)(const GenericJitInfo& g, const uint8_t* locs, uint64_t code_size, ContextSlot& out);

  uint64_t lmf_previous(uint64_t word) const { return word & ~lmf_flag_bits; }
  uint64_t clause_address(uint64_t ji, uint32_t i) const { return ji + ji_head + uint64_t{i} * clause_size + clause_addrs; }
  uint64_t generic_jit_info_address(uint64_t ji, uint32_t clauses) const { return ji + ji_head + uint64_t{clauses} * clause_size; }
};

// The row selected at start (nullptr: internals off). The walker runs only with one.
extern __attribute__((visibility("hidden"))) const MonoLayouts* g_selected;
inline const MonoLayouts& selected() { return *g_selected; }
inline void select(const MonoLayouts* row) { g_selected = row; }

}  // namespace mlpd::hooks::mono_layouts
