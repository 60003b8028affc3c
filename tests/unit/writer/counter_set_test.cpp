// CounterSet: the counter descriptor and sample events follow Mono 6.8's rules (FORMAT-NOTES section
// 5): indices from 1, each counter described once, only changed values after the first sample, integer
// values as deltas with each type's width and signedness, doubles absolute. Also checked through the
// bytes: encoded, decoded and added up the way mprof-report does, the values come back.
#include "mlpd_catch.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mlpd/counter_set.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"

using namespace mlpd;
namespace fmt = mlpd::format;
using Raw = CounterSet::Raw;

namespace {

CounterDesc desc(const char* name, uint64_t type) {
  CounterDesc d;
  d.section = fmt::COUNTER_SECTION_PROFILER;
  d.name = name;
  d.type = type;
  d.unit = fmt::COUNTER_UNIT_COUNT;
  d.variance = fmt::COUNTER_VARIANCE_MONOTONIC;
  d.index = 99;  // ignored by add()
  return d;
}

Raw raw(uint64_t bits) { return Raw{bits, true}; }
uint64_t u32(int32_t v) { return static_cast<uint32_t>(v); }  // an int counter's raw form
uint64_t s64(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t dbits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// The values of a sample event as index -> bits.
std::vector<std::pair<uint64_t, uint64_t>> values(const Event& e) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const CounterValue& v : e.counter_values) out.emplace_back(v.index, v.bits);
  return out;
}

}  // namespace

TEST_CASE("CounterSet: indices, descriptors once, string counters refused", "[counters]") {
  CounterSet set;
  CHECK(set.add(desc("a", fmt::COUNTER_ULONG)) == 1);
  CHECK(set.add(desc("s", fmt::COUNTER_STRING)) == 0);
  CHECK(set.add(desc("bad", 8)) == 0);
  CHECK(set.add(desc("b", fmt::COUNTER_INT)) == 2);
  Event e;
  REQUIRE(set.describe(e));
  CHECK(e.kind == EventKind::counter_descriptors);
  REQUIRE(e.counter_descs.size() == 2);
  CHECK(e.counter_descs[0].index == 1);
  CHECK(e.counter_descs[0].name == "a");
  CHECK(e.counter_descs[1].index == 2);
  CHECK(e.counter_descs[1].type == fmt::COUNTER_INT);
  CHECK_FALSE(set.describe(e));  // nothing new
  CHECK(set.add(desc("c", fmt::COUNTER_DOUBLE)) == 3);
  REQUIRE(set.describe(e));
  REQUIRE(e.counter_descs.size() == 1);
  CHECK(e.counter_descs[0].name == "c");
}

TEST_CASE("CounterSet: first sample has every counter, later ones only the changed", "[counters]") {
  CounterSet set;
  set.add(desc("a", fmt::COUNTER_ULONG));
  set.add(desc("b", fmt::COUNTER_ULONG));
  set.add(desc("c", fmt::COUNTER_ULONG));
  Event e;
  set.describe(e);
  CHECK(set.sample({raw(0), raw(7), raw(9)}, e) == 3);  // zero included, compared against zero
  CHECK(e.kind == EventKind::counter_samples);
  CHECK(values(e) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 0}, {2, 7}, {3, 9}});
  CHECK(set.sample({raw(0), raw(7), raw(12)}, e) == 1);
  CHECK(values(e) == std::vector<std::pair<uint64_t, uint64_t>>{{3, 3}});
  CHECK(set.sample({raw(0), raw(7), raw(12)}, e) == 0);
  CHECK(e.counter_values.empty());
  // A value that cannot be read now is left out and its state kept.
  CHECK(set.sample({raw(5), Raw{}, raw(12)}, e) == 1);
  CHECK(values(e) == std::vector<std::pair<uint64_t, uint64_t>>{{1, 5}});
  CHECK(set.sample({raw(5), raw(10), raw(12)}, e) == 1);
  CHECK(values(e) == std::vector<std::pair<uint64_t, uint64_t>>{{2, 3}});
}

TEST_CASE("CounterSet: a counter is never sampled before it is described", "[counters]") {
  CounterSet set;
  set.add(desc("a", fmt::COUNTER_ULONG));
  Event e;
  CHECK(set.sample({raw(4)}, e) == 0);
  set.describe(e);
  CHECK(set.sample({raw(4)}, e) == 1);
  set.add(desc("b", fmt::COUNTER_ULONG));
  CHECK(set.sample({raw(4), raw(6)}, e) == 0);  // b not described yet; a unchanged
  set.describe(e);
  CHECK(set.sample({raw(4), raw(6)}, e) == 1);
  CHECK(values(e) == std::vector<std::pair<uint64_t, uint64_t>>{{2, 6}});
}

