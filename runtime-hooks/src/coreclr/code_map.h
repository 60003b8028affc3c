// The JIT's and ReadyToRun's code ranges of the methods described (every body), for turning return
// addresses into methods without asking the runtime (GetFunctionFromIP takes the runtime's locks).
// Readers (backtraces, in allocation and exception callbacks) take a shared lock; adds (method
// descriptions, rare) an exclusive one. Not for signal handlers (sampling needs its own snapshot).
#pragma once

#include <algorithm>
#include <atomic>
#include <iterator>
#include <cstdint>
#include <type_traits>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "coreclr/frame_shape.h"

namespace mlpd::coreclr {

class CodeMap {
 public:
  // Adds [start, start + size) for `method`; a range the map has already is left as it is. `shape`:
  // frame_shape.h's description of the body's frame (0: it makes a frame record).
  void add(uint64_t start, uint64_t size, uint64_t method, uint32_t shape = 0) {
    if (!start || !size) return;
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                               [](const Range& r, uint64_t s) { return r.start < s; });
    if (it != ranges_.end() && it->start == start) return;
    ranges_.insert(it, Range{start, start + size, method, shape});
    version_.fetch_add(1, std::memory_order_release);  // every "not found" cached before is stale now
  }
  // [start, start + size) is `method`'s code from now on: the ranges it overlaps (code the runtime freed
  // and gave again: a dynamic method's, after the method was unloaded) are dropped, and the cache of
  // addresses is emptied (its entries for that code name the old method).
  void replace(uint64_t start, uint64_t size, uint64_t method, uint32_t shape = 0) {
    if (!start || !size) return;
    std::unique_lock<std::shared_mutex> lock(mutex_);
    const uint64_t end = start + size;
    std::erase_if(ranges_, [&](const Range& r) { return r.start < end && start < r.end; });
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                               [](const Range& r, uint64_t s) { return r.start < s; });
    ranges_.insert(it, Range{start, end, method, shape});
    // Every remember() runs under the shared lock, so none races with this (a reader that sees an
    // address change under it misses and takes the lock).
    for (Slot& slot : cache_) {  // under the sequence lock as remember() writes (no writer runs now)
      const uint32_t seq = slot.seq.load(std::memory_order_relaxed);
      slot.seq.store(seq + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      slot.ip.store(0, std::memory_order_relaxed);
      slot.seq.store(seq + 2, std::memory_order_release);
    }
    version_.fetch_add(1, std::memory_order_release);
  }
  // The method whose code holds `ip`, 0 when none.
  uint64_t find(uint64_t ip) const {
    uint64_t m = 0;
    find_all(&ip, 1, &m);
    return m;
  }
  // find() for `n` addresses at once: each first in the cache of addresses (the same return addresses
  // come back in every backtrace), the others under one shared lock (a binary search each). With
  // `shapes`, each body's frame shape too (0 where no method).
  void find_all(const uint64_t* ips, size_t n, uint64_t* methods, uint32_t* shapes = nullptr) const {
    const uint64_t version = version_.load(std::memory_order_acquire);
    size_t missed = 0;
    uint32_t ignored = 0;
    for (size_t i = 0; i < n; ++i)
      if (!cached(ips[i], version, methods[i], shapes ? shapes[i] : ignored)) ++missed;
    if (!missed) return;
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const uint64_t now = version_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      uint32_t& shape = shapes ? shapes[i] : ignored;
      if (cached(ips[i], version, methods[i], shape)) continue;
      const Range* r = find_locked(ips[i]);
      methods[i] = r ? r->method : 0;
      shape = r ? r->shape : 0;
      if (!(methods[i] & 1)) remember(ips[i], methods[i] ? methods[i] : (now << 1 | 1), shape);  // (an odd id: not cached)
    }
  }
  // The method whose code holds `ip` and its body's frame shape (frame_shape.h).
  uint64_t find(uint64_t ip, uint32_t& shape) const {
    uint64_t m = 0;
    find_all(&ip, 1, &m, &shape);
    return m;
  }
  size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return ranges_.size();
  }
  // frame_shape.h's stack depth of the frameless body holding `ip` (a leaf's ip, or a return address
  // minus one: past the prologue), -1 when the body makes a frame record, is unknown, or a leaf's ip is
  // still in the prologue. Through the cache of addresses (the samples' unwinder asks this for every
  // JIT'd frame of every sample, the same return addresses again and again): the lock only for a
  // frameless leaf, whose body's start tells whether its ip is past the prologue.
  int frameless_depth(uint64_t ip, bool leaf) const {
    uint32_t shape = 0;
    if (!find(ip, shape) || !(shape & kFrameless)) return -1;
    if (leaf) {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      const Range* r = find_locked(ip);
      if (!r || !(r->shape & kFrameless) || ip - r->start < frameless_prologue(r->shape)) return -1;
      shape = r->shape;
    }
    return static_cast<int>(frameless_depth_of(shape));
  }
  // Whether `b` lies in another body (range) of the method whose code holds `a` (on-stack
  // replacement: an OSR body's frame record returns into its tier-0 body). Recursion within one body
  // is not. Through the cache first: the method ids differ for nearly every pair.
  bool other_body_of_same_method(uint64_t a, uint64_t b) const {
    uint64_t m[2] = {0, 0};
    const uint64_t ips[2] = {a, b};
    find_all(ips, 2, m);
    if (!m[0] || m[0] != m[1]) return false;
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto range_of = [&](uint64_t ip) {
      auto it = std::upper_bound(ranges_.begin(), ranges_.end(), ip,
                                 [](uint64_t p, const Range& r) { return p < r.start; });
      return it == ranges_.begin() ? uint64_t{0} : std::prev(it)->start;
    };
    return range_of(a) != range_of(b);
  }

 private:
  struct Range {
    uint64_t start, end, method;
    uint32_t shape;
  };
  // A lossy cache shared by all threads, lock-free: an address and its method (methods are aligned
  // pointers: low bit 0), or (map version << 1 | 1) for "in no range" as of that version. Each slot is
  // a sequence lock: a writer makes the count odd (one writer at a time: another that finds it odd, or
  // loses the exchange, does not write: the cache is lossy), writes the pair, makes it even again; a
  // reader takes the pair only if the count was even and the same before and after reading it. (Two
  // writers interleaving address and value words could otherwise leave one address with the other's
  // method.)
  struct Slot {
    std::atomic<uint32_t> seq{0};
    std::atomic<uint32_t> shape{0};  // (in what would be padding)
    std::atomic<uint64_t> ip{0};
    std::atomic<uint64_t> value{0};
  };
  static constexpr size_t kSlots = 8192;
  static size_t slot_of(uint64_t ip) { return static_cast<size_t>((ip ^ (ip >> 13)) & (kSlots - 1)); }
  bool cached(uint64_t ip, uint64_t version, uint64_t& method, uint32_t& shape) const {
    const Slot& s = cache_[slot_of(ip)];
    const uint32_t before = s.seq.load(std::memory_order_acquire);
    if (!ip || (before & 1)) return false;
    const uint64_t at = s.ip.load(std::memory_order_relaxed);
    const uint64_t v = s.value.load(std::memory_order_relaxed);
    const uint32_t sh = s.shape.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != before || at != ip) return false;
    if (!(v & 1)) {
      method = v;
      shape = sh;
      return v != 0;
    }
    if ((v >> 1) != version) return false;
    method = 0;
    shape = 0;
    return true;
  }
  void remember(uint64_t ip, uint64_t value, uint32_t shape) const {
    if (!ip) return;
    Slot& s = cache_[slot_of(ip)];
    uint32_t seq = s.seq.load(std::memory_order_relaxed);
    if ((seq & 1) || !s.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_relaxed)) return;
    std::atomic_thread_fence(std::memory_order_release);
    s.ip.store(ip, std::memory_order_relaxed);
    s.value.store(value, std::memory_order_relaxed);
    s.shape.store(shape, std::memory_order_relaxed);
    s.seq.store(seq + 2, std::memory_order_release);
  }
  const Range* find_locked(uint64_t ip) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), ip,
                               [](uint64_t p, const Range& r) { return p < r.start; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return ip < it->end ? &*it : nullptr;
  }
  mutable std::shared_mutex mutex_;
  std::vector<Range> ranges_;  // by start; ranges do not overlap (one body each)
  std::atomic<uint64_t> version_{1};
  mutable Slot cache_[kSlots];
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
    bool go_on;
    if constexpr (std::is_invocable_v<Visit, uint64_t, uint64_t>) go_on = visit(ret, fp);
    else go_on = visit(ret);
    if (!go_on) break;
    if (caller <= fp) break;  // the chain must go up the stack, or it ends (or is not a chain)
    fp = caller;
  }
  return n;
}

