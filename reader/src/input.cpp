#include "mlpd/input.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace mlpd {

namespace {

// A mapped file cut shorter by another process while it is read: touching a page past its new end
// raises SIGBUS. The reader then ends with a clear message and exit code 1 rather than a crash.
void on_sigbus(int) {
  static const char msg[] =
      "mlpd: the input file was cut shorter by another process while it was read (SIGBUS on its mapping)\n";
  ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

// Installs on_sigbus unless the process handles SIGBUS itself.
void catch_sigbus() {
  struct sigaction old{};
  if (sigaction(SIGBUS, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
  struct sigaction sa{};
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

// Raw bytes: a file descriptor or a copy in memory.
class RawSource {
 public:
  virtual ~RawSource() = default;
  // Reads up to n bytes; 0 at the end; -1 on error (errno set).
  virtual ssize_t read(uint8_t* dst, size_t n) = 0;
  // How much it is worth buffering at once.
  virtual size_t read_size() const { return 1u << 18; }
  // A file descriptor that can be mapped (-1: none), and moving its position (false: cannot).
  virtual int fd() const { return -1; }
  virtual bool seek(uint64_t) { return false; }
};

class FdSource final : public RawSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  ~FdSource() override { close(fd_); }
  int fd() const override { return fd_; }
  bool seek(uint64_t at) override { return lseek(fd_, static_cast<off_t>(at), SEEK_SET) == static_cast<off_t>(at); }
  ssize_t read(uint8_t* dst, size_t n) override {
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0 || errno != EINTR) return r;
    }
  }

 private:
  int fd_;
};

class MemorySource final : public RawSource {
 public:
  MemorySource(const void* data, size_t size)
      : data_(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size) {}
  size_t read_size() const override { return std::clamp<size_t>(data_.size(), 1, 1u << 18); }
  ssize_t read(uint8_t* dst, size_t n) override {
    const size_t k = std::min(n, data_.size() - pos_);
    if (k) std::memcpy(dst, data_.data() + pos_, k);
    pos_ += k;
    return static_cast<ssize_t>(k);
  }

 private:
  std::vector<uint8_t> data_;
  size_t pos_ = 0;
};

// Plain bytes pass through; gzip (detected by its magic) is inflated, several members in a row
// included. A gzip stream that ends before its last member's trailer sets error() ("unexpected end
// of compressed data"), so a truncated compressed file is never taken for a complete one, and
// cut_member(): the decoder reports that as a truncation warning, keeping what was read. So does it when
// a complete stream ends inside an mlpd buffer (truncation_warning()).
class StreamInput final : public Input {
 public:
  // The raw buffer is not zero-filled (every byte is read into before use); a memory source gets one
  // of its own size (fuzzing reads many small inputs).
  explicit StreamInput(std::unique_ptr<RawSource> src)
      : src_(std::move(src)), in_size_(src_->read_size()), in_(new uint8_t[in_size_]) {
    fill();
    gzip_ = avail_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof zs_);
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
        error_ = "cannot set up decompression";
        done_ = true;
      }
    }
  }
  ~StreamInput() override {
    if (gzip_) inflateEnd(&zs_);
    if (map_) munmap(const_cast<uint8_t*>(map_), map_size_);
  }

  bool map() override {
    if (map_ || gzip_ || done_) return false;
    const int fd = src_->fd();
    struct stat st{};
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    // The file's position must be where this input's bytes came from (an fd opened at its start).
    const off_t pos = lseek(fd, 0, SEEK_CUR);
    if (pos < 0 || static_cast<uint64_t>(pos) != offset_ + avail_) return false;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size <= offset_ + avail_ || size > SIZE_MAX) return false;
    void* m = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return false;
    catch_sigbus();
    madvise(m, static_cast<size_t>(size), MADV_SEQUENTIAL);
    map_ = static_cast<const uint8_t*>(m);
    map_size_ = static_cast<size_t>(size);
    mapping_ = true;
    pos_ = avail_ = 0;  // the bytes read ahead are in the mapping at offset_
    return true;
  }
  const uint8_t* lend(size_t n) override {
    if (!mapping_ || n > map_size_ - offset_) return nullptr;
    const uint8_t* p = map_ + offset_;
    offset_ += n;
    return p;
  }
  void release(uint64_t offset) override {
    if (!map_) return;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t upto = std::min<uint64_t>(offset, map_size_) / page * page;
    if (upto <= released_) return;
    madvise(const_cast<uint8_t*>(map_) + released_, upto - released_, MADV_DONTNEED);
    released_ = upto;
  }

  size_t read(void* dst, size_t n) override {
    if (!mapping_) return read_stream(dst, n);
    const size_t k = std::min<size_t>(n, map_size_ - offset_);
    std::memcpy(dst, map_ + offset_, k);
    offset_ += k;
    if (k == n) return k;
    leave_map();
    return k + read_stream(static_cast<uint8_t*>(dst) + k, n - k);
  }

  size_t read_stream(void* dst, size_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    while (done < n && !done_) {
      if (avail_ == 0 && !fill()) {
        if (gzip_ && member_open_) {
          error_ = "unexpected end of compressed data";
          cut_ = true;
        }
        done_ = true;
        break;
      }
      if (!gzip_) {
        const size_t k = std::min(n - done, avail_);
        std::memcpy(out + done, in_.get() + pos_, k);
        pos_ += k;
        avail_ -= k;
        done += k;
        continue;
      }
      zs_.next_in = in_.get() + pos_;
      zs_.avail_in = static_cast<uInt>(avail_);
      zs_.next_out = out + done;
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(n - done, 1u << 30));
      const uInt before_out = zs_.avail_out;
      member_open_ = true;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      done += before_out - zs_.avail_out;
      pos_ += avail_ - zs_.avail_in;
      raw_used_ += avail_ - zs_.avail_in;
      avail_ = zs_.avail_in;
      if (rc == Z_STREAM_END) {
        member_open_ = false;
        complete_offset_ = offset_ + done;
        member_start_ = raw_used_;
        inflateReset(&zs_);  // another member may follow; if not, the input simply ends
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        error_ = zs_.msg ? zs_.msg : "invalid compressed data";
        done_ = true;
      }
    }
    offset_ += done;
    return done;
  }
  // Plain input: the bytes in the raw read buffer, topped up (what is left moved to its start) when
  // fewer are there; the decoder then decodes a buffer where read() put it, without a second copy.
  const uint8_t* borrow(size_t n) override {
    if (mapping_) {
      if (const uint8_t* p = lend(n)) return p;
      leave_map();
    }
    if (gzip_ || done_ || n > in_size_) return nullptr;
    if (avail_ < n) {
      if (pos_ && avail_) std::memmove(in_.get(), in_.get() + pos_, avail_);
      pos_ = 0;
      while (avail_ < n) {
        const ssize_t r = src_->read(in_.get() + avail_, in_size_ - avail_);
        if (r <= 0) break;  // the end or an error: read() copies what is left and says which
        avail_ += static_cast<size_t>(r);
      }
      if (avail_ < n) return nullptr;
    }
    const uint8_t* p = in_.get() + pos_;
    pos_ += n;
    avail_ -= n;
    offset_ += n;
    return p;
  }
  std::string error() const override { return error_; }
  bool compressed() const override { return gzip_; }
  bool cut_member() const override { return cut_; }
  uint64_t complete_offset() const override { return complete_offset_; }
  uint64_t cut_member_start() const override { return member_start_; }
  std::string truncation_warning() const override {
    if (cut_) {
      return "truncated: the compressed data ends inside a gzip member that starts at compressed byte " +
             std::to_string(member_start_) + " (the writer was stopped); read up to offset " +
             std::to_string(offset_) + ", the last complete member ends at offset " + std::to_string(complete_offset_);
    }
    // The stream is complete (every member has its trailer) but ended before what was asked for.
    if (gzip_ && done_ && error_.empty()) {
      return "truncated: the compressed data ends after a complete gzip member (compressed byte " +
             std::to_string(raw_used_) + ") inside an mlpd buffer (the writer was stopped inside a flush round " +
             "of more than 32 MiB); read up to offset " + std::to_string(offset_);
    }
    return {};
  }

 private:
  // The mapping is read to its end: what the file has gained since is read from the descriptor (the
  // mapping stays: lent bytes stay valid).
  void leave_map() {
    mapping_ = false;
    pos_ = avail_ = 0;
    if (!src_->seek(map_size_)) {
      error_ = std::string("read error: ") + std::strerror(errno);
      done_ = true;
    }
  }
  // Refills the raw buffer when it is empty; false at the end of input or on a read error.
  bool fill() {
    pos_ = 0;
    const ssize_t r = src_->read(in_.get(), in_size_);
    if (r < 0) {
      error_ = std::string("read error: ") + std::strerror(errno);
      avail_ = 0;
      return false;
    }
    avail_ = static_cast<size_t>(r);
    return r > 0;
  }

  std::unique_ptr<RawSource> src_;
  size_t in_size_;
  std::unique_ptr<uint8_t[]> in_;
  size_t pos_ = 0;
  size_t avail_ = 0;
  bool gzip_ = false;
  bool member_open_ = false;
  bool cut_ = false;
  uint64_t raw_used_ = 0;         // compressed bytes inflated so far
  uint64_t complete_offset_ = 0;  // uncompressed offset at the end of the last complete member
  uint64_t member_start_ = 0;     // compressed offset where the current member starts
  bool done_ = false;
  const uint8_t* map_ = nullptr;  // map(): the file as it was then
  size_t map_size_ = 0;
  bool mapping_ = false;          // offset_ is in the mapping: bytes come from it
  uint64_t released_ = 0;         // release(): pages before it are given back
  z_stream zs_{};
  std::string error_;
};

}  // namespace

std::unique_ptr<Input> Input::open(const std::string& path, std::string& error) {
  const int fd = path == "-" ? dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  return std::make_unique<StreamInput>(std::make_unique<FdSource>(fd));
}

std::unique_ptr<Input> Input::from_memory(const void* data, size_t size) {
  return std::make_unique<StreamInput>(std::make_unique<MemorySource>(data, size));
}

}  // namespace mlpd