TEST_CASE("CounterSet: delta rules per counter type", "[counters]") {
  CounterSet set;
  const uint64_t types[] = {fmt::COUNTER_INT,   fmt::COUNTER_UINT,   fmt::COUNTER_WORD,
                            fmt::COUNTER_LONG,  fmt::COUNTER_ULONG,  fmt::COUNTER_DOUBLE,
                            fmt::COUNTER_TIME_INTERVAL};
  for (uint64_t t : types) set.add(desc("x", t));
  Event e;
  set.describe(e);
  const int32_t imax = std::numeric_limits<int32_t>::max();
  std::vector<Raw> first = {raw(u32(5)), raw(10), raw(s64(100)), raw(s64(-5)), raw(100), raw(dbits(1.5)),
                            raw(s64(1000))};
  REQUIRE(set.sample(first, e) == 7);
  // First sample: the change from zero.
  CHECK(e.counter_values[0].bits == 5);
  CHECK(e.counter_values[3].bits == s64(-5));
  CHECK(e.counter_values[5].bits == dbits(1.5));
  for (size_t i = 0; i < 7; ++i) CHECK(e.counter_values[i].type == types[i]);

  std::vector<Raw> second = {raw(u32(3)), raw(3), raw(s64(40)), raw(s64(-7)), raw(50), raw(dbits(0.25)),
                             raw(s64(1500))};
  REQUIRE(set.sample(second, e) == 7);
  CHECK(e.counter_values[0].bits == s64(-2));              // int: sleb of the int32 change
  CHECK(e.counter_values[1].bits == 0xFFFFFFF9u);          // uint: uleb of the uint32 change (mod 2^32)
  CHECK(e.counter_values[2].bits == s64(-60));             // word (64-bit): sleb of the int64 change
  CHECK(e.counter_values[3].bits == s64(-2));              // long
  CHECK(e.counter_values[4].bits == s64(-50));             // ulong: uleb of the uint64 change (wraps)
  CHECK(e.counter_values[5].bits == dbits(0.25));          // double: absolute
  CHECK(e.counter_values[6].bits == 500);                  // time interval: sleb of the int64 change

  // int wraps in 32 bits: INT32_MAX -> INT32_MIN is +1, not -2^32+1.
  std::vector<Raw> third = second;
  third[0] = raw(u32(imax));
  REQUIRE(set.sample(third, e) == 1);
  third[0] = raw(u32(std::numeric_limits<int32_t>::min()));
  REQUIRE(set.sample(third, e) == 1);
  CHECK(e.counter_values[0].bits == 1);
}

TEST_CASE("CounterSet: encoded, decoded and added up like mprof-report, the values come back", "[counters]") {
  std::mt19937_64 rng(7);
  const uint64_t types[] = {fmt::COUNTER_INT,  fmt::COUNTER_UINT,   fmt::COUNTER_WORD,
                            fmt::COUNTER_LONG, fmt::COUNTER_ULONG,  fmt::COUNTER_DOUBLE,
                            fmt::COUNTER_TIME_INTERVAL};
  CounterSet set;
  for (int rep = 0; rep < 3; ++rep) {
    for (uint64_t t : types) set.add(desc("x", t));
  }
  const size_t n = set.size();
  std::vector<uint64_t> now(n, 0), total(n, 0);
  BufferEncoder enc(1, 0);
  Event e;
  set.describe(e);
  e.time = 1;
  enc.add(e);
  std::vector<std::vector<uint64_t>> expected;  // the raw values after each sample
  for (int s = 0; s < 50; ++s) {
    std::vector<Raw> cur(n);
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 3 == 0) {  // change this one (boundary values included)
        const uint64_t t = set.desc(i + 1).type;
        uint64_t v = rng();
        if (rng() % 5 == 0) v = (rng() % 2) ? std::numeric_limits<uint64_t>::max() : 0;
        if (t == fmt::COUNTER_INT || t == fmt::COUNTER_UINT) v &= 0xFFFFFFFFu;
        if (t == fmt::COUNTER_DOUBLE) v = dbits(static_cast<double>(rng() % 100000) / 7.0);
        now[i] = v;
      }
      cur[i] = raw(now[i]);
    }
    set.sample(cur, e);
    e.time = 2 + static_cast<uint64_t>(s);
    enc.add(e);
    expected.push_back(now);
  }
  std::vector<uint8_t> bytes;
  enc.finish_into(bytes);
  BufferHeader h = enc.header();
  BufferDecoder dec(h, bytes.data() + fmt::kBufferHeaderSize, 0);
  Event d;
  std::string problem;
  uint64_t offset = 0;
  REQUIRE(dec.next(d, problem, offset));
  REQUIRE(d.kind == EventKind::counter_descriptors);
  REQUIRE(d.counter_descs.size() == n);
  size_t samples = 0;
  while (dec.next(d, problem, offset)) {
    REQUIRE(d.kind == EventKind::counter_samples);
    for (const CounterValue& v : d.counter_values) {
      const size_t i = v.index - 1;
      REQUIRE(v.type == set.desc(v.index).type);
      total[i] = accumulate_counter(v.type, total[i], v.bits);
    }
    INFO("sample " << samples);
    CHECK(total == expected[samples]);
    ++samples;
  }
  CHECK(problem.empty());
  CHECK(samples == 50);
}
