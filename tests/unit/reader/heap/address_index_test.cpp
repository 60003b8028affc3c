// The heap graph's object-by-address indexes (reader/heap/address_index.h) against a plain map, on
// dense, sparse, unaligned and duplicated addresses, with lookups of every address, of addresses
// between objects and of addresses outside the heap.
#include "mlpd_catch.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "address_index.h"

using namespace mlpd;

namespace {

struct Objects {
  std::vector<uint64_t> sorted;  // ascending
  std::vector<uint32_t> ids;     // ties by id
  std::map<uint64_t, uint32_t> first;  // address -> id of its first listing
};

Objects make(const std::vector<uint64_t>& listing) {
  Objects o;
  std::vector<uint32_t> order(listing.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return listing[x] != listing[y] ? listing[x] < listing[y] : x < y;
  });
  for (uint32_t i : order) {
    o.sorted.push_back(listing[i]);
    o.ids.push_back(i);
    o.first.emplace(listing[i], i);
  }
  return o;
}

uint32_t expect(const Objects& o, uint64_t addr) {
  const auto it = o.first.find(addr);
  return it == o.first.end() ? kNoNode : it->second;
}

// Both indexes answer every probe as the map does; `bitmap` says whether BitmapIndex takes the heap
// (1 yes, 0 no, -1 either: sparse heaps are refused once they have many objects).
void check(const std::vector<uint64_t>& listing, int bitmap, std::mt19937_64& rng) {
  const Objects o = make(listing);
  std::vector<uint64_t> probes(o.sorted.begin(), o.sorted.end());
  for (uint64_t a : o.sorted)
    for (uint64_t d : {uint64_t{1}, uint64_t{4}, uint64_t{8}, uint64_t{512}, uint64_t{4096}, uint64_t{1} << 20}) {
      probes.push_back(a + d);
      probes.push_back(a - d);
    }
  for (int i = 0; i < 1000; ++i) probes.push_back(rng());
  probes.push_back(0);
  probes.push_back(UINT64_MAX);
  probes.push_back(UINT64_MAX - 7);

  std::vector<uint32_t> ids = o.ids;
  heap_index::BitmapIndex b;
  const bool built = b.build(o.sorted, ids);
  if (bitmap >= 0) CHECK(built == (bitmap == 1));
  const heap_index::HashIndex h(o.sorted, o.ids);
  size_t wrong_b = 0, wrong_h = 0;
  for (uint64_t p : probes) {
    const uint32_t want = expect(o, p);
    if (built && (b.find(p) != want || b.id(b.near(b.far(p))) != want)) ++wrong_b;
    if (h.find(p) != want || h.id(h.near(h.far(p))) != want) ++wrong_h;
  }
  CHECK(wrong_b == 0);
  CHECK(wrong_h == 0);
}

}  // namespace

TEST_CASE("address index: bitmap and hash indexes equal a map", "[retention]") {
  std::mt19937_64 rng(24);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 3000;
    std::vector<uint64_t> listing;
    const int shape = round % 5;
    uint64_t at = (rng() % (uint64_t{1} << 40)) & ~uint64_t{7};
    for (size_t i = 0; i < n; ++i) {
      switch (shape) {
        case 0: at += 8 * (1 + rng() % 12); break;                              // a dense heap
        case 1: at += rng() % 16 == 0 ? (rng() % (uint64_t{1} << 30)) & ~uint64_t{7} : 16; break;  // regions
        case 2: at += 8 * (1 + rng() % 12); break;                              // dense, then duplicates
        case 3: at += 8 * (1 + rng() % 12) + (i == n / 2 ? 4 : 0); break;       // one unaligned object
        default: at += 4096 * (1 + rng() % 64); break;                          // sparse: large objects
      }
      listing.push_back(at);
    }
    if (shape == 2)
      for (size_t i = 0; i < n / 4; ++i) listing.push_back(listing[rng() % n]);  // listed twice
    std::shuffle(listing.begin(), listing.end(), rng);
    check(listing, shape <= 2 ? 1 : shape == 3 ? 0 : -1, rng);
  }
  // Addresses at the ends of the address space, and the empty heap.
  check({UINT64_MAX - 7, UINT64_MAX - 15, 0, 8}, 1, rng);
  check({}, 1, rng);
  // Sparse: one object every 64 KiB, more pages than objects once the gaps are filled in.
  std::vector<uint64_t> sparse;
  for (uint64_t i = 0; i < 5000; ++i) sparse.push_back(0x10000000 + i * 0x8000);
  check(sparse, 0, rng);
}
