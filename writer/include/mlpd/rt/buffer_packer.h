// BufferPacker: the program's threads help `zip` when the helper is behind (docs/design.md, "zip").
//
// With `zip` the helper thread compresses what it writes. When it gets too little CPU (on two cores
// with four busy threads it gets about a fifth of one), full buffers wait for it and the pool grows
// with them. So, while more than a bound of full buffers are waiting (WriterShared::pack_above), a
// thread that fills a buffer compresses that buffer's unwritten part itself, as one complete gzip
// member, into a small member buffer, pushes the member to the flush queue where the full buffer
// would have gone, and goes on writing into the same (now empty) buffer. The helper writes the
// member as it is, in the queue's order (the order of the thread's buffers; all its metadata is
// taken after the pop, as for a full buffer). Memory is then bounded by work, not by waiting: a
// member holds a 64 KiB buffer's events in a fraction of it, and the thread's buffer is reused at
// once. The CPU is the same as the helper's compressing would have been.
//
// Nothing here blocks or allocates from the heap: compressors and their output space are made up
// front (a fixed number, taken with a compare-and-swap; a thread that finds none free pushes its
// buffer as it is); the member is copied into a chain of small member buffers from a BufferPool of
// their own (lock-free, mmap), as many as its size needs, so memory follows the compressed size
// whatever the data's ratio. It may run on the GC thread while the world is stopped, like every
// other buffer change.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "mlpd/rt/buffer_pool.h"

struct libdeflate_compressor;

namespace mlpd::rt {

class BufferPacker {
 public:
  // Member buffers: 4 KiB mappings (a member of a 64 KiB buffer of `calls` events is 8-9 KiB at
  // level 1: three of them).
  static constexpr uint32_t kMemberBytes = 4 * 1024 - static_cast<uint32_t>(BufferPool::kMappingHeader);

  // `level`: libdeflate's level (as the sink's); `compressors`: how many threads may compress at
  // once (each ~200 KiB at level 1 plus its output space, touched only when used); `input_bytes`: the
  // largest input (a thread buffer and its header); `max_members`: cap on member buffers.
  BufferPacker(int level, uint32_t compressors, size_t input_bytes, uint32_t max_members,
               uint32_t member_bytes = kMemberBytes);
  ~BufferPacker();
  BufferPacker(const BufferPacker&) = delete;
  BufferPacker& operator=(const BufferPacker&) = delete;

  // False when the compressors could not be made (then the agent runs without producers' help).
  bool ok() const { return count_ > 0; }

  // The owner of `full`, which it has claimed (LogBuffer::kClaimOwner): compresses the buffer header
  // and events [slice_start, committed) into one gzip member and returns the first of the member
  // buffers holding it (member_size, member_input, member_next and thread_id set). nullptr when
  // nothing is to be written, no compressor is free or not enough member buffers can be had: then
  // `full` still holds its events (the bytes just before data + slice_start, already written or free,
  // may have changed).
  LogBuffer* pack(LogBuffer& full);
  // The helper, after writing a member: its whole chain.
  void give(LogBuffer* member);

  struct Stats {
    uint64_t packed = 0;           // members made
    uint64_t input_bytes = 0;      // mlpd bytes in them
    uint64_t member_bytes = 0;     // their compressed size
    uint64_t no_compressor = 0;    // buffers left to the helper: every compressor busy
    uint64_t no_member = 0;        // ... not enough member buffers to be had
  };
  Stats stats() const;
  uint32_t members_allocated() const { return members_.allocated(); }
  uint32_t member_mapping_bytes() const { return members_.buffer_bytes() + BufferPool::kMappingHeader; }

 private:
  struct Slot {
    std::atomic<bool> busy{false};
    libdeflate_compressor* compressor = nullptr;
    uint8_t* out = nullptr;  // the compressed bound of the largest input
    size_t out_size = 0;
  };
  void release_chain(LogBuffer* first);
  static constexpr uint32_t kMaxSlots = 16;

  BufferPool members_;
  Slot slots_[kMaxSlots];
  uint32_t count_ = 0;
  std::atomic<uint32_t> next_slot_{0};  // where the next search starts (spreads the threads)
  std::atomic<uint64_t> packed_{0}, input_bytes_{0}, member_bytes_{0};
  std::atomic<uint64_t> no_compressor_{0}, no_member_{0};
};

}  // namespace mlpd::rt
