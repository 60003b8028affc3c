// ThreadLog: the per-thread writer of the agent's hot path. One per thread that logs, reached through
// an initial-exec TLS pointer. Writing an event is: reserve worst-case bytes in the current buffer,
// encode into them, commit (one release store). No lock, no syscall, no allocation, no
// read-modify-write on a shared cache line; when the buffer is full it goes to the flush queue (one
// atomic exchange per buffer) and a fresh one comes from the lock-free pool.
#pragma once

#include <atomic>
#include <cstdint>

#include "mlpd/leb128.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/event_counts.h"

namespace mlpd::rt {

class BufferPacker;

// Process-wide state the ThreadLogs share with the helper thread.
struct WriterShared {
  BufferPool* pool = nullptr;
  FlushQueue* queue = nullptr;
  std::atomic<uint64_t> dropped_events{0};  // events lost because no buffer could be had
  // Called (from any thread) when a thread had to have a new buffer made because none was free: the
  // helper is behind and should run now rather than at its next tick. Never on the per-event path.
  void (*wake_helper)(void* ctx) = nullptr;
  void* wake_ctx = nullptr;
  // Full thread buffers pushed to the flush queue and not yet given back by the helper (the owners
  // add, the helper subtracts after writing them): the writer's backlog.
  std::atomic<uint32_t> full_waiting{0};
  // `zip`'s producers' help (buffer_packer.h): while `pack_above` or more full buffers are waiting,
  // a thread that fills its buffer compresses it into a member itself. nullptr: off.
  BufferPacker* packer = nullptr;
  uint32_t pack_above = 0;
  // Threads between claiming a buffer to compress it and pushing its member (the final flush rounds
  // wait for them, bounded).
  std::atomic<uint32_t> packing{0};
};

class ThreadLog {
 public:
  ThreadLog(WriterShared& shared, uint64_t thread_id, uint64_t now);
  ~ThreadLog();  // publishes what is left (call retire() first when the thread ends normally)
  ThreadLog(const ThreadLog&) = delete;
  // While on, this thread's new buffers may come from the pool's reserve (the heap walk).
  void use_reserve(bool on) { use_reserve_ = on; }
  // Events this process has lost for want of a buffer (all threads).
  uint64_t dropped_events() const { return shared_.dropped_events.load(std::memory_order_relaxed); }
  ThreadLog& operator=(const ThreadLog&) = delete;

  // Room for `max_bytes` at the returned pointer, or nullptr if no buffer can be had (the event is
  // dropped and counted). `max_bytes` must not exceed the pool's buffer size.
  uint8_t* reserve(size_t max_bytes) {
    if (static_cast<size_t>(end_ - cur_) >= max_bytes) [[likely]] return cur_;
    return refill(max_bytes);
  }
  // Whether the current buffer has room for `max_bytes` at cursor() (never calls; when it has not,
  // reserve() is the way).
  bool has_room(size_t max_bytes) const { return static_cast<size_t>(end_ - cur_) >= max_bytes; }
  uint8_t* cursor() const { return cur_; }
  // Makes the bytes up to `p` -- one event of `kind` -- visible to the helper, and counts the event
  // (the "Event: KIND" profiler counters; docs/format.md).
  void commit(uint8_t* p, EventKind kind) {
    cur_ = p;
    buf_->committed.store(static_cast<uint32_t>(p - buf_->data), std::memory_order_release);
    counts_.add(kind);
  }

