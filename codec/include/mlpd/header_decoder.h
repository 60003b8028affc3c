// Decoders of the two headers encoder.h writes: the 48-byte buffer header and the fixed part of the
// file header (format.h's kBufferHeaderSize and kFileHeaderFixedSize bytes, little-endian). They only
// take the fields apart; what a field's value means (a wrong id, an unsupported version, a length past
// a limit) is the caller's to judge, since the reader, `mlpd top` and the live file reader each word
// it their own way. The file header's strings (args, arch, os) follow the fixed part, each as a 4-byte
// length and that many bytes ending in NUL: the reader reads them from its Input (decoder.h's
// parse_file_header).
#pragma once

#include <cstdint>

#include "mlpd/event.h"
#include "mlpd/format.h"

namespace mlpd {

namespace header_detail {
// The n-byte little-endian value at p (n <= 8).
inline uint64_t le(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
}  // namespace header_detail

// The id of the buffer header at p (format::kBufferId when it is one).
inline uint32_t buffer_header_id(const uint8_t* p) { return static_cast<uint32_t>(header_detail::le(p, 4)); }
// The length of its event data.
inline uint32_t buffer_header_length(const uint8_t* p) { return static_cast<uint32_t>(header_detail::le(p + 4, 4)); }

// The 4-byte length before each of the file header's strings.
inline uint32_t header_string_length(const uint8_t* p) { return static_cast<uint32_t>(header_detail::le(p, 4)); }

// The buffer header at p (format::kBufferHeaderSize bytes); returns its id.
inline uint32_t decode_buffer_header(const uint8_t* p, BufferHeader& h) {
  h.length = buffer_header_length(p);
  h.time_base = header_detail::le(p + 8, 8);
  h.ptr_base = static_cast<int64_t>(header_detail::le(p + 16, 8));
  h.obj_base = static_cast<int64_t>(header_detail::le(p + 24, 8));
  h.thread_id = header_detail::le(p + 32, 8);
  h.method_base = static_cast<int64_t>(header_detail::le(p + 40, 8));
  return buffer_header_id(p);
}

// The fixed part of the file header at p (format::kFileHeaderFixedSize bytes): versions, pointer
// size, start times, timer overhead, flags, pid and port; returns its id (format::kFileId when it is
// one). args, arch and os are left as they are.
inline uint32_t decode_file_header_fixed(const uint8_t* p, FileHeader& h) {
  h.major = p[4];
  h.minor = p[5];
  h.data_version = p[6];
  h.ptr_size = p[7];
  h.startup_ms = header_detail::le(p + 8, 8);
  h.startup_ns = header_detail::le(p + 16, 8);
  h.timer_overhead = static_cast<int32_t>(header_detail::le(p + 24, 4));
  h.flags = static_cast<int32_t>(header_detail::le(p + 28, 4));
  h.pid = static_cast<int32_t>(header_detail::le(p + 32, 4));
  h.port = static_cast<uint16_t>(header_detail::le(p + 36, 2));
  return static_cast<uint32_t>(header_detail::le(p, 4));
}

}  // namespace mlpd
