#include "window.h"

#include <charconv>
#include <cmath>

namespace mlpd::cli {

namespace {

// Decimal seconds with an optional fraction (up to 9 digits kept); false if not that.
bool parse_seconds(std::string_view s, int64_t max_seconds, int64_t& ns) {
  const size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  if (whole.empty()) return false;
  int64_t sec = 0;
  const auto r = std::from_chars(whole.data(), whole.data() + whole.size(), sec);
  if (r.ec != std::errc() || r.ptr != whole.data() + whole.size() || sec < 0 || sec > max_seconds) return false;
  int64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view f = s.substr(dot + 1);
    if (f.empty()) return false;
    int64_t scale = 100000000;
    for (const char c : f) {
      if (c < '0' || c > '9') return false;
      frac += (c - '0') * scale;
      scale /= 10;
    }
  }
  ns = sec * 1000000000LL + frac;
  return true;
}

bool parse_two_digits(std::string_view s, int lo, int hi, int& v) {
  if (s.size() != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9') return false;
  v = (s[0] - '0') * 10 + (s[1] - '0');
  return v >= lo && v <= hi;
}

}  // namespace

bool parse_window_bound(std::string_view t, profile::WindowBound& out, std::string& error) {
  if (t.find(':') == std::string_view::npos) {
    int64_t ns = 0;
    if (!parse_seconds(t, 100LL * 365 * 86400, ns)) {
      error = "'" + std::string(t) + "' is neither seconds from the start (12, 1.5) nor a time of day (HH:MM:SS)";
      return false;
    }
    out.kind = profile::WindowBound::Kind::offset;
    out.ns = ns;
    return true;
  }
  // HH:MM:SS[.fff]
  const size_t c1 = t.find(':');
  const size_t c2 = t.find(':', c1 + 1);
  int h = 0, m = 0;
  int64_t sec_ns = 0;
  if (c2 == std::string_view::npos || !parse_two_digits(t.substr(0, c1), 0, 23, h) ||
      !parse_two_digits(t.substr(c1 + 1, c2 - c1 - 1), 0, 59, m) || t.size() < c2 + 3 ||
      !parse_seconds(t.substr(c2 + 1), 59, sec_ns) || t.substr(c2 + 1, 2).find('.') != std::string_view::npos) {
    error = "'" + std::string(t) + "' is not a time of day HH:MM:SS[.fff]";
    return false;
  }
  out.kind = profile::WindowBound::Kind::wall;
  out.ns = (int64_t{h} * 3600 + m * 60) * 1000000000LL + sec_ns;
  return true;
}

Option window_option(const char* name, profile::WindowBound& out) {
  return Option{name, nullptr, nullptr, [name, &out](const std::string& v) {
                  std::string why;
                  return parse_window_bound(v, out, why) ? std::string() : std::string(name) + ": " + why;
                }};
}

Option what_option(profile::What& out, bool& given) {
  return Option{"--what", nullptr, nullptr, [&out, &given](const std::string& v) {
                  if (!profile::parse_what(v, out))
                    return "unknown --what '" + v + "' (cpu, alloc, alloc-bytes, calls, exceptions, monitor)";
                  given = true;
                  return std::string();
                }};
}

}  // namespace mlpd::cli
