// The jitdump/perf map writer (runtime-hooks/src/capture/jitdump.h): files decoded here by a reader written
// from the specification (tools/perf/Documentation/jitdump-specification.txt), not from the writer.
#include <elf.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "mlpd_catch.h"
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "capture/jitdump.h"
#include "mlpd/arch/machine.h"
#include "temp_dir.h"

using namespace mlpd::hooks::perf;

namespace {

struct Load {
  uint64_t timestamp, vma, code_addr, code_size, code_index;
  uint32_t pid, tid;
  std::string name;
  std::vector<uint8_t> code;
};

struct Dump {
  uint32_t version = 0, total_size = 0, elf_mach = 0, pad1 = 0, pid = 0;
  uint64_t timestamp = 0, flags = 0;
  std::vector<Load> loads;
  int closes = 0;
  bool close_last = false;
  std::vector<std::string> errors;  // layout violations, with the byte offset
};

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T>
T rd(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

// Every field as the specification lists it, in order; any violation goes to `errors`.
Dump decode(const std::vector<uint8_t>& b) {
  Dump d;
  auto err = [&](size_t at, const std::string& what) { d.errors.push_back("offset " + std::to_string(at) + ": " + what); };
  if (b.size() < 40) {
    err(0, "shorter than the 40-byte file header");
    return d;
  }
  if (rd<uint32_t>(b, 0) != 0x4A695444) err(0, "magic is not JiTD (0x4A695444)");
  d.version = rd<uint32_t>(b, 4);
  d.total_size = rd<uint32_t>(b, 8);
  d.elf_mach = rd<uint32_t>(b, 12);
  d.pad1 = rd<uint32_t>(b, 16);
  d.pid = rd<uint32_t>(b, 20);
  d.timestamp = rd<uint64_t>(b, 24);
  d.flags = rd<uint64_t>(b, 32);
  size_t at = d.total_size;
  if (at < 40 || at > b.size()) {
    err(8, "bad header total_size");
    return d;
  }
  uint64_t last_ts = d.timestamp;
  while (at < b.size()) {
    if (d.close_last) err(at, "a record after JIT_CODE_CLOSE");
    if (b.size() - at < 16) {
      err(at, "truncated record header");
      return d;
    }
    const uint32_t id = rd<uint32_t>(b, at);
    const uint32_t size = rd<uint32_t>(b, at + 4);
    const uint64_t ts = rd<uint64_t>(b, at + 8);
    if (size < 16 || size > b.size() - at) {
      err(at, "record total_size " + std::to_string(size) + " out of the file");
      return d;
    }
    if (ts < last_ts) err(at, "timestamp goes backwards");
    last_ts = ts;
    if (id == 0) {
      if (size < 16 + 40 + 1) {
        err(at, "JIT_CODE_LOAD too short");
      } else {
        Load l;
        l.timestamp = ts;
        l.pid = rd<uint32_t>(b, at + 16);
        l.tid = rd<uint32_t>(b, at + 20);
        l.vma = rd<uint64_t>(b, at + 24);
        l.code_addr = rd<uint64_t>(b, at + 32);
        l.code_size = rd<uint64_t>(b, at + 40);
        l.code_index = rd<uint64_t>(b, at + 48);
        const size_t name_at = at + 56;
        const void* nul = std::memchr(b.data() + name_at, 0, at + size - name_at);
        if (!nul) {
          err(name_at, "name without its NUL inside the record");
        } else {
          const size_t name_len = static_cast<const uint8_t*>(nul) - (b.data() + name_at);
          l.name.assign(reinterpret_cast<const char*>(b.data() + name_at), name_len);
          const size_t code_at = name_at + name_len + 1;
          if (at + size - code_at != l.code_size)
            err(at, "total_size is not header + fixed fields + name + NUL + code_size bytes of code");
          else
            l.code.assign(b.begin() + static_cast<long>(code_at), b.begin() + static_cast<long>(code_at + l.code_size));
        }
        d.loads.push_back(std::move(l));
      }
    } else if (id == 3) {
      if (size != 16) err(at, "JIT_CODE_CLOSE with a payload");
      ++d.closes;
      d.close_last = true;
    } else {
      err(at, "unexpected record id " + std::to_string(id));
    }
    at += size;
  }
  return d;
}

// Checks the whole file against the specification and the writer's promises.
void check_well_formed(const Dump& d, uint32_t pid, bool closed) {
  INFO((d.errors.empty() ? std::string() : d.errors.front()));
  CHECK(d.errors.empty());
  CHECK(d.version == 1);
  CHECK(d.total_size == 40);
  CHECK(d.elf_mach == mlpd::arch::kElfMachine);
  CHECK(d.pad1 == 0);
  CHECK(d.pid == pid);
  CHECK(d.flags == 0);  // CLOCK_MONOTONIC, not an architecture timestamp
  CHECK(d.closes == (closed ? 1 : 0));
  std::set<uint64_t> indices;
  for (const Load& l : d.loads) {
    CHECK(l.pid == pid);
    CHECK(l.vma == l.code_addr);
    CHECK(l.timestamp >= d.timestamp);
    CHECK(indices.insert(l.code_index).second);  // unique per load
  }
}

struct FakeCode {
  std::vector<uint8_t> bytes;
  std::string name;
};

FakeCode fake(int i) {
  FakeCode c;
  c.name = "Ns.Class:Method" + std::to_string(i) + " (int,string)";
  c.bytes.resize(16 + (i * 7) % 300);
  for (size_t k = 0; k < c.bytes.size(); ++k) c.bytes[k] = static_cast<uint8_t>(i * 31 + k);
  return c;
}

uint64_t addr_of(const FakeCode& c) { return reinterpret_cast<uint64_t>(c.bytes.data()); }

}  // namespace

TEST_CASE("jitdump: header, loads from several threads, close, every record as the spec lays it out") {
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.perfmap = true;
  cfg.perfmap_dir = dir.path.string();
  cfg.pid = 4242;
  Writer w;
  std::string error;
  REQUIRE(w.open(cfg, error));
  CHECK(w.jitdump_path() == dir.file("jit-4242.dump"));
  CHECK(w.perfmap_path() == dir.file("perf-4242.map"));

  constexpr int kThreads = 4, kPerThread = 250;
  std::vector<FakeCode> code;
  for (int i = 0; i < kThreads * kPerThread; ++i) code.push_back(fake(i));
  std::atomic<bool> stop{false};
  std::thread drainer([&] {
    std::string f;
    while (!stop.load()) {
      w.drain(f);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t * kPerThread; i < (t + 1) * kPerThread; ++i) {
        const FakeCode& c = code[i];
        w.load(c.name.data(), c.name.size(), addr_of(c), c.bytes.size(), c.bytes.data(), monotonic_ns(),
               static_cast<uint32_t>(100 + t));
      }
    });
  }
  for (auto& t : threads) t.join();
  // An empty function (no code) and a nameless range are allowed by the spec.
  w.load("", 0, 0x1000, 0, nullptr, monotonic_ns(), 1);
  stop.store(true);
  drainer.join();
  std::string failure;
  REQUIRE(w.finish(failure));
  CHECK(failure.empty());
  // After the end nothing is queued or written.
  w.load("late", 4, 0x2000, 4, "abcd", monotonic_ns(), 1);
  CHECK(w.drain(failure));

