// A large output buffer for the CLI's line-per-event commands: values are formatted straight into
// one block (hand-rolled decimal and hex for integers, to_chars for doubles; no stdio or iostream work
// per field). Two kinds:
//  - to a FILE (OutBuffer(FILE*)): a 1 MiB block that goes out with fwrite whenever it fills up -- a
//    line may be split across two writes, which only the byte stream sees. A failed write is
//    remembered and later output is dropped.
//  - to memory (OutBuffer(limit)): `mlpd dump`'s workers format a buffer's lines into one of these.
//    It grows up to `limit` bytes; a write that would pass it sets overflowed() and rewinds to the
//    last mark() (the start of the line being written), so the caller drops that line and stops:
//    the memory held is at most limit plus a little slack, whatever the input.
#pragma once

#include <algorithm>
#include <bit>
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
  explicit OutBuffer(FILE* f) : file_(f), buf_(new char[kSize]), end_(kSize) {}
  // To memory, up to `limit` bytes (see above).
  explicit OutBuffer(size_t limit) : limit_(limit) {}
  OutBuffer(const OutBuffer&) = delete;
  OutBuffer& operator=(const OutBuffer&) = delete;
  ~OutBuffer() { flush(); }

  void flush() {
    if (!file_) return;
    if (len_ && !failed_ && std::fwrite(buf_.get(), 1, len_, file_) != len_) failed_ = true;
    len_ = 0;
  }
  // True when a write failed (e.g. disk full); the caller reports it.
  bool failed() const { return failed_ || (file_ && std::ferror(file_)); }

  // Memory kind: what was written, the line start to rewind to, whether the limit was reached.
  std::string_view view() const { return {buf_.get(), len_}; }
  size_t size() const { return len_; }
  void mark() { mark_ = len_; }
  bool overflowed() const { return overflowed_; }
  void rewind_to_mark() { len_ = mark_; }
  void clear() {
    len_ = mark_ = 0;
    overflowed_ = false;
  }
  // Exchanges the contents of two memory buffers (a worker hands its lines over without a copy);
  // each keeps its limit.
  void swap(OutBuffer& o) {
    std::swap(buf_, o.buf_);
    std::swap(end_, o.end_);
    std::swap(len_, o.len_);
    std::swap(mark_, o.mark_);
    std::swap(overflowed_, o.overflowed_);
  }
  // A large block of finished text: flushed, then written directly (no copy into the block).
  OutBuffer& write(std::string_view s) {
    if (!file_ || s.size() < (64u << 10)) return put(s);
    flush();
    return put_through(s);
  }

  OutBuffer& put(std::string_view s) {
    if (s.empty()) return *this;  // nothing to copy, and the block may not exist yet (memcpy of null)
    if (len_ + s.size() > end_) [[unlikely]] {
      if (!make_room(s.size())) return put_through(s);
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
    len_ += write_dec(p, v);
    return *this;
  }
  OutBuffer& sdec(int64_t v) {
    char* p = room(24);
    if (v < 0) {
      *p++ = '-';
      ++len_;
      len_ += write_dec(p, 0 - static_cast<uint64_t>(v));
    } else {
      len_ += write_dec(p, static_cast<uint64_t>(v));
    }
    return *this;
  }
  // 0x followed by lower-case hex digits.
  OutBuffer& hex(uint64_t v) {
    char* p = room(24);
    p[0] = '0';
    p[1] = 'x';
    len_ += 2 + write_hex(p + 2, v);
    return *this;
  }

  // The digits of v at p (at most 20); returns how many.
  static size_t write_dec(char* p, uint64_t v) {
    const size_t n = dec_length(v);
    char* q = p + n;
    while (v >= 100) {
      const unsigned r = static_cast<unsigned>(v % 100);
      v /= 100;
      q -= 2;
      std::memcpy(q, kPairs + 2 * r, 2);
    }
    if (v >= 10) {
      std::memcpy(q - 2, kPairs + 2 * v, 2);
    } else {
      q[-1] = static_cast<char>('0' + v);
    }
    return n;
  }
  static size_t dec_length(uint64_t v) {
    if (v < 10) return 1;
    static constexpr uint64_t kPow10[20] = {1u,
                                            10u,
                                            100u,
                                            1000u,
                                            10000u,
                                            100000u,
                                            1000000u,
                                            10000000u,
                                            100000000u,
                                            1000000000u,
                                            10000000000u,
                                            100000000000u,
                                            1000000000000u,
                                            10000000000000u,
                                            100000000000000u,
                                            1000000000000000u,
                                            10000000000000000u,
                                            100000000000000000u,
                                            1000000000000000000u,
                                            10000000000000000000u};
    const unsigned bits = 64 - static_cast<unsigned>(__builtin_clzll(v | 1));  // 1..64
    const unsigned guess = (bits * 1233) >> 12;                                   // floor(log10(2^bits))
    return guess + (v >= kPow10[guess]);
  }
  // The lower-case hex digits of v at p (at most 16, no leading zeros); returns how many.
  static size_t write_hex(char* p, uint64_t v) {
    const size_t n = v ? static_cast<size_t>((67 - __builtin_clzll(v)) / 4) : 1;
    char* q = p + n;
    while (v >= 0x100) {
      q -= 2;
      std::memcpy(q, kHexPairs + 2 * (v & 0xff), 2);
      v >>= 8;
    }
    if (v >= 0x10) {
      std::memcpy(q - 2, kHexPairs + 2 * v, 2);
    } else {
      q[-1] = kHexPairs[2 * v + 1];
    }
    return n;
  }
  // Exactly 8 digits of v < 10^8 (leading zeros kept) at p: the digits of both halves at once in the
  // lanes of one 64-bit word (4+4 digits in 32-bit lanes, then 2+2 in 16-bit ones, then 1+1 in bytes;
  // each quotient by multiplication, exact in its range: n*5243>>19 = n/100 for n < 10^4, n*103>>10 =
  // n/10 for n < 100; checked for every v < 10^8), little-endian so the first digit is the lowest byte.
  static void write_8digits(char* p, uint32_t v) {
    static_assert(std::endian::native == std::endian::little, "write_8digits stores digits little-endian");
    const uint32_t hi = v / 10000u, lo = v % 10000u;
    const uint64_t x = hi | (static_cast<uint64_t>(lo) << 32);
    const uint64_t q = ((x * 5243u) >> 19) & 0x0000007F0000007Fu;
    const uint64_t y = q | ((x - q * 100u) << 16);
    const uint64_t t = ((y * 103u) >> 10) & 0x000F000F000F000Fu;
    const uint64_t z = (t | ((y - t * 10u) << 8)) | 0x3030303030303030u;
    std::memcpy(p, &z, 8);
  }
  // Space for n <= 64 bytes at the end (room_for), then how many were written there (advance).
  char* room_for(size_t n) { return room(n); }
  void advance(size_t n) { len_ += n; }
  // Copies n <= 64 bytes from p, where 64 bytes are readable (a fixed-size copy: no call).
  OutBuffer& put64(const char* p, size_t n) {
    char* d = room(64);
    std::memcpy(d, p, 64);
    len_ += n;
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
    len_ += write_seconds(room(40), ns, plus);
    return *this;
  }
  // seconds() at p (at most 32 bytes); returns how many.
  static size_t write_seconds(char* p, int64_t ns, bool plus) {
    uint64_t mag = static_cast<uint64_t>(ns);
    char* q = p;
    if (ns < 0) {
      *q++ = '-';
      mag = 0 - mag;
    } else if (plus) {
      *q++ = '+';
    }
    const uint64_t whole = mag / 1000000000u;
    if (whole < 10) {
      *q++ = static_cast<char>('0' + whole);
    } else {
      q += write_dec(q, whole);
    }
    const auto f = static_cast<uint32_t>(mag % 1000000000u);
    q[0] = '.';
    q[1] = static_cast<char>('0' + f / 100000000u);
    write_8digits(q + 2, f % 100000000u);
    return static_cast<size_t>(q + 10 - p);
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

  // Space for `n` more bytes (n is small, at most kSlack), flushing or growing first when needed.
  char* room(size_t n) {
    if (len_ + n > end_) [[unlikely]] make_room(n);
    return buf_.get() + len_;
  }
  // To a file: flushes; true when `n` bytes now fit. To memory: grows, up to the limit; past it,
  // sets overflowed and rewinds to the mark (<= end_) -- the block keeps kSlack bytes beyond end_,
  // so a small write always fits after that -- and returns false (then `n` may not fit).
  bool make_room(size_t n) {
    if (file_) {
      flush();
      return n <= end_;
    }
    if (len_ + n <= limit_) {
      const size_t want = std::min(limit_, std::max({len_ + n, 2 * end_, size_t{64} << 10}));
      std::unique_ptr<char[]> bigger(new char[want + kSlack]);
      if (len_) std::memcpy(bigger.get(), buf_.get(), len_);
      buf_ = std::move(bigger);
      end_ = want;
      return true;
    }
    overflowed_ = true;
    len_ = mark_;
    if (!buf_) buf_.reset(new char[kSlack]);  // end_ is 0
    return false;
  }
  // A string that does not fit: written through to the file; dropped in memory (overflowed).
  OutBuffer& put_through(std::string_view s) {
    if (file_ && !failed_ && std::fwrite(s.data(), 1, s.size(), file_) != s.size()) failed_ = true;
    return *this;
  }

  static constexpr size_t kSlack = 4096;  // > the largest room() request

  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  static constexpr char kHexPairs[] =
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
      "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
      "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
      "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
      "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
      "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
      "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

  FILE* file_ = nullptr;
  std::unique_ptr<char[]> buf_;
  size_t end_ = 0;  // writes stay below this (to memory, kSlack more bytes are allocated)
  size_t len_ = 0;
  size_t limit_ = 0;  // memory kind: the most it holds
  size_t mark_ = 0;
  bool overflowed_ = false;
  bool failed_ = false;
  std::string scratch_;
};

}  // namespace mlpd::cli
