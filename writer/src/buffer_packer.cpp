#include "mlpd/rt/buffer_packer.h"

#include <libdeflate.h>

#include <algorithm>

#include "mlpd/encoder.h"
#include "mlpd/format.h"

namespace mlpd::rt {

static_assert(format::kBufferHeaderSize <= BufferPool::kFreeBeforeData);

BufferPacker::BufferPacker(int level, uint32_t compressors, uint32_t max_members, uint32_t member_bytes)
    : members_(member_bytes, max_members) {
  const uint32_t n = std::min(compressors, kMaxSlots);
  for (uint32_t i = 0; i < n; ++i) {
    libdeflate_compressor* c = libdeflate_alloc_compressor(level);
    if (!c) break;
    slots_[count_++].compressor = c;
  }
  if (members_.max_buffers() == 0) {  // the pool's tables could not be mapped: no members at all
    for (uint32_t i = 0; i < count_; ++i) libdeflate_free_compressor(slots_[i].compressor);
    count_ = 0;
  }
}

BufferPacker::~BufferPacker() {
  for (uint32_t i = 0; i < count_; ++i) libdeflate_free_compressor(slots_[i].compressor);
}

LogBuffer* BufferPacker::pack(LogBuffer& b) {
  const uint32_t end = b.committed.load(std::memory_order_relaxed);  // the owner's own store
  if (end <= b.slice_start || count_ == 0) return nullptr;
  // A free compressor, searched from a moving start so that threads do not all try slot 0 first.
  Slot* slot = nullptr;
  const uint32_t first = next_slot_.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < count_ && !slot; ++i) {
    Slot& s = slots_[(first + i) % count_];
    if (!s.busy.load(std::memory_order_relaxed) && !s.busy.exchange(true, std::memory_order_acquire)) slot = &s;
  }
  if (!slot) {
    no_compressor_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  LogBuffer* m = members_.take();
  if (!m) {
    slot->busy.store(false, std::memory_order_release);
    no_member_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // The header goes just before the events to write, so that header and events are one piece: into
  // the pool's free room before data, or over bytes the helper has already written (claims are
  // released only after a round's writes).
  BufferHeader h;
  h.length = end - b.slice_start;
  h.time_base = b.slice_time;
  h.ptr_base = b.ptr_base.load(std::memory_order_relaxed);
  h.obj_base = b.obj_base.load(std::memory_order_relaxed);
  h.thread_id = b.thread_id;
  h.method_base = b.slice_method;
  uint8_t* in = b.data + b.slice_start - format::kBufferHeaderSize;
  encode_buffer_header(h, in);
  const size_t input = format::kBufferHeaderSize + h.length;
  const size_t n = libdeflate_gzip_compress(slot->compressor, in, input, m->data, m->capacity);
  slot->busy.store(false, std::memory_order_release);
  if (n == 0) {  // larger than a member buffer: the helper writes this one
    members_.give(m);
    too_large_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  m->thread_id = b.thread_id;
  m->member_size = static_cast<uint32_t>(n);
  m->member_input = static_cast<uint32_t>(input);
  m->committed.store(0, std::memory_order_relaxed);
  m->queue_next.store(nullptr, std::memory_order_relaxed);
  m->published_ns = 0;
  packed_.fetch_add(1, std::memory_order_relaxed);
  input_bytes_.fetch_add(input, std::memory_order_relaxed);
  member_bytes_.fetch_add(n, std::memory_order_relaxed);
  return m;
}

BufferPacker::Stats BufferPacker::stats() const {
  Stats s;
  s.packed = packed_.load(std::memory_order_relaxed);
  s.input_bytes = input_bytes_.load(std::memory_order_relaxed);
  s.member_bytes = member_bytes_.load(std::memory_order_relaxed);
  s.no_compressor = no_compressor_.load(std::memory_order_relaxed);
  s.no_member = no_member_.load(std::memory_order_relaxed);
  s.too_large = too_large_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace mlpd::rt
