// BufferPool: LogBuffers for every thread, taken and returned without locks. Taking a buffer must
// never block: the GC thread writes events while the world is stopped, and a suspended thread may
// hold any lock (malloc's included), so buffers come from mmap and a lock-free free list.
#pragma once

#include <atomic>
#include <cstdint>

#include "mlpd/rt/log_buffer.h"

namespace mlpd::rt {

class BufferPool {
 public:
  // Each buffer's LogBuffer lives at the start of its mapping, then its data: the kFreeBeforeData
  // bytes just before `data` belong to no field, so the owner may put a buffer header there
  // (BufferPacker compresses header and events as one piece without copying them).
  static constexpr size_t kMappingHeader = 256;
  static constexpr size_t kFreeBeforeData = 64;
  // `buffer_bytes`: data bytes per buffer; `max_buffers`: cap on buffers in existence (memory bound);
  // `reserve_buffers`: further buffers only take(true) may make (a heap walk, which must not lose
  // events while the helper may be held up by the stopped world).
  BufferPool(uint32_t buffer_bytes, uint32_t max_buffers, uint32_t reserve_buffers = 0);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A clean buffer, or nullptr when max_buffers exist and none is free (the caller drops the event
  // and counts it). Lock-free; async-signal-safe apart from mmap.
  LogBuffer* take(bool use_reserve = false);
  // Returns a buffer to the free list (any thread).
  void give(LogBuffer* buffer);

  // Gives the pages of every buffer's data back to the system (madvise MADV_DONTNEED), all but the
  // first page (the LogBuffer and the start of its data). For an agent that was detached: threads may
  // still hold its buffers (and one delayed inside a callback may still write to one, or take one),
  // so nothing is unmapped; a page written again is a fresh zero page. Returns the bytes given back.
  size_t release_pages();

  uint32_t buffer_bytes() const { return buffer_bytes_; }
  uint32_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  uint32_t max_buffers() const { return max_buffers_; }

 private:
  // Free list head: low 32 bits = index + 1 of the top buffer (0 = empty), high 32 bits = a tag
  // bumped by every change, so a stale compare-and-swap fails (no ABA).
  std::atomic<uint64_t> free_head_{0};
  std::atomic<uint32_t> allocated_{0};
  uint32_t buffer_bytes_;
  uint32_t max_buffers_;
  uint32_t reserve_buffers_;
  LogBuffer** table_ = nullptr;             // index -> buffer (mmap'd array)
  std::atomic<uint32_t>* next_free_ = nullptr;  // index -> next free index + 1
};

// Flush queue: full buffers from any thread to the helper, in FIFO order per producer (an intrusive
// multi-producer single-consumer queue; push is one atomic exchange, pop is for the helper only).
class FlushQueue {
 public:
  FlushQueue();
  void push(LogBuffer* buffer);
  // Next buffer, or nullptr when the queue is empty or a push is half done (try again later).
  LogBuffer* pop();
  // After pop() returned nullptr: true when that was a push still half done, not an empty queue (a
  // producer between its exchange and its link; everything pushed after it waits behind it).
  bool blocked() const { return tail_ != head_.load(std::memory_order_acquire) || tail_->queue_next.load(std::memory_order_acquire); }

 private:
  std::atomic<LogBuffer*> head_;
  LogBuffer* tail_;
  LogBuffer stub_;
};

}  // namespace mlpd::rt
