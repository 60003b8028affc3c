// Flusher: one round of the helper thread's work of moving events into the file.
//
// A round (docs/design.md, "The writer's concurrency protocol"):
//   1. pop every full buffer from the flush queue;
//   2. under the registry mutex, note each thread's current buffer and its committed length;
//   3. pop the queue again (a buffer published before the current one we noted is in it now);
//   4. take the metadata stream (everything any event captured in 1-3 can reference is in it,
//      because each thread added its metadata before committing the events that use it);
//   5. write, in this order, the metadata, the popped buffers' unwritten parts (queue order is each
//      thread's order) and the noted slices of current buffers, skipping what 5 already wrote;
//   6. return the popped buffers to the pool.
// A slice of a live buffer is written as a buffer of its own; its header carries the time and method
// chains at the slice start, which the flusher keeps by decoding each slice it writes.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

namespace mlpd::agent {

struct FlushStats {
  uint64_t buffers_written = 0;  // mlpd buffers (slices included)
  uint64_t bytes = 0;
  uint64_t meta_events = 0;
};

class Flusher {
 public:
  Flusher(rt::WriterShared& shared, rt::ThreadRegistry& registry, rt::MetaLog& meta)
      : shared_(shared), registry_(registry), meta_(meta) {}

  // Appends the bytes of one round to `out`. With `live_slices` false only the metadata and full
  // buffers are written (the cheap, frequent round); with true, also what threads have committed
  // to their current buffers (the flush-interval round, and the final one).
  void round(std::vector<uint8_t>& out, bool live_slices, uint64_t now);

  const FlushStats& stats() const { return stats_; }

 private:
  struct Slice {
    rt::LogBuffer* buffer;
    uint32_t end;
  };
  void drain_queue();
  void write_slice(rt::LogBuffer& b, uint32_t end, bool final_slice, std::vector<uint8_t>& out);

  rt::WriterShared& shared_;
  rt::ThreadRegistry& registry_;
  rt::MetaLog& meta_;
  std::vector<rt::LogBuffer*> popped_;
  std::vector<Slice> live_;
  FlushStats stats_;
};

}  // namespace mlpd::agent
