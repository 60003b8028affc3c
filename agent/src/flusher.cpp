#include "mlpd/agent/flusher.h"

#include <algorithm>

#include "mlpd/buffer_decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_packer.h"

namespace mlpd::agent {

void Flusher::drain_queue() {
  while (rt::LogBuffer* b = shared_.queue->pop()) popped_.push_back(b);
}

void Flusher::add_own(size_t from) {
  if (bytes_.size() > from) pending_.push_back({true, from, nullptr, bytes_.size() - from});
}

void Flusher::write_slice(rt::LogBuffer& b, uint32_t end, bool final_slice) {
  if (end <= b.slice_start) return;
  BufferHeader h;
  h.length = end - b.slice_start;
  h.time_base = b.slice_time;
  h.ptr_base = b.ptr_base.load(std::memory_order_relaxed);  // after the acquire of committed
  h.obj_base = b.obj_base.load(std::memory_order_relaxed);
  h.thread_id = b.thread_id;
  h.method_base = b.slice_method;
  const size_t from = bytes_.size();
  encode_buffer_header(h, bytes_);
  add_own(from);
  const uint8_t* data = b.data + b.slice_start;
  pending_.push_back({false, 0, data, h.length});  // the event bytes are written from the buffer itself
  ++stats_.buffers_written;
  stats_.bytes += format::kBufferHeaderSize + h.length;
  if (!final_slice) {
    // The next slice continues the delta chains where this one ends: decode it to find out.
    BufferDecoder dec(h, data, 0);
    Event e;
    std::string problem;
    uint64_t offset = 0;
    while (dec.next(e, problem, offset)) {
    }
    b.slice_time = dec.last_time();
    b.slice_method = dec.last_method();
  }
  b.slice_start = end;
}

const std::vector<Flusher::Piece>& Flusher::begin_round(bool live_slices, uint64_t now) {
  popped_.clear();
  live_.clear();
  bytes_.clear();
  pending_.clear();
  pieces_.clear();
  drain_queue();
  queue_blocked_ = false;
  if (live_slices) {
    registry_.for_each([&](rt::ThreadLog& log) {
      rt::LogBuffer* b = log.current();
      if (!b) return;
      uint32_t expected = rt::LogBuffer::kClaimFree;
      if (!b->claim.compare_exchange_strong(expected, rt::LogBuffer::kClaimHelper, std::memory_order_acq_rel)) {
        return;  // its owner is compressing it: the member comes through the queue
      }
      claimed_.push_back(b);
      // Still this thread's current buffer once claimed (it may have been compressed and started
      // again meanwhile: then this is the new one, whose older member is already in the queue).
      if (log.current() == b) live_.push_back({b, b->committed.load(std::memory_order_acquire)});
    });
    drain_queue();
    if (shared_.queue->blocked()) {
      queue_blocked_ = true;
      live_.clear();  // a thread's older buffer may be behind the half-done push: slice next round
    }
  }
  stats_.meta_events += meta_.take(bytes_, now);
  if (store_ && !bytes_.empty()) store_->absorb(bytes_.data(), bytes_.size());  // only metadata so far
  add_own(0);
  for (rt::LogBuffer* b : popped_) {
    if (b->member_size) {  // a member: its chain of member buffers, in order
      for (const rt::LogBuffer* m = b; m; m = m->member_next) pending_.push_back({false, 0, m->data, m->member_size, true});
      ++stats_.buffers_written;
      ++stats_.members;
      stats_.bytes += b->member_input;
    } else {
      write_slice(*b, b->committed.load(std::memory_order_acquire), true);
    }
    if (b->published_ns != 0 && now > b->published_ns) {
      stats_.latency_last_ns = now - b->published_ns;
      stats_.latency_max_ns = std::max(stats_.latency_max_ns, stats_.latency_last_ns);
    }
  }
  for (const Slice& s : live_) {
    // Nothing committed: the owner may already have given this buffer back to the pool (retire), so
    // it must not be touched.
    if (s.end == 0) continue;
    if (std::find(popped_.begin(), popped_.end(), s.buffer) != popped_.end()) continue;  // written above
    write_slice(*s.buffer, s.end, false);
  }
  for (const PendingPiece& p : pending_) pieces_.push_back({p.own ? bytes_.data() + p.offset : p.data, p.size, p.member});
  return pieces_;
}

void Flusher::end_round() {
  // Claims first: a claimed buffer that was also popped goes back to the pool below, where another
  // thread may take it at once.
  for (rt::LogBuffer* b : claimed_) b->claim.store(rt::LogBuffer::kClaimFree, std::memory_order_release);
  claimed_.clear();
  uint32_t full = 0;
  for (rt::LogBuffer* b : popped_) {
    if (b->member_size) {
      shared_.packer->give(b);
    } else {
      shared_.pool->give(b);
      ++full;
    }
  }
  if (full) shared_.full_waiting.fetch_sub(full, std::memory_order_relaxed);
  popped_.clear();
}

void Flusher::round(std::vector<uint8_t>& out, bool live_slices, uint64_t now) {
  for (const Piece& p : begin_round(live_slices, now)) out.insert(out.end(), p.data, p.data + p.size);
  end_round();
}

bool Flusher::round(OutputSink& out, bool live_slices, uint64_t now) {
  bool ok = true;
  for (const Piece& p : begin_round(live_slices, now)) {
    if (ok) ok = p.member ? out.write_member(p.data, p.size) : out.write(p.data, p.size);
  }
  end_round();
  return ok && out.flush();
}

}  // namespace mlpd::agent