  // ---- Held enters (calls-min, short-call elision; docs/design.md "Short-call elision") ----------
  // With calls-min an enter is written but not committed: it stays invisible to the helper until the
  // next commit of any event publishes it with that event. While consecutive enters are held and
  // nothing else was written after them, the leave of the innermost one may remove it again: the
  // buffer's end and the time and method delta chains go back to what they were before the enter.
  // Only the calls-min callbacks use these; with calls-min off no hot path touches them.
  static constexpr uint32_t kMaxHeld = 16;  // consecutive held enters; an enter beyond publishes them
  // Before writing a held enter at `p` (what reserve() returned).
  void begin_held(uint8_t* p) {
    if (held_ != 0 && held_at_[held_ - 1].end != p) held_ = 0;  // published since: nothing to take back
    if (held_ == kMaxHeld) [[unlikely]] {
      publish_held();
      held_ = 0;
    }
    HeldEnter& h = held_at_[held_];
    h.start = p;
    h.time_before = last_time_;
    h.method_before = last_method_;
  }
  // The held enter ends at `p` (instead of commit()).
  void hold(uint8_t* p, EventKind kind) {
    cur_ = p;
    held_at_[held_++].end = p;
    counts_.add(kind);
  }
  // An enter could not be written (no buffer): nothing held may be taken back by the next leave.
  void drop_held() { held_ = 0; }
  // The leave of the innermost held enter, at `now`: when nothing was written after the enter and
  // the call took less than `min_ns`, removes the enter and returns true (the leave is not written).
  bool elide_held(uint64_t now, uint64_t min_ns) {
    if (held_ == 0) return false;
    const HeldEnter& h = held_at_[held_ - 1];
    if (h.end != cur_ || now - last_time_ >= min_ns) {  // last_time_ is the enter's time when h.end == cur_
      held_ = 0;
      return false;
    }
    cur_ = h.start;
    last_time_ = h.time_before;
    last_method_ = h.method_before;
    --held_;
    counts_.remove(EventKind::method_enter);
    elided_.store(elided_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  // Calls removed by elide_held so far (any thread may read).
  uint64_t elided_calls() const { return elided_.load(std::memory_order_relaxed); }

  // Field encoders, in the order the event layout needs them (format.h / docs/format.md).
  uint8_t* put_time(uint8_t* p, uint64_t t) {
    p = put_uleb(p, t - last_time_);  // wraps for a time earlier than the last (readers wrap too)
    last_time_ = t;
    return p;
  }
  // The first pointer / object of a buffer becomes its base (NULL included: it then decodes as NULL).
  uint8_t* put_ptr(uint8_t* p, uint64_t v) {
    if (!buf_->ptr_base_set) [[unlikely]] {
      buf_->ptr_base.store(static_cast<int64_t>(v), std::memory_order_relaxed);
      buf_->ptr_base_set = true;
    }
    return put_sleb(p, static_cast<int64_t>(v - static_cast<uint64_t>(buf_->ptr_base.load(std::memory_order_relaxed))));
  }
  uint8_t* put_obj(uint8_t* p, uint64_t obj) {
    if (!buf_->obj_base_set) [[unlikely]] {
      buf_->obj_base.store(static_cast<int64_t>(obj >> 3), std::memory_order_relaxed);
      buf_->obj_base_set = true;
    }
    return put_sleb(p, static_cast<int64_t>((obj >> 3) - static_cast<uint64_t>(buf_->obj_base.load(std::memory_order_relaxed))));
  }
  uint8_t* put_method(uint8_t* p, uint64_t m) {
    p = put_sleb(p, static_cast<int64_t>(m - static_cast<uint64_t>(last_method_)));
    last_method_ = static_cast<int64_t>(m);
    return p;
  }

  // The thread is ending: hand the current buffer to the helper; the ThreadLog writes nothing more.
  void retire();
  // Hands the current buffer, if it holds events, to the helper now, as a full one is (the next event
  // starts a new buffer): what was written reaches the file before any buffer another thread fills
  // from now on. For the end of a heapshot: a quiet thread's partial buffer with the heap_end would
  // otherwise reach the file only at the next live round, after the next heapshot's objects of
  // another thread, and a reader that pairs heap_start and heap_end in file order (Mono.Profiler.Log)
  // would end that heapshot early.
  void hand_off();

  uint64_t thread_id() const { return thread_id_; }
  // Events committed so far, per kind (any thread may read).
  const EventCounts& counts() const { return counts_; }
  // For the helper: the buffer the owner is writing now (may change at any time).
  LogBuffer* current() const { return current_.load(std::memory_order_acquire); }

  ThreadLog* registry_next = nullptr;  // ThreadRegistry's list (guarded by its mutex)

 private:
  uint8_t* refill(size_t max_bytes);
  bool start_buffer();
  // The full current buffer: pushed to the flush queue, or (zip, helper behind) compressed into a
  // member that is pushed instead, the buffer then started again for this thread.
  void hand_off_full();
  bool pack_full();
  // Commits the bytes written and not yet committed (held enters) of the current buffer.
  void publish_held();

  struct HeldEnter {
    uint8_t* start;
    uint8_t* end;
    uint64_t time_before;
    int64_t method_before;
  };

  WriterShared& shared_;
  uint64_t thread_id_;
  LogBuffer* buf_ = nullptr;
  uint8_t* cur_ = nullptr;
  uint8_t* end_ = nullptr;
  uint64_t last_time_;
  int64_t last_method_ = 0;
  std::atomic<LogBuffer*> current_{nullptr};
  bool retired_ = false;
  bool use_reserve_ = false;
  EventCounts counts_;
  uint32_t held_ = 0;
  std::atomic<uint64_t> elided_{0};  // one writer (the owner)
  HeldEnter held_at_[kMaxHeld];
};

}  // namespace mlpd::rt
