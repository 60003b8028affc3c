// LogBuffer: one thread's event bytes, in transit between the thread that writes them (the owner) and
// the helper thread that writes them to the file.
//
// Ownership protocol (docs/design.md, "The writer's concurrency protocol"):
// * The owner appends event bytes at data[committed..] and then publishes the new end with ONE
//   release store to `committed`: on x86 a plain mov, no fence, no read-modify-write.
// * The helper may at any time read data[flushed, committed) (acquire) and write it to the file as a
//   slice. It alone touches the `slice_*` fields and alone recycles buffers, so a buffer it reads is
//   never recycled under it.
// * The pointer and object bases are set by the owner at the first pointer / object written to the
//   buffer (as Mono does: small deltas), before the commit that publishes that event, and never change
//   after; the helper reads them after its acquire of `committed`, so a slice's header always carries
//   the bases its events were encoded with. The time and method chains of a slice start from
//   slice_time/slice_method, which the helper advances by decoding the slice it wrote (so the owner
//   publishes nothing but `committed`).
// * `claim` decides who may use the slice fields and the data of a buffer that is still a thread's
//   current one (`zip`'s producers' help, buffer_packer.h): the helper claims it (kClaimHelper) for a
//   round's live slice and releases it after the round's writes; its owner claims it (kClaimOwner) to
//   compress it into a member and reuse it. Each takes it only from kClaimFree (compare-and-swap) and
//   only the claimant releases it; an owner that finds it taken pushes the buffer as it is.
// * A buffer may instead carry a gzip member (`member_size` > 0): member buffers of the packer, made
//   by the owner of a full buffer, hold the complete member of that buffer's unwritten part.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mlpd::rt {

struct LogBuffer {
  // Set by the owner before the buffer becomes visible to the helper (published by the release
  // store that makes it the thread's current buffer or pushes it to the flush queue).
  uint64_t thread_id = 0;
  uint64_t time_base = 0;
  int64_t method_base = 0;
  // Owner: set once (relaxed store, published by the next commit); helper: read after the acquire.
  std::atomic<int64_t> ptr_base{0};
  std::atomic<int64_t> obj_base{0};
  bool ptr_base_set = false;  // owner-only
  bool obj_base_set = false;  // owner-only

  std::atomic<uint32_t> committed{0};  // owner: release store; helper: acquire load
  // Owner: the time it pushed the buffer to the flush queue (set before the push, which publishes it);
  // the helper measures the flush latency from it.
  uint64_t published_ns = 0;

  // Helper-only state: how far the buffer has been written and the delta chains at that point.
  uint32_t slice_start = 0;
  uint64_t slice_time = 0;
  int64_t slice_method = 0;

  // Who may use the slice fields and data besides the owner's appending (see above).
  static constexpr uint32_t kClaimFree = 0, kClaimHelper = 1, kClaimOwner = 2;
  std::atomic<uint32_t> claim{kClaimFree};
  // Member buffers (BufferPacker): a member is a chain of them (member_next), each holding the next
  // member_size bytes of it in data; the first one also the mlpd bytes the member holds (header
  // included), member_input. 0 and nullptr in thread buffers.
  uint32_t member_size = 0;
  uint32_t member_input = 0;
  LogBuffer* member_next = nullptr;

  std::atomic<LogBuffer*> queue_next{nullptr};  // flush queue link
  uint32_t pool_index = 0;                      // slot in the BufferPool table
  uint32_t capacity = 0;
  uint8_t* data = nullptr;

  // Called by the owner when it takes the buffer from the pool.
  void start(uint64_t thread, uint64_t time, int64_t method_b) {
    thread_id = thread;
    time_base = slice_time = time;
    ptr_base.store(0, std::memory_order_relaxed);
    obj_base.store(0, std::memory_order_relaxed);
    ptr_base_set = obj_base_set = false;
    method_base = slice_method = method_b;
    slice_start = 0;
    committed.store(0, std::memory_order_relaxed);
    published_ns = 0;
    queue_next.store(nullptr, std::memory_order_relaxed);
  }
};

}  // namespace mlpd::rt
