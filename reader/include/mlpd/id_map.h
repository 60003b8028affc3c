// Compact containers for what the reader keeps per distinct id (docs/fuzzing.md, "Limits"): a file can
// describe millions of methods, classes, vtables or heapshots in a few hundred KiB of gzip, so their
// tables cost as few bytes per entry as possible, without a node allocation per entry.
//
//   IdSet          a set of 64-bit ids: open addressing, linear probing, 8 bytes a slot, at most 3/4
//                  full (10.7-21 bytes an id);
//   IdMap<V>       64-bit id -> V: the values in one vector in insertion order, and an open-addressing
//                  index of (id, position) slots, 12 bytes a slot (16-32 bytes an id besides V);
//   StringTable    interned strings: each distinct string is kept once and named by a 32-bit number;
//   SortedIdMap<V> 64-bit key -> V with "the greatest key <= x" lookups (code ranges, native symbols):
//                  a sorted vector, and a small ordered map for keys that arrive out of order, merged
//                  into the vector when it grows to half the vector's size (amortised O(log n) an
//                  insert, O(log n) a lookup, whatever the order).
//
// Pointers and references into an IdMap, a StringTable or a SortedIdMap stay valid until the next
// insertion (a StringTable's strings: always). None of them supports removal: the reader never needs it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlpd {

// A per-process random seed for the hashes below, so that a hostile file cannot choose ids that all
// land in one run of slots (which would make every insertion a long probe).
inline uint64_t make_id_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ reinterpret_cast<uintptr_t>(&rd);
}
inline const uint64_t id_hash_seed = make_id_seed();

// Spreads the bits of an id (pointers share their low and high bits): the seed, then the finaliser
// of MurmurHash3.
inline uint64_t mix_id(uint64_t x) {
  x ^= id_hash_seed;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

class IdSet {
 public:
  // True when `id` was not in the set.
  bool insert(uint64_t id) {
    if (id == 0) {
      const bool added = !has_zero_;
      has_zero_ = true;
      return added;
    }
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
    if (!place(slots_, id)) return false;
    ++count_;
    return true;
  }
  bool contains(uint64_t id) const {
    if (id == 0) return has_zero_;
    if (slots_.empty()) return false;
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix_id(id) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == id) return true;
      if (slots_[i] == 0) return false;
    }
  }
  size_t size() const { return count_ + has_zero_; }
  bool empty() const { return size() == 0; }
  // Bytes held (the slot array).
  size_t memory() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  // Puts a nonzero id into `slots` (a power of two in size, not full); false when already there.
  static bool place(std::vector<uint64_t>& slots, uint64_t id) {
    const size_t mask = slots.size() - 1;
    for (size_t i = mix_id(id) & mask;; i = (i + 1) & mask) {
      if (slots[i] == id) return false;
      if (slots[i] == 0) {
        slots[i] = id;
        return true;
      }
    }
  }
  void grow() {
    std::vector<uint64_t> bigger(slots_.empty() ? 16 : slots_.size() * 2, 0);
    for (uint64_t id : slots_) {
      if (id != 0) place(bigger, id);
    }
    slots_.swap(bigger);
  }

  std::vector<uint64_t> slots_;  // 0 = empty; the id 0 is has_zero_
  size_t count_ = 0;             // nonzero ids
  bool has_zero_ = false;
};

template <typename V>
class IdMap {
 public:
  V* find(uint64_t id) {
    const size_t slot = lookup(id);
    return slot == kNone ? nullptr : &values_[pos_[slot] - 1];
  }
  const V* find(uint64_t id) const { return const_cast<IdMap*>(this)->find(id); }
  bool contains(uint64_t id) const { return lookup(id) != kNone; }
  // The value of `id`, inserted value-initialised when absent.
  V& operator[](uint64_t id) {
    if ((values_.size() + 1) * 4 > pos_.size() * 3) grow();
    const size_t mask = pos_.size() - 1;
    for (size_t i = mix_id(id) & mask;; i = (i + 1) & mask) {
      if (pos_[i] == 0) {
        if (values_.size() >= UINT32_MAX - 1) throw std::bad_alloc();  // 4 G entries: beyond any budget
        values_.emplace_back();
        keys_[i] = id;
        pos_[i] = static_cast<uint32_t>(values_.size());
        return values_.back();
      }
      if (keys_[i] == id) return values_[pos_[i] - 1];
    }
  }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  // Calls f(id, value) for every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < pos_.size(); ++i) {
      if (pos_[i] != 0) f(keys_[i], values_[pos_[i] - 1]);
    }
  }
  void clear() {
    keys_.clear();
    pos_.clear();
    values_.clear();
  }
  size_t memory() const {
    return keys_.capacity() * sizeof(uint64_t) + pos_.capacity() * sizeof(uint32_t) + values_.capacity() * sizeof(V);
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;
  size_t lookup(uint64_t id) const {
    if (pos_.empty()) return kNone;
    const size_t mask = pos_.size() - 1;
    for (size_t i = mix_id(id) & mask;; i = (i + 1) & mask) {
      if (pos_[i] == 0) return kNone;
      if (keys_[i] == id) return i;
    }
  }
  void grow() {
    const size_t n = pos_.empty() ? 16 : pos_.size() * 2;
    std::vector<uint64_t> keys(n);
    std::vector<uint32_t> pos(n, 0);
    for (size_t j = 0; j < pos_.size(); ++j) {
      if (pos_[j] == 0) continue;
      for (size_t i = mix_id(keys_[j]) & (n - 1);; i = (i + 1) & (n - 1)) {
        if (pos[i] == 0) {
          keys[i] = keys_[j];
          pos[i] = pos_[j];
          break;
        }
      }
    }
    keys_.swap(keys);
    pos_.swap(pos);
  }

  std::vector<uint64_t> keys_;  // per slot; meaningful where pos_ != 0
  std::vector<uint32_t> pos_;   // per slot: 1 + the value's index, 0 = empty
  std::vector<V> values_;       // in insertion order
};

