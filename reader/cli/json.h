// Minimal JSON output for the CLI's --json modes: strings escaped per RFC 8259 (bytes that are not
// valid UTF-8 are written as U+FFFD so the output is always valid JSON).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd::cli {

void json_escape_into(std::string& out, std::string_view s);

inline std::string json_string(std::string_view s) {
  std::string out;
  json_escape_into(out, s);
  return out;
}

}  // namespace mlpd::cli
