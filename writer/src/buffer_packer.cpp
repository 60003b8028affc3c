#include "mlpd/rt/buffer_packer.h"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "mlpd/encoder.h"
#include "mlpd/format.h"

namespace mlpd::rt {

static_assert(format::kBufferHeaderSize <= BufferPool::kFreeBeforeData);

BufferPacker::BufferPacker(int level, uint32_t compressors, size_t input_bytes, uint32_t max_members,
                           uint32_t member_bytes)
    : members_(member_bytes, max_members) {
  const uint32_t n = members_.max_buffers() == 0 ? 0 : std::min(compressors, kMaxSlots);
  for (uint32_t i = 0; i < n; ++i) {
    Slot& s = slots_[count_];
    s.compressor = libdeflate_alloc_compressor(level);
    if (!s.compressor) break;
    s.out_size = libdeflate_gzip_compress_bound(s.compressor, input_bytes);
    s.out = new (std::nothrow) uint8_t[s.out_size];
    if (!s.out) {
      libdeflate_free_compressor(s.compressor);
      s.compressor = nullptr;
      break;
    }
    ++count_;
  }
}

BufferPacker::~BufferPacker() {
  for (uint32_t i = 0; i < count_; ++i) {
    libdeflate_free_compressor(slots_[i].compressor);
    delete[] slots_[i].out;
  }
}

void BufferPacker::release_chain(LogBuffer* m) {
  while (m) {
    LogBuffer* next = m->member_next;
    m->member_next = nullptr;
    m->member_size = m->member_input = 0;
    members_.give(m);
    m = next;
  }
}

void BufferPacker::give(LogBuffer* member) { release_chain(member); }

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
  const size_t n = input <= slot->out_size ? libdeflate_gzip_compress(slot->compressor, in, input, slot->out, slot->out_size) : 0;
  // Into a chain of member buffers, in order.
  LogBuffer* head = nullptr;
  LogBuffer** link = &head;
  size_t done = 0;
  while (n > 0 && done < n) {
    LogBuffer* m = members_.take();
    if (!m) break;
    const size_t k = std::min<size_t>(m->capacity, n - done);
    std::memcpy(m->data, slot->out + done, k);
    m->member_size = static_cast<uint32_t>(k);
    m->member_input = 0;
    m->member_next = nullptr;
    *link = m;
    link = &m->member_next;
    done += k;
  }
  slot->busy.store(false, std::memory_order_release);
  if (n == 0 || done < n) {  // out of member buffers (n == 0 cannot happen with the bound's room)
    release_chain(head);
    no_member_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  head->thread_id = b.thread_id;
  head->member_input = static_cast<uint32_t>(input);
  head->committed.store(0, std::memory_order_relaxed);
  head->queue_next.store(nullptr, std::memory_order_relaxed);
  head->published_ns = 0;
  packed_.fetch_add(1, std::memory_order_relaxed);
  input_bytes_.fetch_add(input, std::memory_order_relaxed);
  member_bytes_.fetch_add(n, std::memory_order_relaxed);
  return head;
}

BufferPacker::Stats BufferPacker::stats() const {
  Stats s;
  s.packed = packed_.load(std::memory_order_relaxed);
  s.input_bytes = input_bytes_.load(std::memory_order_relaxed);
  s.member_bytes = member_bytes_.load(std::memory_order_relaxed);
  s.no_compressor = no_compressor_.load(std::memory_order_relaxed);
  s.no_member = no_member_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace mlpd::rt
