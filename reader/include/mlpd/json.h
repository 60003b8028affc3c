// Minimal JSON output for the reader's JSON (the CLI's --json modes, the report, the exporters): strings escaped per RFC 8259 (bytes that are not
// valid UTF-8 are written as U+FFFD so the output is always valid JSON).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd {

// Appends `s` quoted as a JSON string.
void json_escape_into(std::string& out, std::string_view s);
// Appends the inside of that string (no quotes): for writers that build a string from parts.
void json_escape_body(std::string& out, std::string_view s);
// Length of the valid UTF-8 sequence starting at s[i] (i < s.size()), or 0 when it is not valid.
size_t utf8_length(std::string_view s, size_t i);

inline std::string json_string(std::string_view s) {
  std::string out;
  json_escape_into(out, s);
  return out;
}

}  // namespace mlpd
