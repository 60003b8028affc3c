// Totals over a whole file, counted the way Mono's mprof-report counts them, so that the two readers
// can be compared number for number (tests) and a report can print them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/id_map.h"

namespace mlpd {

struct Heapshot {
  uint64_t objects = 0;  // heap_object events with size > 0 (later chunks of a big object carry 0)
  uint64_t bytes = 0;
  uint64_t thread = 0;   // buffer thread that wrote HEAP_START
};

class Totals {
 public:
  void add(const Event& e, const BufferInfo& buffer);

  uint64_t calls = 0;             // method_enter events
  uint64_t alloc_objects = 0;
  uint64_t alloc_bytes = 0;
  uint64_t throws = 0;
  std::array<uint64_t, 5> clauses{};          // by clause type (0 catch, 1 filter, 2 finally, 4 fault)
  uint64_t gc_resizes = 0;
  uint64_t gc_moved_objects = 0;  // pairs of addresses in gc_move events
  std::array<uint64_t, 4> gc_collections{};   // GC START events by generation (0..3)
  std::array<uint64_t, 4> handles_created{};  // by handle type
  std::array<uint64_t, 4> handles_destroyed{};
  std::array<uint64_t, 4> monitor{};          // by MonitorEvent (1 contention, 2 done, 3 fail)
  uint64_t jit_methods = 0;
  uint64_t jit_helpers = 0;
  uint64_t sample_hits = 0;
  std::vector<Heapshot> heapshots;

 private:
  IdMap<uint64_t> open_heapshot_;  // thread -> 1 + index into heapshots; 0 = none open
};

}  // namespace mlpd
