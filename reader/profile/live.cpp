#include "mlpd/live.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"

namespace mlpd::profile {

namespace {

constexpr uint32_t kMaxBufferLength = 64u << 20;  // as DecodeOptions::max_buffer_length
constexpr size_t kInflateChunk = 64 * 1024;
constexpr size_t kMaxHeader = 1 << 20;  // a file header longer than this is not waited for

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

namespace {

ssize_t pread_full(int fd, uint8_t* dst, size_t n, uint64_t at) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

class LimitedInput final : public Input {
 public:
  LimitedInput(std::unique_ptr<Input> in, uint64_t end) : in_(std::move(in)), end_(end) {}
  size_t read(void* dst, size_t n) override {
    const size_t got = in_->read(dst, clip(n));
    offset_ = in_->offset();
    return got;
  }
  std::string error() const override { return in_->error(); }
  bool compressed() const override { return in_->compressed(); }
  const uint8_t* borrow(size_t n) override {
    if (clip(n) < n) return nullptr;
    const uint8_t* p = in_->borrow(n);
    offset_ = in_->offset();
    return p;
  }
  bool map() override { return in_->map(); }
  const uint8_t* lend(size_t n) override {
    if (clip(n) < n) return nullptr;
    const uint8_t* p = in_->lend(n);
    offset_ = in_->offset();
    return p;
  }
  void release(uint64_t offset) override { in_->release(offset); }

 private:
  size_t clip(size_t n) const { return static_cast<size_t>(std::min<uint64_t>(n, end_ - std::min(end_, in_->offset()))); }
  std::unique_ptr<Input> in_;
  uint64_t end_;
};

}  // namespace

std::unique_ptr<Input> limited_input(std::unique_ptr<Input> in, uint64_t end) {
  return std::make_unique<LimitedInput>(std::move(in), end);
}

EntryState find_entry(int fd, uint64_t size, FileEntry& e) {
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(size, kMaxHeader)));
  const ssize_t got = pread_full(fd, head.data(), head.size(), 0);
  if (got < 2) return EntryState::wait;
  head.resize(static_cast<size_t>(got));
  if (head[0] == 0x1f && head[1] == 0x8b) {  // the header's pid: from the start, inflated
    e.gzip = true;
    LiveFile lf;
    IncrementalBuilder scratch;
    lf.add(head.data(), std::min<size_t>(head.size(), GrowingFile::kGzipChunk));
    lf.feed(scratch, true);
    e.pid = lf.writer_pid();
    return lf.header_seen() ? EntryState::ok : !lf.error().empty() || head.size() >= kMaxHeader ? EntryState::bad
                                                                                              : EntryState::wait;
  }
  auto in = Input::from_memory(head.data(), head.size());
  FileHeader h;
  Problem problem;
  if (!parse_file_header(*in, h, problem))
    return problem.message.rfind("truncated", 0) == 0 && head.size() < kMaxHeader ? EntryState::wait : EntryState::bad;
  e.pid = h.pid;
  e.header.assign(head.begin(), head.begin() + static_cast<ptrdiff_t>(in->offset()));
  uint64_t pos = e.header.size(), n = 0;
  uint8_t bh[format::kBufferHeaderSize];
  while (pos + sizeof bh <= size) {
    if (pread_full(fd, bh, sizeof bh, pos) != static_cast<ssize_t>(sizeof bh)) break;
    const uint32_t length = buffer_header_length(bh);
    if (buffer_header_id(bh) != format::kBufferId || length > kMaxBufferLength) break;  // the live stream reports it
    if (pos + sizeof bh + length > size) break;
    pos += sizeof bh + length;
    ++n;
  }
  e.offset = pos;
  e.buffers = n;
  return EntryState::ok;
}

bool writer_alive(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (stat && std::getline(stat, line)) {
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && (line[close + 2] == 'Z' || line[close + 2] == 'X'))
      return false;
  }
  return true;
}

GrowingFile::GrowingFile(int fd, std::string path, bool regular)
    : fd_(fd), path_(std::move(path)), regular_(regular), buf_(kChunk) {}

GrowingFile::~GrowingFile() = default;

