// The sampling pieces that need no Mono: the record pool's lock-free free stack, and ELF symbol
// tables (runtime-hooks/src/sample_pool.h, elf_symbols.h).
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include "mlpd_catch.h"
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "mlpd/buffer_decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/capture/sampling.h"
#include "mlpd/rt/meta_log.h"

#include "capture/elf_symbols.h"
#include "capture/sample_pool.h"

using namespace mlpd::hooks;
using namespace mlpd::hooks::sampling_detail;

extern "C" __attribute__((noinline)) int mlpd_sampling_test_marker(int x) { return x * 7 + 1; }

namespace {
// A pool over `n` fresh records (mmap'd, as the sampler maps them), unmapped when the test ends.
struct TestPool {
  explicit TestPool(uint32_t n) : bytes(size_t{n} * sizeof(Record)), slots(n) {
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    pool.records = static_cast<Record*>(mem);
    pool.slots = slots.data();
    pool.count = n;
  }
  ~TestPool() {
    if (pool.records) munmap(pool.records, bytes);
  }
  TestPool(const TestPool&) = delete;
  TestPool& operator=(const TestPool&) = delete;
  // Every record on the free stack, record 0 on top.
  void fill() {
    for (uint32_t i = pool.count; i-- > 0;) pool.push(&pool.records[i]);
  }
  size_t bytes;
  std::vector<Slot> slots;
  Pool pool;
};
}  // namespace

TEST_CASE("sample pool: concurrent pops and pushes never hand out a record twice", "[hooks][sampling]") {
  constexpr uint32_t kRecords = 8;
  TestPool tp(kRecords);
  REQUIRE(tp.pool.records);
  Pool& pool = tp.pool;
  tp.fill();
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
  CHECK(syms.name(*s) == "mlpd_sampling_test_marker");
  CHECK(s->value == addr - bias);
  CHECK(s->size > 0);
  // Past the end of every symbol: no symbol, and the gap starts after the last one.
  CHECK(syms.find(UINT64_MAX - 1, gap_start, gap_end) == nullptr);
  CHECK(gap_end == UINT64_MAX);
  CHECK(gap_start > 0);
}