// Frames the chain does not show: optimised code calls some of the runtime's helpers (allocation) that
// make no frame record, so their return address into the method sits between two records and the
// method's own frame is skipped (its callee's record links straight to its caller's). Learned per
// chain: the native return addresses below the first managed frame (hashed: `key`) say whether the
// words above one of those records hide such a return address, which record and at which offset from
// its end (fp + 16). One probe per backtrace. Lossy and lock-free (one 4096-slot table shared by all
// threads): a slot lost to another chain is learned again; a torn read gives a place the caller
// validates (the word must be a return address into JIT code).
class HiddenFrames {
 public:
  static constexpr int64_t kNone = -1;     // this chain hides no frame
  static constexpr int64_t kUnknown = -2;  // not learned (or evicted)

  static uint64_t key(const uint64_t* rets, unsigned n) {
    uint64_t h = 0x9E3779B97F4A7C15u ^ n;
    for (unsigned i = 0; i < n; ++i) h = (h ^ rets[i]) * 0x100000001B3u + (h >> 29);
    return h | 1;  // never 0 (an empty slot)
  }
  // kNone, kUnknown, or (record << 32 | offset in bytes).
  int64_t lookup(uint64_t key) const {
    const Slot& s = slots_[index(key)];
    if (s.key.load(std::memory_order_acquire) != key) return kUnknown;
    const int64_t where = s.where.load(std::memory_order_acquire);
    return s.key.load(std::memory_order_acquire) == key ? where : kUnknown;
  }
  void learn(uint64_t key, int64_t where) {
    Slot& s = slots_[index(key)];
    s.key.store(0, std::memory_order_release);
    s.where.store(where, std::memory_order_release);
    s.key.store(key, std::memory_order_release);
  }
  static int64_t at(unsigned record, uint32_t offset) { return static_cast<int64_t>(record) << 32 | offset; }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<int64_t> where{kUnknown};
  };
  static size_t index(uint64_t key) { return static_cast<size_t>((key ^ (key >> 17)) & 4095); }
  Slot slots_[4096];
};

}  // namespace mlpd::coreclr
