// A file that a running agent is still writing, read as it grows (mlpd top): add() takes the bytes
// that came since the last call (plain, or gzip as the agent's `zip` writes it: a member per flush
// round), feed() hands every buffer now complete to an IncrementalBuilder and keeps only the partly
// written one, so memory stays at about one buffer however long the file gets, and no byte is
// decoded twice. finish() ends the input: a cut buffer left is fed as it is, so the model reports
// it as build_profile() reports any truncation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <zlib.h>

#include "mlpd/profile.h"

namespace mlpd::profile {

class LiveFile {
 public:
  LiveFile();
  ~LiveFile();
  LiveFile(const LiveFile&) = delete;
  LiveFile& operator=(const LiveFile&) = delete;

  // The next raw bytes of the file. False (with error()) when compressed data is corrupt; later
  // bytes are then ignored.
  bool add(const uint8_t* data, size_t size);
  // Feeds the builder every buffer complete so far (and, the first time, sees the file header).
  // A file or buffer header that cannot be right (not an mlpd file, a bad buffer id, an impossible
  // length) is fed as it is, so that the builder reports it, and then nothing more is read.
  // With `names_only`, what is fed only names things (IncrementalBuilder::feed): mlpd top's reading
  // of the part of a file written before it started.
  void feed(IncrementalBuilder& builder, bool names_only = false);
  // A plain file read from the middle: after the file header has been fed, the bytes added next are
  // those from file offset `offset` on, which starts the file's buffer number `buffers` (the start
  // of a buffer). False (and nothing changes) for a gzip file, before the header or with bytes held.
  bool skip_to(uint64_t offset, uint64_t buffers);
  // The end of the input: complete buffers, then whatever is left (a cut buffer: the builder gets the
  // decoder's truncation problem). A gzip stream cut inside a member (a writer killed mid-round) ends
  // where the last whole buffer before the cut ends, as the reader treats such a file (cut_member()).
  void finish(IncrementalBuilder& builder);

  bool header_seen() const { return header_len_ > 0; }
  int writer_pid() const { return pid_; }  // from the header; 0 until it has been read
  bool compressed() const { return gzip_; }
  bool cut_member() const { return cut_member_; }  // after finish(): the gzip data ended inside a member
  const std::string& error() const { return error_; }
  uint64_t held() const { return tail_.size(); }  // bytes kept for a buffer not yet complete
  uint64_t fed() const { return offset_; }        // uncompressed bytes handed to the builder (header included)

 private:
  void feed_part(IncrementalBuilder& builder, size_t body_len, uint64_t buffers);
  void take_header();

  bool sniffed_ = false, gzip_ = false, stopped_ = false, cut_member_ = false;
  bool in_member_ = false;
  bool names_only_ = false;  // the last feed()'s  // gzip: inside a member (its trailer not yet seen)
  z_stream zs_{};
  std::string error_;
  std::vector<uint8_t> pending_raw_;  // the first byte of a file, until the gzip magic can be told
  std::vector<uint8_t> head_;         // the file header's bytes, once complete
  size_t header_len_ = 0;
  int pid_ = 0;
  std::vector<uint8_t> tail_;  // uncompressed bytes after the last buffer fed (the header too, at first)
  uint64_t offset_ = 0;        // file offset of tail_[0]
  uint64_t buffers_ = 0;       // buffers fed
};

}  // namespace mlpd::profile
