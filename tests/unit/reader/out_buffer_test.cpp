// OutBuffer::text() (mlpd dump's names and strings): the eight-bytes-at-a-time skip must escape exactly
// the bytes the plain byte loop escapes, wherever they fall in a word, quoted or not.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "../../../reader/cli/out_buffer.h"

namespace {

// The byte-by-byte definition of text().
std::string reference_text(const std::string& s, bool quoted) {
  std::string out = quoted ? "\"" : "";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (quoted && c == '"') out += "\\\"";
    else if (quoted && c == '\\') out += "\\\\";
    else if (c < 0x20 || c == 0x7f) {
      static const char kDigits[] = "0123456789abcdef";
      out += {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
    } else {
      out += ch;
    }
  }
  if (quoted) out += '"';
  return out;
}

std::string buffered_text(const std::string& s, bool quoted) {
  char* data = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&data, &size);
  REQUIRE(f);
  {
    mlpd::cli::OutBuffer out(f);
    out.text(s, quoted);
  }
  std::fclose(f);
  std::string r(data, size);
  std::free(data);
  return r;
}

}  // namespace

TEST_CASE("OutBuffer::text escapes exactly what the byte loop escapes", "[dump]") {
  // Every byte value at every position of a 19-byte clean name (two words and a tail).
  const std::string clean = "System.Int32:Parse(";
  for (size_t pos = 0; pos < clean.size(); ++pos) {
    for (int v = 0; v < 256; ++v) {
      std::string s = clean;
      s[pos] = static_cast<char>(v);
      for (bool quoted : {false, true}) {
        INFO("pos " << pos << " byte " << v << " quoted " << quoted);
        REQUIRE(buffered_text(s, quoted) == reference_text(s, quoted));
      }
    }
  }
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3000; ++round) {
    std::string s(rng() % 70, 'a');
    for (char& c : s) {
      const uint64_t k = rng();
      c = static_cast<char>(k % 5 == 0 ? (k >> 8) & 0xFF : 0x20 + (k >> 8) % 0x60);
    }
    for (bool quoted : {false, true}) REQUIRE(buffered_text(s, quoted) == reference_text(s, quoted));
  }
}
