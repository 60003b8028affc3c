// The stack walker's per-thread state (runtime-hooks/src/mono/walker/thread_state.h): the thread's stack
// bounds, the IP cache in front of the code table, the counts, the memory copies, the bounds checks.
#include "mlpd_catch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "mlpd/hooks/stack_walker.h"
#include "walker_fixtures.h"

using namespace walker_test;

TEST_CASE("thread state: made once per thread, with this thread's stack bounds") {
  set_up();
  ThreadWalk* a = nullptr;
  std::thread([&a] {
    ThreadWalk* t = thread_walk();
    REQUIRE(t != nullptr);
    CHECK(thread_walk() == t);
    // The frame's address, not a local's: ASan with detect_stack_use_after_return (on by default from
    // LLVM 15, Debian 13's clang) moves address-taken locals to a fake stack on the heap.
    const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    CHECK(t->bounds_ok);
    CHECK((t->lo < here && here < t->hi));
    a = t;
  }).join();
  std::thread([] { CHECK(thread_walk() != nullptr); }).join();
  CHECK(a != nullptr);
}

TEST_CASE("thread state: the IP cache holds entries until they are gone, native answers until code is added") {
  set_up();
  static FakeCode code(kFixedPrologue);
  static FakeMethod m;
  code_added(m.get(), nullptr, m.get(), nullptr, code.start(), sizeof code.bytes);
  ThreadWalk* t = synthetic_thread(0, 0);
  const CodeEntry* e = lookup(*t, code.start() + 21);  // a return address: the call ends at +20
  REQUIRE(e != &kNativeEntry);
  CHECK(e->method == m.get());
  CHECK(lookup(*t, code.start() + 21) == e);
  // cached: the slot of ip (ret - 1) holds the entry
  const uint64_t ip = code.start() + 20;
  const IpSlot& s = t->ips[((ip >> 2) % (kIpCache / 2)) * 2];
  CHECK(s.ip == ip);
  CHECK(s.value == reinterpret_cast<uintptr_t>(e));
  // Not JIT code: cached with this generation's tag; a new generation makes the answer stale.
  static uint8_t native[64];
  const uint64_t nat = reinterpret_cast<uint64_t>(native) + 9;
  CHECK(lookup(*t, nat) == &kNativeEntry);
  const IpSlot& n = t->ips[(((nat - 1) >> 2) % (kIpCache / 2)) * 2];
  CHECK(n.value == t->native_tag);
  CHECK(cached(*t, n, nat - 1) == &kNativeEntry);
  t->native_tag += 2;
  CHECK(cached(*t, n, nat - 1) == nullptr);
  // The method freed: the cached entry is gone, the lookup says native.
  method_freed(m.get());
  CHECK(cached(*t, s, ip) == nullptr);
  CHECK(lookup(*t, code.start() + 21) == &kNativeEntry);
  delete t;
}

TEST_CASE("thread state: counts reach the global ones") {
  ThreadWalk t;
  t.fast = 5;
  t.via_lmf = 2;
  t.slow[kNoTop] = 3;
  const uint64_t fast = g_fast_total.load(), lmf = g_lmf_total.load(), top = g_slow_total[kNoTop].load();
  flush_counts(t);
  CHECK(g_fast_total.load() == fast + 5);
  CHECK(g_lmf_total.load() == lmf + 2);
  CHECK(g_slow_total[kNoTop].load() == top + 3);
  CHECK((t.fast == 0 && t.via_lmf == 0 && t.slow[kNoTop] == 0));
}

TEST_CASE("thread state: memory copies and bounds checks") {
  take_pid();
  const uint64_t value = 0x1122334455667788;
  uint64_t copy = 0;
  REQUIRE(read_memory(reinterpret_cast<uint64_t>(&value), reinterpret_cast<uint8_t*>(&copy), sizeof copy));
  CHECK(copy == value);
  CHECK_FALSE(read_memory(8, reinterpret_cast<uint8_t*>(&copy), sizeof copy));  // unmapped: an error, no fault
  const Bounds b{0x1000, 0x2000};
  CHECK(readable(b, 0x1000, 0));
  CHECK(readable(b, 0x1000, 0xff8));
  CHECK_FALSE(readable(b, 0x1000, 0xff9));  // its last byte past the end
  CHECK(readable(b, 0x1800, -0x800));
  CHECK_FALSE(readable(b, 0x1800, -0x801));
  CHECK_FALSE(readable(b, 0x0ff8, 8));      // a base outside
  CHECK_FALSE(readable(b, 0x1000, INT64_MIN));
  CHECK_FALSE(readable(b, 0x1000, INT64_MAX));
}

// Where process_vm_readv is missing (qemu-user, where the arm64 tests run) or refused (a seccomp
// sandbox), read_memory copies through a pipe: the same answers, a fault an error (EFAULT), never a
// crash, and nothing left in the pipe after a fault (the next copy reads its own bytes).
TEST_CASE("thread state: memory copies through the pipe") {
  take_pid();
  std::vector<uint8_t> big(10000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> copy(big.size());
  REQUIRE(read_memory_by_pipe(reinterpret_cast<uint64_t>(big.data()), copy.data(), copy.size()));  // > one chunk
  CHECK(copy == big);
  uint64_t word = 0;
  errno = 0;
  CHECK_FALSE(read_memory_by_pipe(8, reinterpret_cast<uint8_t*>(&word), sizeof word));
  CHECK(errno == EFAULT);
  // A range whose second page is unreadable: an error; the bytes of the first page that went into the
  // pipe were taken out again.
  const long page = sysconf(_SC_PAGESIZE);
  void* m = mmap(nullptr, static_cast<size_t>(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  auto* p = static_cast<uint8_t*>(m);
  std::memset(p, 0x5a, static_cast<size_t>(page));
  REQUIRE(mprotect(p + page, static_cast<size_t>(page), PROT_NONE) == 0);
  std::vector<uint8_t> across(64);
  CHECK_FALSE(read_memory_by_pipe(reinterpret_cast<uint64_t>(p + page - 32), across.data(), across.size()));
  const uint64_t value = 0x0102030405060708;
  REQUIRE(read_memory_by_pipe(reinterpret_cast<uint64_t>(&value), reinterpret_cast<uint8_t*>(&word), sizeof word));
  CHECK(word == value);
  REQUIRE(read_memory_by_pipe(reinterpret_cast<uint64_t>(p + page - 8), reinterpret_cast<uint8_t*>(&word), sizeof word));
  CHECK(word == 0x5a5a5a5a5a5a5a5aULL);
  munmap(m, static_cast<size_t>(2 * page));
  // Threads copying at once each get their own bytes.
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([k, &wrong] {
      for (int i = 0; i < 500; ++i) {
        const uint64_t mine = (static_cast<uint64_t>(k) << 32) | static_cast<uint64_t>(i);
        uint64_t got = 0;
        if (!read_memory_by_pipe(reinterpret_cast<uint64_t>(&mine), reinterpret_cast<uint8_t*>(&got), sizeof got) ||
            got != mine) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
}
