// Encoding of mlpd file headers and buffers from the decoded form (event.h). This is the general,
// allocation-using encoder used by tools and tests; the agent's per-thread hot path writes the same
// bytes through the same primitives (leb128.h) into preallocated memory.
#pragma once

#include <cstdint>
#include <vector>

#include "mlpd/event.h"

namespace mlpd {

// Appends the file header (fixed part, then args/arch/os as length-prefixed NUL-terminated strings).
void encode_file_header(const FileHeader& header, std::vector<uint8_t>& out);

// Appends the 48-byte header of a buffer of header.length bytes.
void encode_buffer_header(const BufferHeader& header, std::vector<uint8_t>& out);
// The same 48 bytes (format::kBufferHeaderSize) written at `out`, without allocating (the agent's
// threads, which may run while the world is stopped); returns the end.
uint8_t* encode_buffer_header(const BufferHeader& header, uint8_t* out);

// Builds the events of one buffer. Pointer, object and method bases are taken from the first value of
// each kind written to the buffer -- including NULL, so a NULL first object or method still decodes as
// NULL (Mono's own writer gets this wrong, FORMAT-NOTES section 3).
class BufferEncoder {
 public:
  BufferEncoder(uint64_t thread_id, uint64_t time_base) { reset(thread_id, time_base); }

  void reset(uint64_t thread_id, uint64_t time_base);

  // Appends one event. Fields the event's kind does not use are ignored. Object addresses lose their
  // low 3 bits (the format stores addr >> 3); a string must not contain NUL bytes (it would end early).
  void add(const Event& event);

  bool empty() const { return data_.empty(); }
  size_t data_size() const { return data_.size(); }
  BufferHeader header() const;

  // Appends the 48-byte buffer header and the event data to `out`.
  void finish_into(std::vector<uint8_t>& out) const;

 private:
  void put_byte(uint8_t b) { data_.push_back(b); }
  void put_uleb(uint64_t v);
  void put_sleb(int64_t v);
  void put_time(uint64_t t);
  void put_ptr(uint64_t p);
  void put_obj(uint64_t o);
  void put_method(uint64_t m);
  void put_string(const std::string& s);
  void put_backtrace(const std::vector<uint64_t>& frames);
  void put_counter_value(const CounterValue& v);

  std::vector<uint8_t> data_;
  uint64_t thread_id_ = 0;
  uint64_t time_base_ = 0;
  uint64_t last_time_ = 0;
  int64_t ptr_base_ = 0;
  int64_t obj_base_ = 0;
  int64_t method_base_ = 0;
  int64_t last_method_ = 0;
  bool has_ptr_base_ = false;
  bool has_obj_base_ = false;
  bool has_method_base_ = false;
};

// Little-endian fixed-width stores shared by the header encoders.
inline void put_le(std::vector<uint8_t>& out, uint64_t v, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace mlpd
