#include "mlpd/live.h"

#include <algorithm>
#include <cstring>

#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

namespace mlpd::profile {

namespace {

constexpr uint32_t kMaxBufferLength = 64u << 20;  // as DecodeOptions::max_buffer_length
constexpr size_t kInflateChunk = 64 * 1024;

// The file header followed by a stretch of the file's buffers, with the file's offsets: the header
// is read at (body_offset - its length), so the buffers are where they are in the file.
class PartInput final : public Input {
 public:
  PartInput(const uint8_t* head, size_t head_len, const uint8_t* body, size_t body_len, uint64_t body_offset)
      : head_(head), head_len_(head_len), body_(body), body_len_(body_len) {
    offset_ = body_offset - head_len;
  }
  size_t read(void* dst, size_t n) override {
    auto* out = static_cast<uint8_t*>(dst);
    size_t got = 0;
    while (got < n && pos_ < head_len_ + body_len_) {
      const bool in_head = pos_ < head_len_;
      const uint8_t* src = in_head ? head_ + pos_ : body_ + (pos_ - head_len_);
      const size_t left = in_head ? head_len_ - pos_ : head_len_ + body_len_ - pos_;
      const size_t k = std::min(n - got, left);
      std::memcpy(out + got, src, k);
      got += k;
      pos_ += k;
    }
    offset_ += got;
    return got;
  }
  std::string error() const override { return {}; }
  bool compressed() const override { return false; }

 private:
  const uint8_t* head_;
  size_t head_len_;
  const uint8_t* body_;
  size_t body_len_;
  size_t pos_ = 0;
};

}  // namespace

LiveFile::LiveFile() = default;

LiveFile::~LiveFile() {
  if (gzip_) inflateEnd(&zs_);
}

bool LiveFile::add(const uint8_t* data, size_t size) {
  if (stopped_ || size == 0) return error_.empty();
  if (!sniffed_) {
    pending_raw_.insert(pending_raw_.end(), data, data + size);
    if (pending_raw_.size() < 2) return true;
    sniffed_ = true;
    gzip_ = pending_raw_[0] == 0x1f && pending_raw_[1] == 0x8b;
    if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
      gzip_ = false;
      error_ = "cannot set up decompression";
      stopped_ = true;
      return false;
    }
    std::vector<uint8_t> first;
    first.swap(pending_raw_);
    return add(first.data(), first.size());
  }
  if (!gzip_) {
    tail_.insert(tail_.end(), data, data + size);
    return true;
  }
  zs_.next_in = const_cast<Bytef*>(data);
  zs_.avail_in = static_cast<uInt>(size);
  for (;;) {
    const size_t at = tail_.size();
    tail_.resize(at + kInflateChunk);
    zs_.next_out = tail_.data() + at;
    zs_.avail_out = static_cast<uInt>(kInflateChunk);
    if (zs_.avail_in > 0) in_member_ = true;
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const size_t produced = kInflateChunk - zs_.avail_out;
    tail_.resize(at + produced);
    if (rc == Z_STREAM_END) {
      in_member_ = false;
      inflateReset(&zs_);  // another member may follow (one per flush round)
      if (zs_.avail_in == 0) break;
      continue;
    }
    if (rc == Z_OK) {
      // A full output chunk may leave output pending inside zlib: go on until it stops short.
      if (zs_.avail_in == 0 && produced < kInflateChunk) break;
      continue;
    }
    if (rc == Z_BUF_ERROR) break;  // no progress possible: needs more input
    error_ = std::string("corrupt compressed data") + (zs_.msg ? std::string(": ") + zs_.msg : std::string()) +
             " (at compressed byte " + std::to_string(zs_.total_in) + " of its gzip member)";
    stopped_ = true;
    tail_.clear();
    return false;
  }
  return true;
}

void LiveFile::take_header() {
  PartInput in(nullptr, 0, tail_.data(), tail_.size(), 0);
  FileHeader h;
  Problem problem;
  if (!parse_file_header(in, h, problem)) return;  // not all there yet, or wrong: feed() and finish() tell
  header_len_ = static_cast<size_t>(in.offset());
  head_.assign(tail_.begin(), tail_.begin() + static_cast<ptrdiff_t>(header_len_));
  pid_ = h.pid;
  tail_.erase(tail_.begin(), tail_.begin() + static_cast<ptrdiff_t>(header_len_));
  offset_ = header_len_;
}

bool LiveFile::skip_to(uint64_t offset, uint64_t buffers) {
  if (!header_seen() || gzip_ || stopped_ || !tail_.empty() || offset < offset_) return false;
  offset_ = offset;
  buffers_ = buffers;
  return true;
}

void LiveFile::feed_part(IncrementalBuilder& builder, size_t body_len, uint64_t buffers) {
  PartInput in(head_.data(), header_len_, tail_.data(), body_len, offset_);
  builder.feed(in, buffers_, names_only_);
  offset_ += body_len;
  buffers_ += buffers;
  tail_.erase(tail_.begin(), tail_.begin() + static_cast<ptrdiff_t>(body_len));
}

void LiveFile::feed(IncrementalBuilder& builder, bool names_only) {
  names_only_ = names_only;
  if (stopped_) return;
  if (!header_seen()) {
    take_header();
    if (!header_seen()) {
      // Wrong rather than short (a complete fixed part that is not an mlpd header, say): the builder
      // reports it, and that is the end.
      PartInput probe(nullptr, 0, tail_.data(), tail_.size(), 0);
      FileHeader h;
      Problem problem;
      if (!parse_file_header(probe, h, problem) && problem.message.rfind("truncated", 0) != 0) {
        PartInput all(nullptr, 0, tail_.data(), tail_.size(), 0);
        builder.feed(all, 0);
        stopped_ = true;
        tail_.clear();
      }
      return;
    }
    feed_part(builder, 0, 0);  // the header alone: the model knows the file from now on
  }
  size_t pos = 0;
  uint64_t count = 0;
  bool bad = false;
  while (tail_.size() - pos >= format::kBufferHeaderSize) {
    const uint8_t* h = tail_.data() + pos;
    const uint32_t length = buffer_header_length(h);
    if (buffer_header_id(h) != format::kBufferId || length > kMaxBufferLength) {
      bad = true;
      break;
    }
    if (tail_.size() - pos - format::kBufferHeaderSize < length) break;
    pos += format::kBufferHeaderSize + length;
    ++count;
  }
  if (count) feed_part(builder, pos, count);
  if (bad) {
    feed_part(builder, tail_.size(), 0);  // the decoder reports the bad buffer header
    stopped_ = true;
  }
}

void LiveFile::finish(IncrementalBuilder& builder) {
  if (stopped_) return;
  if (!sniffed_) tail_.swap(pending_raw_);  // a file of one byte
  feed(builder, names_only_);
  if (stopped_) return;
  stopped_ = true;
  if (!header_seen()) {
    PartInput all(nullptr, 0, tail_.data(), tail_.size(), 0);
    builder.feed(all, 0);  // the decoder reports the cut header
    tail_.clear();
    return;
  }
  if (gzip_ && in_member_) {
    cut_member_ = true;  // a killed writer's last member: the file ends with the last whole buffer
    tail_.clear();
    return;
  }
  if (!tail_.empty()) feed_part(builder, tail_.size(), 0);
}

}  // namespace mlpd::profile
