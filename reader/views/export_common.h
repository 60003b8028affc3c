// Helpers shared by the speedscope, trace and pprof exporters (internal to reader/views/).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/profile.h"

namespace mlpd::views::detail {

// Appends `s` as the inside of a JSON string (quotes not included). Bytes that are not valid UTF-8
// become U+FFFD, so that a hostile name cannot make the output invalid JSON.
void json_escape(std::string& out, std::string_view s);
// `s` with every byte that is not part of valid UTF-8 replaced by U+FFFD (protobuf's string fields
// must be UTF-8; names in a damaged file need not be).
std::string utf8_clean(std::string_view s);

// Appends `ns` as microseconds with three decimals ("12.345"), the Trace Event format's unit.
void append_us(std::string& out, uint64_t ns);
void append_u64(std::string& out, uint64_t v);
void append_double(std::string& out, double v);  // finite: shortest round-trip form; else 0

// Buffered writer to a FILE*, remembering the first write error.
class OutText {
 public:
  explicit OutText(std::FILE* f) : f_(f) { buf_.reserve(kFlushAt + 4096); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
  }
  bool flush();  // false (and stays false) once a write failed
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kFlushAt = 1 << 16;
  std::FILE* f_;
  std::string buf_;
  bool ok_ = true;
};

// Fixed-size records spilled to an anonymous temporary file, grouped by a key (a thread index):
// each key keeps one chunk of records in memory and appends full chunks to the file, so memory is
// bounded by (keys x chunk) + one small index entry per chunk, never by the number of records.
// Records of one key are read back in the order they were added.
class RecordSpill {
 public:
  explicit RecordSpill(size_t record_size, size_t records_per_chunk = 1024);
  ~RecordSpill();
  RecordSpill(const RecordSpill&) = delete;
  RecordSpill& operator=(const RecordSpill&) = delete;

  void add(uint32_t key, const void* record);
  uint64_t count(uint32_t key) const;
  size_t keys() const { return keys_.size(); }
  // Calls fn(record) for each record of `key` in order. Returns false on an I/O error.
  template <typename Fn>
  bool for_each(uint32_t key, Fn&& fn) {
    if (key >= keys_.size()) return ok_;
    Key& k = keys_[key];
    std::vector<uint8_t> chunk;
    for (const auto& c : k.chunks) {
      if (!read_chunk(c, chunk)) return false;
      for (uint32_t i = 0; i < c.count; ++i) fn(chunk.data() + size_t(i) * record_size_);
    }
    for (size_t off = 0; off < k.pending.size(); off += record_size_) fn(k.pending.data() + off);
    return ok_;
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  struct Chunk {
    uint64_t offset;
    uint32_t count;
  };
  struct Key {
    std::vector<uint8_t> pending;
    std::vector<Chunk> chunks;
    uint64_t total = 0;
  };
  bool read_chunk(const Chunk& c, std::vector<uint8_t>& into);
  void fail(const char* what);

  size_t record_size_;
  size_t chunk_bytes_;
  std::vector<Key> keys_;
  std::FILE* file_ = nullptr;
  uint64_t file_size_ = 0;
  bool ok_ = true;
  std::string error_;
};

// Keeps each thread's open frames while enter/leave events stream by, so that what an exporter
// writes is balanced even if the events are not: a leave of a frame just below the top closes the
// frames above it first; a leave of a frame not open near the top is ignored. Bounded against hostile
// files: at most kMaxDepth open frames per thread (deeper enters are counted, not kept, and the leaves
// that match them are dropped too), and a leave searches at most kMaxSearch frames down.
class OpenFrames {
 public:
  static constexpr size_t kMaxDepth = 1 << 16;
  static constexpr size_t kMaxSearch = 64;
  struct Closed {
    profile::FrameId frame;
    uint64_t start;
  };
  // Returns false when the frame is past kMaxDepth (then nothing is to be written for it).
  bool open(profile::ThreadIndex t, profile::FrameId f, uint64_t time);
  // Appends to `closed` the frames the leave of `f` closes, innermost first.
  void close(profile::ThreadIndex t, profile::FrameId f, std::vector<Closed>& closed);
  // All frames still open on `t`, innermost first (they are removed).
  void close_all(profile::ThreadIndex t, std::vector<Closed>& closed);
  size_t threads() const { return stacks_.size(); }

 private:
  struct Stack {
    std::vector<Closed> frames;
    uint64_t too_deep = 0;  // enters past kMaxDepth not yet left
  };
  std::vector<Stack> stacks_;
};

}  // namespace mlpd::views::detail
