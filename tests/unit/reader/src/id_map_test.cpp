// The reader's compact containers (mlpd/id_map.h), checked against the standard ones with random
// operations, including the id 0, colliding ids and keys that arrive out of order.
#include "mlpd_catch.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlpd/id_map.h"

using namespace mlpd;

namespace {

// Ids like pointers (aligned, close together) and some arbitrary ones, 0 and UINT64_MAX included.
uint64_t some_id(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 0x7f0000000000ULL + (rng() % 5000) * 16;
    case 1: return rng() % 64;
    case 2: return UINT64_MAX - rng() % 4;
    default: return rng();
  }
}

}  // namespace

TEST_CASE("IdSet agrees with std::unordered_set", "[id_map]") {
  std::mt19937_64 rng(1);
  IdSet set;
  std::unordered_set<uint64_t> ref;
  CHECK(set.empty());
  CHECK(!set.contains(0));
  for (int i = 0; i < 200000; ++i) {
    const uint64_t id = some_id(rng);
    if (rng() % 3 == 0) {
      REQUIRE(set.contains(id) == (ref.count(id) == 1));
    } else {
      REQUIRE(set.insert(id) == ref.insert(id).second);
    }
  }
  CHECK(set.size() == ref.size());
  for (uint64_t id : ref) REQUIRE(set.contains(id));
  // 8 bytes a slot, at most 3/4 full, at least 3/8 full once grown: at most ~21.4 bytes an id.
  CHECK(set.memory() <= set.size() * 22);
}

TEST_CASE("IdMap agrees with std::unordered_map", "[id_map]") {
  std::mt19937_64 rng(2);
  IdMap<uint64_t> map;
  std::unordered_map<uint64_t, uint64_t> ref;
  CHECK(map.find(0) == nullptr);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t id = some_id(rng);
    switch (rng() % 3) {
      case 0: {
        const uint64_t* v = map.find(id);
        const auto it = ref.find(id);
        REQUIRE((v == nullptr) == (it == ref.end()));
        if (v) REQUIRE(*v == it->second);
        break;
      }
      case 1: map[id] += i; ref[id] += i; break;
      default: map[id] = i; ref[id] = i; break;
    }
  }
  REQUIRE(map.size() == ref.size());
  size_t seen = 0;
  map.for_each([&](uint64_t id, uint64_t v) {
    ++seen;
    REQUIRE(ref.count(id) == 1);
    REQUIRE(ref[id] == v);
  });
  CHECK(seen == ref.size());
  // 12 bytes a slot, the value in a vector: well under a std::unordered_map node (~40 bytes and more).
  CHECK(map.memory() <= map.size() * (2 * 12 * 4 / 3 + 2 * 8) + 1024);
  map.clear();
  CHECK(map.empty());
  CHECK(map.find(ref.begin()->first) == nullptr);
}

TEST_CASE("StringTable interns each distinct string once", "[id_map]") {
  StringTable t;
  const uint32_t a = t.intern("System.String");
  const std::string& a_ref = t.at(a);
  CHECK(t.intern("") != a);
  for (int i = 0; i < 10000; ++i) t.intern("name " + std::to_string(i % 3000));
  CHECK(t.size() == 3002);
  CHECK(t.intern("System.String") == a);
  CHECK(&t.at(a) == &a_ref);  // references stay valid as the table grows
  CHECK(a_ref == "System.String");
  CHECK(t.at(t.intern("name 2999")) == "name 2999");
  CHECK(t.at(t.intern(std::string_view("x\0y", 3))) == std::string("x\0y", 3));
}

TEST_CASE("SortedIdMap finds the greatest key at or below, whatever the insertion order", "[id_map]") {
  for (int order = 0; order < 3; ++order) {
    DYNAMIC_SECTION("order " << order) {
      std::mt19937_64 rng(3 + order);
      SortedIdMap<uint64_t> map;
      std::map<uint64_t, uint64_t> ref;
      CHECK(map.at_or_below(5) == nullptr);
      for (int i = 0; i < 50000; ++i) {
        // Increasing (the usual case), decreasing, random.
        const uint64_t key = order == 0 ? 1000 + uint64_t(i) * 16 - rng() % 20
                             : order == 1 ? 100000000 - uint64_t(i) * 16
                                          : rng() % 10000000;
        map.set(key, i);
        ref[key] = i;
        if (i % 7 == 0) {
          const uint64_t x = rng() % 11000000;
          const auto* e = map.at_or_below(x);
          auto it = ref.upper_bound(x);
          if (it == ref.begin()) {
            REQUIRE(e == nullptr);
          } else {
            --it;
            REQUIRE(e != nullptr);
            REQUIRE(e->first == it->first);
            REQUIRE(e->second == it->second);
          }
        }
      }
      CHECK(map.size() == ref.size());
      for (const auto& [k, v] : ref) {
        const auto* e = map.at_or_below(k);
        REQUIRE(e);
        REQUIRE(e->first == k);
        REQUIRE(e->second == v);
      }
    }
  }
}
