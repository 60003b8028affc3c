// A method's IL body (ECMA-335 II.25.4) read for one fact: whether its exception-handling clauses
// include a catch or a filter (a frame that may stop an exception), or only finally/fault ones (or
// none). The body comes from the runtime (GetILFunctionBody) but is read as untrusted: every read is
// within `size`, at most 64 sections.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlpd::coreclr {

enum class IlCatch { none, some, unknown };

inline IlCatch il_catch_clauses(const uint8_t* body, size_t size) {
  if (!body || size < 1) return IlCatch::unknown;
  if ((body[0] & 3) == 2) return IlCatch::none;  // tiny header: no clauses
  if ((body[0] & 3) != 3 || size < 12) return IlCatch::unknown;
  auto u16 = [&](size_t at) { return static_cast<uint32_t>(body[at] | body[at + 1] << 8); };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  const uint32_t flags = u16(0) & 0x0fff;
  const size_t header = static_cast<size_t>(body[1] >> 4) * 4;
  if (header < 12) return IlCatch::unknown;
  if (!(flags & 0x8)) return IlCatch::none;  // no "more sections": no clauses
  size_t at = header + u32(4);
  for (int section = 0; section < 64; ++section) {
    at = (at + 3) & ~size_t{3};
    if (at + 4 > size) return IlCatch::unknown;
    const uint8_t kind = body[at];
    const bool fat = kind & 0x40;
    const size_t data = fat ? (u32(at) >> 8) : body[at + 1];
    const size_t clause = fat ? 24 : 12;
    if (data < 4 || at + data > size) return IlCatch::unknown;
    if (kind & 0x01) {  // an exception-handling table
      for (size_t c = at + 4; c + clause <= at + data; c += clause) {
        const uint32_t clause_flags = fat ? u32(c) : u16(c);
        if ((clause_flags & 0x7) == 0 || (clause_flags & 0x1)) return IlCatch::some;  // catch, filter
      }
    }
    if (!(kind & 0x80)) return IlCatch::none;  // the last section
    at += data;
  }
  return IlCatch::unknown;
}

}  // namespace mlpd::coreclr
