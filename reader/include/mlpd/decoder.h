// Streaming decoder of mlpd files: header, then buffer by buffer, every v17 event, validated as it
// goes. Memory stays bounded by the largest buffer (at most DecodeOptions::max_buffer_length), not
// by the file size. Problems are reported with the byte offset (in the uncompressed stream) and the
// buffer index; after a problem inside a buffer the rest of that buffer is skipped (the format says
// later values need earlier ones) and decoding continues with the next buffer; a problem in a file
// or buffer header, or a truncation, ends decoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/event.h"
#include "mlpd/input.h"
#include "mlpd/leb128.h"

namespace mlpd {

class MemoryBudget;  // mlpd/budget.h

struct Problem {
  uint64_t offset = 0;  // byte offset in the (uncompressed) file
  int64_t buffer = -1;  // buffer index, -1 for the file header
  std::string message;  // one line, no trailing period
};

struct BufferInfo {
  uint64_t index = 0;   // 0-based position of the buffer in the file
  uint64_t offset = 0;  // file offset of the buffer header
  BufferHeader header;
};

struct EventInfo {
  uint64_t offset = 0;  // file offset of the event byte
  const BufferInfo* buffer = nullptr;
};

class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void on_header(const FileHeader&) {}
  virtual void on_buffer(const BufferInfo&) {}
  virtual void on_event(const Event&, const EventInfo&) {}
  virtual void on_buffer_end(const BufferInfo&) {}
  virtual void on_problem(const Problem&) {}
};

struct DecodeOptions {
  // Buffers longer than this are refused as corrupt (Mono writes ~64 KiB; an event never needs more
  // than a few MiB). Bounds the reader's memory on hostile input.
  uint32_t max_buffer_length = 64u << 20;
  // Stop at the first problem instead of skipping to the next buffer.
  bool stop_at_first_problem = false;
  // Checked at every buffer and every 4096 events: once exceeded, one problem (the limit, at the
  // offset reached) ends decoding. nullptr: no budget (the agent's own decoding, tests).
  MemoryBudget* budget = nullptr;
};

struct DecodeSummary {
  bool header_ok = false;
  uint64_t buffers = 0;
  uint64_t events = 0;
  uint64_t bytes = 0;  // uncompressed bytes consumed
  uint64_t problems = 0;
};

// Decodes the whole input, calling the visitor for the header, each buffer, each event and each
// problem. Never throws for malformed input.
DecodeSummary decode(Input& input, Visitor& visitor, const DecodeOptions& options = {});

// Decodes the events of one buffer held in memory (`data`, header.length bytes). `data_offset` is
// the file offset of data[0], used in problems. Returns false after reporting a problem.
class BufferDecoder {
 public:
  BufferDecoder(const BufferHeader& header, const uint8_t* data, uint64_t data_offset);
  // Decodes the next event into `event`. Returns false at the end of the buffer (problem empty) or
  // on malformed data (problem set; the buffer's remaining bytes cannot be trusted).
  bool next(Event& event, std::string& problem, uint64_t& event_offset);
  // Offset of the first byte not yet decoded, and of the field where the last problem was found.
  uint64_t position() const { return data_offset_ + static_cast<uint64_t>(p_ - data_); }
  uint64_t problem_offset() const { return problem_offset_; }
  // The delta chains after the last decoded event (what the next event's deltas start from).
  uint64_t last_time() const { return last_time_; }
  int64_t last_method() const { return last_method_; }

 private:
  friend DecodeSummary decode(Input&, Visitor&, const DecodeOptions&);
  bool next_event(Event& event, std::string& problem, uint64_t& event_offset);  // next(), inlined
  bool fail(const char* what);
  bool leb_failed(LebStatus status);
  bool byte(uint8_t& out);
  bool uleb(uint64_t& out);
  bool sleb(int64_t& out);
  bool time(uint64_t& out);
  bool ptr(uint64_t& out);
  bool obj(uint64_t& out);
  bool method(uint64_t& out);
  bool string(std::string& out);
  bool count(uint64_t& out, size_t min_item_size);
  bool backtrace(std::vector<uint64_t>& out);
  bool event_body(uint8_t event_byte, Event& event);
  void start_event(Event& event, EventKind kind);

  const uint8_t* data_;
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t data_offset_;
  uint64_t last_time_;
  int64_t ptr_base_;
  int64_t obj_base_;
  int64_t last_method_;
  bool lists_used_ = true;  // the previous event may have filled a string or list of the Event
  uint64_t problem_offset_ = 0;
  const char* problem_ = nullptr;
  std::string detail_;
};

// Parses the file header from `bytes` (the fixed part and the three strings). Returns false with a
// problem message on malformed or unsupported headers.
bool parse_file_header(Input& input, FileHeader& header, Problem& problem);

}  // namespace mlpd