  const std::vector<uint8_t> bytes = slurp(w.jitdump_path());
  const Dump d = decode(bytes);
  check_well_formed(d, 4242, true);
  REQUIRE(d.loads.size() == code.size() + 1);
  CHECK(w.stats().records == code.size() + 1);
  CHECK(w.stats().dump_bytes == bytes.size());
  std::map<uint64_t, const Load*> by_addr;
  for (const Load& l : d.loads) by_addr[l.code_addr] = &l;
  for (const FakeCode& c : code) {
    const auto it = by_addr.find(addr_of(c));
    REQUIRE(it != by_addr.end());
    CHECK(it->second->name == c.name);
    CHECK(it->second->code_size == c.bytes.size());
    CHECK(it->second->code == c.bytes);
    CHECK(it->second->tid >= 100);
  }
  CHECK(by_addr.at(0x1000)->code_size == 0);
  CHECK(by_addr.at(0x1000)->name.empty());

  // The perf map: one "START SIZE name" line (hex) per load.
  std::ifstream map(w.perfmap_path());
  std::string line;
  size_t lines = 0;
  std::map<uint64_t, std::string> map_lines;
  while (std::getline(map, line)) {
    ++lines;
    std::istringstream ls(line);
    std::string start, size;
    ls >> start >> size;
    const size_t name_at = start.size() + 1 + size.size() + 1;
    map_lines[std::stoull(start, nullptr, 16)] = size + " " + (name_at <= line.size() ? line.substr(name_at) : "");
  }
  CHECK(lines == code.size() + 1);
  for (const FakeCode& c : code) {
    std::ostringstream want;
    want << std::hex << c.bytes.size() << " " << c.name;
    CHECK(map_lines[addr_of(c)] == want.str());
  }
}

