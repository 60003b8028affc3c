// An address or id as the reader prints it in messages and names: 0x followed by lowercase hex.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace mlpd {

inline std::string hex(uint64_t v) {
  char buf[24] = {'0', 'x'};
  const auto r = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

}  // namespace mlpd
