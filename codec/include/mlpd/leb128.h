// LEB128 as the mlpd format uses it: unsigned (uleb) for times, sizes and counts, signed (sleb) for
// pointer, object and method differences. Values are 64-bit; a 64-bit value takes at most 10 bytes.
// The encoders write into caller-provided memory (the agent's hot path reserves kMaxLeb128 bytes);
// the decoders never read past `end` and reject encodings longer than 10 bytes or with bits beyond 64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlpd {

inline constexpr size_t kMaxLeb128 = 10;

inline uint8_t* put_uleb(uint8_t* p, uint64_t v) {
  // Most values the agent writes (time and pointer deltas) take one or two bytes: no loop for those.
  if (v < 0x80) [[likely]] {
    *p = static_cast<uint8_t>(v);
    return p + 1;
  }
  if (v < 0x4000) {
    p[0] = static_cast<uint8_t>(v | 0x80);
    p[1] = static_cast<uint8_t>(v >> 7);
    return p + 2;
  }
  if (v < 0x200000) {  // three bytes: time deltas of busy code (up to 2 ms)
    p[0] = static_cast<uint8_t>(v | 0x80);
    p[1] = static_cast<uint8_t>((v >> 7) | 0x80);
    p[2] = static_cast<uint8_t>(v >> 14);
    return p + 3;
  }
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline uint8_t* put_sleb(uint8_t* p, int64_t v) {
  if (v >= -64 && v < 64) [[likely]] {
    *p = static_cast<uint8_t>(v & 0x7F);
    return p + 1;
  }
  if (v >= -8192 && v < 8192) {
    p[0] = static_cast<uint8_t>((v & 0x7F) | 0x80);
    p[1] = static_cast<uint8_t>((v >> 7) & 0x7F);
    return p + 2;
  }
  if (v >= -(int64_t{1} << 20) && v < (int64_t{1} << 20)) {  // three bytes: method deltas within 1 MiB
    p[0] = static_cast<uint8_t>((v & 0x7F) | 0x80);
    p[1] = static_cast<uint8_t>(((v >> 7) & 0x7F) | 0x80);
    p[2] = static_cast<uint8_t>((v >> 14) & 0x7F);
    return p + 3;
  }
  for (;;) {
    const uint8_t byte = static_cast<uint8_t>(v & 0x7F);
    v >>= 7;  // arithmetic shift (C++20 defines it for negative values)
    const bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
    if (done) {
      *p++ = byte;
      return p;
    }
    *p++ = byte | 0x80;
  }
}

inline size_t uleb_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

enum class LebStatus : uint8_t { ok, truncated, overflow };

// Decodes one uleb at p; on success advances p. On failure p is left where the value started.
inline LebStatus get_uleb(const uint8_t*& p, const uint8_t* end, uint64_t& out) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (const uint8_t* q = p; q < end; ++q) {
    const uint8_t b = *q;
    if (shift == 63 && (b & 0x7E)) return LebStatus::overflow;  // bits beyond 64
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) {
      out = v;
      p = q + 1;
      return LebStatus::ok;
    }
    shift += 7;
    if (shift > 63) return LebStatus::overflow;  // an 11th byte would follow
  }
  return LebStatus::truncated;
}

inline LebStatus get_sleb(const uint8_t*& p, const uint8_t* end, int64_t& out) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (const uint8_t* q = p; q < end; ++q) {
    const uint8_t b = *q;
    if (shift == 63) {
      // The 10th byte holds only bit 63; the remaining payload bits must be its sign extension.
      if ((b & 0x80) || ((b & 0x7F) != 0 && (b & 0x7F) != 0x7F)) return LebStatus::overflow;
    }
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;  // sign extend
      out = static_cast<int64_t>(v);
      p = q + 1;
      return LebStatus::ok;
    }
    if (shift > 63) return LebStatus::overflow;
  }
  return LebStatus::truncated;
}

}  // namespace mlpd
