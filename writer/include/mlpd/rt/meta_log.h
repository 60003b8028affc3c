// MetaLog: the shared metadata stream. Metadata events (images, assemblies, classes, vtables,
// methods, domains, threads) are rare and must reach the file before any event that references them,
// whatever thread emits either. They are appended here under a mutex; the helper writes this stream
// out before the thread data it has captured (docs/design.md, "Metadata before use").
//
// Never call into Mono while holding the lock (compute names first): a Mono lock taken inside ours
// and ours taken inside a Mono callback would deadlock. Never add from a callback that runs while
// the world is stopped (a suspended thread may hold the lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/event.h"

namespace mlpd::rt {

class MetaLog {
 public:
  explicit MetaLog(uint64_t thread_id, uint64_t now)
      : encoder_(thread_id, now), thread_id_(thread_id), serial_(next_serial()) {}

  // This stream among all made in the process, never reused (an address is: a stream made after
  // another was freed can have its address). For "described once in this stream" marks kept elsewhere.
  uint64_t serial() const { return serial_; }

  // Appends one event; its time is taken under the lock so the stream's times never go backwards.
  template <typename Clock>
  void add(Event& e, Clock&& clock) {
    std::lock_guard<std::mutex> lock(mutex_);
    e.time = clock();
    encoder_.add(e);
    ++events_;
    ++counts_[static_cast<size_t>(e.kind)];
    if (encoder_.data_size() >= kBufferLimit) {  // keep buffers Mono-sized
      encoder_.finish_into(pending_);
      encoder_.reset(thread_id_, e.time);
    }
  }

  // Appends one event with the time it already carries (a sample's own time, which may be earlier
  // than the stream's last event: deltas wrap around, as in Mono's files).
  void add_at(const Event& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    encoder_.add(e);
    ++events_;
    ++counts_[static_cast<size_t>(e.kind)];
    if (encoder_.data_size() >= kBufferLimit) {
      encoder_.finish_into(pending_);
      encoder_.reset(thread_id_, e.time);
    }
  }

  // Moves everything added so far, as complete buffers (header + data), to the end of `out`.
  // Returns the number of events taken.
  uint64_t take(std::vector<uint8_t>& out, uint64_t now);

  // Adds the number of events of each kind ever added to `out[kind]` (the profiler counters).
  void add_counts_to(uint64_t (&out)[kEventKindCount]) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < kEventKindCount; ++i) out[i] += counts_[i];
  }

 private:
  static constexpr size_t kBufferLimit = 60 * 1024;

  static uint64_t next_serial() {
    static std::atomic<uint64_t> serials{0};
    return serials.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  std::mutex mutex_;
  BufferEncoder encoder_;
  std::vector<uint8_t> pending_;  // finished buffers not yet taken
  uint64_t thread_id_;
  uint64_t serial_;
  uint64_t events_ = 0;
  uint64_t counts_[kEventKindCount] = {};
};

}  // namespace mlpd::rt
