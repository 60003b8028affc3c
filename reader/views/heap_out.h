// The heap views' text builder (private to reader/views): appends to a std::string what the CLI's
// OutBuffer wrote for `mlpd heapshots`, byte for byte -- integers in decimal, names escaped as
// text() and json() escape them (cli/out_buffer.h), seconds through printf.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "mlpd/json.h"

namespace mlpd::views::detail {

class HeapOut {
 public:
  explicit HeapOut(std::string& s) : s_(s) {}

  HeapOut& put(std::string_view v) {
    s_.append(v);
    return *this;
  }
  HeapOut& put(char c) {
    s_.push_back(c);
    return *this;
  }
  HeapOut& dec(uint64_t v) {
    char buf[24];
    char* p = buf + sizeof buf;
    do {
      *--p = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    s_.append(p, static_cast<size_t>(buf + sizeof buf - p));
    return *this;
  }
  HeapOut& sdec(int64_t v) {
    if (v < 0) {
      s_.push_back('-');
      return dec(0 - static_cast<uint64_t>(v));
    }
    return dec(static_cast<uint64_t>(v));
  }
  // A name in a text line: control bytes (and DEL) as \n, \t, \r or \xHH, the rest as is.
  HeapOut& text(std::string_view v) {
    for (const char ch : v) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != 0x7f) {
        s_.push_back(ch);
        continue;
      }
      switch (c) {
        case '\n': s_.append("\\n"); break;
        case '\t': s_.append("\\t"); break;
        case '\r': s_.append("\\r"); break;
        default: {
          static const char kDigits[] = "0123456789abcdef";
          const char e[4] = {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
          s_.append(e, 4);
        }
      }
    }
    return *this;
  }
  // A JSON string (quoted): plain ASCII as is, anything else through json_escape_into.
  HeapOut& json(std::string_view v) {
    for (const char ch : v) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
        json_escape_into(s_, v);
        return *this;
      }
    }
    return put('"').put(v).put('"');
  }
  // ns as seconds, printf `format` ("%.3f" in text, "%.9f" in JSON).
  HeapOut& seconds(int64_t ns, const char* format) {
    char buf[48];
    std::snprintf(buf, sizeof buf, format, static_cast<double>(ns) / 1e9);
    return put(std::string_view(buf));
  }
  // `v` right-aligned in `width` columns.
  HeapOut& padded(std::string_view v, size_t width) {
    if (v.size() < width) s_.append(width - v.size(), ' ');
    return put(v);
  }

 private:
  std::string& s_;
};

// Hands `out` to `drain` (to be written and cleared) once it holds 64 KiB or more: called by the
// renderers between rows, so that a long listing is written as it is rendered (mlpd/heap_views.h, Drain).
inline void drain_some(std::string& out, const std::function<void(std::string&)>& drain) {
  if (drain && out.size() >= (64u << 10)) drain(out);
}

// "+N" or "-N".
inline std::string signed_str(int64_t v) {
  std::string s = v >= 0 ? "+" : "";
  s += std::to_string(v);
  return s;
}

}  // namespace mlpd::views::detail
