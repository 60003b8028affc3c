// Object ids by address, for resolving the references of a heapshot (heap_graph.cpp). Two indexes over
// the objects' addresses sorted with their ids (ties by id: an address listed twice resolves to its
// first listing):
//   - BitmapIndex, when every object is 8-byte aligned (always, from Mono) and the heap is dense
//     enough: the addresses cut into runs of nearby 512-byte pages ("segments"), each page a 64-bit
//     map of the 8-byte slots that start an object and the rank of its first object. A lookup is a
//     search among the few segments, one page entry (a cache line) and the id at the rank: two cache
//     misses at most, and the addresses themselves are not kept (the ids are).
//   - HashIndex otherwise (hostile or unusual addresses): an open-addressing table from each 1 KiB
//     page to its run in the sorted addresses, then a binary search in the run.
// Both look up in three steps (far, near, id) that the caller runs a few references apart, which
// overlaps the cache misses that are most of the cost on a heap larger than the cache.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mlpd/heap/dominators.h"
#include "mlpd/id_map.h"

namespace mlpd::heap_index {

class BitmapIndex {
 public:
  // Builds the index from `sorted` (ascending) and `ids` (the id of each), taking `ids`; false (nothing
  // kept, `ids` untouched) when an address is not 8-byte aligned or there are more pages than objects.
  bool build(const std::vector<uint64_t>& sorted, std::vector<uint32_t>& ids) {
    const size_t n = sorted.size();
    uint64_t pages = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sorted[i] & 7) return fail();
      const uint64_t p = page(sorted[i]);
      if (i == 0 || p - page(sorted[i - 1]) > kGap) {
        if (i) pages += page(sorted[i - 1]) - seg_first_.back() + 1;
        seg_first_.push_back(p);
        seg_offset_.push_back(pages);
      }
    }
    if (n) pages += page(sorted[n - 1]) - seg_first_.back() + 1;
    seg_offset_.push_back(pages);
    if (pages > n + 1024) return fail();  // sparse (large objects): 16 bytes a page would be too many
    entries_.assign(pages, Entry{});
    // Distinct addresses keep the id of their first listing: ids_ by rank.
    size_t seg = 0, rank = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i && sorted[i] == sorted[i - 1]) continue;
      const uint64_t p = page(sorted[i]);
      while (seg + 1 < seg_first_.size() && p >= seg_first_[seg + 1]) ++seg;
      Entry& e = entries_[seg_offset_[seg] + (p - seg_first_[seg])];
      if (e.bits == 0) e.first = static_cast<uint32_t>(rank);
      e.bits |= uint64_t{1} << ((sorted[i] >> 3) & 63);
      ids[rank++] = ids[i];
    }
    ids.resize(rank);
    ids.shrink_to_fit();
    ids_ = std::move(ids);
    return true;
  }

  // A lookup in three steps, a few references apart, so that the cache misses of several overlap:
  // far() finds the page entry and asks the cache for it, near() reads it and asks for the id,
  // id() reads the id. kNoNode when no object starts at the address.
  struct Probe {
    const void* entry;  // null: no page (or an unaligned address)
    uint32_t bit;
  };
  Probe far(uint64_t addr) const {
    const Entry* e = entry(addr);
    if (e) __builtin_prefetch(e);
    return {e, static_cast<uint32_t>((addr >> 3) & 63)};
  }
  uint32_t near(const Probe& p) const {
    if (!p.entry) return kNoNode;
    const Entry& e = *static_cast<const Entry*>(p.entry);
    if (!((e.bits >> p.bit) & 1)) return kNoNode;
    const uint32_t r = e.first + ones(e.bits & ((uint64_t{1} << p.bit) - 1));
    __builtin_prefetch(&ids_[r]);
    return r;
  }
  uint32_t id(uint32_t rank) const { return rank == kNoNode ? kNoNode : ids_[rank]; }
  uint32_t find(uint64_t addr) const { return id(near(far(addr))); }

 private:
  static constexpr uint64_t kGap = 64;  // pages (32 KiB) without objects that end a segment
  struct Entry {
    uint64_t bits = 0;   // bit i: an object starts at the page's 8-byte slot i
    uint32_t first = 0;  // the rank of the page's first object
  };
  static uint64_t page(uint64_t addr) { return addr >> 9; }
  // Set bits, inline (std::popcount is a library call on a baseline x86-64 build).
  static uint32_t ones(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555u;
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return static_cast<uint32_t>((x * 0x0101010101010101u) >> 56);
  }
  bool fail() {
    seg_first_ = {};
    seg_offset_ = {};
    return false;
  }
  const Entry* entry(uint64_t addr) const {
    if ((addr & 7) || seg_first_.empty()) return nullptr;
    const uint64_t p = page(addr);
    // The last segment starting at or below p: a binary search without branches (the segments are
    // few and in the cache; a mispredicted branch per step would cost more than the steps).
    const uint64_t* base = seg_first_.data();
    for (size_t len = seg_first_.size(); len > 1;) {
      const size_t half = len / 2;
      base = base[half] <= p ? base + half : base;
      len -= half;
    }
    if (*base > p) return nullptr;
    const size_t s = static_cast<size_t>(base - seg_first_.data());
    const uint64_t at = seg_offset_[s] + (p - *base);
    return at < seg_offset_[s + 1] ? &entries_[at] : nullptr;
  }
  std::vector<uint64_t> seg_first_;   // each segment's first page, ascending
  std::vector<uint64_t> seg_offset_;  // each segment's first entry; one more: the number of entries
  std::vector<Entry> entries_;
  std::vector<uint32_t> ids_;  // by rank (distinct addresses ascending)
};

