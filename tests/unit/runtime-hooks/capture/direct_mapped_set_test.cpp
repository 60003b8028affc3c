// DirectMappedSet (runtime-hooks/src/capture/direct_mapped_set.h): the per-thread caches' set type.
#include "mlpd_catch.h"
#include <cstdlib>

#include "capture/direct_mapped_set.h"

using mlpd::hooks::DirectMappedSet;

TEST_CASE("DirectMappedSet: zero-filled memory is empty, and 0 counts as present", "[hooks][cache]") {
  DirectMappedSet<64, 4> s{};
  CHECK_FALSE(s.contains(0x1000));
  CHECK(s.contains(0));  // null never needs describing
  auto* heap = static_cast<DirectMappedSet<256, 4>*>(std::calloc(1, sizeof(DirectMappedSet<256, 4>)));
  REQUIRE(heap);
  CHECK_FALSE(heap->contains(0x7f0000001230));
  std::free(heap);
}

TEST_CASE("DirectMappedSet: insert, contains, eviction by a pointer of the same slot, clear", "[hooks][cache]") {
  DirectMappedSet<64, 4> s{};
  const uint64_t a = 0x7f0000001230;
  const uint64_t b = a + 16;       // the next slot
  const uint64_t c = a + 64 * 16;  // a's slot (the index wraps around)
  CHECK(s.index(a) != s.index(b));
  CHECK(s.index(a) == s.index(c));
  s.insert(a);
  s.insert(b);
  CHECK(s.contains(a));
  CHECK(s.contains(b));
  CHECK_FALSE(s.contains(c));
  CHECK_FALSE(s.contains(a + 8));  // same slot as a (low bits dropped), another pointer
  s.insert(c);  // evicts a
  CHECK(s.contains(c));
  CHECK_FALSE(s.contains(a));
  CHECK(s.contains(b));
  s.clear();
  CHECK_FALSE(s.contains(b));
  CHECK_FALSE(s.contains(c));
}

TEST_CASE("DirectMappedSet: index uses the bits above Shift, modulo the slot count", "[hooks][cache]") {
  CHECK(DirectMappedSet<256, 4>::index(0x10) == 1);
  CHECK(DirectMappedSet<256, 4>::index(0xff0) == 255);
  CHECK(DirectMappedSet<256, 4>::index(0x1000) == 0);
  CHECK(DirectMappedSet<128, 3>::index(0x18) == 3);
}
