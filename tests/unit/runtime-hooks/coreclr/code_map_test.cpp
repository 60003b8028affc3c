// CodeMap and the frame-pointer walk (runtime-hooks/src/coreclr/code_map.h) on synthetic code ranges
// and a synthetic stack: lookups at range edges, and a walk that never leaves the given stack bounds
// nor loops on a chain that does not go up.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "coreclr/code_map.h"
#include "mlpd_catch.h"

using mlpd::coreclr::CodeMap;
using mlpd::coreclr::walk_frame_pointers;

TEST_CASE("code map: ranges to methods", "[coreclr]") {
  static CodeMap m;  // its cache is 128 KiB: not on the test's stack
  m.add(0x2000, 0x100, 2);
  m.add(0x1000, 0x80, 1);
  m.add(0x3000, 0x10, 3);
  m.add(0x2000, 0x100, 99);  // the same body again: kept as it was
  m.add(0x4000, 0, 4);       // no code: not added
  CHECK(m.size() == 3);
  CHECK(m.find(0x0fff) == 0);
  CHECK(m.find(0x1000) == 1);
  CHECK(m.find(0x107f) == 1);
  CHECK(m.find(0x1080) == 0);  // one past the end
  CHECK(m.find(0x20ff) == 2);
  CHECK(m.find(0x3005) == 3);
  CHECK(m.find(0x3010) == 0);
  CHECK(m.find(0xffffffff) == 0);
  const uint64_t ips[] = {0x1000, 0x1080, 0x20ff, 0x5};
  uint64_t methods[4] = {9, 9, 9, 9};
  m.find_all(ips, 4, methods);
  CHECK(methods[0] == 1);
  CHECK(methods[1] == 0);
  CHECK(methods[2] == 2);
  CHECK(methods[3] == 0);
}

TEST_CASE("frame-pointer walk: stays in the stack, goes up only", "[coreclr]") {
  // A stack of 64 words; frames at words 4, 10 and 20 (each: caller's fp, return address).
  std::vector<uint64_t> stack(64, 0);
  auto at = [&](size_t word) { return reinterpret_cast<uint64_t>(&stack[word]); };
  const uint64_t lo = at(0), hi = at(0) + 64 * 8;
  stack[4] = at(10);
  stack[5] = 0x1111;
  stack[10] = at(20);
  stack[11] = 0x2222;
  stack[20] = at(63) + 8;  // points past the stack: the walk ends there
  stack[21] = 0x3333;
  std::vector<uint64_t> seen;
  CHECK(walk_frame_pointers(at(4), lo, hi, 100, [&](uint64_t ra) { return seen.push_back(ra), true; }) == 3);
  CHECK(seen == std::vector<uint64_t>{0x1111, 0x2222, 0x3333});
  // A chain that points down (a loop): one frame, then it stops.
  stack[10] = at(4);
  seen.clear();
  CHECK(walk_frame_pointers(at(4), lo, hi, 100, [&](uint64_t ra) { return seen.push_back(ra), true; }) == 2);
  // A start outside the bounds or misaligned: nothing read.
  CHECK(walk_frame_pointers(hi, lo, hi, 100, [](uint64_t) { return true; }) == 0);
  CHECK(walk_frame_pointers(at(4) + 1, lo, hi, 100, [](uint64_t) { return true; }) == 0);
  CHECK(walk_frame_pointers(lo - 64, lo, hi, 100, [](uint64_t) { return true; }) == 0);
  // The visitor stops it; max_steps too.
  stack[10] = at(20);
  CHECK(walk_frame_pointers(at(4), lo, hi, 100, [](uint64_t) { return false; }) == 1);
  CHECK(walk_frame_pointers(at(4), lo, hi, 2, [](uint64_t) { return true; }) == 2);
}