class HashIndex {
 public:
  HashIndex(std::vector<uint64_t> sorted, std::vector<uint32_t> ids) : sorted_(std::move(sorted)), ids_(std::move(ids)) {
    size_t pages = 0;
    for (size_t i = 0; i < sorted_.size(); ++i) pages += i == 0 || page(sorted_[i]) != page(sorted_[i - 1]);
    size_t size = 16;
    while (size < 2 * pages) size *= 2;
    mask_ = size - 1;
    slots_.assign(size, Slot{});
    for (size_t i = 0; i < sorted_.size();) {
      const uint64_t p = page(sorted_[i]);
      size_t j = i + 1;
      while (j < sorted_.size() && page(sorted_[j]) == p) ++j;
      size_t h = mix_id(p) & mask_;
      while (slots_[h].key != 0) h = (h + 1) & mask_;
      slots_[h] = {p + 1, static_cast<uint32_t>(i), static_cast<uint32_t>(j)};
      i = j;
    }
  }
  // The id of the object at `addr` (its first listing), kNoNode when none is there.
  uint32_t find(uint64_t addr) const {
    const uint64_t key = page(addr) + 1;
    for (size_t h = mix_id(key - 1) & mask_;; h = (h + 1) & mask_) {
      const Slot& s = slots_[h];
      if (s.key == 0) return kNoNode;
      if (s.key != key) continue;
      const auto begin = sorted_.begin() + s.first, end = sorted_.begin() + s.end;
      const auto it = std::lower_bound(begin, end, addr);
      return it != end && *it == addr ? ids_[static_cast<size_t>(it - sorted_.begin())] : kNoNode;
    }
  }
  // The three steps of BitmapIndex, here: ask for the table's slot, then look up, then nothing.
  struct Probe {
    uint64_t addr;
  };
  Probe far(uint64_t addr) const {
    __builtin_prefetch(&slots_[mix_id(addr >> 10) & mask_]);
    return {addr};
  }
  uint32_t near(const Probe& p) const { return find(p.addr); }
  uint32_t id(uint32_t found) const { return found; }

 private:
  static uint64_t page(uint64_t addr) { return addr >> 10; }  // never UINT64_MAX: key + 1 does not wrap
  std::vector<uint64_t> sorted_;
  std::vector<uint32_t> ids_;
  struct Slot {
    uint64_t key = 0;             // page + 1; 0: an empty slot
    uint32_t first = 0, end = 0;  // the page's run in sorted_
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace mlpd::heap_index
