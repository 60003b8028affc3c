// The JIT's and ReadyToRun's code ranges of the methods described (every body), for turning return
// addresses into methods without asking the runtime (GetFunctionFromIP takes the runtime's locks).
// Readers (backtraces, in allocation and exception callbacks) take a shared lock; adds (method
// descriptions, rare) an exclusive one. Not for signal handlers (sampling needs its own snapshot).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace mlpd::coreclr {

class CodeMap {
 public:
  // Adds [start, start + size) for `method`; a range the map has already is left as it is.
  void add(uint64_t start, uint64_t size, uint64_t method) {
    if (!start || !size) return;
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                               [](const Range& r, uint64_t s) { return r.start < s; });
    if (it != ranges_.end() && it->start == start) return;
    ranges_.insert(it, Range{start, start + size, method});
  }
  // The method whose code holds `ip`, 0 when none.
  uint64_t find(uint64_t ip) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return find_locked(ip);
  }
  // find() for `n` addresses at once, under one shared lock (a backtrace's return addresses).
  void find_all(const uint64_t* ips, size_t n, uint64_t* methods) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    for (size_t i = 0; i < n; ++i) methods[i] = find_locked(ips[i]);
  }
  size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return ranges_.size();
  }

 private:
  struct Range {
    uint64_t start, end, method;
  };
  uint64_t find_locked(uint64_t ip) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), ip,
                               [](uint64_t p, const Range& r) { return p < r.start; });
    if (it == ranges_.begin()) return 0;
    --it;
    return ip < it->end ? it->method : 0;
  }
  mutable std::shared_mutex mutex_;
  std::vector<Range> ranges_;  // by start; ranges do not overlap (one body each)
};

// Walks a frame-pointer chain: from frame `fp`, each frame holds the caller's frame pointer at [fp]
// and the return address at [fp + 8] (x86-64 and arm64 alike). Only frames inside the stack
// [lo, hi), 8-aligned and strictly going up, are read: the walk never reads outside the thread's
// stack. Calls visit(return_address) for each; stops when it returns false, after `max_steps`, or at
// the chain's end. Returns the number of frames visited.
template <typename Visit>
unsigned walk_frame_pointers(uint64_t fp, uint64_t lo, uint64_t hi, unsigned max_steps, Visit&& visit) {
  unsigned n = 0;
  while (n < max_steps && fp >= lo && fp + 16 <= hi && (fp & 7) == 0) {
    const uint64_t* frame = reinterpret_cast<const uint64_t*>(fp);
    const uint64_t caller = frame[0], ret = frame[1];
    if (!ret) break;
    ++n;
    if (!visit(ret)) break;
    if (caller <= fp) break;  // the chain must go up the stack, or it ends (or is not a chain)
    fp = caller;
  }
  return n;
}

}  // namespace mlpd::coreclr
