// OutBuffer::text() (mlpd dump's names and strings): the eight-bytes-at-a-time skip must escape exactly
// the bytes the plain byte loop escapes, wherever they fall in a word, quoted or not.
#include "mlpd_catch.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../../../../reader/cli/out_buffer.h"

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

// The hand-rolled integer formatting (mlpd dump's numbers) against snprintf, at every digit count
// and around every power of ten and sixteen, plus random values.
TEST_CASE("OutBuffer numbers: decimal, hex, eight-digit groups and seconds as printf spells them", "[dump]") {
  auto printed = [](const char* fmt, auto v) {
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return std::string(b);
  };
  std::vector<uint64_t> values = {0, 1, 9, 10, 99, 100, UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63};
  for (uint64_t p = 10; p < UINT64_MAX / 10; p *= 10) {
    for (uint64_t d : {p - 1, p, p + 1}) values.push_back(d);
  }
  for (int b = 1; b < 64; ++b) {
    for (uint64_t d : {(uint64_t{1} << b) - 1, uint64_t{1} << b}) values.push_back(d);
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) values.push_back(rng() >> (rng() % 64));
  for (const uint64_t v : values) {
    char buf[64];
    INFO("value " << v);
    REQUIRE(std::string(buf, mlpd::cli::OutBuffer::write_dec(buf, v)) == printed("%llu", static_cast<unsigned long long>(v)));
    REQUIRE(std::string(buf, mlpd::cli::OutBuffer::write_hex(buf, v)) == printed("%llx", static_cast<unsigned long long>(v)));
    mlpd::cli::OutBuffer::write_8digits(buf, static_cast<uint32_t>(v % 100000000u));
    REQUIRE(std::string(buf, 8) == printed("%08u", static_cast<unsigned>(v % 100000000u)));
    const auto ns = static_cast<int64_t>(v);
    const uint64_t mag = ns < 0 ? 0 - v : v;
    const std::string sec = (ns < 0 ? "-" : "+") + printed("%llu", static_cast<unsigned long long>(mag / 1000000000u)) +
                            "." + printed("%09u", static_cast<unsigned>(mag % 1000000000u));
    REQUIRE(std::string(buf, mlpd::cli::OutBuffer::write_seconds(buf, ns, true)) == sec);
  }
}

// The memory kind: it grows up to its limit, then drops the line being written (back to the mark)
// and says so; a file kind writes everything through.
TEST_CASE("OutBuffer in memory stops at its limit and rewinds to the line's start", "[dump]") {
  // Empty text into a buffer whose block is not allocated yet: nothing is copied (a memcpy to a null
  // block, found by decoder_fuzz under UBSan, which the sanitizer runs of this test also catch).
  mlpd::cli::OutBuffer fresh(100);
  fresh.put(std::string_view{});
  REQUIRE(fresh.size() == 0);
  REQUIRE(fresh.view().empty());
  mlpd::cli::OutBuffer m(100);
  m.mark();
  m.put("first line\n");
  m.mark();
  for (int i = 0; i < 50; ++i) m.put("0123456789");
  REQUIRE(m.overflowed());
  m.rewind_to_mark();
  REQUIRE(m.view() == "first line\n");
  m.clear();
  REQUIRE(!m.overflowed());
  REQUIRE(m.size() == 0);
  mlpd::cli::OutBuffer big(SIZE_MAX);
  std::string expect;
  for (int i = 0; i < 100000; ++i) {
    big.dec(static_cast<uint64_t>(i)).put(' ');
    expect += std::to_string(i) + ' ';
  }
  REQUIRE(!big.overflowed());
  REQUIRE(big.view() == expect);
}
