// A file that a running agent is still writing, read as it grows (mlpd top): add() takes the bytes
// that came since the last call (plain, or gzip as the agent's `zip` writes it: a member per flush
// round), feed() hands every buffer now complete to an IncrementalBuilder and keeps only the partly
// written one, so memory stays at about one buffer however long the file gets, and no byte is
// decoded twice. finish() ends the input: a cut buffer left is fed as it is, so the model reports
// it as build_profile() reports any truncation.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <zlib.h>

#include "mlpd/input.h"
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

// Where a plain file that is being written is entered: the file header's bytes, and the first buffer
// boundary at or before `size` reached by walking the buffer headers (their lengths, not decoding),
// with the number of buffers before it. A gzip file (gzip set) has only its writer's pid.
struct FileEntry {
  std::vector<uint8_t> header;
  int pid = 0;
  bool gzip = false;
  uint64_t offset = 0, buffers = 0;
};
enum class EntryState { ok, wait, bad };  // wait: the header is not all written yet
// Reads the entry of the file open as `fd` whose size is `size` (pread: the file position is kept).
// The walk stops at a bad buffer header or a buffer not all written (the live stream reports the
// former).
EntryState find_entry(int fd, uint64_t size, FileEntry& e);

// `in` (a plain file) up to `end`: reads, borrows and lends stop there; the mapping (Input::map) is
// the file's. mlpd top's first read of a file counted from its start, up to its last whole buffer.
std::unique_ptr<Input> limited_input(std::unique_ptr<Input> in, uint64_t end);

// The process `pid` runs (neither gone nor a zombie); false for pid <= 0.
bool writer_alive(int pid);

// A file that a running agent writes, read as it grows into one model (mlpd top): where counting
// starts, the part written since (the live stream, read with read(2) from where it is entered), and the
// part written before (the history, read with pread(2) only for its names, a slice per call). The
// caller decides when to read and shows snapshot()s; memory stays bounded by the model (reads are of
// at most one chunk, LiveFile holds back only a partly written buffer).
//
// Where counting starts (enter()): by default where the file is when reading starts. A plain file is
// entered at the first buffer boundary at or after its size then (find_entry); the part before it is
// the history. A gzip file cannot be entered in the middle: what was written before is decoded for
// its names only. With `from_start`, on a file whose writer has already exited, or on a pipe, the
// whole file counts.
class GrowingFile {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kChunk = 1 << 20;       // plain bytes read (and decoded) at a time
  static constexpr size_t kGzipChunk = 64 << 10;  // compressed bytes at a time: what one read inflates to stays small

  // `fd`: the file open for reading (its position is where the live stream starts: 0); `path`: its
  // name, opened again for the parallel first read; `regular`: a plain file (else a pipe: read as it
  // comes, from its start).
  GrowingFile(int fd, std::string path, bool regular);
  ~GrowingFile();
  GrowingFile(const GrowingFile&) = delete;
  GrowingFile& operator=(const GrowingFile&) = delete;

  // Where counting starts (above). Waits for the file header up to `give_up` seconds, looking again
  // every `poll` seconds. False (error() says why) when the place found cannot be started at.
  bool enter(bool from_start, double poll, double give_up = 30);
  // A plain file counted from its start: its whole buffers now are read at once on `jobs` threads
  // (IncrementalBuilder::feed_whole), the live stream goes on after them. Does nothing unless that
  // applies (a pipe, gzip, counting from the middle, jobs < 2...). False (error()) when the live stream
  // cannot go on after them.
  bool read_start_in_parallel(unsigned jobs);
  // What the writer added since the last call, a chunk at a time, until the end of what is written
  // (at_end()) or `deadline`. False on a read error (errno says which).
  bool read_live(Clock::time_point deadline);
  // The history (for names), a chunk at a time, until it is all read or `deadline`. False on a read
  // error (errno).
  bool read_history(Clock::time_point deadline);
  // The end of the input (the writer is done): a buffer still cut is a problem of the model.
  void finish() { live_.finish(builder_); }
  // The model of everything read so far.
  void snapshot(Profile& out) { builder_.snapshot(out); }

  bool at_end() const { return eof_; }  // the last read_live() reached the end of what is written
  bool counting_from_start() const { return counting_from_start_; }
  bool history_left() const { return hist_pos_ < hist_end_; }
  uint64_t history_read() const { return hist_pos_; }  // of history_size() bytes
  uint64_t history_size() const { return hist_end_; }
  uint64_t counted_events() const;  // events decoded and counted (not those read only for names)
  const LiveFile& live() const { return live_; }
  const std::string& error() const { return error_; }
  // --stats: the bytes read from the file, the uncompressed bytes decoded, the most held back.
  uint64_t bytes_read() const { return raw_ + hist_raw_; }
  uint64_t bytes_decoded() const;
  uint64_t held_max() const { return held_max_; }

 private:
  void feed(LiveFile& lf, bool names_only);

  const int fd_;
  const std::string path_;
  const bool regular_;
  LiveFile live_, hist_;
  IncrementalBuilder builder_;
  std::string error_;
  std::vector<uint8_t> buf_;
  uint64_t hist_end_ = 0, hist_pos_ = 0;  // a plain file entered in the middle: its history [0, hist_end)
  uint64_t skipped_ = 0;                  // the bytes of the live stream's jump (hist_end - header)
  uint64_t names_until_raw_ = 0;          // gzip: raw bytes up to here are read for their names only
  bool counting_from_start_ = true;
  uint64_t raw_ = 0, hist_raw_ = 0, held_max_ = 0;
  uint64_t named_events_ = 0;  // events decoded only for their names (not counted)
  bool eof_ = false;
};

}  // namespace mlpd::profile
