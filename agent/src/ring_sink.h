// The flight recorder's ring (`ring=SIZE`, docs/flight-recorder.md): an OutputSink that keeps the
// stream of buffers the helper writes (metadata buffers and thread buffers, each a 48-byte header and
// its events) in memory, whole buffers only, and drops the oldest buffers once more than SIZE bytes are
// held. The file header is not part of it (the agent keeps it). A dump is the header, the MetaStore's
// replay (so every dump is complete whatever was dropped), then for_each() in order: each thread's
// buffers stay in their order. Helper thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/leb128.h"
#include "mlpd/sink.h"

namespace mlpd::agent {

class RingSink final : public OutputSink {
 public:
  explicit RingSink(uint64_t capacity) : capacity_(capacity) {}

  bool write(const void* data, size_t size) override {
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
      // Collect the header first, then exactly the buffer's length.
      size_t want = format::kBufferHeaderSize;
      if (partial_.size() >= format::kBufferHeaderSize) want += length_of(partial_.data());
      const size_t k = std::min(size, want - partial_.size());
      partial_.insert(partial_.end(), p, p + k);
      p += k;
      size -= k;
      if (partial_.size() == format::kBufferHeaderSize && length_of(partial_.data()) > 0) continue;
      if (partial_.size() >= format::kBufferHeaderSize &&
          partial_.size() == format::kBufferHeaderSize + length_of(partial_.data())) {
        held_ += partial_.size();
        ring_.push_back(std::move(partial_));
        partial_ = {};
        ++buffers_in_;
        while (held_ > capacity_ && !ring_.empty()) {
          held_ -= ring_.front().size();
          ring_.pop_front();
          ++buffers_dropped_;
        }
      }
    }
    return true;
  }
  bool flush() override { return true; }
  bool close() override { return true; }
  void abandon() override {}
  std::string error() const override { return {}; }
  std::string describe() const override { return "ring"; }
  uint64_t written() const override { return held_; }

  template <typename F>
  bool for_each(F&& f) const {
    for (const std::vector<uint8_t>& b : ring_) {
      if (!f(b.data(), b.size())) return false;
    }
    return true;
  }
  // The time of the earliest first event of the buffers held (0 when none): where a dump's data
  // begins, and so the earliest time its replayed metadata needs (MetaStore::replay's not_before).
  // Not the time base alone: a quiet thread's slice starts from its last event before it went quiet.
  uint64_t oldest_time() const {
    uint64_t oldest = 0;
    for (const std::vector<uint8_t>& b : ring_) {
      // Every event starts with its type byte and its time delta (uleb).
      const uint8_t* p = b.data() + format::kBufferHeaderSize + 1;
      uint64_t delta;
      if (length_of(b.data()) < 2 || get_uleb(p, b.data() + b.size(), delta) != LebStatus::ok) continue;
      BufferHeader h;
      decode_buffer_header(b.data(), h);
      const uint64_t t = h.time_base + delta;
      if (t != 0 && (oldest == 0 || t < oldest)) oldest = t;
    }
    return oldest;
  }
  uint64_t held() const { return held_; }
  uint64_t buffers_in() const { return buffers_in_; }
  uint64_t buffers_dropped() const { return buffers_dropped_; }

 private:
  static uint32_t length_of(const uint8_t* h) { return buffer_header_length(h); }

  uint64_t capacity_;
  uint64_t held_ = 0;
  uint64_t buffers_in_ = 0;
  uint64_t buffers_dropped_ = 0;
  std::vector<uint8_t> partial_;
  std::deque<std::vector<uint8_t>> ring_;
};

}  // namespace mlpd::agent
