// Byte input for the reader: a file or standard input ("-"), plain or gzip-compressed (zlib detects
// the gzip magic and otherwise passes bytes through). Offsets are positions in the uncompressed
// stream, which is what every error message reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mlpd {

class Input {
 public:
  // Opens `path` ("-" = stdin). On failure returns nullptr and sets `error` to a one-line reason.
  static std::unique_ptr<Input> open(const std::string& path, std::string& error);
  // Reads from an in-memory copy of `data` (tests, fuzzing). Gzip input is decompressed too.
  static std::unique_ptr<Input> from_memory(const void* data, size_t size);

  virtual ~Input() = default;
  // Reads up to `n` bytes; returns how many were read (fewer only at the end of input or on error).
  virtual size_t read(void* dst, size_t n) = 0;
  // Empty, or a one-line description of a read or decompression error (e.g. corrupt gzip data).
  virtual std::string error() const = 0;
  // True when the input was gzip-compressed.
  virtual bool compressed() const = 0;
  // The next `n` bytes without a copy, consumed, when the input can lend them (plain input: its own read
  // buffer); nullptr, with nothing consumed, otherwise (then read() them). Valid until the next read or
  // borrow.
  virtual const uint8_t* borrow(size_t n) {
    (void)n;
    return nullptr;
  }
  // Reads a plain regular file through a memory mapping from here on, so that lend() can give its bytes
  // without a copy (the parallel profile build); false, nothing changed, when it cannot (gzip, a pipe,
  // standard input, mmap refused). Bytes the file gains after the call are read as before.
  virtual bool map() { return false; }
  // With map(): the next `n` bytes without a copy, consumed, valid as long as the Input lives; nullptr,
  // nothing consumed, when they are not all in the mapping (then read() them).
  virtual const uint8_t* lend(size_t n) {
    (void)n;
    return nullptr;
  }
  // With map(): the bytes before `offset` will not be looked at again; their pages leave the process
  // (the mapping's resident pages count in its RSS).
  virtual void release(uint64_t offset) { (void)offset; }
  // True when a gzip input ended inside a member (no trailer): what a writer killed while writing leaves
  // behind (the agent ends a member every flush round). The bytes inflated before the cut have been read.
  virtual bool cut_member() const { return false; }
  // With cut_member(): where the last complete member ended, in the uncompressed stream, and where the cut
  // member starts in the compressed file.
  virtual uint64_t complete_offset() const { return 0; }
  virtual uint64_t cut_member_start() const { return 0; }
  // Empty, or, when a gzip input has ended short of what a read asked for, the one-line description of
  // that cut as a killed writer leaves it: inside a member (cut_member()), or after a complete member
  // (the agent writes a flush round of more than 32 MiB through member by member, so a kill inside one
  // leaves a complete gzip stream whose last mlpd buffer is cut). The decoder reports it as a warning.
  virtual std::string truncation_warning() const { return {}; }
  uint64_t offset() const { return offset_; }

 protected:
  uint64_t offset_ = 0;
};

}  // namespace mlpd