TEST_CASE("jitdump: a reused address gets a new load record with a later timestamp") {
  // perf inject --jit maps each load at its own time, the latest one over an address range wins: a
  // second load at an address is how code that replaced freed code is told apart.
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.pid = 7;
  Writer w;
  std::string error, failure;
  REQUIRE(w.open(cfg, error));
  const uint8_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint8_t b[4] = {9, 9, 9, 9};
  const uint64_t t1 = monotonic_ns();
  w.load("Old:Method ()", 13, 0x5000, sizeof a, a, t1, 1);
  const uint64_t t2 = t1 + 1000;
  w.load("New:Method ()", 13, 0x5000, sizeof b, b, t2, 1);
  REQUIRE(w.finish(failure));
  const Dump d = decode(slurp(w.jitdump_path()));
  check_well_formed(d, 7, true);
  REQUIRE(d.loads.size() == 2);
  CHECK(d.loads[0].name == "Old:Method ()");
  CHECK(d.loads[1].name == "New:Method ()");
  CHECK(d.loads[1].timestamp == t2);
  CHECK(d.loads[0].code_index != d.loads[1].code_index);
}

TEST_CASE("jitdump: records queued out of order are written in timestamp order") {
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.pid = 8;
  Writer w;
  std::string error, failure;
  REQUIRE(w.open(cfg, error));
  const uint64_t t = monotonic_ns();
  w.load("b", 1, 0x2000, 0, nullptr, t + 20, 1);
  w.load("a", 1, 0x1000, 0, nullptr, t + 10, 2);
  w.load("c", 1, 0x3000, 0, nullptr, t + 30, 3);
  REQUIRE(w.finish(failure));
  const Dump d = decode(slurp(w.jitdump_path()));
  check_well_formed(d, 8, true);
  REQUIRE(d.loads.size() == 3);
  CHECK(d.loads[0].name == "a");
  CHECK(d.loads[1].name == "b");
  CHECK(d.loads[2].name == "c");
}

TEST_CASE("jitdump: a full queue drops records (counted), never blocks, the file stays well formed") {
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.pid = 9;
  cfg.max_queued_bytes = 4096;
  int wakes = 0;
  cfg.wake = [](void* p) { ++*static_cast<int*>(p); };
  cfg.wake_ctx = &wakes;
  cfg.wake_bytes = 1024;
  Writer w;
  std::string error, failure;
  REQUIRE(w.open(cfg, error));
  std::vector<uint8_t> code(500, 0x90);
  for (int i = 0; i < 20; ++i) w.load("m", 1, 0x1000 + i * 0x1000, code.size(), code.data(), monotonic_ns(), 1);
  CHECK(wakes >= 1);
  const WriterStats s = w.stats();
  CHECK(s.dropped > 0);
  CHECK(s.dropped < 20);
  REQUIRE(w.finish(failure));
  const Dump d = decode(slurp(w.jitdump_path()));
  check_well_formed(d, 9, true);
  CHECK(d.loads.size() == 20 - s.dropped);
}

