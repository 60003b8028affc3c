// The reader's memory budget. Whatever a file holds (millions of distinct ids, empty heapshots, a gzip
// bomb), reading it must not take unbounded memory: decode() checks the heap in use against a budget
// every few thousand events and at every buffer, and ends reading with one problem naming the limit
// and the offset when it is exceeded. The heap is measured, not estimated (malloc's own count of the
// bytes in use: arenas and mmapped chunks), so every structure a command builds counts -- names,
// reference sets, heapshots, a report's tables -- without each one keeping accounts.
//
// Commands use process_budget() (the CLI sets its limit from --max-memory=SIZE) and pass it in
// DecodeOptions::budget; code that decodes a file in a command of its own (report, export) does the
// same, and may call exceeded() itself around work done after decoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mlpd {

class MemoryBudget {
 public:
  static constexpr uint64_t kDefaultLimit = uint64_t{1} << 30;  // 1 GiB

  explicit MemoryBudget(uint64_t limit = kDefaultLimit) : limit_(limit) {}
  // 0: no limit.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  uint64_t limit() const { return limit_; }
  // Heap bytes in use now (malloc's count; 0 where malloc cannot tell, e.g. under a sanitizer's
  // allocator, which then disables the budget).
  static uint64_t in_use();
  // True when the heap in use is above the limit (records the peak seen).
  bool exceeded();
  uint64_t peak() const { return peak_; }
  // "memory budget exceeded: N MiB in use, above the limit of L MiB (mlpd --max-memory=SIZE raises it)"
  std::string message() const;

 private:
  uint64_t limit_;
  uint64_t peak_ = 0;
  uint64_t last_ = 0;
};

// The budget of this process's commands.
MemoryBudget& process_budget();

// "1073741824", "512K", "64M", "2G", "1T" (binary units, case-insensitive, optional trailing "iB"/"B"),
// "0" (no limit). False on anything else or on overflow.
bool parse_size(std::string_view text, uint64_t& bytes);

}  // namespace mlpd