bool GrowingFile::enter(bool from_start, double poll, double give_up) {
  if (!regular_ || from_start) return true;
  const Clock::time_point t_start = Clock::now();
  FileEntry entry;
  EntryState es = EntryState::wait;
  for (;;) {
    struct stat now{};
    if (fstat(fd_, &now) != 0) break;
    es = find_entry(fd_, static_cast<uint64_t>(now.st_size), entry);
    if (es != EntryState::wait || std::chrono::duration<double>(Clock::now() - t_start).count() > give_up) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll));
  }
  if (es == EntryState::ok && entry.gzip && writer_alive(entry.pid)) {
    struct stat now{};
    if (fstat(fd_, &now) == 0 && now.st_size > 0) {
      names_until_raw_ = static_cast<uint64_t>(now.st_size);
      counting_from_start_ = false;
    }
  } else if (es == EntryState::ok && writer_alive(entry.pid) && entry.offset > entry.header.size()) {
    live_.add(entry.header.data(), entry.header.size());
    live_.feed(builder_);
    if (!live_.skip_to(entry.offset, entry.buffers) ||
        ::lseek(fd_, static_cast<off_t>(entry.offset), SEEK_SET) != static_cast<off_t>(entry.offset)) {
      error_ = "cannot start at offset " + std::to_string(entry.offset);
      return false;
    }
    hist_end_ = entry.offset;
    skipped_ = entry.offset - entry.header.size();
    counting_from_start_ = false;
  }
  return true;
}

bool GrowingFile::read_start_in_parallel(unsigned jobs) {
  if (!counting_from_start_ || !regular_ || jobs <= 1) return true;
  struct stat now{};
  FileEntry entry;
  std::string error;
  std::unique_ptr<Input> in;
  if (fstat(fd_, &now) != 0 || find_entry(fd_, static_cast<uint64_t>(now.st_size), entry) != EntryState::ok ||
      entry.gzip || entry.buffers == 0 || !(in = Input::open(path_, error)))
    return true;
  LimitedInput whole(std::move(in), entry.offset);
  if (!builder_.feed_whole(whole, jobs)) return true;
  live_.add(entry.header.data(), entry.header.size());
  live_.feed(builder_);
  if (!live_.skip_to(entry.offset, entry.buffers) ||
      ::lseek(fd_, static_cast<off_t>(entry.offset), SEEK_SET) != static_cast<off_t>(entry.offset)) {
    error_ = "cannot go on at offset " + std::to_string(entry.offset);
    return false;
  }
  raw_ = entry.offset;
  return true;
}

void GrowingFile::feed(LiveFile& lf, bool names_only) {
  const uint64_t before = builder_.events();
  lf.feed(builder_, names_only);
  if (names_only) named_events_ += builder_.events() - before;
  held_max_ = std::max(held_max_, lf.held());
}

bool GrowingFile::read_live(Clock::time_point deadline) {
  eof_ = false;
  for (;;) {
    const size_t want = live_.compressed() ? kGzipChunk : kChunk;
    const ssize_t r = ::read(fd_, buf_.data(), want);
    if (r > 0) {
      raw_ += static_cast<uint64_t>(r);
      live_.add(buf_.data(), static_cast<size_t>(r));  // corrupt compressed data: live().error(), shown at the end
      feed(live_, raw_ <= names_until_raw_);
      if (Clock::now() >= deadline) return true;
      continue;
    }
    if (r == 0 || errno == EAGAIN) {
      eof_ = true;
      return true;
    }
    if (errno == EINTR) continue;
    return false;
  }
}

bool GrowingFile::read_history(Clock::time_point deadline) {
  while (hist_pos_ < hist_end_) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, hist_end_ - hist_pos_));
    const ssize_t r = pread_full(fd_, buf_.data(), want, hist_pos_);
    if (r <= 0) return false;
    hist_pos_ += static_cast<uint64_t>(r);
    hist_raw_ += static_cast<uint64_t>(r);
    hist_.add(buf_.data(), static_cast<size_t>(r));
    feed(hist_, true);
    if (Clock::now() >= deadline) break;
  }
  return true;
}

uint64_t GrowingFile::counted_events() const {
  return builder_.events() - std::min(builder_.events(), named_events_);
}

uint64_t GrowingFile::bytes_decoded() const {
  return live_.fed() - skipped_ + (hist_.fed() ? hist_.fed() - (hist_end_ - skipped_) : 0);
}

}  // namespace mlpd::profile
