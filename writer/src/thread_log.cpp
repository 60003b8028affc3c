#include "mlpd/rt/thread_log.h"

#include "mlpd/rt/buffer_packer.h"
#include "mlpd/rt/clock.h"

namespace mlpd::rt {

namespace {
// Where cur_/end_ point while the thread has no buffer: reserve() always fails over to refill().
uint8_t g_no_buffer[1];
}  // namespace

ThreadLog::ThreadLog(WriterShared& shared, uint64_t thread_id, uint64_t now)
    : shared_(shared), thread_id_(thread_id), last_time_(now) {
  cur_ = end_ = g_no_buffer;
}

ThreadLog::~ThreadLog() { retire(); }

bool ThreadLog::start_buffer() {
  const uint32_t made = shared_.pool->allocated();
  LogBuffer* b = shared_.pool->take(use_reserve_);
  if (!b) return false;
  if (shared_.pool->allocated() != made && shared_.wake_helper) shared_.wake_helper(shared_.wake_ctx);
  b->start(thread_id_, last_time_, last_method_);
  buf_ = b;
  cur_ = b->data;
  end_ = b->data + b->capacity;
  // Release: the helper that sees this buffer as current sees it initialised, and sees every
  // earlier buffer of this thread already in the flush queue (pushed before this store).
  current_.store(b, std::memory_order_release);
  return true;
}

void ThreadLog::publish_held() {
  held_ = 0;
  if (buf_ && cur_ != buf_->data + buf_->committed.load(std::memory_order_relaxed))
    buf_->committed.store(static_cast<uint32_t>(cur_ - buf_->data), std::memory_order_release);
}

void ThreadLog::hand_off_full() {
  if (shared_.packer && shared_.full_waiting.load(std::memory_order_relaxed) >= shared_.pack_above && pack_full()) return;
  LogBuffer* full = buf_;
  buf_ = nullptr;
  cur_ = end_ = g_no_buffer;
  current_.store(nullptr, std::memory_order_release);
  full->published_ns = now_ns();  // once per buffer, not per event
  shared_.full_waiting.fetch_add(1, std::memory_order_relaxed);
  shared_.queue->push(full);
}

// The claim keeps the helper away from this buffer while it is compressed and reused: a helper that
// claimed it first (a live slice this round) makes us push it as it is; a helper that comes later
// finds it claimed, or no longer current, and skips it (docs/design.md, the concurrency protocol).
bool ThreadLog::pack_full() {
  LogBuffer* full = buf_;
  shared_.packing.fetch_add(1, std::memory_order_acq_rel);
  uint32_t expected = LogBuffer::kClaimFree;
  if (!full->claim.compare_exchange_strong(expected, LogBuffer::kClaimOwner, std::memory_order_acq_rel)) {
    shared_.packing.fetch_sub(1, std::memory_order_release);
    return false;
  }
  current_.store(nullptr, std::memory_order_release);
  LogBuffer* member = shared_.packer->pack(*full);
  if (!member) {
    full->claim.store(LogBuffer::kClaimFree, std::memory_order_release);
    shared_.packing.fetch_sub(1, std::memory_order_release);
    return false;  // pushed as it is by the caller
  }
  member->published_ns = now_ns();
  shared_.queue->push(member);
  shared_.packing.fetch_sub(1, std::memory_order_release);
  // The same buffer again, empty: its fields are reset before the claim is released and before it is
  // current again (a helper that claims it next sees it fresh).
  full->start(thread_id_, last_time_, last_method_);
  full->claim.store(LogBuffer::kClaimFree, std::memory_order_release);
  cur_ = full->data;
  end_ = full->data + full->capacity;
  current_.store(full, std::memory_order_release);
  return true;
}

uint8_t* ThreadLog::refill(size_t max_bytes) {
  if (retired_) return nullptr;
  publish_held();  // held enters (calls-min) go with their buffer
  if (buf_ && buf_->committed.load(std::memory_order_relaxed) != 0) hand_off_full();
  if (!buf_ && !start_buffer()) {
    shared_.dropped_events.fetch_add(1, std::memory_order_relaxed);  // rare: pool exhausted
    return nullptr;
  }
  if (static_cast<size_t>(end_ - cur_) < max_bytes) {
    shared_.dropped_events.fetch_add(1, std::memory_order_relaxed);  // event larger than a buffer
    return nullptr;
  }
  return cur_;
}

void ThreadLog::hand_off() {
  if (retired_) return;
  publish_held();
  if (buf_ && buf_->committed.load(std::memory_order_relaxed) != 0) hand_off_full();
}

void ThreadLog::retire() {
  if (retired_) return;
  retired_ = true;
  publish_held();
  if (buf_) {
    LogBuffer* last = buf_;
    buf_ = nullptr;
    cur_ = end_ = g_no_buffer;
    current_.store(nullptr, std::memory_order_release);
    if (last->committed.load(std::memory_order_relaxed) != 0) {
      last->published_ns = now_ns();
      shared_.full_waiting.fetch_add(1, std::memory_order_relaxed);
      shared_.queue->push(last);
    } else {
      shared_.pool->give(last);
    }
  }
}

}  // namespace mlpd::rt
