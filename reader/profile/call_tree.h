// The call tree's data structures (the profile model's private header; profile/builder.h uses them):
// the (parent, frame) -> child map behind Builder::child(), and a thread's stack of open calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "mlpd/profile.h"

namespace mlpd::profile::detail {

// Open-addressing map (parent node, frame) -> child node; keys are never 0 (the root's children,
// the thread nodes, are not kept here).
class ChildTable {
 public:
  ChildTable() { slots_.resize(1u << 12); }
  NodeId find(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == 0) return 0;
    }
  }
  void insert(uint64_t key, NodeId value) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow();
    put(key, value);
    ++used_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    NodeId value = 0;
  };
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void put(uint64_t key, NodeId value) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash(key) & mask;
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = {key, value};
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.key) put(s.key, s.value);
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

// One open call: its node and frame, the method it entered, when, and the time spent in its callees.
struct CallEntry {
  NodeId node;
  FrameId frame;
  uint64_t method;
  uint64_t enter;
  uint64_t child_ns;
};

// A thread's open calls: a vector whose push is inline (std::vector's push_back was an out-of-line
// call of ~25 instructions per enter); grows by doubling, up to max_depth entries.
class CallStack {
 public:
  CallStack() = default;
  CallStack(CallStack&&) noexcept = default;
  CallStack& operator=(CallStack&&) noexcept = default;
  // Copies (IncrementalBuilder's snapshots keep a copy of the open calls) copy only what is used.
  CallStack(const CallStack& o) { *this = o; }
  CallStack& operator=(const CallStack& o) {
    if (this == &o) return *this;
    data_.reset(o.size_ ? new CallEntry[o.size_] : nullptr);
    std::copy(o.data_.get(), o.data_.get() + o.size_, data_.get());
    size_ = capacity_ = o.size_;
    return *this;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  CallEntry& back() { return data_[size_ - 1]; }
  CallEntry& operator[](size_t i) { return data_[i]; }
  void pop_back() { --size_; }
  [[gnu::always_inline]] void push_back(const CallEntry& c) {
    if (size_ == capacity_) [[unlikely]] grow();
    data_[size_++] = c;
  }
  // The call fold's push (call_fold.h): room() is false when max_depth calls are open, else makes room
  // for one more, which push() then takes without a test.
  [[gnu::always_inline]] bool room(size_t max_depth) {
    if (size_ >= max_depth) return false;
    if (size_ == capacity_) [[unlikely]] grow();
    return true;
  }
  void push(const CallEntry& c) { data_[size_++] = c; }
  // For a loop that keeps the stack's size in a local (LocalCalls, call_fold.h): its entries, room, and
  // the size it sets back; grow_from(n) makes room for one more after the first n entries.
  CallEntry* data() { return data_.get(); }
  size_t capacity() const { return capacity_; }
  void set_size(size_t n) { size_ = n; }
  void grow_from(size_t n) {
    size_ = n;
    grow();
  }

 private:
  [[gnu::noinline]] void grow() {
    const size_t cap = capacity_ ? 2 * capacity_ : 64;
    std::unique_ptr<CallEntry[]> d(new CallEntry[cap]);
    std::copy(data_.get(), data_.get() + size_, d.get());
    data_ = std::move(d);
    capacity_ = cap;
  }
  std::unique_ptr<CallEntry[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace mlpd::profile::detail
