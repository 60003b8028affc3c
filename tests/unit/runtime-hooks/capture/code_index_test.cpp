// CodeIndex (runtime-hooks/src/capture/code_index.h): the stack walker's code ranges, ordered by start, with
// ordered indexes by method and by domain for removals in logarithmic time.
#include "mlpd_catch.h"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "capture/code_index.h"

using mlpd::hooks::walker::CodeIndex;

namespace {

struct Method;
struct Domain;

struct Entry {
  uint64_t start = 0, end = 0;
  Method* method = nullptr;
  Domain* domain = nullptr;
};

Method* method(uintptr_t n) { return reinterpret_cast<Method*>(n * 8); }
Domain* domain(uintptr_t n) { return reinterpret_cast<Domain*>(n * 16); }

struct Fixture {
  std::vector<std::unique_ptr<Entry>> owned;
  std::vector<const Entry*> gone;
  CodeIndex<Entry> index;
  const Entry* add(uint64_t start, uint64_t end, uintptr_t m, uintptr_t d = 1) {
    owned.push_back(std::make_unique<Entry>(Entry{start, end, method(m), domain(d)}));
    index.add(owned.back().get(), [&](const Entry* e) { gone.push_back(e); });
    return owned.back().get();
  }
  size_t remove_method(uintptr_t m) {
    return index.remove_method(method(m), [&](const Entry* e) { gone.push_back(e); });
  }
  size_t remove_domain(uintptr_t d) {
    return index.remove_domain(domain(d), [&](const Entry* e) { gone.push_back(e); });
  }
};

}  // namespace

TEST_CASE("CodeIndex: finds the range holding an address, nothing between ranges", "[hooks][walker]") {
  Fixture f;
  const Entry* a = f.add(0x1000, 0x1100, 1);
  const Entry* b = f.add(0x2000, 0x2040, 2);
  CHECK(f.index.find(0xfff) == nullptr);
  CHECK(f.index.find(0x1000) == a);
  CHECK(f.index.find(0x10ff) == a);
  CHECK(f.index.find(0x1100) == nullptr);  // end is exclusive
  CHECK(f.index.find(0x2020) == b);
  CHECK(f.index.find(0x2040) == nullptr);
  CHECK(f.index.find(~uint64_t{0}) == nullptr);
  CHECK(f.index.size() == 2);
  CHECK(f.gone.empty());
}

TEST_CASE("CodeIndex: a new range replaces every range it overlaps (reused code memory)", "[hooks][walker]") {
  Fixture f;
  const Entry* a = f.add(0x1000, 0x1100, 1);
  const Entry* b = f.add(0x1100, 0x1200, 2);
  const Entry* c = f.add(0x1200, 0x1300, 3);
  const Entry* d = f.add(0x10f0, 0x1210, 4);  // overlaps the end of a, all of b, the start of c
  CHECK(f.gone == std::vector<const Entry*>{a, b, c});
  CHECK(f.index.size() == 1);
  CHECK(f.index.find(0x1000) == nullptr);
  CHECK(f.index.find(0x1150) == d);
  // The replaced ranges' methods are no longer indexed: freeing them removes nothing.
  CHECK(f.remove_method(1) == 0);
  CHECK(f.remove_method(2) == 0);
  CHECK(f.remove_method(4) == 1);
  CHECK(f.index.size() == 0);
}

TEST_CASE("CodeIndex: a freed method's ranges go, every one of them, and no other", "[hooks][walker]") {
  Fixture f;
  const Entry* a1 = f.add(0x1000, 0x1100, 1, 1);
  const Entry* b = f.add(0x2000, 0x2100, 2, 1);
  const Entry* a2 = f.add(0x3000, 0x3100, 1, 2);  // the same method compiled again in another domain
  CHECK(f.remove_method(1) == 2);
  CHECK(f.gone == std::vector<const Entry*>{a1, a2});
  CHECK(f.index.find(0x1000) == nullptr);
  CHECK(f.index.find(0x3000) == nullptr);
  CHECK(f.index.find(0x2000) == b);
  CHECK(f.remove_method(1) == 0);
  CHECK(f.remove_method(99) == 0);
  // The domain index forgot a2 too: unloading domain 2 removes nothing.
  CHECK(f.remove_domain(2) == 0);
  CHECK(f.remove_domain(1) == 1);
  CHECK(f.index.size() == 0);
}

TEST_CASE("CodeIndex: an unloaded domain's ranges go - its methods' other ranges stay", "[hooks][walker]") {
  Fixture f;
  for (uint64_t i = 0; i < 100; ++i) f.add(0x10000 + i * 0x100, 0x10000 + i * 0x100 + 0x80, i + 1, 1 + (i % 3));
  CHECK(f.remove_domain(2) == 33);
  CHECK(f.index.size() == 67);
  for (uint64_t i = 0; i < 100; ++i) {
    const Entry* e = f.index.find(0x10000 + i * 0x100 + 0x10);
    if (i % 3 == 1) {
      CHECK(e == nullptr);
    } else {
      REQUIRE(e != nullptr);
      CHECK(e->method == method(i + 1));
    }
  }
  CHECK(f.remove_method(1) == 1);  // i = 0, domain 1
  CHECK(f.remove_method(2) == 0);  // i = 1 was domain 2's
}

TEST_CASE("CodeIndex: random adds and removals agree with a plain scan", "[hooks][walker]") {
  Fixture f;
  std::mt19937_64 rng(22);
  std::map<uint64_t, const Entry*> model;  // start -> entry, kept by scanning as before
  auto model_remove = [&](auto gone) {
    for (auto it = model.begin(); it != model.end();) it = gone(*it->second) ? model.erase(it) : std::next(it);
  };
  for (int step = 0; step < 20000; ++step) {
    const uint64_t r = rng() % 10;
    if (r < 6) {
      const uint64_t start = 0x100000 + (rng() % 4096) * 16;
      const uint64_t end = start + 16 + (rng() % 8) * 16;
      const uintptr_t m = 1 + rng() % 512, d = 1 + rng() % 4;
      model_remove([&](const Entry& e) { return e.start < end && start < e.end; });
      model[start] = f.add(start, end, m, d);
    } else if (r < 9) {
      const uintptr_t m = 1 + rng() % 512;
      size_t n = 0;
      model_remove([&](const Entry& e) { return e.method == method(m) && ++n; });
      CHECK(f.remove_method(m) == n);
    } else {
      const uintptr_t d = 1 + rng() % 4;
      size_t n = 0;
      model_remove([&](const Entry& e) { return e.domain == domain(d) && ++n; });
      CHECK(f.remove_domain(d) == n);
    }
    REQUIRE(f.index.size() == model.size());
  }
  for (uint64_t ip = 0x100000; ip < 0x100000 + 4096 * 16 + 256; ip += 8) {
    auto it = model.upper_bound(ip);
    const Entry* want = nullptr;
    if (it != model.begin() && ip < std::prev(it)->second->end) want = std::prev(it)->second;
    REQUIRE(f.index.find(ip) == want);
  }
}
