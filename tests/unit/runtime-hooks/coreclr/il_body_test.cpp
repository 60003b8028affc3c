// il_catch_clauses (runtime-hooks/src/coreclr/il_body.h) on IL bodies built by hand: tiny and fat
// headers, small and fat clause sections, catch/filter against finally/fault, and malformed bodies.
#include <cstdint>
#include <vector>

#include "coreclr/il_body.h"
#include "mlpd_catch.h"

using mlpd::coreclr::il_catch_clauses;
using mlpd::coreclr::IlCatch;

namespace {
// A fat header (12 bytes) with `code` bytes of IL, then one EH section of `clauses` (flags each).
std::vector<uint8_t> fat_body(uint32_t code, const std::vector<uint32_t>& clauses, bool fat_section) {
  std::vector<uint8_t> b = {0x03 | 0x08, 0x30, 8, 0, static_cast<uint8_t>(code), static_cast<uint8_t>(code >> 8), 0, 0,
                            0, 0, 0, 0};
  b.resize(12 + code, 0x00);  // nop
  while (b.size() % 4) b.push_back(0);
  const size_t clause = fat_section ? 24 : 12;
  const uint32_t data = static_cast<uint32_t>(4 + clause * clauses.size());
  if (fat_section) {
    b.insert(b.end(), {0x41, static_cast<uint8_t>(data), static_cast<uint8_t>(data >> 8), 0});
  } else {
    b.insert(b.end(), {0x01, static_cast<uint8_t>(data), 0, 0});
  }
  for (uint32_t flags : clauses) {
    std::vector<uint8_t> c(clause, 0);
    c[0] = static_cast<uint8_t>(flags);
    b.insert(b.end(), c.begin(), c.end());
  }
  return b;
}
}  // namespace

TEST_CASE("IL body: catch and filter clauses against finally and fault", "[coreclr]") {
  const uint8_t tiny[] = {0x02 | (1 << 2), 0x2a};  // tiny header, one byte of code (ret)
  CHECK(il_catch_clauses(tiny, sizeof tiny) == IlCatch::none);
  std::vector<uint8_t> plain = fat_body(5, {}, false);
  plain[0] = 0x03;  // no "more sections" flag
  CHECK(il_catch_clauses(plain.data(), 17) == IlCatch::none);
  for (bool fat : {false, true}) {
    CHECK(il_catch_clauses(fat_body(7, {2}, fat).data(), fat_body(7, {2}, fat).size()) == IlCatch::none);  // finally
    CHECK(il_catch_clauses(fat_body(7, {4}, fat).data(), fat_body(7, {4}, fat).size()) == IlCatch::none);  // fault
    CHECK(il_catch_clauses(fat_body(7, {2, 0}, fat).data(), fat_body(7, {2, 0}, fat).size()) == IlCatch::some);
    CHECK(il_catch_clauses(fat_body(7, {1}, fat).data(), fat_body(7, {1}, fat).size()) == IlCatch::some);  // filter
  }
}

TEST_CASE("IL body: a malformed body is unknown, never read beyond its size", "[coreclr]") {
  CHECK(il_catch_clauses(nullptr, 0) == IlCatch::unknown);
  const std::vector<uint8_t> b = fat_body(7, {0}, false);
  for (size_t cut = 1; cut < b.size(); ++cut) {
    const std::vector<uint8_t> part(b.begin(), b.begin() + static_cast<long>(cut));
    CHECK(il_catch_clauses(part.data(), part.size()) != IlCatch::some);  // the clause is past the end
  }
  std::vector<uint8_t> bad = b;
  bad[1] = 0x10;  // a header of 4 bytes: too small for a fat header
  CHECK(il_catch_clauses(bad.data(), bad.size()) == IlCatch::unknown);
}
