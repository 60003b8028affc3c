// perf's view of JIT'd code: the jitdump file (tools/perf/Documentation/jitdump-specification.txt,
// version 1 header) and the simpler /tmp/perf-PID.map. This part knows nothing of Mono: the hooks
// (perf_output.cpp) give it a name, an address range and the code bytes.
//
// Threads: load() runs on the thread that JIT'd the code. It copies the record (header, name, code
// bytes, the perf map line) into one heap block and pushes it on a lock-free stack; it never waits
// and never does I/O. drain() (the agent's helper thread) takes the whole stack, puts it back in
// time order and writes it. A record's timestamp is the time of load(), so writing it later is what
// perf expects: `perf inject --jit` places each code load at its own timestamp among the samples.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mlpd::hooks::perf {

// The format (all fields in the writer's byte order; the magic tells a reader which).
inline constexpr uint32_t kJitdumpMagic = 0x4A695444;  // "JiTD"
inline constexpr uint32_t kJitdumpVersion = 1;
inline constexpr uint32_t kJitHeaderSize = 40;  // magic, version, total_size, elf_mach, pad1, pid, timestamp, flags
inline constexpr uint32_t kRecordHeaderSize = 16;  // id, total_size, timestamp
inline constexpr uint32_t kCodeLoadFixed = 40;     // pid, tid, vma, code_addr, code_size, code_index
inline constexpr uint32_t kJitCodeLoad = 0;
inline constexpr uint32_t kJitCodeClose = 3;
inline constexpr uint64_t kFlagArchTimestamp = 1;  // never set: our timestamps are CLOCK_MONOTONIC

// The ELF e_machine of this build (arch/<isa>/'s machine description).
uint32_t elf_machine();
// CLOCK_MONOTONIC in ns: the clock `perf record -k 1` (-k mono) stamps samples with.
uint64_t monotonic_ns();

// Encoders (appending to `out`), shared by the writer and its unit test.
void encode_file_header(std::vector<uint8_t>& out, uint32_t pid, uint64_t timestamp);
void encode_close(std::vector<uint8_t>& out, uint64_t timestamp);

struct WriterConfig {
  bool jitdump = false;
  std::string jitdump_dir = ".";  // DIR/jit-PID.dump
  bool perfmap = false;
  std::string perfmap_dir = "/tmp";  // DIR/perf-PID.map (perf reads only /tmp; tests use others)
  uint32_t pid = 0;
  uint64_t max_queued_bytes = 64u << 20;  // records waiting for drain() beyond this are dropped (counted)
  uint64_t wake_bytes = 1u << 20;         // ask for an early drain() once this much waits
  void (*wake)(void*) = nullptr;          // async-signal-safe (the agent's eventfd write)
  void* wake_ctx = nullptr;
};

struct WriterStats {
  uint64_t records = 0;       // code loads written to the jitdump (or the map when only that is on)
  uint64_t dropped = 0;       // code loads dropped: queue full, or after the end
  uint64_t dump_bytes = 0;    // jitdump file size
};

class Writer {
 public:
  Writer() = default;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Creates the files (the jitdump with its header, mapped PROT_EXEC once so that `perf record`
  // sees it). False with a one-line reason; nothing is left behind then.
  bool open(const WriterConfig& config, std::string& error);

  // Any thread: a code range appeared at `timestamp`. `code` (`size` bytes) is copied now; `name`
  // need not outlive the call. Never blocks, never does I/O.
  void load(const char* name, size_t name_len, uint64_t addr, uint64_t size, const void* code, uint64_t timestamp,
            uint32_t tid);

  // Helper thread: writes what load() queued. On a write failure the file is cut back to its last
  // whole record, `failure` gets one line and that file is written no more. Returns false then.
  bool drain(std::string& failure);
  // Helper thread, at the end: drain(), then JIT_CODE_CLOSE, then close. Later load()s are dropped.
  bool finish(std::string& failure);
  // Fork child: stop without touching the parent's files (no lock, no write).
  void forget_after_fork();

  bool active() const { return state_.load(std::memory_order_acquire) == kOpen; }
  WriterStats stats() const;
  const std::string& jitdump_path() const { return dump_path_; }
  const std::string& perfmap_path() const { return map_path_; }

 private:
  struct Item;
  struct Out {
    int fd = -1;
    uint64_t good = 0;  // bytes in the file that are whole records
    bool failed = false;
    std::vector<uint8_t> buf;
  };
  bool put(Out& out, const uint8_t* data, size_t n, const std::string& path, std::string& failure);
  bool flush(Out& out, const std::string& path, std::string& failure);

  enum : int { kClosed = 0, kOpen = 1, kFinished = 2 };
  std::atomic<int> state_{kClosed};
  std::atomic<Item*> head_{nullptr};
  std::atomic<uint64_t> queued_{0};
  std::atomic<uint64_t> index_{0};
  std::atomic<uint64_t> dropped_{0};
  uint64_t records_ = 0;
  // Timestamp of the last load record written: a record queued late (its thread was preempted between
  // taking its time and queueing) is written with this one instead, so the file's times never go back.
  uint64_t last_written_ts_ = 0;
  WriterConfig cfg_;
  std::string dump_path_, map_path_;
  Out dump_, map_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
};

}  // namespace mlpd::hooks::perf
