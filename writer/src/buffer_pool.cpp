#include "mlpd/rt/buffer_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace mlpd::rt {

namespace {
void* map_zeroed(size_t bytes, bool populate = false) {
  // MAP_POPULATE: a buffer is written from end to end, so fault its pages in with the mmap (one
  // syscall) instead of one fault per page on the hot path.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0),
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
constexpr size_t kHeaderRoom = BufferPool::kMappingHeader;  // the LogBuffer struct, then free room
}  // namespace

BufferPool::BufferPool(uint32_t buffer_bytes, uint32_t max_buffers, uint32_t reserve_buffers)
    : buffer_bytes_(buffer_bytes), max_buffers_(max_buffers), reserve_buffers_(reserve_buffers) {
  static_assert(sizeof(LogBuffer) + kFreeBeforeData <= kHeaderRoom);
  const size_t slots = size_t{max_buffers} + reserve_buffers;
  table_ = static_cast<LogBuffer**>(map_zeroed(sizeof(LogBuffer*) * slots));
  next_free_ = static_cast<std::atomic<uint32_t>*>(map_zeroed(sizeof(std::atomic<uint32_t>) * slots));
  if (!table_ || !next_free_) max_buffers_ = reserve_buffers_ = 0;
}

BufferPool::~BufferPool() {
  const uint32_t n = allocated_.load();
  for (uint32_t i = 0; i < n; ++i) {
    if (table_[i]) {
      table_[i]->~LogBuffer();
      munmap(table_[i], kHeaderRoom + buffer_bytes_);
    }
  }
  const size_t slots = size_t{max_buffers_} + reserve_buffers_;
  if (table_) munmap(table_, sizeof(LogBuffer*) * slots);
  if (next_free_) munmap(next_free_, sizeof(std::atomic<uint32_t>) * slots);
}

LogBuffer* BufferPool::take(bool use_reserve) {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  while (static_cast<uint32_t>(head) != 0) {
    const uint32_t index = static_cast<uint32_t>(head) - 1;
    const uint32_t next = next_free_[index].load(std::memory_order_relaxed);
    const uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | next, std::memory_order_acquire,
                                         std::memory_order_acquire)) {
      return table_[index];
    }
  }
  // Free list empty: make a new buffer if the cap (with the reserve, when allowed) allows. Buffers
  // made from the reserve are recycled like the others afterwards: the pool's memory bound is
  // max_buffers + reserve_buffers.
  const uint32_t index = allocated_.fetch_add(1, std::memory_order_relaxed);
  if (index >= max_buffers_ + (use_reserve ? reserve_buffers_ : 0)) {
    allocated_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  void* mem = map_zeroed(kHeaderRoom + buffer_bytes_, true);
  if (!mem) {
    // Leave the slot empty; it is never reused (mmap failing means memory is gone anyway).
    return nullptr;
  }
  auto* b = new (mem) LogBuffer();
  b->data = static_cast<uint8_t*>(mem) + kHeaderRoom;
  b->capacity = buffer_bytes_;
  b->pool_index = index;
  table_[index] = b;
  return b;
}

size_t BufferPool::release_pages() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapping = kHeaderRoom + buffer_bytes_;
  if (!table_ || mapping <= page) return 0;
  size_t released = 0;
  const uint32_t n = std::min(allocated_.load(std::memory_order_acquire), max_buffers_ + reserve_buffers_);
  for (uint32_t i = 0; i < n; ++i) {
    auto* mem = reinterpret_cast<uint8_t*>(table_[i]);
    if (mem && madvise(mem + page, mapping - page, MADV_DONTNEED) == 0) released += mapping - page;
  }
  return released;
}

void BufferPool::give(LogBuffer* b) {
  const uint32_t index = b->pool_index;
  uint64_t head = free_head_.load(std::memory_order_relaxed);
  for (;;) {
    next_free_[index].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    const uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | (index + 1), std::memory_order_release,
                                         std::memory_order_relaxed)) {
      return;
    }
  }
}

FlushQueue::FlushQueue() : head_(&stub_), tail_(&stub_) {}

void FlushQueue::push(LogBuffer* b) {
  b->queue_next.store(nullptr, std::memory_order_relaxed);
  LogBuffer* prev = head_.exchange(b, std::memory_order_acq_rel);
  prev->queue_next.store(b, std::memory_order_release);
}

LogBuffer* FlushQueue::pop() {
  LogBuffer* tail = tail_;
  LogBuffer* next = tail->queue_next.load(std::memory_order_acquire);
  if (tail == &stub_) {
    if (!next) return nullptr;
    tail_ = tail = next;
    next = next->queue_next.load(std::memory_order_acquire);
  }
  if (next) {
    tail_ = next;
    return tail;
  }
  if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // a push is half done
  push(&stub_);
  next = tail->queue_next.load(std::memory_order_acquire);
  if (next) {
    tail_ = next;
    return tail;
  }
  return nullptr;
}

}  // namespace mlpd::rt
