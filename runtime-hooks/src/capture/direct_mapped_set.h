// DirectMappedSet: a fixed-size, lossy set of non-null pointers, one slot per hash bucket (a pointer
// evicts whatever shared its slot). Used for the per-thread "already described" caches on the hot
// path: contains() is one index computation and one compare, insert() one store. A miss only costs
// a trip to the authoritative (locked) set, so losing members to collisions is harmless.
//
// Zero-filled memory is an empty set (calloc'd, or a zero-initialised static). 0 is never stored and
// contains(0) is true: a null pointer never needs describing.
#pragma once

#include <cstdint>
#include <cstring>

namespace mlpd::hooks {

// `Slots` buckets (a power of two); pointers hash by (p >> Shift) % Slots, Shift dropping the low bits
// that allocation alignment keeps constant.
template <unsigned Slots, unsigned Shift>
struct DirectMappedSet {
  static_assert(Slots != 0 && (Slots & (Slots - 1)) == 0, "Slots must be a power of two");

  static constexpr unsigned kSlots = Slots, kShift = Shift;
  uint64_t slots[Slots];

  static constexpr unsigned index(uint64_t p) { return static_cast<unsigned>((p >> Shift) % Slots); }
  bool contains(uint64_t p) const { return slots[index(p)] == p; }
  void insert(uint64_t p) { slots[index(p)] = p; }
  void clear() { std::memset(slots, 0, sizeof slots); }
};

}  // namespace mlpd::hooks
