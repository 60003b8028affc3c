// Flusher: one round of the helper thread's work of moving events into the file.
//
// A round (docs/design.md, "The writer's concurrency protocol"):
//   1. pop every full buffer from the flush queue;
//   2. under the registry mutex, note each thread's current buffer and its committed length, after
//      claiming it (LogBuffer::claim: its owner cannot compress and reuse it until the round's writes
//      are done; a buffer its owner has claimed, or that is no longer current once claimed, is
//      skipped: it reaches the queue);
//   3. pop the queue again (a buffer published before the current one we noted is in it now, unless
//      another thread's push is half done and holds the queue up: then no live slice is written this
//      round, since an older buffer of the same thread may be stuck behind that push);
//   4. take the metadata stream (everything any event captured in 1-3 can reference is in it,
//      because each thread added its metadata before committing the events that use it);
//   5. write, in this order, the metadata, the popped buffers' unwritten parts (queue order is each
//      thread's order) and the noted slices of current buffers, skipping what 5 already wrote;
//   6. return the popped buffers to the pool (members to the packer) and release the claims.
// A popped buffer may be a member (zip, buffer_packer.h): a complete gzip member its owner made of a
// full buffer's unwritten part, in a chain of member buffers; each is a piece (Piece::member), written as
// it is.
// A slice of a live buffer is written as a buffer of its own; its header carries the time and method
// chains at the slice start, which the flusher keeps by decoding each slice it writes.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/meta_store.h"
#include "mlpd/rt/thread_registry.h"
#include "mlpd/sink.h"

namespace mlpd::agent {

struct FlushStats {
  uint64_t buffers_written = 0;  // mlpd buffers (slices included)
  uint64_t bytes = 0;
  uint64_t meta_events = 0;
  uint64_t members = 0;  // buffers that came compressed by their threads (zip; among buffers_written)
  // Flush latency of full buffers: from the owner's push to the round that takes it for writing.
  uint64_t latency_last_ns = 0;
  uint64_t latency_max_ns = 0;
};

class Flusher {
 public:
  Flusher(rt::WriterShared& shared, rt::ThreadRegistry& registry, rt::MetaLog& meta)
      : shared_(shared), registry_(registry), meta_(meta) {}

  // One piece of a round's output, in file order: bytes of the flusher's own (slice headers,
  // metadata) or event bytes still in a LogBuffer (never copied).
  struct Piece {
    const uint8_t* data;
    size_t size;
    bool member = false;  // part of a gzip member (OutputSink::write_member), not file bytes
  };

  // Runs one round and returns its output as pieces, valid until end_round(). With `live_slices`
  // false only the metadata and full buffers are written (the cheap, frequent round); with true, also
  // what threads have committed to their current buffers (the flush-interval round, the final one).
  const std::vector<Piece>& begin_round(bool live_slices, uint64_t now);
  // Returns the round's full buffers to the pool (after their pieces were written).
  void end_round();

  // begin_round + all pieces appended to `out` + end_round (tests, small outputs; without producers'
  // help: members would be appended compressed).
  void round(std::vector<uint8_t>& out, bool live_slices, uint64_t now);
  // The same through a sink (members through write_member), ended by a flush (tests). False when a
  // write failed.
  bool round(OutputSink& out, bool live_slices, uint64_t now);

  const FlushStats& stats() const { return stats_; }
  // From now on every round's metadata is also absorbed into `store` (rotation, ring dumps), before
  // its pieces are returned. nullptr: off (the default).
  void keep_metadata_in(rt::MetaStore* store) { store_ = store; }
  // The last round met a half-done push (see FlushQueue::blocked) and so wrote no live slices.
  bool queue_blocked() const { return queue_blocked_; }

 private:
  struct Slice {
    rt::LogBuffer* buffer;
    uint32_t end;
  };
  struct PendingPiece {  // bytes_ may still grow: pieces of it are resolved at the end of begin_round
    bool own;
    size_t offset;  // into bytes_ when own
    const uint8_t* data;
    size_t size;
    bool member = false;
  };
  void drain_queue();
  void write_slice(rt::LogBuffer& b, uint32_t end, bool final_slice);
  void add_own(size_t from);

  std::vector<uint8_t> bytes_;
  std::vector<PendingPiece> pending_;
  std::vector<Piece> pieces_;
  bool queue_blocked_ = false;

  rt::WriterShared& shared_;
  rt::ThreadRegistry& registry_;
  rt::MetaLog& meta_;
  rt::MetaStore* store_ = nullptr;
  std::vector<rt::LogBuffer*> popped_;
  std::vector<Slice> live_;
  std::vector<rt::LogBuffer*> claimed_;  // claimed for live slices this round (released in end_round)
  FlushStats stats_;
};

}  // namespace mlpd::agent