TEST_CASE("jitdump: a directory that cannot be written is one line, nothing is left behind") {
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.file("does-not-exist");
  cfg.pid = 10;
  Writer w;
  std::string error;
  CHECK_FALSE(w.open(cfg, error));
  CHECK(error.find("mlpd: jitdump: cannot create") == 0);
  CHECK(error.find('\n') == std::string::npos);
  CHECK_FALSE(w.active());
  w.load("m", 1, 0x1000, 0, nullptr, monotonic_ns(), 1);  // harmless
  // The jitdump opened but the map cannot be: neither is left.
  cfg.jitdump_dir = dir.path.string();
  cfg.perfmap = true;
  cfg.perfmap_dir = dir.file("nope");
  Writer w2;
  CHECK_FALSE(w2.open(cfg, error));
  CHECK(error.find("mlpd: perfmap: cannot create") == 0);
  CHECK_FALSE(std::filesystem::exists(dir.file("jit-10.dump")));
}

TEST_CASE("jitdump: a write failure (file too large) cuts the file back to whole records, one line") {
  mlpd::test::TempDir dir("jitdump");
  const std::string path = dir.file("jit-11.dump");
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // In a child: the file size limit (EFBIG instead of SIGXFSZ) must not reach the test runner.
    signal(SIGXFSZ, SIG_IGN);
    rlimit lim{10000, 10000};
    setrlimit(RLIMIT_FSIZE, &lim);
    WriterConfig cfg;
    cfg.jitdump = true;
    cfg.jitdump_dir = dir.path.string();
    cfg.pid = 11;
    Writer w;
    std::string error, failure;
    if (!w.open(cfg, error)) _exit(2);
    std::vector<uint8_t> code(300, 0xC3);
    for (int i = 0; i < 100; ++i) w.load("Big:Method ()", 13, 0x1000 * (i + 1), code.size(), code.data(), monotonic_ns(), 1);
    const bool ok = w.drain(failure);
    if (ok || failure.find("mlpd: cannot write") != 0 || failure.find('\n') != std::string::npos) _exit(3);
    w.load("After:Failure ()", 16, 0x999000, code.size(), code.data(), monotonic_ns(), 1);
    w.drain(failure);
    w.finish(failure);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::vector<uint8_t> bytes = slurp(path);
  CHECK(bytes.size() <= 10000);
  const Dump d = decode(bytes);
  check_well_formed(d, 11, false);  // no CLOSE after a failure: the end of the file ends it
  CHECK(d.loads.size() < 100);
  for (const Load& l : d.loads) CHECK(l.name == "Big:Method ()");
}

TEST_CASE("jitdump: a fork child leaves the parent's file alone") {
  mlpd::test::TempDir dir("jitdump");
  WriterConfig cfg;
  cfg.jitdump = true;
  cfg.jitdump_dir = dir.path.string();
  cfg.perfmap = true;
  cfg.perfmap_dir = dir.path.string();
  cfg.pid = 12;
  Writer w;
  std::string error, failure;
  REQUIRE(w.open(cfg, error));
  const uint8_t code[4] = {1, 2, 3, 4};
  w.load("Before:Fork ()", 14, 0x1000, sizeof code, code, monotonic_ns(), 1);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    w.forget_after_fork();
    w.load("Child:Method ()", 15, 0x2000, sizeof code, code, monotonic_ns(), 1);
    std::string f;
    w.drain(f);
    w.finish(f);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  w.load("After:Fork ()", 13, 0x3000, sizeof code, code, monotonic_ns(), 1);
  REQUIRE(w.finish(failure));
  const Dump d = decode(slurp(w.jitdump_path()));
  check_well_formed(d, 12, true);
  REQUIRE(d.loads.size() == 2);
  CHECK(d.loads[0].name == "Before:Fork ()");
  CHECK(d.loads[1].name == "After:Fork ()");
}