TEST_CASE("ELF symbols: a stripped runtime's .gnu_debuglink names its debug file (issue 33.5)", "[hooks][sampling]") {
  // Debian's mono-sgen is stripped and links /usr/lib/debug/usr/bin/mono-sgen (mono-runtime-dbg).
  ElfSymbols exe;
  if (!exe.load_file("/usr/bin/mono-sgen") || exe.from_symtab()) {
    WARN("no stripped /usr/bin/mono-sgen here");
    return;
  }
  CHECK(exe.debuglink() == "mono-sgen");
  CHECK(exe.build_id().size() == 40);
  ElfSymbols debug;
  // Installed by scripts/install-deps.sh: its absence is a failure, not a reason to pass.
  REQUIRE(debug.load_file("/usr/lib/debug/usr/bin/mono-sgen"));
  CHECK(debug.from_symtab());
  CHECK(debug.size() > exe.size() * 2);  // the runtime's own functions, not only its exports
  CHECK(debug.build_id() == exe.build_id());
  uint32_t crc = 0;
  REQUIRE(file_crc32("/usr/lib/debug/usr/bin/mono-sgen", crc));
  CHECK(crc == exe.debuglink_crc());
  CHECK_FALSE(file_crc32("/nonexistent/file", crc));
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

TEST_CASE("sample pool: within() never wraps around 2^64", "[hooks][sampling]") {
  const uint64_t base = 0x7fff00001000, size = 16384;
  CHECK(within(base, 8, base, size));
  CHECK(within(base + size - 8, 8, base, size));
  CHECK_FALSE(within(base + size - 7, 8, base, size));
  CHECK_FALSE(within(base - 1, 8, base, size));
  // The old form (addr + 8 <= base + size) accepted these: addr + 8 wraps to a small number.
  CHECK_FALSE(within(UINT64_MAX - 3, 8, base, size));
  CHECK_FALSE(within(UINT64_MAX, 8, base, size));
  CHECK_FALSE(within(base, UINT64_MAX, base, size));
  CHECK_FALSE(within(base, 8, base, 4));
  CHECK(within(UINT64_MAX - 7, 8, UINT64_MAX - 15, 16));
  CHECK_FALSE(within(0, 8, 0, 0));
}

TEST_CASE("sample pool: closing hands every free record to the closer, later pops fail", "[hooks][sampling]") {
  constexpr uint32_t kRecords = 6;
  TestPool tp(kRecords);
  REQUIRE(tp.pool.records);
  Pool& pool = tp.pool;
  tp.fill();
  // Building the free stack touched no record page (only the slot array).
  std::vector<unsigned char> resident((kRecords * sizeof(Record) + 4095) / 4096);
  REQUIRE(mincore(pool.records, tp.bytes, resident.data()) == 0);
  for (unsigned char page : resident) CHECK((page & 1) == 0);
  Record* a = pool.pop();
  Record* b = pool.pop();
  REQUIRE(a);
  REQUIRE(b);
  pool.state(a).store(kWriting);
  CHECK_FALSE(pool.closed());
  CHECK(pool.close() == kRecords - 2);
  CHECK(pool.closed());
  CHECK(pool.pop() == nullptr);
  pool.push(a);  // after the close: marked free, not handed out again
  CHECK(pool.state(a).load() == kFree);
  CHECK(pool.pop() == nullptr);
  CHECK(pool.closed());
  CHECK(pool.close() == 0);
}

namespace {

// Fills `r` as the signal handler does: this thread's registers (libunwind's numbering) and a copy
// of its stack top, so that the drain has real native frames to unwind.
__attribute__((noinline)) void capture(Record& r) {
  ucontext_t uc;
  REQUIRE(getcontext(&uc) == 0);
  mlpd::arch::signal_registers(uc, r.regs);
  if constexpr (mlpd::arch::kNativeUnwind) {
    r.ip = r.regs[mlpd::arch::kRegIp];
    r.stack_addr = r.regs[mlpd::arch::kRegSp];
  } else {  // arch/generic reads no register: the leaf IP only (the stack copy is then not read)
    r.ip = reinterpret_cast<uint64_t>(&capture);
    r.stack_addr = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  }
  pthread_attr_t attr;
  REQUIRE(pthread_getattr_np(pthread_self(), &attr) == 0);
  void* lo = nullptr;
  size_t size = 0;
  REQUIRE(pthread_attr_getstack(&attr, &lo, &size) == 0);
  pthread_attr_destroy(&attr);
  const uint64_t hi = reinterpret_cast<uint64_t>(lo) + size;
  r.stack_len = static_cast<uint32_t>(std::min<uint64_t>(kStackCopyBytes, hi - r.stack_addr));
  // As the handler copies it (sampler.cpp's copy_stack): with process_vm_readv, not memcpy, which under
  // ASan would trip over the redzones of this thread's other frames.
  iovec local{r.stack, r.stack_len};
  iovec remote{reinterpret_cast<void*>(r.stack_addr), r.stack_len};
  REQUIRE(process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(r.stack_len));
  r.nframes = 0;
  r.leaf_offset = -1;
  r.tid = static_cast<uint64_t>(pthread_self());
}

int count_module(dl_phdr_info*, size_t, void* n) {
  ++*static_cast<int*>(n);
  return 0;
}

}  // namespace

// glibc's fork does not reset the loader's dl_load_write_lock in the child: a fork while the drain
// holds it (inside dl_iterate_phdr) would leave the child hanging at its first dl_iterate_phdr or
// dlopen. The drain holds it one chunk at a time, under a mutex the pthread_atfork guard takes.
TEST_CASE("sample drain: a fork while the helper unwinds leaves a child that can use the loader",
          "[hooks][sampling][fork]") {
  constexpr uint32_t kRecords = 1024;
  TestPool tp(kRecords);
  REQUIRE(tp.pool.records);
  Pool& pool = tp.pool;
  capture(pool.records[0]);
  for (uint32_t i = 0; i < kRecords; ++i) {
    if (i) std::memcpy(static_cast<void*>(&pool.records[i]), &pool.records[0], sizeof(Record));
    pool.records[i].time = i;
  }
  mlpd::rt::MetaLog meta(1, 0);
  // MLPD_TEST_NO_FORK_GUARD=1 leaves the guard out, to see this test fail without it.
  if (!std::getenv("MLPD_TEST_NO_FORK_GUARD")) install_fork_guard();
  g_sample_meta = &meta;
  g_pool = &pool;
  const uint64_t written_before = sample_stats().written;
  std::atomic<bool> stop{false};
  std::thread helper([&] {
    while (!stop.load()) {
      for (uint32_t i = 0; i < kRecords; ++i) tp.slots[i].state.store(kReady, std::memory_order_release);
      drain_samples();
    }
  });
  int forks = 0, hung = 0, failed = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(10);  // a hung child dies of SIGALRM
      int n = 0;
      dl_iterate_phdr(count_module, &n);
      void* h = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
      (void)h;
      _exit(n > 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    ++forks;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) ++hung;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  stop.store(true);
  helper.join();
  g_pool = nullptr;
  g_sample_meta = nullptr;
  INFO("forks " << forks << ", samples unwound " << sample_stats().written - written_before);
  CHECK(sample_stats().written - written_before >= kRecords);
  CHECK(forks > 0);
  CHECK(hung == 0);
  CHECK(failed == 0);
}

namespace {

// The events of every buffer MetaLog::take() produced.
std::vector<mlpd::Event> decode_all(const std::vector<uint8_t>& bytes) {
  std::vector<mlpd::Event> out;
  size_t at = 0;
  while (at + mlpd::format::kBufferHeaderSize <= bytes.size()) {
    mlpd::BufferHeader h;
    mlpd::decode_buffer_header(bytes.data() + at, h);
    mlpd::BufferDecoder dec(h, bytes.data() + at + mlpd::format::kBufferHeaderSize, 0);
    mlpd::Event e;
    std::string problem;
    uint64_t offset = 0;
    while (dec.next(e, problem, offset)) out.push_back(e);
    REQUIRE(problem.empty());
    at += mlpd::format::kBufferHeaderSize + h.length;
  }
  return out;
}

}  // namespace

// Issue 22, item 11: a stack cut short (here: the managed walk had more frames than kept) ends
// with format::kTruncatedMethod, described by one method_jit "[truncated]" before its first use.
TEST_CASE("sample drain: a stack cut short ends with the [truncated] marker, described once", "[hooks][sampling]") {
  constexpr uint32_t kRecords = 3;
  TestPool tp(kRecords);
  REQUIRE(tp.pool.records);
  Pool& pool = tp.pool;
  for (uint32_t i = 0; i < kRecords; ++i) {
    Record& r = pool.records[i];
    r.time = 100 + i;
    r.tid = 0x1234;
    r.ip = reinterpret_cast<uint64_t>(&mlpd_sampling_test_marker);
    r.regs[mlpd::arch::kRegIp] = r.ip;
    r.stack_len = 0;  // the leaf IP only
    r.nframes = 0;
    r.truncated = i != 1;  // records 0 and 2 were cut
  }
  mlpd::rt::MetaLog meta(1, 0);
  g_sample_meta = &meta;
  g_pool = &pool;
  const uint64_t truncated_before = sample_stats().truncated;
  for (uint32_t i = 0; i < kRecords; ++i) tp.slots[i].state.store(kReady, std::memory_order_release);
  drain_samples();
  // A second round: the marker is not described again.
  pool.records[0].time = 200;
  tp.slots[0].state.store(kReady, std::memory_order_release);
  drain_samples();
  g_pool = nullptr;
  g_sample_meta = nullptr;
  std::vector<uint8_t> bytes;
  meta.take(bytes, 300);
  const std::vector<mlpd::Event> events = decode_all(bytes);
  int described = 0, hits = 0, marked = 0;
  for (const mlpd::Event& e : events) {
    if (e.kind == mlpd::EventKind::method_jit && e.method == mlpd::format::kTruncatedMethod) {
      ++described;
      CHECK(e.name == mlpd::format::kTruncatedName);
      CHECK(e.ptr == mlpd::format::kTruncatedMethod);
      CHECK(e.size == 1);
    } else if (e.kind == mlpd::EventKind::sample_hit) {
      ++hits;
      const bool cut = !e.frames.empty() && e.frames.back() == mlpd::format::kTruncatedMethod;
      if (cut) {
        ++marked;
        CHECK(described == 1);  // before its first use
        CHECK(e.frames.size() == 1);
      } else {
        CHECK(e.frames.empty());
      }
    }
  }
  CHECK(described == 1);
  CHECK(hits == 4);
  CHECK(marked == 3);
  CHECK(sample_stats().truncated - truncated_before == 3);
}