class StringTable {
 public:
  // The number of `s`, added when new. Numbers count from 0 in order of first appearance.
  uint32_t intern(std::string_view s) {
    if ((strings_.size() + 1) * 4 > slots_.size() * 3) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(s) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == 0) {
        if (strings_.size() >= UINT32_MAX - 1) throw std::bad_alloc();
        strings_.emplace_back(s);
        slots_[i] = static_cast<uint32_t>(strings_.size());
        return slots_[i] - 1;
      }
      if (strings_[slots_[i] - 1] == s) return slots_[i] - 1;
    }
  }
  // The string of a number intern() returned; the reference stays valid as long as the table.
  const std::string& at(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  void grow() {
    const size_t n = slots_.empty() ? 16 : slots_.size() * 2;
    std::vector<uint32_t> slots(n, 0);
    for (uint32_t id : slots_) {
      if (id == 0) continue;
      for (size_t i = std::hash<std::string_view>{}(strings_[id - 1]) & (n - 1);; i = (i + 1) & (n - 1)) {
        if (slots[i] == 0) {
          slots[i] = id;
          break;
        }
      }
    }
    slots_.swap(slots);
  }

  std::deque<std::string> strings_;  // a deque: no copy on growth, and stable references
  std::vector<uint32_t> slots_;      // 1 + the string's number, 0 = empty
};

template <typename V>
class SortedIdMap {
 public:
  using Entry = std::pair<uint64_t, V>;

  // Sets the value of `key` (replacing an earlier one).
  void set(uint64_t key, const V& value) {
    if ((sorted_.empty() || key > sorted_.back().first) && (pending_.empty() || key > pending_.rbegin()->first)) {
      sorted_.emplace_back(key, value);  // the usual case: keys arrive in increasing order
      return;
    }
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), key,
                                     [](const Entry& e, uint64_t k) { return e.first < k; });
    if (it != sorted_.end() && it->first == key) {
      it->second = value;
      return;
    }
    pending_[key] = value;
    if (pending_.size() > 1024 + sorted_.size() / 2) merge();
  }
  // The entry with the greatest key <= x, or nullptr; valid until the next set() or at_or_below().
  const Entry* at_or_below(uint64_t x) const {
    const Entry* best = nullptr;
    auto it = std::upper_bound(sorted_.begin(), sorted_.end(), x,
                               [](uint64_t k, const Entry& e) { return k < e.first; });
    if (it != sorted_.begin()) best = &*std::prev(it);
    auto p = pending_.upper_bound(x);
    if (p != pending_.begin()) {
      --p;
      if (!best || p->first > best->first) {
        scratch_ = *p;
        best = &scratch_;
      }
    }
    return best;
  }
  size_t size() const { return sorted_.size() + pending_.size(); }

 private:
  void merge() {
    std::vector<Entry> all;
    all.reserve(sorted_.size() + pending_.size());
    std::merge(sorted_.begin(), sorted_.end(), pending_.begin(), pending_.end(), std::back_inserter(all),
               [](const auto& a, const auto& b) { return a.first < b.first; });
    sorted_.swap(all);
    pending_.clear();
  }

  std::vector<Entry> sorted_;      // increasing keys
  std::map<uint64_t, V> pending_;  // keys that came out of order, none of them in sorted_
  mutable Entry scratch_;          // what at_or_below() returns for a pending entry
};

}  // namespace mlpd
