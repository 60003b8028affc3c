// A large output buffer for the CLI's line-per-event commands: values are formatted straight into
// one 1 MiB block (to_chars for numbers; no stdio or iostream work per field), which goes out with
// fwrite whenever it fills up — a line may be split across two writes, which only the byte stream
// sees. A failed write is remembered and later output is dropped.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "mlpd/json.h"

namespace mlpd::cli {

class OutBuffer {
 public:
  explicit OutBuffer(FILE* f) : file_(f), buf_(new char[kSize]) {}
  OutBuffer(const OutBuffer&) = delete;
  OutBuffer& operator=(const OutBuffer&) = delete;
  ~OutBuffer() { flush(); }

  void flush() {
    if (len_ && !failed_ && std::fwrite(buf_.get(), 1, len_, file_) != len_) failed_ = true;
    len_ = 0;
  }
  // True when a write failed (e.g. disk full); the caller reports it.
  bool failed() const { return failed_ || std::ferror(file_); }

  OutBuffer& put(std::string_view s) {
    if (s.size() > kSize - len_) {
      flush();
      if (s.size() >= kSize) {  // too big to buffer: write it through
        if (!failed_ && std::fwrite(s.data(), 1, s.size(), file_) != s.size()) failed_ = true;
        return *this;
      }
    }
    std::memcpy(buf_.get() + len_, s.data(), s.size());
    len_ += s.size();
    return *this;
  }
  OutBuffer& put(char c) {
    room(1)[0] = c;
    ++len_;
    return *this;
  }
  OutBuffer& dec(uint64_t v) {
    char* p = room(24);
    len_ = static_cast<size_t>(std::to_chars(p, p + 24, v).ptr - buf_.get());
    return *this;
  }
  OutBuffer& sdec(int64_t v) {
    char* p = room(24);
    len_ = static_cast<size_t>(std::to_chars(p, p + 24, v).ptr - buf_.get());
    return *this;
  }
  // 0x followed by lower-case hex digits.
  OutBuffer& hex(uint64_t v) {
    char* p = room(24);
    p[0] = '0';
    p[1] = 'x';
    len_ = static_cast<size_t>(std::to_chars(p + 2, p + 24, v, 16).ptr - buf_.get());
    return *this;
  }
  // Shortest round-trip form; non-finite values as nan/inf (JSON callers check first).
  OutBuffer& dbl(double v) {
    char* p = room(40);
    len_ = static_cast<size_t>(std::to_chars(p, p + 40, v).ptr - buf_.get());
    return *this;
  }
  // A signed nanosecond difference as seconds with 9 decimals: [-]S.NNNNNNNNN, with a leading '+'
  // for non-negative values when `plus` is set.
  OutBuffer& seconds(int64_t ns, bool plus) {
    uint64_t mag = static_cast<uint64_t>(ns);
    if (ns < 0) {
      put('-');
      mag = 0 - mag;
    } else if (plus) {
      put('+');
    }
    dec(mag / 1000000000u);
    char* p = room(10);
    p[0] = '.';
    uint64_t f = mag % 1000000000u;
    for (int i = 9; i >= 1; --i) {
      p[i] = static_cast<char>('0' + f % 10);
      f /= 10;
    }
    len_ += 10;
    return *this;
  }
  // Text for a line-oriented dump: bytes below 0x20 and 0x7f become escapes (\n, \t, \r, \xNN) so a
  // value never spans lines; with `quoted`, the value is wrapped in "..." and '"' and '\' are
  // escaped too.
  OutBuffer& text(std::string_view s, bool quoted) {
    if (quoted) put('"');
    size_t run = 0;  // start of the pending run of bytes that need no escape
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.size() - i >= 8) {  // eight bytes at a time while none needs an escape (names are long)
        uint64_t x;
        std::memcpy(&x, s.data() + i, 8);
        if (!escape_in(x, quoted)) {
          i += 7;
          continue;
        }
      }
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != 0x7f && !(quoted && (c == '"' || c == '\\'))) continue;
      put(s.substr(run, i - run));
      run = i + 1;
      switch (c) {
        case '\n': put("\\n"); break;
        case '\t': put("\\t"); break;
        case '\r': put("\\r"); break;
        case '"': put("\\\""); break;
        case '\\': put("\\\\"); break;
        default: {
          static const char kDigits[] = "0123456789abcdef";
          const char e[4] = {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
          put(std::string_view(e, 4));
        }
      }
    }
    put(s.substr(run));
    if (quoted) put('"');
    return *this;
  }
  // A JSON string literal (json.h's escaping: RFC 8259, invalid UTF-8 as U+FFFD).
  OutBuffer& json(std::string_view s) {
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
        scratch_.clear();
        json_escape_into(scratch_, s);
        return put(scratch_);
      }
    }
    return put('"').put(s).put('"');  // plain ASCII: nothing to escape
  }

 private:
  static constexpr size_t kSize = 1u << 20;

  // True when one of the eight bytes of `x` is below 0x20 or 0x7f, or, `quoted`, '"' or '\\' (the
  // bytes text() escapes). Exact as a yes/no: "has a zero byte" and "has a byte below n" (n <= 0x80).
  static bool escape_in(uint64_t x, bool quoted) {
    constexpr uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    auto has_zero = [](uint64_t v) { return (v - ones) & ~v & highs; };
    uint64_t t = ((x - ones * 0x20) & ~x & highs) | has_zero(x ^ (ones * 0x7f));
    if (quoted) t |= has_zero(x ^ (ones * '"')) | has_zero(x ^ (ones * '\\'));
    return t != 0;
  }

  // Space for `n` more bytes (n is small), flushing first when the block is full.
  char* room(size_t n) {
    if (kSize - len_ < n) flush();
    return buf_.get() + len_;
  }

  FILE* file_;
  std::unique_ptr<char[]> buf_;
  size_t len_ = 0;
  bool failed_ = false;
  std::string scratch_;
};

}  // namespace mlpd::cli