TEST_CASE("code map: hidden frames learned per chain", "[coreclr]") {
  using mlpd::coreclr::HiddenFrames;
  static HiddenFrames h;  // 64 KiB: not on the test's stack
  const uint64_t chain_a[] = {0x7000'1000, 0x7000'2000, 0x7000'3000};
  const uint64_t chain_b[] = {0x7000'1000, 0x7000'2000, 0x7000'3001};
  const uint64_t a = HiddenFrames::key(chain_a, 3), b = HiddenFrames::key(chain_b, 3);
  CHECK(a != b);
  CHECK(a != 0);
  CHECK(HiddenFrames::key(chain_a, 2) != a);  // the chain's length counts
  CHECK(h.lookup(a) == HiddenFrames::kUnknown);
  h.learn(a, HiddenFrames::at(2, 24));
  CHECK(h.lookup(a) == (int64_t{2} << 32 | 24));
  CHECK(h.lookup(b) == HiddenFrames::kUnknown);
  h.learn(b, HiddenFrames::kNone);
  CHECK(h.lookup(b) == HiddenFrames::kNone);
  CHECK(h.lookup(a) == (int64_t{2} << 32 | 24));  // (a and b in different slots here)
  h.learn(a, HiddenFrames::kNone);  // learned again: the last answer stands
  CHECK(h.lookup(a) == HiddenFrames::kNone);
}

TEST_CASE("code map: the walk gives each record's address too", "[coreclr]") {
  alignas(16) uint64_t stack[16] = {};
  const auto lo = reinterpret_cast<uint64_t>(stack), hi = lo + sizeof stack;
  stack[2] = lo + 8 * 6;  // record at [2]: caller's record at [6]
  stack[3] = 0xaaaa;
  stack[6] = 0;           // the outermost: no caller
  stack[7] = 0xbbbb;
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  CHECK(walk_frame_pointers(lo + 16, lo, hi, 10, [&](uint64_t ret, uint64_t fp) { return seen.emplace_back(ret, fp), true; }) == 2);
  CHECK(seen == std::vector<std::pair<uint64_t, uint64_t>>{{0xaaaa, lo + 16}, {0xbbbb, lo + 48}});
}

TEST_CASE("code map: the cache of addresses gives what the ranges give", "[coreclr]") {
  static CodeMap m;
  m.add(0x10000, 0x100, 0x8000);
  const uint64_t ips[] = {0x10010, 0x20010, 0x10010, 0x20010};
  uint64_t methods[4] = {};
  for (int round = 0; round < 3; ++round) {  // the first fills the cache, the others read it
    m.find_all(ips, 4, methods);
    CHECK(methods[0] == 0x8000);
    CHECK(methods[1] == 0);
    CHECK(methods[2] == 0x8000);
    CHECK(methods[3] == 0);
  }
  // "In no range" was cached: a body added there afterwards is found at once.
  m.add(0x20000, 0x100, 0x9000);
  CHECK(m.find(0x20010) == 0x9000);
  m.find_all(ips, 4, methods);
  CHECK(methods[1] == 0x9000);
  CHECK(methods[3] == 0x9000);
  // Addresses that share a cache slot (8192 slots) are told apart.
  const uint64_t a = 0x10020, b = a + (uint64_t{8192} << 13) + 8192;  // same slot_of() not required: checked by value
  CHECK(m.find(a) == 0x8000);
  CHECK(m.find(b) == 0);
  CHECK(m.find(a) == 0x8000);
}

TEST_CASE("code map: threads that share a cache slot never get another address's method", "[coreclr]") {
  // Four addresses in four bodies, all in one cache slot (slot_of mixes ip and ip >> 13: adding
  // multiples of 2^26 changes neither part's low 13 bits), looked up by four threads at once: each
  // lookup misses (another thread took the slot), searches, and writes the slot while the others do.
  static CodeMap m;
  constexpr int kThreads = 4;
  uint64_t ips[kThreads], methods[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    ips[t] = 0x10010 + (static_cast<uint64_t>(t) << 26);
    methods[t] = 0x8000 + static_cast<uint64_t>(t) * 0x100;
    m.add(ips[t] - 0x10, 0x100, methods[t]);
  }
  // A torn pair is rare (one round of the code before the sequence lock showed it 6 times in 20):
  // ten rounds.
  std::atomic<uint64_t> wrong{0};
  for (int round = 0; round < 10; ++round) {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) {
        }
        for (int i = 0; i < 1000000; ++i)
          if (m.find(ips[t]) != methods[t]) wrong.fetch_add(1, std::memory_order_relaxed);
      });
    }
    for (auto& th : threads) th.join();
  }
  CHECK(wrong.load() == 0);
}

TEST_CASE("code map: code given again replaces what was there, cached addresses too", "[coreclr]") {
  static CodeMap m;
  m.add(0x1000, 0x100, 2);
  m.add(0x1100, 0x100, 4);
  m.add(0x1200, 0x100, 6);
  CHECK(m.find(0x1010) == 2);  // now in the cache of addresses
  CHECK(m.find(0x1110) == 4);
  // A new method at the first one's start, over part of the second: both dropped, the third kept.
  m.replace(0x1000, 0x180, 8);
  CHECK(m.size() == 2);
  CHECK(m.find(0x1010) == 8);  // not the cached 2
  CHECK(m.find(0x1110) == 8);  // not the cached 4
  CHECK(m.find(0x1180) == 0);  // the rest of the dropped range is no method's now
  CHECK(m.find(0x1210) == 6);
  m.replace(0x1200, 0x100, 10);  // the same range again: the new method
  CHECK(m.find(0x1210) == 10);
  CHECK(m.size() == 2);
}
