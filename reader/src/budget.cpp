#include "mlpd/budget.h"

#include <malloc.h>

#include <cctype>

namespace mlpd {

uint64_t MemoryBudget::in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<uint64_t>(m.uordblks) + static_cast<uint64_t>(m.hblkhd);
#else
  return 0;
#endif
}

bool MemoryBudget::exceeded() {
  last_ = in_use();
  if (last_ > peak_) peak_ = last_;
  return limit_ != 0 && last_ > limit_;
}

std::string MemoryBudget::message() const {
  auto mib = [](uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20); };
  std::string s = "memory budget exceeded: ";
  s += mib(last_);
  s += " MiB in use, above the limit of ";
  s += mib(limit_);
  s += " MiB (mlpd --max-memory=SIZE raises it)";
  return s;
}

MemoryBudget& process_budget() {
  static MemoryBudget budget;
  return budget;
}

bool parse_size(std::string_view text, uint64_t& bytes) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
    ++i;
  }
  if (i == 0) return false;
  std::string unit;
  for (; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  unsigned shift = 0;
  if (!unit.empty() && unit != "b") {
    const char u = unit[0];
    shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : u == 't' ? 40 : 0;
    const std::string rest = unit.substr(1);
    if (shift == 0 || !(rest.empty() || rest == "b" || rest == "ib")) return false;
  }
  if (shift && n > (UINT64_MAX >> shift)) return false;
  bytes = n << shift;
  return true;
}

}  // namespace mlpd
