// The report's small helpers (private to reader/views): number formats the renderers share, and the
// ranking the model uses.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "mlpd/report.h"

namespace mlpd::views::report {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
inline std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

inline std::string u64(uint64_t v) { return std::to_string(v); }

inline std::string duration(uint64_t ns) {
  if (ns >= 10'000'000'000ull) return fmt("%.1f s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000'000ull) return fmt("%.3f s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000ull) return fmt("%.3f ms", static_cast<double>(ns) / 1e6);
  if (ns >= 1'000ull) return fmt("%.3f us", static_cast<double>(ns) / 1e3);
  return fmt("%" PRIu64 " ns", ns);
}

inline std::string bytes_h(uint64_t b) {
  if (b >= (1ull << 30)) return fmt("%.2f GiB", static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt("%.2f MiB", static_cast<double>(b) / (1ull << 20));
  if (b >= (1ull << 10)) return fmt("%.1f KiB", static_cast<double>(b) / (1ull << 10));
  return fmt("%" PRIu64 " B", b);
}

inline std::string iso_time(uint64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm)) return {};
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// The first n rows by `key` (non-zero only; most first, then by name), as copies.
template <typename Key>
std::vector<MethodLine> top(const std::vector<MethodLine>& rows, size_t n, Key key) {
  std::vector<const MethodLine*> out;
  for (const MethodLine& r : rows)
    if (key(r.s) != 0) out.push_back(&r);
  std::sort(out.begin(), out.end(), [&](const MethodLine* a, const MethodLine* b) {
    const uint64_t ka = key(a->s), kb = key(b->s);
    return ka != kb ? ka > kb : a->name < b->name;
  });
  if (out.size() > n) out.resize(n);
  std::vector<MethodLine> copies;
  copies.reserve(out.size());
  for (const MethodLine* r : out) copies.push_back(*r);
  return copies;
}

}  // namespace mlpd::views::report
