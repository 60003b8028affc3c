// The syntax of the agent's option string (docs/options.md, "Syntax"), shared by the agent's
// table-driven parser (agent/src/option_parser.cpp) and the reader, which reads the agent's options
// back from the file header's args (reader/profile/profile.cpp). Only the syntax lives here: items,
// quotes, escapes and the number forms; what each name means is the agent's option table.
//
// Mono 6.8's splitting (log-args.c): ',' ends an item outside quotes; ' or " open a quoted section that
// only the same quote char closes (the quote chars are dropped); '\' takes the next char literally,
// inside quotes too. Empty items are skipped. Header-only, libc++ only, never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd::option_syntax {

// An item `NAME` or `NAME=VALUE`; only the first '=' separates.
struct Item {
  std::string_view text;  // the whole item, unquoted
  std::string_view name;
  std::string_view value;
  bool has_value = false;
};

inline Item split_item(std::string_view it) noexcept {
  Item r;
  r.text = it;
  const size_t eq = it.find('=');
  r.has_value = eq != std::string_view::npos;
  r.name = it.substr(0, eq);
  if (r.has_value) r.value = it.substr(eq + 1);
  return r;
}

// Why split_items stopped (Ok: the whole string was read).
enum class SplitError : uint8_t { Ok, Nul, TrailingBackslash, UnterminatedQuote, Stopped };

struct SplitResult {
  SplitError error = SplitError::Ok;
  std::string item;  // the item being built when a syntax error was found
  char quote = 0;    // UnterminatedQuote: the open quote char
};

// Calls on_item(const Item&, bool first) for every non-empty item in order (`first`: the first
// non-empty one); a false return stops (SplitError::Stopped). A syntax error stops before the item
// it is in is passed on. May throw std::bad_alloc (the item is built in a std::string).
template <typename OnItem>
SplitResult split_items(std::string_view text, OnItem&& on_item) {
  SplitResult r;
  std::string& cur = r.item;
  bool first = true;
  bool in_quotes = false;
  char quote = 0;
  auto end_item = [&]() {
    if (cur.empty()) return true;
    const bool ok = on_item(split_item(cur), first);
    first = false;
    cur.clear();
    return ok;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0' || (c == '\\' && i + 1 < text.size() && text[i + 1] == '\0')) {
      r.error = SplitError::Nul;
      return r;
    }
    if (c == ',' && !in_quotes) {
      if (!end_item()) {
        r.error = SplitError::Stopped;
        return r;
      }
    } else if (c == '\\') {
      if (i + 1 == text.size()) {
        r.error = SplitError::TrailingBackslash;
        return r;
      }
      cur += text[++i];
    } else if (c == '\'' || c == '"') {
      if (!in_quotes) {
        in_quotes = true;
        quote = c;
      } else if (c == quote) {
        in_quotes = false;
      } else {
        cur += c;
      }
    } else {
      cur += c;
    }
  }
  if (in_quotes) {
    r.error = SplitError::UnterminatedQuote;
    r.quote = quote;
    return r;
  }
  if (!end_item()) r.error = SplitError::Stopped;
  return r;
}

// The option part of a file header's args as the agent writes it: "mlpd:calls,zip" -> "calls,zip",
// "mlpd" -> "". False when the args are not the mlpd agent's (Mono writes e.g. "log:calls").
inline bool agent_args(std::string_view args, std::string_view& options) noexcept {
  if (args == "mlpd") {
    options = {};
    return true;
  }
  if (args.substr(0, 5) != "mlpd:") return false;
  options = args.substr(5);
  return true;
}

enum class Num : uint8_t { Ok, NotANumber, TooBig };

// Plain decimal digits only: no sign, no spaces, no 0x. Values beyond 10^18 are TooBig.
inline Num parse_number(std::string_view s, uint64_t& out) noexcept {
  if (s.empty()) return Num::NotANumber;
  uint64_t v = 0;
  bool big = false;
  for (const char c : s) {
    if (c < '0' || c > '9') return Num::NotANumber;
    if (v >= 100000000000000000ull)
      big = true;
    else
      v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (big) return Num::TooBig;
  out = v;
  return Num::Ok;
}

// `alloc-sample=BYTES`: NUM with an optional k, m or g (either case; powers of 1024), from 1 byte to
// `max`. NotANumber when malformed, TooBig when out of range.
inline Num parse_scaled_bytes(std::string_view value, uint64_t max, uint64_t& out) noexcept {
  uint64_t scale = 1;
  std::string_view digits = value;
  if (!digits.empty()) {
    const char s = digits.back();
    if (s == 'k' || s == 'K') scale = uint64_t{1} << 10;
    if (s == 'm' || s == 'M') scale = uint64_t{1} << 20;
    if (s == 'g' || s == 'G') scale = uint64_t{1} << 30;
    if (scale != 1) digits.remove_suffix(1);
  }
  uint64_t n = 0;
  const Num r = parse_number(digits, n);
  if (r != Num::Ok) return r;
  if (n < 1 || n > max / scale) return Num::TooBig;
  out = n * scale;
  return Num::Ok;
}

}  // namespace mlpd::option_syntax
