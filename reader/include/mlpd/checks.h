// Checks that need state across events. ReferenceChecker implements `verify --strict`: every
// method, class, vtable and image an event references must be described by an earlier event of the
// file (method_jit, class_load, vtable_load, image_load), which is what Mono's readers need to name
// things; and every counter a counter_samples event carries must be described by an earlier
// counter_descriptors event, with the same type (mprof-report otherwise adds the value to the wrong
// counter's previous one). FileStats gathers what `verify --json` reports.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mlpd/decoder.h"
#include "mlpd/id_map.h"

namespace mlpd {

class ReferenceChecker {
 public:
  // Checks one event (and records what it defines). Returns an empty string when every reference is
  // known, otherwise a one-line description of the first unknown one.
  std::string check(const Event& event);

 private:
  std::string need(IdSet& known, uint64_t ptr, const char* what);

  // Compact (mlpd/id_map.h): a small file can describe millions of distinct ids.
  IdSet methods_;
  IdSet classes_;
  IdSet vtables_;
  IdSet images_;
  IdMap<uint64_t> counters_;  // described counter index -> type
};

struct FileStats {
  std::array<uint64_t, kEventKindCount> counts{};
  IdSet threads;  // distinct buffer thread ids
  uint64_t buffers = 0;

  void add_buffer(const BufferInfo& b) {
    ++buffers;
    threads.insert(b.header.thread_id);
  }
  void add_event(const Event& e) { ++counts[static_cast<size_t>(e.kind)]; }
};

}  // namespace mlpd
