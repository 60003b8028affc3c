// The payloads of the runtime's events mlpd takes from its EventPipe session
// (runtime-hooks/src/coreclr/event_pipe.h): each version's layout as the manifest and the runtime's own
// event metadata give it, and a payload cut anywhere refused (never read past its end).
#include <cstdint>
#include <cstring>
#include <vector>

#include "coreclr/event_pipe.h"
#include "mlpd_catch.h"

using namespace mlpd::coreclr::event_pipe;

namespace {
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof v);
    std::memcpy(b.data() + at, &v, sizeof v);
    return *this;
  }
  Bytes& utf16z(const char16_t* s) {
    for (; *s; ++s) put<uint16_t>(static_cast<uint16_t>(*s));
    return put<uint16_t>(0);
  }
};
}  // namespace

TEST_CASE("event pipe: ContentionStart V2 gives the lock, its object and its owner", "[coreclr]") {
  Bytes p;
  p.put<uint8_t>(0).put<uint16_t>(7).put<uint64_t>(0x7f0011112222).put<uint64_t>(0x7f00aaaabbbb).put<uint64_t>(42);
  REQUIRE(p.b.size() == 27);
  ContentionStart c;
  REQUIRE(parse_contention_start(p.b.data(), p.b.size(), 2, c));
  CHECK(c.flags == kContentionManaged);
  CHECK(c.lock_id == 0x7f0011112222);
  CHECK(c.object == 0x7f00aaaabbbb);
  CHECK(c.owner_thread == 42);
  // V1 (.NET before 8): the flags only, no object.
  REQUIRE(parse_contention_start(p.b.data(), 3, 1, c));
  CHECK(c.object == 0);
  // Cut anywhere inside V2's fields: refused.
  for (size_t n = 0; n < p.b.size(); ++n) CHECK_FALSE(parse_contention_start(p.b.data(), n, 2, c));
  CHECK_FALSE(parse_contention_start(nullptr, 27, 2, c));
}

TEST_CASE("event pipe: ContentionStop V1 gives the flags and the wait", "[coreclr]") {
  Bytes p;
  p.put<uint8_t>(1).put<uint16_t>(7).put<double>(1.5e6);
  ContentionStop c;
  REQUIRE(parse_contention_stop(p.b.data(), p.b.size(), 1, c));
  CHECK(c.flags == 1);
  CHECK(c.duration_ns == 1.5e6);
  CHECK_FALSE(parse_contention_stop(p.b.data(), p.b.size() - 1, 1, c));
  REQUIRE(parse_contention_stop(p.b.data(), 3, 0, c));
}

TEST_CASE("event pipe: AllocationSampled past its type name", "[coreclr]") {
  // As .NET 10.0.12 delivers it: 14 bytes, the name, 24 bytes.
  Bytes p;
  p.put<uint32_t>(0).put<uint16_t>(7).put<uint64_t>(0x7f0012340000).utf16z(u"MlpdTests.Payload");
  const size_t name_end = p.b.size();
  p.put<uint64_t>(0x7e0000001000).put<uint64_t>(40).put<uint64_t>(17);
  AllocationSampled a;
  REQUIRE(parse_allocation_sampled(p.b.data(), p.b.size(), a));
  CHECK(a.type_id == 0x7f0012340000);
  CHECK(a.address == 0x7e0000001000);
  CHECK(a.size == 40);
  CHECK(a.sampled_offset == 17);
  for (size_t n = 0; n < p.b.size(); ++n) CHECK_FALSE(parse_allocation_sampled(p.b.data(), n, a));
  // A name without its terminating 0 runs to the payload's end: refused, nothing read past it.
  CHECK_FALSE(parse_allocation_sampled(p.b.data(), name_end - 2, a));
}

TEST_CASE("event pipe: the keywords and ids are the manifest's", "[coreclr]") {
  CHECK(kContentionKeyword == 0x4000);
  CHECK(kAllocationSamplingKeyword == 0x80000000000ull);
  CHECK(kContentionStart == 81);
  CHECK(kContentionStop == 91);
  CHECK(kAllocationSampled == 303);
  CHECK(kAllocationSamplingMean == 102400);
}

namespace {
std::vector<uint8_t> hex(const char* text) {
  std::vector<uint8_t> out;
  auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (; text[0] && text[1]; text += 2) out.push_back(static_cast<uint8_t>(v(text[0]) << 4 | v(text[1])));
  return out;
}
}  // namespace

// Payloads as .NET 10.0.12 delivered them to EventPipeEventDelivered (DotnetPrograms contention, allocs).
TEST_CASE("event pipe: the runtime's own payloads", "[coreclr]") {
  const auto start = hex("000000682200f0507f000098c20925517f00006402000000000000");
  ContentionStart c;
  REQUIRE(parse_contention_start(start.data(), start.size(), 2, c));
  CHECK(c.lock_id == 0x7f50f0002268);
  CHECK(c.object == 0x7f512509c298);
  CHECK(c.owner_thread == 612);
  const auto stop = hex("00000000000078be7f8941");
  ContentionStop s;
  REQUIRE(parse_contention_stop(stop.data(), stop.size(), 1, s));
  CHECK(s.duration_ns > 5e7);  // the 50 ms the program holds its lock
  CHECK(s.duration_ns < 6e7);
  const auto sampled = hex(
      "000000000000881a74a02a7f0000530079007300740065006d002e0044006900610067006e006f00730074006900630073002e0054"
      "0072006100630069006e0067002e004500760065006e0074004100740074007200690062007500740065000000a09081c51e7f0000"
      "40000000000000002b00000000000000");
  AllocationSampled a;
  REQUIRE(parse_allocation_sampled(sampled.data(), sampled.size(), a));
  CHECK(a.type_id == 0x7f2aa0741a88);
  CHECK(a.address == 0x7f1ec58190a0);
  CHECK(a.size == 64);
  CHECK(a.sampled_offset == 43);
}
