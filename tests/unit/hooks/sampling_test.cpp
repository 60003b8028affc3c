// The sampling pieces that need no Mono: the record pool's lock-free free stack, and ELF symbol
// tables (runtime-hooks/src/sample_pool.h, elf_symbols.h).
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "elf_symbols.h"
#include "sample_pool.h"

using namespace mlpd::hooks;
using namespace mlpd::hooks::sampling_detail;

extern "C" __attribute__((noinline)) int mlpd_sampling_test_marker(int x) { return x * 7 + 1; }

TEST_CASE("sample pool: concurrent pops and pushes never hand out a record twice", "[hooks][sampling]") {
  constexpr uint32_t kRecords = 8;
  void* mem = mmap(nullptr, kRecords * sizeof(Record), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  Pool pool;
  pool.records = static_cast<Record*>(mem);
  pool.count = kRecords;
  for (uint32_t i = kRecords; i-- > 0;) pool.push(&pool.records[i]);
  std::vector<std::atomic<int>> owners(kRecords);
  std::atomic<int> twice{0};
  std::atomic<long> empty{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        Record* r = pool.pop();
        if (!r) {
          empty.fetch_add(1);
          continue;
        }
        const auto idx = static_cast<size_t>(r - pool.records);
        if (owners[idx].fetch_add(1) != 0) twice.fetch_add(1);
        owners[idx].fetch_sub(1);
        pool.push(r);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(twice.load() == 0);
  uint32_t n = 0;
  while (pool.pop()) ++n;
  CHECK(n == kRecords);  // every record came back
  munmap(mem, kRecords * sizeof(Record));
}

TEST_CASE("ELF symbols: a function of this program is found with its real start and size", "[hooks][sampling]") {
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&mlpd_sampling_test_marker), &info) != 0);
  ElfSymbols syms;
  REQUIRE(syms.load_file("/proc/self/exe"));
  CHECK(syms.from_symtab());  // the test binary is not stripped
  const uint64_t bias = reinterpret_cast<uint64_t>(info.dli_fbase);
  const uint64_t addr = reinterpret_cast<uint64_t>(&mlpd_sampling_test_marker);
  uint64_t gap_start = 0, gap_end = 0;
  const ElfSymbols::Symbol* s = syms.find(addr - bias + 1, gap_start, gap_end);
  REQUIRE(s != nullptr);
  CHECK(s->name == "mlpd_sampling_test_marker");
  CHECK(s->value == addr - bias);
  CHECK(s->size > 0);
  // Past the end of every symbol: no symbol, and the gap starts after the last one.
  CHECK(syms.find(UINT64_MAX - 1, gap_start, gap_end) == nullptr);
  CHECK(gap_end == UINT64_MAX);
  CHECK(gap_start > 0);
}

TEST_CASE("ELF symbols: not an ELF file, or no file", "[hooks][sampling]") {
  ElfSymbols syms;
  CHECK_FALSE(syms.load_file("/proc/self/status"));
  CHECK_FALSE(syms.load_file("/nonexistent/file"));
  const unsigned char junk[64] = {0x7f, 'E', 'L', 'F'};
  CHECK_FALSE(syms.load_memory(junk, sizeof junk));
  uint64_t a = 0, b = 0;
  CHECK(syms.find(100, a, b) == nullptr);
}
