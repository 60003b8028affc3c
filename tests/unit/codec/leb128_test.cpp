#include "mlpd_catch.h"
#include <cstdint>
#include <limits>
#include <random>

#include "mlpd/leb128.h"

using namespace mlpd;

TEST_CASE("uleb round-trips boundary and random values", "[leb128]") {
  std::vector<uint64_t> values = {0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0x200001,
                                  std::numeric_limits<uint64_t>::max(),
                                  std::numeric_limits<uint64_t>::max() - 1, uint64_t{1} << 63};
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) values.push_back(rng() >> (rng() % 64));
  for (uint64_t v : values) {
    uint8_t buf[kMaxLeb128];
    uint8_t* end = put_uleb(buf, v);
    REQUIRE(static_cast<size_t>(end - buf) == uleb_size(v));
    const uint8_t* p = buf;
    uint64_t out = ~v;
    REQUIRE(get_uleb(p, end, out) == LebStatus::ok);
    REQUIRE(out == v);
    REQUIRE(p == end);
    // Any shorter input is truncated, not misread.
    const uint8_t* q = buf;
    REQUIRE(get_uleb(q, end - 1, out) == LebStatus::truncated);
    REQUIRE(q == buf);
  }
}

TEST_CASE("sleb round-trips boundary and random values", "[leb128]") {
  std::vector<int64_t> values = {0, 1, -1, 63, 64, -64, -65, 8191, 8192, -8192, -8193,
                                 (int64_t{1} << 20) - 1, int64_t{1} << 20, -(int64_t{1} << 20),
                                 -(int64_t{1} << 20) - 1, std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};
  std::mt19937_64 rng(2);
  for (int i = 0; i < 10000; ++i) values.push_back(static_cast<int64_t>(rng()) >> (rng() % 64));
  for (int64_t v : values) {
    uint8_t buf[kMaxLeb128];
    uint8_t* end = put_sleb(buf, v);
    REQUIRE(end - buf <= 10);
    // The shortest encoding: 7 payload bits per byte, the last one's bit 6 the sign.
    size_t shortest = 1;
    for (int64_t r = v >> 6; r != 0 && r != -1; r >>= 7) ++shortest;
    REQUIRE(static_cast<size_t>(end - buf) == shortest);
    const uint8_t* p = buf;
    int64_t out = ~v;
    REQUIRE(get_sleb(p, end, out) == LebStatus::ok);
    REQUIRE(out == v);
    REQUIRE(p == end);
  }
}

TEST_CASE("LEB128 longer than 64 bits is rejected", "[leb128]") {
  const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  const uint8_t* p = eleven;
  uint64_t u = 0;
  int64_t s;
  CHECK(get_uleb(p, eleven + sizeof eleven, u) == LebStatus::overflow);
  p = eleven;
  CHECK(get_sleb(p, eleven + sizeof eleven, s) == LebStatus::overflow);
  // 10 bytes whose last byte carries bits above bit 63.
  const uint8_t wide[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  p = wide;
  CHECK(get_uleb(p, wide + sizeof wide, u) == LebStatus::overflow);
  const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  p = max;
  REQUIRE(get_uleb(p, max + sizeof max, u) == LebStatus::ok);
  CHECK(u == std::numeric_limits<uint64_t>::max());
}
