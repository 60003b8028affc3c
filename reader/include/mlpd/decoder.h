// Streaming decoder of mlpd files: header, then buffer by buffer, every v17 event, validated as it
// goes. Memory stays bounded by the largest buffer (at most DecodeOptions::max_buffer_length), not
// by the file size. Problems are reported with the byte offset (in the uncompressed stream) and the
// buffer index; after a problem inside a buffer the rest of that buffer is skipped (the format says
// later values need earlier ones) and decoding continues with the next buffer; a problem in a file
// or buffer header, or a truncation, ends decoding. The events of each buffer are decoded by the
// codec's BufferDecoder (mlpd/buffer_decoder.h, included here), which the agent uses too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/buffer_decoder.h"
#include "mlpd/event.h"
#include "mlpd/input.h"

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
  // Not an error: the file was cut where its writer was stopped, inside the last gzip member (a killed
  // `zip` run). Everything before the cut has been delivered; the message names both offsets.
  virtual void on_warning(const Problem&) {}
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
  bool truncated = false;  // a gzip input cut by a killed writer (Input::truncation_warning; on_warning was called)
};

// Decodes the whole input, calling the visitor for the header, each buffer, each event and each
// problem. Never throws for malformed input.
DecodeSummary decode(Input& input, Visitor& visitor, const DecodeOptions& options = {});

// Parses the file header from `bytes` (the fixed part and the three strings). Returns false with a
// problem message on malformed or unsupported headers.
bool parse_file_header(Input& input, FileHeader& header, Problem& problem);

}  // namespace mlpd
