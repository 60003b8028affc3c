// Mono 6.8's MonoJitInfo and MonoGenericJitInfo readers (layouts.h).
#include "mono/v6_8/layouts.h"

#include <algorithm>

namespace mlpd::hooks::mono_v6_8 {

JitInfoHead parse_jit_info_head(const uint8_t* head) {
  JitInfoHead h;
  uint32_t bits;
  std::memcpy(&h.method, head, 8);
  std::memcpy(&h.code_start, head + 16, 8);
  std::memcpy(&h.code_size, head + 28, 4);
  std::memcpy(&bits, head + 32, 4);
  h.clauses = bits & 0x7fff;
  h.has_generic_jit_info = (bits >> 16) & 1;
  return h;
}

GenericJitInfo parse_generic_jit_info(const uint8_t* gi) {
  GenericJitInfo g;
  std::memcpy(&g.nlocs, gi + 8, 4);
  std::memcpy(&g.locations, gi + 16, 8);
  std::memcpy(&g.this_offset, gi + 24, 4);
  g.this_reg = gi[28];
  g.has_this = gi[29] & 1;
  g.this_in_reg = (gi[29] >> 1) & 1;
  return g;
}

bool context_slot(const GenericJitInfo& g, const uint8_t* locs, uint64_t code_size, ContextSlot& out) {
  if (!g.has_this || g.nlocs < 0 || static_cast<uint32_t>(g.nlocs) > kMaxLocs) return false;
  out = ContextSlot{g.this_reg, g.this_offset, 0};
  if (g.nlocs > 0) {
    if (!locs) return false;
    // The entry that is the first to hold every offset from its `from` to the end (earlier entries all
    // end before it starts): from there on, Mono's walk reads it.
    int32_t ends_before = 0;
    for (int32_t i = 0; i < g.nlocs; ++i) {
      int32_t loc[5];
      std::memcpy(loc, locs + static_cast<size_t>(i) * kLocSize, sizeof loc);
      const int32_t is_reg = loc[0], r = loc[1], off = loc[2], f = loc[3], to = loc[4];
      if (f < 0 || (to != 0 && to < f)) return false;
      if (to == 0 || static_cast<uint64_t>(to) > code_size) {
        if (is_reg || f < ends_before) return false;
        out = ContextSlot{r, off, static_cast<uint32_t>(f)};
        return true;
      }
      ends_before = std::max(ends_before, to);
    }
    return false;
  }
  return !g.this_in_reg;
}

}  // namespace mlpd::hooks::mono_v6_8
